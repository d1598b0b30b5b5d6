#pragma once
/// \file
/// ONNX frontend (docs/onnx.md): reads an ONNX ModelProto and converts it into an
/// `ir::Graph` through one op table keyed by (domain, op type, opset range). Frame op names
/// are the ONNX op types in snake_case with the inputs and attributes of the latest opset;
/// older opsets are converted by the table (docs/onnx.md lists every op and its coverage).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/ops/registration_batch.h"
#include "frame/runtime/compile.h"

namespace frame::onnx {

/// Structural and size limits of the loader (docs/security.md): a model file is untrusted input,
/// and each limit turns a model that would exhaust memory or the stack into an error naming the
/// place (tensor, node, attribute) before any large allocation. `LoadOptions` carries them.
struct LoadLimits {
  /// Largest model file accepted, in bytes. Protobuf caps a message at 2 GiB: larger models
  /// must keep their tensors in external data files (docs/onnx.md "External data").
  size_t max_model_bytes = size_t{2000} << 20;
  /// Largest single tensor (initializer, Constant value, external data), in bytes.
  size_t max_tensor_bytes = size_t{4} << 30;
  /// Largest sum of the bytes of every initializer and Constant tensor of the model (bodies
  /// included), in bytes. Default: runtime::default_max_memory_bytes() (3/4 of physical memory).
  size_t max_initializer_bytes = runtime::default_max_memory_bytes();
  /// Deepest nesting of subgraphs (If/Loop/Scan bodies inside bodies); bounds the importer's
  /// recursion.
  int max_nesting_depth = 16;
  /// Most nodes in the model, bodies included.
  size_t max_nodes = 1'000'000;
  /// Most elements of one list attribute (ints, floats, strings) and bytes of one string
  /// attribute.
  size_t max_attribute_elements = size_t{1} << 20;
};

/// Options of `load`. The limits are inherited from LoadLimits (`options.max_tensor_bytes`).
struct LoadOptions : LoadLimits {
  /// Concrete dims for graph inputs, by input name. Required for every input whose declared
  /// shape has a symbolic (dim_param) or missing dim (ARCH-044: no unknown dims); when given
  /// for an input with static dims it must agree with them (rank and every fixed dim). Naming
  /// an input that is also an initializer makes it a graph input (the initializer is dropped).
  std::map<std::string, Shape> input_shapes;
  /// Graph inputs bound to fixed values at load time: each becomes a constant instead of a
  /// graph input, so values that must be static (a Reshape target, Resize scales, axes inputs;
  /// ARCH-044) fold. The tensor's dtype must equal the declared element type and its shape
  /// must agree with every fixed dim. Errors name the input.
  std::map<std::string, Tensor> constant_inputs;
  /// Verify the imported graph structurally and against the op schemas (V1–V4).
  bool verify = true;
  /// Compact the imported graph (drop dead nodes and unused values, renumbering ids). False
  /// leaves them, for a caller that only walks live nodes in topological order (a Session's
  /// interpreted tier, runtime::Specialization::compact); such a graph is not verified.
  bool compact = true;
  /// Analysis only (`frame inspect`, onnx::open_session): a node whose shape inference fails
  /// keeps untyped outputs instead of failing the load, and a node whose conversion fails (an
  /// input it needs as a constant, an untyped input) becomes an untyped stand-in (op
  /// `onnx_unconverted`) reading all its inputs, so the structure of a model with
  /// shape-determining inputs (ADR 0006) can be classified. Such a graph is not verified and
  /// must not be compiled.
  bool keep_untyped = false;
};

/// Loads the ONNX model at `path` (external tensor data is read from files inside its directory,
/// after resolving symbolic links; docs/security.md).
/// Initializers and Constant nodes become constants; graph inputs that are also initializers
/// are constants unless `input_shapes` or `constant_inputs` names them (ONNX IR spec, "Graphs":
/// the initializer is only the input's default; ONNX Runtime's overridable initializers): then
/// the initializer is dropped and the input is a graph input, or the given constant; every node is
/// mapped through the op table for the model's opset. Errors: kIo (missing/unreadable file,
/// truncated or malformed protobuf, bad external data), kInvalidArgument (bad model content:
/// dangling names, unknown/missing dims without an entry in `input_shapes`, unsupported element
/// types, cycles), kUnimplemented listing every unsupported (domain, op type, opset, node name) of
/// the model in one message.
Result<ir::Graph> load(const std::string& path, const LoadOptions& options = {});

/// Like `load`, from serialized ModelProto bytes. `model_dir` resolves external data
/// locations (empty: external data is rejected).
Result<ir::Graph> load_from_bytes(std::string_view bytes, const LoadOptions& options = {},
                                  const std::string& model_dir = "");

/// Reads a serialized TensorProto file (the ONNX backend test `input_N.pb` / `output_N.pb`
/// format) into a Tensor. `name_out`, when not null, receives the TensorProto name.
/// `uint16_as`, when set (kBFloat16 or kFloat16), reinterprets UINT16 data — the form numpy
/// based generators store bfloat16 in — as that dtype; otherwise UINT16 is read as uint16.
/// Errors: kIo (unreadable or malformed), kInvalidArgument (element type frame lacks).
Result<Tensor> read_tensor_proto(const std::string& path, std::string* name_out = nullptr,
                                 std::optional<DTypeCode> uint16_as = std::nullopt);

/// One row of the op table, for documentation and `frame ops`-style listings.
struct OpTableEntry {
  std::string domain;    ///< "" for the default ai.onnx domain
  std::string op_type;   ///< ONNX op type, e.g. "Conv"
  int since_opset = 1;   ///< first opset version this row serves
  int until_opset = 0;   ///< last opset version served; 0 = open-ended
  std::string frame_op;  ///< frame op the node becomes ("" when it becomes a constant)
  std::string note;      ///< conversion applied, e.g. "min/max attrs -> constant inputs"
};

/// The whole op table, sorted by (domain, op type, since_opset).
std::vector<OpTableEntry> op_table();

/// Pairs of rows that serve one (domain, op type) at a common opset version, one message per
/// pair naming both rows and their opset ranges ("Identity: opsets 1.. and 13.. overlap"). Two
/// such rows would make the table's first row win silently; the built-in table is checked
/// once at start-up and an overlap there is fatal (a fault in frame's source, like a duplicate
/// op registration, ARCH-040). Empty when the rows are disjoint.
std::vector<std::string> op_table_overlaps(const std::vector<OpTableEntry>& rows);

/// Node counts by ONNX op type ("Conv"; "domain::Type" outside the default domain) of the main
/// graph of the model at `path`, as the file holds them, before import. Lets tools report what
/// import changed (Identity and Constant nodes become aliases and constants, rewrites change op
/// names). Errors: kIo (unreadable file), kInvalidArgument (not a ModelProto).
Result<std::map<std::string, int64_t>> model_op_counts(const std::string& path);

/// A model's descriptive fields (ONNX IR spec, ModelProto and GraphProto): what ONNX Runtime's
/// `InferenceSession.get_modelmeta()` reports.
struct ModelMetadata {
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  std::string doc_string;        ///< ModelProto.doc_string (ORT: `description`)
  int64_t model_version = 0;     ///< ModelProto.model_version (ORT: `version`)
  std::string graph_name;        ///< the main graph's name
  std::string graph_doc_string;  ///< the main graph's doc_string (ORT: `graph_description`)
  /// ModelProto.metadata_props in file order (ORT: `custom_metadata_map`; a repeated key keeps
  /// its last value there).
  std::vector<std::pair<std::string, std::string>> metadata_props;
};

/// Reads the ModelMetadata of serialized ModelProto `bytes` (a file's contents; external data
/// is not read). Errors: kInvalidArgument (not a ModelProto).
Result<ModelMetadata> model_metadata(std::string_view bytes);

/// The highest default-domain opset version the table was written against.
int max_supported_opset();

/// Maps ONNX nodes of the custom `domain` with type `op_type` to the registered frame op
/// `frame_op`, for every opset version of that domain the model imports: the node's inputs,
/// outputs and attributes pass through by position and name (like most built-in rows), so the
/// op's schema decides what is valid. Lets a custom op registered at run time (e.g. from
/// Python, docs/python.md) be imported from models; the mapping then appears in op_table().
/// Thread-safe; lasts for the process. Errors: kInvalidArgument (`domain` empty or the default
/// "ai.onnx" domain, whose rows are fixed; `op_type` empty), kNotFound (`frame_op` is not
/// registered), kAlreadyExists ((domain, op_type) already mapped).
Status register_custom_op(const std::string& domain, const std::string& op_type,
                          const std::string& frame_op);

/// The checks of register_custom_op without registering anything: the same errors, except that
/// a `frame_op` in `pending_ops` (ops of a plugin batch about to be registered) counts as
/// registered. Lets a plugin's FRAME_REGISTER_ONNX_OP mappings be validated before any of the
/// plugin is registered (docs/architecture/op-registration.md "Plugins").
Status check_custom_op(const std::string& domain, const std::string& op_type,
                       const std::string& frame_op, const std::set<std::string>& pending_ops);

}  // namespace frame::onnx

