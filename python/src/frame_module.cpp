/// \file
/// The `frame._frame` extension module (docs/python.md): ONNX Runtime style inference
/// sessions, graph building, compile/run and the registries, over the shared libframe (one
/// registry with the CLI and plugins). numpy in and out without copies where layout allows;
/// the GIL is released while a graph runs; frame's StatusCode maps to Python exception types.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compare.h"
#include "frame/runtime/compile.h"
#include "frame/runtime/plugin.h"
#include "frame/runtime/session.h"
#include "frame/runtime/threads.h"

namespace py = pybind11;

namespace frame::python {

using runtime::TensorMap;
namespace {

// ---------------------------------------------------------------------------------------------
// The GIL around frame's work, and interpreter exit with work in flight (docs/python.md, "Threads
// and the GIL").
//
// without_gil(f) runs f with the GIL released and takes it back in its own body. At interpreter
// exit, an atexit callback (which Python runs before it starts finalizing) closes the gate and
// waits until no work is in flight; a thread whose work would start, or has ended, after that
// never takes the GIL back and sleeps until the process ends. Taking the GIL back while Python
// finalizes ends the thread with a forced unwind out of PyEval_RestoreThread, which aborts the
// process when that call sits in a noexcept destructor, as py::gil_scoped_release's does (a
// daemon thread inside run() at exit used to abort Python this way).

// Calls into Python from frame (a Python op's shape function or kernel) on this thread. frame
// calls made inside one are nested in work in flight, which the exit handler waits for: they
// must never be parked.
thread_local int t_python_callbacks = 0;
struct PythonCallbackScope {
  PythonCallbackScope() { ++t_python_callbacks; }
  ~PythonCallbackScope() { --t_python_callbacks; }
  PythonCallbackScope(const PythonCallbackScope&) = delete;
  PythonCallbackScope& operator=(const PythonCallbackScope&) = delete;
};

struct ExitGate {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  bool closing = false;
};

// Never destroyed: threads parked at exit still hold it when static destructors run.
ExitGate& exit_gate() {
  static ExitGate* gate = new ExitGate;
  return *gate;
}

[[noreturn]] void park_until_exit() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// Closes the gate and waits for work in flight; called once, from atexit, with the GIL held.
void close_exit_gate() {
  ExitGate& gate = exit_gate();
  PyThreadState* state = PyEval_SaveThread();  // a Python kernel of a run in flight needs it
  {
    std::unique_lock lock(gate.mu);
    gate.closing = true;
    gate.cv.wait(lock, [&] { return gate.in_flight == 0; });
  }
  PyEval_RestoreThread(state);
}

template <class F>
auto without_gil(F&& f) -> decltype(f()) {
  ExitGate& gate = exit_gate();
  const bool nested = t_python_callbacks > 0;
  PyThreadState* state = PyEval_SaveThread();
  {
    std::unique_lock lock(gate.mu);
    if (gate.closing && !nested) {
      lock.unlock();
      park_until_exit();
    }
    ++gate.in_flight;
  }
  auto leave = [&gate, nested] {
    std::unique_lock lock(gate.mu);
    --gate.in_flight;
    gate.cv.notify_all();
    if (gate.closing && !nested) {
      lock.unlock();
      park_until_exit();
    }
  };
  std::optional<decltype(f())> result;
  try {
    result.emplace(f());
  } catch (...) {
    leave();
    PyEval_RestoreThread(state);
    throw;
  }
  leave();
  PyEval_RestoreThread(state);
  return std::move(*result);
}

// ---------------------------------------------------------------------------------------------
// Errors: StatusCode -> Python exception type, message unchanged (docs/python.md, errors).

[[noreturn]] void raise_status(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kAlreadyExists:
    case StatusCode::kIo:  // unreadable model content; a missing file is caught before
      throw py::value_error(s.message());
    case StatusCode::kNotFound:
      throw py::key_error(s.message());
    case StatusCode::kUnimplemented:
      // NotImplementedError is a RuntimeError: a valid request frame cannot serve.
      PyErr_SetString(PyExc_NotImplementedError, s.message().c_str());
      throw py::error_already_set();
    default:
      throw std::runtime_error(s.message());
  }
}

// The exception a Python kernel raised during the current run on this thread (a new
// reference, or null). Set by the kernel trampoline with the GIL held; taken by the run's
// binding after the run, so the user sees the kernel's own exception: KeyboardInterrupt and
// SystemExit as themselves, anything else as the cause (__cause__, with its traceback) of the
// ValueError naming node and op. A raw pointer, not py::object: a thread_local destructor may
// run without the GIL. Kernels called from other threads (inside a parallel fused group) leave
// it unset, and the ValueError then carries the exception's text only.
thread_local PyObject* g_kernel_exception = nullptr;

void clear_kernel_exception() { Py_CLEAR(g_kernel_exception); }

// raise_status for a failed run, re-raising the kernel's exception where one was recorded.
[[noreturn]] void raise_run_status(const Status& s) {
  if (g_kernel_exception != nullptr) {
    py::object exc = py::reinterpret_steal<py::object>(g_kernel_exception);
    g_kernel_exception = nullptr;
    if (PyErr_GivenExceptionMatches(exc.ptr(), PyExc_KeyboardInterrupt) ||
        PyErr_GivenExceptionMatches(exc.ptr(), PyExc_SystemExit)) {
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
      throw py::error_already_set();
    }
    if (s.code() == StatusCode::kInvalidArgument) {
      py::object err = py::reinterpret_borrow<py::object>(PyExc_ValueError)(s.message());
      PyException_SetCause(err.ptr(), exc.release().ptr());  // steals the reference
      PyErr_SetObject(PyExc_ValueError, err.ptr());
      throw py::error_already_set();
    }
  }
  raise_status(s);
}

template <typename T>
T take(Result<T> r) {
  if (!r.is_ok()) raise_status(r.status());
  return std::move(r).value();
}

// Raises FileNotFoundError / PermissionError before the loader turns them into kIo.
void check_readable(const std::string& path) {
  // A C path stops at the first NUL; Python's open() refuses such a path, and so do we.
  if (path.find('\0') != std::string::npos) {
    throw py::value_error("model path contains a NUL character");
  }
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    PyErr_SetObject(PyExc_FileNotFoundError,
                    py::make_tuple(ENOENT, "No such file or directory", path).ptr());
    throw py::error_already_set();
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    PyErr_SetObject(PyExc_PermissionError, py::make_tuple(EACCES, "Permission denied", path).ptr());
    throw py::error_already_set();
  }
}

// ---------------------------------------------------------------------------------------------
// dtypes. bfloat16 has no numpy type: it crosses as uint16 holding the raw bits.

py::dtype numpy_dtype(DTypeCode d) {
  switch (d) {
    case DTypeCode::kFloat32:
      return py::dtype("float32");
    case DTypeCode::kFloat64:
      return py::dtype("float64");
    case DTypeCode::kFloat16:
      return py::dtype("float16");
    case DTypeCode::kBFloat16:
      return py::dtype("uint16");
    case DTypeCode::kInt8:
      return py::dtype("int8");
    case DTypeCode::kInt16:
      return py::dtype("int16");
    case DTypeCode::kInt32:
      return py::dtype("int32");
    case DTypeCode::kInt64:
      return py::dtype("int64");
    case DTypeCode::kUInt8:
      return py::dtype("uint8");
    case DTypeCode::kUInt16:
      return py::dtype("uint16");
    case DTypeCode::kUInt32:
      return py::dtype("uint32");
    case DTypeCode::kUInt64:
      return py::dtype("uint64");
    case DTypeCode::kBool:
      return py::dtype("bool");
  }
  return py::dtype("float32");
}

// ONNX Runtime's NodeArg.type strings.
std::string ort_type_name(DTypeCode d) {
  static const char* kNames[kNumDTypes] = {"float",  "double", "float16", "bfloat16", "int8",
                                           "int16",  "int32",  "int64",   "uint8",    "bool",
                                           "uint16", "uint32", "uint64"};
  return std::string("tensor(") + kNames[static_cast<int>(d)] + ")";
}

// The frame dtype of a numpy dtype; uint16 stands for bfloat16 where that is `expected`.
std::optional<DTypeCode> frame_dtype(const py::dtype& dt, std::optional<DTypeCode> expected) {
  char kind = dt.kind();
  size_t size = static_cast<size_t>(dt.itemsize());
  if (kind == 'f') {
    if (size == 4) return DTypeCode::kFloat32;
    if (size == 8) return DTypeCode::kFloat64;
    if (size == 2) return DTypeCode::kFloat16;
  } else if (kind == 'i') {
    if (size == 1) return DTypeCode::kInt8;
    if (size == 2) return DTypeCode::kInt16;
    if (size == 4) return DTypeCode::kInt32;
    if (size == 8) return DTypeCode::kInt64;
  } else if (kind == 'u') {
    if (size == 1) return DTypeCode::kUInt8;
    if (size == 2) {
      return expected == DTypeCode::kBFloat16 ? DTypeCode::kBFloat16 : DTypeCode::kUInt16;
    }
    if (size == 4) return DTypeCode::kUInt32;
    if (size == 8) return DTypeCode::kUInt64;
  } else if (kind == 'b') {
    return DTypeCode::kBool;
  }
  return std::nullopt;
}

