//===- SweepSpec.cpp - A width-depth sweep's .toml grid -------------------===//
#include "runtime/SweepSpec.h"

#include "runtime/Error.h"
#include "runtime/TomlFields.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace drc {
namespace {

/// Keys of the shared tables that the sweep sets per cell, and why.
const std::vector<std::pair<std::string, std::string>> kSolvedModelKeys = {
    {"d_model", "is solved per depth from [sweep] budget"},
    {"n_layer", "comes from [sweep] n_layer"},
    {"d_ff",
     "follows d_model (8d/3 rounded up to 16), as the solver counts it"},
};
const std::vector<std::pair<std::string, std::string>> kSolvedTrainKeys = {
    {"steps", "follows from [sweep] tokens_per_param and the budget"},
    {"seed", "comes from [sweep] seeds"},
};

/// `table` without the keys a cell sets; each is an error naming its source.
toml::table
sharedTable(const std::string &path, const std::string &name,
            const toml::table &table,
            const std::vector<std::pair<std::string, std::string>> &solved) {
  for (const auto &[key, why] : solved)
    if (const toml::node *n = table.get(key))
      throw InputError(where(path, n->source()) + ": [" + name + "] " + key +
                       " " + why + " in a sweep; remove it");
  return table;
}

/// An integer key of a shared table, 0 when absent or not an integer (the
/// callers then say it must be set).
int64_t integerOf(const toml::table &table, const std::string &key) {
  return table.get(key) && table.get(key)->is_integer()
             ? table.get(key)->as_integer()->get()
             : 0;
}

/// A number or a non-empty array of numbers, all positive.
std::vector<double> positiveNumbers(const std::string &path,
                                    const std::string &what,
                                    const toml::node &n) {
  std::vector<double> out;
  auto add = [&](const toml::node &v) {
    double x = v.is_floating_point() ? v.as_floating_point()->get()
               : v.is_integer() ? static_cast<double>(v.as_integer()->get())
                                : std::nan("");
    if (!(x > 0))
      throw InputError(where(path, v.source()) + ": " + what +
                       " must be a positive number or an array of them, "
                       "found " +
                       typeName(v));
    out.push_back(x);
  };
  if (const toml::array *a = n.as_array()) {
    for (const toml::node &v : *a)
      add(v);
    if (out.empty())
      throw InputError(where(path, n.source()) + ": " + what +
                       " must not be empty");
  } else {
    add(n);
  }
  return out;
}

std::vector<int64_t> positiveIntegers(const std::string &path,
                                      const std::string &what,
                                      const toml::node &n, int64_t min) {
  std::vector<int64_t> out;
  const toml::array *a = n.as_array();
  if (!a || a->empty())
    throw InputError(where(path, n.source()) + ": " + what +
                     " must be a non-empty array of integers, found " +
                     typeName(n));
  for (const toml::node &v : *a) {
    if (!v.is_integer() || v.as_integer()->get() < min)
      throw InputError(where(path, v.source()) + ": " + what +
                       " must hold integers of at least " +
                       std::to_string(min) + ", found " +
                       (v.is_integer() ? std::to_string(v.as_integer()->get())
                                       : typeName(v)));
    out.push_back(v.as_integer()->get());
  }
  return out;
}

void readSweepTable(const std::string &path, const toml::table &table,
                    SweepSpec &sweep) {
  bool isoBackbone = false;
  const std::vector<std::string> known = {"budget",  "iso_backbone",
                                          "n_layer", "probe_batches",
                                          "seeds",   "tokens_per_param"};
  for (const auto &[key, node] : table) {
    std::string k(key.str()), at = where(path, node.source());
    if (k == "budget") {
      if (!node.is_integer() || node.as_integer()->get() <= 0)
        throw InputError(at +
                         ": [sweep] budget must be a positive integer "
                         "(parameters), found " +
                         typeName(node));
      sweep.budget = node.as_integer()->get();
      sweep.budgetWhere = at;
    } else if (k == "iso_backbone") {
      if (!node.is_boolean())
        throw InputError(at +
                         ": [sweep] iso_backbone must be a boolean, "
                         "found " +
                         typeName(node));
      isoBackbone = node.as_boolean()->get();
    } else if (k == "n_layer") {
      sweep.nLayers = positiveIntegers(path, "[sweep] n_layer", node, 1);
    } else if (k == "seeds") {
      for (int64_t s : positiveIntegers(path, "[sweep] seeds", node, 0))
        sweep.seeds.push_back(static_cast<uint64_t>(s));
    } else if (k == "probe_batches") {
      if (!node.is_integer() || node.as_integer()->get() < 0)
        throw InputError(at +
                         ": [sweep] probe_batches must be an integer >= 0 "
                         "(0: no layer probes), found " +
                         typeName(node));
      sweep.probeBatches = node.as_integer()->get();
    } else if (k == "tokens_per_param") {
      std::vector<double> v =
          positiveNumbers(path, "[sweep] tokens_per_param", node);
      if (v.size() != 1)
        throw InputError(at + ": [sweep] tokens_per_param must be one number");
      sweep.tokensPerParam = v.front();
    } else {
      throw InputError(where(path, key.source()) + ": unknown key '" + k +
                       "' in [sweep]" + suggestion(k, known) +
                       " (known keys: " + joined(known) + ")");
    }
  }
  sweep.budgetMode = isoBackbone ? Budget::Backbone : Budget::Total;
  if (!sweep.budget)
    throw InputError(path + ": [sweep] budget must be set (the parameter "
                            "count every depth is solved to)");
  if (sweep.nLayers.empty())
    throw InputError(path + ": [sweep] n_layer must list the depths to try");
  if (sweep.seeds.empty())
    sweep.seeds = {1};
  std::set<int64_t> depths(sweep.nLayers.begin(), sweep.nLayers.end());
  if (depths.size() != sweep.nLayers.size())
    throw InputError(path + ": [sweep] n_layer lists a depth twice");
}

/// A `[[scheme]]` entry: `label`, `lr` and `baseline` are the sweep's; every
/// other key
/// is the cell specs' [residual] table (scheme or scheme_file, and options).
SweepScheme readScheme(const std::string &path, const toml::table &entry,
                       double defaultLr) {
  SweepScheme scheme;
  scheme.where = where(path, entry.source());
  toml::table residual;
  for (const auto &[key, node] : entry) {
    std::string k(key.str()), at = where(path, node.source());
    if (k == "label") {
      if (!node.is_string() || node.as_string()->get().empty())
        throw InputError(at + ": [[scheme]] label must be a non-empty string");
      scheme.label = node.as_string()->get();
    } else if (k == "lr") {
      scheme.lrs = positiveNumbers(path, "[[scheme]] lr", node);
    } else if (k == "baseline") {
      if (!node.is_string() || node.as_string()->get().empty())
        throw InputError(at + ": [[scheme]] baseline must be the label of "
                              "another entry");
      scheme.baseline = node.as_string()->get();
      scheme.baselineWhere = at;
    } else if (k == "scheme") {
      if (!node.is_string())
        throw InputError(at + ": [[scheme]] scheme must be a string, found " +
                         typeName(node));
      // The library has it, or the error lists what it has.
      librarySchemeFile(at, node.as_string()->get(), "[[scheme]] scheme");
      residual.insert(k, node);
    } else if (k == "scheme_file") {
      if (!node.is_string())
        throw InputError(at +
                         ": [[scheme]] scheme_file must be a string, "
                         "found " +
                         typeName(node));
      // Absolute: the cell specs live elsewhere.
      residual.insert(k, std::filesystem::absolute(
                             userSchemeFile(at, node.as_string()->get(), path,
                                            "[[scheme]] scheme_file", "grid"))
                             .string());
    } else {
      residual.insert(k, node); // a scheme option, checked when compiled
    }
  }
  const toml::node *name = residual.get("scheme");
  const toml::node *file = residual.get("scheme_file");
  if (!name && !file)
    throw InputError(scheme.where + ": [[scheme]] needs scheme = \"NAME\" "
                                    "(a library scheme) or scheme_file = "
                                    "\"path.mlir\"");
  if (name && file)
    throw InputError(scheme.where +
                     ": [[scheme]] sets both scheme and scheme_file; keep one");
  if (scheme.label.empty())
    scheme.label =
        name ? name->as_string()->get()
             : std::filesystem::path(file->as_string()->get()).stem().string();
  if (scheme.lrs.empty())
    scheme.lrs = {defaultLr};
  scheme.residualToml = tomlText(residual);
  return scheme;
}

/// "0.002", "5e-04": short and exact enough to tell grid points apart.
std::string formatLr(double lr) {
  std::ostringstream os;
  os << lr;
  return os.str();
}

} // namespace

