//===- Json.h - Minimal JSON values, writer and parser ----------*- C++ -*-===//
//
// Enough JSON for the safetensors header and metrics.jsonl: a value tree, a
// compact writer whose numbers read back to the same bits, and a strict parser
// (RFC 8259) whose errors name the source and the line:column.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_JSON_H
#define DRC_RUNTIME_JSON_H

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace drc {

/// The shortest decimal text that reads back as the same double ("0.1",
/// "1e-08", "3"). Exposed for other text formats (manifests).
std::string formatNumber(double value);

/// `value` with `digits` decimals ("2.0072"), for tables in reports.
std::string formatFixed(double value, int digits);

/// A JSON value. Objects keep their members in insertion order so that
/// written files are stable and readable; keys are unique.
class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default; ///< null
  JsonValue(std::nullptr_t) {}
  JsonValue(bool b) : kind_(Kind::Bool), bool_(b) {}
  /// Integers are written exactly (unsigned ones above INT64_MAX as doubles).
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonValue(T i)
      : kind_(Kind::Number), number_(double(i)) {
    if (!std::unsigned_integral<T> || uint64_t(i) <= uint64_t(INT64_MAX)) {
      integer_ = int64_t(i);
      isInteger_ = true;
    }
  }
  /// Written with the shortest text that reads back as the same double.
  JsonValue(double d) : kind_(Kind::Number), number_(d) {}
  /// Written with the shortest text that reads back as the same float, so a
  /// float loss prints as 2.314 rather than 2.3139998912811279.
  JsonValue(float f) : kind_(Kind::Number), number_(f), isFloat_(true) {}
  JsonValue(std::string s) : kind_(Kind::String), string_(std::move(s)) {}
  JsonValue(const char *s) : JsonValue(std::string(s)) {}
  JsonValue(std::string_view s) : JsonValue(std::string(s)) {}

  static JsonValue array() { return JsonValue(Kind::Array); }
  static JsonValue object() { return JsonValue(Kind::Object); }

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  // Accessors throw drc::Error when the kind is wrong; callers that read
  // user files check the kind first and report in their own words.
  bool asBool() const;
  double asDouble() const;
  /// The exact integer; throws unless the number is an integer in int64
  /// range (a literal like 3 or 3.0, not 3.5 or 1e30).
  int64_t asInt64() const;
  /// True for a number that asInt64() accepts.
  bool isInt64() const;
  const std::string &asString() const;

  /// Array elements.
  const std::vector<JsonValue> &elements() const;
  JsonValue &push(JsonValue value);

  /// Object members, in insertion order.
  const std::vector<Member> &members() const;
  /// Sets `key`, replacing an existing member in place.
  JsonValue &set(std::string key, JsonValue value);
  /// The member called `key`, or null.
  const JsonValue *find(std::string_view key) const;
  /// Removes `key` if present; returns whether it was.
  bool erase(std::string_view key);

  /// Structural equality; numbers compare by value, NaN unequal to itself.
  bool operator==(const JsonValue &other) const;

private:
  explicit JsonValue(Kind kind) : kind_(kind) {}
  void expect(Kind kind) const;
  friend void writeJson(std::string &out, const JsonValue &value);

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  int64_t integer_ = 0;
  bool isInteger_ = false; ///< integer_ holds the exact value
  bool isFloat_ = false;   ///< print as the shortest float
  std::string string_;
  std::vector<JsonValue> elements_;
  std::vector<Member> members_;
};

/// Appends compact JSON (no spaces, no newline). NaN and ±Inf become null,
/// since JSON has no spelling for them.
void writeJson(std::string &out, const JsonValue &value);
/// Compact JSON text of `value`.
std::string toJson(const JsonValue &value);
/// The JSON string literal of `text`, quotes included.
std::string quoteJson(std::string_view text);

/// Parses exactly one JSON value (surrounding whitespace allowed). Throws
/// InputError("<source>:<line>:<column>: <what>") on malformed text, duplicate
/// object keys, or nesting deeper than 256. `firstLine` is the line number of
/// the text's first line in `source` (for one record of a JSON-lines file).
JsonValue parseJson(std::string_view text, const std::string &source,
                    int firstLine = 1);

} // namespace drc

#endif // DRC_RUNTIME_JSON_H
