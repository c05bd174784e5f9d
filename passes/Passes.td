//===- Passes.td - drc passes ------------------------------*- tablegen -*-===//
#ifndef DRC_PASSES_TD
#define DRC_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecomposeSublayers : Pass<"drc-decompose", "::mlir::ModuleOp"> {
  let summary = "Rewrite coarse sublayer ops into kernel-level drc ops";
  let description = [{
    `drc.attention` becomes three projections, RoPE on q and k, the causal
    attention core and the output projection; `drc.swiglu` becomes its three
    matmuls around `drc.silu_mul`; `drc.linear` a transposed matmul. An
    `rms_norm` read only by narrow projections (a weight with one side at
    most 32 and at most a quarter of the other) is folded into them: each
    becomes `drc.normed_linear` of the norm's input, with the gain folded
    into the weight by `drc.scale`, so the normalised rows are never formed.
    Autodiff and lowering work on the kernel level.
  }];
  let dependentDialects = ["::mlir::drc::DrcDialect"];
}

def Autodiff : Pass<"drc-autodiff", "::mlir::ModuleOp"> {
  let summary = "Build the train-step function: forward, backward, AdamW";
  let description = [{
    Differentiates the scalar-valued function `loss` (option `func`) in
    reverse mode through DifferentiableOpInterface, and adds
    `train_step(tokens, targets, lr, step) -> (loss, grad_norm)`: the forward
    ops, the adjoint of every parameter stored with `drc.grad_store`, and one
    `drc.adamw` update. The function may return auxiliary losses after the
    loss, each with its weight `{drc.objective_weight = w : f64}`: the
    gradient is then that of loss + sum_i w_i aux_i, and train_step still
    returns the loss. The original function stays for evaluation. Fails with
    a located error on an op with no gradient rule.
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"\"loss\"",
           "The scalar loss function to differentiate">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.95", "AdamW beta2">,
    Option<"epsilon", "epsilon", "double", "1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1",
           "Decoupled weight decay of the parameters declared `decay`">,
    Option<"maxGradNorm", "max-grad-norm", "double", "1.0",
           "Global gradient-norm clip">,
  ];
  let dependentDialects = ["::mlir::drc::DrcDialect", "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FuseTokenLocal : Pass<"drc-fuse-token-local", "::mlir::ModuleOp"> {
  let summary = "Group the token-local residual work between sublayers into drc.fused regions";
  let description = [{
    Works from the IR's structure, for any scheme. An op is token-local when
    each token's rows of its results depend only on the same token's rows of
    its operands and on values shared by all tokens (parameters): the set
    primitives (norms, squash, scale, shift, softmax and normalize over a
    non-token axis, mix, append, rows, view, add), their adjoints, MoDA's
    depth attention, and matmuls by a parameter too narrow to be GEMM work
    (a coefficient projection or its adjoint: contraction or output width
    at most 32), normed_linear among them. Sublayer GEMMs, attention, RoPE, SwiGLU, the loss and every
    reduction over tokens (parameter gradients) are boundaries. Token-local
    ops connected by def-use chains with no boundary op between them become
    one drc.fused region, forward and backward alike: it reads its inputs
    once and writes its results once per tile of tokens. Regions of one op
    are left as they are. Before grouping, a backward op that reads a value
    computed by a forward region gets a recomputed copy instead (option
    `recompute`): the backward region then reads the forward region's inputs
    and the forward region stops writing its intermediates, except values
    that cost more than a few flops per byte to recompute (the results of
    coefficient projections, checkpoints of long chains), which stay saved;
    a recomputed value whose data the backward region reads anyway in
    another shape (mHC's state, read as its [N, n C] rows) is read as a
    view of that instead.
    With the same option, a forward value only the next forward region
    reads, made from values written anyway (HC's A_r^T H from the state
    saved for the weight gradients), is computed by that region instead of
    written. Before that,
    sums of per-token adjoint contributions add their terms in order of
    barrier depth, and token-local ops linear in such a sum are applied to
    its early and late terms apart (EarlySums.h), so that a backward region
    writes the contributions it computes as one tensor; and two of every
    three accumulators of a depth bank's adjoint (AttnRes's, shrinking by a
    row per consumer) are summed from their terms' rows in the region that
    forms the next, which reads the bank's rows anyway; the deferred
    consumers read only their appended row, the depth softmax's sum taken
    as dm . m (BankAdjoints.h). A
    coefficient projection's weight gradient too wide for per-tile partial
    sums (mHC's φ) has its per-token factor dy / rms(x) split off as
    drc.scale_by_inv_rms, which joins dy's region, and reads it prescaled.
  }];
  let options = [
    Option<"recompute", "recompute", "bool", "true",
           "Recompute forward values a backward region (or, from values "
           "written anyway, the next forward region) reads instead of "
           "saving them, where that is cheaper">,
    Option<"tileTokens", "tile-tokens", "int64_t", "0",
           "Tokens per tile (0: the most, up to 64, whose largest per-tile "
           "value fits in 64 KiB, or, up to 16 tokens, in 512 KiB)">,
  ];
  let dependentDialects = ["::mlir::drc::DrcDialect"];
}

def LowerToLinalg : Pass<"drc-lower-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower kernel-level drc ops to linalg, tensor, arith and math";
  let description = [{
    Every kernel-level and adjoint op becomes linalg.generic/linalg.fill/
    tensor ops on tensors, for any float element type. The weight
    gradients of the normed linears of one input are one stacked matmul,
    which reads the input once. A drc.fused region becomes an scf.forall
    over its tiles; a result that adds to an input only the region reads
    (an adjoint carried from region to region, AttnRes's bank gradient
    less the row its append takes) is written over that input. Causal
    attention is a parallel loop over its (sequence, head) blocks (or, off
    head-blocks, batched products over head-major copies). Parameter state
    ops (param_ref, grad_store, adamw) are left for drc-bind-buffers.
  }];
  let options = [
    Option<"denseEmbeddingGrad", "dense-embedding-grad", "bool", "false",
           "The embedding gradient as a contraction with the tokens' one-hot "
           "rows, parallel over the table (for GPUs), not a serial "
           "scatter-add over tokens">,
    Option<"headBlocks", "head-blocks", "bool", "true",
           "Causal attention as one parallel loop over its (sequence, head) "
           "blocks, each reading its slices of q, k and v in place and "
           "keeping its [T, T] scores in cache (for CPUs); off: batched "
           "products over all blocks, copied head-major (for GPUs)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

def BindBuffers : Pass<"drc-bind-buffers", "::mlir::ModuleOp"> {
  let summary = "Bind parameter state to the runtime's flat buffers";
  let description = [{
    Gives each function memref arguments for the runtime's flat parameter,
    gradient and AdamW-moment buffers (the layout of the parameter table:
    decay group first, each parameter 64-byte aligned, declaration order),
    its tokens and its scalars, and rewrites param_ref, grad_store and adamw
    into reads and writes of those buffers. Results go to an `out` buffer, so
    every function has the C signature the runtime calls.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect", "::mlir::scf::SCFDialect"];
}

def CpuTileAndVectorize : Pass<"drc-cpu-tile", "::mlir::func::FuncOp"> {
  let summary = "Tile and vectorise drc's kernels for the host CPU, on tensors";
  let description = [{
    Matmuls (linalg.matmul, row-major) are split across
    threads along m (scf.forall), blocked along k, and tiled to a register
    tile (4x16 for 16 AVX2 registers, 8x32 for 32 AVX-512 ones) vectorised to vector.contract with the C tile hoisted out
    of the k loop. A matmul from zeros whose register tiles cover its
    whole result and k range starts each tile from zeros instead of
    filling the whole result first; causal attention's products visit only
    the tiles and k terms on or below the diagonal, and the kernels of its
    softmax and adjoint over a block's scores (drc.causal = "rows") run per
    16 rows over the columns up to the tile's last row. A copy inside a
    thread's loop that swaps its last two axes (attention's kᵀ, vᵀ of a
    block) moves in 16x16 squares transposed by register shuffles. Tile sizes are chosen per op to divide its static shape,
    so no masking is needed; an op whose shape no tile divides stays scalar
    (correct, slower), except a causal product, whose register tile narrows
    down to one column (a head of 28) so that it still skips the scores
    above the diagonal, which the softmax never writes. A fused region's small elementwise kernels (innermost
    extent at most 8, at most 1024 elements: Sinkhorn steps, coefficient
    squashes) are vectorised, 16 elements per vector op, constant-index
    reads becoming shuffles of the token's matrix read once, their arithmetic on flat 16-lane vectors. Outside fused regions, a long sum into a
    small result (a parameter gradient over tokens, and bank rows for
    AttnRes's queries) becomes 16 threaded partial sums over its longest
    summed axis, added in order; other kernels, on tensors or in place on
    buffers (AdamW), split their outer loop across threads. Loops left for
    LLVM carry fast-math flags: reductions reassoc and contract (LLVM
    vectorises them), other bodies contract (a product and a sum may become
    an FMA). A row appended
    to a bank through a reshape becomes a rank-reducing insert, so its
    producer writes the bank row. Runs before bufferization, on each
    function (the pass manager's threads take the entry points side by
    side).
  }];
  let options = [
    Option<"registerRows", "register-rows", "int64_t", "4",
           "Rows of the register tile (divided down to fit the shape)">,
    Option<"registerColumns", "register-columns", "int64_t", "16",
           "Columns of the register tile: two vector registers' worth">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::affine::AffineDialect"];
}

def ApproximateMath : Pass<"drc-approximate-math", "::mlir::func::FuncOp"> {
  let summary = "Replace f32 math.exp by a polynomial that LLVM can vectorise";
  let description = [{
    libm's expf is a scalar call, so a softmax or SiLU loop that calls it
    stays scalar. MLIR's polynomial approximation (range reduction and a
    degree-5 polynomial; under 1 ulp, max relative error 8.3e-8 on normal
    results, bench/exp-approximation.py) is plain arithmetic that the loop
    vectoriser turns into 8-wide code.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def StoreBanks : Pass<"drc-store-banks", "::mlir::ModuleOp"> {
  let summary = "Grow each depth bank in one store instead of copying it per append";
  let description = [{
    On kernel-level drc ops (after drc-fuse-token-local, which leaves a
    bank's appends out of its regions): a chain of drc.append ops that grow
    a bank (AttnRes's c_{k+1} = [c_k ; f_k], MoDA's depth caches) becomes
    tensor.insert_slice ops into one store tensor [N, capacity, w], each
    bank its first rows (tensor.extract_slice). A bank read after a later
    append reads those rows from the latest store, so one-shot
    bufferization writes every append in place: a forward pass writes each
    row once instead of copying the whole bank per append (O(L) instead of
    O(L^2) traffic).
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def BankStoresToBuffers : Pass<"drc-bank-stores-to-buffers", "::mlir::func::FuncOp"> {
  let summary = "Make each depth bank's store a buffer before bufferization";
  let description = [{
    On linalg on tensors, before empty-tensor elimination and one-shot
    bufferization: a store that drc-store-banks grows (a tensor.empty it
    marks `drc.bank_store`, a chain of tensor.insert_slice appends into it,
    tensor.extract_slice reads of its versions) becomes a memref.alloc; each
    append a
    bufferization.materialize_in_destination into a subview of it, each
    read a bufferization.to_tensor of a subview. One-shot bufferization's
    analysis checks every in-place write against every read of a tensor's
    aliases, which for a store is every append against every bank read:
    cubic in depth. A chain whose read may overlap rows a later append
    writes, or whose bank a function returns, is left alone.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FuseTileElementwise : Pass<"drc-fuse-tile-elementwise", "::mlir::ModuleOp"> {
  let summary = "Merge the elementwise linalg ops of a fused region's tile";
  let description = [{
    On linalg on tensors (after drc-lower-to-linalg): a generic whose
    reduction loops all have extent 1 (a stream mix by a width-1 operand)
    becomes elementwise; an elementwise generic whose init is a fill reads
    the fill's value instead (0 + x is x), so the zeros are never written;
    and inside a fused region's tile (an scf.forall body) an elementwise
    producer with one use is merged into its consumer when the consumer
    reads each of its elements once. Each merge removes a tile-sized
    temporary and a pass over it. A kernel a tile computes twice (same
    inputs and body, inits filled alike: a backward region's recomputed
    forward values) is computed once. A matmul in a tile over at most four
    terms (an outer product: HC's coefficient gradients times a weight)
    becomes such a generic, expanded to the tile's shape; a cheap kernel that
    only spreads smaller operands over the tile is recomputed by each of its
    elementwise readers instead of written once and read back. A result
    split between the tile's outputs (AttnRes's bank gradient) is computed
    part by part, each part written into its output; a tile's kernel that
    adds to the output it reads (drc-lower-to-linalg's results written over
    an input) reads and writes the output's slice it is inserted into, last
    in the tile, so bufferization updates it in place. Kernels
    outside fused regions are not merged: the unfused program stays the
    reference.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect"];
}

def CopiesToLinalg : Pass<"drc-copies-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Turn memref.copy into linalg.copy, lowered to loops like any kernel";
  let description = [{
    Bufferization copies a row block of a set (drc.append, a rows gradient)
    into a strided view with memref.copy, which the LLVM lowering turns into
    a call to MLIR's C runner library (absent from a drc program). As
    linalg.copy it becomes a loop nest that drc-outline-kernels outlines.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def FreeBuffers : Pass<"drc-free-buffers", "::mlir::func::FuncOp"> {
  let summary = "Free each heap buffer at the end of the block that allocates it";
  let description = [{
    After one-shot bufferization, drc's programs allocate only buffers that
    no op returns, yields or stores: the step function's temporaries between
    kernels and a token tile's in a loop iteration. Each `memref.alloc` gets
    a `memref.dealloc` before its block's terminator, where MLIR's
    buffer-deallocation-pipeline puts them for such programs, without its
    ownership analysis and canonicalizations (over a quarter of the CPU
    pipeline's time). A buffer that is returned or yielded, or passed to an
    op other than a view that has a memref result (itself or a view of
    it), is an error, not a leak.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def GpuScalarOperands : Pass<"drc-gpu-scalar-operands", "::mlir::func::FuncOp"> {
  let summary = "Make scalars a linalg.generic reads from tensors its operands";
  let description = [{
    A kernel body may use a scalar computed outside it from a 0-d tensor
    (`tensor.extract %t[]`, then arith and math: the loss's token count, the
    optimizer's clip factor). On a CPU the host reads it; on a GPU the
    tensor lives in device memory. This pass clones that scalar computation
    into the generic's body and adds each 0-d tensor it extracts from as an
    input with the map `(d...) -> ()` (its buffer, for a generic on
    buffers), so every kernel reads what it needs itself and bufferization
    keeps the buffer alive until then. Run before bufferization.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def GpuWrapSerial : Pass<"drc-gpu-wrap-serial", "::mlir::func::FuncOp"> {
  let summary = "Put a bufferized function's serial work in one-iteration parallel loops";
  let description = [{
    On a GPU the host only launches kernels and never touches device memory.
    After bufferization and linalg-to-parallel-loops, what is left at the top
    level of a function besides parallel loops (full reductions as scf.for,
    the optimizer's scalar loads, stores and arithmetic, a scratch alloca) is
    serial work. Each maximal run of it becomes the body of
    `scf.parallel (%i) = (0) to (1)`, so that gpu-map-parallel-loops and
    convert-parallel-loops-to-gpu launch it as a one-thread kernel. What
    stays on the host: constants, allocations and deallocations, views,
    globals, parallel loops, the matrix products left to cuBLASLt
    (drc-gpu-linalg-to-loops) and the return. A run whose results are used
    after it is an error.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def GpuParallelReductions
    : Pass<"drc-gpu-parallel-reductions", "::mlir::func::FuncOp"> {
  let summary = "Make a bufferized function's reductions parallel for a GPU";
  let description = [{
    convert-linalg-to-parallel-loops makes parallel loops of a linalg op's
    leading parallel dimensions only, so this pass, on buffers before it:
    - moves every linalg.generic's parallel dimensions before its
      reductions (a column sum over tokens becomes one thread per column);
    - splits a full sum at the function's top level (reductions of static
      sizes, n elements in all, read along every dimension, a 0-d output,
      a body yielding `arith.addf(value, out)`; several dimensions are
      collapsed into one first): into P partial sums over a scratch buffer,
      partial[p] = sum_j f(x[j * P + p]), so that neighbouring threads read
      neighbouring elements, then out += sum_p partial[p], split again while
      it is large. P is the largest power of two up to 65536 with at least
      32 elements per partial (no split below 8 partials); when P does not
      divide n, the last n mod P elements are a sum of their own. The sum's
      order changes, not its terms.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def GpuPrivatizeBuffers
    : Pass<"drc-gpu-privatize-buffers", "::mlir::func::FuncOp"> {
  let summary = "Give each iteration of a future kernel a slice of a host buffer";
  let description = [{
    A `memref.alloc` inside a top-level `scf.parallel` with constant bounds
    (a temporary too large for a GPU thread's stack, such as a token's copy
    of Full AttnRes's depth bank, or a block region's temporary, which the
    block's threads share) would become device `malloc`. Instead, the
    loop's temporaries share one byte buffer allocated before the loop and
    freed after it: each iteration's slice (at its row-major number) holds
    each temporary in turn, 64-byte aligned (`memref.view`, the same type
    as the allocation), so a kernel takes one operand for all of them; the
    deallocations inside go.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def GpuVectorizeRows : Pass<"drc-gpu-vectorize-rows", "::mlir::func::FuncOp"> {
  let summary = "Vectorise a GPU thread's loops along contiguous rows";
  let description = [{
    On buffers, before convert-linalg-to-parallel-loops: every linalg op
    inside an `scf.forall` (a fused region's token loop, one token per GPU
    thread block) and every other one but a contraction (a matrix product
    drc-gpu-linalg-to-loops may leave to cuBLASLt) becomes loops; a loop
    index in the body (causal attention's mask) is a vector along the row. When one of the op's loop
    dimensions is the last, contiguous index of its operands (most votes
    among operands with a unit last stride; ties go to the later
    dimension), `width` divides its extent, and every operand that uses it
    uses it as its last, contiguous index, the op is tiled to one element
    along every other dimension and `width` along that one, and the tile is
    vectorised: `vector<width x T>` loads and stores, the body's arithmetic
    on vectors, and a reduction along the dimension as a `vector.reduction`
    into the accumulator. The op's parallel dimensions become one
    `scf.parallel` (which drc-gpu-block-regions shares among a block's
    threads), its reduced ones `scf.for` loops inside it in their order,
    the vectorised dimension innermost. When the row is the only reduced
    dimension, is at least 16 vectors long (a multiple of 8), and every
    reduction adds, multiplies, or takes the maximum or minimum of floats,
    it is summed in two parallel loops instead: partial sums over slices
    of 8 vectors (slice s takes vectors s, s + slices, ..., so consecutive
    threads read consecutive vectors) from the kind's identity into a
    temporary `[output..., slices]`, then each output's first value
    combined with its partial sums in order. Other ops are left as they
    are. Only the order of a reduction's additions changes.
  }];
  let options = [
    Option<"width", "width", "int64_t", "4",
           "Elements per vector (4 f32 make a 16-byte access)">,
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GpuAlignVectors : Pass<"drc-gpu-align-vectors", "::mlir::func::FuncOp"> {
  let summary = "Record the alignment of vector loads and stores it can prove";
  let description = [{
    NVPTX makes one 16-byte `ld.global.v4.f32` of a `vector<4xf32>` load
    only when it knows the address to be 16-byte aligned. A GPU program's
    buffers start at multiples of `buffer-alignment` bytes (the function's
    arguments, allocations, globals, and allocas that say so); a
    `memref.view` keeps that when its byte shift is a multiple of it. A
    vector load or store of a 1-d vector no larger than that alignment gets
    `alignment` = the vector's bytes when its element offset from the
    buffer's start (the views' static offsets, or a subview's offsets
    times its source's strides, and each index times its stride) is
    provably a multiple of the vector's length: constants, loop induction
    variables with such a lower bound and step, and their sums and
    products.
  }];
  let options = [
    Option<"bufferAlignment", "buffer-alignment", "int64_t", "16",
           "Bytes every buffer of the program is aligned to">,
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect"];
}

def GpuLinalgToLoops : Pass<"drc-gpu-linalg-to-loops", "::mlir::func::FuncOp"> {
  let summary = "Every linalg op as parallel loops, but the products cuBLASLt runs";
  let description = [{
    On buffers: what `convert-linalg-to-parallel-loops` does to every
    linalg op (parallel loops over its parallel dimensions, sequential ones
    over its reductions), except, with `library-gemms`, a
    `linalg.matmul` or `linalg.batch_matmul` at the function's top level on
    static f32 views (shape, strides and offset) whose A, B and C each
    have contiguous rows or contiguous columns: that stays a linalg op, which the launch plan
    of `drc-compile --target=cuda` records as a product the runtime runs
    in cuBLASLt (bf16 inputs, f32 sums) instead of a kernel. A zero fill
    of its C just before it (views may come between) stays too, marked
    `drc.folded_fill`, and the product `drc.overwrites`: on the GPU the
    fill launches nothing and the product overwrites C (cuBLAS's beta = 0:
    one kernel and two passes over C fewer). Lowered for the CPU instead
    (the GPU loop form's test), both become loops there.
  }];
  let options = [
    Option<"libraryGemms", "library-gemms", "bool", "true",
           "Leave the products cuBLASLt can run to it">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GpuSinkConstants : Pass<"drc-gpu-sink-constants", "::mlir::func::FuncOp"> {
  let summary = "Clone the constants a future kernel uses into its body";
  let description = [{
    Before the top-level parallel loops become kernels: every constant
    defined outside such a loop and used inside it is cloned at the start
    of its body (once per loop), so that the kernel computes with an
    immediate instead of taking the value as a launch operand, and vector
    constants (a vectorised body's splats, drc-gpu-vectorize-rows), which
    a launch cannot pass, stay in the kernel.
  }];
}

def GpuBlockRegions : Pass<"drc-gpu-block-regions", "::mlir::func::FuncOp"> {
  let summary = "Run each token of a fused region on a thread block, in phases";
  let description = [{
    On the GPU loop form, after drc-gpu-linalg-to-loops: each top-level
    `scf.forall` (a fused region's token loop; constant bounds, no outputs,
    no mapping) becomes a block region, an `scf.parallel` whose every
    iteration is one thread block (`drc.gpu_block_region`: its threads, a
    multiple of 32 up to `block-threads`). Its body becomes a sequence of
    phases, `scf.parallel (%t) = (0) to (n)` loops marked `drc.gpu_threads`,
    one thread each, and work every thread runs alike:
    - an op's parallel loop is shared among up to `block-threads` threads:
      thread t runs the loop's iterations t, t + n, ... in row-major order,
      so consecutive threads take consecutive vectors of a row (loads
      coalesced across the warp);
    - each run of other work that writes memory (a reduction's loop, an
      accumulator's first store) is one phase of one thread, and
      one-thread phases with only views, index arithmetic and allocations
      between them are one phase;
    - views, index arithmetic, constants and loads stay for every thread.
    The token's temporaries become `memref.alloc`s that every thread of the
    block shares (drc-gpu-privatize-buffers gives each token a slice of a
    host buffer); parallel loops nested inside a phase become `scf.for`
    loops of its thread. Phases run one after another, so on the CPU the
    region computes what the tile loop did; drc-gpu-launch-block-regions
    puts a barrier between them on the GPU.
  }];
  let options = [
    Option<"blockThreads", "block-threads", "int64_t", "256",
           "Most threads per block (a multiple of 32, at most 1024)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def GpuLaunchBlockRegions
    : Pass<"drc-gpu-launch-block-regions", "::mlir::func::FuncOp"> {
  let summary = "Make each block region a kernel launch with barriers between its phases";
  let description = [{
    Each top-level block region (drc-gpu-block-regions) becomes a
    `gpu.launch` of one block per token with the region's threads: the
    token is the block's id, each phase an `scf.forall` over its threads
    mapped to `#gpu.thread<x>` and then (upstream's
    mapNestedForallToThreadsImpl) to the thread id, guarded where the phase
    uses fewer threads than the block. A `gpu.barrier` goes before a phase,
    or a load every thread runs between phases, whose accesses could
    overlap those since the last barrier with one of them a write (read
    after write, write after read or write): buffers are told apart by the
    allocation or argument they view, a token's temporaries (views of the
    scratch slice drc-gpu-privatize-buffers gave it, at the slice's start
    plus a constant) by their byte ranges; an op whose accesses are not
    known gets one. Phases on other buffers share the interval between two
    barriers. A phase of at most 32 threads (the first warp's) whose
    accesses race only with such phases' since the last barrier gets a
    warp barrier (`nvvm.bar.warp.sync`, all lanes) instead. Work outside
    the phases that writes memory is an error.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def GpuMapThreads : Pass<"drc-gpu-map-threads", "::mlir::func::FuncOp"> {
  let summary = "Tile each top-level parallel loop nest into thread blocks";
  let description = [{
    Each top-level `scf.parallel` with constant bounds becomes a future
    kernel's grid of thread blocks: its innermost dimension is split into
    blocks of up to `block-threads` threads (thread x, consecutive
    iterations on consecutive threads, so contiguous rows are read
    coalesced), and when that leaves the block small, the next dimension
    fills it (thread y). While the grid has fewer than `min-blocks` blocks,
    blocks are halved, down to a warp. The iterations past the end of a partial block are
    skipped by an `scf.if`. The loops carry their mapping: block x for the
    tiled innermost dimension, block y and z for the next ones (up to 65535
    blocks each), sequential loops inside a thread for the rest; every
    parallel loop nested in the body becomes scf.for loops in its thread. A one-iteration loop (serial
    work, drc-gpu-wrap-serial) is left to gpu-map-parallel-loops.
  }];
  let options = [
    Option<"blockThreads", "block-threads", "int64_t", "256",
           "Most threads per block (a power of two)">,
    Option<"minBlocks", "min-blocks", "int64_t", "264",
           "Fewest blocks to aim for (two per SM of an H100/H200)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect"];
}

def GpuMergeModules : Pass<"drc-gpu-merge-modules", "::mlir::ModuleOp"> {
  let summary = "Move every outlined kernel into one gpu.module";
  let description = [{
    gpu-kernel-outlining gives each kernel a gpu.module of its own; a
    program's kernels then become as many PTX modules. This pass moves
    every gpu.func into one gpu.module `@kernels` (renaming on a clash),
    keeping one of each set of identical kernels (the same work on the same
    shapes, as in every layer and in both loss and train_step), and points
    each gpu.launch_func at it, so a program is one PTX module the runtime
    loads once. Before comparing, a kernel argument that is a view at a
    static place (a layer's parameter) takes a dynamic offset, read from
    the memref descriptor the runtime passes, and each launch casts its
    view: the layers' copies of a kernel are then identical.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def OutlineKernels : Pass<"drc-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Move each loop nest of a bufferized entry point into its own function";
  let description = [{
    Every top-level loop nest (scf.forall, scf.for, linalg ops) of a public
    function becomes a private function called in its place (marked
    no_inline, which convert-func-to-llvm drops: LLVM inlines small steps
    into the loops that call them).
    LLVM's optimiser is superlinear in function size; a train step of
    hundreds of kernels in one function takes minutes to compile, as
    kernels it takes seconds. Identical kernels (the same nest on the same
    shapes, as in every layer and in both loss and train_step) are outlined
    once. Kernels are also the unit a device backend launches. Inside a
    kernel, a parallel loop calls each nest of its iteration (a fused
    region's tile: one nest per op) as a step function, deduplicated the
    same way (Sinkhorn's iterations, every layer's ops): LLVM's loop passes
    are superlinear in the loops of one function, and mHC's tiles hold
    hundreds; and a step's pointers are arguments that drc-mark-noalias can
    mark, where in the loop's body (outlined by OpenMP) they are loaded
    from its context. Before comparing, an argument that is a view
    at a static place (a layer's parameter in the parameter buffer, rows of
    a bank) becomes one with a dynamic offset, cast at the call, together
    with the views the function makes of it, so every layer's copy of a
    kernel or step is the same function: HC at d_model 256 outlines 193
    functions instead of 987. A kernel is named `<function>_kernel<N>`,
    followed by the part of the model it computes where its loop carries
    `drc.kernel_role` (`_fused`, `_attention` from drc-lower-to-linalg,
    `_matmul` from drc-cpu-tile), and its steps `<kernel>_step<M>`.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"];
}

def MarkNoAlias : Pass<"drc-mark-noalias", "::mlir::ModuleOp"> {
  let summary = "Record which memref arguments of outlined functions may be noalias";
  let description = [{
    After drc-outline-kernels: a private function's memref argument may be
    LLVM `noalias` when, at every call, no other memref argument it passes
    overlaps it where either is written. Where an argument points is traced
    through views (subview, cast, reshapes, reinterpret_cast, transpose) to
    its root: an allocation (which overlaps no other root), an argument of
    the caller (a public function's arguments overlap none: the runtime
    passes separate buffers, CpuJit::call; a private one's as its own
    callers pass them), or anything else (assumed to overlap everything).
    Two views of one root overlap unless their static layouts span disjoint
    elements. An argument is written where a use may store through it: a
    linalg op's init, memref.copy's target, a call that writes its argument,
    or any use not known to read. The pointers are recorded as
    `drc.noalias_pointers` (positions of the aligned pointers among the
    function's LLVM arguments), which drc-noalias-to-llvm applies: with
    them LLVM keeps a fused region's per-row values in registers across its
    stores instead of reloading them.
  }];
}

def BalanceFusedTiles : Pass<"drc-balance-fused-tiles", "::mlir::ModuleOp"> {
  let summary = "Hand a large fused region's tiles to whichever thread is free";
  let description = [{
    After convert-scf-to-openmp: the worksharing loop of a fused region's
    kernel (a function named `..._fused`, drc-outline-kernels) with at least
    `min-tiles` iterations gets `schedule(dynamic)`, one tile at a time.
    With the static schedule each thread takes an equal share of the tiles,
    and the two cores of a shared machine do not run equally fast (the
    worker thread took 6-12% more samples than the main one in HC's fused
    loop bodies), so one waited for the other at every region's end. With
    few tiles, the static schedule stays: a thread then takes the same tiles
    in every region, whose data its cache still holds. Results do not
    change: every tile writes only its own rows and partial sums, which are
    added in tile order after the loop.
  }];
  let options = [
    Option<"minTiles", "min-tiles", "int64_t", "64",
           "Fewest iterations for which the loop is scheduled dynamically">,
  ];
  let dependentDialects = ["::mlir::omp::OpenMPDialect"];
}

def NoAliasToLLVM : Pass<"drc-noalias-to-llvm", "::mlir::ModuleOp"> {
  let summary = "Put llvm.noalias on the pointers drc-mark-noalias recorded";
  let description = [{
    After convert-func-to-llvm, which drops `llvm.noalias` on memref
    arguments: each llvm.func's `drc.noalias_pointers` become `llvm.noalias`
    argument attributes. Fails if a recorded position is not a pointer (the
    calling convention drc-mark-noalias assumed changed).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // DRC_PASSES_TD
