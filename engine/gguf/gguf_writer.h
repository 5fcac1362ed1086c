// engine/gguf/gguf_writer.h — builds GGUF v3 files (make-model, tests, converters).
// Depends on engine/core/status.h, gguf_types.h and kernels/cpu/dtype.h only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/status.h"
#include "engine/gguf/gguf_types.h"
#include "kernels/cpu/dtype.h"

namespace strata::gguf {

namespace detail {
class ByteSink;  // where serialized bytes go (gguf_writer.cpp)
}

// Keys are written in the order they were first set; setting a key again replaces its value in
// place. Tensors are written in the order added, each at an offset that is a multiple of the
// alignment, with zero padding between. If alignment != 32, general.alignment (u32) is written
// too; a general.alignment key set by hand must agree with the constructor's value.
class GgufWriter {
 public:
  // Fills dst[0, n_bytes) with a tensor's data; called from write()/to_bytes() on the calling
  // thread, once per tensor per write, in tensor order.
  using FillFn = std::function<void(uint8_t* dst, uint64_t n_bytes)>;

  explicit GgufWriter(uint64_t alignment = 32);

  void set(std::string key, Value v);
  void set_string(std::string key, std::string v) { set(std::move(key), Value::string(std::move(v))); }
  void set_u32(std::string key, uint32_t v) { set(std::move(key), Value::u32(v)); }
  void set_i32(std::string key, int32_t v) { set(std::move(key), Value::i32(v)); }
  void set_u64(std::string key, uint64_t v) { set(std::move(key), Value::u64(v)); }
  void set_f32(std::string key, float v) { set(std::move(key), Value::f32(v)); }
  void set_bool(std::string key, bool v) { set(std::move(key), Value::boolean(v)); }
  void set_string_array(std::string key, const std::vector<std::string>& v) {
    set(std::move(key), Value::string_array(v));
  }
  void set_f32_array(std::string key, const std::vector<float>& v) {
    set(std::move(key), Value::f32_array(v));
  }
  void set_i32_array(std::string key, const std::vector<int32_t>& v) {
    set(std::move(key), Value::i32_array(v));
  }
  bool remove(std::string_view key);  // true if it was there
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }

  // InvalidArgument if the name is empty or taken, dims are not 1..4 values >= 1, the row length
  // dims[0] is not a multiple of the type's block size, or data.size() != row_bytes * rows.
  Status add_tensor(std::string name, kernels::DType type, std::vector<uint64_t> dims,
                    std::vector<uint8_t> data);
  // As add_tensor, but the bytes are produced by fill at write time, one tensor at a time, so a
  // multi-GB model is never held in memory twice.
  Status add_tensor_generated(std::string name, kernels::DType type, std::vector<uint64_t> dims,
                              FillFn fill);
  size_t tensor_count() const { return tensors_.size(); }

  // Writes to path + ".partial" and renames it into place, so a failed write leaves no
  // half-written model behind. Io error with the path and errno text.
  Status write(const std::filesystem::path& path) const;
  Expected<std::vector<uint8_t>> to_bytes() const;

 private:
  struct PendingTensor {
    std::string name;
    kernels::DType type;
    std::vector<uint64_t> dims;
    uint64_t n_bytes = 0;
    uint64_t offset = 0;          // relative to the data section, aligned
    std::vector<uint8_t> data;    // when fill is empty
    FillFn fill;
  };
  uint64_t alignment_;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
  uint64_t data_end_ = 0;  // end of the last tensor's bytes in the data section

  Expected<uint64_t> tensor_bytes(const std::string& name, kernels::DType type,
                                  const std::vector<uint64_t>& dims) const;
  Status add(PendingTensor t);
  Status check() const;
  Status emit(detail::ByteSink& sink) const;
};

}  // namespace strata::gguf
