#!/usr/bin/env bash
# The main job: calibrate this host (quick), then run the quick lab with that profile
# and write the report to lab-out/ (index.html, JSON, CSV, SVG plots). The profile goes
# to lab-out/profile, not to the user's default path. Pass lab arguments to override
# the default set, e.g. `bash scripts/lab.sh temperature policy`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo build --release -p blockmem-lab
mkdir -p lab-out
bin=target/release/blockmem
"$bin" info
"$bin" calibrate --quick --out lab-out/profile
export BLOCKMEM_PROFILE="$PWD/lab-out/profile"
"$bin" lab "$@" --quick --out lab-out --json lab-out/lab.json
echo "report: lab-out/index.html"
