//===- Corpus.cpp - Multi-domain token corpus and batch sampling ----------===//
#include "runtime/Corpus.h"

#include "runtime/CounterRandom.h"
#include "runtime/Error.h"
#include "runtime/TokenShard.h"

#include <algorithm>
#include <cmath>
#include <fstream>

namespace fs = std::filesystem;

namespace drc {
namespace {

std::string quoted(const fs::path &path) { return "'" + path.string() + "'"; }

fs::directory_iterator listDirectory(const fs::path &directory) {
  std::error_code error;
  fs::directory_iterator entries(directory, error);
  if (error)
    throw InputError("cannot list " + quoted(directory) + ": " +
                     error.message());
  return entries;
}

enum class ShardSplit { None, Train, Val };

/// Classifies a file by the words of its name, see loadCorpus.
ShardSplit shardSplit(const fs::path &file) {
  if (file.extension() != ".bin")
    return ShardSplit::None;
  std::string stem = file.stem().string();
  bool train = false, val = false;
  size_t begin = 0;
  while (begin <= stem.size()) {
    size_t end = stem.find_first_of("_-.", begin);
    if (end == std::string::npos)
      end = stem.size();
    std::string_view word(stem.data() + begin, end - begin);
    train |= word == "train";
    val |= word == "val";
    begin = end + 1;
  }
  if (train && val)
    throw InputError("cannot tell whether " + quoted(file) +
                     " is a train or a val shard: its name has both words; "
                     "rename it train_NNNNNN.bin or val_NNNNNN.bin");
  if (!train && !val)
    throw InputError("cannot tell whether " + quoted(file) +
                     " is a train or a val shard: its name has neither word; "
                     "rename it train_NNNNNN.bin or val_NNNNNN.bin");
  return train ? ShardSplit::Train : ShardSplit::Val;
}

/// Orders one split's shards by name and loads them into `tokens`, checking
/// them against the vocabulary.
void loadSplit(const fs::path &directory, const std::string &split,
               std::vector<fs::path> &shards, uint32_t vocabSize,
               std::vector<uint16_t> &tokens) {
  if (shards.empty())
    throw InputError("corpus domain " + quoted(directory) + " has no " + split +
                     " shard; expected " + split +
                     "_000000.bin (build one with drc-data)");
  std::sort(shards.begin(), shards.end(),
            [](const fs::path &a, const fs::path &b) {
              return a.filename() < b.filename();
            });
  for (const fs::path &shard : shards) {
    std::vector<uint16_t> shardTokens = readTokenShard(shard);
    auto bad = std::find_if(shardTokens.begin(), shardTokens.end(),
                            [&](uint16_t token) { return token >= vocabSize; });
    if (bad != shardTokens.end())
      throw InputError(
          "token shard " + quoted(shard) + " has token " +
          std::to_string(*bad) + " at position " +
          std::to_string(bad - shardTokens.begin()) +
          ", outside the model's vocabulary of " + std::to_string(vocabSize) +
          " tokens; build the data with the model's tokenizer or raise "
          "[model] vocab");
    tokens.insert(tokens.end(), shardTokens.begin(), shardTokens.end());
  }
}

CorpusDomain loadDomain(const fs::path &directory, uint32_t vocabSize) {
  CorpusDomain domain;
  domain.name = directory.filename().string();
  domain.directory = directory;
  for (const fs::directory_entry &entry : listDirectory(directory)) {
    if (!entry.is_regular_file() ||
        entry.path().filename().string().starts_with("."))
      continue;
    switch (shardSplit(entry.path())) {
    case ShardSplit::Train:
      domain.trainShards.push_back(entry.path());
      break;
    case ShardSplit::Val:
      domain.valShards.push_back(entry.path());
      break;
    case ShardSplit::None:
      break;
    }
  }
  loadSplit(directory, "train", domain.trainShards, vocabSize, domain.train);
  loadSplit(directory, "val", domain.valShards, vocabSize, domain.val);
  domain.valUnigramEntropy = unigramEntropy(domain.val);
  std::ifstream task(directory / "TASK");
  if (task && std::getline(task, domain.task))
    domain.task.erase(domain.task.find_last_not_of(" \t\r") + 1);
  return domain;
}

} // namespace

size_t Corpus::trainTokens() const {
  size_t total = 0;
  for (const CorpusDomain &domain : domains)
    total += domain.train.size();
  return total;
}

Corpus loadCorpus(const fs::path &directory, uint32_t vocabSize) {
  std::error_code error;
  if (!fs::is_directory(directory, error))
    throw InputError("corpus directory " + quoted(directory) +
                     " does not exist or is not a directory; build it with "
                     "scripts/build-corpus or drc-data");
  if (vocabSize == 0 || vocabSize > 65536)
    throw InputError("vocabulary size " + std::to_string(vocabSize) +
                     " cannot be used with uint16 token shards in " +
                     quoted(directory) + "; it must be in 1..65536");

  Corpus corpus;
  corpus.directory = directory;
  corpus.vocabSize = vocabSize;
  std::vector<fs::path> domainDirectories;
  for (const fs::directory_entry &entry : listDirectory(directory))
    if (entry.is_directory() &&
        !entry.path().filename().string().starts_with("."))
      domainDirectories.push_back(entry.path());
  if (domainDirectories.empty())
    throw InputError(
        "corpus directory " + quoted(directory) + " has no domain; expected " +
        quoted(directory / "<domain>") +
        " directories holding train_NNNNNN.bin and val_NNNNNN.bin");
  std::sort(domainDirectories.begin(), domainDirectories.end());
  for (const fs::path &domainDirectory : domainDirectories)
    corpus.domains.push_back(loadDomain(domainDirectory, vocabSize));
  return corpus;
}

double unigramEntropy(std::span<const uint16_t> tokens) {
  if (tokens.empty())
    return 0;
  std::vector<size_t> counts(65536, 0);
  for (uint16_t token : tokens)
    ++counts[token];
  double total = static_cast<double>(tokens.size());
  double entropy = 0;
  for (size_t count : counts)
    if (count != 0) {
      double p = static_cast<double>(count) / total;
      entropy -= p * std::log(p);
    }
  return entropy;
}

BatchSampler::BatchSampler(const Corpus &corpus, int batch, int seqLen,
                           size_t valMaxTokens)
    : corpus(corpus), batch(batch), seqLen(seqLen) {
  if (batch <= 0 || seqLen <= 0)
    throw InputError("batch size " + std::to_string(batch) +
                     " and sequence length " + std::to_string(seqLen) +
                     " must both be positive");
  if (corpus.domains.empty())
    throw InputError("corpus " + quoted(corpus.directory) + " has no domain");
  auto window = static_cast<size_t>(seqLen);
  size_t total = 0;
  for (const CorpusDomain &domain : corpus.domains) {
    if (domain.train.size() < window + 1)
      throw InputError(
          "corpus domain " + quoted(domain.directory) + " has " +
          std::to_string(domain.train.size()) +
          " train tokens, fewer than one window of sequence length " +
          std::to_string(seqLen) + " + 1; add data or shorten the sequence");
    total += domain.train.size();
    trainEnds.push_back(total);

    size_t windows = domain.val.empty() ? 0 : (domain.val.size() - 1) / window;
    windows = std::min(windows, valMaxTokens / window);
    if (windows == 0)
      throw InputError(
          "corpus domain " + quoted(domain.directory) + " has " +
          std::to_string(domain.val.size()) + " val tokens and a cap of " +
          (valMaxTokens == SIZE_MAX ? std::string("no")
                                    : std::to_string(valMaxTokens)) +
          " tokens: not one validation window of sequence length " +
          std::to_string(seqLen) +
          " + 1; add val data, raise the cap or shorten the sequence");
    valWindows.push_back(windows);
  }
}

TrainWindow BatchSampler::trainWindow(uint64_t seed, uint64_t step,
                                      int row) const {
  uint64_t position =
      uniformBelow(counterRandom(seed, step, row, 0), trainEnds.back());
  size_t domain =
      std::upper_bound(trainEnds.begin(), trainEnds.end(), position) -
      trainEnds.begin();
  // Starts 0 .. size-seqLen-1 leave room for the last target.
  size_t starts = corpus.domains[domain].train.size() - seqLen;
  return {domain, uniformBelow(counterRandom(seed, step, row, 1), starts)};
}

void BatchSampler::copyWindow(std::span<const uint16_t> tokens, size_t start,
                              int32_t *inputs, int32_t *targets) const {
  std::copy_n(tokens.begin() + start, seqLen, inputs);
  std::copy_n(tokens.begin() + start + 1, seqLen, targets);
}

void BatchSampler::trainBatch(uint64_t seed, uint64_t step, int32_t *inputs,
                              int32_t *targets) const {
  for (int row = 0; row < batch; ++row) {
    TrainWindow window = trainWindow(seed, step, row);
    size_t offset = static_cast<size_t>(row) * seqLen;
    copyWindow(corpus.domains[window.domain].train, window.start,
               inputs + offset, targets + offset);
  }
}

size_t BatchSampler::valWindowCount(size_t domain) const {
  return valWindows.at(domain);
}

void BatchSampler::requireValidationBatch() const {
  for (size_t d = 0; d < corpus.domains.size(); ++d)
    if (valWindowCount(d) < static_cast<size_t>(batch))
      throw InputError("domain '" + corpus.domains[d].name + "' has " +
                       std::to_string(valWindowCount(d)) +
                       " validation windows, fewer than one batch of " +
                       std::to_string(batch) +
                       "; raise [train] eval_tokens or add validation text");
}

size_t BatchSampler::valBatchCount(size_t domain) const {
  return (valWindowCount(domain) + batch - 1) / batch;
}

int BatchSampler::valBatch(size_t domain, size_t index, int32_t *inputs,
                           int32_t *targets) const {
  size_t windows = valWindowCount(domain);
  size_t first = index * batch;
  if (first >= windows)
    throw Error("validation batch " + std::to_string(index) + " of domain '" +
                corpus.domains[domain].name + "' is out of range: it has " +
                std::to_string(valBatchCount(domain)) + " batches");
  for (int row = 0; row < batch; ++row) {
    size_t window = (first + row) % windows;
    size_t offset = static_cast<size_t>(row) * seqLen;
    copyWindow(corpus.domains[domain].val, window * seqLen, inputs + offset,
               targets + offset);
  }
  return static_cast<int>(std::min<size_t>(batch, windows - first));
}

} // namespace drc
