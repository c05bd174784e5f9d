#!/usr/bin/python3
"""PyTorch side of the training-throughput benchmarks (bench/cpu-step, scripts/gpu-check).

The same models as drc's Pre-LN, HC (n = 4), mHC (n = 4) and Full AttnRes
(ARCHITECTURES.md sections 1 and 2 with drc's conventions: W is [out, in],
heads are contiguous column chunks, rotate-half RoPE with positions restarting
per sequence, RMSNorm eps 1e-6, SwiGLU, untied embedding/unembedding, no
biases), trained on CPU in fp32 with AdamW (betas (0.9, 0.95), eps 1e-8,
weight decay 0.1 with section 1.3's groups) and global grad-norm clipping at
1.0, written the way a competent PyTorch user would.

On a GPU (`--device cuda`, for scripts/gpu-check) the same model can run with
`--compile` (torch.compile of the loss) and `--bf16` (autocast: matmuls in
bf16 with fp32 accumulation, parameters and optimizer in fp32, fused AdamW).

Runs `--warmup-steps` untimed steps, then times `--steps` steps, and prints one
JSON line to stdout. Diagnostics (the thread count ATen reports) go to stderr.
`--self-test` instead checks each scheme against Pre-LN at init (equal losses
and backbone gradients for the same backbone weights, ARCHITECTURES.md's
"=PLN@0") and exits non-zero on a mismatch.
"""

import argparse
import json
import math
import os
import re
import sys
import time

if __name__ == "__main__":
    # OpenBLAS sizes its thread pool when torch loads it, and torch.set_num_threads
    # does not reach it, so --threads must be in the environment before the import.
    _pre = argparse.ArgumentParser(add_help=False)
    _pre.add_argument("--threads", type=int, default=2)
    os.environ["OPENBLAS_NUM_THREADS"] = str(_pre.parse_known_args()[0].threads)

import torch
import torch.nn as nn
import torch.nn.functional as F

# F.scaled_dot_product_attention arrived in torch 2.0; Debian 12 ships 1.13.
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def default_d_ff(d_model):
    """16 * ceil(8d / 48): 8d/3 rounded up to a multiple of 16."""
    return 16 * math.ceil(8 * d_model / 48)


class RMSNorm(nn.Module):
    def __init__(self, d_model, eps):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x):
        return self.gain * rms(x, self.eps)


def rope_tables(seq_len, d_head, theta):
    """cos and sin, [seq_len, d_head/2], of the angle t * theta^(-2i/d_head)."""
    i = torch.arange(d_head // 2, dtype=torch.float64)
    inv_freq = theta ** (-2.0 * i / d_head)
    t = torch.arange(seq_len, dtype=torch.float64)
    angle = torch.outer(t, inv_freq)
    return angle.cos(), angle.sin()


def apply_rope(x, cos, sin):
    """Rotate-half RoPE of x [B, H, T, d_head]: pairs (i, i + d_head/2)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Embedding(nn.Module):
    """Holds `weight` [V, d] so that parameter names match drc's."""

    def __init__(self, vocab, d_model):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab, d_model))


def rms(x, eps=1e-6):
    """N(x): x over the root mean square of its last axis (no gain)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


class Attention(nn.Module):
    """F^att without its norm: the connection supplies the read u."""

    def __init__(self, d_model, n_head, use_sdpa):
        super().__init__()
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.n_head = n_head
        self.use_sdpa = use_sdpa

    def forward(self, u, cos, sin):
        batch, seq_len, d_model = u.shape
        d_head = d_model // self.n_head

        def heads(x):
            return x.view(batch, seq_len, self.n_head, d_head).transpose(1, 2)

        q = apply_rope(heads(self.wq(u)), cos, sin)
        k = apply_rope(heads(self.wk(u)), cos, sin)
        v = heads(self.wv(u))
        if self.use_sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d_head)
            future = torch.ones(seq_len, seq_len, dtype=torch.bool, device=u.device)
            scores = scores.masked_fill(future.triu(1), float("-inf"))
            y = scores.softmax(dim=-1) @ v
        y = y.transpose(1, 2).reshape(batch, seq_len, d_model)
        return self.wo(y)


class FeedForward(nn.Module):
    """F^ffn (SwiGLU) without its norm."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, u):
        return self.w2(F.silu(self.w1(u)) * self.w3(u))


