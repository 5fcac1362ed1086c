// tests/fuzz/gguf_fuzz.cpp — libFuzzer target for the GGUF reader: parse arbitrary bytes, touch
// every value and tensor byte range, and check that a parsed file writes back to the same thing.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

using namespace strata::gguf;

namespace {

// A broken invariant: crash so libFuzzer records the input.
void require(bool ok) {
  if (!ok) __builtin_trap();
}

void touch_values(const GgufFile& f) {
  for (const auto& [key, v] : f.metadata()) {
    require(f.find(key) == &v);
    (void)v.to_display_string(16);
    (void)f.get_string(key);
    (void)f.get_uint(key);
    (void)f.get_float(key);
    (void)f.get_bool(key);
    (void)f.get_string_array(key);
    (void)f.get_float_array(key);
    (void)f.get_int_array(key);
    if (v.is_array()) {
      const uint64_t n = v.array_size();
      for (uint64_t i = 0; i < n && i < 64; ++i) {
        (void)v.element(i);
        (void)v.array_string(i);
        (void)v.array_float(i);
        if (const Value* item = v.array_item(i)) (void)item->to_display_string(4);
      }
      (void)v.element(n);  // one past the end: nullopt, never a read
    }
  }
}

uint64_t touch_tensors(const GgufFile& f) {
  uint64_t sum = 0;
  for (const TensorInfo& t : f.tensors()) {
    require(f.find_tensor(t.name) == &t);
    require(t.offset % f.alignment() == 0);
    require(f.data_offset() <= f.file_size());
    require(t.offset <= f.file_size() - f.data_offset());
    require(t.n_bytes <= f.file_size() - f.data_offset() - t.offset);
    const uint8_t* p = f.tensor_data(t);
    if (t.n_bytes) sum += p[0] + p[t.n_bytes - 1];
  }
  return sum;
}

// Every file we accept must write back (same keys, values, tensors and bytes) and re-parse.
void round_trip(const GgufFile& f) {
  uint64_t total = 0;
  for (const TensorInfo& t : f.tensors()) {
    if (t.dims.empty()) return;  // 0-dim tensors are readable, but the writer makes 1..4 dims
    total += t.n_bytes;
  }
  if (total > (1u << 20) || f.alignment() > (1u << 16)) return;
  GgufWriter w(f.alignment());
  for (const auto& [key, v] : f.metadata()) w.set(key, v);
  for (const TensorInfo& t : f.tensors()) {
    const uint8_t* p = f.tensor_data(t);
    require(w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(p, p + t.n_bytes)).ok());
  }
  auto bytes = w.to_bytes();
  require(bytes.ok());
  auto g = GgufFile::from_bytes(std::move(*bytes));
  require(g.ok());
  require(g->metadata().size() >= f.metadata().size());
  for (const auto& [key, v] : f.metadata()) {
    const Value* other = g->find(key);
    require(other != nullptr && *other == v);
  }
  require(g->tensors().size() == f.tensors().size());
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const TensorInfo& a = f.tensors()[i];
    const TensorInfo& b = g->tensors()[i];
    require(a.name == b.name && a.type == b.type && a.dims == b.dims && a.n_bytes == b.n_bytes);
    require(std::memcmp(f.tensor_data(a), g->tensor_data(b), a.n_bytes) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = GgufFile::from_bytes(std::vector<uint8_t>(data, data + size));
  if (!f.ok()) {
    require(!f.error().message.empty());
    return 0;
  }
  touch_values(*f);
  volatile uint64_t sink = touch_tensors(*f);
  (void)sink;
  (void)f->architecture();
  round_trip(*f);
  return 0;
}