/// Maps ONNX nodes `domain::op_type` to the frame op `frame_op` at static-init time, for
/// plugins (runtime::load_plugin): `FRAME_REGISTER_ONNX_OP("com.example", "Swish", swish);`.
/// In a plugin the mapping is checked (check_custom_op; a (domain, op_type) mapped twice in the
/// plugin is an error too) before any of the plugin is registered, so a bad mapping refuses
/// the whole plugin, and applied (register_custom_op) after its ops are registered. In the
/// program itself it runs at static-init time, where the op must already be registered (call
/// register_custom_op from main instead when unsure); an error there is a fatal registration
/// fault (ARCH-040).
#define FRAME_REGISTER_ONNX_OP(domain, op_type, frame_op)                                    \
  [[maybe_unused]] static const bool FRAME_CONCAT(frame_onnx_mapping_, __COUNTER__) = [] {   \
    ::frame::ops::run_after_registration(                                                    \
        "onnx mapping " domain "::" op_type,                                                 \
        [](const ::frame::ops::BatchView& batch) -> ::frame::Status {                        \
          FRAME_RETURN_IF_ERROR(                                                             \
              ::frame::onnx::check_custom_op(domain, op_type, #frame_op, *batch.ops));       \
          if (!batch.claimed->insert("onnx:" domain "::" op_type).second) {                  \
            return ::frame::invalid_argument("{}::{} is mapped twice in one plugin", domain, \
                                             op_type);                                       \
          }                                                                                  \
          return ::frame::Status();                                                          \
        },                                                                                   \
        [] { return ::frame::onnx::register_custom_op(domain, op_type, #frame_op); });       \
    return true;                                                                             \
  }()
