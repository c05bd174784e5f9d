//===- PreLnReference.cpp - Double-precision Pre-LN reference -------------===//
//
// Written straight from ARCHITECTURES.md §1 with one loop per sum, so that it
// can be checked by reading. Speed is irrelevant: it runs on test-sized models.
//
//===----------------------------------------------------------------------===//
#include "test/reference/PreLnReference.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace drc::reference {
namespace {

[[noreturn]] void fail(const std::string &message) {
  throw std::invalid_argument("Pre-LN reference: " + message);
}

void checkSize(const std::vector<double> &tensor, int64_t expected,
               const std::string &name) {
  if (static_cast<int64_t>(tensor.size()) != expected)
    fail(name + " has " + std::to_string(tensor.size()) +
         " elements, expected " + std::to_string(expected));
}

/// The width d of attention's [batch * seqLen, d] rows of `elements`
/// values, checked: positive shape, whole rows, whole heads.
int64_t attentionWidth(size_t elements, int64_t batch, int64_t seqLen,
                       int64_t nHead) {
  if (batch <= 0 || seqLen <= 0 || nHead <= 0)
    fail("causalAttention needs positive batch, seqLen and nHead");
  int64_t n = batch * seqLen;
  if (elements % n != 0)
    fail("causalAttention input has " + std::to_string(elements) +
         " elements, not a multiple of batch*seqLen = " + std::to_string(n));
  int64_t d = elements / n;
  if (d % nHead != 0)
    fail("causalAttention width " + std::to_string(d) +
         " is not a multiple of nHead " + std::to_string(nHead));
  return d;
}

/// y = x · Wᵀ for every row: x is [rows, in], w is [out, in]; returns
/// [rows, out].
std::vector<double> linear(const std::vector<double> &x,
                           const std::vector<double> &w, int64_t in,
                           int64_t out, const std::string &name) {
  checkSize(w, out * in, name);
  if (x.size() % in != 0)
    fail("input of " + name + " has " + std::to_string(x.size()) +
         " elements, not a multiple of " + std::to_string(in));
  int64_t rows = x.size() / in;
  std::vector<double> y(rows * out, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0.0;
      for (int64_t i = 0; i < in; ++i)
        sum += w[o * in + i] * x[r * in + i];
      y[r * out + o] = sum;
    }
  return y;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// Looks up \p name, checks its element count, and records that it was used.
class ParameterReader {
public:
  explicit ParameterReader(const PreLnParameters &params) : params(params) {}

  const std::vector<double> &get(const std::string &name, int64_t expected) {
    auto it = params.find(name);
    if (it == params.end())
      fail("missing parameter '" + name + "'");
    checkSize(it->second, expected, "parameter '" + name + "'");
    used.insert(name);
    return it->second;
  }

  /// A parameter the config does not ask for points at a config mismatch
  /// (e.g. a wrong nLayer), so it is an error rather than ignored.
  void checkAllUsed() const {
    for (const auto &[name, tensor] : params)
      if (!used.count(name))
        fail("unexpected parameter '" + name + "' for this config");
  }

private:
  const PreLnParameters &params;
  std::set<std::string> used;
};

void checkConfig(const PreLnConfig &c) {
  const std::pair<const char *, int64_t> dims[] = {
      {"vocab", c.vocab}, {"dModel", c.dModel}, {"nHead", c.nHead},
      {"dFF", c.dFF},     {"batch", c.batch},   {"seqLen", c.seqLen}};
  for (const auto &[name, value] : dims)
    if (value <= 0)
      fail(std::string("config.") + name + " must be positive, got " +
           std::to_string(value));
  // nLayer = 0 is a valid embed -> norm -> unembed model.
  if (c.nLayer < 0)
    fail("config.nLayer must not be negative, got " + std::to_string(c.nLayer));
  if (c.dModel % c.nHead != 0 || (c.dModel / c.nHead) % 2 != 0)
    fail("config.dModel (" + std::to_string(c.dModel) +
         ") must split into nHead (" + std::to_string(c.nHead) +
         ") heads of even width");
  if (!(c.eps > 0))
    fail("config.eps must be positive");
  if (!(c.ropeTheta > 0))
    fail("config.ropeTheta must be positive");
}

} // namespace

std::vector<double> rmsNorm(const std::vector<double> &x,
                            const std::vector<double> &gain, double eps) {
  int64_t d = gain.size();
  if (d == 0 || x.size() % d != 0)
    fail("rmsNorm input has " + std::to_string(x.size()) +
         " elements, not a multiple of the gain width " + std::to_string(d));
  int64_t rows = x.size() / d;
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sumSquares = 0.0;
    for (int64_t i = 0; i < d; ++i)
      sumSquares += x[r * d + i] * x[r * d + i];
    double scale = 1.0 / std::sqrt(sumSquares / d + eps);
    for (int64_t i = 0; i < d; ++i)
      y[r * d + i] = gain[i] * x[r * d + i] * scale;
  }
  return y;
}

