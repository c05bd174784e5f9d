"""Checks a drc-compile --target=cuda directory's manifest against its PTX:
every launched kernel is an .entry, every product (cuBLASLt's) has the
shapes of C += A.B, every operand view lies inside its
buffer, scratch buffers lie in the arena and two of them share bytes only
when no launch between their first and last uses needs both, and the
parameters tile the flat buffer in order."""
import json
import re
import sys

directory = sys.argv[1]
manifest = json.load(open(f"{directory}/manifest.json"))
ptx = open(f"{directory}/{manifest['ptx']}").read()
entries = set(re.findall(r"^\.visible \.entry (\w+)\(", ptx, re.M))
print("format", manifest["format"], "chip", manifest["chip"], "ptx", manifest["ptx"])
SIZES = {"f32": 4, "i32": 4, "i64": 8, "f64": 8, "i8": 1}

for name, function in manifest["functions"].items():
    size = {}  # bytes of each buffer
    for i, argument in enumerate(function["arguments"]):
        count = 1
        for d in argument["shape"]:
            count *= d
        size[i] = count * SIZES[argument["dtype"]]
    arena = {}  # scratch buffer -> (offset, bytes)
    for buffer in function["buffers"]:
        size[buffer["buffer"]] = buffer["bytes"]
        if "f32" not in buffer:
            arena[buffer["buffer"]] = (buffer["offset"], buffer["bytes"])
            assert 0 <= buffer["offset"] and buffer["offset"] + buffer["bytes"] <= \
                function["arena_bytes"], (name, buffer)
    uses = {}  # scratch buffer -> [first launch, last launch]
    gemms = 0
    for at, launch in enumerate(function["launches"]):
        if "gemm" in launch:
            # C [batch, M, N] += A [batch, M, K] . B [batch, K, N], f32.
            gemm = launch["gemm"]
            a, b, c = (gemm[k]["sizes"] for k in "abc")
            assert a[0] == b[0] == c[0] and a[1] == c[1] and b[2] == c[2] \
                and a[2] == b[1], (name, gemm)
            operands = [gemm[k] for k in "abc"]
            assert all(o["dtype"] == "f32" for o in operands), (name, gemm)
            gemms += 1
        else:
            assert launch["kernel"] in entries, launch["kernel"]
            assert all(g >= 1 for g in launch["grid"] + launch["block"]), launch
            operands = launch["operands"]
        for operand in operands:
            if "buffer" not in operand:
                continue
            last = operand["offset"] + sum(
                (s - 1) * t for s, t in zip(operand["sizes"], operand["strides"]))
            assert 0 <= operand["offset"] and \
                (last + 1) * SIZES[operand["dtype"]] <= size[operand["buffer"]], (
                name, launch, operand)
            if operand["buffer"] in arena:
                uses.setdefault(operand["buffer"], [at, at])[1] = at
    live = sorted(uses.items(), key=lambda u: u[1][0])
    for i, (a, (a0, a1)) in enumerate(live):
        for b, (b0, b1) in live[i + 1:]:
            if b0 > a1:
                break
            (ao, an), (bo, bn) = arena[a], arena[b]
            assert ao + an <= bo or bo + bn <= ao, (name, "arena overlap", a, b)
    print(f"{name}: {len(function['arguments'])} arguments "
          f"{len(function['launches'])} launches ({gemms} products), every "
          "kernel defined, every operand in bounds, scratch buffers in use "
          "never overlap")

# The parameter table in ParameterTable::toText's form, one line each:
# "param NAME shape=AxB offset=N init=... decay=0|1".
offset = 0
lines = manifest["parameters"].splitlines()
for line in lines:
    fields = dict(w.split("=", 1) for w in line.split()[2:])
    assert int(fields["offset"]) >= offset, line
    count = 1
    if fields["shape"] != "scalar":
        for d in fields["shape"].split("x"):
            count *= int(d)
    offset = int(fields["offset"]) + count
print(f"parameters: {len(lines)}, in order and disjoint")
