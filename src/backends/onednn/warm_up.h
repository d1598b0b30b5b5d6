#pragma once
/// \file
/// The onednn backend's warm-up (ops::register_warm_up; docs/backends/onednn.md, "Warm-up"):
/// oneDNN generates every JIT kernel of its f32 gemm (`dnnl_sgemm`) at the first call in a
/// process, 40-90 ms on the 2-core AVX-512 machine, which the first run of a model whose
/// kernels call it would wait for (the interpreted tier's convolutions, LSTM, GRU and RNN).
/// Opening such a model starts that call on a thread of its own while the model is imported,
/// and the open waits for it before it returns.

#include <string>
#include <vector>

namespace frame::backends::onednn {

/// Starts the gemm warm-up once per process, on a thread of its own, where the process may run
/// on two or more cores (on one, the first run generating the kernels costs no more than the
/// warm-up would). Returns at once: true while a warm-up thread runs (this call's or an
/// earlier one's), false where none was started or it was joined. A fork() waits for it to end
/// (pthread_atfork), so a child never inherits oneDNN's kernel generation half done; so does
/// the process's exit.
bool start_gemm_warm_up();

/// The registered warm-up: start_gemm_warm_up() where `ops` (frame op names of the model
/// being opened) hold an lstm, gru or rnn, or a conv with `shapes_vary` (the interpreted tier's
/// convs call dnnl_sgemm; compiled ones run JIT convolution primitives); nothing otherwise
/// (opening a model that needs no gemm should not wait for one).
/// Returns start_gemm_warm_up()'s answer, or false.
bool warm_up_for(const std::vector<std::string>& ops, bool shapes_vary);

/// True once start_gemm_warm_up was asked in this process (tests; also on a one-core
/// affinity mask, where it starts no thread).
bool gemm_warm_up_started();

/// Waits for the warm-up thread to end, if one runs (the registered wait: the ONNX frontend
/// calls it before returning a session; fork and exit do it too).
void join_gemm_warm_up();

}  // namespace frame::backends::onednn
