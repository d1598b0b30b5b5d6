// External data confinement (docs/security.md): every escape from the model directory (a
// symbolic link to a file outside, a linked directory, "..", an absolute path, a NUL byte,
// Windows separators and drive letters) and every bad range (offset or length past the end,
// a length other than the tensor's size) is an error naming the tensor and the location; an
// inotify watch on the outside file shows it is never even opened. Expected values are the
// bytes the test wrote.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "frame/runtime/compile.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

namespace fs = std::filesystem;
using namespace frame::onnx::testing;  // NOLINT(build/namespaces)

// A value no test tensor holds: the outside file is filled with it.
constexpr float kSecret = 31337.5f;

void write_floats(const fs::path& p, const std::vector<float>& v) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
}

// root/model/{weights.bin, model.onnx, links...} and root/outside/secret.bin.
class ExternalDataSecurity : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("frame_ext_sec_{}_{}", getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    model_dir_ = root_ / "model";
    outside_ = root_ / "outside";
    fs::create_directories(model_dir_);
    fs::create_directories(outside_);
    // weights.bin: 4 floats of padding then w = {1, 2, 3, 4}.
    write_floats(model_dir_ / "weights.bin", {0, 0, 0, 0, 1, 2, 3, 4});
    write_floats(outside_ / "secret.bin", std::vector<float>(64, kSecret));
    fs::create_symlink(outside_ / "secret.bin", model_dir_ / "link.bin");
    fs::create_symlink(outside_, model_dir_ / "linkdir");
    fs::create_symlink("../outside/secret.bin", model_dir_ / "relative_link.bin");
    fs::create_directories(model_dir_ / "sub");
    fs::create_symlink("../weights.bin", model_dir_ / "sub" / "inner_link.bin");
  }
  void TearDown() override { fs::remove_all(root_); }

  // x: f32[4] * w (external, f32[4]) -> y, with the given external data keys.
  static ModelBuilder model(const std::vector<std::pair<std::string, std::string>>& keys) {
    ModelBuilder m(13);
    m.input("x", {4}).output("y");
    m.init(external_tensor("w", {4}, keys));
    m.add(node("Mul", {"x", "w"}, {"y"}, "mul"));
    return m;
  }

  // Writes the model next to its data and loads it from the file.
  Result<ir::Graph> load_model(const ModelBuilder& m) {
    const fs::path path = model_dir_ / "model.onnx";
    {
      std::ofstream f(path, std::ios::binary);
      f << m.bytes();
    }
    return load(path.string());
  }

  // Loads `location` (offset 16, length 16) and expects an error containing `what`, with the
  // outside file never opened.
  void expect_refused(const std::string& location, const std::string& what) {
    const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_GE(inotify_add_watch(fd, (outside_ / "secret.bin").c_str(), IN_OPEN | IN_ACCESS), 0);
    ModelBuilder m = model({{"location", location}, {"offset", "16"}, {"length", "16"}});
    Result<ir::Graph> g = load_model(m);
    ASSERT_FALSE(g.is_ok()) << location;
    const std::string msg = g.status().message();
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_NE(msg.find("tensor 'w'"), std::string::npos) << msg;
    // The same refusal through a session and from bytes.
    Result<runtime::Session> s = open_session((model_dir_ / "model.onnx").string());
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.status().message().find(what), std::string::npos) << s.status().message();
    Result<ir::Graph> b = load_from_bytes(m.bytes(), {}, model_dir_.string());
    ASSERT_FALSE(b.is_ok());
    EXPECT_NE(b.status().message().find(what), std::string::npos) << b.status().message();
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    EXPECT_EQ(n, -1) << "the outside file was opened while loading '" << location << "'";
    EXPECT_EQ(errno, EAGAIN);
    // Control: the watch does see an open of the file.
    { std::ifstream probe(outside_ / "secret.bin", std::ios::binary); }
    EXPECT_GT(read(fd, buf, sizeof buf), 0);
    close(fd);
  }

  fs::path root_, model_dir_, outside_;
};

