//===- Probes.cpp - Layer-level probes of a trained model ----------------===//
#include "runtime/Probes.h"

#include "runtime/Checkpoint.h"
#include "runtime/Error.h"
#include "runtime/ParameterBuffer.h"
#include "runtime/Progress.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

namespace drc {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Sums and counts of a mean over tokens.
struct Mean {
  double sum = 0;
  int64_t count = 0;
  void add(double v) {
    sum += v;
    ++count;
  }
  double value() const { return count ? sum / count : kNaN; }
};

/// log-softmax of one row of logits, in double.
void logSoftmax(const float *logits, int64_t n, std::vector<double> &out) {
  out.resize(n);
  double top = *std::max_element(logits, logits + n), sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(double(logits[i]) - top);
  double log = top + std::log(sum);
  for (int64_t i = 0; i < n; ++i)
    out[i] = double(logits[i]) - log;
}

/// The indices of the five largest logits (fewer when the row is shorter).
std::vector<int64_t> top5(const float *logits, int64_t n) {
  std::vector<int64_t> index(n);
  std::iota(index.begin(), index.end(), 0);
  int64_t k = std::min<int64_t>(5, n);
  std::partial_sort(
      index.begin(), index.begin() + k, index.end(),
      [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  index.resize(k);
  return index;
}

double norm(const float *a, const float *b, int64_t w) { // |a - b|, b may be 0
  double s = 0;
  for (int64_t i = 0; i < w; ++i) {
    double d = double(a[i]) - (b ? double(b[i]) : 0.0);
    s += d * d;
  }
  return std::sqrt(s);
}

/// Each block's parameters by the name after "blocks.<b>.", for swaps.
using BlockParameters = std::map<std::string, const ParameterInfo *>;

std::vector<BlockParameters> blockParameters(const ParameterTable &table,
                                             int64_t blocks) {
  std::vector<BlockParameters> out(blocks);
  for (const ParameterInfo &p : table.parameters()) {
    std::string_view name = p.name;
    if (name.substr(0, 7) != "blocks.")
      continue;
    size_t dot = name.find('.', 7);
    if (dot == std::string_view::npos)
      continue;
    int64_t block = std::stoll(std::string(name.substr(7, dot - 7)));
    if (block >= 0 && block < blocks)
      out[block][std::string(name.substr(dot + 1))] = &p;
  }
  return out;
}

/// Exchanges the parameters of blocks i and j in `params`.
void swapBlocks(std::vector<float> &params, const BlockParameters &a,
                const BlockParameters &b) {
  for (const auto &[rest, p] : a) {
    const ParameterInfo *q = b.at(rest);
    std::swap_ranges(params.begin() + p->offset,
                     params.begin() + p->offset + p->numElements(),
                     params.begin() + q->offset);
  }
}

void checkSwappable(const std::vector<BlockParameters> &blocks) {
  for (size_t b = 1; b < blocks.size(); ++b) {
    bool same = blocks[b].size() == blocks[0].size();
    for (const auto &[rest, p] : blocks[0]) {
      auto it = blocks[b].find(rest);
      same = same && it != blocks[b].end() && it->second->shape == p->shape;
    }
    if (!same)
      throw Error("the swap probe exchanges blocks' parameters, but blocks 0 "
                  "and " +
                  std::to_string(b) +
                  " do not have the same parameter names and shapes");
  }
}

JsonValue numberOrNull(double v) {
  return std::isfinite(v) ? JsonValue(v) : JsonValue();
}

JsonValue vectorJson(const std::vector<double> &v) {
  JsonValue out = JsonValue::array();
  for (double x : v)
    out.push(numberOrNull(x));
  return out;
}

JsonValue matrixJson(const ProbeMatrix &m) {
  JsonValue out = JsonValue::array();
  for (int64_t r = 0; r < m.size; ++r) {
    JsonValue row = JsonValue::array();
    for (int64_t c = 0; c < m.size; ++c)
      row.push(numberOrNull(m.at(r, c)));
    out.push(std::move(row));
  }
  return out;
}

} // namespace

ProbeMatrix::ProbeMatrix(int64_t size)
    : size(size), values(size * size, kNaN) {}

int64_t ProbeResult::lateFirstBlock() const { return (blocks + 3) / 4; }

std::pair<int64_t, double> ProbeResult::latePairs(const ProbeMatrix &m,
                                                  double threshold) const {
  int64_t pairs = 0, above = 0;
  for (int64_t i = lateFirstBlock(); i < blocks; ++i)
    for (int64_t j = i + 1; j < blocks; ++j) {
      ++pairs;
      above += m.at(i, j) > threshold;
    }
  return {pairs, pairs ? double(above) / pairs : kNaN};
}

JsonValue ProbeResult::toJson() const {
  JsonValue out = JsonValue::object();
  out.set("step", step);
  out.set("blocks", blocks);
  out.set("tokens", tokens);
  out.set("loss", loss);
  out.set("angular_distance", matrixJson(angular));
  out.set("causal_score", matrixJson(causal));
  out.set("swap_score", matrixJson(swap));
  out.set("pruning", vectorJson(pruning));
  JsonValue lens = JsonValue::object();
  lens.set("loss", vectorJson(lensLoss));
  lens.set("kl", vectorJson(lensKL));
  lens.set("top5", vectorJson(lensTop5));
  out.set("logit_lens", std::move(lens));
  JsonValue late = JsonValue::object();
  late.set("first_block", lateFirstBlock());
  auto [pairs, causalAbove] = latePairs(causal, 0.45);
  late.set("pairs", pairs); // the same pairs for both scores
  late.set("causal_above_0.45", numberOrNull(causalAbove));
  late.set("swap_above_0.15", numberOrNull(latePairs(swap, 0.15).second));
  out.set("late_pairs", std::move(late));
  if (streams) {
    JsonValue maps = JsonValue::object();
    maps.set("streams", streams);
    maps.set("erank", vectorJson(erank));
    maps.set("amax_forward", vectorJson(amaxForward));
    maps.set("amax_backward", vectorJson(amaxBackward));
    out.set("stream_maps", std::move(maps));
  }
  if (!tasks.empty()) {
    JsonValue list = JsonValue::array();
    for (const DepthTaskResult &task : tasks)
      list.push(task.toJson());
    out.set("depth_tasks", std::move(list));
  }
  return out;
}

std::vector<double> singularValues(const std::vector<double> &m, int64_t n) {
  // Eigenvalues of the symmetric A = M^T M by cyclic Jacobi rotations.
  std::vector<double> a(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n; ++k)
        a[i * n + j] += m[k * n + i] * m[k * n + j];
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, diag = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        (i == j ? diag : off) += a[i * n + j] * a[i * n + j];
    if (off <= 1e-30 * std::max(diag, 1e-300))
      break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        double apq = a[p * n + q];
        if (apq == 0)
          continue;
        double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        double t = (theta >= 0 ? 1 : -1) /
                   (std::fabs(theta) + std::sqrt(theta * theta + 1));
        double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) { // columns p, q
          double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) { // rows p, q
          double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
      }
  }
  std::vector<double> sv(n);
  for (int64_t i = 0; i < n; ++i)
    sv[i] = std::sqrt(std::max(a[i * n + i], 0.0));
  std::sort(sv.rbegin(), sv.rend());
  return sv;
}

