//===- ParameterTable.cpp - The model's parameters and layout -------------===//

#include "runtime/ParameterTable.h"

#include "runtime/Error.h"
#include "runtime/Json.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace drc {

namespace {

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

int64_t alignUp(int64_t n) {
  return (n + kParameterAlignment - 1) / kParameterAlignment *
         kParameterAlignment;
}

bool parseInt64(std::string_view text, int64_t &out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool parseFinite(std::string_view text, double &out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() &&
         std::isfinite(out);
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos - start));
    if (pos == std::string_view::npos)
      return parts;
    start = pos + 1;
  }
}

/// Parses `trunc_normal(s,c)`, `constant(v)`, `zeros` or `values(a,b,...)`.
bool parseInit(std::string_view text, Init &init) {
  if (text == "zeros") {
    init = Init::zeros();
    return true;
  }
  size_t open = text.find('(');
  if (open == std::string_view::npos || !text.ends_with(')'))
    return false;
  std::string_view kind = text.substr(0, open);
  auto args = split(text.substr(open + 1, text.size() - open - 2), ',');
  std::vector<double> values;
  for (std::string_view arg : args) {
    double v;
    if (!parseFinite(arg, v))
      return false;
    values.push_back(v);
  }
  if (kind == "trunc_normal" && values.size() == 2) {
    init = Init::truncNormal(values[0], values[1]);
    return true;
  }
  if (kind == "constant" && values.size() == 1) {
    init = Init::constant(values[0]);
    return true;
  }
  if (kind == "values") {
    init = Init::fromValues(std::vector<float>(values.begin(), values.end()));
    return true;
  }
  return false;
}

} // namespace

std::string toString(const Init &init) {
  switch (init.kind) {
  case Init::Kind::TruncNormal:
    return "trunc_normal(" + formatNumber(init.stddev) + "," +
           formatNumber(init.clip) + ")";
  case Init::Kind::Constant:
    return "constant(" + formatNumber(init.value) + ")";
  case Init::Kind::Zeros:
    return "zeros";
  case Init::Kind::Values: {
    std::string text = "values(";
    for (size_t i = 0; i < init.values.size(); ++i)
      text += (i ? "," : "") + formatNumber(init.values[i]);
    return text + ")";
  }
  }
  throw Error("unknown Init kind");
}

int64_t ParameterInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string formatShapeText(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

const ParameterInfo &ParameterTable::add(std::string name,
                                         std::vector<int64_t> shape, Init init,
                                         bool decay) {
  if (name.empty())
    throw InputError("parameter with an empty name");
  for (char c : name)
    if (!isNameChar(c))
      throw InputError("parameter name '" + name +
                       "' may use only letters, digits, '_', '.' and '-'");
  // Checkpoints store the AdamW moments under these prefixes.
  if (name.starts_with("optim.") || name == "__metadata__")
    throw InputError("parameter name '" + name +
                     "' is reserved for checkpoint bookkeeping; rename it");
  if (find(name))
    throw InputError("parameter '" + name + "' is declared twice");
  // Bounding each dimension and the product keeps every size computation
  // (bytes, offsets) far from int64 overflow.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 1 || d > (int64_t(1) << 40))
      throw InputError("parameter '" + name + "' has shape " +
                       formatShape(shape) +
                       "; every dimension must be between 1 and 2^40");
    n *= d;
    if (n > (int64_t(1) << 40))
      throw InputError("parameter '" + name + "' has shape " +
                       formatShape(shape) + ", more than 2^40 elements");
  }
  // Truncation redraws out-of-range values: at clip = std/2 already 62% of
  // normal draws are redrawn, and tighter clips make init arbitrarily slow
  // for a distribution that is nearly uniform anyway.
  if (init.kind == Init::Kind::TruncNormal &&
      !(init.stddev > 0 && std::isfinite(init.stddev) &&
        std::isfinite(init.clip) && init.clip >= 0.5 * init.stddev))
    throw InputError("parameter '" + name + "' has init " + toString(init) +
                     "; std must be positive and clip at least std/2");
  if (init.kind == Init::Kind::Constant && !std::isfinite(init.value))
    throw InputError("parameter '" + name + "' has a non-finite constant init");
  if (init.kind == Init::Kind::Values &&
      (int64_t(init.values.size()) != n ||
       !std::all_of(init.values.begin(), init.values.end(),
                    [](float v) { return std::isfinite(v); })))
    throw InputError("parameter '" + name + "' has shape " +
                     formatShape(shape) + " but " +
                     std::to_string(init.values.size()) +
                     " initial values, or a non-finite one");
  ParameterInfo info{std::move(name), std::move(shape), total, init, decay};
  total = alignUp(total + n);
  params.push_back(std::move(info));
  return params.back();
}