std::vector<double> rope(const std::vector<double> &head, int64_t position,
                         double theta) {
  int64_t dHead = head.size();
  if (dHead == 0 || dHead % 2 != 0)
    fail("rope head width must be even and positive, got " +
         std::to_string(dHead));
  int64_t half = dHead / 2;
  std::vector<double> y(dHead);
  for (int64_t i = 0; i < half; ++i) {
    double angle =
        position * std::pow(theta, -2.0 * static_cast<double>(i) / dHead);
    double c = std::cos(angle), s = std::sin(angle);
    y[i] = head[i] * c - head[i + half] * s;
    y[i + half] = head[i + half] * c + head[i] * s;
  }
  return y;
}

std::vector<double> causalAttentionCore(const std::vector<double> &q,
                                        const std::vector<double> &k,
                                        const std::vector<double> &v,
                                        int64_t batch, int64_t seqLen,
                                        int64_t nHead, const DepthCache *depth,
                                        const std::vector<double> *depthQuery) {
  int64_t n = batch * seqLen;
  int64_t d = attentionWidth(q.size(), batch, seqLen, nHead);
  if (k.size() != q.size() || v.size() != q.size())
    fail("causalAttention needs q, k and v of one shape");
  int64_t dHead = d / nHead;
  std::vector<double> heads(n * d, 0.0);
  double scale = 1.0 / std::sqrt(static_cast<double>(dHead));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < nHead; ++h)
      for (int64_t t = 0; t < seqLen; ++t) {
        int64_t qRow = (b * seqLen + t) * d + h * dHead;
        // Keys s <= t of the sequence, then the token's depth keys.
        std::vector<double> scores;
        std::vector<const double *> values;
        for (int64_t s = 0; s <= t; ++s) {
          int64_t kRow = (b * seqLen + s) * d + h * dHead;
          double dot = 0.0;
          for (int64_t i = 0; i < dHead; ++i)
            dot += q[qRow + i] * k[kRow + i];
          scores.push_back(dot * scale);
          values.push_back(&v[kRow]);
        }
        if (depth) {
          const std::vector<double> &query = depthQuery ? *depthQuery : q;
          int64_t token = b * seqLen + t;
          const std::vector<double> &keys = depth->keys[token];
          for (size_t e = 0; e < keys.size() / d; ++e) {
            double dot = 0.0;
            for (int64_t i = 0; i < dHead; ++i)
              dot += query[qRow + i] * keys[e * d + h * dHead + i];
            scores.push_back(dot * scale);
            values.push_back(&depth->values[token][e * d + h * dHead]);
          }
        }
        // Subtracting the max leaves softmax unchanged and keeps exp finite.
        double maxScore = scores[0];
        for (double score : scores)
          maxScore = std::max(maxScore, score);
        double denominator = 0.0;
        for (double &score : scores) {
          score = std::exp(score - maxScore);
          denominator += score;
        }
        for (size_t s = 0; s < scores.size(); ++s)
          for (int64_t i = 0; i < dHead; ++i)
            heads[qRow + i] += scores[s] / denominator * values[s][i];
      }
  return heads;
}