// A dtype argument: a frame name ("f32", "float32", "bf16"), a numpy dtype or type.
DTypeCode parse_dtype_arg(const py::object& obj) {
  if (py::isinstance<py::str>(obj)) {
    Result<DTypeCode> r = parse_dtype(obj.cast<std::string>());
    if (r.is_ok()) return *r;
  }
  py::dtype dt;
  try {
    dt = py::dtype::from_args(obj);
  } catch (py::error_already_set&) {
    throw py::type_error("dtype: expected a dtype name or numpy dtype, got " +
                         std::string(py::str(obj)));
  }
  std::optional<DTypeCode> d = frame_dtype(dt, std::nullopt);
  if (!d) throw py::value_error("dtype " + std::string(py::str(dt)) + " is not supported by frame");
  return *d;
}

// ---------------------------------------------------------------------------------------------
// numpy <-> Tensor.

// Inputs of one call. C-contiguous aligned arrays are borrowed (Tensor::view over their memory,
// the arrays kept alive here for the call); others are copied once into a contiguous array.
struct Feeds {
  TensorMap tensors;
  std::vector<py::array> keep;  // referenced arrays, alive until the call returns
};

Tensor tensor_from_array(const std::string& name, const py::handle& obj,
                         std::optional<DTypeCode> expected, std::vector<py::array>& keep) {
  if (!py::isinstance<py::array>(obj)) {
    throw py::type_error("input '" + name + "': expected numpy.ndarray, got " +
                         std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  }
  py::array arr = py::reinterpret_borrow<py::array>(obj);
  std::optional<DTypeCode> d = frame_dtype(arr.dtype(), expected);
  if (!d) {
    throw py::value_error("input '" + name + "': dtype " + std::string(py::str(arr.dtype())) +
                          " is not supported by frame");
  }
  if (!arr.dtype().attr("isnative").cast<bool>()) {
    // Byte-swapped data ('>f4' on x86): one copy in native order, C-contiguous.
    arr = py::array(arr.attr("astype")(arr.dtype().attr("newbyteorder")("="), "C"));
  }
  constexpr int kAligned = py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  if (!(arr.flags() & py::array::c_style) || !(arr.flags() & kAligned)) {
    arr = py::array::ensure(arr, py::array::c_style | py::array::forcecast);  // one copy
  }
  Shape shape(arr.shape(), arr.shape() + arr.ndim());
  keep.push_back(arr);
  // The run only reads inputs; the view's const_cast never leads to a write.
  Result<Tensor> t = Tensor::view(*d, std::move(shape), const_cast<void*>(arr.data()));
  return take(std::move(t));
}

// `known`: the names an unknown-input error lists; empty: every key of `expected_dtypes`.
Feeds feeds_from_dict(const py::handle& obj,
                      const std::map<std::string, DTypeCode>& expected_dtypes,
                      const std::string& known = {}) {
  if (!py::isinstance<py::dict>(obj)) {
    throw py::type_error("input feed: expected dict[str, numpy.ndarray], got " +
                         std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  }
  Feeds feeds;
  for (auto [k, v] : py::reinterpret_borrow<py::dict>(obj)) {
    if (!py::isinstance<py::str>(k)) {
      throw py::type_error("input feed: names must be str, got " +
                           std::string(py::str(py::type::handle_of(k).attr("__name__"))));
    }
    std::string name = k.cast<std::string>();
    auto it = expected_dtypes.find(name);
    if (it == expected_dtypes.end()) {
      std::string names = known;
      for (const auto& [n, d] : expected_dtypes) {
        if (known.empty()) names += (names.empty() ? "" : ", ") + n;
      }
      throw py::key_error("unknown input '" + name + "' (inputs: " + names + ")");
    }
    std::optional<DTypeCode> expected = it->second;
    feeds.tensors.emplace(name, tensor_from_array(name, v, expected, feeds.keep));
  }
  return feeds;
}

// Hands a tensor to numpy without a copy: the array's base is a capsule owning the Tensor.
// A borrowed tensor (an output that is an input view) is copied, since its memory is not ours.
py::array array_from_tensor(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (!t.owns_storage()) {
    py::array out(numpy_dtype(t.dtype()), shape);
    if (t.nbytes() > 0) std::memcpy(out.mutable_data(), t.raw_data(), t.nbytes());
    return out;
  }
  auto* owner = new Tensor(t);
  py::capsule base(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(numpy_dtype(t.dtype()), shape, {}, owner->raw_data(), base);
}

// ---------------------------------------------------------------------------------------------
// Reports as Python objects.

py::list placements_to_list(const runtime::CompileReport& report) {
  py::list out;
  for (const runtime::Placement& p : report.placements) {
    py::dict d;
    d["node"] = p.node;
    d["op"] = p.op;
    d["backend"] = p.backend;
    d["path"] = p.path;
    d["rejected"] = p.rejected;
    d["reorders_per_run"] = p.reorders_per_run;
    out.append(d);
  }
  return out;
}

py::object json_loads(const std::string& text) {
  return py::module_::import("json").attr("loads")(text);
}

// ---------------------------------------------------------------------------------------------
// Sessions.

/// ONNX Runtime's SessionOptions, mapped onto runtime::SessionOptions.
struct PySessionOptions {
  int threads = 0;
  std::vector<std::string> backends = {"auto"};
  bool strict = false;
  bool enable_profiling = false;
  std::vector<std::string> disabled_passes;
  // The cache bounds (max_specializations, max_cache_bytes) and the resource limits
  // (compile.max_memory_bytes, compile.max_tensor_bytes) start at the C++ defaults; the other
  // fields of `session` are set from the ones above by to_runtime().
  runtime::SessionOptions session;
  // Limits of the ONNX import (docs/security.md); unused for a session over a frame.Graph.
  onnx::LoadLimits load_limits;

  runtime::SessionOptions to_runtime() const {
    runtime::SessionOptions o = session;
    o.compile.backends = backends;
    o.compile.strict = strict;
    o.compile.num_threads = threads;
    o.compile.disabled_passes = disabled_passes;
    return o;
  }
  onnx::LoadOptions to_load() const {
    onnx::LoadOptions o;
    static_cast<onnx::LoadLimits&>(o) = load_limits;
    return o;
  }
};

/// frame.RunOptions: options of one run (ONNX Runtime's RunOptions). `terminate` lives in a
/// shared atomic so another thread can set it while a run that holds it is computing.
struct PyRunOptions {
  std::shared_ptr<std::atomic<bool>> terminate = std::make_shared<std::atomic<bool>>(false);
  std::string logid;
};

/// The run's RunOptions::terminate from a frame.RunOptions (None or any other object: none).
/// `keep` holds the flag for the call.
const std::atomic<bool>* terminate_flag(const py::object& run_options,
                                        std::shared_ptr<std::atomic<bool>>& keep) {
  if (run_options.is_none() || !py::isinstance<PyRunOptions>(run_options)) return nullptr;
  keep = run_options.cast<const PyRunOptions&>().terminate;
  return keep.get();
}

/// A declared model input or output (ONNX Runtime's NodeArg).
struct NodeArg {
  std::string name;
  py::object shape;  // list of int | str | None, or None without a declared shape
  std::string type;
  py::dtype dtype;
};

NodeArg node_arg(const runtime::ValueInfo& v) {
  NodeArg a;
  a.name = v.name;
  if (v.has_shape) {
    py::list dims;
    for (const runtime::Dim& d : v.dims) {
      if (d.is_concrete()) {
        dims.append(d.value);
      } else if (!d.param.empty()) {
        dims.append(d.param);
      } else {
        dims.append(py::none());
      }
    }
    a.shape = dims;
  } else {
    a.shape = py::none();
  }
  a.type = ort_type_name(v.dtype);
  // ONNX Runtime's names for the other value types; their shape is [] as ORT reports it.
  if (v.sequence) a.type = "seq(" + a.type + ")";
  if (v.optional) a.type = "optional(" + a.type + ")";
  if (v.sequence || v.optional) a.shape = py::list();
  a.dtype = numpy_dtype(v.dtype);
  return a;
}

/// The values of `names` in order, each made by `make(name)`; a name asked again gets a deep
/// copy (numpy's copy of an array, a list of copies for a sequence), so no two returned
/// objects share memory, as ONNX Runtime's are distinct.
template <class Make>
py::list outputs_in_order(const std::vector<std::string>& names, Make&& make) {
  py::list result;
  std::set<std::string_view> seen;
  for (const std::string& n : names) {
    py::object v = make(n);
    if (!seen.insert(n).second) v = py::module_::import("copy").attr("deepcopy")(v);
    result.append(v);
  }
  return result;
}

/// frame.InferenceSession: a runtime::Session (ONNX model or frame.Graph) with ONNX Runtime's
/// Python surface. Thread-safe like the Session; profiled runs share one Profile.
class InferenceSession {
 public:
  InferenceSession(const py::object& model, std::optional<PySessionOptions> sess_options,
                   std::optional<std::vector<std::string>> backends, std::optional<int> threads)
      : options_(sess_options.value_or(PySessionOptions{})) {
    if (backends) options_.backends = *backends;
    if (threads) options_.threads = *threads;
    runtime::SessionOptions ro = options_.to_runtime();
    onnx::LoadOptions lo = options_.to_load();
    std::optional<Result<runtime::Session>> opened;
    if (py::isinstance<py::bytes>(model)) {
      // Read in place: `model` (immutable bytes) outlives the call.
      char* data = nullptr;
      Py_ssize_t size = 0;
      PyBytes_AsStringAndSize(model.ptr(), &data, &size);
      std::string_view bytes(data, static_cast<size_t>(size));
      opened.emplace(without_gil([&] { return onnx::open_session_from_bytes(bytes, ro, lo); }));
    } else if (py::isinstance<py::str>(model) ||
               py::isinstance(model, py::module_::import("os").attr("PathLike"))) {
      std::string path = py::str(py::module_::import("os").attr("fspath")(model));
      check_readable(path);
      opened.emplace(without_gil([&] { return onnx::open_session(path, ro, lo); }));
    } else {
      throw py::type_error(
          "InferenceSession: expected a path (str or os.PathLike), bytes or Graph, got " +
          std::string(py::str(py::type::handle_of(model).attr("__name__"))));
    }
    session_ = take(std::move(*opened));
    finish();
  }
  /// Over a session made elsewhere (a frame.Graph: runtime::Session::from_graph).
  InferenceSession(runtime::Session session, PySessionOptions options)
      : options_(std::move(options)), session_(std::move(session)) {
    finish();
  }

  py::list run(const py::object& output_names, const py::object& input_feed,
               const py::object& run_options) {
    std::shared_ptr<std::atomic<bool>> terminate;
    const std::atomic<bool>* flag = terminate_flag(run_options, terminate);
    std::vector<std::string> names;
    if (output_names.is_none()) {
      for (const runtime::ValueInfo& v : sess().outputs()) names.push_back(v.name);
    } else {
      if (py::isinstance<py::str>(output_names) || !py::isinstance<py::sequence>(output_names)) {
        throw py::type_error("output_names: expected a list of str or None");
      }
      for (py::handle h : output_names) {
        if (!py::isinstance<py::str>(h)) throw py::type_error("output_names: expected str items");
        names.push_back(h.cast<std::string>());
      }
      for (const std::string& n : names) {
        bool known = false;
        for (const runtime::ValueInfo& v : sess().outputs()) known = known || v.name == n;
        if (!known) throw py::key_error("unknown output '" + n + "' (get_outputs() lists them)");
      }
    }
    if (has_values_) return run_values(names, input_feed, flag);
    Feeds feeds = feeds_from_dict(input_feed, dtypes_, known_);
    clear_kernel_exception();
    Result<TensorMap> out = without_gil([&] {
      runtime::RunOptions ro;
      ro.profile = profile_.get();
      ro.terminate = flag;
      return sess().run(feeds.tensors, ro);
    });
    if (!out.is_ok()) raise_run_status(out.status());
    clear_kernel_exception();
    return outputs_in_order(
        names, [&](const std::string& n) { return py::object(array_from_tensor(out->at(n))); });
  }

  // frame.compare (docs/debugging.md): this session's run against `reference`'s on the same
  // feeds, every value both produce compared (runtime::compare_runs); the report as JSON.
  std::string compare_with(const InferenceSession& reference, const py::object& input_feed,
                           const std::vector<std::string>& backends,
                           const std::vector<std::string>& reference_backends,
                           std::optional<double> rtol, std::optional<double> atol) const {
    Feeds feeds = feeds_from_dict(input_feed, dtypes_, known_);
    runtime::CompareOptions co;
    co.backends = backends;
    co.reference_backends = reference_backends;
    co.rtol = rtol;
    co.atol = atol;
    clear_kernel_exception();
    Result<runtime::ComparisonReport> r = without_gil(
        [&] { return runtime::compare_runs(sess(), reference.sess(), feeds.tensors, co); });
    if (!r.is_ok()) raise_run_status(r.status());
    clear_kernel_exception();
    return r->to_json();
  }

  // run() writing into the caller's arrays (runtime::Session::run's caller-buffer form, ONNX
  // Runtime's IoBinding): `outputs` maps output names to C-contiguous, aligned, writable
  // arrays of their dtype and shape, which the kernels write directly. Outputs it does not name
  // get arrays allocated here for the specialization's output types and are returned by name;
  // nothing else is allocated for the outputs. For a staged model (output types known only
  // after the run) the run's tensors are copied into the given arrays.
  py::dict run_into(const py::object& input_feed, const py::object& outputs_obj,
                    const py::object& run_options) {
    if (has_values_) {
      throw py::value_error("a model with sequence or optional values has no caller-buffer run");
    }
    if (!py::isinstance<py::dict>(outputs_obj)) {
      throw py::type_error("outputs: expected dict[str, numpy.ndarray]");
    }
    std::shared_ptr<std::atomic<bool>> terminate;
    const std::atomic<bool>* flag = terminate_flag(run_options, terminate);
    Feeds feeds = feeds_from_dict(input_feed, dtypes_, known_);
    TensorMap outs;
    std::map<std::string, py::array> arrays;
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(outputs_obj)) {
      const std::string name = py::str(k);
      if (!py::isinstance<py::array>(v))
        throw py::type_error("output '" + name + "': not an ndarray");
      py::array arr = py::reinterpret_borrow<py::array>(v);
      constexpr int kAligned = py::detail::npy_api::NPY_ARRAY_ALIGNED_;
      if (!(arr.flags() & py::array::c_style) || !(arr.flags() & kAligned) || !arr.writeable() ||
          !arr.dtype().attr("isnative").cast<bool>()) {
        throw py::value_error("output '" + name +
                              "': the array must be C-contiguous, aligned, writable and in "
                              "native byte order");
      }
      std::optional<DTypeCode> d = frame_dtype(arr.dtype(), std::nullopt);
      if (!d) throw py::value_error("output '" + name + "': dtype not supported by frame");
      Shape shape(arr.shape(), arr.shape() + arr.ndim());
      outs.emplace(name, take(Tensor::view(*d, std::move(shape), arr.mutable_data())));
      arrays.emplace(name, arr);
    }
    py::dict allocated;
    size_t bound = 0;
    for (const runtime::ValueInfo& v : sess().outputs()) bound += outs.count(v.name);
    if (bound < sess().outputs().size() && !sess().is_staged()) {
      // The specialization's output types (a cache hit after the first run).
      clear_kernel_exception();
      Result<runtime::Executable> exe = without_gil([&] { return sess().prepare(feeds.tensors); });
      if (!exe.is_ok()) raise_run_status(exe.status());
      for (const auto& [name, type] : exe->output_signature()) {
        if (outs.count(name) > 0) continue;
        py::array arr(numpy_dtype(type.dtype),
                      std::vector<py::ssize_t>(type.shape.begin(), type.shape.end()));
        outs.emplace(name, take(Tensor::view(type.dtype, type.shape, arr.mutable_data())));
        allocated[py::str(name)] = arr;
      }
    }
    clear_kernel_exception();
    Result<TensorMap> staged_out = TensorMap{};
    Status st = without_gil([&] {
      runtime::RunOptions ro;
      ro.profile = profile_.get();
      ro.terminate = flag;
      if (bound < sess().outputs().size() && sess().is_staged()) {
        staged_out = sess().run(feeds.tensors, ro);
        if (!staged_out.is_ok()) return staged_out.status();
        for (auto& [name, t] : *staged_out) {
          if (outs.count(name) > 0) outs[name] = t;  // copied into the array below
        }
        return Status();
      }
      return sess().run(feeds.tensors, outs, ro);
    });
    if (!st.is_ok()) raise_run_status(st);
    clear_kernel_exception();
    for (auto& [name, t] : *staged_out) {
      if (arrays.count(name) == 0) allocated[py::str(name)] = array_from_tensor(t);
    }
    for (auto& [name, arr] : arrays) {
      const Tensor& t = outs.at(name);
      if (t.raw_data() == arr.data()) continue;
      if (t.nbytes() != static_cast<size_t>(arr.nbytes())) {
        throw py::value_error("output '" + name + "': the run produced " +
                              ir::TensorType{t.dtype(), t.shape()}.to_string() +
                              ", which does not fit the bound array (" +
                              std::string(py::str(arr.dtype())) + ", shape " +
                              std::string(py::str(arr.attr("shape"))) + ")");
      }
      std::memcpy(arr.mutable_data(), t.raw_data(), t.nbytes());
    }
    return allocated;
  }

  // A model with sequence or optional inputs or outputs (ONNX Runtime's forms): a list of
  // arrays for a sequence, None for an absent optional, an array otherwise.
  py::list run_values(const std::vector<std::string>& names, const py::object& input_feed,
                      const std::atomic<bool>* terminate) {
    if (!py::isinstance<py::dict>(input_feed)) {
      throw py::type_error("input feed: expected dict[str, numpy.ndarray | list | None], got " +
                           std::string(py::str(py::type::handle_of(input_feed).attr("__name__"))));
    }
    runtime::ValueMap feeds;
    std::vector<py::array> keep;
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(input_feed)) {
      if (!py::isinstance<py::str>(k)) throw py::type_error("input feed: names must be str");
      const std::string name = k.cast<std::string>();
      auto it = dtypes_.find(name);
      if (it == dtypes_.end()) {
        std::string known;
        for (const auto& [n, d] : dtypes_) known += (known.empty() ? "" : ", ") + n;
        throw py::key_error("unknown input '" + name + "' (inputs: " + known + ")");
      }
      if (v.is_none()) {
        feeds.emplace(name, runtime::Value::none());
      } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
        std::vector<Tensor> elements;
        size_t k_index = 0;
        for (py::handle e : v) {
          elements.push_back(
              tensor_from_array(name + "[" + std::to_string(k_index++) + "]", e, it->second, keep));
        }
        feeds.emplace(name, runtime::Value::of_sequence(std::move(elements), it->second));
      } else {
        feeds.emplace(name, runtime::Value::of(tensor_from_array(name, v, it->second, keep)));
      }
    }
    clear_kernel_exception();
    Result<runtime::ValueMap> out = without_gil([&] {
      runtime::RunOptions ro;
      ro.profile = profile_.get();
      ro.terminate = terminate;
      return sess().run_values(feeds, ro);
    });
    if (!out.is_ok()) raise_run_status(out.status());
    clear_kernel_exception();
    return outputs_in_order(names, [&](const std::string& n) -> py::object {
      const runtime::Value& v = out->at(n);
      if (v.is_none()) return py::none();
      if (v.is_sequence()) {
        py::list items;
        for (const Tensor& t : v.sequence) items.append(array_from_tensor(t));
        return items;
      }
      return array_from_tensor(v.tensor);
    });
  }

  std::vector<NodeArg> get_inputs() const {
    std::vector<NodeArg> out;
    for (const runtime::ValueInfo& v : sess().inputs()) out.push_back(node_arg(v));
    return out;
  }
  std::vector<NodeArg> get_outputs() const {
    std::vector<NodeArg> out;
    for (const runtime::ValueInfo& v : sess().outputs()) out.push_back(node_arg(v));
    return out;
  }
  std::vector<NodeArg> get_overridable_initializers() const {
    std::vector<NodeArg> out;
    for (const runtime::ValueInfo& v : sess().overridable_inputs()) out.push_back(node_arg(v));
    return out;
  }
  py::list placement() const {
    std::optional<runtime::CompileReport> r = sess().last_report();
    return r ? placements_to_list(*r) : py::list();
  }
  py::object report() const {
    std::optional<runtime::CompileReport> r = sess().last_report();
    return r ? json_loads(r->to_json()) : py::object(py::none());
  }
  py::object profile() const {
    if (!profile_) {
      throw std::runtime_error("profiling is off: set SessionOptions.enable_profiling = True");
    }
    return json_loads(profile_->to_json());
  }
  std::vector<std::string> stages() const { return sess().stages(); }
  py::dict cache_stats() const {
    runtime::CacheStats s = sess().cache_stats();
    py::dict d;
    d["entries"] = s.entries;
    d["bytes"] = s.bytes;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["evictions"] = s.evictions;
    d["disk_hits"] = s.disk_hits;
    d["disk_misses"] = s.disk_misses;
    d["disk_writes"] = s.disk_writes;
    d["disk_rejected"] = s.disk_rejected;
    d["tier_ups"] = s.tier_ups;
    d["interpreted"] = s.interpreted;
    d["background_compiles"] = s.background_compiles;
    d["background_tier_ups"] = s.background_tier_ups;
    d["background_probes"] = s.background_probes;
    d["retyped_in_place"] = s.retyped_in_place;
    return d;
  }
  const PySessionOptions& get_session_options() const { return options_; }
  std::vector<std::string> shape_determining_inputs() const {
    return sess().shape_determining_inputs();
  }

 private:
  const runtime::Session& sess() const { return *session_; }
  void finish() {
    std::vector<std::string> names;
    for (const runtime::ValueInfo& v : sess().inputs()) names.push_back(v.name);
    known_ = fmt::format("{}", fmt::join(names, ", "));
    names.clear();
    for (const runtime::ValueInfo& v : sess().overridable_inputs()) names.push_back(v.name);
    if (!names.empty()) {
      // A model that lists every weight among its inputs (ONNX IR 3) has hundreds.
      known_ += names.size() <= 8
                    ? fmt::format("; overridable initializers: {}", fmt::join(names, ", "))
                    : fmt::format("; {} overridable initializers", names.size());
    }
    for (const auto* list : {&sess().inputs(), &sess().overridable_inputs()}) {
      for (const runtime::ValueInfo& v : *list) dtypes_[v.name] = v.dtype;
    }
    for (const auto* list : {&sess().inputs(), &sess().outputs()}) {
      for (const runtime::ValueInfo& v : *list)
        has_values_ = has_values_ || v.sequence || v.optional;
    }
    if (options_.enable_profiling) profile_ = std::make_unique<runtime::Profile>();
  }

  PySessionOptions options_;
  std::optional<runtime::Session> session_;  // set once the constructor succeeds
  std::map<std::string, DTypeCode> dtypes_;
  std::string known_;        // the feedable names, for an unknown-input error
  bool has_values_ = false;  // a sequence or optional input or output: run_values()
  std::unique_ptr<runtime::Profile> profile_;  // shared by every run; merges under its lock
};

