// engine/serve/trace_routes.cpp — GET /strata/v1/trace/stream (SSE batches of trace events and
// memory snapshots), GET /strata/v1/trace.json (Chrome trace of the last N seconds), GET /metrics
// (Prometheus text). Reads the recorder with its streaming cursor; never blocks its writers.
#include <chrono>
#include <sstream>
#include <thread>

#include "engine/trace/chrome_trace.h"
#include "engine/serve/server_context.h"

namespace strata::serve {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxEventsPerBatch = 20000;

// Reader state of one trace stream; touched only by its HTTP worker.
struct TraceCursor {
  uint64_t next = 0;            // recorder sequence to read from
  int64_t memory_after_ns = -1; // memory snapshots newer than this are sent
  Clock::time_point last_send{};
  Clock::time_point last_tick{};
  bool first = true;
  size_t replans_sent = 0;      // EngineHost::replans_since index of the next strata.replan event
};

Json lanes_json(const trace::Recorder& rec) {
  Json lanes = Json::array();
  for (const trace::LaneInfo& l : rec.lanes()) lanes.push_back({{"id", l.id}, {"name", l.name}, {"simulated", l.simulated}});
  return lanes;
}

Json event_json(const trace::Event& e) {
  return {{"lane", e.lane},         {"kind", trace::event_kind_name(e.kind)},
          {"layer", e.layer},       {"seq", e.seq},
          {"token", e.token},       {"start_ns", e.start_ns},
          {"duration_ns", e.duration_ns}, {"bytes", e.bytes},
          {"peer_lane", e.peer_lane}, {"n_tokens", e.n_tokens}};
}

Json memory_json(const trace::MemorySnapshot& m) {
  return {{"lane", m.lane},       {"time_ns", m.time_ns}, {"weights", m.weights},
          {"kv_used", m.kv_used}, {"kv_reserved", m.kv_reserved}, {"scratch", m.scratch},
          {"other", m.other},     {"free", m.free},        {"total", m.total}};
}

double current_rate(ServerContext& ctx, int64_t* active) {
  auto loaded = ctx.host.current();
  if (!loaded) return 0.0;
  const exec::SchedulerStats st = loaded->scheduler->stats();
  if (active) *active = st.active;
  return st.decode_tokens_per_s;
}

void handle_trace_stream(ServerContext& ctx, httplib::Response& res) {
  if (!acquire_trace_stream(ctx, res)) return;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto cursor = std::make_shared<TraceCursor>();
  trace::Recorder& rec = ctx.host.recorder();
  cursor->next = rec.newest_sequence();
  cursor->memory_after_ns = rec.now_ns() - 1'000'000'000;  // the last second's snapshots come first
  cursor->replans_sent = ctx.host.replans_since(0).size();   // re-plans from now on
  ServerContext* c = &ctx;
  // Called repeatedly on this stream's HTTP worker: one batch every 50 ms while events arrive or
  // a request is generating, every second otherwise. Stops when the client leaves or the
  // server stops.
  auto provider = [c, cursor](size_t, httplib::DataSink& sink) -> bool {
    trace::Recorder& rec = c->host.recorder();
    if (c->stopping.load()) {
      sink.done();
      return true;
    }
    // Ticks every 50 ms from the previous batch (not 50 ms after the work), so slow JSON
    // building does not stretch the period.
    if (!cursor->first) std::this_thread::sleep_until(cursor->last_tick + std::chrono::milliseconds(50));
    cursor->last_tick = Clock::now();
    int64_t active = 0;
    const double rate = current_rate(*c, &active);
    const bool fresh = rec.newest_sequence() > cursor->next;
    const auto now = Clock::now();
    if (!cursor->first && !fresh && active == 0 && now - cursor->last_send < std::chrono::seconds(1)) return true;
    cursor->first = false;
    cursor->last_send = now;
    trace::EventBatch batch = rec.events_after(cursor->next);
    Json events = Json::array();
    size_t taken = 0;
    for (const trace::Event& e : batch.events) {
      if (taken == kMaxEventsPerBatch) break;
      events.push_back(event_json(e));
      ++taken;
    }
    cursor->next = taken == batch.events.size() ? batch.next_sequence : cursor->next + batch.missed + taken;
    Json memory = Json::array();
    int64_t newest = cursor->memory_after_ns;
    for (const trace::MemorySnapshot& m : rec.memory_snapshot()) {
      if (m.time_ns <= cursor->memory_after_ns) continue;
      memory.push_back(memory_json(m));
      newest = std::max(newest, m.time_ns);
    }
    cursor->memory_after_ns = newest;
    Json data = {{"lanes", lanes_json(rec)}, {"events", events},     {"memory", memory},
                 {"tokens_per_s", rate},     {"now_ns", rec.now_ns()}, {"missed", batch.missed},
                 {"active", active}};
    std::string text = "event: trace\ndata: " + data.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
    // A re-plan after a lost device is its own event, after the batch holding its "replan" span.
    for (const Json& r : c->host.replans_since(cursor->replans_sent)) {
      text += "event: strata.replan\ndata: " + r.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
      ++cursor->replans_sent;
    }
    return sink.write(text.data(), text.size());
  };
  res.set_chunked_content_provider("text/event-stream", provider, [c](bool) { release_trace_stream(*c); });
}

void handle_trace_json(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  double seconds = 10;
  if (req.has_param("seconds")) {
    const std::string s = req.get_param_value("seconds");
    char* end = nullptr;
    seconds = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !(seconds > 0) || seconds > 86400)
      return send_error(res, bad_request("'seconds' is '" + s + "', expected a number in (0, 86400]", "seconds"));
  }
  trace::Recorder& rec = ctx.host.recorder();
  const int64_t since = rec.now_ns() - static_cast<int64_t>(seconds * 1e9);
  res.status = 200;
  res.set_content(trace::to_chrome_json(rec, since), "application/json");
}

