// engine/backend/device.cpp — a device's memory accounting, buffers and host copies (device.h).
#include "engine/backend/device.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

namespace strata::backend {

const char* buffer_use_name(BufferUse use) {
  switch (use) {
    case BufferUse::Weights: return "weights";
    case BufferUse::KvCache: return "kv";
    case BufferUse::Scratch: return "scratch";
    case BufferUse::Overhead: return "overhead";
  }
  return "?";
}

namespace {
uint64_t& slot(MemoryUse& m, BufferUse use) {
  switch (use) {
    case BufferUse::Weights: return m.weights;
    case BufferUse::KvCache: return m.kv;
    case BufferUse::Scratch: return m.scratch;
    case BufferUse::Overhead: break;
  }
  return m.overhead;
}

std::string gib(uint64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%llu bytes (%.2f GiB)", static_cast<unsigned long long>(bytes),
                static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}
}  // namespace

Buffer::Buffer(Device* device, BufferUse use, size_t bytes, void* memory, bool owned)
    : device_(device), use_(use), bytes_(bytes), memory_(memory), owned_(owned) {}

Buffer::~Buffer() {
  if (owned_ && memory_) device_->free_memory(memory_, bytes_);
  device_->release(use_, bytes_);
}

uint8_t* Buffer::host() { return device_->host_visible() ? static_cast<uint8_t*>(memory_) : nullptr; }

Device::Device(std::string id, uint64_t capacity_bytes, DeviceCaps caps)
    : id_(std::move(id)), caps_(std::move(caps)), capacity_(capacity_bytes) {}

void Device::set_capacity(uint64_t capacity_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = capacity_bytes;
}

void* Device::allocate_memory(size_t bytes) { return new (std::nothrow) uint8_t[bytes == 0 ? 1 : bytes]; }

void Device::free_memory(void* memory, size_t) { delete[] static_cast<uint8_t*>(memory); }

Expected<std::unique_ptr<Buffer>> Device::allocate(size_t bytes, BufferUse use) {
  if (failed_) return Error{Code::Device, "device '" + id_ + "' has failed: " + failure()};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t used = use_.total();
    if (used + bytes > capacity_)
      return Error{Code::OutOfMemory, "device '" + id_ + "': cannot allocate " + gib(bytes) + " of " +
                                          buffer_use_name(use) + ", " + gib(capacity_ - std::min(used, capacity_)) +
                                          " free of " + gib(capacity_)};
    if (used + bytes > allocation_limit_)
      return Error{Code::OutOfMemory, "device '" + id_ + "': cannot allocate " + gib(bytes) + " of " +
                                          buffer_use_name(use) + ": out of memory (injected fault, " +
                                          gib(allocation_limit_ - std::min(used, allocation_limit_)) + " left)"};
    slot(use_, use) += bytes;
  }
  void* memory = allocate_memory(bytes);
  if (!memory) {
    release(use, bytes);
    if (failed_) return Error{Code::Device, "device '" + id_ + "' has failed: " + failure()};
    return Error{Code::OutOfMemory, "device '" + id_ + "': the device refused " + gib(bytes) + " of " +
                                        buffer_use_name(use)};
  }
  return std::make_unique<Buffer>(this, use, bytes, memory, true);
}

Expected<std::unique_ptr<Buffer>> Device::adopt(const void* data, size_t bytes, BufferUse use) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t used = use_.total();
  if (used + bytes > capacity_)
    return Error{Code::OutOfMemory, "device '" + id_ + "': cannot hold " + gib(bytes) + " of " + buffer_use_name(use) +
                                        ", " + gib(capacity_ - std::min(used, capacity_)) + " free"};
  slot(use_, use) += bytes;
  return std::make_unique<Buffer>(this, use, bytes, const_cast<void*>(data), false);
}

void Device::release(BufferUse use, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  slot(use_, use) -= bytes;
}

namespace {
void host_copy_2d(const Copy2D& c) {
  if (c.width == 0 || c.height == 0) return;
  if (c.height == 1 || (c.src_pitch == c.width && c.dst_pitch == c.width)) {
    std::memcpy(c.dst, c.src, c.width * c.height);
    return;
  }
  for (size_t r = 0; r < c.height; ++r)
    std::memcpy(static_cast<uint8_t*>(c.dst) + r * c.dst_pitch, static_cast<const uint8_t*>(c.src) + r * c.src_pitch,
                c.width);
}
}  // namespace

Status Device::copy_from_host(const Copy2D& copy) {
  if (!host_visible()) return Error{Code::Internal, "device '" + id_ + "' has no host copy"};
  host_copy_2d(copy);
  return {};
}

Status Device::copy_to_host(const Copy2D& copy) {
  if (!host_visible()) return Error{Code::Internal, "device '" + id_ + "' has no host copy"};
  host_copy_2d(copy);
  return {};
}

Status Device::copy_within(const Copy2D& copy) {
  if (!host_visible()) return Error{Code::Internal, "device '" + id_ + "' has no local copy"};
  host_copy_2d(copy);
  return {};
}

Status Device::copy_to_peer(const Copy2D&, Device& peer) {
  return Error{Code::Unsupported, "no direct copy from device '" + id_ + "' to '" + peer.id() + "'"};
}

Status Device::fill_zero(void* dst, size_t bytes) {
  if (!host_visible()) return Error{Code::Internal, "device '" + id_ + "' has no fill"};
  if (bytes) std::memset(dst, 0, bytes);
  return {};
}

bool Device::failed() const { return failed_; }

std::string Device::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void Device::mark_failed(const std::string& reason) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) return;
  failure_ = reason;
  failed_ = true;
  lock.unlock();
  on_failed();
}

void Device::limit_allocations(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t used = use_.total();
  allocation_limit_ = bytes > UINT64_MAX - used ? UINT64_MAX : used + bytes;
}

MemoryUse Device::memory_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return use_;
}

uint64_t Device::bytes_free() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_ - std::min(use_.total(), capacity_);
}

DeviceCaps HostDevice::host_caps() {
  DeviceCaps c;
  c.host_memory = true;
  c.kv_types = {kernels::DType::F32, kernels::DType::F16, kernels::DType::Q8_0};
  return c;
}

HostDevice::HostDevice(std::string id, uint64_t capacity_bytes, DeviceCaps caps, int threads)
    : Device(std::move(id), capacity_bytes, std::move(caps)),
      owned_pool_(std::make_unique<kernels::ThreadPool>(threads)),
      pool_(owned_pool_.get()) {}

HostDevice::HostDevice(std::string id, uint64_t capacity_bytes, DeviceCaps caps, kernels::ThreadPool& external_pool)
    : Device(std::move(id), capacity_bytes, std::move(caps)), pool_(&external_pool) {}

}  // namespace strata::backend
