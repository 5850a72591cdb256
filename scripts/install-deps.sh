#!/usr/bin/env bash
# Installs kernelarc's build and test dependencies from the distribution (Debian 12 or
# Ubuntu 24.04), as root. Installs only what is missing, so a second run is quick.
# redis-server is for the tests of the Redis work queue (they start their own server); a
# deployment needs it on one host only (README, "Across hosts"). chromium is for the tests that
# load `kernelarc report`'s HTML headless; viewing a report needs any browser.
# The CUDA toolkit is optional: when /usr/local/cuda (or nvcc on PATH) exists, the CUDA backend
# is built too.
set -euo pipefail
packages=(g++ cmake ninja-build pkg-config nlohmann-json3-dev libcli11-dev libfmt-dev
          libgtest-dev libxxhash-dev libsqlite3-dev libcurl4-openssl-dev libcpp-httplib-dev
          libhiredis-dev redis-server python3 python3-torch pybind11-dev libtorch-dev chromium)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
