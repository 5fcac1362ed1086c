// engine/gguf/gguf_parser.h — internal: turns the bytes of a GGUF file into a GgufFile, checking
// every count, length, dimension and offset against the file before use. Not a public header.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_types.h"

namespace strata::gguf {

class Parser {
 public:
  // data[0, size) must outlive the parser; results go into out's metadata, tensors and header.
  Parser(const uint8_t* data, uint64_t size, GgufFile& out) : data_(data), size_(size), out_(out) {}
  Status run();

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  GgufFile& out_;

  uint64_t left() const { return size_ - pos_; }
  Error past_end(uint64_t need, const char* what) const;
  Status read_u32(uint32_t& v, const char* what);
  Status read_u64(uint64_t& v, const char* what);
  // A u64 length followed by that many bytes; the length is checked against the bytes left.
  Status read_string(std::string& s, const char* what, uint64_t max_len);
  Status read_value(ValueType type, Value& out, uint32_t depth);
  Status read_array(Value& out, uint32_t depth);

  Status read_header(uint64_t& n_tensors, uint64_t& n_kv);
  Status read_metadata(uint64_t n_kv);
  Status read_alignment();
  Status read_tensor_info(uint64_t index);
  Status check_tensor_data();
};

}  // namespace strata::gguf
