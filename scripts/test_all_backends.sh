#!/usr/bin/env bash
# Installs keras-structinit with the TensorFlow, JAX and PyTorch backends, KerasHub
# and the test extras, runs ruff, then runs the test suite once per backend.
# Usage: bash scripts/test_all_backends.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check -e ".[tensorflow,jax,torch,viz,test,hub]"
export TF_CPP_MIN_LOG_LEVEL=2
status=0
echo "=== ruff ==="
python -m ruff check keras_structinit tests examples benchmarks || status=1
for backend in tensorflow jax torch; do
  echo "=== KERAS_BACKEND=${backend} ==="
  KERAS_BACKEND="${backend}" python -m pytest -q -p no:cacheprovider "$@" tests || status=1
done
exit "${status}"