double effectiveRank(const std::vector<double> &m, int64_t n) {
  std::vector<double> sv = singularValues(m, n);
  double total = std::accumulate(sv.begin(), sv.end(), 0.0), entropy = 0;
  if (total <= 0)
    return 0;
  for (double s : sv)
    if (s > 0)
      entropy -= s / total * std::log(s / total);
  return std::exp(entropy);
}

ProbeResult runProbes(ProbeProgram &program, const float *params,
                      int64_t batches, const ProbeBatch &batch,
                      const std::function<void(int64_t, int64_t)> &progress) {
  const ProbeShape &shape = program.shape();
  const int64_t N = shape.tokens, L = shape.blocks, Z = shape.width,
                V = shape.vocab, n = shape.streams, depths = L + 1;
  if (batches < 1)
    throw InputError("the probes need at least one batch");
  std::vector<BlockParameters> blocks =
      blockParameters(program.parameters(), L);
  checkSwappable(blocks);

  std::vector<int32_t> inputs(N), targets(N);
  std::vector<float> states(N * depths * Z), lens(N * depths * V),
      maps(n ? N * 2 * L * n * n : 0), skipped(N * depths * Z);
  std::vector<float> swapped(params,
                             params + program.parameters().numElements());

  ProbeResult r;
  r.blocks = L;
  r.streams = n;
  r.angular = ProbeMatrix(depths);
  r.causal = ProbeMatrix(L);
  r.swap = ProbeMatrix(L);
  std::vector<Mean> angular(depths * depths), causal(L * L), lensLoss(depths),
      lensKL(depths), lensTop5(depths), erank(2 * L);
  std::vector<double> amaxF(2 * L, 0.0), amaxB(2 * L, 0.0);
  std::vector<double> skipLoss(L, 0.0), swapLoss(L * L, 0.0);
  double loss = 0;
  const int64_t calls = batches * (1 + L + L * (L - 1) / 2);
  int64_t done = 0;
  auto tick = [&] {
    if (progress)
      progress(++done, calls);
  };
  auto z = [&](const std::vector<float> &s, int64_t t, int64_t b) {
    return s.data() + (t * depths + b) * Z;
  };
  std::vector<double> logP, logQ, norms(depths), P(n * n), next(n * n);

  for (int64_t bi = 0; bi < batches; ++bi) {
    batch(bi, inputs.data(), targets.data());
    loss += program.probe(params, inputs.data(), targets.data(), states.data(),
                          lens.data(), maps.data());
    tick();
    for (int64_t t = 0; t < N; ++t) {
      // Angular distance between every two depth states.
      for (int64_t i = 0; i < depths; ++i)
        norms[i] = norm(z(states, t, i), nullptr, Z);
      for (int64_t i = 0; i < depths; ++i)
        for (int64_t j = i + 1; j < depths; ++j) {
          const float *a = z(states, t, i), *b = z(states, t, j);
          double dot = 0;
          for (int64_t w = 0; w < Z; ++w)
            dot += double(a[w]) * b[w];
          double na = norms[i], nb = norms[j];
          if (na == 0 || nb == 0)
            continue;
          double angle =
              std::acos(std::clamp(dot / (na * nb), -1.0, 1.0)) / M_PI;
          angular[i * depths + j].add(angle);
        }
      // Logit lens against the last depth.
      const float *last = lens.data() + (t * depths + L) * V;
      logSoftmax(last, V, logP);
      std::vector<int64_t> topLast = top5(last, V);
      for (int64_t b = 0; b < depths; ++b) {
        const float *row = lens.data() + (t * depths + b) * V;
        logSoftmax(row, V, logQ);
        lensLoss[b].add(-logQ[targets[t]]);
        double kl = 0;
        for (int64_t v = 0; v < V; ++v)
          kl += std::exp(logP[v]) * (logP[v] - logQ[v]);
        lensKL[b].add(kl);
        std::vector<int64_t> top = top5(row, V);
        int64_t shared = 0;
        for (int64_t v : top)
          shared += std::count(topLast.begin(), topLast.end(), v);
        lensTop5[b].add(double(shared) / double(top.size()));
      }
      // Composed stream maps P_{0->k} = T_{k-1} ... T_0.
      if (n) {
        std::fill(P.begin(), P.end(), 0.0);
        for (int64_t i = 0; i < n; ++i)
          P[i * n + i] = 1;
        for (int64_t k = 0; k < 2 * L; ++k) {
          const float *map = maps.data() + (t * 2 * L + k) * n * n;
          std::fill(next.begin(), next.end(), 0.0);
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j)
              for (int64_t m = 0; m < n; ++m)
                next[i * n + j] += double(map[i * n + m]) * P[m * n + j];
          P.swap(next);
          erank[k].add(effectiveRank(P, n));
          for (int64_t i = 0; i < n; ++i) {
            double row = 0, col = 0;
            for (int64_t j = 0; j < n; ++j) {
              row += std::fabs(P[i * n + j]);
              col += std::fabs(P[j * n + i]);
            }
            amaxF[k] = std::max(amaxF[k], row);
            amaxB[k] = std::max(amaxB[k], col);
          }
        }
      }
    }
    // Skip each block: the change of every later block's update.
    for (int64_t s = 0; s < L; ++s) {
      skipLoss[s] += program.skip(s, params, inputs.data(), targets.data(),
                                  skipped.data());
      tick();
      for (int64_t t = 0; t < N; ++t)
        for (int64_t b = s + 1; b < L; ++b) {
          double u = 0, diff = 0;
          for (int64_t w = 0; w < Z; ++w) {
            double ub = double(z(states, t, b + 1)[w]) - z(states, t, b)[w];
            double us = double(z(skipped, t, b + 1)[w]) - z(skipped, t, b)[w];
            u += ub * ub;
            diff += (us - ub) * (us - ub);
          }
          if (u > 0)
            causal[s * L + b].add(std::sqrt(diff / u));
        }
    }
    // Swap every pair of blocks.
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = i + 1; j < L; ++j) {
        swapBlocks(swapped, blocks[i], blocks[j]);
        swapLoss[i * L + j] +=
            program.loss(swapped.data(), inputs.data(), targets.data());
        swapBlocks(swapped, blocks[i], blocks[j]);
        tick();
      }
  }

  r.tokens = batches * N;
  r.loss = loss / batches;
  for (int64_t i = 0; i < depths; ++i) {
    r.angular.at(i, i) = 0;
    for (int64_t j = i + 1; j < depths; ++j)
      r.angular.at(i, j) = r.angular.at(j, i) = angular[i * depths + j].value();
    r.lensLoss.push_back(lensLoss[i].value());
    r.lensKL.push_back(lensKL[i].value());
    r.lensTop5.push_back(lensTop5[i].value());
  }
  for (int64_t s = 0; s < L; ++s) {
    r.pruning.push_back(skipLoss[s] / batches - r.loss);
    for (int64_t b = s + 1; b < L; ++b) {
      r.causal.at(s, b) = causal[s * L + b].value();
      r.swap.at(s, b) =
          std::fabs(swapLoss[s * L + b] / batches - r.loss) / r.loss;
    }
  }
  if (n)
    for (int64_t k = 0; k < 2 * L; ++k) {
      r.erank.push_back(erank[k].value());
      r.amaxForward.push_back(amaxF[k]);
      r.amaxBackward.push_back(amaxB[k]);
    }
  return r;
}

