// tests/engine/gguf/gguf_test_util.h — helpers shared by the GGUF tests: shared-model paths, a
// small writer-made file, and a layout scanner that finds the byte position of every field.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"

namespace strata::gguf::test {

inline std::filesystem::path models_dir() { return STRATA_SHARED_MODELS_DIR; }

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Tensor bytes 0, 1, 2, ... (mod 251) offset by seed, so every tensor's content is distinct.
inline std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i + seed) % 251);
  return v;
}

// A small valid file: scalar keys, string and float arrays, a nested array, three tensors
// (F32 [4, 3], F16 [8], Q8_0 [64, 2]).
inline GgufWriter make_small_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "hello", "", "w\xC3\xB6rld"});
  w.set_f32_array("tokenizer.ggml.scores", {0.0f, -1.0f, -2.5f, 3.0f, 4.0f, 5.0f});
  w.set("test.nested", Value::array_of_arrays({Value::i32_array({1, 2}), Value::string_array({"x"})}));
  (void)w.add_tensor("a.weight", kernels::DType::F32, {4, 3}, pattern_bytes(48, 1));
  (void)w.add_tensor("b.weight", kernels::DType::F16, {8}, pattern_bytes(16, 2));
  (void)w.add_tensor("c.weight", kernels::DType::Q8_0, {64, 2}, pattern_bytes(4 * 34, 3));
  return w;
}

inline std::vector<uint8_t> make_small_file() { return make_small_writer().to_bytes().value(); }

// Builds GGUF bytes by hand, for files the writer would never make (v2, bad values).
class ByteBuilder {
 public:
  std::vector<uint8_t> bytes;
  ByteBuilder& raw(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  ByteBuilder& u32(uint32_t v) { return raw(&v, 4); }
  ByteBuilder& u64(uint64_t v) { return raw(&v, 8); }
  ByteBuilder& f32(float v) { return raw(&v, 4); }
  ByteBuilder& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }
  ByteBuilder& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
  }
  ByteBuilder& pad_to(size_t alignment) {
    while (bytes.size() % alignment) bytes.push_back(0);
    return *this;
  }
  // A tensor info: name, dims, type id, offset.
  ByteBuilder& tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type,
                      uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
};

enum class FieldKind {
  Version,      // u32
  TensorCount,  // u64
  KvCount,      // u64
  KeyLength,    // u64 length of a key string
  ValueType,    // u32 type of a key's value
  StringLength, // u64 length of a string value or array element
  ArrayType,    // u32 element type of an array
  ArrayCount,   // u64 element count of an array
  NameLength,   // u64 length of a tensor name
  NDims,        // u32
  Dim,          // u64
  TensorType,   // u32
  TensorOffset, // u64
};

struct Field {
  uint64_t pos;
  int width;  // 4 or 8 bytes
  FieldKind kind;
  bool in_tensor_info;  // true for the tensor-info fields (messages name a tensor)
};

// Walks a *valid* GGUF file and records where each structural field sits. Also returns the
// data-section start via data_offset.
class LayoutScanner {
 public:
  explicit LayoutScanner(const std::vector<uint8_t>& b) : b_(b) {}

  std::vector<Field> scan(uint64_t* data_offset = nullptr) {
    fields_.clear();
    pos_ = 4;
    add(4, FieldKind::Version, false);
    const uint64_t n_tensors = u64(FieldKind::TensorCount, false);
    const uint64_t n_kv = u64(FieldKind::KvCount, false);
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; ++i) {
      const uint64_t klen = u64(FieldKind::KeyLength, false);
      const std::string key(reinterpret_cast<const char*>(b_.data() + pos_), klen);
      pos_ += klen;
      const uint32_t type = u32(FieldKind::ValueType, false);
      if (key == "general.alignment") {
        uint32_t a;
        std::memcpy(&a, b_.data() + pos_, 4);
        alignment = a;
      }
      value(type);
    }
    for (uint64_t i = 0; i < n_tensors; ++i) {
      const uint64_t nlen = u64(FieldKind::NameLength, true);
      pos_ += nlen;
      const uint32_t nd = u32(FieldKind::NDims, true);
      for (uint32_t d = 0; d < nd; ++d) u64(FieldKind::Dim, true);
      u32(FieldKind::TensorType, true);
      u64(FieldKind::TensorOffset, true);
    }
    if (data_offset) *data_offset = (pos_ + alignment - 1) / alignment * alignment;
    return fields_;
  }

 private:
  const std::vector<uint8_t>& b_;
  uint64_t pos_ = 0;
  std::vector<Field> fields_;

  void add(int width, FieldKind kind, bool tensor) {
    fields_.push_back({pos_, width, kind, tensor});
    pos_ += width;
  }
  uint32_t u32(FieldKind kind, bool tensor) {
    uint32_t v;
    std::memcpy(&v, b_.data() + pos_, 4);
    add(4, kind, tensor);
    return v;
  }
  uint64_t u64(FieldKind kind, bool tensor) {
    uint64_t v;
    std::memcpy(&v, b_.data() + pos_, 8);
    add(8, kind, tensor);
    return v;
  }
  static uint64_t scalar_bytes(uint32_t t) {
    switch (t) {
      case 0: case 1: case 7: return 1;
      case 2: case 3: return 2;
      case 4: case 5: case 6: return 4;
      default: return 8;  // 10, 11, 12
    }
  }
  void value(uint32_t type) {
    if (type == 8) {
      pos_ += u64(FieldKind::StringLength, false);
    } else if (type == 9) {
      const uint32_t elem = u32(FieldKind::ArrayType, false);
      const uint64_t count = u64(FieldKind::ArrayCount, false);
      if (elem == 8 || elem == 9) {
        for (uint64_t i = 0; i < count; ++i) value(elem);
      } else {
        pos_ += count * scalar_bytes(elem);
      }
    } else {
      pos_ += scalar_bytes(type);
    }
  }
};

}  // namespace strata::gguf::test
