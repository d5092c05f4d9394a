#!/usr/bin/env bash
# Fuzzes the parsers that read files and flags: every target for SECONDS (default 60),
# one after another, or only the targets named.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Targets (fuzz/fuzz_targets/, entry points in crates/blockmem-lab/src/fuzzing.rs):
# trace_reader, profile, cli_args, compare_json. Each starts from the inputs in
# fuzz/seeds/<target> (real traces, profiles, lab JSON, command lines) and keeps what
# it learns in fuzz/corpus/<target> (not in the repository). An input that crashes,
# panics, runs over 5 s or takes over 2 GiB is saved as fuzz/artifacts/<target>/*;
# once fixed, copy it to crates/blockmem-lab/tests/fuzz_regressions/<target>/, where
# `cargo test -p blockmem-lab --test fuzz_regressions` replays it on stable Rust.
# Needs the nightly toolchain; installs cargo-fuzz if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(trace_reader profile cli_args compare_json)
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "scripts/fuzz.sh: needs the nightly toolchain (rustup toolchain install nightly)" >&2
    exit 1
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
cd fuzz
failed=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "== $t: ${secs} s"
    if ! cargo +nightly fuzz run "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1; then
        failed+=("$t")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "scripts/fuzz.sh: ${failed[*]} failed; the inputs are in fuzz/artifacts/" >&2
    exit 1
fi
echo "scripts/fuzz.sh: no failures in ${targets[*]} (${secs} s each)"
