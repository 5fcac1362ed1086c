// engine/backend/sim/sim_ops.cpp — pacing of simulated devices, and their factory and copies.
#include "engine/backend/sim/sim_ops.h"

#include <algorithm>
#include <thread>

#include "kernels/cpu/dtype.h"
#include "engine/backend/sim/sim_device.h"

namespace strata::backend {

namespace {
using Clock = std::chrono::steady_clock;
constexpr double kF = sizeof(float);
}  // namespace

double SimCost::seconds(const backend::SimulatedSpec& spec) const {
  const double by_bytes = spec.bandwidth_gbps > 0 ? bytes / (spec.bandwidth_gbps * 1e9) : 0.0;
  const double by_flops = spec.tflops > 0 ? flops / (spec.tflops * 1e12) : 0.0;
  return std::max(by_bytes, by_flops);
}

double SimCost::link_seconds(const backend::SimulatedSpec& spec, double bytes) {
  return spec.link_latency_us * 1e-6 + (spec.link_gbps > 0 ? bytes / (spec.link_gbps * 1e9) : 0.0);
}

void wait_out(Clock::time_point start, double seconds) {
  if (!(seconds > 0)) return;
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  // sleep_until never returns early on a steady clock: the declared time is a lower bound.
  if (Clock::now() < deadline) std::this_thread::sleep_until(deadline);
}

namespace {

// The host may run ahead of the simulated device's timeline by this much before it waits, as a
// program runs ahead of a real GPU's queue: the waits then come as a few sleeps per stage instead
// of one per op, whose wake-up overshoot (tens of microseconds each, hundreds of ops per decode
// step) would otherwise add up to a slower device than the one declared.
constexpr auto kMaxAhead = std::chrono::milliseconds(2);

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// An event on a simulated device: the moment its timeline reaches the point of recording.
class SimEvent final : public Event {
 public:
  explicit SimEvent(Clock::time_point at) : at_(at) {}
  Status synchronize() override {
    if (Clock::now() < at_) std::this_thread::sleep_until(at_);
    return {};
  }
  std::optional<int64_t> ns_from_now() const override {
    return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(at_ - Clock::now()).count());
  }
  Expected<int64_t> elapsed_ns_since(const Event& earlier) override {
    const auto* e = dynamic_cast<const SimEvent*>(&earlier);
    if (!e) return Error{Code::InvalidArgument, "events from different backends"};
    return std::chrono::duration_cast<std::chrono::nanoseconds>(at_ - e->at_).count();
  }

 private:
  Clock::time_point at_;
};

}  // namespace

SimOps::SimOps(backend::SimulatedDevice& device, kernels::ThreadPool& pool, const backend::OpsWorkspace& workspace)
    : device_(device), spec_(device.spec()), cpu_(pool, workspace), ready_(Clock::now()) {}

void SimOps::advance(Clock::time_point issued, double seconds) {
  const auto now = Clock::now();
  // The op starts on the device once it was issued and the device finished what came before; it
  // ends its declared time later, or when the host finished computing it, if that is later.
  const auto begin = std::max(issued, ready_);
  ready_ = std::max(begin + to_duration(seconds), now);
  if (ready_ - now > kMaxAhead) std::this_thread::sleep_until(ready_ - kMaxAhead);
}

void SimOps::wait_ready() const {
  if (Clock::now() < ready_) std::this_thread::sleep_until(ready_);
}

template <typename Op>
Status SimOps::paced(const SimCost& cost, Op&& op) {
  STRATA_RETURN_IF_ERROR(device_.check_alive());
  const auto start = Clock::now();
  Status s = op();
  if (s.ok()) advance(start, cost.seconds(spec_) * device_.slow_factor());
  return s;
}

Status SimOps::paced_link(double bytes, Status s, Clock::time_point start) {
  if (s.ok()) s = device_.check_alive();
  if (s.ok()) advance(start, SimCost::link_seconds(spec_, bytes) * device_.slow_factor());
  return s;
}

Status SimOps::synchronize() {
  wait_ready();
  return {};
}

Expected<std::unique_ptr<Event>> SimOps::record_event() {
  return std::unique_ptr<Event>(std::make_unique<SimEvent>(std::max(ready_, Clock::now())));
}

