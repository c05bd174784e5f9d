#!/usr/bin/python3
"""PyTorch side of the Pre-LN training-throughput benchmark.

The same model as drc's Pre-LN (ARCHITECTURES.md section 1, drc's conventions:
W is [out, in], heads are contiguous column chunks, rotate-half RoPE with
positions restarting per sequence, RMSNorm eps 1e-6, SwiGLU, untied
embedding/unembedding, no biases), trained on CPU in fp32 with AdamW
(betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on matrices only) and global
grad-norm clipping at 1.0, written the way a competent PyTorch user would.

Runs `--warmup-steps` untimed steps, then times `--steps` steps, and prints one
JSON line to stdout. Diagnostics (the thread count ATen reports) go to stderr.
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
        return self.gain * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


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


class Attention(nn.Module):
    def __init__(self, d_model, n_head, eps, use_sdpa):
        super().__init__()
        self.norm = RMSNorm(d_model, eps)
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.n_head = n_head
        self.use_sdpa = use_sdpa

    def forward(self, h, cos, sin):
        batch, seq_len, d_model = h.shape
        d_head = d_model // self.n_head
        u = self.norm(h)

        def heads(x):
            return x.view(batch, seq_len, self.n_head, d_head).transpose(1, 2)

        q = apply_rope(heads(self.wq(u)), cos, sin)
        k = apply_rope(heads(self.wk(u)), cos, sin)
        v = heads(self.wv(u))
        if self.use_sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d_head)
            future = torch.ones(seq_len, seq_len, dtype=torch.bool, device=h.device)
            scores = scores.masked_fill(future.triu(1), float("-inf"))
            y = scores.softmax(dim=-1) @ v
        y = y.transpose(1, 2).reshape(batch, seq_len, d_model)
        return self.wo(y)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, eps):
        super().__init__()
        self.norm = RMSNorm(d_model, eps)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, h):
        u = self.norm(h)
        return self.w2(F.silu(self.w1(u)) * self.w3(u))


class Block(nn.Module):
    def __init__(self, d_model, n_head, d_ff, eps, use_sdpa):
        super().__init__()
        self.attn = Attention(d_model, n_head, eps, use_sdpa)
        self.ffn = FeedForward(d_model, d_ff, eps)

    def forward(self, h, cos, sin):
        h = h + self.attn(h, cos, sin)
        return h + self.ffn(h)


class Embedding(nn.Module):
    """Holds `weight` [V, d] so that parameter names match drc's."""

    def __init__(self, vocab, d_model):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab, d_model))


class PreLnModel(nn.Module):
    """Parameter names match drc's: embed.weight, blocks.{b}.attn.wq.weight
    (drc: blocks.{b}.attn.wq), ..., final_norm.gain, unembed.weight."""

    def __init__(self, vocab, d_model, n_layer, n_head, d_ff, seq_len,
                 eps=1e-6, rope_theta=10000.0, use_sdpa=HAS_SDPA):
        super().__init__()
        if d_model % n_head or (d_model // n_head) % 2:
            raise ValueError(f"d_model {d_model} must split into {n_head} heads of even width")
        self.embed = Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(
            Block(d_model, n_head, d_ff, eps, use_sdpa) for _ in range(n_layer))
        self.final_norm = RMSNorm(d_model, eps)
        self.unembed = nn.Linear(d_model, vocab, bias=False)
        cos, sin = rope_tables(seq_len, d_model // n_head, rope_theta)
        self.register_buffer("rope_cos", cos.float(), persistent=False)
        self.register_buffer("rope_sin", sin.float(), persistent=False)
        self.reset_parameters()

    def reset_parameters(self):
        """TruncNormal(0, 0.02) clipped at +-0.06 for matrices, 1 for gains."""
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.trunc_normal_(p, mean=0.0, std=0.02, a=-0.06, b=0.06)
            else:
                nn.init.ones_(p)

    def forward(self, tokens):
        """Logits [B, T, V] for tokens [B, T]."""
        seq_len = tokens.shape[1]
        cos = self.rope_cos[:seq_len].to(self.embed.weight.dtype)
        sin = self.rope_sin[:seq_len].to(self.embed.weight.dtype)
        h = F.embedding(tokens, self.embed.weight)
        for block in self.blocks:
            h = block(h, cos, sin)
        return self.unembed(self.final_norm(h))

    def loss(self, tokens, targets):
        """Mean next-token cross-entropy over all B*T positions."""
        logits = self.forward(tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def make_optimizer(model, lr):
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    gains = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": matrices, "weight_decay": 0.1},
         {"params": gains, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.95), eps=1e-8)


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
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup_steps < 0:
        parser.error("--steps must be >= 1 and --warmup-steps >= 0")
    if args.attention == "sdpa" and not HAS_SDPA:
        parser.error(f"--attention sdpa: torch {torch.__version__} has no "
                     "F.scaled_dot_product_attention (added in 2.0)")
    if args.d_ff is None:
        args.d_ff = default_d_ff(args.d_model)
    return args


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch_preln: ATen threads = {aten_thread_count()}", file=sys.stderr)
    blas = loaded_blas()
    print(f"torch_preln: BLAS = {blas}", file=sys.stderr)
    torch.manual_seed(args.seed)
    use_sdpa = HAS_SDPA if args.attention == "auto" else args.attention == "sdpa"

    model = PreLnModel(args.vocab, args.d_model, args.n_layer, args.n_head, args.d_ff,
                       args.seq_len, use_sdpa=use_sdpa)
    optimizer = make_optimizer(model, args.lr)
    generator = torch.Generator().manual_seed(args.seed)
    data = torch.randint(0, args.vocab, (args.batch, args.seq_len + 1), generator=generator)
    tokens, targets = data[:, :-1].contiguous(), data[:, 1:].contiguous()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = model.loss(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()

    for _ in range(args.warmup_steps):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    elapsed = time.perf_counter() - start

    print(json.dumps({
        "impl": "torch",
        "tokens_per_s": args.batch * args.seq_len * args.steps / elapsed,
        "step_ms": 1000.0 * elapsed / args.steps,
        "threads": args.threads,
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
