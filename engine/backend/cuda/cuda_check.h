// engine/backend/cuda/cuda_check.h — the one checking path of the CUDA backend: every CUDA runtime,
// cuBLAS and NCCL call goes through a macro here that turns a failure into
// Error{Code::Device, "<call> failed: <name>: <reason> (file:line)"}, and tells sticky errors (the
// context is unusable until the process restarts) apart so the device is marked failed.
// Included only by engine/backend/cuda/cuda_*.cpp (it includes CUDA headers). Thread-safe.
#pragma once

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "engine/core/status.h"
#include "engine/backend/device.h"

namespace strata::backend::cuda {

// Whether `e` leaves the CUDA context unusable: CUDA documents these as "the process is left in an
// inconsistent state and any further CUDA work will return the same error". A device that meets one
// is marked failed (backend::Device::mark_failed) so every later op and allocation fails at once.
inline bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:        // 700: a kernel read or wrote outside its memory
    case cudaErrorLaunchTimeout:         // 702: watchdog killed a kernel
    case cudaErrorAssert:                // 710: device-side assert
    case cudaErrorHardwareStackError:    // 714
    case cudaErrorIllegalInstruction:    // 715
    case cudaErrorMisalignedAddress:     // 716
    case cudaErrorInvalidAddressSpace:   // 717
    case cudaErrorInvalidPc:             // 718
    case cudaErrorLaunchFailure:         // 719: an exception while running a kernel
    case cudaErrorContextIsDestroyed:    // 709
    case cudaErrorECCUncorrectable:      // 214: uncorrectable memory error
    case cudaErrorNvlinkUncorrectable:   // 220
    case cudaErrorDevicesUnavailable:    // 46: the GPU became unavailable (taken exclusively, or lost)
    case cudaErrorMpsClientTerminated:   // 810
    case cudaErrorExternalDevice:        // 911
#if CUDART_VERSION >= 13000
    case cudaErrorContained:             // 226: a hardware error contained by the GPU
    case cudaErrorTensorMemoryLeak:      // 721
#endif
      return true;
    default:
      return false;
  }
}

// "engine/backend/cuda/cuda_ops.cpp" out of an absolute __FILE__.
inline const char* short_file(const char* file) {
  for (const char* marker : {"/engine/", "/kernels/"}) {
    if (const char* at = std::strstr(file, marker)) return at + 1;
  }
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

inline std::string where(const char* file, int line) {
  return std::string(" (") + short_file(file) + ":" + std::to_string(line) + ")";
}

// A failed CUDA runtime call as an Error. A non-sticky error is also cleared from the thread's
// last-error slot (cudaGetLastError), so that the next kernel launch check on this thread does not
// report it again as its own.
inline Error cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  if (!is_sticky(e)) (void)cudaGetLastError();
  return Error{Code::Device, std::string(call) + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) +
                                 where(file, line)};
}

// As cuda_error, and marks `device` failed when the error is sticky (device may be null).
inline Error device_error(backend::Device* device, cudaError_t e, const char* call, const char* file, int line) {
  const bool sticky = is_sticky(e);
  Error error = cuda_error(e, call, file, line);
  if (device != nullptr) {
    if (sticky) {
      error.message = "device '" + device->id() + "': " + error.message + " (sticky: the device is now failed)";
      device->mark_failed(error.message);
    } else {
      error.message = "device '" + device->id() + "': " + error.message;
    }
  }
  return error;
}

// A failed cuBLAS call. cuBLAS reports a kernel fault as EXECUTION_FAILED; the context's own error
// (peeked, not cleared) tells whether it is sticky, and then `device` is marked failed.
inline Error cublas_error(backend::Device* device, cublasStatus_t s, const char* call, const char* file, int line) {
  std::string message = std::string(call) + " failed: " + cublasGetStatusString(s) + where(file, line);
  const cudaError_t context = cudaPeekAtLastError();
  if (device != nullptr) {
    message = "device '" + device->id() + "': " + message;
    if (is_sticky(context)) {
      message += "; context: " + std::string(cudaGetErrorName(context)) + " (sticky: the device is now failed)";
      device->mark_failed(message);
    }
  }
  return Error{Code::Device, std::move(message)};
}

