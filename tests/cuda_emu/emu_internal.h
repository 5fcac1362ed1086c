// tests/cuda_emu/emu_internal.h — the emulated GPU (tests only): what emu_cublas.cpp and emu_nccl.cpp
// need from the runtime (emu_runtime.cpp): host work queued in order on a stream.
#pragma once

#include <functional>

#include <cuda_runtime.h>

namespace strata_emu {

// Queues `work` on `stream` (null: the current device's default stream); it runs on the stream's
// worker thread after everything queued before it. Returns the device's sticky error, if any.
cudaError_t enqueue_host_work(cudaStream_t stream, std::function<void()> work);
// The device ordinal `stream` belongs to (null: the current device), or -1.
int stream_device(cudaStream_t stream);
// Marks `device` failed with `err` (a sticky error, as a faulting kernel leaves it).
void fail_device(int device, cudaError_t err);
// Whether [p, p + bytes) lies inside one allocation of an emulated device (any device: -1).
bool is_device_range(const void* p, size_t bytes, int device = -1);

}  // namespace strata_emu
