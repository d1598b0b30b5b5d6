#pragma once
/// \file
/// The few ONNX Runtime C API entry points the benchmark driver calls, declared here because
/// the npm package carries the shared library but no header. `OrtGetApiBase()` returns a
/// table of two functions; `GetApi(version)` returns `OrtApi`, a struct of function pointers
/// whose order never changes once released (new entries are only appended; the first 102
/// entries, "version 1", are frozen). We read the table as an array and take entries by
/// position, so only the slots below must be right; `Api::load` checks them at run time
/// (version string, a status round-trip, the session's input and output names).

#include <cstddef>
#include <cstdint>

namespace ortlite {

struct OrtStatus;
struct OrtEnv;
struct OrtSession;
struct OrtSessionOptions;
struct OrtMemoryInfo;
struct OrtValue;
struct OrtRunOptions;
struct OrtAllocator;
struct OrtTensorTypeAndShapeInfo;

/// ONNXTensorElementDataType (the TensorProto.DataType numbering).
enum ElementType : int { kFloat = 1, kInt32 = 6, kInt64 = 7, kDouble = 11 };
/// OrtLoggingLevel, OrtAllocatorType, OrtMemType, GraphOptimizationLevel values used here.
inline constexpr int kLogWarning = 2;
inline constexpr int kArenaAllocator = 1;
inline constexpr int kMemTypeDefault = 0;
inline constexpr int kEnableAllOptimizations = 99;
inline constexpr int kErrorFail = 1;  ///< ORT_FAIL

/// `OrtApiBase`: what the exported `OrtGetApiBase` returns.
struct ApiBase {
  const void* (*GetApi)(uint32_t version);
  const char* (*GetVersionString)();
};
using GetApiBaseFn = const ApiBase* (*)();

/// Positions in the OrtApi table (all in the frozen version-1 block), counted along
/// `struct OrtApi` of include/onnxruntime/core/session/onnxruntime_c_api.h.
enum Slot : size_t {
  kCreateStatus = 0,
  kGetErrorCode = 1,
  kGetErrorMessage = 2,
  kCreateEnv = 3,
  kCreateSession = 7,
  kRun = 9,
  kCreateSessionOptions = 10,
  kSetOptimizedModelFilePath = 11,
  kEnableProfiling = 14,
  kSetSessionGraphOptimizationLevel = 23,
  kSetIntraOpNumThreads = 24,
  kSetInterOpNumThreads = 25,
  kSessionGetInputCount = 30,
  kSessionGetOutputCount = 31,
  kSessionGetInputName = 36,
  kSessionGetOutputName = 37,
  kCreateTensorWithDataAsOrtValue = 49,
  kGetTensorMutableData = 51,
  kGetTensorElementType = 60,
  kGetDimensionsCount = 61,
  kGetDimensions = 62,
  kGetTensorTypeAndShape = 65,
  kCreateCpuMemoryInfo = 69,
  kAllocatorFree = 76,
  kGetAllocatorWithDefaultOptions = 78,
  kReleaseEnv = 92,
  kReleaseStatus = 93,
  kReleaseMemoryInfo = 94,
  kReleaseSession = 95,
  kReleaseValue = 96,
  kReleaseTensorTypeAndShapeInfo = 99,
  kReleaseSessionOptions = 100,
};

/// Typed view of the slots above. Every function returning `OrtStatus*` returns null on
/// success; a non-null status carries the error and must be released.
struct Api {
  OrtStatus* (*CreateStatus)(int code, const char* msg);
  int (*GetErrorCode)(const OrtStatus* status);
  const char* (*GetErrorMessage)(const OrtStatus* status);
  OrtStatus* (*CreateEnv)(int log_level, const char* log_id, OrtEnv** out);
  OrtStatus* (*CreateSession)(const OrtEnv* env, const char* model_path,
                              const OrtSessionOptions* options, OrtSession** out);
  OrtStatus* (*Run)(OrtSession* session, const OrtRunOptions* run_options,
                    const char* const* input_names, const OrtValue* const* inputs,
                    size_t num_inputs, const char* const* output_names, size_t num_outputs,
                    OrtValue** outputs);
  OrtStatus* (*CreateSessionOptions)(OrtSessionOptions** out);
  /// Where session creation writes the model after its graph optimizations (ORT's "optimized
  /// model file"; a later session loads that file instead of the original).
  OrtStatus* (*SetOptimizedModelFilePath)(OrtSessionOptions* options, const char* path);
  /// Has the session write a per-node profile (Chrome trace JSON, one "Node" event per kernel
  /// call with its duration in microseconds) to PREFIX_<date>.json when it is released.
  OrtStatus* (*EnableProfiling)(OrtSessionOptions* options, const char* prefix);
  OrtStatus* (*SetSessionGraphOptimizationLevel)(OrtSessionOptions* options, int level);
  OrtStatus* (*SetIntraOpNumThreads)(OrtSessionOptions* options, int threads);
  OrtStatus* (*SetInterOpNumThreads)(OrtSessionOptions* options, int threads);
  OrtStatus* (*SessionGetInputCount)(const OrtSession* session, size_t* out);
  OrtStatus* (*SessionGetOutputCount)(const OrtSession* session, size_t* out);
  OrtStatus* (*SessionGetInputName)(const OrtSession* session, size_t index,
                                    OrtAllocator* allocator, char** out);
  OrtStatus* (*SessionGetOutputName)(const OrtSession* session, size_t index,
                                     OrtAllocator* allocator, char** out);
  OrtStatus* (*CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo* info, void* data,
                                               size_t data_bytes, const int64_t* shape, size_t rank,
                                               int element_type, OrtValue** out);
  /// The data of a tensor value (for an output ORT allocated: valid until ReleaseValue).
  OrtStatus* (*GetTensorMutableData)(OrtValue* value, void** out);
  /// Element type (ElementType numbering) of a type-and-shape info.
  OrtStatus* (*GetTensorElementType)(const OrtTensorTypeAndShapeInfo* info, int* out);
  OrtStatus* (*GetDimensionsCount)(const OrtTensorTypeAndShapeInfo* info, size_t* out);
  OrtStatus* (*GetDimensions)(const OrtTensorTypeAndShapeInfo* info, int64_t* dims,
                              size_t dims_length);
  /// The type and shape of a tensor value; release the info with ReleaseTensorTypeAndShapeInfo.
  OrtStatus* (*GetTensorTypeAndShape)(const OrtValue* value, OrtTensorTypeAndShapeInfo** out);
  OrtStatus* (*CreateCpuMemoryInfo)(int allocator_type, int mem_type, OrtMemoryInfo** out);
  OrtStatus* (*AllocatorFree)(OrtAllocator* allocator, void* p);
  OrtStatus* (*GetAllocatorWithDefaultOptions)(OrtAllocator** out);
  void (*ReleaseEnv)(OrtEnv*);
  void (*ReleaseStatus)(OrtStatus*);
  void (*ReleaseMemoryInfo)(OrtMemoryInfo*);
  void (*ReleaseSession)(OrtSession*);
  void (*ReleaseValue)(OrtValue*);
  void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo*);
  void (*ReleaseSessionOptions)(OrtSessionOptions*);
};

}  // namespace ortlite
