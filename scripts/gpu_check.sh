#!/usr/bin/env bash
# The GPU data plane on a machine with a GPU (docs/architecture.md, "GPU"):
# prints the versions it runs with, takes the binaries that
# scripts/gpu_check_prebuild.sh built elsewhere (.build-gpu-prebuilt, carried
# with the tree) when they run here, else builds Chorus without MPI and with
# CUDA ON (only the GPU tests, the device benchmark and collective_benchmark),
# runs the GPU tests (what `ctest -L gpu` runs) plus the host GPU tests, the device data plane
# benchmark, `collective_benchmark --device cuda` at one rank through NCCL
# and through the staged path, and 2 and 4 processes on GPU 0 through the
# staged path (started by hand with torchrun's variables over the TCP
# transport: no MPI, and no chorusrun, which needs Boost). Results go under
# $OUT (or .build-gpu-check/out), at most 8 files.
#
# Nothing is installed there: Catch2 v2 (one header) comes from the system,
# $CATCH2_INCLUDE_DIR, or .build-gpu-deps/catch2/catch.hpp carried with the
# tree:  mkdir -p .build-gpu-deps/catch2 && cp /usr/include/catch2/catch.hpp .build-gpu-deps/catch2/
# .build-gpu-deps and .build-gpu-prebuilt are gitignored, so a device run names them in its carry
# (run(carry=[".build-gpu-deps", ".build-gpu-prebuilt"], command="bash scripts/gpu_check.sh")).
# Worst case: every step's timeout is cut to what is left of one budget,
# $CHORUS_GPU_CHECK_SECONDS (default 530 s), so the whole stays under 9 min.
# Exit status: 0 when every step passed, 77 when the build and host tests
# passed and every device step found no GPU, else 1. The optional LibTorch step (torch in python3)
# runs the prebuilt LibTorch tests, or builds them with what is left of the budget (skipped under 150 s).
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
budget="${CHORUS_GPU_CHECK_SECONDS:-530}"
# step CAP CMD...: runs CMD with a timeout of CAP seconds or what is left of
# the budget, whichever is less; 124 (timed out) when nothing is left.
step() {
  local cap="$1" left=$((budget - (SECONDS - start)))
  shift
  ((cap > left)) && cap=$left
  if ((cap < 5)); then echo "out of time (budget ${budget} s): not run: $*"; return 124; fi
  timeout "$cap" "$@"
}

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
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"  # NCCL's own reason beside ours, should a call fail

# What gpu_check_prebuild.sh built on the development machine, when it loads
# here (its libraries found, its C library new enough); else a build here.
prebuilt="${CHORUS_GPU_PREBUILT:-$root/.build-gpu-prebuilt}"
use_prebuilt=0 catch_args=()
if [[ -x "$prebuilt/core/bin/chorus_gpu_tests" ]]; then
  echo "== prebuilt binaries in $prebuilt"
  cat "$prebuilt/MANIFEST" 2>/dev/null
  if LD_LIBRARY_PATH="$prebuilt/core/lib:${LD_LIBRARY_PATH:-}" "$prebuilt/core/bin/chorus_gpu_tests" --help >/dev/null 2>"$build/prebuilt.err"; then
    use_prebuilt=1
    export LD_LIBRARY_PATH="$prebuilt/core/lib:${LD_LIBRARY_PATH:-}"
    gpu_tests="$prebuilt/core/bin/chorus_gpu_tests" runtime_tests="$prebuilt/core/bin/chorus_gpu_runtime_tests"
    ops_bench="$prebuilt/core/bin/chorus_gpu_ops_benchmark" bench="$prebuilt/core/bin/collective_benchmark"
  else
    echo "they do not run here ($(head -c 300 "$build/prebuilt.err")): building here instead"
  fi
fi

if ((!use_prebuilt)); then
echo "== Catch2"
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
step 90 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCHORUS_WITH_MPI=OFF -DCHORUS_WITH_CUDA=ON \
  -DCHORUS_WITH_TORCH=OFF -DCHORUS_BUILD_LAUNCHER=OFF -DCHORUS_BUILD_EXAMPLES=ON "${catch_args[@]}" \
  ${CHORUS_CUDA_ARCHITECTURES:+-DCHORUS_CUDA_ARCHITECTURES=$CHORUS_CUDA_ARCHITECTURES} || exit 1
step 330 cmake --build "$build" -j "${CHORUS_BUILD_JOBS:-$(nproc)}" \
  --target chorus_gpu_tests chorus_gpu_runtime_tests chorus_gpu_ops_benchmark collective_benchmark || exit 1
