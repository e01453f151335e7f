#!/usr/bin/env bash
# Unpacks the build dependencies the device tool's GPU machine lacks (it has nvcc, CMake and PyTorch,
# no Debian packages and no network) into .gpu-deps/ (ignored by git), on a development machine:
#   scripts/gpu/prepare_deps.sh [folder]      (default .gpu-deps)
# then send the folder with the device call: carry = [".gpu-deps"]; scripts/gpu/check.sh finds it
# (pkg-config, CMake and the loader are pointed at it). Needs apt-get with its package lists. The
# binaries are this machine's Debian release's: the GPU machine's glibc must be at least as new (if
# not, check.sh's deps step fails there, before any compiling). About 40 MB: static libraries, the
# reference BLAS/LAPACK and docs are left out so it fits carry's 64 MiB.
set -eu
cd "$(dirname "$0")/../.."
OUT=${1:-.gpu-deps}
PKGS=(luajit libluajit-5.1-2 libluajit-5.1-common libluajit-5.1-dev libsleef3 libsleef-dev libopenblas0-openmp
      libopenblas-openmp-dev libgfortran5 libquadmath0 libedit2 libedit-dev libbsd0 libmd0 libtinfo6 catch2 pkgconf
      pkgconf-bin libpkgconf3)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "${PKGS[@]}") >/dev/null
rm -rf "$OUT"
mkdir -p "$OUT"
for deb in "$work"/*.deb; do dpkg -x "$deb" "$OUT"; done
# the pkg-config binary of pkgconf-bin is named pkgconf; check.sh calls pkg-config
[ -e "$OUT/usr/bin/pkg-config" ] || ln -s pkgconf "$OUT/usr/bin/pkg-config"
find "$OUT" -name '*.a' ! -name 'libCatch2*' -delete  # Catch2's CMake package names its .a
rm -rf "$OUT/usr/share/doc" "$OUT/usr/share/man" "$OUT"/usr/lib/x86_64-linux-gnu/openblas-openmp/lib{blas,lapack}.so*
# A Fashion-MNIST subset for check.sh's examples step (the whole set, 30 MB, would not fit in carry
# beside the libraries): the first 10,000 training and 1,000 test images with their labels, IDX
# files like the Debian package's (about 5 MB); check.sh sets MF_FASHION_MNIST_DIR to it.
python3 - "${MF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}" "$OUT/fashion-mnist" <<'PY'
import gzip, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
for prefix, keep in (('train', 10000), ('t10k', 1000)):
    for kind in ('images-idx3', 'labels-idx1'):
        name = '%s-%s-ubyte.gz' % (prefix, kind)
        with gzip.open(os.path.join(src, name), 'rb') as f:
            data = f.read()
        ndim = data[3]
        dims = list(struct.unpack('>%dI' % ndim, data[4:4 + 4 * ndim]))
        item = 1
        for d in dims[1:]:
            item *= d
        body = data[4 + 4 * ndim:4 + 4 * ndim + keep * item]
        dims[0] = keep
        with gzip.open(os.path.join(dst, name), 'wb') as f:
            f.write(data[:4] + struct.pack('>%dI' % ndim, *dims) + body)
PY
echo "$OUT: $(du -sh "$OUT" | cut -f1) from ${#PKGS[@]} packages and a Fashion-MNIST subset"
