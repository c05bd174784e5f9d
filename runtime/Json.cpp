//===- Json.cpp - Minimal JSON values, writer and parser ------------------===//

#include "runtime/Json.h"

#include "runtime/Error.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace drc {

std::string formatNumber(double value) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, end);
}

std::string formatFixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

namespace {
const char *kindName(JsonValue::Kind kind) {
  switch (kind) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Bool:
    return "a boolean";
  case JsonValue::Kind::Number:
    return "a number";
  case JsonValue::Kind::String:
    return "a string";
  case JsonValue::Kind::Array:
    return "an array";
  case JsonValue::Kind::Object:
    return "an object";
  }
  return "?";
}
} // namespace

void JsonValue::expect(Kind kind) const {
  if (kind_ != kind)
    throw Error(std::string("JSON value is ") + kindName(kind_) +
                ", expected " + kindName(kind));
}

bool JsonValue::asBool() const {
  expect(Kind::Bool);
  return bool_;
}

double JsonValue::asDouble() const {
  expect(Kind::Number);
  return number_;
}

bool JsonValue::isInt64() const {
  if (kind_ != Kind::Number)
    return false;
  // 2^63 is exactly representable, so the comparison is exact.
  return isInteger_ || (number_ == std::floor(number_) && number_ >= -0x1p63 &&
                        number_ < 0x1p63);
}

int64_t JsonValue::asInt64() const {
  expect(Kind::Number);
  if (!isInt64())
    throw Error("JSON number " + formatNumber(number_) +
                " is not an integer in int64 range");
  return isInteger_ ? integer_ : int64_t(number_);
}

const std::string &JsonValue::asString() const {
  expect(Kind::String);
  return string_;
}

const std::vector<JsonValue> &JsonValue::elements() const {
  expect(Kind::Array);
  return elements_;
}

JsonValue &JsonValue::push(JsonValue value) {
  expect(Kind::Array);
  elements_.push_back(std::move(value));
  return elements_.back();
}

const std::vector<JsonValue::Member> &JsonValue::members() const {
  expect(Kind::Object);
  return members_;
}

JsonValue &JsonValue::set(std::string key, JsonValue value) {
  expect(Kind::Object);
  for (Member &m : members_)
    if (m.first == key)
      return m.second = std::move(value);
  members_.emplace_back(std::move(key), std::move(value));
  return members_.back().second;
}

const JsonValue *JsonValue::find(std::string_view key) const {
  expect(Kind::Object);
  for (const Member &m : members_)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

bool JsonValue::erase(std::string_view key) {
  expect(Kind::Object);
  for (auto it = members_.begin(); it != members_.end(); ++it)
    if (it->first == key) {
      members_.erase(it);
      return true;
    }
  return false;
}

bool JsonValue::operator==(const JsonValue &other) const {
  if (kind_ != other.kind_)
    return false;
  switch (kind_) {
  case Kind::Null:
    return true;
  case Kind::Bool:
    return bool_ == other.bool_;
  case Kind::Number:
    if (isInteger_ && other.isInteger_)
      return integer_ == other.integer_;
    return number_ == other.number_;
  case Kind::String:
    return string_ == other.string_;
  case Kind::Array:
    return elements_ == other.elements_;
  case Kind::Object:
    return members_ == other.members_;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

namespace {
void writeString(std::string &out, std::string_view text) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        out += "\\u00";
        out += hex[(c >> 4) & 0xf];
        out += hex[c & 0xf];
      } else {
        out += c;
      }
    }
  }
  out += '"';
}
} // namespace

void writeJson(std::string &out, const JsonValue &value) {
  switch (value.kind_) {
  case JsonValue::Kind::Null:
    out += "null";
    return;
  case JsonValue::Kind::Bool:
    out += value.bool_ ? "true" : "false";
    return;
  case JsonValue::Kind::Number: {
    if (value.isInteger_) {
      out += std::to_string(value.integer_);
      return;
    }
    if (!std::isfinite(value.number_)) {
      out += "null";
      return;
    }
    char buf[32];
    auto [end, ec] =
        value.isFloat_
            ? std::to_chars(buf, buf + sizeof buf, float(value.number_))
            : std::to_chars(buf, buf + sizeof buf, value.number_);
    out.append(buf, end);
    return;
  }
  case JsonValue::Kind::String:
    writeString(out, value.string_);
    return;
  case JsonValue::Kind::Array: {
    out += '[';
    bool first = true;
    for (const JsonValue &e : value.elements_) {
      if (!first)
        out += ',';
      first = false;
      writeJson(out, e);
    }
    out += ']';
    return;
  }
  case JsonValue::Kind::Object: {
    out += '{';
    bool first = true;
    for (const auto &[key, member] : value.members_) {
      if (!first)
        out += ',';
      first = false;
      writeString(out, key);
      out += ':';
      writeJson(out, member);
    }
    out += '}';
    return;
  }
  }
}

std::string toJson(const JsonValue &value) {
  std::string out;
  writeJson(out, value);
  return out;
}

