"""Loads libchorus and declares the C ABI's prototypes (ctypes).

Every function of the package reaches Chorus through the versioned C ABI in
core/include/chorus/c_api.h and nothing else, so one install serves every
torch version. ctypes releases the GIL around each foreign call, so a rank
waiting in chorus_wait lets the other Python threads run.
"""
import ctypes
import importlib.util
import os
import pathlib
import sysconfig

# The C ABI version this package was written against; the library loaded
# must be at least as new (c_api.h: chorus_abi_version).
ABI_VERSION = 18  # 16: chorus_on_complete; 17: chorus_rendezvous_*; 18: chorus_rendezvous_retire, _left

_c_int64_p = ctypes.POINTER(ctypes.c_int64)

# void* (*chorus_alloc_fn)(void* user_data, int64_t bytes, const int64_t* shape, int ndim)
ALLOC_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, _c_int64_p, ctypes.c_int)

_int, _i64, _dbl, _ptr, _str = ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_void_p, ctypes.c_char_p
_ptrs = ctypes.POINTER(ctypes.c_void_p)
_strs = ctypes.POINTER(ctypes.c_char_p)
_i64s = ctypes.POINTER(_c_int64_p)
_ints = ctypes.POINTER(ctypes.c_int)

# name: (restype, argtypes)
_PROTOTYPES = {
    "chorus_init": (_int, []),
    "chorus_shutdown": (_int, []),
    "chorus_is_initialized": (_int, []),
    "chorus_is_running": (_int, []),
    "chorus_rank": (_int, []),
    "chorus_size": (_int, []),
    "chorus_local_rank": (_int, []),
    "chorus_local_size": (_int, []),
    "chorus_cross_rank": (_int, []),
    "chorus_cross_size": (_int, []),
    "chorus_is_homogeneous": (_int, []),
    "chorus_mpi_built": (_int, []),
    "chorus_cuda_built": (_int, []),
    "chorus_nccl_built": (_int, []),
    "chorus_mpi_enabled": (_int, []),
    "chorus_tcp_enabled": (_int, []),
    "chorus_allreduce_async_in_set": (_int, [_int, _str, _ptr, _ptr, _i64, _int, _int, _dbl, _dbl, _c_int64_p]),
    "chorus_broadcast_async_in_set": (_int, [_int, _str, _ptr, _i64, _int, _int, _c_int64_p]),
    "chorus_allgather_async_in_set": (_int, [_int, _str, _ptr, _c_int64_p, _int, _int, ALLOC_FN, _ptr, _c_int64_p]),
    "chorus_reducescatter_async_in_set": (
        _int, [_int, _str, _ptr, _c_int64_p, _int, _int, _int, _dbl, _dbl, ALLOC_FN, _ptr, _c_int64_p]),
    "chorus_alltoall_async_in_set": (
        _int, [_int, _str, _ptr, _c_int64_p, _int, _int, _c_int64_p, _int, ALLOC_FN, _ptr, _c_int64_p]),
    "chorus_allreduce_async_on_device": (
        _int, [_int, _str, _ptr, _ptr, _i64, _int, _int, _dbl, _dbl, _int, _ptr, _c_int64_p]),
    "chorus_broadcast_async_on_device": (_int, [_int, _str, _ptr, _i64, _int, _int, _int, _ptr, _c_int64_p]),
    "chorus_allgather_async_on_device": (
        _int, [_int, _str, _ptr, _c_int64_p, _int, _int, _int, _ptr, ALLOC_FN, _ptr, _c_int64_p]),
    "chorus_reducescatter_async_on_device": (
        _int, [_int, _str, _ptr, _c_int64_p, _int, _int, _int, _dbl, _dbl, _int, _ptr, ALLOC_FN, _ptr, _c_int64_p]),
    "chorus_alltoall_async_on_device": (
        _int, [_int, _str, _ptr, _c_int64_p, _int, _int, _c_int64_p, _int, _int, _ptr, ALLOC_FN, _ptr, _c_int64_p]),
    "chorus_allreduce_shaped_async": (
        _int, [_int, _str, _ptr, _ptr, _c_int64_p, _int, _int, _int, _dbl, _dbl, _int, _ptr, _c_int64_p]),
    "chorus_grouped_allreduce_async": (
        _int, [_int, _int, _strs, _ptrs, _ptrs, _i64s, _ints, _ints, _int, _dbl, _dbl, _c_int64_p]),
    "chorus_grouped_allgather_async": (
        _int, [_int, _int, _strs, _ptrs, _i64s, _ints, _ints, ALLOC_FN, _ptrs, _c_int64_p]),
    "chorus_grouped_reducescatter_async": (
        _int, [_int, _int, _strs, _ptrs, _i64s, _ints, _ints, _int, _dbl, _dbl, ALLOC_FN, _ptrs, _c_int64_p]),
    "chorus_refuse_async": (_int, [_int, _int, _str, _str, _c_int64_p]),
    "chorus_refuse_group_async": (_int, [_int, _int, _int, _strs, _str, _c_int64_p]),
    "chorus_received_splits": (_int, [_i64, _c_int64_p, _int]),
    "chorus_barrier_in_set": (_int, [_int]),
    "chorus_join": (_int, []),
    "chorus_add_process_set": (_int, [_ints, _int]),
    "chorus_remove_process_set": (_int, [_int]),
    "chorus_process_set_rank": (_int, [_int]),
    "chorus_process_set_size": (_int, [_int]),
    "chorus_allocate_shared_host": (_int, [_i64, _ptrs]),
    "chorus_free_shared_host": (_int, [_ptr]),
    "chorus_in_shared_host": (_int, [_ptr, _i64]),
    "chorus_start_timeline": (_int, [_str, _int]),
    "chorus_stop_timeline": (_int, []),
    "chorus_poll": (_int, [_i64]),
    "chorus_wait": (_int, [_i64]),
    "chorus_wait_timeout": (_int, [_i64, _dbl]),
    "chorus_wait_completed": (_int, [_i64, _dbl]),
    "chorus_last_error": (_str, []),
    "chorus_abi_version": (_int, []),
    "chorus_elastic_enabled": (_int, []),
    "chorus_elastic_host_updates": (_int, [_c_int64_p, _ints]),
    "chorus_rendezvous_start": (_int, [_str, _str, _str, _int, _int, _dbl, _dbl, _str, _str, _ptrs]),
    "chorus_rendezvous_port": (_int, [_ptr]),
    "chorus_rendezvous_expect": (_int, [_ptr, _str]),
    "chorus_rendezvous_gone": (_int, [_ptr, _str]),
    "chorus_rendezvous_hosts_changed": (_int, [_ptr, _int]),
    "chorus_rendezvous_run_for": (_int, [_ptr, _dbl, _c_int64_p, _ints]),
    "chorus_rendezvous_late": (_str, [_ptr, _int]),
    "chorus_rendezvous_retire": (_int, [_ptr, _str]),
    "chorus_rendezvous_left_count": (_int, [_ptr]),
    "chorus_rendezvous_left": (_str, [_ptr, _int]),
    "chorus_rendezvous_stop": (None, [_ptr]),
}