Status SimOps::embed(const MatrixView& t, const int32_t* tokens, int64_t n, float* out) {
  const double row = static_cast<double>(kernels::row_bytes(t.type, t.cols));
  return paced({n * (row + t.cols * kF), 0}, [&] { return cpu_.embed(t, tokens, n, out); });
}

Status SimOps::rms_norm(const float* x, const float* w, float* out, int64_t n_rows, int64_t n, float eps) {
  return paced({(2.0 * n_rows + 1) * n * kF, 3.0 * n_rows * n},
               [&] { return cpu_.rms_norm(x, w, out, n_rows, n, eps); });
}

Status SimOps::matmul(const MatrixView& w, const float* x, int64_t n_tokens, float* y) {
  const double weight_bytes = static_cast<double>(kernels::row_bytes(w.type, w.cols)) * static_cast<double>(w.rows);
  const double act_bytes = static_cast<double>(n_tokens) * static_cast<double>(w.cols + w.rows) * kF;
  const double flops = 2.0 * static_cast<double>(w.rows) * static_cast<double>(w.cols) * static_cast<double>(n_tokens);
  return paced({weight_bytes + act_bytes, flops}, [&] { return cpu_.matmul(w, x, n_tokens, y); });
}

Status SimOps::add(float* y, const float* x, int64_t n) {
  return paced({3.0 * n * kF, static_cast<double>(n)}, [&] { return cpu_.add(y, x, n); });
}

Status SimOps::add_rows(float* y, const float* b, int64_t n_rows, int64_t n) {
  return paced({(2.0 * n_rows + 1) * n * kF, static_cast<double>(n_rows * n)},
               [&] { return cpu_.add_rows(y, b, n_rows, n); });
}

Status SimOps::mul(float* y, const float* x, int64_t n) {
  return paced({3.0 * n * kF, static_cast<double>(n)}, [&] { return cpu_.mul(y, x, n); });
}

Status SimOps::rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0, const RopeParams& p) {
  const double elems = static_cast<double>(n_tokens * n_heads * head_dim);
  return paced({2.0 * elems * kF, 6.0 * elems}, [&] { return cpu_.rope(x, n_tokens, n_heads, head_dim, pos0, p); });
}

SimCost attention_cost(const AttentionArgs& a) {
  // Priced by context length. FLOPs: two dot products per visible position and query head.
  // Bytes: the keys and values of the positions a tile of query tokens sees, read once per tile
  // (flash-attention kernels share each key block across a tile; decode is a tile of one), at
  // the cache's bytes per element, plus q in and the output out.
  constexpr int64_t kTileTokens = 16;
  auto end_of = [&](int64_t t) { return a.causal ? a.pos0 + t + 1 : a.pos0 + a.n_tokens; };
  auto begin_of = [&](int64_t t) { return a.window > 0 ? std::max<int64_t>(0, end_of(t) - a.window) : int64_t{0}; };
  double positions = 0, read_positions = 0;
  for (int64_t t = 0; t < a.n_tokens; ++t) positions += static_cast<double>(end_of(t) - begin_of(t));
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kTileTokens) {
    const int64_t t1 = std::min(a.n_tokens, t0 + kTileTokens) - 1;
    read_positions += static_cast<double>(end_of(t1) - begin_of(t0));
  }
  const kernels::DTypeTraits& tr = kernels::traits(a.kv_type);
  const double kv_bytes_per_elem = static_cast<double>(tr.block_bytes) / static_cast<double>(tr.block_elems);
  const double kv_dim = static_cast<double>(a.n_kv_heads * a.head_dim);
  // One plane where the values are the keys' own rows (MLA's latent cache: v_cache is k_cache).
  const double planes = a.k_cache != nullptr && a.v_cache == a.k_cache ? 1.0 : 2.0;
  const double bytes = read_positions * planes * kv_dim * kv_bytes_per_elem +
                       static_cast<double>(a.n_tokens) * 4.0 * a.n_heads * a.head_dim * kF;
  const double flops = positions * 4.0 * static_cast<double>(a.n_heads * a.head_dim);
  return {bytes, flops};
}

Status SimOps::attention(const AttentionArgs& a) {
  return paced(attention_cost(a), [&] { return cpu_.attention(a); });
}

Status SimOps::layer_norm(const float* x, const float* w, const float* b, float* out, int64_t n_rows, int64_t n,
                          float eps) {
  return paced({(2.0 * n_rows + 2) * n * kF, 5.0 * n_rows * n},
               [&] { return cpu_.layer_norm(x, w, b, out, n_rows, n, eps); });
}