# Residual connections (ARCHITECTURES.md section 2). Each sublayer k owns one:
# read(state) -> (u_k, context), write(state, context, f_k) -> next state.
# The model calls embed(h_0) once, and before the final norm the scheme's
# readout module (SCHEMES) maps the last state to h_out.
# Parameters named in NO_DECAY are in AdamW's no-weight-decay group.
NO_DECAY = {"gain", "a0", "beta0", "alpha", "bias", "kappa"}


class PreLn(nn.Module):
    """2.1: u = RMSNorm(h), h <- h + f."""

    def __init__(self, d_model, k, eps):
        super().__init__()
        self.norm = RMSNorm(d_model, eps)

    @staticmethod
    def embed(h0):
        return h0

    def read(self, h):
        return self.norm(h), None

    @staticmethod
    def write(h, context, f):
        return h + f


class HyperConnection(nn.Module):
    """2.7: dynamic HC with n streams, state [B, T, n, d]. W_A's n+1 columns and
    w_B are one [n+2, d] matrix, so the coefficients are one GEMM."""

    def __init__(self, d_model, k, eps, streams):
        super().__init__()
        n = streams
        self.n, self.eps = n, eps
        self.norm = RMSNorm(d_model, eps)
        self.res = nn.Module()
        self.res.w = nn.Parameter(torch.zeros(n + 2, d_model))
        self.res.s = nn.Parameter(torch.full((2,), 0.01))  # s_A, s_B
        a0 = torch.zeros(n, n + 1)
        a0[k % n, 0] = 1.0
        a0[:, 1:] = torch.eye(n)
        self.res.a0 = nn.Parameter(a0)
        self.res.beta0 = nn.Parameter(torch.ones(n))

    def embed(self, h0):
        return h0.unsqueeze(-2).expand(*h0.shape[:-1], self.n, h0.shape[-1])

    def read(self, h):
        n, res = self.n, self.res
        z = torch.tanh(F.linear(rms(h, self.eps), res.w))  # [B, T, n, n+2]
        a = res.s[0] * z[..., : n + 1] + res.a0
        beta = res.s[1] * z[..., n + 1] + res.beta0
        m = a.transpose(-1, -2) @ h  # [B, T, n+1, d]
        return self.norm(m[..., 0, :]), (m[..., 1:, :], beta)

    @staticmethod
    def write(h, context, f):
        kept, beta = context
        return kept + beta.unsqueeze(-1) * f.unsqueeze(-2)


class ManifoldHyperConnection(nn.Module):
    """2.8: mHC with n streams, gap-8 init, 20 Sinkhorn iterations."""

    def __init__(self, d_model, k, eps, streams, sinkhorn_iterations=20):
        super().__init__()
        n = streams
        self.n, self.eps, self.iterations = n, eps, sinkhorn_iterations
        self.norm = RMSNorm(d_model, eps)
        self.res = nn.Module()
        self.res.phi = nn.Parameter(torch.zeros(n * n + 2 * n, n * d_model))
        self.res.alpha = nn.Parameter(torch.full((3,), 0.01))  # pre, post, res
        bias_pre = torch.full((n,), -8.0)
        bias_pre[k % n] = 8.0
        bias_res = torch.full((n, n), -8.0).fill_diagonal_(0.0)
        self.res.bias = nn.Parameter(torch.cat((bias_pre, torch.zeros(n), bias_res.flatten())))

    def embed(self, h0):
        return h0.unsqueeze(-2).expand(*h0.shape[:-1], self.n, h0.shape[-1])

    def read(self, x):
        n, res = self.n, self.res
        z = F.linear(rms(x.flatten(-2), self.eps), res.phi)  # [B, T, n^2 + 2n]
        scale = torch.repeat_interleave(res.alpha, torch.tensor([n, n, n * n]))
        psi = scale * z + res.bias
        pre = torch.sigmoid(psi[..., :n])
        post = 2.0 * torch.sigmoid(psi[..., n : 2 * n])
        m = torch.exp(psi[..., 2 * n :]).unflatten(-1, (n, n))
        for _ in range(self.iterations):
            m = m / (m.sum(-2, keepdim=True) + 1e-6)
            m = m / (m.sum(-1, keepdim=True) + 1e-6)
        read = (pre.unsqueeze(-2) @ x).squeeze(-2)
        return self.norm(read), (m, post)

    @staticmethod
    def write(x, context, f):
        h_res, post = context
        return h_res @ x + post.unsqueeze(-1) * f.unsqueeze(-2)


