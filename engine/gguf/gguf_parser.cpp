// engine/gguf/gguf_parser.cpp — GGUF v2/v3 parsing and validation (header, metadata, tensor
// infos, tensor bounds). Depends on status.h, gguf_types.h and kernels/cpu/dtype.h only.
//
// Layout (little-endian): "GGUF" u32 version, u64 n_tensors, u64 n_kv, then n_kv times
// {string key, u32 type, value}, then n_tensors times {string name, u32 n_dims, u64 dims[n_dims],
// u32 type, u64 offset}, padding to general.alignment, then the data section. A string is a u64
// byte length and the bytes; an array is u32 element type, u64 count, elements.
#include "engine/gguf/gguf_parser.h"

#include <cstring>
#include <limits>

namespace strata::gguf {
namespace {

// Smallest number of file bytes one element of each kind can take; counts are checked against
// these before anything is allocated, so a count of 2^60 in a 1 KiB file fails at once.
constexpr uint64_t kMinStringBytes = 8;       // u64 length, empty string
constexpr uint64_t kMinArrayBytes = 12;       // u32 type + u64 count, empty array
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;  // non-empty key, type, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8;  // non-empty name, n_dims 0, type, offset

uint64_t min_element_bytes(ValueType t) {
  if (t == ValueType::String) return kMinStringBytes;
  if (t == ValueType::Array) return kMinArrayBytes;
  return scalar_size(t);
}

std::string n(uint64_t v) { return std::to_string(v); }

std::string hex32(uint32_t v) {
  static const char* kHex = "0123456789ABCDEF";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += kHex[(v >> shift) & 15];
  return s;
}

Error with_prefix(const std::string& prefix, Error e) {
  e.message = prefix + e.message;
  return e;
}

std::string dims_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + n(dims[i]);
  return s + "]";
}

}  // namespace

Error Parser::past_end(uint64_t need, const char* what) const {
  return make_error(Code::Corrupt, std::string(what) + " (" + n(need) + " bytes) at offset " +
                                       n(pos_) + " runs past the end of the file (size " +
                                       n(size_) + ")");
}

Status Parser::read_u32(uint32_t& v, const char* what) {
  if (left() < 4) return past_end(4, what);
  std::memcpy(&v, data_ + pos_, 4);
  pos_ += 4;
  return {};
}

Status Parser::read_u64(uint64_t& v, const char* what) {
  if (left() < 8) return past_end(8, what);
  std::memcpy(&v, data_ + pos_, 8);
  pos_ += 8;
  return {};
}

Status Parser::read_string(std::string& s, const char* what, uint64_t max_len) {
  const uint64_t at = pos_;
  uint64_t len = 0;
  STRATA_RETURN_IF_ERROR(read_u64(len, what));
  if (len > left()) {
    return make_error(Code::Corrupt, std::string(what) + " length " + n(len) + " at offset " +
                                         n(at) + " exceeds file size " + n(size_));
  }
  if (len > max_len) {
    return make_error(Code::Corrupt, std::string(what) + " length " + n(len) + " at offset " +
                                         n(at) + " exceeds the limit of " + n(max_len) + " bytes");
  }
  s.assign(reinterpret_cast<const char*>(data_ + pos_), len);
  pos_ += len;
  return {};
}

Status Parser::read_value(ValueType type, Value& out, uint32_t depth) {
  const uint64_t size = scalar_size(type);
  if (type == ValueType::String) {
    std::string s;
    STRATA_RETURN_IF_ERROR(read_string(s, "string", std::numeric_limits<uint64_t>::max()));
    out = Value::string(std::move(s));
    return {};
  }
  if (type == ValueType::Array) return read_array(out, depth + 1);
  if (left() < size) return past_end(size, value_type_name(type));
  const uint8_t* p = data_ + pos_;
  pos_ += size;
  switch (type) {
    case ValueType::U8: out = Value::u8(p[0]); break;
    case ValueType::I8: out = Value::i8(static_cast<int8_t>(p[0])); break;
    case ValueType::Bool: out = Value::boolean(p[0] != 0); break;
    case ValueType::U16: { uint16_t v; std::memcpy(&v, p, 2); out = Value::u16(v); break; }
    case ValueType::I16: { int16_t v; std::memcpy(&v, p, 2); out = Value::i16(v); break; }
    case ValueType::U32: { uint32_t v; std::memcpy(&v, p, 4); out = Value::u32(v); break; }
    case ValueType::I32: { int32_t v; std::memcpy(&v, p, 4); out = Value::i32(v); break; }
    case ValueType::F32: { float v; std::memcpy(&v, p, 4); out = Value::f32(v); break; }
    case ValueType::U64: { uint64_t v; std::memcpy(&v, p, 8); out = Value::u64(v); break; }
    case ValueType::I64: { int64_t v; std::memcpy(&v, p, 8); out = Value::i64(v); break; }
    case ValueType::F64: { double v; std::memcpy(&v, p, 8); out = Value::f64(v); break; }
    default: return make_error(Code::Internal, "unhandled value type");
  }
  return {};
}

