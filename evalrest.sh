source .gpudeps/unpack.sh
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu -j16 >/dev/null || exit 1
ls build-gpu/workspace/calibration || build-gpu/kernelarc calibrate --device cuda:0 --workspace build-gpu/workspace > /dev/null
for name in "$@"; do
  p=problems/cuda/$name
  echo "== $name"
  timeout 150 build-gpu/kernelarc eval $p $p/solutions/basic --device cuda:0 --workspace build-gpu/workspace --json $OUT/$name.json
done 2>&1 | tee $OUT/evals.txt
