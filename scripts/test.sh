#!/usr/bin/env bash
# The whole test suite: formatting, lints, then every test, then the correctness
# suite again with AVX/AVX2 masked off (proves the portable/SSE2 path).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
start=$(date +%s)
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -- -D warnings
python3 scripts/shape.py
cargo test --workspace --release
BLOCKMEM_TEST_DISABLE=avx cargo test --release -p blockmem --tests
echo "tests: all passed in $(( $(date +%s) - start )) s"