// ---------------------------------------------------------------------------------------------
// Graph building.

class PyGraph;

/// A value of a Graph under construction.
struct PyValue {
  std::shared_ptr<ir::Graph> graph;
  ir::ValueId id = ir::kNoValue;
  std::string name() const { return graph->value(id).name; }
  py::object dtype() const {
    const auto& t = graph->value(id).type;
    return t ? py::object(numpy_dtype(t->dtype)) : py::object(py::none());
  }
  py::object shape() const {
    const auto& t = graph->value(id).type;
    return t ? py::object(py::cast(t->shape)) : py::object(py::none());
  }
};

// The Python value of an attribute (tensors as ndarray copies, graphs as None).
py::object attr_to_py(const ir::AttrValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, Tensor>) {
          py::array out(numpy_dtype(x.dtype()),
                        std::vector<py::ssize_t>(x.shape().begin(), x.shape().end()));
          if (x.nbytes() > 0) std::memcpy(out.mutable_data(), x.raw_data(), x.nbytes());
          return out;
        } else if constexpr (std::is_same_v<X, std::shared_ptr<const ir::Graph>>) {
          return py::none();
        } else {
          return py::cast(x);
        }
      },
      v);
}

ir::AttrValue attr_from_py(const std::string& key, const py::handle& v) {
  auto bad = [&]() {
    return py::type_error("attribute '" + key +
                          "': expected int, float, str, a list of one of those, or "
                          "numpy.ndarray, got " +
                          std::string(py::str(py::type::handle_of(v).attr("__name__"))));
  };
  if (py::isinstance<py::bool_>(v)) return int64_t{v.cast<bool>() ? 1 : 0};
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::array>(v)) {
    std::vector<py::array> keep;
    return tensor_from_array(key, v, std::nullopt, keep).clone();
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
    bool all_int = true, all_num = true, all_str = true;
    for (py::handle h : seq) {
      bool is_int = py::isinstance<py::int_>(h);
      all_int = all_int && is_int;
      all_num = all_num && (is_int || py::isinstance<py::float_>(h));
      all_str = all_str && py::isinstance<py::str>(h);
    }
    if (all_int) return seq.cast<std::vector<int64_t>>();
    if (all_num) return seq.cast<std::vector<double>>();
    if (all_str) return seq.cast<std::vector<std::string>>();
  }
  throw bad();
}

