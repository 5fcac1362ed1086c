// engine/exec/remote_device.cpp — the stand-in for another rank's device (see remote_device.h).
#include "engine/exec/remote_device.h"

namespace strata::exec {

void RemoteMemory::set(const std::string& id, const Figures& figures) {
  std::lock_guard<std::mutex> lock(mutex_);
  by_id_[id] = figures;
}

std::optional<RemoteMemory::Figures> RemoteMemory::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

RemoteDevice::RemoteDevice(DeviceInfo info, std::shared_ptr<const RemoteMemory> memory)
    : Device(info.id, info.bytes_total), info_(std::move(info)), memory_(std::move(memory)) {}

DeviceInfo RemoteDevice::info() const {
  DeviceInfo i = info_;
  if (memory_) {
    if (auto f = memory_->get(info_.id)) {
      i.bytes_free = f->bytes_free;
      i.bytes_total = f->bytes_total;
    }
  }
  i.failed = failed();
  i.failure = i.failed ? failure() : std::string();
  return i;
}

MemoryUse RemoteDevice::memory_use() const {
  if (memory_) {
    if (auto f = memory_->get(info_.id)) return f->use;
  }
  return {};
}

uint64_t RemoteDevice::bytes_free() const {
  if (memory_) {
    if (auto f = memory_->get(info_.id)) return f->bytes_free;
  }
  return info_.bytes_free;
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