Status Parser::read_array(Value& out, uint32_t depth) {
  if (depth > kMaxArrayNesting) {
    return make_error(Code::Corrupt, "arrays nested deeper than " + n(kMaxArrayNesting) +
                                         " levels at offset " + n(pos_));
  }
  const uint64_t at = pos_;
  uint32_t raw_type = 0;
  uint64_t count = 0;
  STRATA_RETURN_IF_ERROR(read_u32(raw_type, "array element type"));
  if (!is_valid_value_type(raw_type)) {
    return make_error(Code::Corrupt, "array element type " + n(raw_type) + " at offset " + n(at) +
                                         " is not a GGUF value type");
  }
  const ValueType elem = static_cast<ValueType>(raw_type);
  STRATA_RETURN_IF_ERROR(read_u64(count, "array length"));
  const uint64_t min_bytes = min_element_bytes(elem);
  if (count > left() / min_bytes) {
    return make_error(Code::Corrupt, "array of " + n(count) + " " + value_type_name(elem) +
                                         " elements at offset " + n(at) + " needs at least " +
                                         n(min_bytes) + " bytes each, but only " + n(left()) +
                                         " bytes are left in the file (size " + n(size_) + ")");
  }
  if (elem == ValueType::String) {
    std::vector<uint64_t> offsets;
    offsets.reserve(count + 1);
    offsets.push_back(0);
    std::string blob;
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t len_at = pos_;
      uint64_t len = 0;
      STRATA_RETURN_IF_ERROR(read_u64(len, "array string length"));
      if (len > left()) {
        return make_error(Code::Corrupt, "string " + n(i) + " of " + n(count) + ": length " +
                                             n(len) + " at offset " + n(len_at) +
                                             " exceeds file size " + n(size_));
      }
      blob.append(reinterpret_cast<const char*>(data_ + pos_), len);
      pos_ += len;
      offsets.push_back(blob.size());
    }
    auto v = Value::array_from_blob(std::move(blob), std::move(offsets));
    if (!v) return make_error(Code::Internal, "string array offsets inconsistent");
    out = std::move(*v);
    return {};
  }
  if (elem == ValueType::Array) {
    std::vector<Value> items(count);
    for (uint64_t i = 0; i < count; ++i) {
      Status s = read_array(items[i], depth + 1);
      if (!s.ok()) return with_prefix("array item " + n(i) + " of " + n(count) + ": ", s.error());
    }
    out = Value::array_of_arrays(std::move(items));
    return {};
  }
  const uint64_t bytes = count * min_bytes;  // fits: count <= left() / min_bytes
  std::vector<uint8_t> raw(data_ + pos_, data_ + pos_ + bytes);
  pos_ += bytes;
  auto v = Value::array_from_raw(elem, std::move(raw));
  if (!v) return make_error(Code::Internal, "numeric array size inconsistent");
  out = std::move(*v);
  return {};
}

Status Parser::read_header(uint64_t& n_tensors, uint64_t& n_kv) {
  if (size_ == 0) return make_error(Code::Corrupt, "file is empty (0 bytes), expected a GGUF header");
  if (size_ < 4) {
    return make_error(Code::Corrupt, "file of " + n(size_) + " bytes is too short for the GGUF magic");
  }
  if (std::memcmp(data_, "GGUF", 4) != 0) {
    const uint32_t found = (uint32_t{data_[0]} << 24) | (uint32_t{data_[1]} << 16) |
                           (uint32_t{data_[2]} << 8) | uint32_t{data_[3]};
    return make_error(Code::Corrupt, "expected magic GGUF (0x47475546), found " + hex32(found));
  }
  pos_ = 4;
  uint32_t version = 0;
  STRATA_RETURN_IF_ERROR(read_u32(version, "version"));
  if (version == 1) {
    return make_error(Code::Unsupported,
                      "GGUF version 1 is not supported (it has 32-bit counts; re-convert the file "
                      "to version 2 or 3)");
  }
  if (version == 0x02000000u || version == 0x03000000u) {
    return make_error(Code::Unsupported, "big-endian GGUF (version field " + hex32(version) +
                                             ") is not supported");
  }
  if (version != 2 && version != 3) {
    return make_error(Code::Unsupported,
                      "GGUF version " + n(version) + " is not supported (only 2 and 3)");
  }
  out_.version_ = version;
  STRATA_RETURN_IF_ERROR(read_u64(n_tensors, "tensor count"));
  STRATA_RETURN_IF_ERROR(read_u64(n_kv, "metadata key count"));
  // Each key and each tensor info takes a minimum number of bytes: reject impossible counts now.
  if (n_kv > left() / kMinKvBytes) {
    return make_error(Code::Corrupt, "metadata key count " + n(n_kv) + " needs at least " +
                                         n(kMinKvBytes) + " bytes per key, but only " + n(left()) +
                                         " bytes follow the header (file size " + n(size_) + ")");
  }
  if (n_tensors > (left() - n_kv * kMinKvBytes) / kMinTensorInfoBytes) {
    return make_error(Code::Corrupt, "tensor count " + n(n_tensors) + " needs at least " +
                                         n(kMinTensorInfoBytes) + " bytes per tensor info, but only " +
                                         n(left()) + " bytes follow the header (file size " +
                                         n(size_) + ")");
  }
  return {};
}

