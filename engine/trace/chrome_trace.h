// engine/trace/chrome_trace.h — exports a Recorder as Chrome trace-event JSON (Perfetto,
// chrome://tracing). Depends on the recorder and core/status.h only; written by hand, no JSON library.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"
#include "engine/trace/recorder.h"

namespace strata::trace {

// {"displayTimeUnit":"ns","otherData":{...},"traceEvents":[...]} with, in order:
//  - metadata ("M"): process_name "strata" (pid 1); per lane (tid = lane id) thread_name
//    ("gpu0", "gpu1 (simulated)") and thread_sort_index (= lane id);
//  - one complete event ("X") per recorded span with start_ns >= since_ns, in start order:
//    name "layer 3" / "compute" / "transfer 16 KiB -> gpu1" / "all-reduce" / "sample" / ...,
//    cat = event_kind_name(kind), ts and dur in µs with three decimals (exact ns),
//    args: layer, seq, token (when >= 0), n_tokens (when != 1), bytes (transfers, all-reduces,
//    or any span with bytes), peer (label) and peer_lane (when >= 0);
//  - per transfer with a peer lane, a flow pair: "s" on the source lane at the transfer's start
//    (inside its X span) and "f" on the destination lane at its end, binding to the next slice
//    there (the work that consumes the data); same id, args.bytes;
//  - per memory snapshot with time_ns >= since_ns, a counter ("C") named "memory <lane label>"
//    on the lane's tid, args in bytes: weights, kv_used, kv_spare (= reserved - used), scratch,
//    other, free — stacked they add up to the device's total.
// Called from any thread (reads a snapshot). Cost: about 0.5 µs per event (bench/trace_bench).
std::string to_chrome_json(const Recorder& recorder, int64_t since_ns = 0);

// Writes to_chrome_json to `path` (replaced). Io error naming the path when it cannot.
Status write_chrome_json(const Recorder& recorder, const std::string& path, int64_t since_ns = 0);

// "512 B", "16 KiB", "1.5 MiB", "2 GiB" (binary units, one decimal when not whole).
std::string format_bytes(uint64_t bytes);

}  // namespace strata::trace
