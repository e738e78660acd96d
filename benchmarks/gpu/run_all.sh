#!/usr/bin/env bash
# Every GPU check of the project in one command, on a CUDA machine (issue: GPU validation).
#
#   here:            python benchmarks/gpu/prepare.py          # fixed copies of the fix programs (needs libcst)
#   on the GPU:      OUT=some/folder bash benchmarks/gpu/run_all.sh
#   here again:      python benchmarks/gpu/sync_debug_table.py OUT/sync_debug.json > benchmarks/results/gpu_sync_debug_vs_lint.txt
#
# Only torch, torchvision, torchmetrics and pytest are needed there (the runtime is pure torch; the linter
# runs here). Each part writes its own file under $OUT and a failing part does not stop the others.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-benchmarks/results/gpu}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/runtime${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
{
  date -u +"date %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader
  $PY -c 'import sys, torch, torchmetrics; print("python", sys.version.split()[0], "torch", torch.__version__, "CUDA", torch.version.cuda, "torchmetrics", torchmetrics.__version__)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== 1. tests/gpu and the runtime tests that run on CUDA"
timeout 300 $PY -m pytest tests/gpu tests/runtime/test_guard.py tests/runtime/test_guard_metrics.py -q \
  -p no:cacheprovider -o addopts="" > "$OUT/gpu_tests.log" 2>&1
echo "pytest exit $?"; tail -5 "$OUT/gpu_tests.log"

echo "== 2. seed experiment: step time and syncs per step"
timeout 240 $PY benchmarks/step_overhead.py --batch 128 --steps 200 --warmup 30 --count-syncs 100 \
  --out "$OUT/step_overhead_gpu.txt"
echo "step_overhead exit $?"

echo "== 3. the tracer on CUDA with --timing (100 steps after 10)"
for variant in torchmetrics syncfree; do
  timeout 180 $PY -m syncfree.trace --steps 100 --warmup 10 --timing --json "$OUT/trace_$variant.json" \
    benchmarks/step_overhead.py --train $variant --batch 128 --steps 130
  echo "trace $variant exit $?"
done

echo "== 4. programs under torch.cuda.set_sync_debug_mode(\"warn\")"
programs=(fixtures/trace/*.py $(grep -l '^# runnable: yes' fixtures/loops/*.py))
[ -d .gpuwork ] && programs+=(.gpuwork/original/*.py .gpuwork/fixed/*.py) || echo "no .gpuwork: run prepare.py here first"
timeout 300 $PY benchmarks/gpu/sync_debug_run.py --jobs 6 --out "$OUT/sync_debug.json" "${programs[@]}"
echo "sync_debug_run exit $?"