Status Parser::read_metadata(uint64_t n_kv) {
  out_.metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t at = pos_;
    const std::string where = "key #" + n(i) + " at offset " + n(at) + ": ";
    std::string key;
    Status s = read_string(key, "key", kMaxKeyBytes);
    if (!s.ok()) return with_prefix(where, s.error());
    if (key.empty()) return make_error(Code::Corrupt, where + "empty key");
    const uint64_t type_at = pos_;
    uint32_t raw_type = 0;
    s = read_u32(raw_type, "value type");
    if (!s.ok()) return with_prefix("key '" + key + "': ", s.error());
    if (!is_valid_value_type(raw_type)) {
      return make_error(Code::Corrupt, "key '" + key + "': value type " + n(raw_type) +
                                           " at offset " + n(type_at) +
                                           " is not a GGUF value type");
    }
    Value value;
    s = read_value(static_cast<ValueType>(raw_type), value, 0);
    if (!s.ok()) return with_prefix("key '" + key + "': ", s.error());
    auto [it, inserted] = out_.key_index_.emplace(key, out_.metadata_.size());
    if (!inserted) {
      return make_error(Code::Corrupt, "duplicate key '" + key + "' (entries #" + n(it->second) +
                                           " and #" + n(i) + ")");
    }
    out_.metadata_.emplace_back(std::move(key), std::move(value));
  }
  return {};
}

Status Parser::read_alignment() {
  const Value* v = out_.find("general.alignment");
  if (!v) return {};
  auto a = v->as_uint();
  if (!a || v->type() == ValueType::Bool) {
    return make_error(Code::Corrupt, "key 'general.alignment' has type " +
                                         std::string(value_type_name(v->type())) +
                                         " and value " + v->to_display_string() +
                                         ", expected a u32");
  }
  if (*a == 0 || (*a & (*a - 1)) != 0) {
    return make_error(Code::Corrupt, "key 'general.alignment': " + n(*a) +
                                         " is not a non-zero power of two");
  }
  out_.alignment_ = *a;
  return {};
}

