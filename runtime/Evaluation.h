//===- Evaluation.h - Validation loss per domain ----------------*- C++ -*-===//
#ifndef DRC_RUNTIME_EVALUATION_H
#define DRC_RUNTIME_EVALUATION_H

#include "runtime/Corpus.h"
#include "runtime/Json.h"
#include "runtime/ModelProgram.h"

#include <optional>
#include <string>
#include <vector>

namespace drc {

struct DomainLoss {
  std::string domain;
  double loss = 0;           ///< mean next-token cross-entropy, nats
  int64_t tokens = 0;        ///< scored tokens
  double unigramEntropy = 0; ///< the domain's byte-unigram entropy, nats
  /// The next-2-token head's mean loss, for a model with one (VWN's MTP).
  std::optional<double> nextTwoLoss;
};

struct EvalResult {
  double loss = 0; ///< over all scored tokens of all domains
  int64_t tokens = 0;
  std::optional<double> nextTwoLoss; ///< likewise, with a next-2-token head
  std::vector<DomainLoss> domains;

  /// {"val_loss": ..., "val_tokens": ..., "domains": {name: {...}}}, and
  /// "val_loss_next2" overall and per domain with a next-2-token head
  JsonValue toJson() const;
};

/// Scores the full validation batches of every domain (a trailing partial
/// batch is left out, so every scored window counts once). Throws InputError
/// when a domain has no full batch.
EvalResult evaluate(ModelProgram &program, const float *params,
                    const Corpus &corpus, const BatchSampler &sampler);

} // namespace drc

#endif // DRC_RUNTIME_EVALUATION_H
