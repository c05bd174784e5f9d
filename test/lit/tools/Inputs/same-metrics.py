"""Exits 0 iff two metrics.jsonl files agree on every non-timing field."""
import json
import sys

def records(path):
    with open(path) as f:
        return [{k: v for k, v in json.loads(line).items()
                 if not (k.endswith("_s") or k.endswith("_ms"))}
                for line in f]

a, b = records(sys.argv[1]), records(sys.argv[2])
if a != b:
    print("metrics differ:\n", a, "\n", b)
    sys.exit(1)
print(f"{len(a)} records identical")