class DepthMixer(nn.Module):
    """softmax_i(w . RMSNorm_kappa(c_i)) over a bank's rows, mixing the rows.
    Each row's 1/rms is computed once, when it enters the bank."""

    def __init__(self, d_model):
        super().__init__()
        self.query = nn.Parameter(torch.zeros(d_model))
        self.kappa = nn.Parameter(torch.ones(d_model))

    def forward(self, bank):
        rows, inv_rms = bank
        values = torch.stack(rows, dim=-2)  # [B, T, s, d]
        logits = (values @ (self.query * self.kappa)) * torch.stack(inv_rms, dim=-1)
        weights = logits.softmax(-1)
        return (weights.unsqueeze(-2) @ values).squeeze(-2)


class AttentionResidual(nn.Module):
    """2.9: Full AttnRes. The state is the bank (rows, their 1/rms)."""

    def __init__(self, d_model, k, eps):
        super().__init__()
        self.eps = eps
        self.norm = RMSNorm(d_model, eps)
        self.res = DepthMixer(d_model)

    def inverse_rms(self, c):
        return torch.rsqrt(c.pow(2).mean(-1) + self.eps)

    def embed(self, h0):
        return [h0], [self.inverse_rms(h0)]

    def read(self, bank):
        return self.norm(self.res(bank)), None

    def write(self, bank, context, f):
        rows, inv_rms = bank
        return rows + [f], inv_rms + [self.inverse_rms(f)]


class StreamSum(nn.Module):
    """HC's readout: the sum of the streams."""

    def forward(self, h):
        return h.sum(-2)


class StreamMean(nn.Module):
    """mHC's readout: the mean of the streams."""

    def forward(self, x):
        return x.mean(-2)


# name -> (connection of sublayer k: (d_model, k, eps) -> module,
#          readout: d_model -> module; AttnRes's has its own parameters)
SCHEMES = {
    "preln": (PreLn, lambda d: nn.Identity()),
    "hc": (lambda d, k, eps: HyperConnection(d, k, eps, streams=4), lambda d: StreamSum()),
    "mhc": (lambda d, k, eps: ManifoldHyperConnection(d, k, eps, streams=4),
            lambda d: StreamMean()),
    "attnres": (AttentionResidual, DepthMixer),
}


class Sublayer(nn.Module):
    """Sublayer k: its core and its residual connection (which owns the pre-norm
    gain as `norm`, so Pre-LN's names are blocks.{b}.attn.norm.gain)."""

    def __init__(self, core, connection):
        super().__init__()
        self.core = core
        self.connection = connection

    def forward(self, state, *core_args):
        u, context = self.connection.read(state)
        return self.connection.write(state, context, self.core(u, *core_args))


