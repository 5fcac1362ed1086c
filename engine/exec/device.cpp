// engine/exec/device.cpp — host devices (CPU, simulated), their accounting, and --devices parsing.
#include "engine/exec/device.h"

#include "engine/backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>

namespace strata::exec {

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

Device::Device(std::string id, uint64_t capacity_bytes) : id_(std::move(id)), capacity_(capacity_bytes) {}

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

HostDevice::HostDevice(std::string id, uint64_t capacity_bytes, int threads)
    : Device(std::move(id), capacity_bytes),
      owned_pool_(std::make_unique<kernels::ThreadPool>(threads)),
      pool_(owned_pool_.get()) {}

HostDevice::HostDevice(std::string id, uint64_t capacity_bytes, kernels::ThreadPool& external_pool)
    : Device(std::move(id), capacity_bytes), pool_(&external_pool) {}

CpuDevice::CpuDevice(int threads, uint64_t capacity_bytes, double bandwidth_gbps)
    : HostDevice("cpu", capacity_bytes, threads), threads_(threads), capacity_(capacity_bytes),
      bandwidth_gbps_(bandwidth_gbps) {}

CpuDevice::CpuDevice(kernels::ThreadPool& pool, uint64_t capacity_bytes, double bandwidth_gbps)
    : HostDevice("cpu", capacity_bytes, pool), threads_(pool.n_threads()), capacity_(capacity_bytes),
      bandwidth_gbps_(bandwidth_gbps) {}

DeviceInfo CpuDevice::info() const {
  DeviceInfo i;
  i.id = id();
  i.kind = DeviceKind::Cpu;
  i.name = "CPU (" + std::to_string(threads_) + " threads)";
  i.bytes_total = capacity_;
  i.bytes_free = bytes_free();
  i.bandwidth_gbps = bandwidth_gbps_;
  // A rough dense rate: ~32 FLOP/cycle/core (AVX-512 FMA) at ~2.5 GHz.
  i.tflops = 0.08 * threads_;
  i.link_gbps = bandwidth_gbps_;  // "transfers" from the CPU are host copies
  i.link_latency_us = 2;
  i.threads = threads_;
  i.rank = rank();
  i.host = host();
  i.failed = failed();
  if (i.failed) i.failure = failure();
  return i;
}

SimulatedDevice::SimulatedDevice(SimulatedSpec spec)
    : HostDevice(spec.id, spec.capacity_bytes, spec.threads), spec_(std::move(spec)) {}

void SimulatedDevice::inject(const SimFaults& f) {
  ops_left_.store(f.fail_after_ops >= 0 ? f.fail_after_ops : -1);
  if (f.fail_at_s >= 0) {
    const auto at = std::chrono::steady_clock::now().time_since_epoch() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(f.fail_at_s));
    fail_at_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(at).count());
  } else {
    fail_at_ns_.store(-1);
  }
  if (f.oom_after_bytes >= 0) limit_allocations(static_cast<uint64_t>(f.oom_after_bytes));
  slow_.store(std::max(1.0, f.slow));
  hang_left_.store(f.hang_after_ops >= 0 ? f.hang_after_ops : -1);
  oom_ops_left_.store(f.oom_after_ops >= 0 ? f.oom_after_ops : -1);
  full_.store(false);
}

void SimulatedDevice::on_failed() {
  std::lock_guard<std::mutex> lock(hang_mutex_);
  hang_cv_.notify_all();
}

Status SimulatedDevice::check_alive() {
  if (!failed()) {
    // fetch_sub on a disarmed counter (-1) would arm it: only count down a positive budget.
    int64_t left = ops_left_.load();
    while (left > 0 && !ops_left_.compare_exchange_weak(left, left - 1)) {
    }
    if (left == 0) mark_failed("lost (injected fault: fail_after ops reached)");
    int64_t hang = hang_left_.load();
    while (hang > 0 && !hang_left_.compare_exchange_weak(hang, hang - 1)) {
    }
    if (hang == 0) {
      // The device stops answering: this op blocks until the engine gives the device up.
      std::unique_lock<std::mutex> lock(hang_mutex_);
      hang_cv_.wait(lock, [this] { return failed(); });
    }
    const int64_t at = fail_at_ns_.load();
    if (at >= 0 && std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch()).count() >= at)
      mark_failed("lost (injected fault: fail_at time reached)");
  }
  if (failed()) return Error{Code::Device, "device '" + id() + "' is lost: " + failure()};
  int64_t oom = oom_ops_left_.load();
  while (oom > 0 && !oom_ops_left_.compare_exchange_weak(oom, oom - 1)) {
  }
  if (oom == 0) full_.store(true);
  if (full_.load())
    return Error{Code::OutOfMemory, "device '" + id() + "': its scratch cannot grow: out of memory (injected fault: "
                                    "oom_after ops reached)"};
  return {};
}

