//===- ModelSpec.cpp - Strict parsing of a model's .toml spec ------------===//
#include "runtime/ModelSpec.h"

#include "runtime/Error.h"

#include "runtime/TomlFields.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <vector>

namespace drc {
namespace {

/// A user's scheme file as an absolute path without "." or "..".
std::string absoluteSchemeFile(const std::string &file) {
  return std::filesystem::absolute(file).lexically_normal().string();
}

/// `[residual]`: `scheme` or `scheme_file`, and any other key is a value for
/// an option the scheme declares (checked when the scheme is instantiated).
void readResidual(const std::string &path, const toml::table &table,
                  ResidualSpec &residual) {
  bool named = false;
  for (const auto &[key, node] : table) {
    std::string k(key.str()), at = where(path, key.source());
    if (k == "scheme" || k == "scheme_file") {
      if (!node.is_string())
        throw InputError(at + ": [residual] " + k +
                         " must be a string, found " + typeName(node));
      if (named)
        throw InputError(at + ": [residual] sets both scheme and scheme_file; "
                              "keep one");
      named = true;
      residual.schemeWhere = at;
      std::string value = node.as_string()->get();
      if (k == "scheme") {
        residual.scheme = value;
        residual.schemeFile = librarySchemeFile(at, value);
        continue;
      }
      residual.scheme.clear();
      residual.schemeFile =
          userSchemeFile(at, value, path, "[residual] scheme_file", "spec");
      continue;
    }
    SchemeOption option{k, SchemeOption::Kind::Integer, 0, 0, at};
    if (node.is_integer()) {
      option.integer = node.as_integer()->get();
    } else if (node.is_floating_point()) {
      option.kind = SchemeOption::Kind::Number;
      option.number = node.as_floating_point()->get();
    } else if (node.is_boolean()) {
      option.kind = SchemeOption::Kind::Boolean;
      option.integer = node.as_boolean()->get();
    } else {
      throw InputError(at + ": [residual] " + k +
                       " must be an integer, a number or a boolean (a scheme "
                       "option), found " +
                       typeName(node));
    }
    residual.options.push_back(std::move(option));
  }
}

void validate(const ModelSpec &s, const KeyLocations &locations) {
  Validator require{s.path, locations};
  const ModelShape &m = s.model;
  require(m.vocab > 1, "[model] vocab must be at least 2");
  require(m.dModel > 0, "[model] d_model must be set to a positive integer");
  require(m.nLayer > 0, "[model] n_layer must be set to a positive integer");
  require(
      m.nHead > 0 && m.dModel % m.nHead == 0,
      "[model] n_head = " + std::to_string(m.nHead) +
          " must be positive and divide d_model = " + std::to_string(m.dModel));
  require((m.dModel / m.nHead) % 2 == 0,
          "[model] the head dimension d_model / n_head = " +
              std::to_string(m.dModel / m.nHead) + " must be even for RoPE");
  require(m.dFF > 0, "[model] d_ff must be positive");
  require(m.seqLen > 0, "[model] seq_len must be set to a positive integer");
  require(m.normEps >= 0, "[model] norm_eps must be non-negative");
  require(m.ropeTheta > 0, "[model] rope_theta must be positive");
  const TrainSpec &t = s.train;
  require(t.batch > 0, "[train] batch must be set to a positive integer");
  require(t.steps > 0, "[train] steps must be set to a positive integer");
  require(t.lr > 0, "[train] lr must be set to a positive number");
  require(t.warmupFraction >= 0 && t.warmupFraction < 1,
          "[train] warmup_fraction must be in [0, 1)");
  require(t.finalLrFraction >= 0 && t.finalLrFraction <= 1,
          "[train] final_lr_fraction must be in [0, 1]");
  require(t.beta1 >= 0 && t.beta1 < 1 && t.beta2 >= 0 && t.beta2 < 1,
          "[train] beta1 and beta2 must be in [0, 1)");
  require(t.adamEps > 0, "[train] adam_eps must be positive");
  require(t.weightDecay >= 0, "[train] weight_decay must be non-negative");
  require(t.gradClip > 0, "[train] grad_clip must be positive");
  require(t.initStd > 0, "[train] init_std must be positive");
  require(t.evalEvery > 0, "[train] eval_every must be positive");
  require(t.evalTokens >= m.seqLen,
          "[train] eval_tokens must be at least seq_len");
}

} // namespace

std::string schemeLibraryDirectory() {
  if (const char *dir = std::getenv("DRC_SCHEMES"))
    return dir;
  return DRC_SCHEMES_DIR;
}

std::string librarySchemeFile(const std::string &at, const std::string &name,
                              const std::string &what) {
  std::filesystem::path dir(schemeLibraryDirectory());
  std::filesystem::path file = dir / (name + ".mlir");
  if (name.find('/') == std::string::npos &&
      std::filesystem::is_regular_file(file))
    return file.string();
  std::vector<std::string> known;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".mlir")
      known.push_back(entry.path().stem().string());
  std::sort(known.begin(), known.end());
  throw InputError(at + ": " + what + " '" + name +
                   "' is not in the library (" + dir.string() +
                   "); available: " + joined(known) + suggestion(name, known) +
                   ", or set scheme_file = \"path.mlir\" for your own");
}