/// frame.Graph: an ir::Graph built op by op, shared with the Values it hands out.
class PyGraph {
 public:
  explicit PyGraph(const std::string& name) : g_(std::make_shared<ir::Graph>(name)) {}
  explicit PyGraph(ir::Graph g) : g_(std::make_shared<ir::Graph>(std::move(g))) {}

  PyValue input(const std::string& name, const py::object& dtype,
                const std::vector<int64_t>& shape) {
    if (name.empty()) throw py::value_error("graph '" + g_->name() + "': empty input name");
    if (g_->find_value(name) != ir::kNoValue) {
      throw py::value_error("graph '" + g_->name() + "': value name '" + name + "' is taken");
    }
    for (int64_t d : shape) {
      if (d < 0) throw py::value_error("input '" + name + "': dims must be >= 0 (ARCH-044)");
    }
    ir::TensorType t{parse_dtype_arg(dtype), shape};
    return {g_, g_->add_input(name, std::move(t))};
  }

  PyValue constant(const py::array& value, std::optional<std::string> name) {
    std::vector<py::array> keep;
    std::string n = name ? *name : g_->unique_value_name("const");
    if (g_->find_value(n) != ir::kNoValue) {
      throw py::value_error("graph '" + g_->name() + "': value name '" + n + "' is taken");
    }
    Tensor t = tensor_from_array(n, value, std::nullopt, keep).clone();
    return {g_, g_->add_constant(n, std::move(t))};
  }