const ParameterInfo *ParameterTable::find(std::string_view name) const {
  for (const ParameterInfo &p : params)
    if (p.name == name)
      return &p;
  return nullptr;
}

const ParameterInfo &ParameterTable::get(std::string_view name) const {
  if (const ParameterInfo *p = find(name))
    return *p;
  throw Error("no parameter named '" + std::string(name) + "'");
}

int64_t ParameterTable::numParameters() const {
  int64_t n = 0;
  for (const ParameterInfo &p : params)
    n += p.numElements();
  return n;
}

std::string ParameterTable::toText() const {
  std::string text;
  for (const ParameterInfo &p : params)
    text += "param " + p.name + " shape=" + formatShapeText(p.shape) +
            " offset=" + std::to_string(p.offset) +
            " init=" + toString(p.init) + " decay=" + (p.decay ? "1" : "0") +
            "\n";
  return text;
}

void ParameterTable::parseLine(std::string_view line,
                               const std::string &location) {
  auto fail = [&](const std::string &what) -> InputError {
    return InputError(location + ": " + what);
  };
  std::vector<std::string_view> words;
  for (size_t pos = 0; pos < line.size();) {
    size_t start = line.find_first_not_of(" \t", pos);
    if (start == std::string_view::npos)
      break;
    size_t end = std::min(line.find_first_of(" \t", start), line.size());
    words.push_back(line.substr(start, end - start));
    pos = end;
  }
  if (words.size() < 2 || words[0] != "param")
    throw fail("expected 'param <name> shape=... offset=... init=... "
               "decay=0|1', got '" +
               std::string(line) + "'");

  std::string name(words[1]);
  std::vector<int64_t> shape;
  int64_t offset = -1;
  Init init;
  bool decay = false;
  bool seen[4] = {false, false, false, false};
  static constexpr std::string_view keys[4] = {"shape", "offset", "init",
                                               "decay"};
  for (size_t i = 2; i < words.size(); ++i) {
    std::string_view word = words[i];
    size_t eq = word.find('=');
    std::string_view key = word.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? "" : word.substr(eq + 1);
    int k = 0;
    while (k < 4 && keys[k] != key)
      ++k;
    if (k == 4 || eq == std::string_view::npos)
      throw fail("parameter '" + name + "': unknown field '" +
                 std::string(word) +
                 "' (expected shape=, offset=, init=, decay=)");
    if (seen[k])
      throw fail("parameter '" + name + "': field '" + std::string(key) +
                 "' given twice");
    seen[k] = true;
    bool ok = true;
    if (key == "shape") {
      if (value != "scalar") {
        for (std::string_view dim : split(value, 'x')) {
          int64_t d;
          ok = ok && parseInt64(dim, d);
          shape.push_back(d);
        }
      }
    } else if (key == "offset") {
      ok = parseInt64(value, offset);
    } else if (key == "init") {
      ok = parseInit(value, init);
    } else {
      ok = value == "0" || value == "1";
      decay = value == "1";
    }
    if (!ok)
      throw fail("parameter '" + name + "': bad " + std::string(key) + " '" +
                 std::string(value) + "'" +
                 (key == "shape"   ? " (expected e.g. 64x64 or scalar)"
                  : key == "init"  ? " (expected trunc_normal(std,clip), "
                                     "constant(v), zeros or values(...))"
                  : key == "decay" ? " (expected 0 or 1)"
                                   : ""));
  }
  for (int k = 0; k < 4; ++k)
    if (!seen[k])
      throw fail("parameter '" + name + "': missing field '" +
                 std::string(keys[k]) + "='");

  // The layout rule lives in add(); a manifest that disagrees with it was
  // compiled against another rule and its kernels would read the wrong floats.
  if (offset != total)
    throw fail("parameter '" + name + "' has offset=" + std::to_string(offset) +
               " but the layout rule places it at " + std::to_string(total) +
               "; the manifest was written by an incompatible drc-compile, "
               "recompile the model");
  try {
    add(name, std::move(shape), init, decay);
  } catch (const InputError &e) {
    throw fail(e.what());
  }
}

ParameterTable ParameterTable::parse(std::string_view text,
                                     const std::string &fileName) {
  ParameterTable table;
  int lineNo = 0;
  for (std::string_view line : split(text, '\n')) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#')
      continue;
    table.parseLine(line, fileName + ":" + std::to_string(lineNo));
  }
  return table;
}

} // namespace drc
