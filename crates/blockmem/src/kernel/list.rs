// Every kernel, declared once, in table order (the order of `KernelId`, of the tables'
// slots and of the trace files' kernel numbers: add new kernels at the end).
//
// `#[cfg(...)]` (optional): the targets whose `arch` module has the kernel; its id
// exists on every target, where it stands in for nothing and a band naming it runs its
// stand-in.
// Id "stable name" module under `arch`: ops (all: copy, move, set, zero; copy: copy,
// move; set: set, zero; zero: zero only), [CPU features], narrower stand-in (None for
// the kernels every CPU runs), store class (temporal or streaming), "summary".
//
// `kernel.rs` reads this file into the kernel table; `build.rs` into the names and ops
// it checks the built-in tables against.
kernels! {
    Naive "naive" all::naive: all, [], None, temporal,
        "one byte at a time; the reference";
    Portable "portable" all::portable: all, [], None, temporal,
        "u64 words, aligned destination; any target";
    #[cfg(target_arch = "x86_64")]
    Sse2 "sse2" x86_64::sse2: all, [SSE2], Portable, temporal,
        "16-byte vectors, temporal stores; x86-64 baseline";
    #[cfg(target_arch = "x86_64")]
    Avx2 "avx2" x86_64::avx2: all, [AVX2], Sse2, temporal,
        "32-byte vectors, temporal stores; best when dst is or should be cached";
    #[cfg(target_arch = "x86_64")]
    Avx2Nt "avx2_nt" x86_64::avx2_nt: all, [AVX2], Sse2, streaming,
        "32-byte vectors, non-temporal stores + sfence; best when dst is cold and not reused";
    #[cfg(target_arch = "x86_64")]
    Avx2Pf "avx2_pf" x86_64::avx2_pf: copy, [AVX2], Avx2, temporal,
        "seed 003 Fig. 1: prefetch an 8 KiB source block, copy it, temporal stores";
    #[cfg(target_arch = "x86_64")]
    Avx2PfNt "avx2_pf_nt" x86_64::avx2_pf_nt: copy, [AVX2], Avx2Nt, streaming,
        "seed 003 Fig. 1: prefetch an 8 KiB source block, copy it, non-temporal stores";
    #[cfg(target_arch = "x86_64")]
    Avx512 "avx512" x86_64::avx512: all, [AVX512F, AVX2], Avx2, temporal,
        "64-byte AVX-512 vectors, temporal stores; half the instructions of avx2 for cached data";
    #[cfg(target_arch = "x86_64")]
    Avx512Nt "avx512_nt" x86_64::avx512_nt: all, [AVX512F, AVX2], Avx2Nt, streaming,
        "64-byte AVX-512 vectors, one non-temporal store per line + sfence";
    #[cfg(target_arch = "x86_64")]
    RepMovsb "rep_movsb" x86_64::rep_movsb: copy, [], Avx512, temporal,
        "rep movsb microcode (fast with ERMS/FSRM); vectors where dst is 1-31 bytes past src mod 4 KiB";
    #[cfg(target_arch = "x86_64")]
    RepStosb "rep_stosb" x86_64::rep_stosb: set, [], Avx512, temporal,
        "rep stosb microcode (fast with ERMS)";
    #[cfg(target_arch = "x86_64")]
    Clzero "clzero" x86_64::clzero: zero, [CLZERO], Avx512Nt, streaming,
        "AMD clzero: zero whole lines without reading them";
    #[cfg(target_arch = "x86_64")]
    Avx2Pw "avx2_pw" x86_64::avx2_pw: copy, [AVX2, PREFETCHW], Avx2, temporal,
        "avx2 with the destination prefetched for ownership a step ahead; cold or L2 destinations";
    #[cfg(target_arch = "x86_64")]
    Avx512Pw "avx512_pw" x86_64::avx512_pw: copy, [AVX512F, AVX2, PREFETCHW], Avx2Pw, temporal,
        "avx512 with the destination prefetched for ownership a step ahead; cold or L2 destinations";
}