  py::object add_node(const std::string& op, const py::sequence& inputs, const py::object& attrs,
                      std::optional<std::string> name, std::optional<int> num_outputs) {
    const ops::OpSchema* schema = ops::OpRegistry::global().find(op);
    // Ops that passes introduce are not user-facing (PY-021).
    constexpr std::string_view kInternal = "_internal";
    const bool internal =
        op.size() >= kInternal.size() &&
        op.compare(op.size() - kInternal.size(), kInternal.size(), kInternal) == 0;
    if (schema == nullptr || internal) {
      throw py::key_error("unknown op '" + op + "' (frame.ops() lists them" +
                          (internal ? "; *_internal ops are made by passes, PY-021)" : ")"));
    }
    std::vector<ir::ValueId> ids;
    for (py::handle h : inputs) {
      if (h.is_none()) {
        ids.push_back(ir::kNoValue);
      } else if (py::isinstance<PyValue>(h)) {
        const PyValue& v = h.cast<const PyValue&>();
        if (v.graph != g_) {
          throw py::value_error("op '" + op + "': input '" + v.name() +
                                "' belongs to another graph");
        }
        ids.push_back(v.id);
      } else if (py::isinstance<py::array>(h)) {
        ids.push_back(constant(py::reinterpret_borrow<py::array>(h), std::nullopt).id);
      } else {
        throw py::type_error("op '" + op + "': inputs must be Value, numpy.ndarray or None, got " +
                             std::string(py::str(py::type::handle_of(h).attr("__name__"))));
      }
    }
    ir::AttrMap attr_map;
    if (!attrs.is_none()) {
      if (!py::isinstance<py::dict>(attrs)) throw py::type_error("attrs: expected dict");
      for (auto [k, v] : py::reinterpret_borrow<py::dict>(attrs)) {
        std::string key = py::str(k);
        ir::AttrValue value = attr_from_py(key, v);
        // Python writes 1 for 1.0: widen ints where the schema declares floats.
        if (const ops::AttrSpec* spec = schema->find_attr(key)) {
          if (spec->type == ir::AttrType::kFloat && std::holds_alternative<int64_t>(value)) {
            value = static_cast<double>(std::get<int64_t>(value));
          } else if (spec->type == ir::AttrType::kFloats &&
                     std::holds_alternative<std::vector<int64_t>>(value)) {
            const auto& ints = std::get<std::vector<int64_t>>(value);
            value = std::vector<double>(ints.begin(), ints.end());
          }
        }
        attr_map.emplace(key, std::move(value));
      }
    }
    int n_out = num_outputs ? *num_outputs : std::max(1, schema->min_output_count());
    if (n_out < 1) throw py::value_error("op '" + op + "': num_outputs must be >= 1");
    std::string node_name = name ? *name : "";
    if (!node_name.empty() && g_->find_node(node_name) != -1) {
      throw py::value_error("graph '" + g_->name() + "': node name '" + node_name + "' is taken");
    }
    ir::NodeId n = take(g_->create_node(op, node_name, std::move(ids), n_out, std::move(attr_map)));
    // V4 now, so a bad arity or attribute is reported at the call that made it; the graph is
    // left as it was.
    if (Status s = schema->check_node(g_->node(n)); !s.is_ok()) {
      g_->remove_node(n);
      raise_status(s);
    }
    // Output types now when the shape function can tell (Value.dtype/.shape); otherwise (e.g.
    // a shape-determining input that is bound per run) compile infers them.
    bool typed = true;
    for (ir::ValueId v : g_->node(n).inputs)
      typed = typed && (v == ir::kNoValue || g_->value(v).type);
    if (typed) {
      Result<std::vector<ir::TensorType>> types =
          schema->infer(ops::make_node_context(*g_, g_->node(n), schema));
      if (types.is_ok() && types->size() == g_->node(n).outputs.size()) {
        for (size_t i = 0; i < types->size(); ++i)
          g_->value(g_->node(n).outputs[i]).type = (*types)[i];
      }
    }
    const std::vector<ir::ValueId>& outs = g_->node(n).outputs;
    if (outs.size() == 1) return py::cast(PyValue{g_, outs[0]});
    py::list l;
    for (ir::ValueId v : outs) l.append(PyValue{g_, v});
    return l;
  }

  void output(const py::object& values) {
    auto add = [&](py::handle h) {
      if (!py::isinstance<PyValue>(h))
        throw py::type_error("output: expected Value or list of Value");
      const PyValue& v = h.cast<const PyValue&>();
      if (v.graph != g_)
        throw py::value_error("output '" + v.name() + "' belongs to another graph");
      g_->add_output(v.id);
    };
    if (py::isinstance<py::list>(values) || py::isinstance<py::tuple>(values)) {
      for (py::handle h : values) add(h);
    } else {
      add(values);
    }
  }

  std::vector<PyValue> inputs() const {
    std::vector<PyValue> out;
    for (ir::ValueId v : g_->inputs()) out.push_back({g_, v});
    return out;
  }
  std::vector<PyValue> outputs() const {
    std::vector<PyValue> out;
    for (ir::ValueId v : g_->outputs()) out.push_back({g_, v});
    return out;
  }
  const ir::Graph& graph() const { return *g_; }
  std::string name() const { return g_->name(); }
  size_t num_nodes() const { return g_->num_nodes(); }

 private:
  std::shared_ptr<ir::Graph> g_;
};

/// A compiled graph (runtime::Executable).
class PyExecutable {
 public:
  explicit PyExecutable(runtime::Executable exe) : exe_(std::move(exe)) {
    for (const auto& [name, type] : exe_.input_signature()) dtypes_[name] = type.dtype;
  }
  py::dict run(const py::object& feeds_obj) const {
    Feeds feeds = feeds_from_dict(feeds_obj, dtypes_);
    clear_kernel_exception();
    Result<TensorMap> out = without_gil([&] { return exe_.run(feeds.tensors); });
    if (!out.is_ok()) raise_run_status(out.status());
    clear_kernel_exception();
    py::dict d;
    for (const auto& [name, type] : exe_.output_signature())
      d[py::str(name)] = array_from_tensor(out->at(name));
    return d;
  }
  py::list placement() const { return placements_to_list(exe_.report()); }
  py::object report() const { return json_loads(exe_.report().to_json()); }
  py::list signature(bool inputs) const {
    py::list l;
    for (const auto& [name, type] : inputs ? exe_.input_signature() : exe_.output_signature()) {
      l.append(py::make_tuple(name, numpy_dtype(type.dtype), py::cast(type.shape)));
    }
    return l;
  }

 private:
  runtime::Executable exe_;
  std::map<std::string, DTypeCode> dtypes_;
};

PyExecutable compile_graph(const PyGraph& g, const std::vector<std::string>& backends, bool strict,
                           int threads, size_t max_memory_bytes, size_t max_tensor_bytes) {
  runtime::CompileOptions o;
  o.backends = backends;
  o.strict = strict;
  o.num_threads = threads;
  o.max_memory_bytes = max_memory_bytes;
  o.max_tensor_bytes = max_tensor_bytes;
  // Copied under the GIL, so another thread may keep building `g` meanwhile.
  ir::Graph graph = g.graph();
  Result<runtime::Executable> exe = without_gil([&] { return runtime::compile(graph, o); });
  return PyExecutable(take(std::move(exe)));
}

// InferenceSession(model, ...): an ONNX path or bytes, or a frame.Graph (whose
// shape-determining inputs are then bound per run, like an ONNX model's).
std::unique_ptr<InferenceSession> make_session(const py::object& model,
                                               std::optional<PySessionOptions> sess_options,
                                               std::optional<std::vector<std::string>> backends,
                                               std::optional<int> threads) {
  if (!py::isinstance<PyGraph>(model)) {
    return std::make_unique<InferenceSession>(model, std::move(sess_options), std::move(backends),
                                              threads);
  }
  PySessionOptions options = sess_options.value_or(PySessionOptions{});
  if (backends) options.backends = *backends;
  if (threads) options.threads = *threads;
  ir::Graph graph = model.cast<const PyGraph&>().graph();  // copied under the GIL
  Result<runtime::Session> s = without_gil(
      [&] { return runtime::Session::from_graph(std::move(graph), options.to_runtime()); });
  return std::make_unique<InferenceSession>(take(std::move(s)), std::move(options));
}

PyGraph load_onnx(const py::object& path_obj,
                  const std::map<std::string, std::vector<int64_t>>& input_shapes,
                  const std::optional<onnx::LoadLimits>& limits) {
  std::string path = py::str(py::module_::import("os").attr("fspath")(path_obj));
  check_readable(path);
  onnx::LoadOptions o;
  if (limits) static_cast<onnx::LoadLimits&>(o) = *limits;
  for (const auto& [k, v] : input_shapes) o.input_shapes[k] = v;
  Result<ir::Graph> g = without_gil([&] { return onnx::load(path, o); });
  return PyGraph(take(std::move(g)));
}

// ---------------------------------------------------------------------------------------------
// Custom ops from Python (frame.register_op). The registries take plain function pointers, so
// one trampoline per role finds the op's Python callables: the shape function by op name (at
// compile time), the kernel through its prepare state (once per node at compile time).

/// The Python callables of one op registered by frame.register_op.
struct PyOp {
  py::object shape_fn;  // None: every output takes input 0's type
  py::object kernel;
  size_t num_outputs = 1;
};

// Never destroyed: registrations are permanent, and Python objects must not be released after
// the interpreter has finalized.
std::mutex& py_ops_mutex() {
  static auto* mu = new std::mutex();
  return *mu;
}
std::map<std::string, std::shared_ptr<PyOp>>& py_ops() {
  static auto* ops = new std::map<std::string, std::shared_ptr<PyOp>>();
  return *ops;
}

std::shared_ptr<PyOp> find_py_op(std::string_view op) {
  std::lock_guard lock(py_ops_mutex());
  auto it = py_ops().find(std::string(op));
  return it == py_ops().end() ? nullptr : it->second;
}

// The node's attributes with schema defaults filled in, as a dict.
py::dict attrs_dict(const ops::NodeContext& ctx) {
  py::dict d;
  if (ctx.schema == nullptr) return d;
  for (const ops::AttrSpec& a : ctx.schema->attrs()) {
    const ir::AttrValue* v = nullptr;
    if (ctx.attrs != nullptr) {
      auto it = ctx.attrs->find(a.name);
      if (it != ctx.attrs->end()) v = &it->second;
    }
    if (v == nullptr && a.default_value) v = &*a.default_value;
    if (v != nullptr) d[py::str(a.name)] = attr_to_py(*v);
  }
  return d;
}

std::string python_error_text(py::error_already_set& e) {
  // e.what() repeats the type and adds a traceback; keep its first line.
  std::string what = e.what();
  return what.substr(0, what.find('\n'));
}

