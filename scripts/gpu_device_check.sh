#!/usr/bin/env bash
# Builds the GPU toolkit and its tests alone (test/gpu/standalone: no MPI or
# Boost needed) and runs them, on a machine with a GPU. Prints the versions it
# ran with; writes logs under $OUT (or .build-gpu-check/out). Takes ~1 minute.
#
# Catch2 v2 is one header; where it is not installed, bring it along:
#   mkdir -p .build-gpu-deps/catch2 && cp /usr/include/catch2/catch.hpp .build-gpu-deps/catch2/
# NCCL: $NCCL_ROOT, the CUDA prefix, the system, or the nvidia-nccl-cu13 wheel (found below).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_GPU_BUILD_DIR:-$root/.build-gpu-check}"
out="${OUT:-$build/out}"
mkdir -p "$out"
exec > >(tee "$out/gpu_check.log") 2>&1

echo "== versions"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "no nvidia-smi"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
nvcc --version | tail -2
cmake --version | head -1
if [[ -z "${NCCL_ROOT:-}" ]]; then
  NCCL_ROOT="$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)"
  export NCCL_ROOT
fi
echo "NCCL_ROOT=${NCCL_ROOT:-<unset: CUDA prefix and system paths>}"

echo "== configure and build"
catch_dir="${CATCH2_INCLUDE_DIR:-$root/.build-gpu-deps}"
cmake -S "$root/test/gpu/standalone" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCATCH2_INCLUDE_DIR="$catch_dir" \
  ${CHORUS_CUDA_ARCHITECTURES:+-DCHORUS_CUDA_ARCHITECTURES=$CHORUS_CUDA_ARCHITECTURES} || exit 1
cmake --build "$build" -j "$(nproc)" || exit 1
ldd "$build/gpu_tests/chorus_gpu_tests" | grep -E 'nccl|cuda|stdc'

echo "== tests"
(cd "$build" && ctest --output-on-failure -j1)
status=$?
# The device tests again with every assertion's section listed, for the record.
"$build/gpu_tests/chorus_gpu_tests" --device --reporter compact --success > "$out/device_tests_detail.log" 2>&1
echo "device tests exit code: $? (77: no GPU found)"
exit $status
