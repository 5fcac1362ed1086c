// engine/gguf/gguf_types.cpp — Value construction, typed access and display.
// Depends on the standard library only.
#include "engine/gguf/gguf_types.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <limits>

namespace strata::gguf {

static_assert(std::endian::native == std::endian::little,
              "GGUF arrays are kept as little-endian bytes and read with memcpy");

struct Value::ArrayData {
  ValueType elem = ValueType::U8;
  uint64_t count = 0;
  std::vector<uint8_t> raw;       // numeric / bool elements: count * scalar_size(elem) bytes
  std::string blob;               // String elements, concatenated
  std::vector<uint64_t> offsets;  // String elements: count + 1 offsets into blob
  std::vector<Value> items;       // Array elements
};

const char* value_type_name(ValueType type) {
  switch (type) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::Bool: return "bool";
    case ValueType::String: return "string";
    case ValueType::Array: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "unknown";
}

bool is_valid_value_type(uint32_t raw) { return raw <= static_cast<uint32_t>(ValueType::F64); }

uint64_t scalar_size(ValueType type) {
  switch (type) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::Bool: return 1;
    case ValueType::U16:
    case ValueType::I16: return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32: return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64: return 8;
    case ValueType::String:
    case ValueType::Array: return 0;
  }
  return 0;
}

bool is_integer_type(ValueType type) {
  switch (type) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::U16:
    case ValueType::I16:
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::U64:
    case ValueType::I64: return true;
    default: return false;
  }
}

static bool is_signed_type(ValueType type) {
  return type == ValueType::I8 || type == ValueType::I16 || type == ValueType::I32 ||
         type == ValueType::I64;
}

// ---- construction ----------------------------------------------------------------------------

Value Value::make_int(ValueType type, uint64_t bits) {
  Value v;
  v.type_ = type;
  v.bits_ = bits;
  return v;
}

Value Value::u8(uint8_t v) { return make_int(ValueType::U8, v); }
Value Value::i8(int8_t v) { return make_int(ValueType::I8, static_cast<uint64_t>(int64_t{v})); }
Value Value::u16(uint16_t v) { return make_int(ValueType::U16, v); }
Value Value::i16(int16_t v) { return make_int(ValueType::I16, static_cast<uint64_t>(int64_t{v})); }
Value Value::u32(uint32_t v) { return make_int(ValueType::U32, v); }
Value Value::i32(int32_t v) { return make_int(ValueType::I32, static_cast<uint64_t>(int64_t{v})); }
Value Value::u64(uint64_t v) { return make_int(ValueType::U64, v); }
Value Value::i64(int64_t v) { return make_int(ValueType::I64, static_cast<uint64_t>(v)); }
Value Value::boolean(bool v) { return make_int(ValueType::Bool, v ? 1 : 0); }

Value Value::f32(float v) {
  Value out;
  out.type_ = ValueType::F32;
  out.float_ = v;
  return out;
}

Value Value::f64(double v) {
  Value out;
  out.type_ = ValueType::F64;
  out.float_ = v;
  return out;
}

Value Value::string(std::string v) {
  Value out;
  out.type_ = ValueType::String;
  out.string_ = std::move(v);
  return out;
}

template <typename T>
Value Value::make_numeric_array(ValueType elem, const std::vector<T>& v) {
  auto data = std::make_shared<ArrayData>();
  data->elem = elem;
  data->count = v.size();
  data->raw.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(data->raw.data(), v.data(), data->raw.size());
  Value out;
  out.type_ = ValueType::Array;
  out.array_ = std::move(data);
  return out;
}

Value Value::u8_array(const std::vector<uint8_t>& v) { return make_numeric_array(ValueType::U8, v); }
Value Value::i8_array(const std::vector<int8_t>& v) { return make_numeric_array(ValueType::I8, v); }
Value Value::u16_array(const std::vector<uint16_t>& v) { return make_numeric_array(ValueType::U16, v); }
Value Value::i16_array(const std::vector<int16_t>& v) { return make_numeric_array(ValueType::I16, v); }
Value Value::u32_array(const std::vector<uint32_t>& v) { return make_numeric_array(ValueType::U32, v); }
Value Value::i32_array(const std::vector<int32_t>& v) { return make_numeric_array(ValueType::I32, v); }
Value Value::u64_array(const std::vector<uint64_t>& v) { return make_numeric_array(ValueType::U64, v); }
Value Value::i64_array(const std::vector<int64_t>& v) { return make_numeric_array(ValueType::I64, v); }
Value Value::f32_array(const std::vector<float>& v) { return make_numeric_array(ValueType::F32, v); }
Value Value::f64_array(const std::vector<double>& v) { return make_numeric_array(ValueType::F64, v); }

