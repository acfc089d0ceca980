#!/usr/bin/env bash
# Installs keras-structinit with the TensorFlow, JAX and PyTorch backends, KerasHub,
# KerasCV and the test extras, runs ruff, then runs the test suite once per backend. The
# pytest processes (JOBS, in queue order) are shared out to two lanes that each take the
# next job when they finish one, so that the 2-core machine stays busy until the end.
# SPLIT_FILES run in a process of their own on JAX and TensorFlow, whose processes keep
# much of the memory of what they built (TensorFlow over all files peaked at 3.03 GB; the
# CLI tests, which train and run the demo, added 0.76 GB of it); this also gives the lanes
# jobs of a size to balance. The JAX processes share one compilation cache, started empty.
# Every test runs on every backend; each process stays under 3 GB of memory.
# STRUCTINIT_TEST_SERIAL=1 runs the processes one after another. Each one's output is
# printed, in JOBS order, at the end, with its time, peak memory and CPU seconds.
# Usage: bash scripts/test_all_backends.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check -e ".[tensorflow,jax,torch,viz,test,hub,cv]"
export TF_CPP_MIN_LOG_LEVEL=2
status=0
echo "=== ruff ==="
python -m ruff check keras_structinit tests examples benchmarks || status=1
python -m ruff format --check keras_structinit tests examples benchmarks || status=1

# The CLI tests train models and run the demo; the weight-selection tests build KerasHub,
# KerasCV and keras.applications models: slow in eager JAX, and memory that TensorFlow keeps.
# test_methods and test_freezing build keras.applications models too: with them the tensorflow
# job peaked at 2.98 GB (8d019b5), against CI's 3 GB per process.
# At 5bdb934 the tensorflow job peaked at 3.09 GB (2.94 at ed46534): test_benchmarks_torch_reference
# imports torch into it (+0.18 GB at import); test_recipes_run, test_mimetic_attention and
# test_evaluation train, build KerasHub ViTs and take gradients; test_bad_inputs' Run rows and
# test_layers_contract build and save a model per case. Without the first four it still peaked
# at 3.15 GB (measured alone), so the last two moved as well. With issue 52's inspect analyses the
# job peaked at 2.97 GB, then 2.99 without test_cli_init: it and the two inspect files moved too.
# Issues 74 and 76 added CLI runs that train in-process (every refusal over a finished run, the
# demo stopped and resumed, refusals in the command line's words): they start in this job. Issue 77's
# classifier tests build keras.applications ResNet101/50, EfficientNetB3/B0 and MobileNetV2 pairs.
SPLIT_FILES=(tests/test_cli.py tests/test_cli_init.py tests/test_inspection.py tests/test_alignment_inspect.py
             tests/test_selection_ecosystem.py tests/test_selection_select.py
             tests/test_selection_teachers.py tests/test_recipes_distill.py
             tests/test_selection_keras_cv.py tests/test_methods.py tests/test_freezing.py
             tests/test_recipes_run.py tests/test_mimetic_attention.py tests/test_evaluation.py
             tests/test_benchmarks_torch_reference.py tests/test_bad_inputs.py tests/test_layers_contract.py
             tests/test_output_safety.py tests/test_demo_resume.py tests/test_cli_words.py
             tests/test_selection_head.py tests/test_cli_refusals.py)
ignore=()
for path in "${SPLIT_FILES[@]}"; do ignore+=(--ignore "${path}"); done
# A third process (TensorFlow; JAX too since issue 60). Issue 58-65's tests (inspect of keras.applications models, KerasHub
# models found by structure, softmax heads trained, faults, two-process locks, per-layer activations,
# seeded reruns) took the tensorflow job to 3.41 GB (4bee031); with nine of these files in a process
# of their own it still peaked at 3.03 GB (measured alone, de47a76), so the mimetic and determinism
# files moved too. The split job stays as it was (2.63 GB with three of them). JAX's main job holds
# them at 2.26 GB. Issue 62's memory columns (a 200 MB allocation test, tiny runs of the speed
# scripts on every backend) took the tensorflow job to 3.27 GB (f57396a): those three files moved too.
# Issues 79-80's files (auto's models and reruns, user_path's fits, the selection and inspect entries'
# tiny runs) took it to 3.38 GB (4882480): they moved too.
TF_SPLIT_FILES=(tests/test_inspect_issue58.py tests/test_recipes_heads.py tests/test_mimetic_structure.py
                tests/test_run_faults.py tests/test_output_lock.py tests/test_recipes_native.py
                tests/test_alignment_activations.py tests/test_alignment_specialization.py
                tests/test_recipes_weight_decay.py tests/test_benchmarks_determinism.py
                tests/test_mimetic_apply.py tests/test_mimetic_inspect.py tests/test_benchmarks_memory.py
                tests/test_benchmarks_depthwise_speed.py tests/test_benchmarks_frozen_speed.py
                tests/test_benchmarks_user_path.py tests/test_benchmarks_inspect_trained.py
                tests/test_benchmarks_selection_accuracy.py)
