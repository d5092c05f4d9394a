#!/usr/bin/env bash
# Installs blockmem for C programs and for LD_PRELOAD:
#
#   PREFIX/include/blockmem.h
#   PREFIX/lib/libblockmem.a
#   PREFIX/lib/libblockmem.so.X.Y.Z  (+ libblockmem.so.X and libblockmem.so links)
#   PREFIX/lib/libblockmem_preload.so
#   PREFIX/lib/pkgconfig/blockmem.pc, blockmem-static.pc
#
# usage: scripts/install.sh [--no-build] [--target-dir DIR] [PREFIX]
#   PREFIX        default /usr/local (also --prefix PREFIX); DESTDIR is honoured
#   --no-build    install what is already built in the target directory
#   --target-dir  cargo's target directory (default: $CARGO_TARGET_DIR or ./target)
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."

prefix=/usr/local
build=1
target_dir=${CARGO_TARGET_DIR:-target}
usage() { sed -n '2,13p' "$script" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --no-build) build=0; shift ;;
    --target-dir) target_dir=$2; shift 2 ;;
    --target-dir=*) target_dir=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "install.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) prefix=$1; shift ;;
  esac
done
case "$prefix" in /*) ;; *) prefix=$(pwd)/$prefix ;; esac

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
major=${version%%.*}
# What a program linking libblockmem.a also needs (rustc --print native-static-libs).
native_static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

if ((build)); then
  cargo build --release -p blockmem-ffi --target-dir "$target_dir"
  # The shim must be built with panic=abort (it is no_std; see its crate docs).
  cargo rustc --release -p blockmem-preload --target-dir "$target_dir" -- -C panic=abort
fi

built=$target_dir/release
for f in libblockmem_ffi.a libblockmem_ffi.so libblockmem_preload.so; do
  [ -f "$built/$f" ] || {
    echo "install.sh: $built/$f is missing; run without --no-build" >&2
    exit 1
  }
done

dest=${DESTDIR:-}
lib=$dest$prefix/lib
inc=$dest$prefix/include
install -d "$lib/pkgconfig" "$inc"
install -m 644 crates/blockmem-ffi/include/blockmem.h "$inc/blockmem.h"
install -m 644 "$built/libblockmem_ffi.a" "$lib/libblockmem.a"
install -m 755 "$built/libblockmem_ffi.so" "$lib/libblockmem.so.$version"
ln -sfn "libblockmem.so.$version" "$lib/libblockmem.so.$major"
ln -sfn "libblockmem.so.$major" "$lib/libblockmem.so"
install -m 755 "$built/libblockmem_preload.so" "$lib/libblockmem_preload.so"
for pc in blockmem blockmem-static; do
  sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" \
      -e "s|@NATIVE_STATIC_LIBS@|$native_static_libs|" \
      "crates/blockmem-ffi/$pc.pc.in" >"$lib/pkgconfig/$pc.pc"
done

echo "installed blockmem $version into $dest$prefix:"
echo "  cc app.c \$(pkg-config --cflags --libs blockmem)          # shared"
echo "  cc app.c \$(pkg-config --cflags --libs blockmem-static)   # static"
echo "  LD_PRELOAD=$prefix/lib/libblockmem_preload.so CMD         # unmodified programs"
case ":${PKG_CONFIG_PATH:-}:" in
  *":$prefix/lib/pkgconfig:"*) ;;
  *) echo "  (pkg-config looks in $prefix/lib/pkgconfig only if PKG_CONFIG_PATH includes it)" ;;
esac