std::string userSchemeFile(const std::string &at, const std::string &value,
                           const std::string &file, const std::string &what,
                           const std::string &fileKind) {
  std::filesystem::path scheme(value);
  if (scheme.is_relative())
    scheme = std::filesystem::path(file).parent_path() / scheme;
  if (!std::filesystem::is_regular_file(scheme))
    throw InputError(at + ": " + what + " '" + value +
                     "' does not exist (looked for " + scheme.string() +
                     "; a relative path is relative to the " + fileKind + ")");
  return scheme.string();
}

int64_t defaultFFNWidth(int64_t dModel) {
  return 16 * ((8 * dModel + 47) / 48);
}

ModelSpec parseModelSpec(const std::string &text, const std::string &path) {
  toml::table root = parseToml(text, path);
  ModelSpec spec;
  spec.path = path;
  spec.text = text;
  ModelShape &m = spec.model;
  TrainSpec &t = spec.train;
  KeyLocations locations;
  bool dFFSet = false;
  int64_t dFF = 0;

  std::vector<Field> sections;
  auto section = [&](const std::string &name, std::vector<Field> fields) {
    return Field{name, "a table",
                 [&path, &locations, name, fields](const toml::node &n) {
                   if (!n.is_table())
                     return false;
                   readTable(path, name, *n.as_table(), fields, locations);
                   return true;
                 }};
  };
  Field dFFField = integer("d_ff", dFF);
  dFFField.read = [&, inner = dFFField.read](const toml::node &n) {
    dFFSet = true;
    return inner(n);
  };
  sections.push_back(section(
      "model",
      {integer("vocab", m.vocab), integer("d_model", m.dModel),
       integer("n_layer", m.nLayer), integer("n_head", m.nHead), dFFField,
       integer("seq_len", m.seqLen), number("norm_eps", m.normEps),
       number("rope_theta", m.ropeTheta)}));
  sections.push_back({"residual", "a table", [&](const toml::node &n) {
                        if (!n.is_table())
                          return false;
                        readResidual(path, *n.as_table(), spec.residual);
                        return true;
                      }});
  sections.push_back(section(
      "train",
      {integer("batch", t.batch), integer("steps", t.steps), number("lr", t.lr),
       number("warmup_fraction", t.warmupFraction),
       number("final_lr_fraction", t.finalLrFraction),
       number("weight_decay", t.weightDecay), number("beta1", t.beta1),
       number("beta2", t.beta2), number("adam_eps", t.adamEps),
       number("grad_clip", t.gradClip), number("init_std", t.initStd),
       integer("eval_every", t.evalEvery), integer("eval_tokens", t.evalTokens),
       unsignedInteger("seed", t.seed)}));
  readTable(path, "top level", root, sections, locations);
  for (const char *required : {"model", "train"})
    if (!root.contains(required))
      throw InputError(path + ": missing the [" + std::string(required) +
                       "] table (docs/spec.md lists its keys)");

  m.dFF = dFFSet ? dFF : defaultFFNWidth(m.dModel);
  if (spec.residual.schemeFile.empty())
    spec.residual.schemeFile = librarySchemeFile(path, spec.residual.scheme);
  validate(spec, locations);
  return spec;
}

