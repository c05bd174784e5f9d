//===- DrcOps.td - drc operations --------------------------*- tablegen -*-===//
//
// Three tiers:
//  * model level: what a spec imports to and a scheme author writes
//    (embed, rms_norm, linear, attention, swiglu, add, cross_entropy);
//  * kernel level: what drc-decompose turns the coarse sublayers into and
//    what autodiff differentiates (matmul, rope, causal_attention, silu_mul);
//  * training: adjoint ops emitted by gradient rules, gradient stores and the
//    optimizer step, which read and write the runtime's parameter state.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_OPS_TD
#define DRC_OPS_TD

include "dialect/DrcDialect.td"
include "dialect/DrcAttrs.td"
include "dialect/DrcInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Drc_FloatTensor : TensorOf<[F32, F64]>;
def Drc_TokenTensor : 1DTensorOf<[I32]>;
def Drc_ScalarTensor : 0DTensorOf<[F32, F64]>;

// Parameter, gradient and optimizer-moment storage owned by the runtime.
def Drc_ParameterState : Resource<"::mlir::drc::ParameterStateResource">;
def Drc_GradientState : Resource<"::mlir::drc::GradientStateResource">;

class Drc_DiffOp<string mnemonic, list<Trait> traits = []>
    : Drc_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Drc_DifferentiableOpInterface>])>;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def Drc_ParamOp : Drc_Op<"param", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "declares a trainable parameter";
  let description = [{
    Declares a parameter of the model: its name (the checkpoint tensor name),
    shape, initialiser and optimizer group. The runtime allocates, initialises
    and updates it; IR reads it with `drc.param_ref`.

    ```mlir
    drc.param @blocks.0.attn.wq : tensor<64x64xf32> init #drc.init<trunc_normal(0.02, 0.06)> decay
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Drc_FloatTensor>:$type,
                       Drc_InitAttr:$init,
                       UnitAttr:$decay);
  let assemblyFormat = "$sym_name `:` $type `init` qualified($init) (`decay` $decay^)? attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Drc_ParamRefOp : Drc_Op<"param_ref", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead<Drc_ParameterState>]>]> {
  let summary = "reads the current value of a parameter";
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$param attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Model level
//===----------------------------------------------------------------------===//

def Drc_EmbedOp : Drc_DiffOp<"embed"> {
  let summary = "token embedding lookup: result[t] = table[tokens[t]]";
  let arguments = (ins Drc_FloatTensor:$table, Drc_TokenTensor:$tokens);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$table `[` $tokens `]` attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_RMSNormOp : Drc_DiffOp<"rms_norm"> {
  let summary = "RMS normalisation of each row, optionally scaled by a gain";
  let description = [{
    `y = g * x / sqrt(mean(x^2) + eps)` over the last dimension; without a gain
    it is the parameter-free N-hat of ARCHITECTURES.md.
  }];
  let arguments = (ins Drc_FloatTensor:$input, Optional<Drc_FloatTensor>:$gain,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input (`gain` $gain^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_LinearOp : Drc_Op<"linear", [Pure]> {
  let summary = "token-wise linear map y = x W^T, with W of shape [out, in]";
  let description = [{
    Maps every row of the input: [N, in] -> [N, out], or each row of a
    per-token set [N, k, in] -> [N, k, out] (HC's coefficient projection).
  }];
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$weight);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_AttentionOp : Drc_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "causal multi-head self-attention with RoPE (no biases, no norm)";
  let description = [{
    q, k, v = u Wq^T, u Wk^T, u Wv^T split into `n_head` contiguous heads;
    rotate-half RoPE with base `rope_theta` on q and k at each token's position
    within its sequence of `seq_len` tokens; causal softmax(q k^T / sqrt(d_h)) v;
    heads concatenated and projected by Wo.

    With `depth` keys and values [N, r, d] (MoDA's per-token depth cache),
    each head's one softmax also runs over the token's own r depth keys,
    scored with the un-rotated q: see drc.depth_attention.
  }];
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$wq,
                       Drc_FloatTensor:$wk, Drc_FloatTensor:$wv,
                       Drc_FloatTensor:$wo,
                       Optional<Drc_FloatTensor>:$depth_keys,
                       Optional<Drc_FloatTensor>:$depth_values,
                       I64Attr:$n_head, I64Attr:$seq_len,
                       DefaultValuedAttr<F64Attr, "10000.0">:$rope_theta);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $wq `,` $wk `,` $wv `,` $wo (`depth` $depth_keys^ `,` $depth_values)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Drc_SwiGLUOp : Drc_Op<"swiglu", [Pure]> {
  let summary = "SwiGLU feed-forward W2 (SiLU(W1 u) * W3 u)";
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$w1,
                       Drc_FloatTensor:$w3, Drc_FloatTensor:$w2);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input `,` $w1 `,` $w3 `,` $w2 attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_AddOp : Drc_DiffOp<"add", [SameOperandsAndResultType]> {
  let summary = "elementwise sum";
  let arguments = (ins Drc_FloatTensor:$lhs, Drc_FloatTensor:$rhs);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Drc_CrossEntropyOp : Drc_DiffOp<"cross_entropy"> {
  let summary = "mean next-token cross-entropy of logits against target ids";
  let description = [{
    Rows whose target is negative (no target: the end of a sequence for a
    look-ahead loss) are left out, of the sum and of the count it is divided
    by.
  }];
  let arguments = (ins Drc_FloatTensor:$logits, Drc_TokenTensor:$targets);
  let results = (outs Drc_ScalarTensor:$result);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_LookaheadOp : Drc_Op<"lookahead", [Pure, SameOperandsAndResultType]> {
  let summary = "each token's next target within its sequence, -1 at the end";
  let description = [{
    result[t] = targets[t + 1] when t + 1 is in the same sequence of
    `seq_len` tokens, else -1 (ignored by cross_entropy): from next-token
    targets x_{t+1}, the targets x_{t+2} of a next-2-token (MTP) head.
  }];
  let arguments = (ins Drc_TokenTensor:$targets, I64Attr:$seq_len);
  let results = (outs Drc_TokenTensor:$result);
  let assemblyFormat = "$targets attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Token-local sets (residual topologies)
//
// A residual state is a per-token set of kappa rows of width w, stored as
// tensor<N x kappa x w>: token-major, so each token's set is contiguous and a
// fused kernel reads it once per token tile.
//===----------------------------------------------------------------------===//

def Drc_MixOp : Drc_DiffOp<"mix"> {
  let summary = "mixes the rows of each token's set: y[t, j] = sum_i c[i, j] x[t, i]";
  let description = [{
    `input` is a set tensor<N x k_in x w>; `coef` is tensor<k_in x k_out>, the
    same for every token (a static or learned mixing matrix), or
    tensor<N x k_in x k_out>, one per token (dynamic coefficients). The
    result is tensor<N x k_out x w>: row j is sum_i coef[i, j] * row i, i.e.
    C^T X in ARCHITECTURES.md's notation. With `transpose_coef` the
    coefficients are read as [k_out, k_in] (y[t, j] = sum_i c[j, i] x[t, i]).

    ```mlir
    // HC's write: H <- [A_r ; beta^T]^T [H ; f]
    %h = drc.mix %rows by %c : (tensor<8x5x16xf32>, tensor<8x5x4xf32>) -> tensor<8x4x16xf32>
    ```
  }];
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$coef,
                       UnitAttr:$transpose_coef);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input `by` $coef attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether every token has its own coefficients.
    bool isPerToken() {
      return ::llvm::cast<::mlir::RankedTensorType>(getCoef().getType()).getRank() == 3;
    }
  }];
}

def Drc_AppendOp : Drc_DiffOp<"append"> {
  let summary = "joins token sets row-wise: [a ; b ; ...] per token";
  let description = [{
    Each operand is a set tensor<N x k_i x w> of the same tokens and width;
    the result holds their rows in operand order, tensor<N x sum k_i x w>
    (an AttnRes bank growing by f_k, HC's [H ; f] before the write mix).
  }];
  let arguments = (ins Variadic<Drc_FloatTensor>:$inputs);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Drc_RowsOp : Drc_DiffOp<"rows"> {
  let summary = "keeps the rows [offset, offset + count) of each token's set";
  let description = [{
    `count` is the result's row count: tensor<N x k x w> ->
    tensor<N x count x w> (HC's read row 0, VWN's first m rows).
  }];
  let arguments = (ins Drc_FloatTensor:$input, I64Attr:$offset);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input `at` $offset attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_SquashOp : Drc_DiffOp<"squash", [SameOperandsAndResultType]> {
  let summary = "bounded elementwise squash: y = scale * g(x / temperature)";
  let description = [{
    g is `tanh`, `sigmoid` or `exp`: the squashes of dynamic residual
    coefficients (HC's tanh, VWN's tanh(./sqrt(d_b)), mHC's sigmoid and
    2*sigmoid, and the exp that starts its Sinkhorn-Knopp iteration).
  }];
  let arguments = (ins Drc_FloatTensor:$input, StrAttr:$kind,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale,
                       DefaultValuedAttr<F64Attr, "1.0">:$temperature);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Drc_ScaleOp : Drc_DiffOp<"scale", [AllTypesMatch<["input", "result"]>]> {
  let summary = "y = factor * x * s, s broadcast over x's leading dimensions";
  let description = [{
    `s` (optional) has the shape of a suffix of x's: a scalar tensor<f32>,
    one value per column, per row of a set, or x's whole shape. `factor` is
    a compile-time constant (LNS's 1/sqrt(l), DeepNorm's c). Learned gains
    and HC's s_A, VWN's S_A are the operand.
  }];
  let arguments = (ins Drc_FloatTensor:$input, Optional<Drc_FloatTensor>:$scale,
                       DefaultValuedAttr<F64Attr, "1.0">:$factor);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input (`by` $scale^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Drc_ShiftOp : Drc_DiffOp<"shift", [AllTypesMatch<["input", "result"]>]> {
  let summary = "y = x + b, b broadcast over x's leading dimensions";
  let description = [{
    `b` has the shape of a suffix of x's, e.g. a static coefficient matrix
    A0 [k_in, k_out] added to per-token coefficients [N, k_in, k_out].
  }];
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$shift);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input `by` $shift attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_SoftmaxOp : Drc_DiffOp<"softmax", [SameOperandsAndResultType]> {
  let summary = "softmax along one dimension";
  let description = [{
    Along `axis` of a static tensor: over the rows of each token's set
    (axis 1 of tensor<N x k x c>, AttnRes's weights over the bank), or over
    a coefficient row.
  }];
  let arguments = (ins Drc_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Drc_NormalizeOp : Drc_DiffOp<"normalize", [SameOperandsAndResultType]> {
  let summary = "divides by the sum along one dimension: y = x / (sum(x) + eps)";
  let description = [{
    Along `axis` of a static tensor. One Sinkhorn-Knopp half-step on
    per-token matrices [N, n, n] is `normalize {axis = 1}` (each column) or
    `{axis = 2}` (each row); mHC adds eps = 1e-6 to each denominator.
  }];
  let arguments = (ins Drc_FloatTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Drc_ViewOp : Drc_DiffOp<"view"> {
  let summary = "reinterprets each token's values with another shape";
  let description = [{
    Keeps the leading token dimension and the row-major order of each
    token's elements: a hidden state tensor<N x d> is the one-row set
    tensor<N x 1 x d>, and VWN's m segments tensor<N x m x d/m> are the
    width-d vector tensor<N x d>. In a scheme, `[sizes]` gives the result's
    dynamic dimensions after the token one (one may be left out and is
    inferred); instantiation turns them into the static type.
  }];
  let arguments = (ins Drc_FloatTensor:$input, Variadic<Index>:$sizes);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input (`[` $sizes^ `]`)? attr-dict `:` functional-type($input, results)";
  let hasVerifier = 1;
}

def Drc_CenterOp : Drc_DiffOp<"center", [SameOperandsAndResultType]> {
  let summary = "subtracts each row's mean over the last dimension";
  let description = [{
    `y = x - mean(x)` per row. A mean-centred LayerNorm is
    `rms_norm(center(x))` (the variance of x is the mean square of its
    centred values): DeepNorm's LN, VWN's GroupNorm on a view of groups.
  }];
  let arguments = (ins Drc_FloatTensor:$input);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Scheme templates
//
// A residual scheme (models/schemes/*.mlir) is written once for every width,
// depth and sublayer: sizes and options are compile-time values
// (`drc.static`) and tensors have dynamic (?) dimensions. Instantiation
// (dialect/SchemeInstantiation.h) evaluates the compile-time values, gives
// every tensor its static type and declares the weights as drc.param; these
// ops never survive it.
//===----------------------------------------------------------------------===//

def Drc_StaticOp : Drc_Op<"static", [Pure]> {
  let summary = "a compile-time value of a scheme: a size, an index or an option";
  let description = [{
    Built-in names: `d` (d_model), `L` (blocks), `n_head`, `d_ff`, and in a
    sublayer's read and write `k` (sublayer index), `b` (block), `j` (0 for
    attention, 1 for FFN). Any other name is an option of the scheme,
    declared with its default in the module's `drc.options` and settable
    from the spec's `[residual]` table.
    ```mlir
    %n = drc.static "streams" : index
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyTypeOf<[Index, F64, I1]>:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Drc_RequireOp : Drc_Op<"require"> {
  let summary = "a condition on a scheme's compile-time values";
  let description = [{
    Instantiation evaluates `condition`, an `i1` compile-time value, and
    where it is false stops with `message` as the error at this op, each
    `{name}` in it replaced by that compile-time value (an option, `d`,
    `k`, ...). VWN's segments need m to divide d_model:
    ```mlir
    drc.require %divides, "m = {m} must divide d_model = {d}"
    ```
  }];
  let arguments = (ins I1:$condition, StrAttr:$message);
  let assemblyFormat = "$condition `,` $message attr-dict";
}

def Drc_EyeOp : Drc_Op<"eye", [Pure, AttrSizedOperandSegments]> {
  let summary = "a constant 0/1 pattern of a scheme (identities, one-hot columns)";
  let description = [{
    Element i of a vector is `on` where i = offset; element (i, j) of a
    matrix is `on` where i - offset = j (with `cyclic`, where
    (i - offset) mod cols = j), and `off` elsewhere. Sizes are index
    values. HC's A0 read column e_(k mod n) is `drc.eye [%n, %c1] at %kn`,
    mHC's gap-8 bias `drc.eye [%n, %n] {on = 0.0, off = -8.0}`, VWN's cyclic
    B0 `drc.eye [%n, %m] {cyclic}`. Instantiation evaluates it to a dense
    constant.
  }];
  let arguments = (ins Variadic<Index>:$sizes, Optional<Index>:$offset,
                       DefaultValuedAttr<F64Attr, "1.0">:$on,
                       DefaultValuedAttr<F64Attr, "0.0">:$off,
                       UnitAttr:$cyclic);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "` ` `[` $sizes `]` (`at` $offset^)? attr-dict `:` type($result)";
}

def Drc_WeightOp : Drc_Op<"weight", [AttrSizedOperandSegments]> {
  let summary = "declares a parameter of a scheme and reads it";
  let description = [{
    The name is the checkpoint tensor name, prefixed with the sublayer's
    `blocks.B.attn.` or `blocks.B.ffn.` in a read or write, with `embed.`
    in @embed and `final.` in @readout. The shape is
    given by index sizes and the initialiser by `init` (`zeros`, `ones`,
    `constant(v)`, `trunc_normal(std, clip)`, or `matrix`: the spec's dense
    matrix init), or the initial value by a compile-time tensor after `=`.
    `decay` puts it in the weight-decay group. Within one read and write
    the same name is the same parameter.
    ```mlir
    %w = drc.weight "res.w_a" [%n, %d] init zeros decay : tensor<?x?xf32>
    %a0 = drc.weight "res.a0" = %identity : tensor<?x?xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<Index>:$sizes,
                       Optional<Drc_FloatTensor>:$value,
                       OptionalAttr<Drc_InitAttr>:$init, UnitAttr:$decay);
  let results = (outs Drc_FloatTensor:$result);
  let hasCustomAssemblyFormat = 1;
}

//===----------------------------------------------------------------------===//
// Kernel level
//===----------------------------------------------------------------------===//

def Drc_MatmulOp : Drc_DiffOp<"matmul"> {
  let summary = "C = op(A) op(B), op transposing when its flag is set";
  let description = [{
    An operand or result of rank > 2 stands for the matrix of its rows,
    [d0 * ... * d(r-2), d(r-1)]: a per-token set [N, k, w] is N*k rows of
    width w, so a projection of every row of a set is one matmul.
  }];
  let arguments = (ins Drc_FloatTensor:$lhs, Drc_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_NormedLinearOp : Drc_DiffOp<"normed_linear"> {
  let summary = "y_i = rms_norm(x) W_i^T for each weight, without forming rms_norm(x)";
  let description = [{
    Each row's projections scaled by its 1/sqrt(mean(x^2) + eps): the same
    values as `drc.linear` of a parameter-free `drc.rms_norm`, one result per
    weight, but neither the forward pass nor the weights' adjoints need the
    normalised rows, so narrow projections (HC's coefficients, AttnRes's
    depth logits) read the state instead of writing and reading its
    normalised copy. A norm's gain folds into the weights (drc-decompose).
    Operands as `drc.linear`: x [..., in], each W_i [out_i, in].
  }];
  let arguments = (ins Drc_FloatTensor:$input, Variadic<Drc_FloatTensor>:$weights,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Variadic<Drc_FloatTensor>:$results);
  let assemblyFormat = "$input `,` $weights attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_RopeOp : Drc_DiffOp<"rope"> {
  let summary = "rotate-half rotary position embedding per head";
  let description = [{
    For head j and i < d_h/2 the pair (i, i + d_h/2) is rotated by
    t * theta^(-2i/d_h), t the position within the sequence. With `inverse`
    the rotation is by the negated angle (the adjoint).
  }];
  let arguments = (ins Drc_FloatTensor:$input, I64Attr:$n_head, I64Attr:$seq_len,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta,
                       UnitAttr:$inverse);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_CausalAttentionOp : Drc_DiffOp<"causal_attention"> {
  let summary = "per-head causal softmax(q k^T / sqrt(d_h)) v; also the row log-sum-exp";
  let arguments = (ins Drc_FloatTensor:$q, Drc_FloatTensor:$k, Drc_FloatTensor:$v,
                       I64Attr:$n_head, I64Attr:$seq_len);
  let results = (outs Drc_FloatTensor:$result, Drc_FloatTensor:$lse);
  let assemblyFormat = "$q `,` $k `,` $v attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_DepthAttentionOp : Drc_DiffOp<"depth_attention"> {
  let summary = "merges each token's depth keys into a causal attention's softmax (MoDA)";
  let description = [{
    `q` [N, d] are the un-rotated queries, `keys` and `values` [N, r, d] the
    token's own depth cache (heads split as in q), and `out`, `lse` the
    causal_attention result over the sequence keys. Per token and head, with
    s_i = q . K_i / sqrt(d_h) and L = log(e^lse + sum_i e^s_i), one softmax
    over both key sets gives
      result = e^(lse - L) out + sum_i e^(s_i - L) V_i.
  }];
  let arguments = (ins Drc_FloatTensor:$q, Drc_FloatTensor:$keys,
                       Drc_FloatTensor:$values, Drc_FloatTensor:$out,
                       Drc_FloatTensor:$lse, I64Attr:$n_head);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $keys `,` $values `merge` $out `,` $lse attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Drc_SiluMulOp : Drc_DiffOp<"silu_mul", [SameOperandsAndResultType]> {
  let summary = "SiLU(a) * b, the SwiGLU gate";
  let arguments = (ins Drc_FloatTensor:$gate, Drc_FloatTensor:$up);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Adjoints (emitted by gradient rules; not differentiable themselves)
//===----------------------------------------------------------------------===//

def Drc_RowsGradOp : Drc_Op<"rows_grad", [Pure]> {
  let summary = "input adjoint of rows: the rows' gradient at `offset`, zeros elsewhere";
  let arguments = (ins Drc_FloatTensor:$result_grad, I64Attr:$offset);
  let results = (outs Drc_FloatTensor:$input_grad);
  let assemblyFormat = "$result_grad `at` $offset attr-dict `:` functional-type(operands, results)";
}

def Drc_SquashGradOp : Drc_Op<"squash_grad", [Pure]> {
  let summary = "input adjoint of squash";
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$result_grad,
                       StrAttr:$kind, F64Attr:$scale, F64Attr:$temperature);
  let results = (outs Drc_FloatTensor:$input_grad);
  let assemblyFormat = "$kind $input `grad` $result_grad attr-dict `:` functional-type(operands, results)";
}

def Drc_SumLeadingOp : Drc_Op<"sum_leading", [Pure]> {
  let summary = "sums over the leading dimensions down to the result's (suffix) shape";
  let description = [{
    The adjoint of a broadcast over leading dimensions (scale, shift).
  }];
  let arguments = (ins Drc_FloatTensor:$input);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_SoftmaxGradOp : Drc_Op<"softmax_grad", [Pure]> {
  let summary = "input adjoint of softmax from its result: y (dy - sum(y dy))";
  let description = [{
    The sums run along `axis`. With `dot` (the result's shape with `axis`
    1) they are given rather than computed: where y mixes a set's rows,
    m = sum_i y_i x_i, and dy_i = x_i . dm (drc.mix_coef_grad), the sum is
    dm . m, one dot per token (drc.row_dot) instead of a pass over the
    set's rows.
  }];
  let arguments = (ins Drc_FloatTensor:$result, Drc_FloatTensor:$result_grad,
                       Optional<Drc_FloatTensor>:$dot, I64Attr:$axis);
  let results = (outs Drc_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result `grad` $result_grad (`dot` $dot^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Drc_NormalizeGradOp : Drc_Op<"normalize_grad", [Pure]> {
  let summary = "input adjoint of normalize: (dy - sum(dy y)) / (sum(x) + eps)";
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$result_grad,
                       I64Attr:$axis, F64Attr:$eps);
  let results = (outs Drc_FloatTensor:$input_grad);
  let assemblyFormat = "$input `grad` $result_grad attr-dict `:` functional-type(operands, results)";
}

def Drc_MixCoefGradOp : Drc_Op<"mix_coef_grad", [Pure]> {
  let summary = "coefficient adjoint of mix";
  let description = [{
    dc[i, j] = sum_w x[t, i, w] dy[t, j, w], per token for per-token
    coefficients, summed over tokens for shared ones; [j, i] with
    `transpose_coef`.
  }];
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$result_grad,
                       UnitAttr:$transpose_coef);
  let results = (outs Drc_FloatTensor:$coef_grad);
  let assemblyFormat = "$input `,` $result_grad attr-dict `:` functional-type(operands, results)";
}

def Drc_RMSNormGradOp : Drc_Op<"rms_norm_grad", [Pure, AttrSizedOperandSegments]> {
  let summary = "input adjoint of rms_norm";
  let description = [{
    dx = (g dy - x-hat mean(g dy x-hat)) / rms(x), row by row. With `dot`
    [..., 1], the rows' sums of g dy x-hat are given rather than computed:
    for a normed linear's adjoint dy = d(x-hat W^T) W they are
    sum_k d(x-hat W^T)_k (x-hat W^T)_k, a dot over the projection's few
    outputs (drc.row_dot) instead of a pass over the row.
  }];
  let arguments = (ins Drc_FloatTensor:$input, Optional<Drc_FloatTensor>:$gain,
                       Drc_FloatTensor:$result_grad,
                       Optional<Drc_FloatTensor>:$dot,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Drc_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $input (`gain` $gain^)? `grad` $result_grad (`dot` $dot^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Drc_RowDotOp : Drc_Op<"row_dot", [Pure]> {
  let summary = "sum over the last axis of lhs * rhs, kept as an axis of 1";
  let arguments = (ins Drc_FloatTensor:$lhs, Drc_FloatTensor:$rhs);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_NormedLinearWeightGradOp : Drc_Op<"normed_linear_weight_grad", [Pure]> {
  let summary = "weight adjoint of normed_linear: sum over rows of dy^T rms_norm(x)";
  let description = [{
    With `prescaled`, result_grad is already dy / rms(x) row by row
    (drc.scale_by_inv_rms), and the op is the sum over rows of its
    transpose times x.
  }];
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$result_grad,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps,
                       UnitAttr:$prescaled);
  let results = (outs Drc_FloatTensor:$weight_grad);
  let assemblyFormat = "$input `grad` $result_grad attr-dict `:` functional-type(operands, results)";
}

def Drc_ScaleByInvRMSOp : Drc_Op<"scale_by_inv_rms", [Pure]> {
  let summary = "each row of dy divided by rms of the same row of x";
  let description = [{
    result = dy / sqrt(mean(x^2) + eps), the mean over x's last axis, row
    by row: dy [..., out] and x [..., in] have the same leading shape. The
    per-token factor of a normed linear's weight adjoint
    (normed_linear_weight_grad `prescaled` then sums result^T x over the
    rows), split off by drc-fuse-token-local so that the region that makes
    dy, which reads x's rows anyway, computes it.
  }];
  let arguments = (ins Drc_FloatTensor:$result_grad, Drc_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Drc_FloatTensor:$result);
  let assemblyFormat = "$result_grad `by` $input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Drc_RMSNormGainGradOp : Drc_Op<"rms_norm_gain_grad", [Pure]> {
  let summary = "gain adjoint of rms_norm: sum over rows of dy * x-hat";
  let arguments = (ins Drc_FloatTensor:$input, Drc_FloatTensor:$result_grad,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Drc_FloatTensor:$gain_grad);
  let assemblyFormat = "$input `grad` $result_grad attr-dict `:` functional-type(operands, results)";
}

def Drc_EmbedGradOp : Drc_Op<"embed_grad", [Pure]> {
  let summary = "table adjoint of embed: scatter-add of row adjoints by token id";
  let arguments = (ins Drc_TokenTensor:$tokens, Drc_FloatTensor:$result_grad);
  let results = (outs Drc_FloatTensor:$table_grad);
  let assemblyFormat = "$tokens `grad` $result_grad attr-dict `:` functional-type(operands, results)";
}

def Drc_CrossEntropyGradOp : Drc_Op<"cross_entropy_grad", [Pure]> {
  let summary = "logits adjoint of cross_entropy: (softmax - onehot) * dloss / N";
  let arguments = (ins Drc_FloatTensor:$logits, Drc_TokenTensor:$targets,
                       Drc_ScalarTensor:$result_grad);
  let results = (outs Drc_FloatTensor:$logits_grad);
  let assemblyFormat = "$logits `,` $targets `grad` $result_grad attr-dict `:` functional-type(operands, results)";
}

def Drc_CausalAttentionGradOp : Drc_Op<"causal_attention_grad", [Pure]> {
  let summary = "q, k, v adjoints of causal_attention from its saved output and lse";
  let description = [{
    With `lse_grad`, the log-sum-exp result is differentiated too (a softmax
    merged with other keys, as MoDA's depth keys are, reads it).
  }];
  let arguments = (ins Drc_FloatTensor:$q, Drc_FloatTensor:$k, Drc_FloatTensor:$v,
                       Drc_FloatTensor:$out, Drc_FloatTensor:$lse,
                       Drc_FloatTensor:$result_grad,
                       Optional<Drc_FloatTensor>:$lse_grad,
                       I64Attr:$n_head, I64Attr:$seq_len);
  let results = (outs Drc_FloatTensor:$q_grad, Drc_FloatTensor:$k_grad,
                      Drc_FloatTensor:$v_grad);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $out `,` $lse `grad` $result_grad (`,` $lse_grad^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Drc_DepthAttentionGradOp : Drc_Op<"depth_attention_grad", [Pure]> {
  let summary = "q, keys, values, out and lse adjoints of depth_attention";
  let arguments = (ins Drc_FloatTensor:$q, Drc_FloatTensor:$keys,
                       Drc_FloatTensor:$values, Drc_FloatTensor:$out,
                       Drc_FloatTensor:$lse, Drc_FloatTensor:$result,
                       Drc_FloatTensor:$result_grad, I64Attr:$n_head);
  let results = (outs Drc_FloatTensor:$q_grad, Drc_FloatTensor:$keys_grad,
                      Drc_FloatTensor:$values_grad, Drc_FloatTensor:$out_grad,
                      Drc_FloatTensor:$lse_grad);
  let assemblyFormat = [{
    $q `,` $keys `,` $values `merge` $out `,` $lse `,` $result `grad` $result_grad attr-dict `:` functional-type(operands, results)
  }];
}

def Drc_SiluMulGradOp : Drc_Op<"silu_mul_grad", [Pure]> {
  let summary = "gate and up adjoints of silu_mul";
  let arguments = (ins Drc_FloatTensor:$gate, Drc_FloatTensor:$up,
                       Drc_FloatTensor:$result_grad);
  let results = (outs Drc_FloatTensor:$gate_grad, Drc_FloatTensor:$up_grad);
  let assemblyFormat = "$gate `,` $up `grad` $result_grad attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Training state
//===----------------------------------------------------------------------===//

def Drc_GradStoreOp : Drc_Op<"grad_store", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemWrite<Drc_GradientState>]>]> {
  let summary = "stores the step's gradient of a parameter";
  let arguments = (ins FlatSymbolRefAttr:$param, Drc_FloatTensor:$grad);
  let assemblyFormat = "$grad `to` $param attr-dict `:` type($grad)";
}

def Drc_AdamWOp : Drc_Op<"adamw", [
    MemoryEffects<[MemRead<Drc_GradientState>, MemRead<Drc_ParameterState>,
                   MemWrite<Drc_ParameterState>]>]> {
  let summary = "clips the global gradient norm, then one AdamW step on every parameter";
  let description = [{
    Reads every parameter's stored gradient, scales all of them by
    min(1, max_grad_norm / ||g||) and applies AdamW with decoupled weight decay
    to the parameters declared `decay`. `step` is the 1-based step count used
    for bias correction. Returns the gradient norm before clipping.
  }];
  let arguments = (ins Drc_ScalarTensor:$lr, Drc_ScalarTensor:$step,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$epsilon,
                       F64Attr:$weight_decay, F64Attr:$max_grad_norm);
  let results = (outs Drc_ScalarTensor:$grad_norm);
  let assemblyFormat = "$lr `,` $step attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Fused token-local regions (drc-fuse-token-local)
//===----------------------------------------------------------------------===//

def Drc_FusedOp : Drc_Op<"fused", [IsolatedFromAbove, SingleBlock,
                                    RecursiveMemoryEffects]> {
  let summary = "token-local ops run tile by tile over the tokens";
  let description = [{
    The body computes one tile of `tile` tokens out of `tokens`. An operand
    whose block argument has `tile` leading rows is read one tile at a time
    (a per-token value); any other operand is read whole (parameters,
    coefficients shared by all tokens). Each `drc.yield` operand is one
    tile of the matching result, whose leading dimension is `tokens`. Tiles
    are independent, so the lowering runs them in parallel, and each value
    inside the body lives only for one tile: the region reads its inputs
    once and writes its results once.

    A result listed in `partials` is a sum over the tokens (a parameter
    gradient) computed tile by tile: its yielded value is the tile's sum,
    and the result stacks them, one per tile (leading dimension
    `tokens / tile`), for a `drc.sum_leading` after the region to add in
    tile order. The per-token values it sums need not be written at all.

    ```mlir
    %h, %u = drc.fused(%x, %f, %g) {tile = 16 : i64, tokens = 2048 : i64}
        : (tensor<2048x128xf32>, tensor<2048x128xf32>, tensor<128xf32>)
       -> (tensor<2048x128xf32>, tensor<2048x128xf32>) {
    ^bb0(%xt: tensor<16x128xf32>, %ft: tensor<16x128xf32>, %gt: tensor<128xf32>):
      %ht = drc.add %xt, %ft : tensor<16x128xf32>
      %ut = drc.rms_norm %ht gain %gt : (tensor<16x128xf32>, tensor<128xf32>) -> tensor<16x128xf32>
      drc.yield %ht, %ut : tensor<16x128xf32>, tensor<16x128xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, I64Attr:$tokens,
                       I64Attr:$tile,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$partials);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `type` (a tensor of rank >= 1) with `rows` leading rows: the tile
    /// type of a per-token value, or its whole.
    static ::mlir::Type withRows(::mlir::Type type, int64_t rows) {
      auto tensor = ::llvm::cast<::mlir::RankedTensorType>(type);
      ::llvm::SmallVector<int64_t> shape(tensor.getShape());
      shape[0] = rows;
      return tensor.clone(shape);
    }
    /// Whether `input` is read one tile at a time.
    bool isTiled(unsigned input) {
      return getBody().getArgument(input).getType() !=
             getInputs()[input].getType();
    }
    /// Whether result `index` stacks per-tile partial sums.
    bool isPartial(unsigned index) {
      return ::llvm::is_contained(getPartials(), int64_t(index));
    }
    /// The type of a result stacking one `partial` per tile of `tile` out of
    /// `tokens`.
    static ::mlir::Type stackedPartials(::mlir::Type partial, int64_t tokens,
                                        int64_t tile) {
      auto tensor = ::llvm::cast<::mlir::RankedTensorType>(partial);
      ::llvm::SmallVector<int64_t> shape{tokens / tile};
      shape.append(tensor.getShape().begin(), tensor.getShape().end());
      return tensor.clone(shape);
    }
  }];
}

def Drc_YieldOp : Drc_Op<"yield", [Pure, Terminator,
                                    HasParent<"FusedOp">]> {
  let summary = "the tile of each result of a drc.fused region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // DRC_OPS_TD