DeviceInfo SimulatedDevice::info() const {
  DeviceInfo i;
  i.id = id();
  i.kind = DeviceKind::Simulated;
  i.simulated = true;
  char cap[32];
  std::snprintf(cap, sizeof cap, "%.3g GiB", static_cast<double>(spec_.capacity_bytes) / (1024.0 * 1024.0 * 1024.0));
  i.name = "sim-" + spec_.id + " " + cap + " (simulated)";
  i.bytes_total = spec_.capacity_bytes;
  i.bytes_free = bytes_free();
  i.bandwidth_gbps = spec_.bandwidth_gbps;
  i.tflops = spec_.tflops;
  i.link_gbps = spec_.link_gbps;
  i.link_latency_us = spec_.link_latency_us;
  i.runtime_overhead_bytes = spec_.runtime_overhead_bytes;
  i.threads = spec_.threads;
  i.rank = rank();
  i.host = host();
  i.failed = failed();
  if (i.failed) i.failure = failure();
  return i;
}

Expected<uint64_t> parse_bytes(const std::string& text) {
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (...) {
    return Error{Code::InvalidArgument, "'" + text + "' is not a size (try 24GiB, 512MiB, 1.5GB)"};
  }
  std::string unit = text.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "kib" || unit == "k") scale = 1024.0;
  else if (unit == "mib" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "tib" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  else return Error{Code::InvalidArgument, "'" + text + "': unknown size unit '" + unit + "'"};
  const double bytes = value * scale;
  if (!(bytes > 0) || !std::isfinite(bytes) || bytes > 1e18)
    return Error{Code::InvalidArgument, "size '" + text + "' must be positive and below 1 EB"};
  return static_cast<uint64_t>(bytes);
}

namespace {

Expected<double> parse_rate(const std::string& key, const std::string& text, const std::string& unit) {
  std::string t = text;
  if (t.size() > unit.size() && t.compare(t.size() - unit.size(), unit.size(), unit) == 0)
    t = t.substr(0, t.size() - unit.size());
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(t, &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos != t.size() || !(v > 0) || !std::isfinite(v) || v > 1e9)
    return Error{Code::InvalidArgument, key + "=" + text + " is not a positive number" +
                                            (unit.empty() ? "" : " (unit " + unit + ")")};
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

}  // namespace

std::string default_devices_spec() { return backend::cuda::device_count() > 0 ? "cuda,cpu" : "cpu"; }

uint64_t host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 8ull << 30;
}