# Issue 60's derived weight selection builds keras.applications ResNet101/50, EfficientNetB3/B0,
# MobileNetV2 and KerasHub DINOV2 models (its file alone peaked at 1.8 GB on JAX, 2.2 GB on
# TensorFlow). In the split2 processes it took TensorFlow's to 3.05 GB and torch's single process to
# 3.03 GB (d707a5b): it runs in a process of its own on every backend (the -split3 jobs); JAX runs the
# TensorFlow split2 files in a process of their own too (jax-split2: 2.44 GB with the derived files).
# Issue 62's compiled-torch tests (tests/test_torch_compile.py: torch.compile of five models, minutes of
# CPU; skipped elsewhere) run there too, beside the derived-selection files rather than in torch's main job.
# Issue 80's auto tests (teachers given in the spec, a Run resolving one) took TensorFlow's split2 job
# from 2.91 to 3.06 GB (2096f25): test_core_auto.py runs here, beside the short TensorFlow split3 job.
SPLIT3_FILES=(tests/test_selection_derived.py tests/test_selection_derived_families.py tests/test_torch_compile.py
              tests/test_core_auto.py)
tf_ignore=("${ignore[@]}")
for path in "${SPLIT3_FILES[@]}"; do tf_ignore+=(--ignore "${path}"); done
for path in "${TF_SPLIT_FILES[@]}"; do tf_ignore+=(--ignore "${path}"); done
# Longest first, so that the two short split jobs fill the end of the lane that the longest job
# started. At 11cb2c4 (2026-11-26, s): jax 614, torch 476, jax-split 185, tensorflow 458,
# tensorflow-split 204 ran in the order jax, torch, jax-split, tensorflow, tensorflow-split: the
# lanes ended 207 s apart (1072 s and 865 s).
# The no-TensorFlow lanes: what `pip install -e ".[jax]"` (or ".[torch]") gets, in a venv of its own
# with no TensorFlow: the native input stream, structinit train, one seed one log, kill and resume.
NO_TF_FILES=(tests/test_no_tensorflow.py tests/test_recipes_native.py tests/test_recipes_rand_augment.py
             tests/test_recipes_backup.py)
# The gpu-smoke lane: a venv like the lent GPU's image (JAX and torch, no TensorFlow, no Keras), Keras
# from the wheels scripts/gpu_bundle.sh downloads (for this Python), and tests/test_gpu_quick_smoke.py,
# which runs scripts/gpu_quick.sh --smoke: the gpu-quick tier end to end at tiny sizes.
GPU_SMOKE_PACKAGES=(jax "torch==2.13.0" numpy h5py rich absl-py ml-dtypes packaging typing-extensions pillow
                    pytest)
JOBS=(jax torch tensorflow jax-split jax-split2 tensorflow-split tensorflow-split2 jax-split3 torch-split3
      tensorflow-split3 jax-notf torch-notf gpu-smoke)
logs="$(mktemp -d)"
trap 'rm -rf "${logs}"' EXIT
export JAX_COMPILATION_CACHE_DIR="${logs}/jax-cache"  # tests/conftest.py leaves a set one alone
echo 0 > "${logs}/queue.next"

# GNU time reports each process's peak memory (CI keeps each under 3 GB) and the CPU seconds
# it and the interpreters it started used (user + system).
timer=()
if /usr/bin/time -f "%M %U %S" -o /dev/null true 2>/dev/null; then
  timer=(/usr/bin/time -f "%M %U %S" -o)
fi