Result<std::vector<ir::TensorType>> py_shape_trampoline(const ops::NodeContext& ctx) {
  std::shared_ptr<PyOp> op = find_py_op(ctx.op);
  if (!op) return ctx.error("no Python op registered");
  if (runtime::in_background_compile()) {
    return ctx.error("a Python op is not run on a background compile thread");
  }
  py::gil_scoped_acquire gil;
  PythonCallbackScope in_python;
  if (op->shape_fn.is_none()) {
    if (ctx.input_types.empty()) return ctx.error("a Python op without inputs needs a shape_fn");
    return std::vector<ir::TensorType>(ctx.num_outputs, ctx.input_types[0]);
  }
  try {
    py::list types;
    for (size_t i = 0; i < ctx.input_types.size(); ++i) {
      types.append(py::make_tuple(numpy_dtype(ctx.input_types[i].dtype),
                                  py::cast(ctx.input_types[i].shape)));
    }
    py::object r = op->shape_fn(types, attrs_dict(ctx));
    std::vector<ir::TensorType> out;
    for (py::handle h : r) {
      if (!py::isinstance<py::sequence>(h) || py::isinstance<py::str>(h) || py::len(h) != 2) {
        return ctx.error("shape_fn must return a list of (dtype, shape) pairs");
      }
      py::sequence t = py::reinterpret_borrow<py::sequence>(h);
      out.push_back({parse_dtype_arg(t[0]), t[1].cast<std::vector<int64_t>>()});
    }
    if (out.size() != ctx.num_outputs) {
      return ctx.error("shape_fn returned {} types for {} outputs", out.size(), ctx.num_outputs);
    }
    return out;
  } catch (py::error_already_set& e) {
    return ctx.error("shape_fn raised {}", python_error_text(e));
  } catch (std::exception& e) {
    return ctx.error("shape_fn returned a bad value: {}", e.what());
  }
}

Result<std::shared_ptr<void>> py_prepare_trampoline(const ops::NodeContext& ctx) {
  std::shared_ptr<PyOp> op = find_py_op(ctx.op);
  if (!op) return ctx.error("no Python op registered");
  return std::shared_ptr<void>(op);
}

Status py_kernel_trampoline(ops::KernelContext& ctx) {
  const ops::NodeContext& node = *ctx.node;
  auto* op = static_cast<PyOp*>(ctx.state);
  std::shared_ptr<PyOp> found;
  if (op == nullptr) {  // callers that skip prepare
    found = find_py_op(node.op);
    if (!found) return node.error("no Python op registered");
    op = found.get();
  }
  if (runtime::in_background_compile()) {
    return node.error("a Python op is not run on a background compile thread");
  }
  py::gil_scoped_acquire gil;
  PythonCallbackScope in_python;
  try {
    py::list inputs;
    for (const Tensor& t : ctx.inputs) {
      if (!t.defined()) {
        inputs.append(py::none());
        continue;
      }
      // A copy: the kernel may keep what it is given.
      py::array a(numpy_dtype(t.dtype()),
                  std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()));
      if (t.nbytes() > 0) std::memcpy(a.mutable_data(), t.raw_data(), t.nbytes());
      inputs.append(a);
    }
    py::object r = op->kernel(inputs, attrs_dict(node));
    std::vector<py::object> results;
    if (py::isinstance<py::list>(r) || py::isinstance<py::tuple>(r)) {
      for (py::handle h : r) results.push_back(py::reinterpret_borrow<py::object>(h));
    } else {
      results.push_back(r);
    }
    if (results.size() != ctx.outputs.size()) {
      return node.error("Python kernel returned {} arrays for {} outputs", results.size(),
                        ctx.outputs.size());
    }
    for (size_t i = 0; i < results.size(); ++i) {
      Tensor& out = ctx.outputs[i];
      py::array a = py::array::ensure(results[i], py::array::c_style);
      if (!a) return node.error("Python kernel output {} is not array-like", i);
      if (!a.dtype().attr("isnative").cast<bool>()) {  // e.g. x.astype(">f4"): to native order
        a = py::array::ensure(a.attr("astype")(a.dtype().attr("newbyteorder")("=")),
                              py::array::c_style);
        if (!a) return node.error("Python kernel output {} cannot be byte-swapped", i);
      }
      std::optional<DTypeCode> d = frame_dtype(a.dtype(), out.dtype());
      Shape shape(a.shape(), a.shape() + a.ndim());
      if (!d || *d != out.dtype() || shape != out.shape()) {
        return node.error("Python kernel output {} is {}{}, expected {}", i,
                          std::string(py::str(a.dtype())), shape_to_string(shape),
                          ir::TensorType{out.dtype(), out.shape()}.to_string());
      }
      if (out.nbytes() > 0) std::memcpy(out.raw_data(), a.data(), out.nbytes());
    }
    return Status();
  } catch (py::error_already_set& e) {
    Py_XDECREF(g_kernel_exception);
    g_kernel_exception = e.value().inc_ref().ptr();
    if (e.trace() && !e.trace().is_none()) {  // keep the kernel's traceback on the exception
      PyException_SetTraceback(g_kernel_exception, e.trace().ptr());
    }
    return node.error("Python kernel raised {}", python_error_text(e));
  } catch (std::exception& e) {  // a conversion failed; nothing may unwind into the runtime
    return node.error("Python kernel returned a bad value: {}", e.what());
  }
}

ops::OpTrait parse_trait(const std::string& name) {
  for (ops::OpTrait t : {ops::OpTrait::kElementwise, ops::OpTrait::kFusable,
                         ops::OpTrait::kHasSideEffect, ops::OpTrait::kCommutative}) {
    if (ops::op_trait_name(t) == name) return t;
  }
  throw py::value_error("unknown trait '" + name +
                        "' (expected elementwise, fusable, has_side_effect, commutative)");
}

void register_op(const std::string& name, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs, const py::object& attrs,
                 const std::vector<std::string>& traits, const py::object& shape_fn,
                 const py::object& cpu_kernel, const std::string& doc) {
  if (!PyCallable_Check(cpu_kernel.ptr())) throw py::type_error("cpu_kernel: expected a callable");
  // PY-021: `_internal` names are reserved for ops passes create; Python would hide its own op.
  if (name.size() >= 9 && name.compare(name.size() - 9, 9, "_internal") == 0) {
    throw py::value_error("op '" + name +
                          "': names ending in '_internal' are reserved for ops the compiler "
                          "creates (PY-021)");
  }
  if (!shape_fn.is_none() && !PyCallable_Check(shape_fn.ptr())) {
    throw py::type_error("shape_fn: expected a callable or None");
  }
  if (outputs.empty()) throw py::value_error("op '" + name + "': needs at least one output");
  if (shape_fn.is_none() && inputs.empty()) {
    throw py::value_error("op '" + name + "': an op without inputs needs a shape_fn");
  }
  std::set<std::string> arg_names;
  for (const std::string& n : inputs) {
    if (!arg_names.insert("in:" + n).second) {
      throw py::value_error("op '" + name + "': input '" + n + "' declared twice");
    }
  }
  for (const std::string& n : outputs) {
    if (!arg_names.insert("out:" + n).second) {
      throw py::value_error("op '" + name + "': output '" + n + "' declared twice");
    }
  }
  // The caller's file and line, as FRAME_REGISTER_OP records __FILE__ and __LINE__.
  py::object frame = py::module_::import("sys").attr("_getframe")(0);
  std::string file = py::str(frame.attr("f_code").attr("co_filename"));
  int line = frame.attr("f_lineno").cast<int>();

  ops::OpSchemaBuilder b(name, file.c_str(), line);
  b.doc(doc);
  for (const std::string& n : inputs) b.input(n, "");
  for (const std::string& n : outputs) b.output(n, "");
  if (!attrs.is_none()) {
    if (!py::isinstance<py::dict>(attrs))
      throw py::type_error("attrs: expected dict name -> default");
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(attrs)) {
      std::string key = py::str(k);
      ir::AttrValue def = attr_from_py(key, v);
      b.attr(key, ir::attr_type_of(def), "", std::move(def));
    }
  }
  std::vector<ops::OpTrait> ts;
  for (const std::string& t : traits) ts.push_back(parse_trait(t));
  for (ops::OpTrait t : ts) b.traits({t});
  b.shape_infer(py_shape_trampoline);

  ops::KernelDef k;
  k.op = name;
  k.backend = "cpu";
  k.fn = py_kernel_trampoline;
  k.prepare = py_prepare_trampoline;
  k.file = file;
  k.line = line;

  auto op = std::make_shared<PyOp>();
  op->shape_fn = shape_fn;
  op->kernel = cpu_kernel;
  op->num_outputs = outputs.size();
  {
    // Published before the schema, so a concurrent compile never finds the op without it; a
    // failed registration below takes it back (only if it is still ours).
    std::lock_guard lock(py_ops_mutex());
    if (py_ops().count(name) == 0) py_ops()[name] = op;
  }
  Status s = ops::register_op_with_kernels(b.build(), {std::move(k)});
  if (!s.is_ok()) {
    std::lock_guard lock(py_ops_mutex());
    auto it = py_ops().find(name);
    if (it != py_ops().end() && it->second == op) py_ops().erase(it);
    raise_status(s);
  }
}

// ---------------------------------------------------------------------------------------------
// Plugins and backends.

