#!/usr/bin/env python3
"""Removes the raw per-sample arrays (every key ending in `samples_ns`: `samples_ns`,
`all_samples_ns`, `copy_samples_ns`, `read_samples_ns`) from lab JSON
files (plain or gzipped) in place, keeping every cell's summary: what the results
kept in docs/results hold, so that the repository stays small.

usage: python3 scripts/strip_samples.py FILE.json[.gz]..."""
import gzip
import json
import sys

RAW = "samples_ns"


def strip(node):
    if isinstance(node, dict):
        for key in list(node):
            if key.endswith(RAW):
                del node[key]
            else:
                strip(node[key])
    elif isinstance(node, list):
        for item in node:
            strip(item)


def main(paths):
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            data = json.load(f)
        strip(data)
        text = json.dumps(data, separators=(",", ":")).encode()
        if path.endswith(".gz"):
            with gzip.open(path, "wb", 9) as f:
                f.write(text)
        else:
            with open(path, "wb") as f:
                f.write(text)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
