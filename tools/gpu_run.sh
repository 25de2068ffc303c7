#!/usr/bin/env bash
# The runtime's GPU checks in one command, for a machine with a real GPU:
#   bash tools/gpu_run.sh
# 1. tests/gpu/test_gpu_values.py: exact values under "smart", wrong ones under the test-only
#    "none", the transfer queue, sync validation where the layer is present;
# 2. the runtime benchmarks (python -m genspirv bench runtime);
# 3. the rest of tests/gpu, in the time left.
# Logs and JSON go to $OUT (default /tmp/genspirv-gpu). On a bare image it first sources
# .gl/enter.sh (Vulkan loader, validation layers and wheels carried in .gl/ and .whl/).
set -u
cd "$(dirname "$0")/.."
if ! python3 -c "import vulkan" 2>/dev/null && [ -f .gl/enter.sh ]; then
  # shellcheck disable=SC1091
  source .gl/enter.sh
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
OUT=${OUT:-/tmp/genspirv-gpu}
export OUT
mkdir -p "$OUT"
status=0
python3 - <<'PY' 2>&1 | tee "$OUT/device.txt"
from genspirv.runtime import Device
with Device() as d:
    print(d.properties["name"], d.properties["type"], d.properties["api_version"])
    print("queue family", d.queue_family, "transfer-only family", d.transfer_family)
    print("features", {k: v for k, v in d.features.items() if v})
PY
pytest_args=(-q -rs -p no:cacheprovider -o addopts=)
timeout 240 python3 -m pytest "${pytest_args[@]}" tests/gpu/test_gpu_values.py \
  --junitxml="$OUT/gpu_values.xml" 2>&1 | tee "$OUT/gpu_values.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
timeout 200 python3 -m genspirv bench runtime --repeat 7 --json "$OUT/runtime_bench.json" 2>&1 \
  | tee "$OUT/runtime_bench.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
timeout 120 python3 -m pytest "${pytest_args[@]}" tests/gpu --ignore=tests/gpu/test_gpu_values.py \
  2>&1 | tail -30 > "$OUT/gpu_other.log"
exit $status
