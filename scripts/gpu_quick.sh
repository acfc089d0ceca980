#!/usr/bin/env bash
# The one prepared command for a lent GPU (CONTRIBUTING.md, "Benchmarks on a GPU"): runs the
# `gpu-quick` tier of benchmarks/suite.py on an image with JAX and PyTorch but no Keras, no
# TensorFlow and no network, from the wheels and data that scripts/gpu_bundle.sh put in .whl/ and
# .data/ (the device tool's `carry`). Steps:
#   1. installs the wheels offline into a folder of their own (pip --target; PYTHONPATH), the
#      package itself from the working tree (PYTHONPATH);
#   2. prints the GPU and the versions, and stops if no backend sees a GPU (a full tier on a CPU
#      would only spend the loan);
#   3. runs the tier one entry at a time, the headline first, each under `timeout` (its estimate
#      x 1.5 + 1 min, cut to what is left of GPU_QUICK_BUDGET_S); BENCH_DEADLINE stops a training
#      run at an epoch's end before that, and records the epochs it did;
#   4. after every entry packs the results into $OUT (results.tgz: results/gpu/ and REPORT.md;
#      summary.md: what ran, how long, what was left; gpu_quick.log: everything printed), so a
#      run cut short keeps what it measured, and prints where they are.
# Usage: bash scripts/gpu_quick.sh [--smoke]
#   --smoke: the same steps with every entry at tiny sizes (`benchmarks.run --smoke`), no GPU
#            needed, results under $GPU_QUICK_RESULTS (default benchmarks/results/local/smoke).
# Environment: OUT (default ./gpu-quick-out), PYTHON (default python3), GPU_QUICK_WHEELS (default
# .whl), GPU_QUICK_SITE (default /tmp/site), GPU_QUICK_BUDGET_S (default 560: the device tool
# stops a command at 600 s), KERAS_BACKEND (default jax: the fastest backend measured there).
set -uo pipefail
cd "$(dirname "$0")/.."
started=${SECONDS}
SMOKE=0
[[ "${1:-}" == "--smoke" ]] && SMOKE=1
PYTHON="${PYTHON:-python3}"
WHEELS="${GPU_QUICK_WHEELS:-.whl}"
SITE="${GPU_QUICK_SITE:-/tmp/site}"
BUDGET="${GPU_QUICK_BUDGET_S:-560}"
OUT="${OUT:-${PWD}/gpu-quick-out}"
PACK_S=20  # kept back for the last packing
mkdir -p "${OUT}"
exec > >(tee -a "${OUT}/gpu_quick.log") 2>&1
export PYTHONUNBUFFERED=1 KERAS_BACKEND="${KERAS_BACKEND:-jax}" TF_CPP_MIN_LOG_LEVEL=2

if (( SMOKE )); then
  RESULTS="${GPU_QUICK_RESULTS:-${PWD}/benchmarks/results/local/smoke}"
  run_args=(--smoke --results "${RESULTS}")
  report_args=(--results "${RESULTS}")
else
  RESULTS="${PWD}/benchmarks/results"
  run_args=()
  report_args=()
fi
summary="${OUT}/summary.md"

pack() {
  tar -czf "${OUT}/results.tgz.part" -C "${RESULTS}" gpu $( [[ -f "${RESULTS}/REPORT.md" ]] && echo REPORT.md ) \
    2>/dev/null && mv "${OUT}/results.tgz.part" "${OUT}/results.tgz"
  if (( ! SMOKE )) && [[ -f benchmarks/REPORT.md ]]; then cp benchmarks/REPORT.md "${OUT}/REPORT.md"; fi
}

