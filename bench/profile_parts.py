"""How bench/cpu-profile and bench/overhead-profile group perf samples.

A sample belongs to a component by the object it was taken in (the
generated kernels are perf inject's jitted-PID-N.so files), and a generated
kernel to the part of the model it computes by the suffix
drc-outline-kernels gives its name (_fused, _attention, _matmul; a step
function, kernelN_PART_stepM, carries its kernel's).
"""
import os
import re

KERNELS = "generated kernels"
OPENMP = "OpenMP runtime (fork/join, barriers)"
OS_KERNEL = "OS kernel (OpenMP yields, page faults)"
COMPILER = "compiler (LLVM, MLIR)"
LIBC = "libc (malloc, memcpy)"

PARTS = {"fused": "fused regions (residual work, norms)",
         "attention": "causal attention",
         "matmul": "matrix products"}
OTHER_KERNELS = "other kernels"


def component(dso):
    """The component of a sample taken in `dso` (a path or a file name)."""
    dso = os.path.basename(dso)
    if dso.startswith("jitted-"):
        return KERNELS
    if "libomp" in dso or "libgomp" in dso:
        return OPENMP
    if "kernel" in dso:
        return OS_KERNEL
    if "LLVM" in dso or "MLIR" in dso:
        return COMPILER
    if dso.startswith("libc"):
        return LIBC
    return "other (" + dso + ")"


def model_part(kernel):
    """The part of the model a generated kernel's symbol computes."""
    m = re.search(r"_kernel\d+_(fused|attention|matmul)(_step\d+)?(\.\.omp_par)?$",
                  kernel)
    return PARTS.get(m.group(1) if m else "", OTHER_KERNELS)
