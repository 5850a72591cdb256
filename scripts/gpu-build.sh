# Sourced by the scripts/gpu-*.sh: from the repository root, sets build (BUILD, default
# build-gpu), out (OUT, default gpu-results) and workspace, builds in Release and calibrates the
# GPU once per workspace. Exits when the build fails, with the end of its log.
build=${BUILD:-build-gpu}
out=${OUT:-gpu-results}
workspace=$build/workspace
mkdir -p "$out"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/cmake.txt" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" > "$out/build.txt" 2>&1 || { tail -40 "$out/build.txt"; exit 1; }
[ -d "$workspace/calibration" ] ||
  "$build/kernelarc" calibrate --device cuda:0 --workspace "$workspace" > "$out/calibrate.txt" 2>&1
