// engine/trace/chrome_trace.cpp — Chrome trace-event JSON written by hand from a Recorder snapshot.
// Depends on the recorder, json_text.h and core/status.h only.
#include "engine/trace/chrome_trace.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <climits>
#include <set>
#include <vector>

#include "engine/trace/json_text.h"

namespace strata::trace {

namespace {

constexpr int kPid = 1;

// `{"ph":"X","pid":1,"tid":3,` — the common head of every event.
void open_event(std::string& out, const char* ph, int32_t tid) {
  out += "{\"ph\":\"";
  out += ph;
  out += "\",\"pid\":";
  json::append_int(out, kPid);
  out += ",\"tid\":";
  json::append_int(out, tid);
}

// Lane texts computed once per export: the JSON literal of each label, and each plain name.
struct LaneTexts {
  const Recorder& recorder;
  std::vector<std::string> quoted_labels;  // "\"gpu0 (simulated)\"" by registered lane id
  std::vector<std::string> names;          // gpu0

  explicit LaneTexts(const Recorder& r) : recorder(r) {
    for (const LaneInfo& lane : r.lanes()) {
      std::string q;
      json::append_string(q, r.lane_label(lane.id));
      quoted_labels.push_back(std::move(q));
      names.push_back(lane.name);
    }
  }
  bool known(int32_t lane) const { return lane >= 0 && static_cast<size_t>(lane) < names.size(); }
  void append_label(std::string& out, int32_t lane) const {
    if (known(lane)) {
      out += quoted_labels[static_cast<size_t>(lane)];
    } else {
      json::append_string(out, recorder.lane_label(lane));
    }
  }
  std::string name(int32_t lane) const {
    return known(lane) ? names[static_cast<size_t>(lane)] : "lane " + std::to_string(lane);
  }
};

void append_span_name(std::string& out, const LaneTexts& lanes, const Event& e) {
  switch (e.kind) {
    case EventKind::Compute:
      if (e.layer >= 0) {
        out += "\"layer ";
        json::append_int(out, e.layer);
        out.push_back('"');
        return;
      }
      break;
    case EventKind::Transfer: {
      std::string name = "transfer " + format_bytes(e.bytes);
      if (e.peer_lane >= 0) name += " -> " + lanes.name(e.peer_lane);
      json::append_string(out, name);
      return;
    }
    default:
      break;
  }
  out.push_back('"');
  out += event_kind_name(e.kind);  // plain ASCII, nothing to escape
  out.push_back('"');
}

void append_metadata(std::string& out, const LaneTexts& lanes, int32_t lane) {
  open_event(out, "M", lane);
  out += ",\"name\":\"thread_name\",\"args\":{\"name\":";
  lanes.append_label(out, lane);
  out += "}},\n";
  open_event(out, "M", lane);
  out += ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":";
  json::append_int(out, lane);
  out += "}},\n";
}

}  // namespace

std::string format_bytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  uint64_t scale = 1;
  while (unit < 6 && bytes >= scale * 1024) {
    scale *= 1024;
    ++unit;
  }
  std::string out;
  if (bytes % scale == 0) {
    json::append_int(out, bytes / scale);
  } else {
    // One decimal, rounded half up, computed in integers: 1.5 MiB, 1023.9 KiB.
    const uint64_t whole = bytes / scale;
    uint64_t tenths = ((bytes % scale) * 10 + scale / 2) / scale;
    uint64_t w = whole;
    if (tenths == 10) {
      ++w;
      tenths = 0;
    }
    if (w == 1024 && unit < 6) {  // 1048575 B rounds to "1 MiB", not "1024 KiB"
      w = 1;
      ++unit;
    }
    json::append_int(out, w);
    if (tenths != 0) {
      out.push_back('.');
      out.push_back(static_cast<char>('0' + tenths));
    }
  }
  out.push_back(' ');
  out += kUnits[unit];
  return out;
}