std::vector<double>
causalAttention(const std::vector<double> &u, const std::vector<double> &wq,
                const std::vector<double> &wk, const std::vector<double> &wv,
                const std::vector<double> &wo, int64_t batch, int64_t seqLen,
                int64_t nHead, double ropeTheta, const DepthCache *depth) {
  int64_t d = attentionWidth(u.size(), batch, seqLen, nHead);
  int64_t dHead = d / nHead;

  std::vector<double> q = linear(u, wq, d, d, "wq");
  std::vector<double> k = linear(u, wk, d, d, "wk");
  std::vector<double> v = linear(u, wv, d, d, "wv");
  const std::vector<double> rawQ = q; // MoDA scores depth keys without RoPE

  // RoPE on every head of q and k; position restarts at each sequence.
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seqLen; ++t)
      for (int64_t h = 0; h < nHead; ++h) {
        int64_t offset = (b * seqLen + t) * d + h * dHead;
        std::vector<double> qHead(q.begin() + offset,
                                  q.begin() + offset + dHead);
        std::vector<double> kHead(k.begin() + offset,
                                  k.begin() + offset + dHead);
        qHead = rope(qHead, t, ropeTheta);
        kHead = rope(kHead, t, ropeTheta);
        for (int64_t i = 0; i < dHead; ++i) {
          q[offset + i] = qHead[i];
          k[offset + i] = kHead[i];
        }
      }

  std::vector<double> heads =
      causalAttentionCore(q, k, v, batch, seqLen, nHead, depth, &rawQ);
  return linear(heads, wo, d, d, "wo");
}

std::vector<double> swiglu(const std::vector<double> &u,
                           const std::vector<double> &w1,
                           const std::vector<double> &w3,
                           const std::vector<double> &w2, int64_t dFF) {
  if (dFF <= 0)
    fail("swiglu needs a positive dFF");
  if (w2.size() % dFF != 0)
    fail("w2 has " + std::to_string(w2.size()) +
         " elements, not a multiple of dFF = " + std::to_string(dFF));
  int64_t d = w2.size() / dFF;
  std::vector<double> gate = linear(u, w1, d, dFF, "w1");
  std::vector<double> up = linear(u, w3, d, dFF, "w3");
  std::vector<double> hidden(gate.size());
  for (size_t i = 0; i < gate.size(); ++i)
    hidden[i] = gate[i] * sigmoid(gate[i]) * up[i];
  return linear(hidden, w2, dFF, d, "w2");
}

double crossEntropy(const std::vector<double> &logits,
                    const std::vector<int32_t> &targets) {
  int64_t rows = targets.size();
  if (rows == 0 || logits.size() % rows != 0 || logits.empty())
    fail("crossEntropy logits have " + std::to_string(logits.size()) +
         " elements, not a positive multiple of " + std::to_string(rows) +
         " targets");
  int64_t vocab = logits.size() / rows;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    int32_t target = targets[r];
    if (target < 0 || target >= vocab)
      fail("target " + std::to_string(target) + " at position " +
           std::to_string(r) + " is outside [0, " + std::to_string(vocab) +
           ")");
    const double *row = logits.data() + r * vocab;
    double maxLogit = row[0];
    for (int64_t j = 1; j < vocab; ++j)
      maxLogit = std::max(maxLogit, row[j]);
    double sumExp = 0.0;
    for (int64_t j = 0; j < vocab; ++j)
      sumExp += std::exp(row[j] - maxLogit);
    // -log softmax(row)[target] = logsumexp(row) - row[target].
    total += maxLogit + std::log(sumExp) - row[target];
  }
  return total / rows;
}