void handle_metrics(ServerContext& ctx, httplib::Response& res) {
  std::ostringstream o;
  Metrics& m = *ctx.metrics;
  o << "# HELP strata_tokens_generated_total Tokens generated by completions.\n"
       "# TYPE strata_tokens_generated_total counter\n"
    << "strata_tokens_generated_total " << m.tokens_generated.load() << "\n"
    << "# HELP strata_prompt_tokens_total Prompt tokens evaluated (cached prefixes not counted).\n"
       "# TYPE strata_prompt_tokens_total counter\n"
    << "strata_prompt_tokens_total " << m.prompt_tokens.load() << "\n"
    << "# HELP strata_requests_total HTTP requests answered, by route and status.\n"
       "# TYPE strata_requests_total counter\n";
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    for (const auto& [key, count] : m.requests)
      o << "strata_requests_total{route=\"" << prometheus_escape(key.first) << "\",status=\"" << key.second << "\"} "
        << count << "\n";
  }
  int64_t active = 0, waiting = 0;
  uint64_t drafted = 0, accepted = 0;
  double rate = 0;
  auto loaded = ctx.host.current();
  Json memory = Json::array();
  if (loaded) {
    const exec::SchedulerStats st = loaded->scheduler->stats();
    active = st.active;
    waiting = st.waiting;
    rate = st.decode_tokens_per_s;
    drafted = st.draft_tokens;
    accepted = st.draft_accepted;
    memory = ctx.host.memory_json(*loaded);
  }
  o << "# HELP strata_requests_active Sequences generating now.\n# TYPE strata_requests_active gauge\n"
    << "strata_requests_active " << active << "\n"
    << "# HELP strata_requests_waiting Requests queued for a sequence slot.\n# TYPE strata_requests_waiting gauge\n"
    << "strata_requests_waiting " << waiting << "\n"
    << "# HELP strata_decode_tokens_per_second Generated tokens per second over the last 2 s.\n"
       "# TYPE strata_decode_tokens_per_second gauge\n"
    << "strata_decode_tokens_per_second " << rate << "\n"
    << "# HELP strata_draft_tokens_total Tokens guessed for speculative decoding (loaded model, since load).\n"
       "# TYPE strata_draft_tokens_total counter\n"
    << "strata_draft_tokens_total " << drafted << "\n"
    << "# HELP strata_draft_accepted_tokens_total Guessed tokens the model sampled too (each one a forward pass saved).\n"
       "# TYPE strata_draft_accepted_tokens_total counter\n"
    << "strata_draft_accepted_tokens_total " << accepted << "\n"
    << "# HELP strata_draft_acceptance_ratio Accepted over guessed tokens since load (0 before any guess).\n"
       "# TYPE strata_draft_acceptance_ratio gauge\n"
    << "strata_draft_acceptance_ratio " << (drafted > 0 ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0.0)
    << "\n"
    << "# HELP strata_device_memory_bytes Bytes held per device by use.\n# TYPE strata_device_memory_bytes gauge\n";
  for (const Json& d : memory) {
    const std::string dev = prometheus_escape(d["device"].get<std::string>());
    for (const char* use : {"weights", "kv", "scratch", "overhead"})
      o << "strata_device_memory_bytes{device=\"" << dev << "\",use=\"" << use << "\"} " << d[use].get<uint64_t>() << "\n";
  }
  auto summary = [&](const char* name, const char* help, const LatencyWindow& w) {
    uint64_t count = 0;
    double sum = 0;
    const std::vector<double> v = w.sorted(&count, &sum);
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " summary\n";
    for (double q : {0.5, 0.9, 0.99}) {
      double value = 0;
      if (!v.empty()) value = v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))] / 1000.0;
      o << name << "{quantile=\"" << q << "\"} " << value << "\n";
    }
    o << name << "_sum " << sum / 1000.0 << "\n" << name << "_count " << count << "\n";
  };
  summary("strata_time_to_first_token_seconds",
          "From a completion request's arrival to its first generated token (last 4096 requests).", m.ttft_ms);
  summary("strata_inter_token_latency_seconds",
          "Between consecutive generated tokens of one sequence (last 4096 gaps).", m.itl_ms);
  o << "# HELP strata_device_capacity_bytes Capacity per device.\n# TYPE strata_device_capacity_bytes gauge\n";
  for (const DeviceInfo& i : ctx.host.device_infos_at_start())
    o << "strata_device_capacity_bytes{device=\"" << prometheus_escape(i.id) << "\"} " << i.bytes_total << "\n";
  res.status = 200;
  res.set_content(o.str(), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace

void register_trace_routes(httplib::Server& http, ServerContext& ctx) {
  get_route(http, "/strata/v1/trace/stream", ctx, guarded([&ctx](const httplib::Request&, httplib::Response& res) {
    handle_trace_stream(ctx, res);
  }));
  get_route(http, "/strata/v1/trace.json", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_trace_json(ctx, req, res);
  }));
  get_route(http, "/metrics", ctx, guarded([&ctx](const httplib::Request&, httplib::Response& res) { handle_metrics(ctx, res); }));
}

}  // namespace strata::serve
