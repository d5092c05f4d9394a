//! `blockmem_lab::fuzzing::run("trace_reader", …)` on every input (see that module).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    blockmem_lab::fuzzing::run("trace_reader", data);
});
