// engine/backend/cuda/cuda_backend.cpp — the CUDA backend's runtime queries (cuda_backend.h): what
// the runtime reports, how many devices there are, opening one, peer access.
// Threads: any thread. No driver or no GPU is a normal state (zero devices), never an error.
#include "engine/backend/cuda/cuda_backend.h"

#include <string>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_device.h"

namespace strata::backend::cuda {

namespace {

// 13000 -> "13.0".
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess || v <= 0) return "NCCL unknown";
  // Since NCCL 2.9 the code is major * 10000 + minor * 100 + patch.
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}

// cudaGetDeviceCount, with "no driver" (cudaErrorInsufficientDriver, 35) and "no GPU"
// (cudaErrorNoDevice, 100) as zero devices. Any other error also means none usable; its code is
// returned so runtime_description can say what happened.
int count_devices(cudaError_t* error) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (error != nullptr) *error = e;
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace

std::string runtime_description() {
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) (void)cudaGetLastError();
  // 0 when no driver is installed (not an error).
  if (cudaDriverGetVersion(&driver) != cudaSuccess) {
    (void)cudaGetLastError();
    driver = 0;
  }
  const std::string versions = "CUDA runtime " + cuda_version(runtime) +
                               (driver > 0 ? ", driver " + cuda_version(driver) : std::string()) + ", " + nccl_version();
  cudaError_t e = cudaSuccess;
  (void)count_devices(&e);
  if (e == cudaErrorInsufficientDriver || driver == 0) return "no CUDA driver (" + versions + ")";
  if (e == cudaErrorNoDevice) return "no CUDA device (" + versions + ")";
  if (e != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorName(e) + " (" + versions + ")";
  return versions;
}

int device_count() { return count_devices(nullptr); }

Expected<std::unique_ptr<backend::Device>> open_device(int ordinal, const std::string& id) {
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    return Error{Code::NotFound, "no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(count) +
                                     (count == 1 ? " device" : " devices") + " found)"};
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> device, CudaDevice::open(ordinal, id));
  return std::unique_ptr<backend::Device>(std::move(device));
}

bool can_access_peer(int ordinal_a, int ordinal_b) {
  const int count = device_count();
  if (ordinal_a < 0 || ordinal_b < 0 || ordinal_a >= count || ordinal_b >= count) return false;
  if (ordinal_a == ordinal_b) return true;  // a device reaches its own memory
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, ordinal_a, ordinal_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return can != 0;
}

int ordinal_of(const backend::Device& device) {
  const auto* cuda = dynamic_cast<const CudaDevice*>(&device);
  return cuda != nullptr ? cuda->ordinal() : -1;
}

}  // namespace strata::backend::cuda