# run_job NAME BACKEND PYTEST_ARGS...: one pytest process, logged under NAME (with the interpreter
# PYTHON, default python).
run_job() {
  local name="$1" backend="$2" start=${SECONDS}
  local rc=0
  local measure=()
  [[ ${#timer[@]} -gt 0 ]] && measure=("${timer[@]}" "${logs}/${name}.usage")
  KERAS_BACKEND="${backend}" "${measure[@]}" "${PYTHON:-python}" -m pytest -q -p no:cacheprovider --durations=15 "${@:3}" \
    > "${logs}/${name}.log" 2>&1 || rc=$?
  if (( rc == 5 )); then rc=0; fi  # pytest's "no tests collected" (extra arguments deselected a whole run)
  echo "${rc} $((SECONDS - start))" > "${logs}/${name}.status"
}

# run_named NAME PYTEST_ARGS...: the job NAME (a backend, "-split" for SPLIT_FILES only, "-notf" for
# NO_TF_FILES in a new venv with that backend and no TensorFlow).
run_named() {
  local name="$1" backend="${1%%-split*}"
  backend="${backend%%-notf}"
  if [[ "${name}" == gpu-smoke ]]; then
    local venv="${logs}/venv-gpu-smoke" wheels="${logs}/gpu-wheels"
    local version
    version=$(python -c 'import sys; print(f"{sys.version_info.major}.{sys.version_info.minor}")')
    if bash scripts/gpu_bundle.sh --python-version "${version}" --wheels "${wheels}" --no-data \
          > "${logs}/${name}.install" 2>&1 && python -m venv "${venv}" \
        && "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check "${GPU_SMOKE_PACKAGES[@]}" \
          >> "${logs}/${name}.install" 2>&1; then
      # pytest's conftest imports Keras: the bundle's, installed as on the device.
      "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps \
        --target "${logs}/gpu-site" "${wheels}"/*.whl >> "${logs}/${name}.install" 2>&1
      GPU_QUICK_WHEELS="${wheels}" PYTHON="${venv}/bin/python" PYTHONPATH="${logs}/gpu-site" \
        run_job "${name}" jax "${@:2}" tests/test_gpu_quick_smoke.py
    else
      cat "${logs}/${name}.install" > "${logs}/${name}.log"
      echo "1 0" > "${logs}/${name}.status"
    fi
  elif [[ "${name}" == *-notf ]]; then
    local venv="${logs}/venv-${backend}"
    if python -m venv "${venv}" && "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check \
        -e ".[${backend},test]" > "${logs}/${name}.install" 2>&1; then
      PYTHON="${venv}/bin/python" run_job "${name}" "${backend}" "${@:2}" "${NO_TF_FILES[@]}"
    else
      cat "${logs}/${name}.install" > "${logs}/${name}.log"
      echo "1 0" > "${logs}/${name}.status"
    fi
  elif [[ "${name}" == *-split3 ]]; then
    run_job "${name}" "${backend}" "${@:2}" "${SPLIT3_FILES[@]}"
  elif [[ "${name}" == *-split2 ]]; then
    run_job "${name}" "${backend}" "${@:2}" "${TF_SPLIT_FILES[@]}"
  elif [[ "${name}" == *-split ]]; then
    run_job "${name}" "${backend}" "${@:2}" "${SPLIT_FILES[@]}"
  elif [[ "${name}" == tensorflow || "${name}" == jax ]]; then
    run_job "${name}" "${backend}" "${@:2}" "${tf_ignore[@]}" tests
  elif [[ "${name}" == torch ]]; then  # torch keeps little of what it built: all but SPLIT3_FILES
    local split3=()
    for path in "${SPLIT3_FILES[@]}"; do split3+=(--ignore "${path}"); done
    run_job "${name}" "${backend}" "${@:2}" "${split3[@]}" tests
  else
    run_job "${name}" "${backend}" "${@:2}" "${ignore[@]}" tests
  fi
}

# next_job: prints the next job nobody has taken (nothing when all are taken).
next_job() {
  local i
  {
    flock 9
    read -r i < "${logs}/queue.next"
    echo $((i + 1)) > "${logs}/queue.next"
  } 9> "${logs}/queue.lock"
  (( i < ${#JOBS[@]} )) && echo "${JOBS[i]}"
  return 0
}

lane() {
  local name
  while name="$(next_job)" && [[ -n "${name}" ]]; do run_named "${name}" "$@"; done
}

if [[ "${STRUCTINIT_TEST_SERIAL:-0}" == "1" ]]; then
  lane "$@"
else
  # One compute thread per torch and TensorFlow process, as many processes as cores (their
  # thread pools spin while they wait for a core: TensorFlow 295 s -> 269 s). Not for JAX:
  # XLA limited to one thread (--xla_cpu_multi_thread_eigen=false
  # intra_op_parallelism_threads=1) made two JAX test files 23% slower (394 s vs 320 s).
  export OMP_NUM_THREADS=1 TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1
  lane "$@" &
  lane "$@" &
  # A line per minute, so that CI logs show the run is alive.
  last=${SECONDS}
  while (( $(find "${logs}" -name '*.status' | wc -l) < ${#JOBS[@]} )); do
    sleep 5
    if (( SECONDS - last >= 60 )); then
      last=${SECONDS}
      echo "... ${SECONDS}s: finished: $(cd "${logs}" && ls -- *.status 2>/dev/null | sed 's/.status//' | xargs)"
    fi
  done
  wait || true
fi

for name in "${JOBS[@]}"; do
  read -r rc seconds < "${logs}/${name}.status"
  usage=""
  if [[ -s "${logs}/${name}.usage" ]]; then
    # Its last line: GNU time writes "Command exited with non-zero status N" above it when pytest fails.
    usage=$(tail -n 1 "${logs}/${name}.usage" |
            awk '{printf ", peak memory %.2f GB, CPU %.0f s", $1 / 1048576, $2 + $3}')
  fi
  echo "=== ${name} (KERAS_BACKEND=${name%%-*}): exit ${rc} after ${seconds}s${usage} ==="
  cat "${logs}/${name}.log"
  [[ "${rc}" == "0" ]] || status=1
done
exit "${status}"