class Model(nn.Module):
    """Parameter names: embed.weight, blocks.{b}.attn.core.wq.weight (drc's
    blocks.{b}.attn.wq), blocks.{b}.attn.connection.norm.gain,
    blocks.{b}.attn.connection.res.*, ..., final_norm.gain, unembed.weight."""

    def __init__(self, scheme, vocab, d_model, n_layer, n_head, d_ff, seq_len,
                 eps=1e-6, rope_theta=10000.0, use_sdpa=HAS_SDPA):
        super().__init__()
        if d_model % n_head or (d_model // n_head) % 2:
            raise ValueError(f"d_model {d_model} must split into {n_head} heads of even width")
        connection, readout = SCHEMES[scheme]
        self.embed = Embedding(vocab, d_model)
        self.blocks = nn.ModuleList()
        for b in range(n_layer):
            block = nn.Module()
            block.attn = Sublayer(Attention(d_model, n_head, use_sdpa), connection(d_model, 2 * b, eps))
            block.ffn = Sublayer(FeedForward(d_model, d_ff), connection(d_model, 2 * b + 1, eps))
            self.blocks.append(block)
        self.readout = readout(d_model)
        self.final_norm = RMSNorm(d_model, eps)
        self.unembed = nn.Linear(d_model, vocab, bias=False)
        cos, sin = rope_tables(seq_len, d_model // n_head, rope_theta)
        self.register_buffer("rope_cos", cos.float(), persistent=False)
        self.register_buffer("rope_sin", sin.float(), persistent=False)
        self.reset_parameters()

    def reset_parameters(self):
        """TruncNormal(0, 0.02) clipped at +-0.06 for the backbone's matrices;
        the connections keep the inits they were built with (1.3)."""
        for name, p in self.named_parameters():
            if p.dim() >= 2 and ".res." not in name:
                nn.init.trunc_normal_(p, mean=0.0, std=0.02, a=-0.06, b=0.06)

    def forward(self, tokens):
        """Logits [B, T, V] for tokens [B, T]."""
        seq_len = tokens.shape[1]
        cos = self.rope_cos[:seq_len].to(self.embed.weight.dtype)
        sin = self.rope_sin[:seq_len].to(self.embed.weight.dtype)
        first = self.blocks[0].attn.connection
        state = first.embed(F.embedding(tokens, self.embed.weight))
        for block in self.blocks:
            state = block.attn(state, cos, sin)
            state = block.ffn(state)
        return self.unembed(self.final_norm(self.readout(state)))

    def loss(self, tokens, targets):
        """Mean next-token cross-entropy over all B*T positions."""
        logits = self.forward(tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def make_optimizer(model, lr, fused=False):
    """AdamW; weight decay 0.1 except on gains and the NoWD coefficients (1.3)."""
    def decays(name):
        return name.rsplit(".", 1)[-1] not in NO_DECAY

    named = list(model.named_parameters())
    return torch.optim.AdamW(
        [{"params": [p for n, p in named if decays(n)], "weight_decay": 0.1},
         {"params": [p for n, p in named if not decays(n)], "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.95), eps=1e-8, **({"fused": True} if fused else {}))


def aten_thread_count():
    match = re.search(r"at::get_num_threads\(\) : (\d+)", torch.__config__.parallel_info())
    return int(match.group(1)) if match else None


def loaded_blas():
    """The BLAS shared object this process mapped (reference BLAS is ~10x slower)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "blas" in line.lower()}
    except OSError:
        return None
    return sorted(p for p in paths if p.startswith("/")) or None


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheme", choices=sorted(SCHEMES), default="preln")
    parser.add_argument("--list-schemes", action="store_true",
                        help="print the schemes this script implements, then exit")
    parser.add_argument("--self-test", action="store_true",
                        help="check every scheme equals Pre-LN at init, then exit")
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--n-layer", type=int, default=8)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=None,
                        help="FFN width (default 16*ceil(8*d_model/48))")
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10, help="timed steps")
    parser.add_argument("--warmup-steps", type=int, default=2, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--attention", choices=["auto", "sdpa", "explicit"], default="auto",
                        help="auto: F.scaled_dot_product_attention when this torch has it")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--compile", action="store_true",
                        help="torch.compile the loss (torch >= 2.0)")
    parser.add_argument("--bf16", action="store_true",
                        help="autocast to bf16 (matmuls bf16, fp32 accumulation and state)")
    args = parser.parse_args(argv)
    if args.compile and not hasattr(torch, "compile"):
        parser.error(f"--compile: torch {torch.__version__} has no torch.compile")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device")
    if args.steps < 1 or args.warmup_steps < 0:
        parser.error("--steps must be >= 1 and --warmup-steps >= 0")
    if args.attention == "sdpa" and not HAS_SDPA:
        parser.error(f"--attention sdpa: torch {torch.__version__} has no "
                     "F.scaled_dot_product_attention (added in 2.0)")
    if args.d_ff is None:
        args.d_ff = default_d_ff(args.d_model)
    return args


def self_test():
    """Each scheme against Pre-LN at init, in double, on a tiny model with the
    same backbone weights and RMSNorm eps = 0 (where the identity is exact but
    for mHC's gap-8 coefficients): the step-0 loss and the backbone gradients
    must agree."""
    torch.set_default_dtype(torch.float64)
    shape = dict(vocab=64, d_model=32, n_layer=3, n_head=2, d_ff=96, seq_len=16, eps=0.0)
    data = torch.randint(0, shape["vocab"], (2, shape["seq_len"] + 1),
                         generator=torch.Generator().manual_seed(1))
    tokens, targets = data[:, :-1], data[:, 1:]

    def run(scheme):
        torch.manual_seed(0)
        model = Model(scheme, **shape)
        loss = model.loss(tokens, targets)
        loss.backward()
        grads = {n.replace("connection.", ""): p.grad for n, p in model.named_parameters()
                 if ".res." not in n and not n.startswith("readout")}
        return loss.item(), grads

    reference_loss, reference_grads = run("preln")
    failed = False
    for scheme in sorted(set(SCHEMES) - {"preln"}):
        loss, grads = run(scheme)
        worst = max(((g - reference_grads[n]).abs().max() /
                     reference_grads[n].abs().max()).item() for n, g in grads.items())
        ok = abs(loss - reference_loss) < 1e-7 and worst < 1e-4
        failed |= not ok
        print(f"self-test {scheme}: loss {loss:.9f} vs Pre-LN {reference_loss:.9f}, "
              f"worst backbone gradient difference {worst:.1e} (relative): "
              f"{'ok' if ok else 'MISMATCH'}", file=sys.stderr)
    return 1 if failed else 0


def main(argv):
    args = parse_args(argv)
    if args.list_schemes:
        print(" ".join(sorted(SCHEMES)))
        return
    if args.self_test:
        sys.exit(self_test())
    torch.set_num_threads(args.threads)
    print(f"torch_model: ATen threads = {aten_thread_count()}", file=sys.stderr)
    blas = loaded_blas()
    print(f"torch_model: BLAS = {blas}", file=sys.stderr)
    torch.manual_seed(args.seed)
    use_sdpa = HAS_SDPA if args.attention == "auto" else args.attention == "sdpa"

    device = torch.device(args.device)
    model = Model(args.scheme, args.vocab, args.d_model, args.n_layer, args.n_head,
                  args.d_ff, args.seq_len, use_sdpa=use_sdpa).to(device)
    optimizer = make_optimizer(model, args.lr, fused=args.device == "cuda")
    generator = torch.Generator().manual_seed(args.seed)
    data = torch.randint(0, args.vocab, (args.batch, args.seq_len + 1), generator=generator)
    tokens, targets = data[:, :-1].contiguous().to(device), data[:, 1:].contiguous().to(device)
    loss_fn = torch.compile(model.loss) if args.compile else model.loss

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.bf16):
            loss = loss_fn(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()  # waits for the device

    warmup_start = time.perf_counter()
    for _ in range(args.warmup_steps):
        step()
    warmup = time.perf_counter() - warmup_start
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    elapsed = time.perf_counter() - start

    print(json.dumps({
        "impl": "torch",
        "scheme": args.scheme,
        "tokens_per_s": args.batch * args.seq_len * args.steps / elapsed,
        "step_ms": 1000.0 * elapsed / args.steps,
        "threads": args.threads,
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "compile": args.compile, "bf16": args.bf16, "warmup_s": warmup,
        "torch": torch.__version__,
        "attention": "sdpa" if use_sdpa else "explicit",
        "blas": blas,
        "vocab": args.vocab, "d_model": args.d_model, "n_layer": args.n_layer,
        "n_head": args.n_head, "d_ff": args.d_ff, "seq_len": args.seq_len,
        "batch": args.batch, "steps": args.steps, "warmup_steps": args.warmup_steps,
        "params": sum(p.numel() for p in model.parameters()),
        "final_loss": loss,
    }))


if __name__ == "__main__":
    main(sys.argv[1:])
