# Sourced by the scripts/gpu-*.sh: from the repository root, sets build (BUILD, default
# build-gpu), out (OUT, default gpu-results) and workspace, builds in Release and calibrates the
# GPU once per workspace. Exits when the build fails, with the end of its log. TARGETS (default:
# everything) narrows the build, e.g. "kernelarc test_eval": a fresh device machine spends minutes
# of its short session on the tools and test binaries a call does not run.
build=${BUILD:-build-gpu}
out=${OUT:-gpu-results}
workspace=$build/workspace
mkdir -p "$out" "$build"
# The device machine receives the tree without its modification times, and keeps the build
# folder between calls: ninja would take edited sources for older than their objects and skip
# them. Touch every file whose content changed since the last build there.
hashes="$build/source-hashes.txt"
find CMakeLists.txt cmake src include tests tools templates python -type f -print0 2>/dev/null |
  sort -z | xargs -0 sha1sum > "$hashes.new"
if [ -f "$hashes" ]; then
  diff "$hashes" "$hashes.new" | sed -n 's/^> [0-9a-f]*  //p' | xargs -r touch
elif [ -f "$build/build.ninja" ]; then  # built before this check existed: trust nothing
  sed 's/^[0-9a-f]*  //' "$hashes.new" | xargs -r touch
fi
mv "$hashes.new" "$hashes"
# The device image's packages unpacked by .gpudeps/unpack.sh keep pkg-config files that name
# /usr/include/<package> (hiredis); CMake refuses an imported target whose include directory is
# missing, so point those names at the unpacked headers.
if [ -d /opt/gpudeps/usr/include ]; then
  for dir in /opt/gpudeps/usr/include/*/; do
    name=$(basename "$dir")
    [ -e "/usr/include/$name" ] || ln -s "$dir" "/usr/include/$name" 2>/dev/null || true
  done
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/cmake.txt" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" ${TARGETS:+--target $TARGETS} > "$out/build.txt" 2>&1 || { tail -40 "$out/build.txt"; exit 1; }
[ -d "$workspace/calibration" ] ||
  "$build/kernelarc" calibrate --device cuda:0 --workspace "$workspace" > "$out/calibrate.txt" 2>&1
