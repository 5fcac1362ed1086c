// engine/gguf/gguf_types.h — GGUF metadata value types and the Value that holds one key's value.
// Depends on the standard library only; no file I/O, no model knowledge.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::gguf {

// Facts of the format shared by the reader and the writer.
inline constexpr uint32_t kMaxDims = 4;            // dimensions of a tensor (GGML_MAX_DIMS)
inline constexpr uint64_t kDefaultAlignment = 32;  // when general.alignment is absent
inline constexpr uint64_t kMaxKeyBytes = 65535;    // longest key / tensor name we accept

// Type ids as stored in a GGUF file (uint32).
enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

// "u8", "i32", "f32", "bool", "string", "array", ...; "unknown" for ids outside the enum.
const char* value_type_name(ValueType type);
// True for the 13 ids above.
bool is_valid_value_type(uint32_t raw);
// Bytes of one scalar in the file (1..8); 0 for String and Array, which have variable size.
uint64_t scalar_size(ValueType type);
bool is_integer_type(ValueType type);  // U8..I64 (not Bool)

// One metadata value: a scalar, a string, or an array of any element type (numbers, bools,
// strings, or arrays). Arrays share their payload between copies, so copying a Value that holds
// a 150k-entry token list is cheap. Numeric arrays keep the file's little-endian bytes
// (count * scalar_size); string arrays keep one blob plus count + 1 offsets.
class Value {
 public:
  Value() = default;  // a U8 of value 0

  // Scalars.
  static Value u8(uint8_t v);
  static Value i8(int8_t v);
  static Value u16(uint16_t v);
  static Value i16(int16_t v);
  static Value u32(uint32_t v);
  static Value i32(int32_t v);
  static Value u64(uint64_t v);
  static Value i64(int64_t v);
  static Value f32(float v);
  static Value f64(double v);
  static Value boolean(bool v);
  static Value string(std::string v);

  // Arrays.
  static Value u8_array(const std::vector<uint8_t>& v);
  static Value i8_array(const std::vector<int8_t>& v);
  static Value u16_array(const std::vector<uint16_t>& v);
  static Value i16_array(const std::vector<int16_t>& v);
  static Value u32_array(const std::vector<uint32_t>& v);
  static Value i32_array(const std::vector<int32_t>& v);
  static Value u64_array(const std::vector<uint64_t>& v);
  static Value i64_array(const std::vector<int64_t>& v);
  static Value f32_array(const std::vector<float>& v);
  static Value f64_array(const std::vector<double>& v);
  static Value bool_array(const std::vector<bool>& v);
  static Value string_array(const std::vector<std::string>& v);
  // Array of arrays; every item must itself be an Array (items that are not are skipped).
  static Value array_of_arrays(std::vector<Value> items);
  // Numeric or bool array from raw little-endian bytes; nullopt if elem is String/Array or
  // raw.size() != count * scalar_size(elem). Used by the parser.
  static std::optional<Value> array_from_raw(ValueType elem, std::vector<uint8_t> raw);
  // String array from a blob and count + 1 ascending offsets into it (offsets[0] == 0,
  // offsets.back() == blob.size()); nullopt when the offsets do not fit that shape.
  static std::optional<Value> array_from_blob(std::string blob, std::vector<uint64_t> offsets);

  ValueType type() const { return type_; }
  bool is_array() const { return type_ == ValueType::Array; }
  ValueType array_type() const;   // element type when type() == Array, else U8
  uint64_t array_size() const;    // 0 unless Array

  // Scalar access (also works on the elements returned by element()).
  std::optional<uint64_t> as_uint() const;  // integers and bool, if non-negative
  std::optional<int64_t> as_int() const;    // integers and bool, if they fit in int64
  std::optional<double> as_float() const;   // F32, F64 and integers
  std::optional<bool> as_bool() const;      // Bool, or an integer equal to 0 or 1
  const std::string* as_string() const;     // nullptr unless String

  // Array element access; out-of-range indices and wrong element types give nullopt / empty.
  std::string_view array_string(uint64_t i) const;        // String arrays
  std::optional<uint64_t> array_uint(uint64_t i) const;   // integer / bool arrays
  std::optional<int64_t> array_int(uint64_t i) const;
  std::optional<double> array_float(uint64_t i) const;    // float and integer arrays
  const Value* array_item(uint64_t i) const;              // arrays of arrays
  // Raw little-endian element bytes of a numeric / bool array (count * scalar_size bytes).
  const std::vector<uint8_t>* array_raw() const;
  // Element i as a standalone Value (a scalar, a String, or the nested Array).
  std::optional<Value> element(uint64_t i) const;

  // Human-readable form for `info`: 42, 1e-05, true, "llama", [1, 2, 3, ... 512 items].
  // Arrays show at most max_items elements; long strings are cut at 120 characters.
  std::string to_display_string(uint64_t max_items = 8) const;

  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  struct ArrayData;

  ValueType type_ = ValueType::U8;
  uint64_t bits_ = 0;   // integers and bool, two's complement for signed types
  double float_ = 0.0;  // F32 (widened exactly) and F64
  std::string string_;  // String
  std::shared_ptr<const ArrayData> array_;  // Array

  template <typename T>
  static Value make_numeric_array(ValueType elem, const std::vector<T>& v);
  static Value make_int(ValueType type, uint64_t bits);
  std::optional<Value> scalar_element(uint64_t i) const;
};

}  // namespace strata::gguf
