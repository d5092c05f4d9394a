#!/usr/bin/env bash
# The main job: the quick lab with its HTML report in lab-out/ (pass other lab
# arguments to override, e.g. `bash scripts/lab.sh temperature --out my-dir`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo build --release -p blockmem-lab
if [ "$#" -eq 0 ]; then
  set -- --quick --out lab-out --json lab-out/lab.json
fi
mkdir -p lab-out
target/release/blockmem info
exec target/release/blockmem lab "$@"
