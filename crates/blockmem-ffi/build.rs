//! Gives the shared library the name it is installed under (`scripts/install.sh`
//! installs `libblockmem_ffi.so` as `libblockmem.so.<major>.<minor>.<patch>` with the
//! usual `libblockmem.so.<major>` and `libblockmem.so` links), so that programs linked
//! with `-lblockmem` record `libblockmem.so.<major>` as their dependency.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libblockmem.so.{major}");
}
