#!/usr/bin/env bash
# Prepares what `scripts/build.sh aarch64` needs: the cross compiler and
# qemu-user from apt (they coexist with the host's packages), and a private
# sysroot of the arm64 libraries the full `infera` links (protobuf-c, sqlite3,
# libpq, hiredis, microhttpd, cJSON, mosquitto, pcre2 and their dependencies),
# unpacked from Debian's arm64 packages with `apt-get download` + `dpkg-deb -x`
# into build-aarch64/sysroot -- never installed, because some arm64 -dev
# packages (libpq-dev) are not multi-arch co-installable and would remove
# the host's.  The glibc comes from the cross toolchain
# (/usr/aarch64-linux-gnu).  A re-run with the sysroot in place does nothing
# (the stamp holds the library list: a sysroot made for a shorter list is refreshed).
#   aarch64-sysroot.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: aarch64-sysroot.sh BUILD_DIR}
sysroot=$build/sysroot
stamp=$sysroot/.complete
libs="libprotobuf-c-dev libsqlite3-dev libpq-dev libhiredis-dev libmicrohttpd-dev libcjson-dev libmosquitto-dev libpcre2-dev"

need_tools=""
command -v aarch64-linux-gnu-gcc >/dev/null || need_tools="$need_tools gcc-aarch64-linux-gnu"
command -v qemu-aarch64 >/dev/null || need_tools="$need_tools qemu-user"
if [ -n "$need_tools" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "aarch64: need$need_tools (run as root to install)" >&2; exit 1; }
  # these two never remove a host package; refuse if apt would
  if DEBIAN_FRONTEND=noninteractive apt-get -s install -y $need_tools | grep -q '^Remv'; then
    echo "aarch64: installing$need_tools would remove host packages; not done" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q $need_tools >/dev/null
fi
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$libs" ] && exit 0

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  [ "$(id -u)" -eq 0 ] || { echo "aarch64: run 'dpkg --add-architecture arm64 && apt-get update' as root" >&2; exit 1; }
  dpkg --add-architecture arm64
  apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
fi
# every arm64 package the libraries need, but the C library (the toolchain's)
arm64=$(for p in $libs; do echo "$p:arm64"; done)
# shellcheck disable=SC2086
pkgs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
         --no-enhances $arm64 | grep -E '^[a-z0-9].*:arm64$' | sort -u |
       grep -vE '^(libc6|libc6-dev|libc-dev-bin|linux-libc-dev|libgcc-s1|gcc-12-base|libstdc\+\+6|rpcsvc-proto):')
mkdir -p "$build/debs" "$sysroot"
# shellcheck disable=SC2086
(cd "$build/debs" && apt-get download -q $pkgs >/dev/null)
for deb in "$build"/debs/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
# absolute symlinks (libfoo.so -> /lib/...) re-pointed into the sysroot
find "$sysroot" -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in /*) ln -sfn "$sysroot$target" "$link" ;; esac
done
echo "$libs" > "$stamp"
echo "aarch64: sysroot of $(echo "$pkgs" | wc -l) arm64 packages in $sysroot"
