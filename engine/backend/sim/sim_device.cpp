// engine/backend/sim/sim_device.cpp — the simulated device, its faults, and the "sim" backend's
// entry parsing (sim_device.h). Op and copy pacing is in sim_ops.cpp.
#include "engine/backend/sim/sim_device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/core/units.h"

namespace strata::backend {

SimulatedDevice::SimulatedDevice(SimulatedSpec spec)
    : HostDevice(spec.id, spec.capacity_bytes, host_caps(), spec.threads), spec_(std::move(spec)) {}

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
  i.backend = "sim";
  i.caps = caps();
  i.simulated = true;
  i.name = "sim-" + spec_.id + " " + format_capacity(spec_.capacity_bytes) + " (simulated)";
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

class SimBackend final : public Backend {
 public:
  std::string name() const override { return "sim"; }
  std::string describe() const override { return "simulated accelerators of a declared size and speed"; }
  int device_count() const override { return 0; }
  Expected<std::vector<std::unique_ptr<Device>>> open(std::span<const std::string> parts,
                                                      const OpenOptions&) override {
    const std::string entry = join_fields(parts);
    if (parts.size() < 3 || parts[1].empty())
      return Error{Code::InvalidArgument, "device '" + entry + "': a simulated device needs a name and a size, e.g. sim:gpu0:24GiB"};
    SimulatedSpec s;
    s.id = parts[1];
    if (s.id == "cpu") return Error{Code::InvalidArgument, "device name 'cpu' is the CPU's: " + entry};
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
    auto sim = std::make_unique<SimulatedDevice>(std::move(s));
    sim->inject(faults);
    std::vector<std::unique_ptr<Device>> out;
    out.push_back(std::move(sim));
    return out;
  }
};

}  // namespace

std::unique_ptr<Backend> make_sim_backend() { return std::make_unique<SimBackend>(); }

}  // namespace strata::backend