std::string quoteJson(std::string_view text) {
  std::string out;
  writeString(out, text);
  return out;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {

/// Recursive descent over RFC 8259; `pos` always points at the next byte.
class JsonParser {
public:
  JsonParser(std::string_view text, const std::string &source, int firstLine)
      : text(text), source(source), firstLine(firstLine) {}

  JsonValue parseDocument() {
    skipSpace();
    JsonValue value = parseValue(0);
    skipSpace();
    if (pos != text.size())
      fail("unexpected text after the JSON value");
    return value;
  }

private:
  static constexpr int kMaxDepth = 256;

  [[noreturn]] void fail(const std::string &what) const { failAt(pos, what); }

  [[noreturn]] void failAt(size_t at, const std::string &what) const {
    int line = firstLine, column = 1;
    for (size_t i = 0; i < at && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw InputError(source + ":" + std::to_string(line) + ":" +
                     std::to_string(column) + ": invalid JSON: " + what);
  }

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  void skipSpace() {
    while (!atEnd() && (text[pos] == ' ' || text[pos] == '\t' ||
                        text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  void expectChar(char c) {
    if (peek() != c || atEnd())
      fail(std::string("expected '") + c + "'" + found());
    ++pos;
  }

  std::string found() const {
    if (atEnd())
      return " but the text ended";
    char c = text[pos];
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f)
      return "";
    return std::string(" but found '") + c + "'";
  }

  JsonValue parseValue(int depth) {
    if (depth > kMaxDepth)
      fail("nesting deeper than " + std::to_string(kMaxDepth));
    switch (peek()) {
    case '{':
      return parseObject(depth);
    case '[':
      return parseArray(depth);
    case '"':
      return JsonValue(parseString());
    case 't':
      parseWord("true");
      return JsonValue(true);
    case 'f':
      parseWord("false");
      return JsonValue(false);
    case 'n':
      parseWord("null");
      return JsonValue();
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9'))
        return parseNumber();
      fail("expected a value" + found());
    }
  }

  void parseWord(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      fail("expected '" + std::string(word) + "'");
    pos += word.size();
  }

  JsonValue parseObject(int depth) {
    JsonValue object = JsonValue::object();
    ++pos;
    skipSpace();
    if (peek() == '}') {
      ++pos;
      return object;
    }
    while (true) {
      skipSpace();
      size_t keyPos = pos;
      if (peek() != '"')
        fail("expected a member name in double quotes" + found());
      std::string key = parseString();
      if (object.find(key))
        failAt(keyPos, "duplicate key " + quoteJson(key));
      skipSpace();
      expectChar(':');
      skipSpace();
      object.set(std::move(key), parseValue(depth + 1));
      skipSpace();
      if (peek() == ',' && !atEnd()) {
        ++pos;
        continue;
      }
      if (peek() == '}' && !atEnd()) {
        ++pos;
        return object;
      }
      fail("expected ',' or '}'" + found());
    }
  }

  JsonValue parseArray(int depth) {
    JsonValue array = JsonValue::array();
    ++pos;
    skipSpace();
    if (peek() == ']') {
      ++pos;
      return array;
    }
    while (true) {
      skipSpace();
      array.push(parseValue(depth + 1));
      skipSpace();
      if (peek() == ',' && !atEnd()) {
        ++pos;
        continue;
      }
      if (peek() == ']' && !atEnd()) {
        ++pos;
        return array;
      }
      fail("expected ',' or ']'" + found());
    }
  }

  unsigned parseHex4() {
    unsigned value = 0;
    for (int i = 0; i < 4; ++i, ++pos) {
      char c = peek();
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= c - '0';
      else if (c >= 'a' && c <= 'f')
        value |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        value |= c - 'A' + 10;
      else
        fail("expected four hex digits after \\u");
    }
    return value;
  }

  static void appendUtf8(std::string &out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xc0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += char(0xe0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    } else {
      out += char(0xf0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3f));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    }
  }

  std::string parseString() {
    size_t start = pos;
    ++pos;
    std::string out;
    while (true) {
      if (atEnd())
        failAt(start, "string is not terminated");
      char c = text[pos];
      if (c == '"') {
        ++pos;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        fail("control character in a string; write it as an escape");
      if (c != '\\') {
        out += c;
        ++pos;
        continue;
      }
      size_t escape = pos++;
      char e = peek();
      if (atEnd())
        failAt(start, "string is not terminated");
      ++pos;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned cp = parseHex4();
        if (cp >= 0xdc00 && cp <= 0xdfff)
          failAt(escape, "unpaired low surrogate in \\u escape");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          if (text.substr(pos, 2) != "\\u")
            failAt(escape, "unpaired high surrogate in \\u escape");
          pos += 2;
          unsigned low = parseHex4();
          if (low < 0xdc00 || low > 0xdfff)
            failAt(escape, "unpaired high surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        failAt(escape, "unknown escape in a string");
      }
    }
  }

  JsonValue parseNumber() {
    size_t start = pos;
    auto digits = [&] {
      size_t from = pos;
      while (!atEnd() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos - from;
    };
    if (peek() == '-')
      ++pos;
    if (peek() == '0') {
      ++pos;
    } else if (digits() == 0) {
      fail("expected a digit");
    }
    bool integral = true;
    if (peek() == '.' && !atEnd()) {
      integral = false;
      ++pos;
      if (digits() == 0)
        fail("expected a digit after '.'");
    }
    if ((peek() == 'e' || peek() == 'E') && !atEnd()) {
      integral = false;
      ++pos;
      if ((peek() == '+' || peek() == '-') && !atEnd())
        ++pos;
      if (digits() == 0)
        fail("expected a digit in the exponent");
    }
    const char *first = text.data() + start;
    const char *last = text.data() + pos;
    if (integral) {
      int64_t i;
      // "-0" stays a double so that negative zero keeps its sign.
      if (std::from_chars(first, last, i).ec == std::errc() &&
          !(i == 0 && *first == '-'))
        return JsonValue(i);
    }
    double d;
    if (std::from_chars(first, last, d).ec != std::errc())
      failAt(start, "number " + std::string(first, last) +
                        " is out of the range of a double");
    return JsonValue(d);
  }

  std::string_view text;
  const std::string &source;
  int firstLine;
  size_t pos = 0;
};

} // namespace

JsonValue parseJson(std::string_view text, const std::string &source,
                    int firstLine) {
  return JsonParser(text, source, firstLine).parseDocument();
}

} // namespace drc
