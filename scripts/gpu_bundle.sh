#!/usr/bin/env bash
# Builds what `scripts/gpu_quick.sh` needs on a lent GPU whose image has JAX, PyTorch, h5py, rich,
# absl-py, ml-dtypes, numpy, packaging, pillow and matplotlib but no Keras (and no network):
#   .whl/   the wheels of Keras and of its dependencies the image lacks (exact versions, --no-deps),
#           for CPython 3.12 on manylinux x86-64 (the image's python3);
#   .data/  the CIFAR-10 training zip (../shared does not travel with the working tree).
# Both folders are ignored by git (.gitignore), so the device tool sends them only when its call
# names them in `carry` (CONTRIBUTING.md, "Benchmarks on a GPU"). The package itself travels as
# the working tree and is found through PYTHONPATH there.
# Usage: bash scripts/gpu_bundle.sh [--python-version X.Y] [--wheels DIR] [--no-data]
#   --python-version: the CPython the wheels are for (default 3.12, the image's); the CI's smoke
#                     lane builds the same list for its own Python into another folder.
# Prints the bundle's size with the tracked files' (the device tool's limit: 64 MiB in all).
set -euo pipefail
cd "$(dirname "$0")/.."

# Keras and the dependencies of it (and of the package) that the image lacks. Keep one version of
# each: two stop the whole install. Keras' other needs (absl-py, h5py, ml-dtypes, numpy,
# packaging, rich) and optree's (typing-extensions) are in the image.
WHEELS=(keras==3.15.1 namex==0.1.0 optree==0.20.0)
PY_VERSION=3.12
DEST=.whl
DATA=1
while (( $# )); do
  case "$1" in
    --python-version) PY_VERSION="$2"; shift 2 ;;
    --wheels) DEST="$2"; shift 2 ;;
    --no-data) DATA=0; shift ;;
    *) echo "gpu_bundle.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

mkdir -p "${DEST}"
rm -f "${DEST}"/*.whl
# pip matches each manylinux_2_N tag exactly: name the ones the wheels above are built for.
platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
           manylinux1_x86_64; do
  platforms+=(--platform "${tag}")
done
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version "${PY_VERSION}" --implementation cp "${platforms[@]}" -d "${DEST}" "${WHEELS[@]}"
count=$(find "${DEST}" -maxdepth 1 -type f -name '*.whl' | wc -l)
if (( count != ${#WHEELS[@]} )); then
  echo "gpu_bundle.sh: expected ${#WHEELS[@]} wheels in ${DEST}, found ${count}" >&2
  exit 1
fi

if (( DATA )); then
  source_zip=../shared/datasets/cifar10-train-jpeg.zip
  if [[ -f "${source_zip}" ]]; then
    mkdir -p .data
    cp -u "${source_zip}" .data/cifar10-train-jpeg.zip
  else
    echo "gpu_bundle.sh: no ${source_zip}: the training entries will have no data" >&2
  fi
fi

tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1)
bundle=$(du -cb "${DEST}" $( ((DATA)) && [[ -d .data ]] && echo .data) | tail -n 1 | cut -f1)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "wheels in ${DEST}: $(cd "${DEST}" && ls -- *.whl | xargs)"
echo "bundle $(mib "${bundle}") + tracked files $(mib "${tracked}") = $(mib $((bundle + tracked))) (limit 64 MiB)"
if (( bundle + tracked > 64 * 1048576 )); then
  echo "gpu_bundle.sh: over the device tool's 64 MiB" >&2
  exit 1
fi
