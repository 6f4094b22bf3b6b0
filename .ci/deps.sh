#!/usr/bin/env bash
# Install what stepcast needs to build and test, from Debian's packages, if missing.
# Runs apt-get as root, or through sudo otherwise. Safe to run again: installs nothing
# when everything is there.
set -euo pipefail
pkgs=(cmake make gcc pkg-config check libopenblas-dev liblapacke-dev libyajl-dev
      libcjson-dev libexpat1-dev libxgboost-dev zlib1g-dev openmpi-bin libopenmpi-dev
      clang libclang-rt-dev)  # clang + libFuzzer's runtime: .ci/fuzz.sh
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