def _candidates():
    """Where libchorus may be, in the order it is looked for."""
    explicit = os.environ.get("CHORUS_LIBRARY")
    if explicit:
        return [pathlib.Path(explicit)]
    here = pathlib.Path(__file__).resolve().parent
    found = [here / "lib" / "libchorus.so.0"]  # installed by pip: inside the package
    # A source checkout: python/chorus -> the repository's build folder.
    build = os.environ.get("CHORUS_BUILD_DIR", str(here.parent.parent / "build"))
    found.append(pathlib.Path(build) / "core" / "libchorus.so")
    return found


def adapter_library(file_name, variable, build_subdir, who):
    """Where a framework adapter's library is (libchorus_tensorflow.so,
    libchorus_jax.so): $`variable`, else inside the package (pip), else in
    a source checkout's build folder; ImportError naming where it looked."""
    explicit = os.environ.get(variable)
    here = pathlib.Path(__file__).resolve().parent
    build = pathlib.Path(os.environ.get("CHORUS_BUILD_DIR", str(here.parent.parent / "build")))
    candidates = [pathlib.Path(explicit)] if explicit else [here / "lib" / file_name,
                                                           build / build_subdir / file_name]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ImportError(f"{who}: {file_name} not found (looked at " + ", ".join(str(c) for c in candidates) +
                      f"); install the package with pip, or set {variable}")


def _preload_wheel_nccl():
    """A torch from PyPI brings its own NCCL (the nvidia-nccl-cu* wheel), newer
    than the one libchorus was linked with. Whichever libnccl.so.2 loads first
    serves the whole process, and torch fails to import on an older one
    (undefined symbol ncclCommResume, seen with torch 2.15): load the wheel's
    first, so torch and Chorus share it (NCCL keeps its ABI within a major
    version)."""
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except (ImportError, ValueError):
        return
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = os.path.join(folder, "lib", "libnccl.so.2")
        if os.path.exists(candidate):
            ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
            return


def _load():
    tried = []
    _preload_wheel_nccl()
    for path in _candidates():
        if path.is_file():
            lib = ctypes.CDLL(str(path))
            break
        tried.append(str(path))
    else:
        raise ImportError("chorus: libchorus.so not found (looked at " + ", ".join(tried) +
                          "); install the package with pip, or set CHORUS_LIBRARY to the library's path")
    version = lib.chorus_abi_version()
    if version < ABI_VERSION:
        raise ImportError(f"chorus: {path} has C ABI version {version}; this package needs {ABI_VERSION} or later "
                          "(a library from an older build is first on the search path: CHORUS_LIBRARY)")
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib, path


def _load_fast():
    """chorus._fast (python/chorus/_fast.c), bound to `lib`'s functions, or
    None: then every call goes through ctypes. Installed by pip beside this
    file; in a source checkout, built into <build>/python/chorus."""
    module = None
    try:
        from . import _fast as module
    except ImportError:
        build = pathlib.Path(os.environ.get("CHORUS_BUILD_DIR", pathlib.Path(__file__).resolve().parent.parent.parent /
                                            "build"))
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        candidate = build / "python" / "chorus" / ("_fast" + suffix)
        if candidate.is_file():
            spec = importlib.util.spec_from_file_location("chorus._fast", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
    if module is not None:
        address = lambda fn: ctypes.cast(fn, ctypes.c_void_p).value  # noqa: E731
        module.bind(address(lib.chorus_allreduce_shaped_async), address(lib.chorus_wait_timeout))
    return module


lib, path = _load()
fast = None if os.environ.get("CHORUS_PYTHON_CTYPES_ONLY") == "1" else _load_fast()
