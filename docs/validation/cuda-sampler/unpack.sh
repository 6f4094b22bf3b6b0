# Sourced on the GPU machine by the device scripts (from the repository root, .gpu carried):
# unpacks pack.sh's install into /tmp/g and points the loader at its libraries and at the
# machine's own cuBLAS (CUDA 13). Sets cub (the cuBLAS library found, or empty).
mkdir -p /tmp/g && tar xJf .gpu/pkg.tar.xz -C /tmp/g || exit 1
cub=$(find /usr/local /opt /usr/lib -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/g/lib:/tmp/g/inst/lib${cub:+:$(dirname "$cub")}