void checkProbeBatches(const ModelSpec &spec, const Corpus &corpus,
                       int64_t batches) {
  if (batches < 1)
    throw InputError("the probes need at least one batch");
  BatchSampler sampler(corpus, spec.train.batch, spec.model.seqLen,
                       spec.train.evalTokens);
  int64_t domains = int64_t(corpus.domains.size());
  for (int64_t d = 0; d < domains && d < batches; ++d) {
    int64_t needed = (batches - 1 - d) / domains + 1;
    int64_t full = int64_t(sampler.valWindowCount(d)) / spec.train.batch;
    if (full < needed)
      throw InputError("domain '" + corpus.domains[d].name + "' has " +
                       std::to_string(full) + " full validation batches; " +
                       std::to_string(batches) + " probe batches need " +
                       std::to_string(needed) +
                       " (probe fewer batches or raise [train] eval_tokens)");
  }
}

ProbeResult probeCheckpoint(ProbeProgram &program, const ModelSpec &spec,
                            const std::string &checkpoint, const Corpus &corpus,
                            int64_t batches, const std::string &label,
                            std::FILE *progress) {
  checkProbeBatches(spec, corpus, batches);
  std::vector<size_t> tasks = taskDomains(corpus);
  BatchSampler sampler(corpus, spec.train.batch, spec.model.seqLen,
                       spec.train.evalTokens);
  int64_t domains = int64_t(corpus.domains.size());
  ParameterBuffer params(program.parameters().numElements(), 0.0f);
  TrainState state = loadCheckpointWeights(
      checkpoint, program.parameters(), modelFingerprint(spec), params.data());
  // One progress line over the probes' forward passes and the tasks'.
  const size_t maxWindows = spec.train.evalTokens / spec.model.seqLen;
  std::vector<std::vector<size_t>> windows;
  int64_t taskCalls = 0;
  for (size_t d : tasks) {
    windows.push_back(
        taskWindows(corpus.domains[d], spec.model.seqLen, maxWindows));
    taskCalls += (int64_t(windows.back().size()) + spec.train.batch - 1) /
                 spec.train.batch;
  }
  ProgressLine::Options options;
  options.label = label;
  options.rateUnit = "";
  options.logIntervalS = 10;
  std::unique_ptr<ProgressLine> line;
  int64_t passes = 0;
  auto tick = [&](int64_t probePasses) {
    if (!line)
      line = std::make_unique<ProgressLine>(progress, probePasses + taskCalls,
                                            options);
    line->update(++passes, 0, "forward passes");
  };
  ProbeResult result = runProbes(
      program, params.data(), batches,
      [&](int64_t i, int32_t *inputs, int32_t *targets) {
        sampler.valBatch(i % domains, i / domains, inputs, targets);
      },
      [&](int64_t, int64_t total) { tick(total); });
  for (size_t i = 0; i < tasks.size(); ++i)
    result.tasks.push_back(runDepthTask(
        program, params.data(), corpus.domains[tasks[i]], windows[i],
        spec.model.seqLen, [&](int64_t, int64_t) { tick(0); }));
  if (line)
    line->finish();
  result.step = state.step;
  return result;
}

} // namespace drc
