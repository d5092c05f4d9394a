#!/bin/bash
# ab.sh A_BIN B_BIN OUT [ROUNDS]: `lab neighbour --quick` and `lab fleet --quick` (also
# with AVX-512 masked) for libc and auto, the two builds alternated round by round (the
# order reversed every other round); one JSON per build, experiment and round in OUT.
A=$1; B=$2; OUT=$3; R=${4:-6}
mkdir -p "$OUT"
for r in $(seq 1 "$R"); do
  if [ $((r % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
  for b in $order; do
    bin=$A; [ "$b" = b ] && bin=$B
    $bin lab neighbour --quick --quiet --methods libc,auto --json "$OUT/nb-$b-$r.json" >/dev/null 2>&1
    $bin lab fleet --quick --quiet --methods libc,auto --json "$OUT/fl-$b-$r.json" >/dev/null 2>&1
    $bin lab fleet --quick --quiet --methods libc,auto --mask-features avx512f \
      --json "$OUT/fm-$b-$r.json" >/dev/null 2>&1
  done
done