Value Value::bool_array(const std::vector<bool>& v) {
  std::vector<uint8_t> bytes(v.begin(), v.end());
  return make_numeric_array(ValueType::Bool, bytes);
}

Value Value::string_array(const std::vector<std::string>& v) {
  auto data = std::make_shared<ArrayData>();
  data->elem = ValueType::String;
  data->count = v.size();
  data->offsets.reserve(v.size() + 1);
  size_t total = 0;
  for (const std::string& s : v) total += s.size();
  data->blob.reserve(total);
  data->offsets.push_back(0);
  for (const std::string& s : v) {
    data->blob += s;
    data->offsets.push_back(data->blob.size());
  }
  Value out;
  out.type_ = ValueType::Array;
  out.array_ = std::move(data);
  return out;
}

Value Value::array_of_arrays(std::vector<Value> items) {
  auto data = std::make_shared<ArrayData>();
  data->elem = ValueType::Array;
  for (Value& item : items) {
    if (item.is_array()) data->items.push_back(std::move(item));
  }
  data->count = data->items.size();
  Value out;
  out.type_ = ValueType::Array;
  out.array_ = std::move(data);
  return out;
}

std::optional<Value> Value::array_from_raw(ValueType elem, std::vector<uint8_t> raw) {
  const uint64_t size = scalar_size(elem);
  if (size == 0 || raw.size() % size != 0) return std::nullopt;
  auto data = std::make_shared<ArrayData>();
  data->elem = elem;
  data->count = raw.size() / size;
  data->raw = std::move(raw);
  Value out;
  out.type_ = ValueType::Array;
  out.array_ = std::move(data);
  return out;
}

std::optional<Value> Value::array_from_blob(std::string blob, std::vector<uint64_t> offsets) {
  if (offsets.empty() || offsets.front() != 0 || offsets.back() != blob.size()) return std::nullopt;
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1]) return std::nullopt;
  }
  auto data = std::make_shared<ArrayData>();
  data->elem = ValueType::String;
  data->count = offsets.size() - 1;
  data->blob = std::move(blob);
  data->offsets = std::move(offsets);
  Value out;
  out.type_ = ValueType::Array;
  out.array_ = std::move(data);
  return out;
}

// ---- scalar access ---------------------------------------------------------------------------

std::optional<uint64_t> Value::as_uint() const {
  if (type_ == ValueType::Bool) return bits_;
  if (!is_integer_type(type_)) return std::nullopt;
  if (is_signed_type(type_) && static_cast<int64_t>(bits_) < 0) return std::nullopt;
  return bits_;
}

std::optional<int64_t> Value::as_int() const {
  if (type_ == ValueType::Bool) return static_cast<int64_t>(bits_);
  if (!is_integer_type(type_)) return std::nullopt;
  if (!is_signed_type(type_) && bits_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return std::nullopt;
  }
  return static_cast<int64_t>(bits_);
}

std::optional<double> Value::as_float() const {
  if (type_ == ValueType::F32 || type_ == ValueType::F64) return float_;
  if (!is_integer_type(type_)) return std::nullopt;
  if (is_signed_type(type_)) return static_cast<double>(static_cast<int64_t>(bits_));
  return static_cast<double>(bits_);
}

std::optional<bool> Value::as_bool() const {
  if (type_ == ValueType::Bool) return bits_ != 0;
  if (is_integer_type(type_) && (bits_ == 0 || bits_ == 1)) return bits_ != 0;
  return std::nullopt;
}

const std::string* Value::as_string() const {
  return type_ == ValueType::String ? &string_ : nullptr;
}

// ---- array access ----------------------------------------------------------------------------

ValueType Value::array_type() const { return array_ ? array_->elem : ValueType::U8; }
uint64_t Value::array_size() const { return array_ ? array_->count : 0; }

std::string_view Value::array_string(uint64_t i) const {
  if (!array_ || array_->elem != ValueType::String || i >= array_->count) return {};
  const uint64_t begin = array_->offsets[i];
  return std::string_view(array_->blob).substr(begin, array_->offsets[i + 1] - begin);
}

