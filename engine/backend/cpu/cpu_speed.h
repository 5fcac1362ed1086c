// engine/backend/cpu/cpu_speed.h — this machine's CPU, measured: streaming read bandwidth, the rate
// of one-token products per weight type (decode), and the FLOP rate of prompt-shaped products, kept
// in a small cache file so that planning stays instant after the first measurement. Refreshed on
// demand (`strata-engine devices --measure-cpu`). Depends on kernels/cpu and core/ only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/core/device_info.h"
#include "engine/core/status.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::backend {

// Measures now with every thread of the pool: ~1-2 s on a desktop CPU.
CpuSpeed measure_cpu_speed(kernels::ThreadPool& pool);

// $STRATA_CPU_SPEED_CACHE, else $XDG_CACHE_HOME/strata/cpu-speed.json, else ~/.cache/strata/cpu-speed.json.
std::filesystem::path default_cpu_speed_cache();

// The entry's key: the CPU's description, the kernels' ISA and the thread count (a measurement
// holds for that combination only).
std::string cpu_speed_key(int threads);

// The file holds {"entries": [{"key", "measured_at" (seconds since the epoch), "bandwidth_gbps",
// "tflops", "matvec_gbps": {"q4_k": GB/s, ...}}]}. NotFound when the file or the key is absent;
// Corrupt names what is wrong.
Expected<CpuSpeed> load_cpu_speed(const std::filesystem::path& file, const std::string& key);
// Replaces the key's entry (others kept); creates the folder.
Status save_cpu_speed(const std::filesystem::path& file, const std::string& key, const CpuSpeed& speed);

struct CpuSpeedResult {
  CpuSpeed speed;
  bool measured_now = false;  // false: read from the cache
  std::string note;           // "measured now (saved to PATH)", "from PATH", or why the cache was not used
};
// The cached measurement for `threads` threads, or a new one (then saved) when there is none, the
// cache is unreadable, or `refresh` is set. An unwritable cache is not an error: the note says so.
CpuSpeedResult cpu_speed(int threads, bool refresh, const std::filesystem::path& file = default_cpu_speed_cache());

}  // namespace strata::backend
