#pragma once
// Small helpers that build ONNX ModelProtos in tests (no Python needed).

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "frame/core/status.h"

namespace frame::onnx::testing {

/// A tensor-typed ValueInfoProto; a negative dim becomes the symbolic dim "N".
inline ::onnx::ValueInfoProto value_info(const std::string& name, int32_t elem_type,
                                         const std::vector<int64_t>& dims) {
  ::onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) {
      dim->set_dim_value(d);
    } else {
      dim->set_dim_param("N");
    }
  }
  return v;
}

/// A float TensorProto stored in float_data (typed field) or raw_data.
inline ::onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                        const std::vector<float>& values, bool raw = false) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  if (raw) {
    t.set_raw_data(
        std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  } else {
    for (float v : values) t.add_float_data(v);
  }
  return t;
}

/// A TensorProto whose data lies in a file, located by the external_data entries `keys`
/// ("location", "offset", "length") in the given order.
inline ::onnx::TensorProto external_tensor(
    const std::string& name, const std::vector<int64_t>& dims,
    const std::vector<std::pair<std::string, std::string>>& keys,
    int32_t elem_type = ::onnx::TensorProto::FLOAT) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(elem_type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_data_location(::onnx::TensorProto::EXTERNAL);
  for (const auto& [k, v] : keys) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  return t;
}

inline ::onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                        const std::vector<int64_t>& values) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

/// A GRAPH attribute `n` holding `g` (an If's branch, a Loop's or Scan's body).
inline ::onnx::AttributeProto attr_g(const std::string& n, const ::onnx::GraphProto& g) {
  ::onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(::onnx::AttributeProto::GRAPH);
  *a.mutable_g() = g;
  return a;
}

/// Expects `s` to be an error whose message contains every one of `parts`.
inline void expect_error(const Status& s, const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.is_ok());
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "missing '" << p << "' in\n"
                                                      << s.message();
  }
}

/// Attribute builders.
inline ::onnx::AttributeProto attr_i(const std::string& n, int64_t v) {
  ::onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(::onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}
inline ::onnx::AttributeProto attr_s(const std::string& n, const std::string& v) {
  ::onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(::onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}
inline ::onnx::AttributeProto attr_f(const std::string& n, float v) {
  ::onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(::onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}
inline ::onnx::AttributeProto attr_ints(const std::string& n, const std::vector<int64_t>& v) {
  ::onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}
inline ::onnx::AttributeProto attr_floats(const std::string& n, const std::vector<float>& v) {
  ::onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(::onnx::AttributeProto::FLOATS);
  for (float x : v) a.add_floats(x);
  return a;
}
inline ::onnx::AttributeProto attr_t(const std::string& n, const ::onnx::TensorProto& t) {
  ::onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(::onnx::AttributeProto::TENSOR);
  *a.mutable_t() = t;
  return a;
}

/// A node; `domain` empty for ai.onnx.
inline ::onnx::NodeProto node(const std::string& op, const std::vector<std::string>& in,
                              const std::vector<std::string>& out, const std::string& name = "",
                              std::vector<::onnx::AttributeProto> attrs = {},
                              const std::string& domain = "") {
  ::onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  n.set_domain(domain);
  for (const auto& s : in) n.add_input(s);
  for (const auto& s : out) n.add_output(s);
  for (auto& a : attrs) *n.add_attribute() = std::move(a);
  return n;
}

/// A model with one graph at default-domain `opset`.
struct ModelBuilder {
  ::onnx::ModelProto model;
  explicit ModelBuilder(int64_t opset) {
    model.set_ir_version(8);
    auto* o = model.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model.mutable_graph()->set_name("test");
  }
  ModelBuilder& input(const std::string& n, const std::vector<int64_t>& dims,
                      int32_t t = ::onnx::TensorProto::FLOAT) {
    *model.mutable_graph()->add_input() = value_info(n, t, dims);
    return *this;
  }
  ModelBuilder& output(const std::string& n, int32_t t = ::onnx::TensorProto::FLOAT) {
    auto* v = model.mutable_graph()->add_output();
    v->set_name(n);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(t);
    return *this;
  }
  ModelBuilder& add(::onnx::NodeProto n) {
    *model.mutable_graph()->add_node() = std::move(n);
    return *this;
  }
  ModelBuilder& init(::onnx::TensorProto t) {
    *model.mutable_graph()->add_initializer() = std::move(t);
    return *this;
  }
  std::string bytes() const { return model.SerializeAsString(); }
};

}  // namespace frame::onnx::testing