std::optional<Value> Value::scalar_element(uint64_t i) const {
  if (!array_ || i >= array_->count) return std::nullopt;
  const ValueType elem = array_->elem;
  const uint64_t size = scalar_size(elem);
  if (size == 0) return std::nullopt;
  const uint8_t* p = array_->raw.data() + i * size;
  switch (elem) {
    case ValueType::U8: return u8(p[0]);
    case ValueType::I8: return i8(static_cast<int8_t>(p[0]));
    case ValueType::Bool: return boolean(p[0] != 0);
    case ValueType::U16: { uint16_t v; std::memcpy(&v, p, 2); return u16(v); }
    case ValueType::I16: { int16_t v; std::memcpy(&v, p, 2); return i16(v); }
    case ValueType::U32: { uint32_t v; std::memcpy(&v, p, 4); return u32(v); }
    case ValueType::I32: { int32_t v; std::memcpy(&v, p, 4); return i32(v); }
    case ValueType::F32: { float v; std::memcpy(&v, p, 4); return f32(v); }
    case ValueType::U64: { uint64_t v; std::memcpy(&v, p, 8); return u64(v); }
    case ValueType::I64: { int64_t v; std::memcpy(&v, p, 8); return i64(v); }
    case ValueType::F64: { double v; std::memcpy(&v, p, 8); return f64(v); }
    default: return std::nullopt;
  }
}

std::optional<uint64_t> Value::array_uint(uint64_t i) const {
  auto e = scalar_element(i);
  return e ? e->as_uint() : std::nullopt;
}

std::optional<int64_t> Value::array_int(uint64_t i) const {
  auto e = scalar_element(i);
  return e ? e->as_int() : std::nullopt;
}

std::optional<double> Value::array_float(uint64_t i) const {
  auto e = scalar_element(i);
  return e ? e->as_float() : std::nullopt;
}

const Value* Value::array_item(uint64_t i) const {
  if (!array_ || array_->elem != ValueType::Array || i >= array_->count) return nullptr;
  return &array_->items[i];
}

const std::vector<uint8_t>* Value::array_raw() const {
  if (!array_ || scalar_size(array_->elem) == 0) return nullptr;
  return &array_->raw;
}

std::optional<Value> Value::element(uint64_t i) const {
  if (!array_ || i >= array_->count) return std::nullopt;
  if (array_->elem == ValueType::String) return string(std::string(array_string(i)));
  if (array_->elem == ValueType::Array) return array_->items[i];
  return scalar_element(i);
}

// ---- display ---------------------------------------------------------------------------------

namespace {

constexpr size_t kMaxDisplayChars = 120;

void append_quoted(std::string& out, std::string_view s) {
  out += '"';
  size_t n = s.size();
  bool cut = false;
  if (n > kMaxDisplayChars) {
    n = kMaxDisplayChars;
    // Do not split a UTF-8 sequence: back up over continuation bytes.
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    cut = true;
  }
  static const char* kHex = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  if (cut) out += "... (" + std::to_string(s.size()) + " bytes)";
}

template <typename F>
std::string shortest(F v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

}  // namespace

std::string Value::to_display_string(uint64_t max_items) const {
  switch (type_) {
    case ValueType::Bool: return bits_ ? "true" : "false";
    case ValueType::F32: return shortest(static_cast<float>(float_));
    case ValueType::F64: return shortest(float_);
    case ValueType::String: {
      std::string out;
      append_quoted(out, string_);
      return out;
    }
    case ValueType::Array: {
      std::string out = "[";
      const uint64_t n = array_size();
      const uint64_t shown = n < max_items ? n : max_items;
      for (uint64_t i = 0; i < shown; ++i) {
        if (i) out += ", ";
        if (array_->elem == ValueType::String) {
          append_quoted(out, array_string(i));
        } else if (auto e = element(i)) {
          out += e->to_display_string(max_items);
        }
      }
      if (shown < n) out += shown ? ", ..." : "...";
      out += "]";
      if (shown < n) out += " (" + std::to_string(n) + " x " + value_type_name(array_->elem) + ")";
      return out;
    }
    default:
      if (is_signed_type(type_)) return std::to_string(static_cast<int64_t>(bits_));
      return std::to_string(bits_);
  }
}

bool operator==(const Value& a, const Value& b) {
  if (a.type_ != b.type_) return false;
  switch (a.type_) {
    case ValueType::F32:
    case ValueType::F64:
      return std::bit_cast<uint64_t>(a.float_) == std::bit_cast<uint64_t>(b.float_);
    case ValueType::String: return a.string_ == b.string_;
    case ValueType::Array: {
      if (a.array_ == b.array_) return true;
      if (!a.array_ || !b.array_) return a.array_size() == 0 && b.array_size() == 0;
      const Value::ArrayData& x = *a.array_;
      const Value::ArrayData& y = *b.array_;
      return x.elem == y.elem && x.count == y.count && x.raw == y.raw && x.blob == y.blob &&
             x.offsets == y.offsets && x.items == y.items;
    }
    default: return a.bits_ == b.bits_;
  }
}

}  // namespace strata::gguf
