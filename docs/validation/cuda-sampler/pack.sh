#!/bin/bash
# Build stepcast with the cuda hardware plugin here (CUDA 13 toolkit, Debian 12) and pack it,
# with the shared libraries the GPU machine's image lacks (OpenBLAS, LAPACKE, XGBoost, yajl and
# theirs), into .gpu/pkg.tar.xz, which the device tool carries (`carry: [".gpu"]`) for
# device.sh, with the kernels' test (tests/cuda/test_cuda_kernels). The GPU machine's own
# CUDA 13 runtime and cuBLAS are used there.
# Usage, from the repository root: docs/validation/cuda-sampler/pack.sh
set -euo pipefail
root=$(pwd)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSC_CUDA=ON >/dev/null
cmake --build build-gpu -j"$(nproc)" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install build-gpu --prefix "$tmp/inst" >/dev/null
cp build-gpu/tests/cuda/test_cuda_kernels "$tmp/inst/bin/"
mkdir -p "$tmp/lib"
cp -L "$(ldd build-gpu/tests/cuda/test_cuda_kernels | awk '$1 == "libsubunit.so.0" { print $3 }')" \
  "$tmp/lib/libsubunit.so.0"
for l in libopenblas.so.0 liblapacke.so.3 libyajl.so.2 libxgboost.so.0 libgfortran.so.5 \
         libblas.so.3 liblapack.so.3 libtmglib.so.3 libdmlc.so.0 libquadmath.so.0; do
  p=$(ldd build-gpu/bin/stepcast | awk -v l="$l" '$1 == l { print $3 }')
  [ -n "$p" ] || { echo "pack.sh: $l not linked" >&2; exit 1; }
  cp -L "$p" "$tmp/lib/$l"
done
mkdir -p "$root/.gpu"
tar cJf "$root/.gpu/pkg.tar.xz" -C "$tmp" inst lib
ls -l "$root/.gpu/pkg.tar.xz"