Expected<std::vector<std::unique_ptr<Device>>> make_devices(const std::string& spec, int cpu_threads,
                                                            double cpu_bandwidth_gbps) {
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<std::string> ids;
  for (const std::string& entry : split(spec.empty() ? "cpu" : spec, ',')) {
    const std::vector<std::string> parts = split(entry, ':');
    if (entry.empty()) return Error{Code::InvalidArgument, "--devices '" + spec + "' has an empty entry"};
    if (parts[0] == "cpu") {
      if (parts.size() > 2) return Error{Code::InvalidArgument, "device 'cpu' takes at most a capacity: " + entry};
      uint64_t capacity = host_memory_available();
      if (parts.size() == 2) {
        STRATA_ASSIGN_OR_RETURN(capacity, parse_bytes(parts[1]));
      }
      if (std::find(ids.begin(), ids.end(), "cpu") != ids.end())
        return Error{Code::InvalidArgument, "device 'cpu' is listed twice"};
      ids.push_back("cpu");
      devices.push_back(std::make_unique<CpuDevice>(cpu_threads, capacity, cpu_bandwidth_gbps));
      continue;
    }
    if (parts[0] == "cuda") {
      if (parts.size() > 2) return Error{Code::InvalidArgument, "device '" + entry + "': expected cuda or cuda:N"};
      std::vector<int> ordinals;
      if (parts.size() == 2) {
        size_t pos = 0;
        int n = -1;
        try {
          n = std::stoi(parts[1], &pos);
        } catch (...) {
          pos = 0;
        }
        if (pos != parts[1].size() || n < 0 || n > 1023)
          return Error{Code::InvalidArgument, "device '" + entry + "': '" + parts[1] + "' is not a CUDA device number"};
        if (!backend::cuda::compiled())
          return Error{Code::NotCompiled, "device '" + entry + "': built without CUDA"};
        if (n >= backend::cuda::device_count())
          return Error{Code::NotFound, "device '" + entry + "': " + std::to_string(backend::cuda::device_count()) +
                                           " CUDA device(s) found (" + backend::cuda::runtime_description() + ")"};
        ordinals.push_back(n);
      } else {
        if (!backend::cuda::compiled())
          return Error{Code::NotCompiled, "device '" + entry + "': built without CUDA"};
        const int count = backend::cuda::device_count();
        if (count == 0)
          return Error{Code::NotFound, "device 'cuda': no CUDA device found (" + backend::cuda::runtime_description() + ")"};
        for (int n = 0; n < count; ++n) ordinals.push_back(n);
      }
      for (int n : ordinals) {
        const std::string id = "cuda" + std::to_string(n);
        if (std::find(ids.begin(), ids.end(), id) != ids.end())
          return Error{Code::InvalidArgument, "device '" + id + "' is listed twice"};
        STRATA_ASSIGN_OR_RETURN(auto dev, backend::cuda::open_device(n, id));
        ids.push_back(id);
        devices.push_back(std::move(dev));
      }
      continue;
    }
    if (parts[0] != "sim")
      return Error{Code::InvalidArgument,
                   "device '" + entry + "': expected cpu, cuda, cuda:N or sim:NAME:SIZE[:bw=..:tflops=..:link=..]"};
    if (parts.size() < 3 || parts[1].empty())
      return Error{Code::InvalidArgument, "device '" + entry + "': a simulated device needs a name and a size, e.g. sim:gpu0:24GiB"};
    SimulatedSpec s;
    s.id = parts[1];
    if (s.id == "cpu" || std::find(ids.begin(), ids.end(), s.id) != ids.end())
      return Error{Code::InvalidArgument, "device name '" + s.id + "' is used twice"};
    auto capacity = parse_bytes(parts[2]);
    if (!capacity.ok()) return Error{Code::InvalidArgument, "device '" + s.id + "': " + capacity.error().message};
    s.capacity_bytes = *capacity;
    SimFaults faults;
    for (size_t i = 3; i < parts.size(); ++i) {
      const size_t eq = parts[i].find('=');
      if (eq == std::string::npos)
        return Error{Code::InvalidArgument, "device '" + s.id + "': option '" + parts[i] + "' is not key=value"};
      const std::string key = parts[i].substr(0, eq), value = parts[i].substr(eq + 1);
      if (key == "bw") {
        STRATA_ASSIGN_OR_RETURN(s.bandwidth_gbps, parse_rate(key, value, "GB/s"));
      } else if (key == "tflops") {
        STRATA_ASSIGN_OR_RETURN(s.tflops, parse_rate(key, value, ""));
      } else if (key == "link") {
        STRATA_ASSIGN_OR_RETURN(s.link_gbps, parse_rate(key, value, "GB/s"));
      } else if (key == "latency") {
        STRATA_ASSIGN_OR_RETURN(s.link_latency_us, parse_rate(key, value, "us"));
      } else if (key == "threads") {
        STRATA_ASSIGN_OR_RETURN(double t, parse_rate(key, value, ""));
        if (t != std::floor(t) || t > 256)
          return Error{Code::InvalidArgument, "device '" + s.id + "': threads=" + value + " must be 1..256"};
        s.threads = static_cast<int>(t);
      } else if (key == "overhead") {
        STRATA_ASSIGN_OR_RETURN(s.runtime_overhead_bytes, parse_bytes(value));
      } else if (key == "fail_after") {
        STRATA_ASSIGN_OR_RETURN(double n, parse_rate(key, value, ""));
        if (n != std::floor(n) || n > 1e15)
          return Error{Code::InvalidArgument, "device '" + s.id + "': fail_after=" + value + " must be a whole number of ops"};
        faults.fail_after_ops = static_cast<int64_t>(n);
      } else if (key == "hang_after") {
        STRATA_ASSIGN_OR_RETURN(double n, parse_rate(key, value, ""));
        if (n != std::floor(n) || n > 1e15)
          return Error{Code::InvalidArgument, "device '" + s.id + "': hang_after=" + value + " must be a whole number of ops"};
        faults.hang_after_ops = static_cast<int64_t>(n);
      } else if (key == "oom_after_ops") {
        STRATA_ASSIGN_OR_RETURN(double n, parse_rate(key, value, ""));
        if (n != std::floor(n) || n > 1e15)
          return Error{Code::InvalidArgument, "device '" + s.id + "': oom_after_ops=" + value + " must be a whole number of ops"};
        faults.oom_after_ops = static_cast<int64_t>(n);
      } else if (key == "fail_at") {
        STRATA_ASSIGN_OR_RETURN(faults.fail_at_s, parse_rate(key, value, "s"));
      } else if (key == "oom_after") {
        STRATA_ASSIGN_OR_RETURN(uint64_t b, parse_bytes(value));
        faults.oom_after_bytes = static_cast<int64_t>(std::min<uint64_t>(b, uint64_t{1} << 62));
      } else if (key == "slow") {
        STRATA_ASSIGN_OR_RETURN(faults.slow, parse_rate(key, value, ""));
        if (!(faults.slow >= 1) || faults.slow > 1000)
          return Error{Code::InvalidArgument, "device '" + s.id + "': slow=" + value + " must be a factor in [1, 1000]"};
      } else {
        return Error{Code::InvalidArgument, "device '" + s.id + "': unknown option '" + key +
                                                "' (bw, tflops, link, latency, threads, overhead, fail_after, fail_at, "
                                                "hang_after, oom_after, oom_after_ops, slow)"};
      }
    }
    ids.push_back(s.id);
    auto sim = std::make_unique<SimulatedDevice>(std::move(s));
    sim->inject(faults);
    devices.push_back(std::move(sim));
  }
  return devices;
}

}  // namespace strata::exec
