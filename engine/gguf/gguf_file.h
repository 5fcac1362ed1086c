// engine/gguf/gguf_file.h — a validated, read-only view of a GGUF v2/v3 file (mmap or bytes).
// Depends on engine/core/status.h and kernels/cpu/dtype.h only; knows no model architectures.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/status.h"
#include "engine/gguf/gguf_types.h"
#include "kernels/cpu/dtype.h"

namespace strata::gguf {

inline constexpr uint32_t kMaxArrayNesting = 16;  // arrays of arrays deeper than this: Corrupt

struct TensorInfo {
  std::string name;
  kernels::DType type = kernels::DType::F32;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the innermost (contiguous) dimension
  uint64_t n_elements = 0;     // product of dims (1 for zero dims), every dim >= 1
  uint64_t offset = 0;         // bytes, relative to the data section start; a multiple of alignment
  uint64_t n_bytes = 0;        // row_bytes(type, dims[0]) * (n_elements / dims[0])
};

// A tensor whose type id this build does not read: kept aside so that the file still opens (`info`
// lists it), and check_supported() names it for anything that would use the weights.
struct UnsupportedTensor {
  std::string name;
  uint32_t raw_type = 0;       // the id as stored
  std::vector<uint64_t> dims;  // ggml order
  uint64_t offset = 0;         // checked to lie inside the data section; its size is not known
};

// Every offset, size and count has been checked against the file when open() / from_bytes()
// returns, so tensor_data(t) + t.n_bytes never passes the end of the mapping. Tensors may overlap
// each other (the format does not forbid it and no reader depends on it); they may not extend
// past the end of the file.
class GgufFile {
 public:
  // Maps the file read-only. Io error (with path and errno text) if it cannot be opened.
  static Expected<GgufFile> open(const std::filesystem::path& path);
  // Parses a copy held in memory (tests, fuzzer, files read from elsewhere).
  static Expected<GgufFile> from_bytes(std::vector<uint8_t> bytes);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  uint32_t version() const { return version_; }
  uint64_t file_size() const { return file_size_; }
  uint64_t alignment() const { return alignment_; }
  // Absolute file offset of the data section (aligned end of the tensor infos). For a file with
  // no tensors this may equal file_size() (the padding may be missing).
  uint64_t data_offset() const { return data_offset_; }
  const std::filesystem::path& path() const { return path_; }  // empty for from_bytes

  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;

  // Typed getters: NotFound if the key is missing, Corrupt (naming the key and the actual type)
  // if present with a type that does not convert.
  Expected<std::string> get_string(std::string_view key) const;
  Expected<uint64_t> get_uint(std::string_view key) const;   // non-negative integers, bool
  Expected<double> get_float(std::string_view key) const;    // F32, F64, integers
  Expected<bool> get_bool(std::string_view key) const;       // bool, integer 0 / 1
  Expected<std::vector<std::string>> get_string_array(std::string_view key) const;
  Expected<std::vector<float>> get_float_array(std::string_view key) const;  // float/int arrays
  Expected<std::vector<int64_t>> get_int_array(std::string_view key) const;  // int/bool arrays

  // As above, but a missing key gives the fallback (a wrong type is still an error).
  Expected<uint64_t> get_uint_or(std::string_view key, uint64_t fallback) const;
  Expected<double> get_float_or(std::string_view key, double fallback) const;
  Expected<bool> get_bool_or(std::string_view key, bool fallback) const;
  Expected<std::string> get_string_or(std::string_view key, std::string fallback) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Tensors of types this build does not read (not in tensors()); empty for a runnable file.
  const std::vector<UnsupportedTensor>& unsupported_tensors() const { return unsupported_; }
  // Unsupported error naming the tensors of unread types, each type (ggml's name and id) and the
  // weight types this build reads; ok when there are none.
  Status check_supported() const;
  // Pointer into the mapping: data_offset() + t.offset. t must come from this file's tensors().
  const uint8_t* tensor_data(const TensorInfo& t) const;

  std::string architecture() const;  // general.architecture, or "" if missing / not a string

  // The whole file's bytes (the mapping), for callers that copy tensor data out in bulk.
  const uint8_t* data() const;

 private:
  struct Backing;  // the mmap or the byte vector
  friend class Parser;

  GgufFile();

  std::unique_ptr<Backing> backing_;
  std::filesystem::path path_;
  uint32_t version_ = 0;
  uint64_t file_size_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::map<std::string, size_t, std::less<>> key_index_;     // key -> index in metadata_
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;  // name -> index in tensors_
  std::vector<UnsupportedTensor> unsupported_;

  static Expected<GgufFile> parse(std::unique_ptr<Backing> backing, std::filesystem::path path);
};

}  // namespace strata::gguf