SweepSpec parseSweepSpec(const std::string &text, const std::string &path) {
  toml::table root = parseToml(text, path);
  SweepSpec sweep;
  sweep.path = path;
  const std::vector<std::string> known = {"sweep", "model", "train", "scheme"};
  for (const auto &[key, node] : root) {
    std::string k(key.str());
    if (std::find(known.begin(), known.end(), k) == known.end())
      throw InputError(where(path, key.source()) + ": unknown key '" + k +
                       "' at the top level of a sweep grid" +
                       suggestion(k, known) +
                       " (known: [sweep], [model], "
                       "[train], [[scheme]])");
    bool wantsArray = k == "scheme";
    if (wantsArray ? !node.is_array_of_tables() : !node.is_table())
      throw InputError(where(path, node.source()) + ": " + k + " must be " +
                       (wantsArray ? "an array of tables ([[scheme]])"
                                   : "a table ([" + k + "])") +
                       ", found " + typeName(node));
  }
  for (const char *required : {"sweep", "model", "train", "scheme"})
    if (!root.contains(required))
      throw InputError(path + ": a sweep grid needs " +
                       (std::string(required) == "scheme"
                            ? std::string("at least one [[scheme]] entry")
                            : "the [" + std::string(required) + "] table") +
                       " (docs/bench.md)");
  readSweepTable(path, *root["sweep"].as_table(), sweep);
  toml::table model =
      sharedTable(path, "model", *root["model"].as_table(), kSolvedModelKeys);
  toml::table train =
      sharedTable(path, "train", *root["train"].as_table(), kSolvedTrainKeys);
  sweep.vocab = integerOf(model, "vocab");
  if (!sweep.vocab)
    sweep.vocab = ModelShape().vocab;
  sweep.nHead = integerOf(model, "n_head");
  sweep.seqLen = integerOf(model, "seq_len");
  sweep.batch = integerOf(train, "batch");
  for (auto [value, what] : {std::pair{sweep.nHead, "[model] n_head"},
                             std::pair{sweep.seqLen, "[model] seq_len"},
                             std::pair{sweep.batch, "[train] batch"}})
    if (value <= 0)
      throw InputError(path + ": " + what +
                       " must be set to a positive integer");
  if (const toml::node *lr = train.get("lr"))
    sweep.lr = positiveNumbers(path, "[train] lr", *lr).front();
  train.erase("lr");
  sweep.modelToml = tomlText(model);
  sweep.trainToml = tomlText(train);
  std::set<std::string> labels;
  for (const toml::node &entry : *root["scheme"].as_array()) {
    SweepScheme scheme = readScheme(path, *entry.as_table(), sweep.lr);
    if (scheme.lrs.front() <= 0)
      throw InputError(scheme.where + ": [[scheme]] " + scheme.label +
                       " has no learning rate: set lr here or in [train]");
    if (!labels.insert(scheme.label).second)
      throw InputError(scheme.where + ": [[scheme]] label '" + scheme.label +
                       "' is used twice; give each entry its own label");
    sweep.schemes.push_back(std::move(scheme));
  }
  for (const SweepScheme &scheme : sweep.schemes)
    if (!scheme.baseline.empty() &&
        (scheme.baseline == scheme.label || !labels.count(scheme.baseline))) {
      std::string all;
      for (const std::string &label : labels)
        all += (all.empty() ? "" : ", ") + label;
      throw InputError(
          scheme.baselineWhere + ": [[scheme]] " + scheme.label +
          " has baseline '" + scheme.baseline + "', which " +
          (scheme.baseline == scheme.label
               ? std::string("is the entry itself")
               : "is not the label of an entry (labels: " + all + ")"));
    }
  return sweep;
}