std::string to_chrome_json(const Recorder& recorder, int64_t since_ns) {
  const std::vector<Event> events = recorder.events_since(since_ns);
  std::vector<MemorySnapshot> memory = recorder.memory_snapshot();
  memory.erase(std::remove_if(memory.begin(), memory.end(),
                              [&](const MemorySnapshot& m) { return m.time_ns < since_ns; }),
               memory.end());

  std::string out;
  out.reserve(512 + events.size() * 200 + memory.size() * 200);
  out += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"strata\",\"dropped_events\":";
  json::append_int(out, recorder.dropped());
  out += ",\"dropped_memory_snapshots\":";
  json::append_int(out, recorder.memory_dropped());
  out += "},\n\"traceEvents\":[\n";

  open_event(out, "M", 0);
  out += ",\"name\":\"process_name\",\"args\":{\"name\":\"strata\"}},\n";
  // Registered lanes, then any lane id that appears only in the events.
  std::set<int32_t> lanes;
  for (const LaneInfo& lane : recorder.lanes()) lanes.insert(lane.id);
  int32_t prev_lane = INT32_MIN;
  for (const Event& e : events) {
    if (e.lane != prev_lane) lanes.insert(e.lane);
    prev_lane = e.lane;
  }
  for (const MemorySnapshot& m : memory) lanes.insert(m.lane);
  const LaneTexts texts(recorder);
  for (int32_t lane : lanes) append_metadata(out, texts, lane);

  for (const Event& e : events) {
    open_event(out, "X", e.lane);
    out += ",\"name\":";
    append_span_name(out, texts, e);
    out += ",\"cat\":\"";
    out += event_kind_name(e.kind);
    out += "\",\"ts\":";
    json::append_us(out, e.start_ns);
    out += ",\"dur\":";
    json::append_us(out, e.duration_ns);
    out += ",\"args\":{";
    bool first = true;
    auto key = [&](const char* k) {
      if (!first) out.push_back(',');
      first = false;
      out.push_back('"');
      out += k;
      out += "\":";
    };
    if (e.layer >= 0) {
      key("layer");
      json::append_int(out, e.layer);
    }
    if (e.seq >= 0) {
      key("seq");
      json::append_int(out, e.seq);
    }
    if (e.token >= 0) {
      key("token");
      json::append_int(out, e.token);
    }
    if (e.n_tokens != 1) {
      key("n_tokens");
      json::append_int(out, e.n_tokens);
    }
    if (e.bytes != 0 || e.kind == EventKind::Transfer || e.kind == EventKind::AllReduce) {
      key("bytes");
      json::append_int(out, e.bytes);
    }
    if (e.peer_lane >= 0) {
      key("peer");
      texts.append_label(out, e.peer_lane);
      key("peer_lane");
      json::append_int(out, e.peer_lane);
    }
    out += "}},\n";
  }

  uint64_t flow_id = 0;
  for (const Event& e : events) {
    if (e.kind != EventKind::Transfer || e.peer_lane < 0) continue;
    ++flow_id;
    open_event(out, "s", e.lane);
    out += ",\"name\":\"transfer\",\"cat\":\"transfer\",\"id\":";
    json::append_int(out, flow_id);
    out += ",\"ts\":";
    json::append_us(out, e.start_ns);
    out += ",\"args\":{\"bytes\":";
    json::append_int(out, e.bytes);
    out += "}},\n";
    open_event(out, "f", e.peer_lane);
    out += ",\"name\":\"transfer\",\"cat\":\"transfer\",\"id\":";
    json::append_int(out, flow_id);
    out += ",\"ts\":";
    json::append_us(out, e.end_ns());
    out += ",\"args\":{\"bytes\":";
    json::append_int(out, e.bytes);
    out += "}},\n";
  }

  for (const MemorySnapshot& m : memory) {
    open_event(out, "C", m.lane);
    out += ",\"name\":";
    json::append_string(out, "memory " + recorder.lane_label(m.lane));  // few: sampled per ms
    out += ",\"ts\":";
    json::append_us(out, m.time_ns);
    out += ",\"args\":{\"weights\":";
    json::append_int(out, m.weights);
    out += ",\"kv_used\":";
    json::append_int(out, m.kv_used);
    out += ",\"kv_spare\":";
    json::append_int(out, m.kv_reserved > m.kv_used ? m.kv_reserved - m.kv_used : 0);
    out += ",\"scratch\":";
    json::append_int(out, m.scratch);
    out += ",\"other\":";
    json::append_int(out, m.other);
    out += ",\"free\":";
    json::append_int(out, m.free);
    out += "}},\n";
  }

  // Every event line ends in ",\n"; the last one must not carry the comma.
  if (out.size() >= 2 && out[out.size() - 2] == ',') out.erase(out.size() - 2, 1);
  out += "]}\n";
  return out;
}

Status write_chrome_json(const Recorder& recorder, const std::string& path, int64_t since_ns) {
  const std::string text = to_chrome_json(recorder, since_ns);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return make_error(Code::Io, "trace '" + path + "': cannot open for writing: " + std::strerror(errno));
  const size_t written = std::fwrite(text.data(), 1, text.size(), f);
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (written != text.size())
    return make_error(Code::Io, "trace '" + path + "': wrote " + std::to_string(written) + " of " +
                                    std::to_string(text.size()) + " bytes: " + std::strerror(write_errno));
  if (!closed) return make_error(Code::Io, "trace '" + path + "': close failed: " + std::strerror(errno));
  return Status::ok_status();
}

}  // namespace strata::trace
