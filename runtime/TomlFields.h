//===- TomlFields.h - Strict reading of .toml tables ------------*- C++ -*-===//
//
// What the model spec and the sweep grid parsers share: every key of a table
// is known and of the right type, or an InputError says where
// ("path:line:col"), what was found and what was expected, with the known
// keys and a did-you-mean for a likely typo.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_TOMLFIELDS_H
#define DRC_RUNTIME_TOMLFIELDS_H

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>
#endif

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace drc {

/// "path:line:col" of a source region.
std::string where(const std::string &path, const toml::source_region &src);

/// One known key of a table: how to read it.
struct Field {
  std::string key;
  std::string type; ///< for messages: "an integer", "a number", "a string"
  std::function<bool(const toml::node &)> read; ///< false: wrong type
};

Field integer(std::string key, int64_t &out);
Field unsignedInteger(std::string key, uint64_t &out);
Field number(std::string key, double &out);

/// "a table", "an integer", ... for messages.
const char *typeName(const toml::node &n);

/// "; did you mean 'k'?" for the known key nearest `key` (at most two edits
/// away), else empty.
std::string suggestion(const std::string &key,
                       const std::vector<std::string> &known);

/// "a, b, c".
std::string joined(const std::vector<std::string> &keys);

/// Where each "[section] key" was set, for validation messages.
using KeyLocations = std::map<std::string, std::string>;

/// Reads every key of `table` through `fields`; rejects unknown and mistyped
/// keys. `name` is the table's name in messages ("model" for [model]).
void readTable(const std::string &path, const std::string &name,
               const toml::table &table, const std::vector<Field> &fields,
               KeyLocations &locations);

/// Checks a rule; the message starts with "[section] key" and is located
/// where that key was set (the file alone for a key left at its default).
struct Validator {
  const std::string &path;
  const KeyLocations &locations;
  void operator()(bool ok, const std::string &message) const;
};

/// Parses `text` as TOML; a syntax error is an InputError at its place.
toml::table parseToml(const std::string &text, const std::string &path);

/// A TOML value as text; a float in the fewest digits that read back as the
/// same double (0.0003, not 0.00029999999999999997).
std::string tomlValueText(const toml::node &value);

/// `table` written as TOML: its values by key, then its tables, each under
/// its header ("[prefix" + key + "]").
std::string tomlText(const toml::table &table, const std::string &prefix = "");

/// The text of the input file `path`; an InputError "path: cannot open the
/// `what`" when it cannot be read.
std::string readInputFile(const std::string &path, const std::string &what);

} // namespace drc

#endif // DRC_RUNTIME_TOMLFIELDS_H
