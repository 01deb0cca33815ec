#!/usr/bin/env bash
# The GPU data plane on a machine with a GPU (docs/architecture.md, "GPU"):
# prints the versions it runs with, builds Chorus without MPI and with CUDA
# ON (only the GPU tests and the device benchmark), runs `ctest -L gpu` plus
# the host GPU tests, then the benchmark, and writes everything under $OUT
# (or .build-gpu-check/out). Meant to finish within 10 minutes on 16 cores.
#
# Nothing is installed there: Catch2 v2 (one header) comes from the system,
# $CATCH2_INCLUDE_DIR, or .build-gpu-deps/catch2/catch.hpp carried with the
# tree:  mkdir -p .build-gpu-deps/catch2 && cp /usr/include/catch2/catch.hpp .build-gpu-deps/catch2/
# .build-gpu-deps is gitignored, so a device run must name it in its carry
# (run(carry=[".build-gpu-deps"], command="bash scripts/gpu_check.sh")).
# Worst case: build + gpu_host (120 s) + gpu_device (300 s) + benchmark (120 s) < 9 min; the
# optional LibTorch step (torch in python3) gets only what is left of 540 s, else is skipped.
# NCCL: $NCCL_ROOT, the CUDA prefix, the system, or the nvidia-nccl-cu13 wheel.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_GPU_BUILD_DIR:-$root/.build-gpu-check}"
out="${OUT:-$build/out}"
mkdir -p "$out" "$build"
exec {console}>&1 {console_err}>&2
exec > >(tee "$out/gpu_check.log") 2>&1
tee_pid=$!
# At exit: close our ends of the pipe and wait for tee, so the log in $OUT is complete.
finish_log() { exec >&"$console" 2>&"$console_err"; wait "$tee_pid" 2>/dev/null; }
trap finish_log EXIT
start=$SECONDS

echo "== versions"
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 || echo "no nvidia-smi"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
nvcc --version | tail -2
cmake --version | head -1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null || echo "torch: none"
if [[ -z "${NCCL_ROOT:-}" ]]; then
  NCCL_ROOT="$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)"
  export NCCL_ROOT
fi
echo "NCCL_ROOT=${NCCL_ROOT:-<unset: CUDA prefix and system paths>}"
[[ -n "${NCCL_ROOT:-}" ]] && export LD_LIBRARY_PATH="$NCCL_ROOT/lib:${LD_LIBRARY_PATH:-}"

echo "== Catch2"
catch_args=()
if [[ ! -f /usr/lib/cmake/Catch2/Catch2Config.cmake ]]; then
  catch_dir="${CATCH2_INCLUDE_DIR:-$root/.build-gpu-deps}"
  if [[ ! -f "$catch_dir/catch2/catch.hpp" ]]; then
    echo "Catch2 v2 not found: put catch.hpp in $catch_dir/catch2/ (see the top of this script)"
    exit 1
  fi
  # A minimal package config over the single header, so find_package(Catch2 2) finds it.
  mkdir -p "$build/catch2-config"
  cat > "$build/catch2-config/Catch2Config.cmake" <<EOF
