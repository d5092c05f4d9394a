/work/wt-ab/target-old/release/deps/blockmem_preload.d: crates/blockmem-preload/src/lib.rs crates/blockmem-preload/src/config.rs crates/blockmem-preload/src/hints.rs crates/blockmem-preload/src/maps.rs crates/blockmem-preload/src/next.rs crates/blockmem-preload/src/out.rs crates/blockmem-preload/src/stats.rs crates/blockmem-preload/src/trace.rs crates/blockmem-preload/src/trace_file.rs crates/blockmem-preload/src/warned.rs

/work/wt-ab/target-old/release/deps/libblockmem_preload.so: crates/blockmem-preload/src/lib.rs crates/blockmem-preload/src/config.rs crates/blockmem-preload/src/hints.rs crates/blockmem-preload/src/maps.rs crates/blockmem-preload/src/next.rs crates/blockmem-preload/src/out.rs crates/blockmem-preload/src/stats.rs crates/blockmem-preload/src/trace.rs crates/blockmem-preload/src/trace_file.rs crates/blockmem-preload/src/warned.rs

crates/blockmem-preload/src/lib.rs:
crates/blockmem-preload/src/config.rs:
crates/blockmem-preload/src/hints.rs:
crates/blockmem-preload/src/maps.rs:
crates/blockmem-preload/src/next.rs:
crates/blockmem-preload/src/out.rs:
crates/blockmem-preload/src/stats.rs:
crates/blockmem-preload/src/trace.rs:
crates/blockmem-preload/src/trace_file.rs:
crates/blockmem-preload/src/warned.rs:
