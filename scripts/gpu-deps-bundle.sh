#!/usr/bin/env bash
# Packs the build dependencies a bare GPU machine may lack (jansson and hwloc
# headers, Criterion and the libraries it loads) from this machine's Debian packages
# into DIR (default .devdeps), with pkg-config files that point there.
# scripts/gpu-check.sh uses DIR when it exists. Only for machines that
# cannot install packages themselves; elsewhere install-deps.sh does this.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.devdeps}
[ "${1:-}" = "--help" ] && { sed -n 2,6p "$0"; exit 0; }
lib=/usr/lib/x86_64-linux-gnu
rm -rf "$dir"; mkdir -p "$dir/include" "$dir/lib" "$dir/pkgconfig"
cp -r /usr/include/criterion /usr/include/jansson.h /usr/include/jansson_config.h \
      /usr/include/hwloc /usr/include/hwloc.h "$dir/include/"
cp -P $lib/libjansson.so* $lib/libcriterion.so* $lib/libhwloc.so* "$dir/lib/"
# Criterion's own dependencies that a stock Ubuntu/Debian image may lack.
for so in $(ldd $lib/libcriterion.so.3 | awk '/=>/ {print $3}'); do
  case $(basename "$so") in libc.so*|libm.so*|libresolv.so*|libz.so*|libcrypto.so*|libpthread.so*|libdl.so*|librt.so*) ;;
    *) cp -L "$so" "$dir/lib/" ;; esac
done

for pc in jansson criterion hwloc; do
  sed -e "s|^prefix=.*|prefix=@BUNDLE@|" -e 's|^libdir=.*|libdir=${prefix}/lib|' \
      -e 's|^includedir=.*|includedir=${prefix}/include|' -e '/^Requires.private/d' -e '/^Libs.private/d' \
      $lib/pkgconfig/$pc.pc > "$dir/pkgconfig/$pc.pc"
done
echo "bundle in $dir: $(du -sh "$dir" | cut -f1)"