echo "=== gpu_quick.sh $( ((SMOKE)) && echo --smoke ) ($(date -u +%FT%TZ)), budget ${BUDGET} s ==="
ls "${WHEELS}"/*.whl >/dev/null 2>&1 || { echo "no wheels in ${WHEELS}: run scripts/gpu_bundle.sh here and carry .whl"; exit 2; }
"${PYTHON}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "${SITE}" \
  "${WHEELS}"/*.whl || { echo "installing the wheels of ${WHEELS} failed"; exit 2; }
export PYTHONPATH="${SITE}:${PWD}${PYTHONPATH:+:${PYTHONPATH}}"

echo "=== machine ==="
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: none"
"${PYTHON}" - "${SMOKE}" <<'EOF' || exit 3
import importlib.util, sys
smoke = sys.argv[1] == "1"
import keras, numpy
found = {name: importlib.util.find_spec(name) is not None for name in ("jax", "torch", "tensorflow")}
print(f"python {sys.version.split()[0]}, keras {keras.__version__} ({keras.__file__}), numpy {numpy.__version__}, "
      f"backend {keras.backend.backend()}")
gpu = False
if found["jax"]:
    import jax
    print(f"jax {jax.__version__}: {jax.devices()}")
    gpu |= any(d.platform == "gpu" for d in jax.devices())
if found["torch"]:
    import torch
    print(f"torch {torch.__version__}: cuda {torch.cuda.is_available()}"
          + (f" ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else ""))
    gpu |= torch.cuda.is_available()
print("tensorflow: " + ("installed" if found["tensorflow"] else "not installed (the native input stream)"))
import keras_structinit
print(f"keras_structinit {keras_structinit.__version__} ({keras_structinit.__file__})")
if not gpu and not smoke:
    sys.exit("no GPU seen by JAX or torch: stopping (use --smoke on a CPU)")
EOF
[[ -f .data/cifar10-train-jpeg.zip || -f ../shared/datasets/cifar10-train-jpeg.zip ]] \
  || echo "no CIFAR-10 zip in .data/ (scripts/gpu_bundle.sh; carry .data): the training entries will fail"

# The entries, the headline first (suite.GPU_QUICK_FIRST), then the rest in the suite's order.
mapfile -t entries < <("${PYTHON}" - <<'EOF'
from benchmarks.suite import GPU_QUICK, GPU_QUICK_FIRST
order = sorted(GPU_QUICK, key=lambda b: (b.name not in GPU_QUICK_FIRST,
                                         GPU_QUICK_FIRST.index(b.name) if b.name in GPU_QUICK_FIRST else 0))
for bench in order:
    print(bench.name, bench.minutes)
EOF
)
(( ${#entries[@]} )) || { echo "no gpu-quick entries found"; exit 4; }
{
  echo "# gpu-quick on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 || echo 'no GPU')"
  echo
  echo "Started $(date -u +%FT%TZ); budget ${BUDGET} s$( ((SMOKE)) && echo '; --smoke' )."
  echo
  echo "| Entry | Estimate min | Limit s | Status | Wall s |"
  echo "|---|---:|---:|---|---:|"
} > "${summary}"

status=0
for line in "${entries[@]}"; do
  read -r name minutes <<< "${line}"
  left=$(( BUDGET - (SECONDS - started) - PACK_S ))
  if (( SMOKE )); then
    limit=300
  else
    limit=$(awk -v m="${minutes}" 'BEGIN { printf "%d", m * 90 + 60 }')
  fi
  (( limit > left )) && limit=${left}
  if (( limit < 30 )); then
    echo "=== ${name}: skipped, ${left} s left ==="
    echo "| ${name} | ${minutes} | — | skipped: no time left | 0 |" >> "${summary}"
    continue
  fi
  echo "=== ${name} (~${minutes} min; limit ${limit} s; $(( SECONDS - started )) s so far) ==="
  begun=${SECONDS}
  BENCH_DEADLINE=$(( $(date +%s) + limit - 20 )) timeout --signal=TERM --kill-after=15 "${limit}" \
    "${PYTHON}" -m benchmarks.run --suite gpu-quick --only "${name}" "${run_args[@]}"
  rc=$?
  case ${rc} in
    0) what="finished" ;;
    124|137) what="cut at its limit (what finished is kept)"; status=1 ;;
    75) what="stopped at BENCH_DEADLINE with runs left (what finished is kept)"; status=1 ;;
    *) what="failed (exit ${rc})"; status=1 ;;
  esac
  echo "| ${name} | ${minutes} | ${limit} | ${what} | $(( SECONDS - begun )) |" >> "${summary}"
  pack
done

"${PYTHON}" -m benchmarks.run --report "${report_args[@]}" >/dev/null 2>&1 || true
pack
echo >> "${summary}"
echo "Ended $(date -u +%FT%TZ), $(( SECONDS - started )) s in all." >> "${summary}"
cat "${summary}"
echo "=== results: ${OUT}/results.tgz ($(basename "${RESULTS}")/gpu and REPORT.md), ${OUT}/summary.md, ${OUT}/gpu_quick.log ==="
exit "${status}"
