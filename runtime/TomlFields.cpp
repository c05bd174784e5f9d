//===- TomlFields.cpp - Strict reading of .toml tables --------------------===//
#include "runtime/TomlFields.h"

#include "runtime/Error.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace drc {
namespace {

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace

std::string where(const std::string &path, const toml::source_region &src) {
  std::ostringstream os;
  os << path << ":" << src.begin.line << ":" << src.begin.column;
  return os.str();
}

Field integer(std::string key, int64_t &out) {
  return {std::move(key), "an integer", [&out](const toml::node &n) {
            if (!n.is_integer())
              return false;
            out = n.as_integer()->get();
            return true;
          }};
}

Field unsignedInteger(std::string key, uint64_t &out) {
  return {std::move(key), "a non-negative integer",
          [&out](const toml::node &n) {
            if (!n.is_integer() || n.as_integer()->get() < 0)
              return false;
            out = static_cast<uint64_t>(n.as_integer()->get());
            return true;
          }};
}

Field number(std::string key, double &out) {
  return {std::move(key), "a number", [&out](const toml::node &n) {
            if (n.is_floating_point())
              out = n.as_floating_point()->get();
            else if (n.is_integer())
              out = static_cast<double>(n.as_integer()->get());
            else
              return false;
            return true;
          }};
}

const char *typeName(const toml::node &n) {
  switch (n.type()) {
  case toml::node_type::table:
    return "a table";
  case toml::node_type::array:
    return "an array";
  case toml::node_type::string:
    return "a string";
  case toml::node_type::integer:
    return "an integer";
  case toml::node_type::floating_point:
    return "a floating-point number";
  case toml::node_type::boolean:
    return "a boolean";
  default:
    return "a date/time";
  }
}

std::string suggestion(const std::string &key,
                       const std::vector<std::string> &known) {
  std::string best;
  size_t bestDistance = 3; // only suggest plausible typos
  for (const std::string &k : known) {
    size_t d = editDistance(key, k);
    if (d < bestDistance) {
      bestDistance = d;
      best = k;
    }
  }
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

std::string joined(const std::vector<std::string> &keys) {
  std::string s;
  for (const std::string &k : keys)
    s += (s.empty() ? "" : ", ") + k;
  return s;
}

void readTable(const std::string &path, const std::string &name,
               const toml::table &table, const std::vector<Field> &fields,
               KeyLocations &locations) {
  std::vector<std::string> known;
  for (const Field &f : fields)
    known.push_back(f.key);
  for (const auto &[key, node] : table) {
    std::string k(key.str());
    auto field = std::find_if(fields.begin(), fields.end(),
                              [&](const Field &f) { return f.key == k; });
    if (field == fields.end())
      throw InputError(where(path, key.source()) + ": unknown key '" + k +
                       "' in [" + name + "]" + suggestion(k, known) +
                       " (known keys: " + joined(known) + ")");
    if (!field->read(node))
      throw InputError(where(path, node.source()) + ": [" + name + "] " + k +
                       " must be " + field->type + ", found " + typeName(node));
    locations["[" + name + "] " + k] = where(path, node.source());
  }
}

void Validator::operator()(bool ok, const std::string &message) const {
  if (ok)
    return;
  auto at = locations.find(
      message.substr(0, message.find(' ', message.find(']') + 2)));
  throw InputError((at == locations.end() ? path : at->second) + ": " +
                   message);
}

toml::table parseToml(const std::string &text, const std::string &path) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error &e) {
    throw InputError(where(path, e.source()) + ": " +
                     std::string(e.description()));
  }
}

std::string tomlValueText(const toml::node &value) {
  if (const toml::value<double> *number = value.as_floating_point()) {
    double v = number->get();
    if (std::isnan(v))
      return "nan";
    if (std::isinf(v))
      return v > 0 ? "inf" : "-inf";
    char digits[32];
    std::string text(digits, std::to_chars(digits, digits + sizeof digits, v,
                                           std::chars_format::general)
                                 .ptr);
    if (text.find_first_of(".e") == std::string::npos)
      text += ".0"; // "1" would read back as an integer
    return text;
  }
  std::ostringstream os;
  value.visit([&](const auto &v) { os << v; });
  return os.str();
}

/// A key as TOML writes it: bare where it can be, quoted otherwise.
std::string tomlKey(std::string_view key) {
  bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  return bare ? std::string(key)
              : tomlValueText(toml::value<std::string>(std::string(key)));
}

std::string tomlText(const toml::table &table, const std::string &prefix) {
  std::ostringstream os;
  for (const auto &[key, node] : table)
    if (!node.is_table())
      os << tomlKey(key.str()) << " = " << tomlValueText(node) << "\n";
  for (const auto &[key, node] : table)
    if (node.is_table()) {
      std::string name = prefix + tomlKey(key.str());
      os << (os.tellp() > 0 ? "\n" : "") << "[" << name << "]\n"
         << tomlText(*node.as_table(), name + ".");
    }
  return os.str();
}

std::string readInputFile(const std::string &path, const std::string &what) {
  std::ifstream in(path);
  if (!in)
    throw InputError(path + ": cannot open the " + what);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace drc