add_library(Catch2::Catch2 INTERFACE IMPORTED)
set_target_properties(Catch2::Catch2 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$catch_dir")
EOF
  printf 'set(PACKAGE_VERSION 2.13.10)\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n' > "$build/catch2-config/Catch2ConfigVersion.cmake"
  catch_args=(-DCatch2_DIR="$build/catch2-config")
fi

echo "== configure and build (no MPI, CUDA ON, torch OFF)"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCHORUS_WITH_MPI=OFF -DCHORUS_WITH_CUDA=ON \
  -DCHORUS_WITH_TORCH=OFF -DCHORUS_BUILD_LAUNCHER=OFF -DCHORUS_BUILD_EXAMPLES=OFF "${catch_args[@]}" \
  ${CHORUS_CUDA_ARCHITECTURES:+-DCHORUS_CUDA_ARCHITECTURES=$CHORUS_CUDA_ARCHITECTURES} || exit 1
cmake --build "$build" -j "$(nproc)" --target chorus_gpu_tests chorus_gpu_runtime_tests chorus_gpu_ops_benchmark || exit 1
ldd "$build/test/gpu/chorus_gpu_tests" | grep -E 'nccl|cuda|mpi|stdc'
echo "built after $((SECONDS - start)) s"

echo "== tests"
(cd "$build" && ctest --output-on-failure -j1 -R '^gpu_host$')
host_status=$?
# The device tests once, with every assertion listed for the record (the
# binary's own skip code 77 when there is no GPU); not rerun through CTest.
timeout 300 "$build/test/gpu/chorus_gpu_tests" --device "[device]" --reporter compact --success \
  > "$out/device_tests_detail.log" 2>&1
gpu_status=$?
tail -3 "$out/device_tests_detail.log"
echo "device tests exit code: $gpu_status (77: no GPU found)"
# CUDA tensors through the whole runtime: two in-process ranks on this GPU
# through the staged path.
timeout 120 "$build/test/gpu/chorus_gpu_runtime_tests" --device "[device]" --reporter compact --success \
  > "$out/runtime_device_tests_detail.log" 2>&1
runtime_status=$?
tail -3 "$out/runtime_device_tests_detail.log"
echo "runtime device tests exit code: $runtime_status (77: no GPU found)"

echo "== benchmark: the device data plane against raw ncclAllReduce"
timeout 120 "$build/test/gpu/chorus_gpu_ops_benchmark" 20 | tee "$out/gpu_ops_benchmark.txt"
echo "benchmark exit code: ${PIPESTATUS[0]} (77: no GPU found)"
# The LibTorch adapter on CUDA tensors (test/torch/test_cuda_tensors.cc),
# optional: only when Python's torch has its CMake package, in a build dir
# of its own (torch's config must not touch the build above), within what
# is left of the 9 minutes.
echo "== LibTorch adapter on CUDA tensors (optional)"
torch_status=0
torch_cmake="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)"
left=$((540 - (SECONDS - start)))
if [[ -z "$torch_cmake" ]]; then
  echo "skipped: python3 has no torch (no LibTorch CMake package)"
elif (( left < 150 )); then
  echo "skipped: only $left s left of the 9 minutes"
else
  tbuild="$build-torch"
  torch_args=("${catch_args[@]}")
  [[ -n "${CHORUS_CUDA_ARCHITECTURES:-}" ]] && torch_args+=(-DCHORUS_CUDA_ARCHITECTURES="$CHORUS_CUDA_ARCHITECTURES")
  timeout "$left" bash -c '
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DCHORUS_WITH_MPI=OFF -DCHORUS_WITH_CUDA=ON -DCHORUS_WITH_TORCH=ON \
      -DCMAKE_PREFIX_PATH="$3" -DCHORUS_BUILD_LAUNCHER=OFF -DCHORUS_BUILD_EXAMPLES=OFF "${@:4}" >"$2.configure.log" 2>&1 \
      || { tail -20 "$2.configure.log"; exit 1; }
    cmake --build "$2" -j "$(nproc)" --target chorus_torch_cuda_tests chorus_torch_device_rules >"$2.build.log" 2>&1 \
      || { grep -m 20 -E "error|Error" "$2.build.log"; exit 1; }
    cd "$2" && ctest --output-on-failure -j1 -R "^torch_(cuda_nccl|cuda_staged|device_rules)$"
  ' _ "$root" "$tbuild" "$torch_cmake" "${torch_args[@]}" 2>&1 | tee "$out/torch_cuda_tests.log"
  torch_status=${PIPESTATUS[0]}
  echo "LibTorch CUDA tests exit code: $torch_status (124: out of time)"
fi
echo "== done after $((SECONDS - start)) s; host tests: $host_status, gpu tests: $gpu_status, runtime device tests: $runtime_status, torch: $torch_status"
[[ $host_status -eq 0 && $gpu_status -eq 0 && $runtime_status -eq 0 && $torch_status -eq 0 ]]
