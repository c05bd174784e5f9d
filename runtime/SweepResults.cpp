//===- SweepResults.cpp - A sweep's results.jsonl -------------------------===//
#include "runtime/SweepResults.h"

#include "runtime/AtomicFile.h"
#include "runtime/Error.h"

#include <fstream>

namespace drc {

SweepResults::SweepResults(std::filesystem::path file) : path(std::move(file)) {
  std::ifstream in(path);
  if (!in)
    return;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty())
      continue;
    JsonValue record = parseJson(line, path.string(), number);
    const JsonValue *cell = record.find("cell");
    if (!record.isObject() || !cell || !cell->isString())
      throw InputError(path.string() + ":" + std::to_string(number) +
                       ": not a drc-bench result record (no \"cell\")");
    if (!records.count(cell->asString()))
      order.push_back(cell->asString());
    records[cell->asString()] = std::move(record);
    text += line + "\n";
  }
}

const JsonValue *SweepResults::find(const SweepCell &cell) const {
  auto it = records.find(cell.id);
  if (it == records.end())
    return nullptr;
  const JsonValue *spec = it->second.find("spec");
  std::string difference =
      spec && spec->isString()
          ? specDifference(spec->asString(),
                           path.string() + " (cell " + cell.id + ")",
                           cell.specToml)
          : "no spec";
  if (!difference.empty())
    throw InputError(path.string() + ": holds a result for cell " + cell.id +
                     " of a different spec (it has " + difference +
                     ": another grid, or this one changed); use another "
                     "--out directory");
  return &it->second;
}

void SweepResults::add(const SweepCell &cell, int64_t parameters,
                       const EvalResult &final, double wallSeconds,
                       double tokensPerSecond) {
  JsonValue r = JsonValue::object();
  r.set("cell", cell.id);
  r.set("scheme", cell.scheme);
  JsonValue options = JsonValue::object();
  for (const SchemeOption &o : cell.spec.residual.options)
    options.set(o.name, o.kind == SchemeOption::Kind::Number
                            ? JsonValue(o.number)
                        : o.kind == SchemeOption::Kind::Boolean
                            ? JsonValue(o.integer != 0)
                            : JsonValue(o.integer));
  r.set("options", std::move(options));
  r.set("n_layer", cell.nLayer);
  r.set("d_model", cell.shape.dModel);
  r.set("d_over_l", static_cast<double>(cell.shape.dModel) /
                        static_cast<double>(cell.nLayer));
  r.set("parameters", parameters);
  r.set("budget_parameters", cell.shape.params);
  r.set("tokens", cell.steps * cell.spec.tokensPerStep());
  r.set("lr", cell.lr);
  r.set("seed", cell.seed);
  r.set("val_loss", final.loss);
  if (final.nextTwoLoss)
    r.set("next2_val_loss", *final.nextTwoLoss);
  JsonValue domains = JsonValue::object();
  for (const DomainLoss &d : final.domains)
    domains.set(d.domain, d.loss);
  r.set("domain_val_loss", std::move(domains));
  r.set("wall_s", wallSeconds);
  r.set("tokens_per_s", tokensPerSecond);
  r.set("spec", cell.specToml);
  text += toJson(r) + "\n";
  writeFileAtomically(path.string(), text);
  if (!records.count(cell.id))
    order.push_back(cell.id);
  records[cell.id] = std::move(r);
}

std::vector<JsonValue> SweepResults::list() const {
  std::vector<JsonValue> out;
  for (const std::string &id : order)
    out.push_back(records.at(id));
  return out;
}

} // namespace drc