gpu_tests="$build/test/gpu/chorus_gpu_tests" runtime_tests="$build/test/gpu/chorus_gpu_runtime_tests"
ops_bench="$build/test/gpu/chorus_gpu_ops_benchmark" bench="$build/benchmarks/collective_benchmark"
fi
ldd "$gpu_tests" | grep -E 'nccl|cuda|mpi|stdc|not found'
ldd "$bench" | grep -E 'chorus|nccl|cuda|mpi|not found'
echo "ready after $((SECONDS - start)) s"

echo "== tests"
step 120 "$gpu_tests" "[host]" --reporter compact > "$build/host_tests.log" 2>&1
host_status=$?
tail -2 "$build/host_tests.log"
# The device tests once (the binary's own skip code 77 when there is no
# GPU; not rerun through CTest), failures only: every passing assertion
# listed would pass 16 MiB, more than a device run brings back.
step 240 "$gpu_tests" --device "[device]" --reporter compact > "$out/device_tests_detail.log" 2>&1
gpu_status=$?
grep -B3 -A12 -m 5 "failed" "$out/device_tests_detail.log" | head -80
tail -3 "$out/device_tests_detail.log"
echo "device tests exit code: $gpu_status (77: no GPU found)"
# CUDA tensors through the whole runtime: two in-process ranks on this GPU
# through the staged path.
step 90 "$runtime_tests" --device "[device]" --reporter compact --success \
  > "$out/runtime_device_tests_detail.log" 2>&1
runtime_status=$?
tail -3 "$out/runtime_device_tests_detail.log"
echo "runtime device tests exit code: $runtime_status (77: no GPU found)"

echo "== benchmark: the device data plane against raw ncclAllReduce"
step 60 "$ops_bench" 20 | tee "$out/gpu_ops_benchmark.txt"
echo "benchmark exit code: ${PIPESTATUS[0]} (77: no GPU found)"

# The public API with device tensors and a real ready stream, against raw
# ncclAllReduce on the same buffers: one process, no launcher variables (the
# TCP transport's one-rank job), through each GPU data plane.
bench_status=()
for ops in nccl staged; do
  echo "== collective_benchmark --device cuda, one rank, CHORUS_GPU_OPERATIONS=$ops"
  CHORUS_GPU_OPERATIONS=$ops step 90 "$bench" --device cuda | tee "$out/collective_benchmark_$ops.txt"
  bench_status+=("${PIPESTATUS[0]}")
  echo "collective_benchmark ($ops) exit code: ${bench_status[-1]} (77: no GPU found, 1: a wrong result)"
done

# Where the fixed cost of one call goes: the 1 MiB sweep through NCCL with a
# timeline (scripts/timeline_phases.py: median spans and gaps per call), and
# the 1-16 MiB sweep with the background thread spinning 1 ms when idle
# (CHORUS_SPIN_TIME_US) beside the default, for comparison.
echo "== timeline of the 1 MiB sweep through NCCL"
CHORUS_GPU_OPERATIONS=nccl CHORUS_TIMELINE="$build/timeline_1mib.json" step 60 "$bench" --device cuda --sections sweep \
  --min-bytes 1048576 --max-bytes 1048576 --iters 200 | grep -E "^ +1048576"
python3 "$root/scripts/timeline_phases.py" "$build/timeline_1mib.json" sweep
for spin in 50 1000; do
  echo "-- sweep 1-16 MiB, CHORUS_SPIN_TIME_US=$spin"
  CHORUS_GPU_OPERATIONS=nccl CHORUS_SPIN_TIME_US=$spin step 60 "$bench" --device cuda --sections sweep \
    --min-bytes 1048576 --max-bytes 16777216 | grep -E "^ +[0-9]+ "
done

# Several processes on GPU 0 through the staged path (NCCL refuses two ranks
# of one communicator on one GPU), started by hand as torchrun would; the
# benchmark's #wrong columns are the check (exit 1 on any wrong element).
for np in 2 4; do
  echo "== $np processes on GPU 0, CHORUS_GPU_OPERATIONS=staged" | tee -a "$out/staged_processes.txt"
  CUDA_VISIBLE_DEVICES=0 CHORUS_GPU_OPERATIONS=staged step 60 bash "$root/test/tcp/run_tcp_job.sh" "$np" \
    "$bench" --device cuda --max-bytes 4194304 --iters 5 --storm-rounds 3 --latency-iters 50 \
    | tee -a "$out/staged_processes.txt"
  bench_status+=("${PIPESTATUS[0]}")
  echo "$np processes exit code: ${bench_status[-1]} (77: no GPU found, 1: a wrong result)"
