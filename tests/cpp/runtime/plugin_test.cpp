// runtime::load_plugin: a good plugin's op runs from an ONNX model through its custom-domain
// mapping; a faulty plugin (duplicate builtin name, illegal name, builder misuse, a second copy
// of a loaded plugin, a bad ONNX mapping, a cpu-less op, a duplicate or unanchored lowering
// pattern) is an error naming the plugin and leaves the registries and the ONNX table as they
// were; a refused plugin that cannot be unloaded keeps failing; a nested load fails.
#include "frame/runtime/plugin.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "frame/onnx/onnx.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/lowering_pattern.h"
#include "frame/ops/op_registry.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

std::string plugin(const std::string& name) {
  return std::string(FRAME_TEST_PLUGIN_DIR) + "/libframe_test_" + name + ".so";
}

struct RegistrySizes {
  size_t ops = ops::OpRegistry::global().size();
  size_t kernels = ops::KernelRegistry::global().list().size();
  size_t patterns = ops::LoweringPatternRegistry::global().list().size();
  size_t onnx_rows = onnx::op_table().size();
  bool operator==(const RegistrySizes&) const = default;
};

TEST(Plugin, GoodPluginAddsAnOpThatRunsFromOnnx) {
  Result<PluginInfo> info = load_plugin(plugin("good_plugin"));
  ASSERT_TRUE(info.is_ok()) << info.status().message();
  EXPECT_EQ(info->ops, std::vector<std::string>{"plugin_swish"});
  EXPECT_EQ(info->kernels, std::vector<std::string>{"plugin_swish@cpu"});
  ASSERT_NE(ops::OpRegistry::global().find("plugin_swish"), nullptr);
  EXPECT_TRUE(ops::registry_self_check().empty());

  // The same path again adds nothing and succeeds.
  RegistrySizes before;
  Result<PluginInfo> again = load_plugin(plugin("good_plugin"));
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_TRUE(again->ops.empty());
  EXPECT_EQ(RegistrySizes{}, before);

  // The plugin's mapping makes com.frame.test::Swish importable.
  bool mapped = false;
  for (const onnx::OpTableEntry& e : onnx::op_table()) {
    mapped |= e.domain == "com.frame.test" && e.op_type == "Swish" && e.frame_op == "plugin_swish";
  }
  EXPECT_TRUE(mapped);

  ir::Graph g;
  ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {5}});
  ir::NodeId n = *g.create_node("plugin_swish", "swish", {x}, 1);
  g.add_output(g.node(n).outputs[0]);
  Result<Executable> exe = compile(g);
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  const std::vector<float> in = {-2.0F, -0.5F, 0.0F, 1.0F, 3.0F};
  Result<TensorMap> out = exe->run({{"x", Tensor::from_vector<float>({5}, in)}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const float* y = out->begin()->second.data<float>();
  for (size_t i = 0; i < in.size(); ++i) {
    const double ref = in[i] / (1.0 + std::exp(-static_cast<double>(in[i])));  // by hand
    EXPECT_NEAR(y[i], ref, 1e-6) << i;
  }
}

TEST(Plugin, DuplicateOfABuiltinIsRefusedAndNothingIsRegistered) {
  RegistrySizes before;
  Result<PluginInfo> info = load_plugin(plugin("dup_plugin"));
  ASSERT_FALSE(info.is_ok());
  EXPECT_EQ(info.status().code(), StatusCode::kAlreadyExists);
  const std::string m = info.status().message();
  EXPECT_NE(m.find(plugin("dup_plugin")), std::string::npos) << m;
  EXPECT_NE(m.find("op 'relu': duplicate name"), std::string::npos) << m;
  EXPECT_NE(m.find("dup_plugin.cpp"), std::string::npos) << m;  // the registration site
  EXPECT_EQ(ops::OpRegistry::global().find("plugin_dup_first"), nullptr);
  EXPECT_EQ(ops::KernelRegistry::global().find("plugin_dup_first", "cpu"), nullptr);
  EXPECT_EQ(RegistrySizes{}, before);
}

TEST(Plugin, IllegalNameIsRefused) {
  RegistrySizes before;
  Result<PluginInfo> info = load_plugin(plugin("bad_name_plugin"));
  ASSERT_FALSE(info.is_ok());
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(info.status().message().find("op 'PluginBadName': illegal name (ARCH-040"),
            std::string::npos)
      << info.status().message();
  EXPECT_EQ(RegistrySizes{}, before);
}

TEST(Plugin, BuilderMisuseIsAnErrorNotAnAbort) {
  RegistrySizes before;
  Result<PluginInfo> info = load_plugin(plugin("builder_fault_plugin"));
  ASSERT_FALSE(info.is_ok());
  EXPECT_NE(info.status().message().find("op 'plugin_m9_misuse'"), std::string::npos)
      << info.status().message();
  EXPECT_NE(info.status().message().find("M9"), std::string::npos) << info.status().message();
  EXPECT_EQ(ops::OpRegistry::global().find("plugin_m9_misuse"), nullptr);
  EXPECT_EQ(RegistrySizes{}, before);
}

TEST(Plugin, SecondCopyOfALoadedPluginIsRefused) {
  ASSERT_TRUE(load_plugin(plugin("good_plugin")).is_ok());
  const std::filesystem::path copy =
      std::filesystem::temp_directory_path() / "frame_plugin_test_copy.so";
  std::filesystem::copy_file(plugin("good_plugin"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  RegistrySizes before;
  Result<PluginInfo> info = load_plugin(copy.string());
  ASSERT_FALSE(info.is_ok());
  EXPECT_EQ(info.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(info.status().message().find(copy.string()), std::string::npos);
  // The message names the library that registered the op first.
  EXPECT_NE(info.status().message().find("registered by plugin '" + plugin("good_plugin") + "'"),
            std::string::npos)
      << info.status().message();
  EXPECT_EQ(RegistrySizes{}, before);
  std::filesystem::remove(copy);
}

TEST(Plugin, MissingOrUnloadableFileIsAnError) {
  Result<PluginInfo> missing = load_plugin("/nonexistent/libnothing.so");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  const std::filesystem::path junk = std::filesystem::temp_directory_path() / "frame_junk.so";
  { std::ofstream(junk) << "not an ELF file"; }
  Result<PluginInfo> bad = load_plugin(junk.string());
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("cannot load"), std::string::npos)
      << bad.status().message();
  std::filesystem::remove(junk);
}

// Loads `name`, expects a refusal with `code` whose message holds every piece of `expect`, and
// nothing registered (ops, kernels, patterns, ONNX rows).
void expect_refused(const std::string& name, StatusCode code,
                    const std::vector<std::string>& expect) {
  ASSERT_TRUE(load_plugin(plugin("good_plugin")).is_ok());  // maps com.frame.test::Swish
  RegistrySizes before;
  Result<PluginInfo> info = load_plugin(plugin(name));
  ASSERT_FALSE(info.is_ok()) << name;
  EXPECT_EQ(info.status().code(), code) << info.status().message();
  const std::string m = info.status().message();
  EXPECT_NE(m.find(plugin(name)), std::string::npos) << m;
  for (const std::string& e : expect) EXPECT_NE(m.find(e), std::string::npos) << e << " in " << m;
  EXPECT_EQ(RegistrySizes{}, before) << name;
}

TEST(Plugin, MappingToAnUnknownOpRefusesThePluginAndStaysRefused) {
  expect_refused("badmap_plugin", StatusCode::kNotFound,
                 {"onnx mapping com.frame.test::Missing",
                  "no frame op named 'plugin_not_registered_anywhere'"});
  EXPECT_EQ(ops::OpRegistry::global().find("plugin_badmap_op"), nullptr);
  EXPECT_EQ(ops::KernelRegistry::global().find("plugin_badmap_op", "cpu"), nullptr);
  // Loading it again is refused again, not an empty success.
  Result<PluginInfo> again = load_plugin(plugin("badmap_plugin"));
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(ops::OpRegistry::global().find("plugin_badmap_op"), nullptr);
}

TEST(Plugin, MappingTakenByAnotherPluginRefusesThePlugin) {
  expect_refused("remap_plugin", StatusCode::kAlreadyExists,
                 {"com.frame.test::Swish is already mapped to 'plugin_swish'"});
  EXPECT_EQ(ops::OpRegistry::global().find("plugin_remap_op"), nullptr);
}

TEST(Plugin, MappingListedTwiceInOnePluginIsRefused) {
  expect_refused("twice_map_plugin", StatusCode::kInvalidArgument,
                 {"com.frame.test::Twice is mapped twice"});
  EXPECT_EQ(ops::OpRegistry::global().find("plugin_remap_op"), nullptr);
}

TEST(Plugin, OpWithoutCpuKernelIsRefused) {
  expect_refused("nocpu_plugin", StatusCode::kInvalidArgument,
                 {"op 'plugin_nocpu': no cpu kernel (ARCH-041", "nocpu_plugin.cpp"});
  EXPECT_EQ(ops::OpRegistry::global().find("plugin_nocpu"), nullptr);
}

TEST(Plugin, DuplicatePatternInOnePluginIsRefused) {
  expect_refused("dup_pattern_plugin", StatusCode::kAlreadyExists,
                 {"lowering pattern 'plugin_pattern': duplicate", "pattern_plugin.cpp:"});
}

TEST(Plugin, PatternAnchoredAtAnUnknownOpIsRefused) {
  expect_refused("pattern_plugin", StatusCode::kInvalidArgument,
                 {"lowering pattern 'plugin_pattern_anchor': anchor op 'plugin_no_such_op' is not "
                  "registered",
                  "pattern_plugin.cpp:"});
}

TEST(Plugin, RefusedPluginThatCannotBeUnloadedKeepsFailing) {
  // unique_plugin has an STB_GNU_UNIQUE symbol: glibc cannot unload it after the refusal, and
  // its static initializers would not run again on a second dlopen.
  RegistrySizes before;
  Result<PluginInfo> first = load_plugin(plugin("unique_plugin"));
  ASSERT_FALSE(first.is_ok());
  EXPECT_EQ(first.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(first.status().message().find("op 'relu': duplicate name"), std::string::npos)
      << first.status().message();
  // GCC marks the inline function's static local STB_GNU_UNIQUE and glibc keeps the library;
  // clang does not, and the library is unloaded. Either way the second load must fail alike.
  void* resident = dlopen(plugin("unique_plugin").c_str(), RTLD_NOLOAD | RTLD_NOW);
  if (resident != nullptr) {
    dlclose(resident);  // drops the reference RTLD_NOLOAD took
    EXPECT_NE(first.status().message().find("could not be unloaded"), std::string::npos)
        << first.status().message();
  }
  Result<PluginInfo> second = load_plugin(plugin("unique_plugin"));
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().message(), first.status().message());
  EXPECT_EQ(ops::OpRegistry::global().find("plugin_unique_op"), nullptr);
  EXPECT_EQ(RegistrySizes{}, before);
}

TEST(Plugin, LoadPluginFromAPluginInitializerFailsInsteadOfDeadlocking) {
  Result<PluginInfo> info = load_plugin(plugin("nested_plugin"));
  ASSERT_TRUE(info.is_ok()) << info.status().message();
  void* h = dlopen(plugin("nested_plugin").c_str(), RTLD_NOLOAD | RTLD_NOW);
  ASSERT_NE(h, nullptr);
  auto* message = reinterpret_cast<const char* (*)()>(dlsym(h, "plugin_nested_message"));
  ASSERT_NE(message, nullptr);
  EXPECT_NE(std::string(message()).find("while a plugin is being loaded"), std::string::npos)
      << message();
  dlclose(h);
}

TEST(Plugin, ShapeFunctionDtypeOutsideTheSchemaIsACompileError) {
  Result<PluginInfo> info = load_plugin(plugin("dtype_plugin"));
  ASSERT_TRUE(info.is_ok()) << info.status().message();
  struct Case {
    std::string op, expect;
  };
  for (const Case& c : {Case{"plugin_bad_dtype",
                             "node 'n' (plugin_bad_dtype): the shape function "
                             "gives output 0 (Y) dtype i64, but the schema "
                             "allows {f32}"},
                        Case{"plugin_bad_type_var",
                             "node 'n' (plugin_bad_type_var): the shape function gives output 0 "
                             "(Y) dtype f64, but type T is f32 (input 0, X)"}}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {4}});
    Result<ir::NodeId> n = g.create_node(c.op, "n", {x}, 1);
    ASSERT_TRUE(n.is_ok()) << n.status().message();
    g.add_output(g.node(*n).outputs[0]);
    Result<Executable> exe = compile(g);
    ASSERT_FALSE(exe.is_ok()) << c.op;
    EXPECT_NE(exe.status().message().find(c.expect), std::string::npos) << exe.status().message();
  }
}

TEST(Plugin, ExceptionsFromShapeFunctionsAndKernelsAreErrors) {
  Result<PluginInfo> info = load_plugin(plugin("throw_plugin"));
  ASSERT_TRUE(info.is_ok()) << info.status().message();
  auto graph_of = [](const std::string& op) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {4}});
    ir::NodeId n = *g.create_node(op, "n", {x}, 1);
    g.add_output(g.node(n).outputs[0]);
    return g;
  };
  Result<Executable> shape = compile(graph_of("plugin_throw_shape"));
  ASSERT_FALSE(shape.is_ok());
  EXPECT_NE(shape.status().message().find(
                "node 'n' (plugin_throw_shape): the shape function threw an exception: shape boom"),
            std::string::npos)
      << shape.status().message();

  Result<Executable> exe = compile(graph_of("plugin_throw_kernel"));
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  Result<TensorMap> out = exe->run({{"x", Tensor::from_vector<float>({4}, {1, 2, 3, 4})}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("node 'n' (plugin_throw_kernel): kernel "
                                        "plugin_throw_kernel@cpu threw an exception: kernel boom"),
            std::string::npos)
      << out.status().message();
}

TEST(Plugin, DirectoryIsNotAPlugin) {
  Result<PluginInfo> info = load_plugin(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(info.is_ok());
  EXPECT_NE(info.status().message().find("is a directory"), std::string::npos)
      << info.status().message();
}

}  // namespace
}  // namespace frame::runtime
