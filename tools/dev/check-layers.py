#!/usr/bin/env python3
"""The layering rule of common/ (docs/ARCHITECTURE.md), checked by `make lint`.

Every library source lives in one layer folder of common/. A file may include
headers of its own folder and of lower layers only; two folders of one rank
(coll and compute) are independent of each other. Includes of the library are
written with their folder ("core/options.h"), so a name says where it lives.

usage: check-layers.py [ROOT]   (ROOT: the repository, default: this one)
exit 0 when the tree follows the rule, 1 with one line per breach otherwise.
"""
import os
import re
import sys

# folder -> rank; a file may include its own folder or a lower rank.
LAYERS = {
    "core": 0,      # options, parsing, statistics, clocks, errors, JSON writer
    "backend": 1,   # communicators (MPI, NCCL), GPU binding, buffers
    "harness": 2,   # benchmark skeleton, metadata, the timed loop
    "coll": 3,      # collectives, point-to-point, matrix, validation
    "compute": 3,   # compute engines, kernels, layers
    "plan": 4,      # cost model, presets, cluster, fit, thresholds
    "workload": 5,  # DP, TP, PP, hybrid, placement, buckets
}
SOURCE = re.compile(r"\.(c|h|cu)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def breaches(root):
    common = os.path.join(root, "common")
    out = []
    for name in sorted(os.listdir(common)):
        path = os.path.join(common, name)
        if os.path.isfile(path) and SOURCE.search(name):
            out.append(f"common/{name}: sits directly in common/; put it in one of {', '.join(LAYERS)}")
        elif os.path.isdir(path) and name not in LAYERS:
            out.append(f"common/{name}/: not a layer of tools/dev/check-layers.py ({', '.join(LAYERS)})")
    doc = os.path.join(root, "docs", "ARCHITECTURE.md")
    text = open(doc, encoding="utf-8").read() if os.path.exists(doc) else ""
    for layer in LAYERS:
        if f"`{layer}/`" not in text:
            out.append(f"docs/ARCHITECTURE.md: does not describe the layer `{layer}/`")
    for layer, rank in LAYERS.items():
        folder = os.path.join(common, layer)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not SOURCE.search(name):
                continue
            rel = f"common/{layer}/{name}"
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                text = f.read()
            for target in INCLUDE.findall(text):
                if "/" not in target:
                    if os.path.exists(os.path.join(folder, target)) or any(
                            os.path.exists(os.path.join(common, l, target)) for l in LAYERS):
                        out.append(f'{rel}: includes "{target}" without its folder')
                    continue
                to = target.split("/", 1)[0]
                if to not in LAYERS:
                    continue
                if to != layer and LAYERS[to] >= rank:
                    out.append(f'{rel}: includes "{target}": layer {layer} ({rank}) '
                               f'may not include {to} ({LAYERS[to]})')
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = breaches(root)
    for line in found:
        print(f"check-layers: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
