#!/usr/bin/env bash
# The plugin SDK end to end: install stepcast to a temporary prefix, build the example plugin
# (docs/examples/plugin) out of tree against the installed SDK twice, once with the
# pkg-config line and once with the CMake package, and check that `stepcast --plugin FILE
# plugins` lists each as loaded and that the installed program finds a plugin installed in
# its plugin folder with no environment variables. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
jobs=$(nproc 2>/dev/null || echo 2)
work=$(mktemp -d "${TMPDIR:-/tmp}/stepcast-sdk.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
unset STEPCAST_PLUGIN_PATH STEPCAST_PLUGINS_VERBOSE
step() { printf '\n== %s\n' "$*"; }
fail() { echo "plugin-sdk: FAIL: $*" >&2; exit 1; }

step "build and install stepcast to $prefix"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DSC_BUILD_TESTS=OFF >/dev/null
cmake --build "$work/build" -j "$jobs" >/dev/null
cmake --install "$work/build" --prefix "$prefix" >/dev/null
stepcast=$prefix/bin/stepcast
[ -x "$stepcast" ] || fail "no $stepcast after install"

# The example, copied away from the source tree so that nothing but the SDK is reachable.
cp -r "$src/docs/examples/plugin" "$work/example"

# Only the entry symbol may be exported.
check_exports() {
  local syms
  syms=$(nm -D --defined-only "$1" | awk '{print $3}' | grep -v '^_' || true)
  [ "$syms" = "sc_plugin_entry_v1" ] || fail "$1 exports: $syms"
  echo "exports: $syms"
}

# `stepcast --plugin FILE plugins` must list it as loaded, from that file.
check_loaded() {
  local out
  out=$("$stepcast" --plugin "$1" plugins) || { echo "$out"; fail "stepcast refused $1"; }
  echo "$out"
  local abi_re  # the ABI the plugin was built against: the program's own (e.g. 1\.1)
  abi_re=$("$stepcast" --version | sed -n 's/.*plugin ABI \([0-9]*\)\.\([0-9]*\)).*/\1\\.\2/p')
  echo "$out" | grep -E "^collective +allreduce\.rabenseifner +1\.0\.0 +$abi_re +0 +loaded +$1\$" \
    >/dev/null || fail "$1 not listed as loaded"
  "$stepcast" --plugin "$1" plugins --json | grep -F '"name": "allreduce.rabenseifner"' \
    | grep -F '"status": "loaded"' >/dev/null || fail "$1 not loaded in --json listing"
}

step "pkg-config"
pcfile=$(find "$prefix" -name stepcast-plugin.pc | head -n 1)
[ -n "$pcfile" ] || fail "stepcast-plugin.pc not installed"
export PKG_CONFIG_PATH=$(dirname "$pcfile")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
abi=$(pkg-config --variable=abi stepcast-plugin)
plugindir=$(pkg-config --variable=plugindir stepcast-plugin)
echo "cflags: $(pkg-config --cflags stepcast-plugin)  abi: $abi  plugindir: $plugindir"
[ "$abi" = "$("$stepcast" --version | sed -n 's/.*plugin ABI \([0-9.]*\)).*/\1/p')" ] \
  || fail "pkg-config abi $abi differs from the program's"
[ -d "$plugindir" ] || fail "plugindir $plugindir does not exist"
mkdir -p "$work/pc"
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden \
   $(pkg-config --cflags stepcast-plugin) \
   -o "$work/pc/allreduce-rabenseifner.so" "$work/example/allreduce_rabenseifner.c"
check_exports "$work/pc/allreduce-rabenseifner.so"
check_loaded "$work/pc/allreduce-rabenseifner.so"

step "CMake package"
cmake -S "$work/example" -B "$work/cm" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cm" >/dev/null
so=$work/cm/allreduce-rabenseifner.so
[ -f "$so" ] || fail "CMake build did not produce $so (no 'lib' prefix expected)"
check_exports "$so"
check_loaded "$so"

step "installed into the plugin folder, found with no environment"
cmake --install "$work/cm" >/dev/null
[ -f "$plugindir/allreduce-rabenseifner.so" ] || fail "not installed into $plugindir"
out=$("$stepcast" plugins)
echo "$out"
echo "$out" | grep -E "allreduce\.rabenseifner .* loaded +$(realpath "$plugindir")/allreduce-rabenseifner\.so\$|allreduce\.rabenseifner .* loaded +$plugindir/allreduce-rabenseifner\.so\$" \
  >/dev/null || fail "installed plugin not found by the installed program"

step "plugin SDK: OK"
