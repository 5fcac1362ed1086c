// engine/exec/remote_device.cpp — the stand-in for another rank's device (see remote_device.h).
#include "engine/exec/remote_device.h"

namespace strata::exec {

RemoteDevice::RemoteDevice(DeviceInfo info) : Device(info.id, info.bytes_total), info_(std::move(info)) {}

DeviceInfo RemoteDevice::info() const {
  DeviceInfo i = info_;
  i.failed = failed();
  i.failure = i.failed ? failure() : std::string();
  return i;
}

bool RemoteDevice::supports_kv(kernels::DType kv) const {
  // CUDA devices keep f32 and f16 caches; host devices also q8_0 (Device::supports_kv).
  if (info_.kind == DeviceKind::Cuda) return kv == kernels::DType::F32 || kv == kernels::DType::F16;
  return Device::supports_kv(kv);
}

Expected<std::unique_ptr<backend::Ops>> RemoteDevice::create_ops(const OpsWorkspace&) {
  return Error{Code::Unsupported, "device '" + id() + "' belongs to rank " + std::to_string(info_.rank) +
                                      ": its work runs there"};
}

}  // namespace strata::exec
