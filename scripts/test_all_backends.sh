#!/usr/bin/env bash
# Installs keras-structinit with the TensorFlow, JAX and PyTorch backends, KerasHub
# and the test extras, runs ruff, then runs the test suite once per backend: one
# pytest process per KERAS_BACKEND, in two lanes side by side (JAX, the longest,
# in one; TensorFlow then torch in the other), so that two processes share a
# 2-core machine; each stays under 3 GB of memory. STRUCTINIT_TEST_SERIAL=1 runs
# the three one after another. Each backend's output is printed, in order, at the end.
# Usage: bash scripts/test_all_backends.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check -e ".[tensorflow,jax,torch,viz,test,hub]"
export TF_CPP_MIN_LOG_LEVEL=2
status=0
echo "=== ruff ==="
python -m ruff check keras_structinit tests examples benchmarks || status=1

backends=(tensorflow jax torch)
logs="$(mktemp -d)"
trap 'rm -rf "${logs}"' EXIT

# GNU time reports each process's peak memory (CI keeps each under 3 GB).
timer=()
if /usr/bin/time -f "%M" -o /dev/null true 2>/dev/null; then
  timer=(/usr/bin/time -f "%M" -o)
fi

run_backend() {
  local backend="$1" start=${SECONDS}
  local rc=0
  local measure=()
  [[ ${#timer[@]} -gt 0 ]] && measure=("${timer[@]}" "${logs}/${backend}.rss")
  KERAS_BACKEND="${backend}" "${measure[@]}" python -m pytest -q -p no:cacheprovider "${@:2}" tests \
    > "${logs}/${backend}.log" 2>&1 || rc=$?
  echo "${rc} $((SECONDS - start))" > "${logs}/${backend}.status"
}

if [[ "${STRUCTINIT_TEST_SERIAL:-0}" == "1" ]]; then
  for backend in "${backends[@]}"; do
    run_backend "${backend}" "$@"
  done
else
  run_backend jax "$@" &
  { run_backend tensorflow "$@"; run_backend torch "$@"; } &
  # A line per minute, so that CI logs show the run is alive.
  last=${SECONDS}
  while (( $(find "${logs}" -name '*.status' | wc -l) < ${#backends[@]} )); do
    sleep 5
    if (( SECONDS - last >= 60 )); then
      last=${SECONDS}
      echo "... ${SECONDS}s: finished: $(cd "${logs}" && ls -- *.status 2>/dev/null | sed 's/.status//' | xargs)"
    fi
  done
  wait || true
fi

for backend in "${backends[@]}"; do
  read -r rc seconds < "${logs}/${backend}.status"
  peak=""
  if [[ -s "${logs}/${backend}.rss" ]]; then
    peak=", peak memory $(awk '{printf "%.2f GB", $1 / 1048576}' "${logs}/${backend}.rss")"
  fi
  echo "=== KERAS_BACKEND=${backend}: exit ${rc} after ${seconds}s${peak} ==="
  cat "${logs}/${backend}.log"
  [[ "${rc}" == "0" ]] || status=1
done
exit "${status}"