Status SimOps::gelu(float* x, int64_t n) {
  return paced({2.0 * n * kF, 8.0 * n}, [&] { return cpu_.gelu(x, n); });
}

Status SimOps::swiglu(float* gate, const float* up, int64_t n) {
  return paced({3.0 * n * kF, 6.0 * n}, [&] { return cpu_.swiglu(gate, up, n); });
}

Status SimOps::geglu(float* gate, const float* up, int64_t n) {
  return paced({3.0 * n * kF, 12.0 * n}, [&] { return cpu_.geglu(gate, up, n); });
}

Status SimOps::swiglu_oai(float* gate, const float* up, int64_t n) {
  return paced({3.0 * n * kF, 10.0 * n}, [&] { return cpu_.swiglu_oai(gate, up, n); });
}

Status SimOps::scale(float* x, float s, int64_t n) {
  return paced({2.0 * n * kF, static_cast<double>(n)}, [&] { return cpu_.scale(x, s, n); });
}

Status SimOps::softcap(float* x, float cap, int64_t n) {
  return paced({2.0 * n * kF, 4.0 * n}, [&] { return cpu_.softcap(x, cap, n); });
}

Status SimOps::zero(float* x, int64_t n) {
  return paced({static_cast<double>(n) * kF, 0}, [&] { return cpu_.zero(x, n); });
}

Status SimOps::softmax(float* x, int64_t n_rows, int64_t n) {
  return paced({2.0 * n_rows * n * kF, 5.0 * n_rows * n}, [&] { return cpu_.softmax(x, n_rows, n); });
}

Status SimOps::gather_rows(const float* src, int64_t src_rows, int64_t n, const int32_t* rows, int64_t n_rows,
                           float* dst) {
  return paced({2.0 * n_rows * n * kF, 0}, [&] { return cpu_.gather_rows(src, src_rows, n, rows, n_rows, dst); });
}

Status SimOps::scale_add_rows(float* dst, int64_t dst_rows, int64_t n, const float* src, const int32_t* rows,
                              const float* scales, int64_t n_rows) {
  return paced({3.0 * n_rows * n * kF, 2.0 * n_rows * n},
               [&] { return cpu_.scale_add_rows(dst, dst_rows, n, src, rows, scales, n_rows); });
}

Status SimOps::to_host(const void* src, void* dst, size_t bytes) {
  // Blocking, as Ops::to_host is: the host has the bytes once the device's timeline has done
  // everything before the copy and the copy itself.
  const auto start = Clock::now();
  STRATA_RETURN_IF_ERROR(paced_link(static_cast<double>(bytes), cpu_.to_host(src, dst, bytes), start));
  wait_ready();
  return {};
}

Status SimOps::from_host(const void* src, void* dst, size_t bytes) {
  const auto start = Clock::now();
  return paced_link(static_cast<double>(bytes), cpu_.from_host(src, dst, bytes), start);
}

Status SimOps::copy(const void* src, void* dst, size_t bytes) {
  return paced({2.0 * static_cast<double>(bytes), 0}, [&] { return cpu_.copy(src, dst, bytes); });
}

Expected<std::unique_ptr<Ops>> SimulatedDevice::create_ops(const OpsWorkspace& workspace) {
  return std::unique_ptr<backend::Ops>(std::make_unique<backend::SimOps>(*this, pool(), workspace));
}

Status SimulatedDevice::copy_from_host(const Copy2D& copy) {
  STRATA_RETURN_IF_ERROR(check_alive());
  const auto start = std::chrono::steady_clock::now();
  STRATA_RETURN_IF_ERROR(Device::copy_from_host(copy));
  backend::wait_out(start, backend::SimCost::link_seconds(spec_, static_cast<double>(copy.width * copy.height)) *
                               slow_factor());
  return {};
}

Status SimulatedDevice::copy_to_host(const Copy2D& copy) {
  STRATA_RETURN_IF_ERROR(check_alive());
  const auto start = std::chrono::steady_clock::now();
  STRATA_RETURN_IF_ERROR(Device::copy_to_host(copy));
  backend::wait_out(start, backend::SimCost::link_seconds(spec_, static_cast<double>(copy.width * copy.height)) *
                               slow_factor());
  return {};
}

}  // namespace strata::backend