std::vector<double> preLnLogits(const PreLnConfig &config,
                                const PreLnParameters &params,
                                const std::vector<int32_t> &tokens) {
  checkConfig(config);
  const int64_t d = config.dModel, vocab = config.vocab;
  const int64_t n = config.batch * config.seqLen;
  if (static_cast<int64_t>(tokens.size()) != n)
    fail("tokens has " + std::to_string(tokens.size()) +
         " elements, expected batch*seqLen = " + std::to_string(n));

  ParameterReader reader(params);
  const std::vector<double> &embed = reader.get("embed.weight", vocab * d);
  std::vector<double> h(n * d);
  for (int64_t r = 0; r < n; ++r) {
    int32_t token = tokens[r];
    if (token < 0 || token >= vocab)
      fail("token " + std::to_string(token) + " at position " +
           std::to_string(r) + " is outside [0, " + std::to_string(vocab) +
           ")");
    for (int64_t i = 0; i < d; ++i)
      h[r * d + i] = embed[token * d + i];
  }

  DepthCache cache{std::vector<std::vector<double>>(n),
                   std::vector<std::vector<double>>(n)};
  auto appendToCache = [&](const std::vector<double> &u,
                           const std::vector<double> &wk,
                           const std::vector<double> &wv) {
    std::vector<double> k = linear(u, wk, d, d, "depth key");
    std::vector<double> v = linear(u, wv, d, d, "depth value");
    for (int64_t r = 0; r < n; ++r) {
      cache.keys[r].insert(cache.keys[r].end(), k.begin() + r * d,
                           k.begin() + (r + 1) * d);
      cache.values[r].insert(cache.values[r].end(), v.begin() + r * d,
                             v.begin() + (r + 1) * d);
    }
  };
  for (int64_t b = 0; b < config.nLayer; ++b) {
    const std::string prefix = "blocks." + std::to_string(b) + ".";
    const auto &attnGain = reader.get(prefix + "attn.norm.gain", d);
    const auto &wq = reader.get(prefix + "attn.wq", d * d);
    const auto &wk = reader.get(prefix + "attn.wk", d * d);
    const auto &wv = reader.get(prefix + "attn.wv", d * d);
    const auto &wo = reader.get(prefix + "attn.wo", d * d);
    const auto &ffnGain = reader.get(prefix + "ffn.norm.gain", d);
    const auto &w1 = reader.get(prefix + "ffn.w1", config.dFF * d);
    const auto &w3 = reader.get(prefix + "ffn.w3", config.dFF * d);
    const auto &w2 = reader.get(prefix + "ffn.w2", d * config.dFF);

    std::vector<double> u = rmsNorm(h, attnGain, config.eps);
    std::vector<double> attn = causalAttention(
        u, wq, wk, wv, wo, config.batch, config.seqLen, config.nHead,
        config.ropeTheta, config.depthAttention ? &cache : nullptr);
    for (int64_t i = 0; i < n * d; ++i)
      h[i] += attn[i];
    if (config.depthAttention) // the attention's pre-RoPE k and v
      appendToCache(u, wk, wv);

    u = rmsNorm(h, ffnGain, config.eps);
    std::vector<double> ffn = swiglu(u, w1, w3, w2, config.dFF);
    for (int64_t i = 0; i < n * d; ++i)
      h[i] += ffn[i];
    if (config.depthAttention && b + 1 < config.nLayer) // W_kv u
      appendToCache(u, reader.get(prefix + "ffn.res.w_k", d * d),
                    reader.get(prefix + "ffn.res.w_v", d * d));
  }

  const auto &finalGain = reader.get("final_norm.gain", d);
  const auto &unembed = reader.get("unembed.weight", vocab * d);
  reader.checkAllUsed();
  return linear(rmsNorm(h, finalGain, config.eps), unembed, d, vocab,
                "unembed.weight");
}

double preLnLoss(const PreLnConfig &config, const PreLnParameters &params,
                 const std::vector<int32_t> &tokens,
                 const std::vector<int32_t> &targets) {
  if (targets.size() != tokens.size())
    fail("targets has " + std::to_string(targets.size()) +
         " elements, tokens has " + std::to_string(tokens.size()));
  return crossEntropy(preLnLogits(config, params, tokens), targets);
}

} // namespace drc::reference
