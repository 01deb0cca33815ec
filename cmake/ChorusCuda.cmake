# CHORUS_WITH_CUDA: AUTO (default) builds the GPU toolkit (core/src/device/cuda,
# the object library chorus_gpu, part of libchorus) when a CUDA 13 toolkit and
# NCCL are found, ON fails here when either is missing, OFF builds none of it.
# Sets CHORUS_HAVE_CUDA (ON/OFF) for the rest of the build.
set(CHORUS_WITH_CUDA AUTO CACHE STRING "Build the CUDA/NCCL GPU toolkit: AUTO, ON or OFF")
set_property(CACHE CHORUS_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
# nvcc 13 compiles for compute_75 and newer only. "90" is sm_90 machine code
# (H100/H200) plus compute_90 PTX, which the driver JIT-compiles for newer
# GPUs (forward compatibility); add e.g. "80-real" for A100s. Set before
# enable_language(CUDA): CMake 3.25 predates CUDA 13 and its own default
# (compute_52) is refused by nvcc 13.
set(CHORUS_CUDA_ARCHITECTURES "90" CACHE STRING "CMAKE_CUDA_ARCHITECTURES for the GPU toolkit")
set(NCCL_ROOT "$ENV{NCCL_ROOT}" CACHE PATH "Where NCCL is installed (include/nccl.h, lib/libnccl.so)")
set(CHORUS_CUDA_MIN_VERSION 13.0)

set(CHORUS_HAVE_CUDA OFF)
set(_chorus_cuda_missing "")

function(_chorus_cuda_fail why)
  if(CHORUS_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "CHORUS_WITH_CUDA=ON, but ${why}")
  endif()
  message(STATUS "Chorus: GPU toolkit OFF (${why})")
endfunction()

macro(_chorus_find_cuda)
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${CHORUS_CUDA_ARCHITECTURES})
  endif()
  check_language(CUDA)
  find_package(CUDAToolkit ${CHORUS_CUDA_MIN_VERSION} QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT}
            PATH_SUFFIXES include)
  # Linked dynamically: libnccl.so.2 is ~200 MB, and a user may swap in a newer one.
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT}
               PATH_SUFFIXES lib lib64)
  if(NOT CMAKE_CUDA_COMPILER)
    _chorus_cuda_fail("no CUDA compiler (nvcc) was found: put it on PATH or set CMAKE_CUDA_COMPILER")
  elseif(NOT CUDAToolkit_FOUND)
    _chorus_cuda_fail("no CUDA toolkit ${CHORUS_CUDA_MIN_VERSION} or newer was found (set CUDAToolkit_ROOT)")
  elseif(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
    _chorus_cuda_fail("NCCL was not found (nccl.h: ${NCCL_INCLUDE_DIR}, libnccl: ${NCCL_LIBRARY}); set NCCL_ROOT")
  else()
    enable_language(CUDA)
    set(CHORUS_HAVE_CUDA ON)
    if(CHORUS_CCACHE AND NOT DEFINED CMAKE_CUDA_COMPILER_LAUNCHER)
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${CHORUS_CCACHE})
    endif()
    file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_version_lines REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
           NCCL_VERSION "${_nccl_version_lines}")
    message(STATUS "Chorus: GPU toolkit ON (CUDA ${CUDAToolkit_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}, "
                   "NCCL ${NCCL_VERSION}: ${NCCL_LIBRARY})")
  endif()
endmacro()

if(CHORUS_SANITIZE AND NOT CHORUS_WITH_CUDA STREQUAL "OFF")
  # cmake/ChorusSanitizers.cmake puts -fsanitize on every target, which nvcc
  # refuses, and CUDA's runtime is not instrumented (LeakSanitizer reports its
  # allocations): sanitizer builds leave the GPU toolkit out.
  _chorus_cuda_fail("sanitizer builds (CHORUS_SANITIZE=${CHORUS_SANITIZE}) do not build it")
elseif(NOT CHORUS_WITH_CUDA STREQUAL "OFF")
  _chorus_find_cuda()
else()
  message(STATUS "Chorus: GPU toolkit OFF (CHORUS_WITH_CUDA=OFF)")
endif()
