#!/usr/bin/env bash
# The cuda target checked and measured on a CUDA GPU (docs/cuda.md), in two steps so that the GPU
# machine needs neither Halide nor kalg's search (the machine lent here has python3 with numpy,
# scipy, CuPy and PyTorch, and nothing can be installed there but carried wheels; Halide's
# wheel alone is over the 64 MiB a call may carry):
#
#   bash scripts/gpu_check.sh prepare   # here, with kalg's .venv, no GPU: searches and links
#                                       # every example (pipelines with their reference checks)
#                                       # and bench row into gpu-bundle/ (minutes)
#   bash scripts/gpu_check.sh run       # on the GPU machine: checks every example against
#                                       # scipy.ndimage there (pipelines against the numpy
#                                       # reference), measures the rows against CuPy and PyTorch
#                                       # conv2d (cuDNN) and the pipelines against CuPy and
#                                       # PyTorch chains, writes docs/cuda-bench.md
#   bash scripts/gpu_check.sh all       # both, on one machine with kalg installed and a GPU
#
# With the device tool: prepare here, then run(command="bash scripts/gpu_check.sh run; cp
# docs/cuda-bench.md $OUT/", carry=["gpu-bundle"], timeout_s=420). Without CuPy or PyTorch
# their columns read n/a (the header says which is missing); without a CUDA device `run` says
# so and exits 2. Exit 1: an example differs from scipy on the GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bundle="${KALG_GPU_BUNDLE:-gpu-bundle}"
doc="${KALG_GPU_DOC:-docs/cuda-bench.md}"
venv_python="${KALG_VENV:-$root/.venv}/bin/python"

prepare() {
  if ! "$venv_python" -c "import halide, egglog" 2>/dev/null; then
    echo "gpu_check: prepare needs kalg's .venv (bash scripts/dev.sh demo) with Halide" >&2
    exit 2
  fi
  "$venv_python" scripts/gpu_check.py prepare "$bundle" "$@"
}

run() {
  if [ ! -f "$bundle/manifest.json" ]; then
    echo "gpu_check: no $bundle/manifest.json: run 'bash scripts/gpu_check.sh prepare' first" >&2
    exit 2
  fi
  local py="${KALG_GPU_PYTHON:-python3}"
  PYTHONUNBUFFERED=1 "$py" scripts/gpu_check.py run "$bundle" --doc "$doc" "$@"
}

verb="${1:-all}"; shift || true
case "$verb" in
  prepare) prepare "$@" ;;
  run) run "$@" ;;
  all) prepare; KALG_GPU_PYTHON="$venv_python" run "$@" ;;
  *) echo "usage: bash scripts/gpu_check.sh prepare|run|all" >&2; exit 2 ;;
esac
