#!/usr/bin/env bash
# GPU checks of skfm, run from anywhere on a machine with a CUDA device:
#   bash benchmarks/gpu_check.sh
# 1. shows the GPU (nvidia-smi), 2. runs the CUDA tests (tests marked `cuda`), 3. times
# TabSwiftClassifier on CPU and CUDA and writes runs/benchmarks/gpu_throughput.md.
# Uses `python` (an environment with a CUDA build of torch), or $PYTHON if set; extra arguments
# go to gpu_throughput.py (`--out docs/benchmarks` to ship the report). Without a GPU the tests skip and the benchmark says so; both exit 0.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's skfm, installed or not
py="${PYTHON:-python}"
"$py" -c 'import sys, torch; print(f"python {sys.version.split()[0]}, torch {torch.__version__}, cuda available: {torch.cuda.is_available()}")'

echo "== nvidia-smi"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi
else
    echo "nvidia-smi not found"
fi

echo "== CUDA tests"
"$py" -m pytest -m cuda -q -rs tests/test_cuda.py tests/test_cuda_timeseries.py tests/_backend/test_backend.py

echo "== throughput"
"$py" benchmarks/gpu_throughput.py "$@"
