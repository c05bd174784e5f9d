//===- Evaluation.cpp - Validation loss per domain -----------------------===//
#include "runtime/Evaluation.h"

#include "runtime/Error.h"

namespace drc {

JsonValue EvalResult::toJson() const {
  JsonValue out = JsonValue::object();
  out.set("val_loss", loss);
  if (nextTwoLoss)
    out.set("val_loss_next2", *nextTwoLoss);
  out.set("val_tokens", tokens);
  JsonValue perDomain = JsonValue::object();
  for (const DomainLoss &d : domains) {
    JsonValue entry = JsonValue::object();
    entry.set("val_loss", d.loss);
    if (d.nextTwoLoss)
      entry.set("val_loss_next2", *d.nextTwoLoss);
    entry.set("tokens", d.tokens);
    entry.set("unigram_entropy", d.unigramEntropy);
    perDomain.set(d.domain, std::move(entry));
  }
  out.set("domains", std::move(perDomain));
  return out;
}

EvalResult evaluate(ModelProgram &program, const float *params,
                    const Corpus &corpus, const BatchSampler &sampler) {
  int64_t rows = sampler.batchSize(), seqLen = sampler.sequenceLength();
  std::vector<int32_t> inputs(rows * seqLen), targets(rows * seqLen);
  EvalResult result;
  double total = 0, totalNextTwo = 0;
  bool nextTwo = program.hasNextTwoHead();
  sampler.requireValidationBatch();
  for (size_t d = 0; d < corpus.domains.size(); ++d) {
    size_t full = sampler.valWindowCount(d) / rows;
    double sum = 0, sumNextTwo = 0;
    for (size_t b = 0; b < full; ++b) {
      sampler.valBatch(d, b, inputs.data(), targets.data());
      float second = 0;
      sum += nextTwo
                 ? program.losses(params, inputs.data(), targets.data(), second)
                 : program.loss(params, inputs.data(), targets.data());
      sumNextTwo += second;
    }
    DomainLoss entry{corpus.domains[d].name, sum / full,
                     static_cast<int64_t>(full) * rows * seqLen,
                     corpus.domains[d].valUnigramEntropy, std::nullopt};
    if (nextTwo)
      entry.nextTwoLoss = sumNextTwo / full;
    total += entry.loss * entry.tokens;
    totalNextTwo += entry.nextTwoLoss.value_or(0) * entry.tokens;
    result.tokens += entry.tokens;
    result.domains.push_back(entry);
  }
  result.loss = total / result.tokens;
  if (nextTwo)
    result.nextTwoLoss = totalNextTwo / result.tokens;
  return result;
}

} // namespace drc
