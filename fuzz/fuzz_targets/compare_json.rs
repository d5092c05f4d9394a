//! `blockmem_lab::fuzzing::run("compare_json", …)` on every input (see that module).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    blockmem_lab::fuzzing::run("compare_json", data);
});
