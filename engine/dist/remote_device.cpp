// engine/dist/remote_device.cpp — the stand-in for another rank's device (see remote_device.h).
#include "engine/dist/remote_device.h"

namespace strata::dist {

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

namespace {
// The owning device's caps, but for weight types (the owning rank checks them when it places) and
// host memory (its buffers live in another process).
DeviceCaps stand_in_caps(DeviceCaps caps) {
  caps.host_memory = false;
  caps.weight_types.clear();
  return caps;
}
}  // namespace

RemoteDevice::RemoteDevice(DeviceInfo info, std::shared_ptr<const RemoteMemory> memory)
    : backend::Device(info.id, info.bytes_total, stand_in_caps(info.caps)), info_(std::move(info)),
      memory_(std::move(memory)) {}

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

backend::MemoryUse RemoteDevice::memory_use() const {
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

Expected<std::unique_ptr<backend::Ops>> RemoteDevice::create_ops(const backend::OpsWorkspace&) {
  return Error{Code::Unsupported, "device '" + id() + "' belongs to rank " + std::to_string(info_.rank) +
                                      ": its work runs there"};
}

}  // namespace strata::dist