// frame.load_plugin: runtime::load_plugin, what it added as a dict. A missing file is
// FileNotFoundError with frame's message; other refusals map like any Status.
py::dict load_plugin(const py::object& path_obj) {
  std::string path = py::str(py::module_::import("os").attr("fspath")(path_obj));
  if (path.find('\0') != std::string::npos) {
    throw py::value_error("plugin path contains a NUL character");
  }
  // dlopen and the plugin's registrations
  Result<runtime::PluginInfo> info = without_gil([&] { return runtime::load_plugin(path); });
  if (!info.is_ok()) {
    std::error_code ec;
    if (info.status().code() == StatusCode::kNotFound && !std::filesystem::exists(path, ec)) {
      PyErr_SetString(PyExc_FileNotFoundError, info.status().message().c_str());
      throw py::error_already_set();
    }
    raise_status(info.status());
  }
  py::dict d;
  d["path"] = info->path;
  d["ops"] = info->ops;
  d["kernels"] = info->kernels;
  d["patterns"] = info->patterns;
  return d;
}

// frame.backends: the backends of this build (runtime::backend_names), as `frame backends`
// describes them.
py::list backends_list() {
  py::list out;
  for (const std::string& name : runtime::backend_names()) {
    const runtime::Backend* b = runtime::find_backend(name);
    if (b == nullptr) continue;
    py::dict d;
    d["name"] = name;
    d["kind"] = b->granularity() == runtime::Backend::Granularity::kPerKernel ? "per-kernel"
                : b->device_memory()                                          ? "device-groups"
                                                                              : "whole-graph";
    std::string why = b->unavailable_reason();
    d["available"] = why.empty();
    d["reason"] = why;
    out.append(d);
  }
  return out;
}

}  // namespace
}  // namespace frame::python

