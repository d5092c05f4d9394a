#!/usr/bin/env bash
# The main job: calibrate this host (quick) into the profile the library loads by
# default, then run the quick lab with it and write the report to lab-out/ (index.html,
# JSON, CSV, SVG plots). The run ends with its summary: auto against libc per op.
#
# The profile goes where `blockmem calibrate` writes it and where the library, the
# LD_PRELOAD shim and every later `blockmem` command look for it: $BLOCKMEM_PROFILE,
# else $XDG_CACHE_HOME/blockmem/profile, else ~/.cache/blockmem/profile. Set
# BLOCKMEM_PROFILE=PATH to calibrate into (and run with) another file instead.
#
# Pass lab arguments to override the default set, e.g. `bash scripts/lab.sh temperature policy`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo build --release -p blockmem-lab
mkdir -p lab-out
bin=target/release/blockmem
# The same rule as `blockmem calibrate` and the library's loader (an empty variable
# counts as unset).
profile=${BLOCKMEM_PROFILE:-${XDG_CACHE_HOME:-${HOME:?set HOME, XDG_CACHE_HOME or BLOCKMEM_PROFILE}/.cache}/blockmem/profile}
if [ -n "${BLOCKMEM_PROFILE:-}" ]; then
  echo "lab.sh: calibrating into $profile (BLOCKMEM_PROFILE): the lab below and every program run with this BLOCKMEM_PROFILE use it"
else
  echo "lab.sh: calibrating into $profile, the profile blockmem loads by default: the lab below, the library and the LD_PRELOAD shim all use it (set BLOCKMEM_PROFILE=PATH to choose another)"
fi
"$bin" calibrate --quick
# The host and the decision table now in force.
"$bin" info
# Last: the lab's own closing lines are its summary.
"$bin" lab "$@" --quick --out lab-out --json lab-out/lab.json
