#!/usr/bin/env bash
# The plugin SDK end to end: install stepcast to a temporary prefix, build the example plugins
# (docs/examples/plugin: the Rabenseifner all-reduce and the SwiGLU "elementwise" plugin) out
# of tree against the installed SDK twice, once with the pkg-config line and once with the
# CMake package, and check that `stepcast --plugin FILE plugins` lists each as loaded, that
# the installed program finds them installed in its plugin folder with no environment
# variables, and that a `predict`, an `ops` and a `comm` use them: an example is a test.
# Exits non-zero on the first failure.
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

# The library as a dependency (issue 36): docs/examples/library/predict.c built against the
# install with stepcast.pc and with the CMake package (stepcast::stepcast), run from a folder
# outside the prefix with no environment variable: the installed libstepcast finds the
# installed models, topologies, hardware and plugins from its own location. Before the
# example plugins below are installed, so that the built-in estimates are the ones used.
step "libstepcast as a dependency: pkg-config and CMake package"
cp -r "$src/docs/examples/library" "$work/library"
libpc=$(find "$prefix" -name stepcast.pc | head -n 1)
[ -n "$libpc" ] || fail "stepcast.pc not installed"
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -Werror "$work/library/predict.c" -o "$work/library/predict-pc" \
   $(PKG_CONFIG_PATH=$(dirname "$libpc") pkg-config --cflags --libs stepcast) \
  || fail "the library example does not build with pkg-config"
cmake -S "$work/library" -B "$work/library/cm" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null || fail "find_package(stepcast) failed"
cmake --build "$work/library/cm" >/dev/null || fail "the library example does not build with CMake"
for exe in "$work/library/predict-pc" "$work/library/cm/predict"; do
  out=$(cd / && env -u STEPCAST_DATA_PATH -u STEPCAST_PLUGIN_PATH "$exe") \
    || fail "$exe failed: $out"
  echo "$out"
  echo "$out" | grep -E "^gpt3-1\.3b on a100-sxm4-80gb: [0-9.]+ ms per iteration, MFU [0-9.]+ %$" \
    >/dev/null || fail "$exe printed '$out'"
done
# the dependencies of libstepcast are its own: the program links libstepcast only
nm -D --undefined-only "$work/library/cm/predict" | grep -E " (cblas_|LAPACKE_|yajl_|XGB)" \
  && fail "the example links libstepcast's dependencies itself"

# The example, copied away from the source tree so that nothing but the SDK is reachable.
cp -r "$src/docs/examples/plugin" "$work/example"

# Only the entry symbol may be exported.
check_exports() {
  local syms
  syms=$(nm -D --defined-only "$1" | awk '{print $3}' | grep -v '^_' || true)
  [ "$syms" = "sc_plugin_entry_v1" ] || fail "$1 exports: $syms"
  echo "exports: $syms"
}

