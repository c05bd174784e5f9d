//===- Corpus.h - Multi-domain token corpus and batch sampling --*- C++ -*-===//
//
// A corpus is a directory of domains, each a directory of token shards:
//
//   DIR/<domain>/train_000000.bin ...   DIR/<domain>/val_000000.bin ...
//
// Training batches are a pure function of (seed, step): a resumed run sees
// exactly the batches an uninterrupted one would have, with no data cursor to
// checkpoint. Validation uses a fixed list of windows per domain, so every
// evaluation of every run scores the same tokens. docs/data.md describes the
// rules for users.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_CORPUS_H
#define DRC_RUNTIME_CORPUS_H

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace drc {

/// One domain: the concatenation of its train shards and of its val shards,
/// each in shard-name order.
struct CorpusDomain {
  std::string name; ///< the directory name, e.g. "prose"
  std::filesystem::path directory;
  std::vector<std::filesystem::path> trainShards; ///< sorted by name
  std::vector<std::filesystem::path> valShards;   ///< sorted by name
  std::vector<uint16_t> train;
  std::vector<uint16_t> val;
  /// Unigram entropy of `val` in nats: the loss of a model that knows only
  /// token frequencies, a floor any trained model should beat.
  double valUnigramEntropy = 0;
  /// The first line of the domain's TASK file, when it has one: the name of
  /// a task its validation text is scored on (runtime/DepthTask.h).
  std::string task;
};

struct Corpus {
  std::filesystem::path directory;
  uint32_t vocabSize = 0;
  std::vector<CorpusDomain> domains; ///< sorted by name

  /// Train tokens over all domains.
  size_t trainTokens() const;
};

/// Loads every domain under `directory` (subdirectories whose names do not
/// start with '.'). A `.bin` file is a train shard when `train` is one of the
/// words of its name split at '_', '-' and '.', a val shard when `val` is, so
/// llm.c's `fineweb_train_000001.bin` loads as well as drc-data's
/// `train_000000.bin`; a file TASK names the domain's task; other files are
/// ignored. Throws InputError when the
/// directory is missing, has no domain, a domain lacks train or val shards, a
/// shard name is ambiguous, a shard is malformed, or a token is >= vocabSize.
Corpus loadCorpus(const std::filesystem::path &directory, uint32_t vocabSize);

/// Entropy in nats of the empirical distribution of token values; 0 for an
/// empty span.
double unigramEntropy(std::span<const uint16_t> tokens);

/// Where one training row comes from.
struct TrainWindow {
  size_t domain; ///< index into Corpus::domains
  size_t start;  ///< inputs are train[start, start+T), targets one later
};

/// Cuts a corpus into fixed-shape batches of `batch` rows of `seqLen` tokens.
/// Inputs and targets are row-major int32 [batch, seqLen] with
/// targets[r][t] = the token after inputs[r][t].
class BatchSampler {
public:
  /// Checks that every domain can serve a window: at least seqLen + 1 train
  /// tokens and at least one validation window. `valMaxTokens` caps the
  /// validation targets per domain. Throws InputError naming the shards when
  /// a domain is too short.
  BatchSampler(const Corpus &corpus, int batch, int seqLen,
               size_t valMaxTokens = SIZE_MAX);

  int batchSize() const { return batch; }
  int sequenceLength() const { return seqLen; }

  /// The window of training row `row` at `step`: a domain drawn with
  /// probability proportional to its train token count, then a start drawn
  /// uniformly from the domain's seqLen+1-token windows, both from
  /// counterRandom(seed, step, row, draw). Pure: no state changes.
  TrainWindow trainWindow(uint64_t seed, uint64_t step, int row) const;

  /// Fills `inputs` and `targets` (batch * seqLen each) for `step`. A pure
  /// function of (seed, step): calling it again, in any order, in another
  /// process, gives the same batch.
  void trainBatch(uint64_t seed, uint64_t step, int32_t *inputs,
                  int32_t *targets) const;

  /// Validation windows of a domain: window w has inputs val[w*T, w*T+T) and
  /// targets val[w*T+1, w*T+T+1), so windows do not overlap and each scored
  /// token is scored once. There are min((valTokens-1)/T, valMaxTokens/T).
  size_t valWindowCount(size_t domain) const;

  /// ceil(valWindowCount / batch).
  size_t valBatchCount(size_t domain) const;

  /// Throws InputError naming the first domain with fewer validation
  /// windows than one batch: evaluation scores full batches only, so a run
  /// checks this before it trains rather than after.
  void requireValidationBatch() const;

  /// Fills batch `index` of a domain's validation windows and returns how
  /// many rows are real windows. Only the last batch can be partial; its
  /// remaining rows repeat the domain's first windows so that the buffers
  /// always hold valid tokens. Average the loss over the first rows only.
  int valBatch(size_t domain, size_t index, int32_t *inputs,
               int32_t *targets) const;

private:
  const Corpus &corpus;
  int batch;
  int seqLen;
  std::vector<size_t> trainEnds; ///< cumulative train tokens per domain
  std::vector<size_t> valWindows;

  void copyWindow(std::span<const uint16_t> tokens, size_t start,
                  int32_t *inputs, int32_t *targets) const;
};

} // namespace drc

#endif // DRC_RUNTIME_CORPUS_H
