#!/usr/bin/env bash
# Builds here what scripts/gpu_check.sh runs on the machine with a GPU, so
# that machine's short lease is spent on running, not compiling. Writes
# .build-gpu-prebuilt/ (gitignored; a device run names it in its carry):
#   core/bin, core/lib   the GPU tests, the device benchmark, collective_benchmark
#                        and libchorus (no MPI, CUDA ON, torch OFF)
#   torch/bin, torch/lib the LibTorch adapter's CUDA tests and libchorus_torch,
#                        only with --torch: built against that LibTorch, which
#                        must be the GPU machine's torch version (its libraries
#                        are not carried: they come from python3's torch there)
#   MANIFEST             the commit and the versions it was built with
# gpu_check.sh uses these when they load there, and builds there otherwise.
#   scripts/gpu_check_prebuild.sh [--torch TORCH_PACKAGE_DIR]
# Build folders: $CHORUS_GPU_PREBUILD_CORE, $CHORUS_GPU_PREBUILD_TORCH (default
# .build-gpu-prebuild-core and -torch in the checkout).
# TORCH_PACKAGE_DIR is a `torch` Python package folder (holding lib/ and
# share/cmake/), e.g. one unpacked from the torch wheel the GPU machine has:
#   pip download --no-deps torch==2.11.0 && unzip torch-*.whl 'torch/*' -d /opt/torch211
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
torch_dir=""
while (($#)); do
  case "$1" in
    --torch) torch_dir="${2:?--torch needs a torch package folder}"; shift 2 ;;
    *) echo "unknown argument: $1 (usage: $0 [--torch TORCH_PACKAGE_DIR])" >&2; exit 2 ;;
  esac
done
out="$root/.build-gpu-prebuilt"
jobs="${CHORUS_BUILD_JOBS:-2}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
common=(-DCMAKE_BUILD_TYPE=Release -DCHORUS_WITH_MPI=OFF -DCHORUS_WITH_CUDA=ON -DCHORUS_BUILD_LAUNCHER=OFF "${launcher[@]}")

rm -rf "$out"
mkdir -p "$out/core/bin" "$out/core/lib"
core="${CHORUS_GPU_PREBUILD_CORE:-$root/.build-gpu-prebuild-core}"
cmake -S "$root" -B "$core" "${common[@]}" -DCHORUS_WITH_TORCH=OFF -DCHORUS_BUILD_EXAMPLES=ON >/dev/null
cmake --build "$core" -j "$jobs" --target chorus_gpu_tests chorus_gpu_runtime_tests chorus_gpu_ops_benchmark collective_benchmark
cp "$core"/test/gpu/{chorus_gpu_tests,chorus_gpu_runtime_tests,chorus_gpu_ops_benchmark} "$core/benchmarks/collective_benchmark" "$out/core/bin/"
cp -L "$core/core/libchorus.so.0" "$out/core/lib/"  # the soname, as a file: links may not travel

if [[ -n "$torch_dir" ]]; then
  [[ -f "$torch_dir/share/cmake/Torch/TorchConfig.cmake" ]] || { echo "no TorchConfig.cmake under $torch_dir/share/cmake" >&2; exit 2; }
  mkdir -p "$out/torch/bin" "$out/torch/lib"
  tb="${CHORUS_GPU_PREBUILD_TORCH:-$root/.build-gpu-prebuild-torch}"
  # TorchConfig's find_library searches the system first: name its own libtorch and libc10,
  # or a distribution's LibTorch in /usr/lib would be linked instead. The wheel's CUDA
  # libraries (cuSPARSELt, NVSHMEM, ...) are not here: the GPU machine resolves them.
  cmake -S "$root" -B "$tb" "${common[@]}" -DCHORUS_WITH_TORCH=ON -DCHORUS_BUILD_EXAMPLES=OFF \
    -DCMAKE_PREFIX_PATH="$torch_dir/share/cmake" -DTORCH_LIBRARY="$torch_dir/lib/libtorch.so" \
    -Dc10_LIBRARY="$torch_dir/lib/libc10.so" -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined >/dev/null
  cmake --build "$tb" -j "$jobs" --target chorus_torch_cuda_tests chorus_torch_device_rules
  cp "$tb"/test/torch/{chorus_torch_cuda_tests,chorus_torch_device_rules} "$out/torch/bin/"
  cp -L "$tb/core/libchorus.so.0" "$tb/frameworks/torch/libchorus_torch.so.0" "$out/torch/lib/"
fi

{
  echo "commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo ' (with uncommitted changes)')"
  echo "built $(date -u '+%F %T') UTC on $(uname -m), $(ldd --version | head -1)"
  "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" --version | tail -1
  if [[ -n "$torch_dir" ]]; then grep -m1 "^__version__" "$torch_dir/version.py"; fi
} > "$out/MANIFEST"
cat "$out/MANIFEST"
du -sh "$out"