PYBIND11_MODULE(_frame, m) {
  using namespace frame::python;  // NOLINT(google-build-using-namespace)
  m.doc() = "frame: a C++20 graph engine (docs/python.md)";
  m.attr("__version__") = FRAME_VERSION;
  // Interpreter exit with runs in flight: wait for them, start no more (without_gil).
  py::module_::import("atexit").attr("register")(py::cpp_function(&close_exit_gate));

  py::class_<frame::onnx::LoadLimits>(
      m, "LoadLimits",
      "Limits of the ONNX import (onnx::LoadLimits; docs/security.md). A model over one is "
      "refused with a ValueError naming the tensor, bytes and limit.")
      .def(py::init<>(), "The C++ defaults.")
      .def_readwrite("max_model_bytes", &frame::onnx::LoadLimits::max_model_bytes,
                     "Largest model file accepted, in bytes.")
      .def_readwrite("max_tensor_bytes", &frame::onnx::LoadLimits::max_tensor_bytes,
                     "Largest single tensor (initializer, Constant value, external data), in "
                     "bytes.")
      .def_readwrite("max_initializer_bytes", &frame::onnx::LoadLimits::max_initializer_bytes,
                     "Largest sum of the bytes of every initializer and Constant tensor.")
      .def_readwrite("max_nesting_depth", &frame::onnx::LoadLimits::max_nesting_depth,
                     "Deepest nesting of subgraphs (If/Loop/Scan bodies).")
      .def_readwrite("max_nodes", &frame::onnx::LoadLimits::max_nodes,
                     "Most nodes in the model, bodies included.")
      .def_readwrite("max_attribute_elements", &frame::onnx::LoadLimits::max_attribute_elements,
                     "Most elements of one list attribute and bytes of one string attribute.")
      .def("__repr__", [](const frame::onnx::LoadLimits& l) {
        return "LoadLimits(max_model_bytes=" + std::to_string(l.max_model_bytes) +
               ", max_tensor_bytes=" + std::to_string(l.max_tensor_bytes) +
               ", max_initializer_bytes=" + std::to_string(l.max_initializer_bytes) +
               ", max_nesting_depth=" + std::to_string(l.max_nesting_depth) +
               ", max_nodes=" + std::to_string(l.max_nodes) +
               ", max_attribute_elements=" + std::to_string(l.max_attribute_elements) + ")";
      });

  py::class_<PyRunOptions>(m, "RunOptions",
                           "Options of one run (ONNX Runtime style): set terminate from another "
                           "thread to stop a run between nodes.")
      .def(py::init<>())
      .def_property(
          "terminate", [](const PyRunOptions& o) { return o.terminate->load(); },
          [](PyRunOptions& o, bool v) { o.terminate->store(v); },
          "When True, a run given these options stops before its next node with RuntimeError "
          "(a run not started yet stops before its first).")
      .def_readwrite("logid", &PyRunOptions::logid, "A name for the run (stored only).");
  py::class_<PySessionOptions>(m, "SessionOptions",
                               "Options of an InferenceSession (ONNX Runtime style).")
      .def(py::init<>())
      .def_readwrite("threads", &PySessionOptions::threads,
                     "Threads kernels may use; 0 = all cores.")
      .def_property(
          "intra_op_num_threads", [](const PySessionOptions& o) { return o.threads; },
          [](PySessionOptions& o, int n) { o.threads = n; }, "ONNX Runtime name of `threads`.")
      // Lists come back as tuples: an in-place edit of a returned list would change a copy and be
      // lost silently; assign a new sequence instead.
      .def_property(
          "backends", [](const PySessionOptions& o) { return py::tuple(py::cast(o.backends)); },
          [](PySessionOptions& o, std::vector<std::string> v) { o.backends = std::move(v); },
          "Backend chain, most preferred first; 'auto' = optimized backends, then cpu. A "
          "tuple: assign a new sequence to change it.")
      .def_readwrite("strict", &PySessionOptions::strict,
                     "Fail compilation instead of falling back (decomposition or cpu).")
      .def_readwrite("enable_profiling", &PySessionOptions::enable_profiling,
                     "Time every node of every run; read with InferenceSession.profile().")
      .def_property(
          "disabled_passes",
          [](const PySessionOptions& o) { return py::tuple(py::cast(o.disabled_passes)); },
          [](PySessionOptions& o, std::vector<std::string> v) { o.disabled_passes = std::move(v); },
          "Compiler passes to skip by name, e.g. ['operator-fusion']. A tuple: assign a new "
          "sequence to change it.")
      .def_property(
          "max_specializations",
          [](const PySessionOptions& o) { return o.session.max_specializations; },
          [](PySessionOptions& o, size_t v) { o.session.max_specializations = v; },
          "Most compiled specializations (input shapes) kept, LRU.")
      .def_property(
          "max_cache_bytes", [](const PySessionOptions& o) { return o.session.max_cache_bytes; },
          [](PySessionOptions& o, size_t v) { o.session.max_cache_bytes = v; },
          "Most bytes the specialization cache keeps.")
      .def_property(
          "cache_dir", [](const PySessionOptions& o) { return o.session.cache_dir; },
          [](PySessionOptions& o, std::string v) { o.session.cache_dir = std::move(v); },
          "Directory of the compile cache on disk ('' = none): a specialization compiled by an "
          "earlier process is read from there without import or passes, and each new one is "
          "written there (docs/architecture/execution-model.md, 'Compile cache on disk').")
      .def_property(
          "tiered_compile", [](const PySessionOptions& o) { return o.session.tiered_compile; },
          [](PySessionOptions& o, bool v) { o.session.tiered_compile = v; },
          "Where input shapes vary, compile a first-seen shape cheaply with shape-agnostic "
          "kernels, and again in full once its runs have taken as long as that compile "
          "(docs/adr/0007-first-seen-shapes.md). Default True; outputs do not depend on it.")
      .def_property(
          "interpret_first_seen",
          [](const PySessionOptions& o) { return o.session.interpret_first_seen; },
          [](PySessionOptions& o, bool v) { o.session.interpret_first_seen = v; },
          "With tiered_compile, run a shape the session holds no specialization for node by "
          "node instead of compiling it, until that shape's runs have cost one compile "
          "(cache_stats()['interpreted'] counts them; docs/adr/0007-first-seen-shapes.md). "
          "Default True.")
      .def_property(
          "background_compile",
          [](const PySessionOptions& o) { return o.session.background_compile; },
          [](PySessionOptions& o, bool v) { o.session.background_compile = v; },
          "With tiered_compile, and where the session's threads leave a core spare: "
          "compile a recurring shape, and a first-tier shape's full compile, on a background "
          "thread while runs go on interpreted or with the held entry "
          "(cache_stats()['background_compiles']; docs/adr/0007-first-seen-shapes.md). Default "
          "True; off, the run that needs a compile waits for it.")
      .def_property(
          "max_cache_dir_bytes",
          [](const PySessionOptions& o) { return o.session.max_cache_dir_bytes; },
          [](PySessionOptions& o, size_t v) { o.session.max_cache_dir_bytes = v; },
          "Most bytes cache_dir holds; least recently used entries are removed first.")
      .def_property(
          "max_memory_bytes",
          [](const PySessionOptions& o) { return o.session.compile.max_memory_bytes; },
          [](PySessionOptions& o, size_t v) { o.session.compile.max_memory_bytes = v; },
          "Bytes one run may hold (arena peak + inputs/outputs + constants); a specialization "
          "over it fails to compile (ValueError). Default: 3/4 of physical memory.")
      .def_property(
          "max_tensor_bytes",
          [](const PySessionOptions& o) { return o.session.compile.max_tensor_bytes; },
          [](PySessionOptions& o, size_t v) { o.session.compile.max_tensor_bytes = v; },
          "Largest single value of a compiled graph, in bytes (ValueError naming it). Default: "
          "1/2 of physical memory.")
      .def_readwrite("load_limits", &PySessionOptions::load_limits,
                     "Limits of the ONNX import (LoadLimits); edits in place take effect.");

  py::class_<NodeArg>(m, "NodeArg", "A declared model input or output.")
      .def_readonly("name", &NodeArg::name)
      .def_readonly("shape", &NodeArg::shape,
                    "Dims: int, str for a symbolic dim, None when unknown; None without a shape.")
      .def_readonly("type", &NodeArg::type, "ONNX Runtime style type, e.g. 'tensor(float)'.")
      .def_readonly("dtype", &NodeArg::dtype, "numpy dtype (uint16 for bfloat16).")
      .def("__repr__", [](const NodeArg& a) {
        return "NodeArg(name='" + a.name + "', type='" + a.type +
               "', shape=" + std::string(py::repr(a.shape)) + ")";
      });

  py::class_<InferenceSession>(m, "InferenceSession",
                               "An ONNX model ready to run; thread-safe (docs/python.md).")
      .def(py::init(&make_session), py::arg("path_or_bytes"), py::arg("sess_options") = py::none(),
           py::arg("backends") = py::none(), py::arg("threads") = py::none())
      .def("run", &InferenceSession::run, py::arg("output_names"), py::arg("input_feed"),
           py::arg("run_options") = py::none(),
           "Runs the model; returns the named outputs (all when None) in order.")
      .def(
          "run_async",
          [](const py::object& self, const py::object& output_names, const py::object& input_feed,
             const py::object& callback, const py::object& user_data,
             const py::object& run_options) -> py::object {
            // On the small pool of frame._async (Python threads that only call run(), which
            // releases the GIL while frame computes); the feed is copied so the caller may
            // change its dict at once.
            py::module_ pool = py::module_::import("frame._async");
            // A new dict (py::dict(d) of a dict would be the same object).
            py::object feed = py::module_::import("builtins").attr("dict")(input_feed);
            py::object future = pool.attr("executor")().attr("submit")(
                self.attr("run"), output_names, feed, run_options);
            if (callback.is_none()) return future;
            future.attr("add_done_callback")(pool.attr("on_done")(callback, user_data));
            return py::none();
          },
          py::arg("output_names"), py::arg("input_feed"), py::arg("callback") = py::none(),
          py::arg("user_data") = py::none(), py::arg("run_options") = py::none(),
          "Starts run(output_names, input_feed) on a frame thread and returns at once: with a "
          "callback, returns None and calls callback(outputs, user_data, err) when the run ends "
          "(err == '' on success; outputs None and err the error on failure), as ONNX "
          "Runtime's run_async; without one, returns a concurrent.futures.Future of the outputs "
          "(asyncio: await asyncio.wrap_future(f)).")
      .def("_run_into", &InferenceSession::run_into, py::arg("input_feed"), py::arg("outputs"),
           py::arg("run_options") = py::none(),
           "run() into the caller's arrays (every output, C-contiguous and writable; "
           "frame.onnxruntime's IOBinding).")
      .def("get_inputs", &InferenceSession::get_inputs)
      .def("get_outputs", &InferenceSession::get_outputs)
      .def("_compare_with", &InferenceSession::compare_with, py::arg("reference"),
           py::arg("input_feed"), py::arg("backends"), py::arg("reference_backends"),
           py::arg("rtol") = py::none(), py::arg("atol") = py::none(),
           "frame.compare's core: runs this session and `reference` on the same feeds and "
           "returns runtime::ComparisonReport::to_json().")
      .def("get_overridable_initializers", &InferenceSession::get_overridable_initializers,
           "Initializers a run may feed in place of their stored value (an initializer that is "
           "also a graph input; ONNX IR spec, 'Graphs'), not among get_inputs().")
      .def("placement", &InferenceSession::placement,
           "Where each node of the latest compiled specialization runs, and why.")
      .def("report", &InferenceSession::report,
           "The compile report of the latest compiled specialization (None before the first "
           "run), as Executable.report().")
      .def("profile", &InferenceSession::profile,
           "Per-node times of the profiled runs (a Chrome trace dict).")
      .def("cache_stats", &InferenceSession::cache_stats)
      .def("stages", &InferenceSession::stages,
           "Steps of a model with data-dependent shapes (static stages and eager nodes, in run "
           "order; docs/adr/0008-data-dependent-shapes.md); empty for other models.")
      .def("shape_determining_inputs", &InferenceSession::shape_determining_inputs)
      .def("get_session_options", &InferenceSession::get_session_options);

  py::class_<PyValue>(m, "Value", "A value of a Graph under construction.")
      .def_property_readonly("name", &PyValue::name)
      .def_property_readonly("dtype", &PyValue::dtype)
      .def_property_readonly("shape", &PyValue::shape)
      .def("__repr__", [](const PyValue& v) { return "Value('" + v.name() + "')"; });

  py::class_<PyGraph>(m, "Graph", "A graph built op by op; compile it with frame.compile.")
      .def(py::init<const std::string&>(), py::arg("name") = "graph")
      .def("input", &PyGraph::input, py::arg("name"), py::arg("dtype"), py::arg("shape"))
      .def("constant", &PyGraph::constant, py::arg("value"), py::arg("name") = py::none())
      .def("add_node", &PyGraph::add_node, py::arg("op"), py::arg("inputs"),
           py::arg("attrs") = py::none(), py::arg("name") = py::none(),
           py::arg("num_outputs") = py::none(),
           "Adds a node; returns its output Value, or a list when it has several.")
      .def("output", &PyGraph::output, py::arg("values"))
      .def_property_readonly("inputs", &PyGraph::inputs)
      .def_property_readonly("outputs", &PyGraph::outputs)
      .def_property_readonly("name", &PyGraph::name)
      .def_property_readonly("num_nodes", &PyGraph::num_nodes);

  py::class_<PyExecutable>(m, "Executable", "A compiled graph; run is thread-safe.")
      .def("run", &PyExecutable::run, py::arg("inputs"), "Runs the graph; returns {name: array}.")
      .def("placement", &PyExecutable::placement)
      .def("report", &PyExecutable::report)
      .def_property_readonly("input_signature",
                             [](const PyExecutable& e) { return e.signature(true); })
      .def_property_readonly("output_signature",
                             [](const PyExecutable& e) { return e.signature(false); });

  // The limits' defaults are runtime::CompileOptions' own (fractions of physical memory).
  const frame::runtime::CompileOptions compile_defaults;
  m.def("compile", &compile_graph, py::arg("graph"),
        py::arg("backends") = std::vector<std::string>{"auto"}, py::arg("strict") = false,
        py::arg("threads") = 0, py::kw_only(),
        py::arg("max_memory_bytes") = compile_defaults.max_memory_bytes,
        py::arg("max_tensor_bytes") = compile_defaults.max_tensor_bytes,
        "Compiles a Graph; a value or run over a memory limit is a ValueError.");
  m.def("load_onnx", &load_onnx, py::arg("path"),
        py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{}, py::kw_only(),
        py::arg("limits") = py::none(),
        "Imports an ONNX model as a Graph (symbolic dims need input_shapes; limits: "
        "LoadLimits, default LoadLimits()).");
  m.def("load_plugin", &load_plugin, py::arg("path"),
        "Loads a plugin shared library (runtime::load_plugin): its ops, kernels, lowering "
        "patterns and ONNX mappings, all or nothing. Returns {path, ops, kernels, patterns}.");
  m.def("backends", &backends_list,
        "The backends of this build: [{name, kind, available, reason}, ...] (frame backends).");
  m.def("register_op", &register_op, py::arg("name"), py::arg("inputs"), py::arg("outputs"),
        py::arg("attrs") = py::none(), py::arg("traits") = std::vector<std::string>{},
        py::arg("shape_fn") = py::none(), py::kw_only(), py::arg("cpu_kernel"), py::arg("doc") = "",
        "Registers an op with a Python cpu kernel (docs/python.md, custom ops).");
  m.def(
      "map_onnx_op",
      [](const std::string& domain, const std::string& op_type, const std::string& op) {
        if (op.size() >= 9 && op.compare(op.size() - 9, 9, "_internal") == 0) {
          throw py::value_error("map_onnx_op: '" + op +
                                "' is an internal op (PY-021); map to a user-facing op");
        }
        const frame::Status st = frame::onnx::register_custom_op(domain, op_type, op);
        if (!st.is_ok()) raise_status(st);
      },
      py::arg("domain"), py::arg("op_type"), py::arg("op"),
      "Imports ONNX nodes domain::op_type as the registered op `op` (inputs and attributes as "
      "is; onnx::register_custom_op).");
  m.def("_ops_json", [] { return frame::ops::OpRegistry::global().to_json(); });
  m.def("_kernels_json", [] { return frame::ops::KernelRegistry::global().to_json(); });
  // For frame.onnxruntime's get_modelmeta (docs/python.md): the ModelProto's descriptive fields.
  m.def(
      "_model_metadata",
      [](const py::bytes& model) {
        const std::string_view bytes = model;
        frame::Result<frame::onnx::ModelMetadata> r = frame::onnx::model_metadata(bytes);
        if (!r.is_ok()) raise_status(r.status());
        py::dict d;
        d["producer_name"] = r->producer_name;
        d["producer_version"] = r->producer_version;
        d["domain"] = r->domain;
        d["description"] = r->doc_string;
        d["version"] = r->model_version;
        d["graph_name"] = r->graph_name;
        d["graph_description"] = r->graph_doc_string;
        py::list props;
        for (const auto& [k, v] : r->metadata_props) props.append(py::make_tuple(k, v));
        d["metadata_props"] = props;
        return d;
      },
      py::arg("model"));
}
