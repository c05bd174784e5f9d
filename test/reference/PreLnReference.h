//===- PreLnReference.h - Double-precision Pre-LN reference -----*- C++ -*-===//
//
// An independent, deliberately plain implementation of the Pre-LN Llama-style
// decoder of ARCHITECTURES.md §1, in double precision with simple loops. The
// compiled model's forward loss is tested against it, so it shares no code with
// the compiler or the runtime: a bug here and there would have to coincide.
//
// Layouts: N = batch·seqLen tokens, row-major [batch, seqLen]; every hidden
// state is [N, width] row-major; a weight W is [out, in] and y = W·x.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_TEST_REFERENCE_PRELNREFERENCE_H
#define DRC_TEST_REFERENCE_PRELNREFERENCE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace drc::reference {

/// Shape and constants of a Pre-LN model. dFF is taken as given (the default
/// of ARCHITECTURES.md is 16·ceil(8·dModel/48), but nothing here assumes it).
struct PreLnConfig {
  int64_t vocab, dModel, nLayer, nHead, dFF, batch, seqLen;
  double eps = 1e-6;
  double ropeTheta = 10000;
  /// MoDA (ARCHITECTURES.md §2.11): each token's attention also attends over
  /// its depth cache. Needs the parameters blocks.{b}.ffn.res.w_k and res.w_v
  /// for b < nLayer - 1 (the halves of W_kv,b).
  bool depthAttention = false;
};

/// Per token, the depth keys and values MoDA's attention reads: one
/// [entries, d] row-major pair of matrices per token.
struct DepthCache {
  std::vector<std::vector<double>> keys, values;
};

/// Parameters by drc name (`embed.weight`, `blocks.{b}.attn.wq`, ...), each a
/// flat row-major tensor.
using PreLnParameters = std::map<std::string, std::vector<double>>;

/// RMSNorm_g applied to each row of \p x, which is [rows, gain.size()]:
/// g ⊙ x / sqrt(mean_i x_i² + eps). Throws std::invalid_argument if x.size()
/// is not a multiple of gain.size().
std::vector<double> rmsNorm(const std::vector<double> &x,
                            const std::vector<double> &gain, double eps);

/// Rotate-half RoPE of one head vector \p head (length d_h, even) at 0-based
/// position \p position: for i < d_h/2 the pair (i, i + d_h/2) is rotated by
/// the angle position · theta^(-2i/d_h).
std::vector<double> rope(const std::vector<double> &head, int64_t position,
                         double theta);

/// The core of causalAttention: per sequence and head, softmax(q·k/√d_h)
/// over the keys s ≤ t of the query's own sequence times v, heads
/// concatenated. \p q, \p k, \p v are [batch·seqLen, d], each head a
/// d_h-wide column block. With \p depth, each head's softmax also runs over
/// the token's own depth keys, scored with \p depthQuery (MoDA's un-rotated
/// q). Returns [batch·seqLen, d].
std::vector<double>
causalAttentionCore(const std::vector<double> &q, const std::vector<double> &k,
                    const std::vector<double> &v, int64_t batch, int64_t seqLen,
                    int64_t nHead, const DepthCache *depth = nullptr,
                    const std::vector<double> *depthQuery = nullptr);

/// The causal attention core F^att(u) = Wo · concat_heads(softmax(q·k/√d_h)·v)
/// of one sublayer, without its norm. \p u is [batch·seqLen, d]; wq, wk, wv, wo
/// are [d, d]; RoPE is applied to q and k with positions restarting at every
/// sequence, and a query attends to keys s ≤ t of its own sequence only.
/// With \p depth, each head's softmax also runs over the token's own depth
/// keys, scored with the un-rotated q (MoDA). Returns [batch·seqLen, d].
std::vector<double>
causalAttention(const std::vector<double> &u, const std::vector<double> &wq,
                const std::vector<double> &wk, const std::vector<double> &wv,
                const std::vector<double> &wo, int64_t batch, int64_t seqLen,
                int64_t nHead, double ropeTheta,
                const DepthCache *depth = nullptr);

/// The SwiGLU core F^ffn(u) = W2 (SiLU(W1 u) ⊙ (W3 u)) of one sublayer, without
/// its norm. \p u is [rows, d]; w1 and w3 are [dFF, d]; w2 is [d, dFF].
/// Returns [rows, d].
std::vector<double> swiglu(const std::vector<double> &u,
                           const std::vector<double> &w1,
                           const std::vector<double> &w3,
                           const std::vector<double> &w2, int64_t dFF);

/// Mean over rows of the cross-entropy of \p logits ([targets.size(), V]) with
/// the integer \p targets. Throws std::invalid_argument on a target outside
/// [0, V).
double crossEntropy(const std::vector<double> &logits,
                    const std::vector<int32_t> &targets);

/// The logits [batch·seqLen, vocab] of the Pre-LN model (or, with
/// config.depthAttention, pre-norm MoDA) for \p tokens.
/// Throws std::invalid_argument, naming the culprit, on an inconsistent config,
/// a missing, unexpected or wrongly sized parameter, or a token outside
/// [0, vocab).
std::vector<double> preLnLogits(const PreLnConfig &config,
                                const PreLnParameters &params,
                                const std::vector<int32_t> &tokens);

/// The mean next-token cross-entropy of the Pre-LN model over all
/// batch·seqLen positions. Throws as preLnLogits does, and also on a target
/// outside [0, vocab) or a targets vector of the wrong length.
double preLnLoss(const PreLnConfig &config, const PreLnParameters &params,
                 const std::vector<int32_t> &tokens,
                 const std::vector<int32_t> &targets);

} // namespace drc::reference

#endif // DRC_TEST_REFERENCE_PRELNREFERENCE_H
