#!/usr/bin/env bash
# Installs keras-structinit with the TensorFlow, JAX and PyTorch backends, KerasHub,
# KerasCV and the test extras, runs ruff, then runs the test suite once per backend, in two
# lanes side by side so that two pytest processes share a 2-core machine: JAX (the
# longest: eager JAX compiles every op shape) in one, TensorFlow, torch and JAX's
# CLI and weight-selection files in the other. Those files (SPLIT_FILES) run in a
# process of their own on JAX and TensorFlow, whose processes keep much of the memory
# of what they built (TensorFlow over all files peaked at 3.03 GB; the CLI tests,
# which train and run the demo, added 0.76 GB of it). Every test runs on every
# backend; each process stays under 3 GB of memory. STRUCTINIT_TEST_SERIAL=1 runs
# the processes one after another. Each one's output is printed, in order, at the end.
# Usage: bash scripts/test_all_backends.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check -e ".[tensorflow,jax,torch,viz,test,hub,cv]"
export TF_CPP_MIN_LOG_LEVEL=2
status=0
echo "=== ruff ==="
python -m ruff check keras_structinit tests examples benchmarks || status=1

# The CLI tests train models and run the demo; the weight-selection tests build KerasHub,
# KerasCV and keras.applications models: slow in eager JAX (on JAX they run in the
# second lane, which would otherwise finish first) and memory that TensorFlow keeps.
SPLIT_FILES=(tests/test_cli.py tests/test_selection_ecosystem.py tests/test_selection_select.py
             tests/test_selection_teachers.py tests/test_recipes_distill.py
             tests/test_selection_keras_cv.py)
ignore=()
for path in "${SPLIT_FILES[@]}"; do ignore+=(--ignore "${path}"); done
runs=(tensorflow tensorflow-split jax jax-split torch)
logs="$(mktemp -d)"
trap 'rm -rf "${logs}"' EXIT

# GNU time reports each process's peak memory (CI keeps each under 3 GB).
timer=()
if /usr/bin/time -f "%M" -o /dev/null true 2>/dev/null; then
  timer=(/usr/bin/time -f "%M" -o)
fi

# run_job NAME BACKEND PYTEST_ARGS...: one pytest process, logged under NAME.
run_job() {
  local name="$1" backend="$2" start=${SECONDS}
  local rc=0
  local measure=()
  [[ ${#timer[@]} -gt 0 ]] && measure=("${timer[@]}" "${logs}/${name}.rss")
  KERAS_BACKEND="${backend}" "${measure[@]}" python -m pytest -q -p no:cacheprovider --durations=15 "${@:3}" \
    > "${logs}/${name}.log" 2>&1 || rc=$?
  if (( rc == 5 )); then rc=0; fi  # pytest's "no tests collected" (extra arguments deselected a whole run)
  echo "${rc} $((SECONDS - start))" > "${logs}/${name}.status"
}

first_lane() { run_job jax jax "$@" "${ignore[@]}" tests; }
second_lane() {
  run_job tensorflow tensorflow "$@" "${ignore[@]}" tests
  run_job tensorflow-split tensorflow "$@" "${SPLIT_FILES[@]}"
  run_job torch torch "$@" tests
  run_job jax-split jax "$@" "${SPLIT_FILES[@]}"
}

if [[ "${STRUCTINIT_TEST_SERIAL:-0}" == "1" ]]; then
  first_lane "$@"
  second_lane "$@"
else
  first_lane "$@" &
  second_lane "$@" &
  # A line per minute, so that CI logs show the run is alive.
  last=${SECONDS}
  while (( $(find "${logs}" -name '*.status' | wc -l) < ${#runs[@]} )); do
    sleep 5
    if (( SECONDS - last >= 60 )); then
      last=${SECONDS}
      echo "... ${SECONDS}s: finished: $(cd "${logs}" && ls -- *.status 2>/dev/null | sed 's/.status//' | xargs)"
    fi
  done
  wait || true
fi

for name in "${runs[@]}"; do
  read -r rc seconds < "${logs}/${name}.status"
  peak=""
  if [[ -s "${logs}/${name}.rss" ]]; then
    peak=", peak memory $(awk '{printf "%.2f GB", $1 / 1048576}' "${logs}/${name}.rss")"
  fi
  echo "=== ${name} (KERAS_BACKEND=${name%%-*}): exit ${rc} after ${seconds}s${peak} ==="
  cat "${logs}/${name}.log"
  [[ "${rc}" == "0" ]] || status=1
done
exit "${status}"
