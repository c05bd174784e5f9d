#!/usr/bin/python3
"""How far one training step's loss and gradients move when every matrix
product rounds its inputs to bf16 and sums in f32 (what cuBLASLt's
CUBLAS_COMPUTE_32F_FAST_16BF does with drc's GPU products), for the
PyTorch reference models (bench/torch_model.py) at scripts/gpu-bundle's
check shape. It measures, on this CPU, the error that scripts/compare-runs'
bf16 tolerances (loss 5e-3, each tensor's gradient 3e-2 relative in the
2-norm) must absorb when a GPU step is compared with the CPU's f32 step.

  bench/bf16-gemm-error.py [--seeds N]

Prints, per scheme, the loss's relative error and the largest (with its
tensor) and median per-tensor gradient errors over N seeds (tensors whose reference norm is
below 1e-6 of the largest one's compared against that norm, as
compare-runs does).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_model  # noqa: E402


def bf16(x):
    return x.to(torch.bfloat16).to(torch.float32)


class Bf16Product(torch.autograd.Function):
    """a @ b with both inputs rounded to bf16 and f32 sums, forward and in
    both adjoint products (each an input-rounded product too)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.matmul(bf16(a), bf16(b))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        g = bf16(grad)
        da = torch.matmul(g, bf16(b).transpose(-2, -1))
        db = torch.matmul(bf16(a).transpose(-2, -1), g)
        # Undo broadcasting over leading dimensions (a linear's weight).
        while db.dim() > b.dim():
            db = db.sum(0)
        return da, db


def product(a, b):
    """a @ b through Bf16Product, vectors as one-row or one-column matrices."""
    if b.dim() == 1:
        return product(a, b.unsqueeze(-1)).squeeze(-1)
    if a.dim() == 1:
        return product(a.unsqueeze(0), b).squeeze(-2)
    return Bf16Product.apply(a, b)


def step(model, tokens, targets):
    model.zero_grad()
    loss = model.loss(tokens, targets)
    loss.backward()
    return loss.item(), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(2)
    shape = dict(vocab=256, d_model=64, n_layer=2, n_head=4, d_ff=None, seq_len=64)
    shape["d_ff"] = torch_model.default_d_ff(shape["d_model"])
    plain_linear, plain_matmul = F.linear, torch.Tensor.__matmul__
    print("scheme   loss rel. error   gradient rel. error: max, median over tensors")
    for scheme in ["preln", "hc", "mhc", "attnres"]:
        losses, worst, medians = [], [], []
        for seed in range(args.seeds):
            torch.manual_seed(seed)
            model = torch_model.Model(scheme, use_sdpa=False, **shape)
            tokens = torch.randint(0, shape["vocab"], (4, shape["seq_len"]))
            targets = torch.randint(0, shape["vocab"], (4, shape["seq_len"]))
            loss, grads = step(model, tokens, targets)
            F.linear = lambda x, w, b=None: Bf16Product.apply(x, w.t())
            torch.Tensor.__matmul__ = product
            try:
                loss16, grads16 = step(model, tokens, targets)
            finally:
                F.linear, torch.Tensor.__matmul__ = plain_linear, plain_matmul
            losses.append(abs(loss16 - loss) / abs(loss))
            largest = max(g.norm().item() for g in grads.values())
            errors = [(grads16[n] - g).norm().item() /
                      max(g.norm().item(), 1e-6 * largest) for n, g in grads.items()]
            worst.append(max(zip(errors, grads)))
            medians.append(statistics.median(errors))
        error, name = max(worst)
        print(f"{scheme:8} {max(losses):.2e}          {error:.2e} ({name}), "
              f"{max(medians):.2e}")


if __name__ == "__main__":
    main()