std::vector<float> run_model(const ir::Graph& g) {
  runtime::CompileOptions co;
  co.backends = {"cpu"};
  Result<runtime::Executable> exe = runtime::compile(g, co);
  EXPECT_TRUE(exe.is_ok()) << exe.status().message();
  if (!exe.is_ok()) return {};
  Result<runtime::TensorMap> out = exe->run({{"x", Tensor::from_vector<float>({4}, {1, 1, 1, 1})}});
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  if (!out.is_ok()) return {};
  const Tensor& y = out->at("y");
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

TEST_F(ExternalDataSecurity, InsideTheDirectoryLoads) {
  Result<ir::Graph> g = load_model(model({{"location", "weights.bin"}, {"offset", "16"}}));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(run_model(*g), (std::vector<float>{1, 2, 3, 4}));
  // A link that stays inside the directory is followed.
  g = load_model(model({{"location", "sub/inner_link.bin"}, {"offset", "16"}, {"length", "16"}}));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(run_model(*g), (std::vector<float>{1, 2, 3, 4}));
  // "." components are harmless.
  g = load_model(model({{"location", "./sub/../weights.bin"}, {"offset", "16"}}));
  ASSERT_FALSE(g.is_ok());  // ".." is refused even when it would come back inside
  g = load_model(model({{"location", "./weights.bin"}, {"offset", "16"}}));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
}

TEST_F(ExternalDataSecurity, SymlinkToAFileOutsideIsRefused) {
  expect_refused("link.bin", "outside the model directory");
  expect_refused("relative_link.bin", "outside the model directory");
}

TEST_F(ExternalDataSecurity, SymlinkedDirectoryOutsideIsRefused) {
  expect_refused("linkdir/secret.bin", "outside the model directory");
}

TEST_F(ExternalDataSecurity, DotDotIsRefused) {
  expect_refused("../outside/secret.bin", "leaves the model directory");
  expect_refused("sub/../../outside/secret.bin", "leaves the model directory");
}

TEST_F(ExternalDataSecurity, AbsolutePathIsRefused) {
  expect_refused((outside_ / "secret.bin").string(), "must be a relative path");
}

TEST_F(ExternalDataSecurity, NulByteIsRefused) {
  expect_refused(std::string("weights.bin\0../../outside/secret.bin", 35), "contains a NUL byte");
}

TEST_F(ExternalDataSecurity, WindowsSeparatorsAndDrivesAreRefused) {
  expect_refused("..\\outside\\secret.bin", "Windows-style path");
  expect_refused("C:secret.bin", "Windows-style path");
  expect_refused("c:/outside/secret.bin", "Windows-style path");
}

TEST_F(ExternalDataSecurity, EmptyLocationIsRefused) {
  expect_refused("", "location is empty");
  Result<ir::Graph> g = load_model(model({{"offset", "16"}}));  // no location key at all
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("location is empty"), std::string::npos)
      << g.status().message();
}

TEST_F(ExternalDataSecurity, RangesMustFitTheFileAndTheTensor) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> keys;
    std::string what;
  };
  const std::vector<Case> cases = {
      // weights.bin has 32 bytes; w needs 16.
      {{{"location", "weights.bin"}, {"offset", "17"}}, "needs 16 bytes at offset 17"},
      {{{"location", "weights.bin"}, {"offset", "4096"}}, "needs 16 bytes at offset 4096"},
      {{{"location", "weights.bin"}, {"offset", "9223372036854775807"}},
       "at offset 9223372036854775807"},
      {{{"location", "weights.bin"}, {"offset", "16"}, {"length", "12"}},
       "length 12 is not the tensor's size (16 bytes)"},
      {{{"location", "weights.bin"}, {"offset", "16"}, {"length", "32"}},
       "length 32 is not the tensor's size (16 bytes)"},
      {{{"location", "weights.bin"}, {"offset", "-4"}}, "not a non-negative integer"},
      {{{"location", "weights.bin"}, {"offset", "16x"}}, "not a non-negative integer"},
      {{{"location", "weights.bin"}, {"length", "99999999999999999999"}},
       "key 'length' has value '99999999999999999999', out of range (more than 2^63 - 1)"},
      // 2^64 - 8: well-formed digits past int64.
      {{{"location", "weights.bin"}, {"offset", "18446744073709551608"}},
       "key 'offset' has value '18446744073709551608', out of range (more than 2^63 - 1)"},
      {{{"location", "missing.bin"}}, "missing.bin"},
      {{{"location", "sub"}}, "not a readable file"},
      {{{"location", "."}}, "not a readable file"},
  };
  for (const Case& c : cases) {
    Result<ir::Graph> g = load_model(model(c.keys));
    ASSERT_FALSE(g.is_ok()) << c.what;
    EXPECT_NE(g.status().message().find(c.what), std::string::npos) << g.status().message();
    EXPECT_NE(g.status().message().find("tensor 'w'"), std::string::npos) << g.status().message();
  }
}

