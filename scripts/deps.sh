#!/usr/bin/env bash
# Installs what the test suite and the lab need on a fresh Debian machine, and nothing
# when it is already there. Safe to run repeatedly.
set -euo pipefail

need_apt=()
have() { command -v "$1" >/dev/null 2>&1; }
have objdump || need_apt+=(binutils)
have cc || need_apt+=(gcc)
# The C library and shim tests (crates/blockmem-ffi, crates/blockmem-preload): a C++
# compiler for the header check, pkg-config for the install test, and the real
# programs run under the shim.
have g++ || need_apt+=(g++)
have pkg-config || need_apt+=(pkgconf)
have readelf || need_apt+=(binutils)
have python3 || need_apt+=(python3)
have sqlite3 || need_apt+=(sqlite3)
have git || need_apt+=(git)
have gzip || need_apt+=(gzip)
have tar || need_apt+=(tar)
have sort || need_apt+=(coreutils)
# The report's browser test (crates/blockmem-lab/tests/report_browser.rs) loads
# index.html in headless Chromium.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)

if ((${#need_apt[@]})); then
  echo "deps: installing ${need_apt[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
have cargo || { echo "deps: cargo not found; install Rust with rustup (https://rustup.rs) first" >&2; exit 1; }