SweepSpec loadSweepSpec(const std::string &path) {
  return parseSweepSpec(readInputFile(path, "sweep grid"), path);
}

std::vector<SweepCell> planSweep(const SweepSpec &sweep) {
  std::vector<SolvedShape> shapes;
  for (int64_t nLayer : sweep.nLayers) {
    SolvedShape shape = solveShape(sweep.budget, nLayer, sweep.nHead,
                                   sweep.vocab, sweep.budgetMode);
    if (!shape.withinTolerance()) {
      std::ostringstream os;
      os << sweep.budgetWhere << ": [sweep] budget = " << sweep.budget
         << " has no d_model within ±3% at n_layer = " << nLayer
         << ": the closest, d_model = " << shape.dModel << ", has "
         << shape.params << " parameters (" << (shape.deviation > 0 ? "+" : "")
         << 100.0 * shape.deviation
         << "%); change the budget or drop that depth";
      throw InputError(os.str());
    }
    shapes.push_back(shape);
  }
  int64_t tokensPerStep = sweep.batch * sweep.seqLen;
  double tokens = sweep.tokensPerParam * static_cast<double>(sweep.budget);
  int64_t steps = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(tokens / tokensPerStep)));
  std::vector<SweepCell> cells;
  for (const SweepScheme &scheme : sweep.schemes)
    for (size_t depth = 0; depth < sweep.nLayers.size(); ++depth)
      for (double lr : scheme.lrs)
        for (uint64_t seed : sweep.seeds) {
          SweepCell cell;
          cell.scheme = scheme.label;
          cell.nLayer = sweep.nLayers[depth];
          cell.shape = shapes[depth];
          cell.lr = lr;
          cell.seed = seed;
          cell.steps = steps;
          cell.id = scheme.label + "-L" + std::to_string(cell.nLayer) + "-lr" +
                    formatLr(lr) + "-s" + std::to_string(seed);
          std::ostringstream spec;
          spec << "# cell " << cell.id << " of a drc-bench sweep\n[model]\n"
               << sweep.modelToml << "\nd_model = " << cell.shape.dModel
               << "\nn_layer = " << cell.nLayer << "\n\n[residual]\n"
               << scheme.residualToml << "\n\n[train]\n"
               << sweep.trainToml << "\nsteps = " << steps
               << "\nlr = " << tomlValueText(toml::value<double>(lr))
               << "\nseed = " << seed << "\n";
          cell.specToml = spec.str();
          cell.spec = parseModelSpec(cell.specToml,
                                     sweep.path + " (cell " + cell.id + ")");
          cells.push_back(std::move(cell));
        }
  return cells;
}

} // namespace drc