TEST_F(ExternalDataSecurity, FifoOutsideIsNeverOpened) {
  // Opening a FIFO with no writer for reading would block the load forever.
  ASSERT_EQ(mkfifo((outside_ / "pipe").c_str(), 0600), 0);
  fs::create_symlink(outside_ / "pipe", model_dir_ / "pipe.bin");
  Result<ir::Graph> g = load_model(model({{"location", "pipe.bin"}}));
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("outside the model directory"), std::string::npos)
      << g.status().message();
  // Inside the directory a FIFO is refused as not a regular file, without blocking.
  ASSERT_EQ(mkfifo((model_dir_ / "inner_pipe").c_str(), 0600), 0);
  g = load_model(model({{"location", "inner_pipe"}}));
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("not a readable file"), std::string::npos)
      << g.status().message();
}

TEST_F(ExternalDataSecurity, EachFileIsOpenedOnce) {
  // Three tensors in one file: w (offset 16) and two more at offsets 0 and 12.
  ModelBuilder m = model({{"location", "weights.bin"}, {"offset", "16"}});
  for (const auto& [name, offset] : {std::pair{"a", "0"}, std::pair{"b", "12"}}) {
    m.init(external_tensor(name, {2}, {{"location", "weights.bin"}, {"offset", offset}}));
  }
  m.output("a").output("b");
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_GE(inotify_add_watch(fd, (model_dir_ / "weights.bin").c_str(), IN_OPEN), 0);
  Result<ir::Graph> g = load_model(m);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  int opens = 0;
  alignas(inotify_event) char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) {
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      opens += (ev->mask & IN_OPEN) != 0 ? 1 : 0;
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
  close(fd);
  EXPECT_EQ(opens, 1);
  const Tensor& b = *g->value(g->find_value("b")).constant;
  EXPECT_EQ(std::vector<float>(b.data<float>(), b.data<float>() + 2), (std::vector<float>{0, 1}));
}

TEST_F(ExternalDataSecurity, NoTensorHoldsOutsideBytes) {
  // A model whose first initializer is legitimate and whose second escapes: the load fails as
  // a whole, and an analysis load (keep_untyped) fails the same way: no tensor of any graph
  // the loader returns can hold the outside file's bytes.
  ModelBuilder m = model({{"location", "weights.bin"}, {"offset", "16"}});
  m.init(external_tensor("s", {4}, {{"location", "linkdir/secret.bin"}}));
  m.output("s");
  for (bool keep_untyped : {false, true}) {
    LoadOptions o;
    o.keep_untyped = keep_untyped;
    Result<ir::Graph> g = load_from_bytes(m.bytes(), o, model_dir_.string());
    ASSERT_FALSE(g.is_ok());
    EXPECT_NE(g.status().message().find("tensor 's'"), std::string::npos) << g.status().message();
  }
  // Control: the same model with the link pointing inside loads and holds the bytes it names.
  fs::remove(model_dir_ / "linkdir");
  fs::create_symlink(model_dir_ / "sub", model_dir_ / "linkdir");
  write_floats(model_dir_ / "sub" / "secret.bin", {5, 6, 7, 8});
  Result<ir::Graph> g = load_from_bytes(m.bytes(), {}, model_dir_.string());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (size_t v = 0; v < g->num_values(); ++v) {
    const ir::Value& val = g->value(static_cast<ir::ValueId>(v));
    if (!val.constant || val.constant->dtype() != DTypeCode::kFloat32) continue;
    for (int64_t i = 0; i < val.constant->numel(); ++i) {
      EXPECT_NE(val.constant->data<float>()[i], kSecret) << val.name;
    }
  }
}

TEST_F(ExternalDataSecurity, ModelDirectoryBehindALinkWorks) {
  // The model directory itself may be reached through a link: both sides are resolved.
  fs::create_symlink(model_dir_, root_ / "model_link");
  Result<ir::Graph> g = load_model(model({{"location", "weights.bin"}, {"offset", "16"}}));
  ASSERT_TRUE(g.is_ok());
  g = load((root_ / "model_link" / "model.onnx").string());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(run_model(*g), (std::vector<float>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace frame::onnx
