#!/usr/bin/env bash
# The runtime's GPU checks in one command, for a machine with a real GPU:
#   bash ci/gpu_run.sh
# Value tests (tests/gpu: exact under "smart", wrong under the test-only "none"), then the
# runtime benchmarks. Logs and JSON go to $OUT (default /tmp/genspirv-gpu).
# Sources .gl/enter.sh when present (Vulkan loader + wheels for a bare image).
set -u
cd "$(dirname "$0")/.."
if [ -f .gl/enter.sh ]; then
  # shellcheck disable=SC1091
  source .gl/enter.sh
fi
OUT=${OUT:-/tmp/genspirv-gpu}
export OUT
mkdir -p "$OUT"
status=0
python3 - <<'PY' 2>&1 | tee "$OUT/device.txt"
from genspirv.runtime import Device
with Device() as d:
    print(d.properties["name"], d.properties["type"], d.properties["api_version"])
    print("queue family", d.queue_family, "transfer-only family", d.transfer_family)
PY
timeout 420 python3 -m pytest -q -rs -p no:cacheprovider -o addopts= tests/gpu \
  --junitxml="$OUT/gpu_tests.xml" 2>&1 | tee "$OUT/gpu_tests.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
timeout 300 python3 -m genspirv.runtime.bench --reps 7 --json "$OUT/runtime_bench.json" 2>&1 \
  | tee "$OUT/runtime_bench.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
exit $status