Status Parser::read_tensor_info(uint64_t index) {
  const uint64_t at = pos_;
  TensorInfo t;
  Status s = read_string(t.name, "tensor name", kMaxKeyBytes);
  if (!s.ok()) return with_prefix("tensor #" + n(index) + " at offset " + n(at) + ": ", s.error());
  const std::string where = "tensor '" + t.name + "': ";
  if (t.name.empty()) {
    return make_error(Code::Corrupt, "tensor #" + n(index) + " at offset " + n(at) + ": empty name");
  }
  uint32_t n_dims = 0;
  s = read_u32(n_dims, "dimension count");
  if (!s.ok()) return with_prefix(where, s.error());
  if (n_dims > kMaxDims) {
    return make_error(Code::Corrupt, where + n(n_dims) + " dimensions at offset " + n(pos_ - 4) +
                                         ", at most " + n(kMaxDims) + " are allowed");
  }
  t.dims.resize(n_dims);
  uint64_t elements = 1;
  constexpr uint64_t kMaxElements = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (uint32_t d = 0; d < n_dims; ++d) {
    s = read_u64(t.dims[d], "dimension");
    if (!s.ok()) return with_prefix(where, s.error());
    if (t.dims[d] == 0) {
      return make_error(Code::Corrupt, where + "dimension " + n(d) + " is 0 (at offset " +
                                           n(pos_ - 8) + ")");
    }
    if (t.dims[d] > kMaxElements / elements) {
      return make_error(Code::Corrupt, where + "dims " + dims_string(t.dims) +
                                           " have more than 2^63-1 elements");
    }
    elements *= t.dims[d];
  }
  t.n_elements = elements;
  uint32_t raw_type = 0;
  s = read_u32(raw_type, "tensor type");
  if (!s.ok()) return with_prefix(where, s.error());
  const kernels::DTypeTraits* traits = kernels::dtype_traits(raw_type);
  if (!traits) {  // kept aside: the file opens, check_supported() names it
    UnsupportedTensor u{t.name, raw_type, t.dims, 0};
    s = read_u64(u.offset, "tensor data offset");
    if (!s.ok()) return with_prefix(where, s.error());
    for (const TensorInfo& other : out_.tensors_)
      if (other.name == u.name) return make_error(Code::Corrupt, "duplicate tensor name '" + u.name + "'");
    out_.unsupported_.push_back(std::move(u));
    return {};
  }
  t.type = traits->type;
  const uint64_t row = n_dims ? t.dims[0] : 1;
  const uint64_t block = static_cast<uint64_t>(traits->block_elems);
  if (row % block != 0) {
    return make_error(Code::Corrupt, where + "row of " + n(row) + " elements is not a multiple of the " +
                                         traits->name + " block size " + n(block));
  }
  // n_bytes = blocks * block_bytes; blocks <= 2^63, block_bytes <= 292: check the product.
  const uint64_t blocks = elements / block;
  const uint64_t block_bytes = static_cast<uint64_t>(traits->block_bytes);
  if (blocks > std::numeric_limits<uint64_t>::max() / block_bytes) {
    return make_error(Code::Corrupt, where + "dims " + dims_string(t.dims) + " of type " +
                                         traits->name + " need more than 2^64 bytes");
  }
  t.n_bytes = blocks * block_bytes;
  s = read_u64(t.offset, "tensor data offset");
  if (!s.ok()) return with_prefix(where, s.error());
  auto [it, inserted] = out_.tensor_index_.emplace(t.name, out_.tensors_.size());
  if (!inserted) {
    return make_error(Code::Corrupt, "duplicate tensor name '" + t.name + "' (tensors #" +
                                         n(it->second) + " and #" + n(index) + ")");
  }
  out_.tensors_.push_back(std::move(t));
  return {};
}

Status Parser::check_tensor_data() {
  const uint64_t align = out_.alignment_;
  const uint64_t rem = pos_ % align;
  const uint64_t pad = rem ? align - rem : 0;
  if (pad > std::numeric_limits<uint64_t>::max() - pos_ || pos_ + pad > size_) {
    if (!out_.tensors_.empty() || !out_.unsupported_.empty()) {
      return make_error(Code::Corrupt, "data section (tensor infos end at " + n(pos_) +
                                           ", aligned to " + n(align) +
                                           ") starts past the end of the file (size " + n(size_) +
                                           ")");
    }
    out_.data_offset_ = size_;  // no tensors: a missing trailing padding is harmless
    return {};
  }
  out_.data_offset_ = pos_ + pad;
  const uint64_t data_size = size_ - out_.data_offset_;
  for (const UnsupportedTensor& t : out_.unsupported_) {
    if (t.offset % align != 0 || t.offset > data_size) {
      return make_error(Code::Corrupt, "tensor '" + t.name + "': data offset " + n(t.offset) +
                                           " is not an aligned offset inside the data section (" +
                                           n(data_size) + " bytes)");
    }
  }
  for (const TensorInfo& t : out_.tensors_) {
    if (t.offset % align != 0) {
      return make_error(Code::Corrupt, "tensor '" + t.name + "': data offset " + n(t.offset) +
                                           " is not a multiple of the alignment " + n(align));
    }
    if (t.offset > data_size) {
      return make_error(Code::Corrupt, "tensor '" + t.name + "': data offset " + n(t.offset) +
                                           " from the data section start " +
                                           n(out_.data_offset_) + " lies past file size " +
                                           n(size_));
    }
    if (t.n_bytes > data_size - t.offset) {
      return make_error(Code::Corrupt, "tensor '" + t.name + "': data [" +
                                           n(out_.data_offset_ + t.offset) + ", +" + n(t.n_bytes) +
                                           ") ends past file size " + n(size_));
    }
  }
  return {};
}

Status Parser::run() {
  out_.file_size_ = size_;
  uint64_t n_tensors = 0, n_kv = 0;
  STRATA_RETURN_IF_ERROR(read_header(n_tensors, n_kv));
  STRATA_RETURN_IF_ERROR(read_metadata(n_kv));
  STRATA_RETURN_IF_ERROR(read_alignment());
  out_.tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) STRATA_RETURN_IF_ERROR(read_tensor_info(i));
  return check_tensor_data();
}

}  // namespace strata::gguf