# `stepcast --plugin FILE plugins` must list it as loaded, from that file: check_loaded FILE
# KIND NAME VERSION PRIORITY.
check_loaded() {
  local out name_re
  out=$("$stepcast" --plugin "$1" plugins) || { echo "$out"; fail "stepcast refused $1"; }
  echo "$out"
  local abi_re  # the ABI the plugin was built against: the program's own (e.g. 1\.1)
  abi_re=$("$stepcast" --version | sed -n 's/.*plugin ABI \([0-9]*\)\.\([0-9]*\)).*/\1\\.\2/p')
  name_re=${3//./\\.}
  echo "$out" | grep -E "^$2 +$name_re +${4//./\\.} +$abi_re +$5 +loaded +$1\$" \
    >/dev/null || fail "$1 not listed as loaded"
  "$stepcast" --plugin "$1" plugins --json | grep -F "\"name\": \"$3\"" \
    | grep -F "\"path\": \"$1\"" | grep -F '"status": "loaded"' >/dev/null \
    || fail "$1 not loaded in --json listing"
}

# Both examples used by the program: check_used ARGS... (the --plugin options, or none when
# they are installed in the plugin folder).
check_used() {
  local out err
  # comm: 8 bytes on 16 GPUs (fewer bytes than ranks) by the Rabenseifner all-reduce.
  out=$("$stepcast" "$@" comm --topology dgx-a100-superpod --gpus 16 -b 8 -e 8 \
        --algo rabenseifner) || { echo "$out"; fail "comm --algo rabenseifner failed"; }
  echo "$out" | tail -n 3
  echo "$out" | grep -E "^ +8 +2 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +rabenseifner/" \
    >/dev/null || fail "comm did not answer with the rabenseifner plugin"
  # comm with "auto" on a group the plugin declines (3 nodes), and predict (whose auto
  # choices probe the plugin at 0 bytes): they must work with the plugin loaded.
  "$stepcast" "$@" comm --topology dgx-a100-superpod --gpus 24 -b 8 -e 1G -f 1024 \
    >/dev/null || fail "comm --algo auto failed with the example plugins loaded"
  err=$work/predict.err
  out=$("$stepcast" "$@" predict --model llama2-7b --topology dgx-a100-superpod --gpus 16 \
        --tp 2 --global-batch 64 2>"$err") || { cat "$err"; fail "predict failed"; }
  echo "$out" | grep -E "iteration time|elementwise"
  # The SwiGLU plugin takes the family over: one warning names it.
  grep -E "\[warning\] plugins: .*swiglu\.so \(priority 10\) overrides operator family 'elementwise'" \
    "$err" >/dev/null || { cat "$err"; fail "no warning that swiglu.so overrides elementwise"; }
  # ops: SwiGLU priced by the plugin (eager PyTorch: 5 x 2 and 9 x 2 bytes per element;
  # the built-in's fused kernel moves 3 x 2 and 5 x 2).
  out=$("$stepcast" "$@" ops --model llama2-7b --hardware a100-sxm4-80gb --tp 2 2>/dev/null) \
    || fail "ops failed"
  echo "$out" | grep -E "mlp_swiglu"
  echo "$out" | grep -E "^ +mlp_swiglu +elementwise +22544384 +32 +[0-9.]+ +225\.44 +memory" \
    >/dev/null || fail "ops: mlp_swiglu not priced by the swiglu plugin"
  echo "$out" | grep -E "^ +mlp_swiglu\.bwd +elementwise +22544384 +32 +[0-9.]+ +405\.80 +memory" \
    >/dev/null || fail "ops: mlp_swiglu.bwd not priced by the swiglu plugin"
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
for p in allreduce_rabenseifner swiglu; do
  # shellcheck disable=SC2046
  cc -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden \
     $(pkg-config --cflags stepcast-plugin) \
     -o "$work/pc/${p//_/-}.so" "$work/example/$p.c"
  check_exports "$work/pc/${p//_/-}.so"
done
check_loaded "$work/pc/allreduce-rabenseifner.so" collective allreduce.rabenseifner 1.0.0 0
check_loaded "$work/pc/swiglu.so" op elementwise 0.1.0 10
check_used --plugin "$work/pc/allreduce-rabenseifner.so" --plugin "$work/pc/swiglu.so"

step "CMake package"
cmake -S "$work/example" -B "$work/cm" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cm" >/dev/null
for so in "$work/cm/allreduce-rabenseifner.so" "$work/cm/swiglu.so"; do
  [ -f "$so" ] || fail "CMake build did not produce $so (no 'lib' prefix expected)"
  check_exports "$so"
done
check_loaded "$work/cm/allreduce-rabenseifner.so" collective allreduce.rabenseifner 1.0.0 0
check_loaded "$work/cm/swiglu.so" op elementwise 0.1.0 10

step "installed into the plugin folder, found with no environment"
cmake --install "$work/cm" >/dev/null
for f in allreduce-rabenseifner.so swiglu.so; do
  [ -f "$plugindir/$f" ] || fail "$f not installed into $plugindir"
done
out=$("$stepcast" plugins 2>/dev/null)
echo "$out"
for pat in "allreduce\.rabenseifner .* loaded +.*/allreduce-rabenseifner\.so" \
           "elementwise .* 10 +loaded +.*/swiglu\.so"; do
  echo "$out" | grep -E "^(collective|op) +$pat\$" >/dev/null \
    || fail "installed plugin ($pat) not found by the installed program"
done
check_used

step "plugin SDK and library package: OK"