// A failed NCCL call; `detail` is ncclGetLastError's text where a communicator is at hand.
inline Error nccl_error(ncclResult_t r, const char* call, const char* file, int line, const char* detail = nullptr) {
  std::string message = std::string(call) + " failed: " + ncclGetErrorString(r);
  if (detail != nullptr && detail[0] != '\0') message += std::string(" (") + detail + ")";
  return Error{Code::Device, message + where(file, line)};
}

// The message of a device that failed earlier, for ops that refuse to run on it.
inline Error failed_device_error(const backend::Device& device) {
  return Error{Code::Device, "device '" + device.id() + "' failed earlier: " + device.failure()};
}

// Waits until everything queued on `stream` has run, as cudaStreamSynchronize, but gives up once
// `device` is marked failed (the pipeline's device timeout marks a device that does not answer):
// a hung kernel then cannot hold the calling worker forever. Polls cudaStreamQuery: yielding for
// the first ~100 us (decode steps wait microseconds), then sleeping 50 us between polls.
inline Status wait_stream(backend::Device& device, cudaStream_t stream, const char* call, const char* file, int line) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return Status();
    if (e != cudaErrorNotReady) return device_error(&device, e, call, file, line);
    if (device.failed()) return failed_device_error(device);
    if (std::chrono::steady_clock::now() - start < std::chrono::microseconds(100)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace strata::backend::cuda

// Each macro returns the Error from the enclosing function (which returns Status or Expected<T>).
// `expr` is evaluated exactly once. kernels/cuda/common.cuh has its own STRATA_CUDA_TRY (returning
// the cudaError_t, for kernel host code): the two headers are never included together.
#if defined(STRATA_CUDA_TRY)
#error "cuda_check.h and kernels/cuda/common.cuh both define STRATA_CUDA_TRY: include only one"
#endif
#define STRATA_CUDA_TRY(expr)                                                                 \
  do {                                                                                        \
    const cudaError_t strata_cuda_e_ = (expr);                                                \
    if (strata_cuda_e_ != cudaSuccess)                                                        \
      return ::strata::backend::cuda::cuda_error(strata_cuda_e_, #expr, __FILE__, __LINE__); \
  } while (0)

// As STRATA_CUDA_TRY, and a sticky error marks `device` (an backend::Device*) failed.
#define STRATA_CUDA_TRY_ON(device, expr)                                                                \
  do {                                                                                                  \
    const cudaError_t strata_cuda_e_ = (expr);                                                          \
    if (strata_cuda_e_ != cudaSuccess)                                                                  \
      return ::strata::backend::cuda::device_error((device), strata_cuda_e_, #expr, __FILE__, __LINE__); \
  } while (0)

// Waits for a stream of `device` (an backend::Device&) through wait_stream; returns its error.
#define STRATA_CUDA_WAIT_ON(device, stream)                                                              \
  do {                                                                                                  \
    ::strata::Status strata_wait_s_ = ::strata::backend::cuda::wait_stream((device), (stream),          \
                                                                           "wait for " #stream, __FILE__, __LINE__); \
    if (!strata_wait_s_.ok()) return strata_wait_s_;                                                    \
  } while (0)

#define STRATA_CUBLAS_TRY_ON(device, expr)                                                                \
  do {                                                                                                    \
    const cublasStatus_t strata_cublas_s_ = (expr);                                                       \
    if (strata_cublas_s_ != CUBLAS_STATUS_SUCCESS)                                                        \
      return ::strata::backend::cuda::cublas_error((device), strata_cublas_s_, #expr, __FILE__, __LINE__); \
  } while (0)
#define STRATA_CUBLAS_TRY(expr) STRATA_CUBLAS_TRY_ON(nullptr, expr)

#define STRATA_NCCL_TRY(expr)                                                                 \
  do {                                                                                        \
    const ncclResult_t strata_nccl_r_ = (expr);                                               \
    if (strata_nccl_r_ != ncclSuccess)                                                        \
      return ::strata::backend::cuda::nccl_error(strata_nccl_r_, #expr, __FILE__, __LINE__); \
  } while (0)