done

# The LibTorch adapter on CUDA tensors (test/torch/test_cuda_tensors.cc),
# optional: only when Python's torch has its CMake package, in a build dir
# of its own (torch's config must not touch the build above), within what
# is left of the budget.
echo "== LibTorch adapter on CUDA tensors (optional)"
torch_status=skipped
torch_cmake="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)"
torch_lib="$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null || true)"
left=$((budget - (SECONDS - start)))
if [[ -z "$torch_cmake" ]]; then
  echo "skipped: python3 has no torch (no LibTorch CMake package)"
elif ((use_prebuilt)) && [[ -x "$prebuilt/torch/bin/chorus_torch_cuda_tests" ]] &&
     LD_LIBRARY_PATH="$prebuilt/torch/lib:$torch_lib:$LD_LIBRARY_PATH" "$prebuilt/torch/bin/chorus_torch_device_rules" --help >/dev/null 2>&1; then
  # Built here against the same torch version (MANIFEST); torch's own libraries are python3's.
  torch_status=0
  for ops in device_rules nccl staged; do
    exe="$prebuilt/torch/bin/chorus_torch_cuda_tests"
    [[ $ops == device_rules ]] && exe="$prebuilt/torch/bin/chorus_torch_device_rules"
    echo "-- torch $ops"
    CHORUS_GPU_OPERATIONS=${ops/device_rules/auto} LD_LIBRARY_PATH="$prebuilt/torch/lib:$torch_lib:$LD_LIBRARY_PATH" \
      step 120 "$exe" --reporter compact --success >> "$out/torch_cuda_tests.log" 2>&1
    rc=$?
    tail -2 "$out/torch_cuda_tests.log"
    echo "torch $ops exit code: $rc"
    [[ $rc -eq 0 || $torch_status -ne 0 ]] || torch_status=$rc
  done
elif (( left < 150 )); then
  echo "skipped: only $left s left of the budget"
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

# chorus.torch (the Python package, over the C ABI) on CUDA tensors:
# test/python/test_torch_cuda.py at 1 rank (NCCL) and 2 ranks on GPU 0
# (staged), optional: only when python3 has torch with CUDA, numpy and pytest.
echo "== chorus.torch on CUDA tensors (optional)"
py_status=skipped
chorus_lib="$(ldd "$bench" | awk '/libchorus/ { print $3; exit }')"
if [[ -n "$chorus_lib" ]] && python3 -c 'import numpy, pytest, torch; assert torch.cuda.is_available()' 2>/dev/null; then
  py_status=0
  pytest_args=(-m pytest -q -p no:cacheprovider --color=no "$root/test/python/test_torch_cuda.py")
  PYTHONPATH="$root/python" CHORUS_LIBRARY="$chorus_lib" step 90 python3 "${pytest_args[@]}" \
    > "$out/python_cuda_tests.log" 2>&1 || py_status=$?
  PYTHONPATH="$root/python" CHORUS_LIBRARY="$chorus_lib" CUDA_VISIBLE_DEVICES=0 CHORUS_GPU_OPERATIONS=staged \
    step 90 bash "$root/test/tcp/run_tcp_job.sh" 2 python3 "${pytest_args[@]}" >> "$out/python_cuda_tests.log" 2>&1 \
    || { [[ $py_status -ne 0 ]] || py_status=1; }
  grep -E "passed|failed|skipped|error" "$out/python_cuda_tests.log" | tail -3
  echo "chorus.torch CUDA tests exit code: $py_status"
else
  echo "skipped: no libchorus beside the benchmark, or python3 lacks torch with CUDA, numpy or pytest"
fi

device_status=("$gpu_status" "$runtime_status" "${bench_status[@]}")
[[ $torch_status == skipped ]] || device_status+=("$torch_status")  # optional: a skip fails nothing
[[ $py_status == skipped ]] || device_status+=("$py_status")
echo "== done after $((SECONDS - start)) s; host tests: $host_status; device steps (gpu tests, runtime device" \
  "tests, collective_benchmark nccl, staged, np 2, np 4[, LibTorch]): ${device_status[*]}; LibTorch: $torch_status"
[[ $host_status -eq 0 ]] || exit 1
no_gpu=1 failed=0
for s in "${device_status[@]}"; do
  [[ $s -eq 77 ]] || no_gpu=0
  [[ $s -eq 0 ]] || failed=1
done
((no_gpu)) && { echo "no GPU: the device steps were skipped (exit 77)"; exit 77; }
exit "$failed"