ModelSpec loadModelSpec(const std::string &path) {
  return parseModelSpec(readInputFile(path, "model spec"), path);
}

std::string runSpecText(const ModelSpec &spec, int64_t steps, uint64_t seed) {
  toml::table root = parseToml(spec.text, spec.path);
  if (toml::table *residual = root["residual"].as_table();
      residual && residual->contains("scheme_file"))
    residual->insert_or_assign("scheme_file",
                               absoluteSchemeFile(spec.residual.schemeFile));
  if (!root["train"].is_table())
    root.insert_or_assign("train", toml::table{});
  toml::table &train = *root["train"].as_table();
  train.insert_or_assign("steps", steps);
  train.insert_or_assign("seed", static_cast<int64_t>(seed));
  return "# The run's spec: " + spec.path + " with the run's steps and seed\n" +
         tomlText(root) + "\n";
}

std::string specDifference(const std::string &recorded,
                           const std::string &recordedPath,
                           const std::string &given) {
  toml::table ran = parseToml(recorded, recordedPath);
  toml::table now = parseToml(given, "the given spec");
  auto same = [](const toml::node &a, const toml::node &b) {
    toml::table one, other;
    one.insert("v", a);
    other.insert("v", b);
    return one == other;
  };
  auto names = [](const toml::table &a, const toml::table &b) {
    std::set<std::string> all;
    for (const toml::table *t : {&a, &b})
      for (const auto &[name, node] : *t)
        all.insert(std::string(name.str()));
    return all;
  };
  const toml::table none;
  for (const std::string &section : names(ran, now)) {
    const toml::table *a = ran[section].as_table(),
                      *b = now[section].as_table();
    for (const std::string &key : names(a ? *a : none, b ? *b : none)) {
      const toml::node *was = a ? a->get(key) : nullptr;
      const toml::node *is = b ? b->get(key) : nullptr;
      std::string name = "[" + section + "] " + key;
      if (!was)
        return "no " + name + ", but this command sets it to " +
               tomlValueText(*is);
      if (!is)
        return name + " = " + tomlValueText(*was) +
               ", but this command leaves it unset";
      if (!same(*was, *is))
        return name + " = " + tomlValueText(*was) +
               ", but this command gives " + tomlValueText(*is);
    }
  }
  return "";
}

std::string modelFingerprint(const ModelSpec &spec) {
  const ModelShape &m = spec.model;
  std::ostringstream os;
  os << (spec.residual.scheme.empty()
             ? "file:" + absoluteSchemeFile(spec.residual.schemeFile)
             : spec.residual.scheme);
  for (const SchemeOption &o : spec.residual.options)
    os << ";" << o.name << "="
       << (o.kind == SchemeOption::Kind::Number ? std::to_string(o.number)
                                                : std::to_string(o.integer));
  os << ";V=" << m.vocab << ";d=" << m.dModel << ";L=" << m.nLayer
     << ";H=" << m.nHead << ";ff=" << m.dFF;
  return os.str();
}

std::string programFingerprint(const ModelSpec &spec) {
  const TrainSpec &t = spec.train;
  char optimizer[160];
  std::snprintf(optimizer, sizeof optimizer,
                ";tokens=%lld;beta1=%.15g;beta2=%.15g;eps=%.15g;wd=%.15g;"
                "clip=%.15g",
                static_cast<long long>(spec.tokensPerStep()), t.beta1, t.beta2,
                t.adamEps, t.weightDecay, t.gradClip);
  return modelFingerprint(spec) + optimizer;
}

} // namespace drc
