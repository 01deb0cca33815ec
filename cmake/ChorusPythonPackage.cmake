# What `pip install .` puts inside the Python package (scikit-build-core
# installs the `python` component only): libchorus as chorus/lib/libchorus.so.0
# (its soname), the TensorFlow ops as chorus/lib/libchorus_tensorflow.so, the
# JAX FFI handlers as chorus/lib/libchorus_jax.so (where jaxlib's header was
# found), chorusrun and its exit hook in chorus/bin, found there by
# chorus._library and the chorusrun console script (chorus/launcher.py).
#
# CHORUS_PYTHON_PREBUILT=<build dir> in the environment: ship what that build already made
# instead of building again (the README's scripts and CI, which built it
# once); chorusrun's run path is rewritten to find the shipped library.
function(chorus_python_package_prebuilt dir)
  foreach(f core/libchorus.so.0 launcher/chorusrun launcher/libchorusrun_exit_hook.so)
    if(NOT EXISTS "${dir}/${f}")
      message(FATAL_ERROR "CHORUS_PYTHON_PREBUILT=${dir}: ${f} is missing (build it first: scripts/build.sh)")
    endif()
  endforeach()
  get_filename_component(lib "${dir}/core/libchorus.so.0" REALPATH)
  install(FILES "${lib}" DESTINATION chorus/lib RENAME libchorus.so.0 COMPONENT python)
  install(PROGRAMS "${dir}/launcher/chorusrun" DESTINATION chorus/bin COMPONENT python)
  install(FILES "${dir}/launcher/libchorusrun_exit_hook.so" DESTINATION chorus/bin COMPONENT python)
  if(EXISTS "${dir}/frameworks/tensorflow/libchorus_tensorflow.so")  # chorus.tensorflow's ops
    install(FILES "${dir}/frameworks/tensorflow/libchorus_tensorflow.so" DESTINATION chorus/lib COMPONENT python)
  endif()
  if(EXISTS "${dir}/frameworks/jax/libchorus_jax.so")  # chorus.jax's FFI handlers
    install(FILES "${dir}/frameworks/jax/libchorus_jax.so" DESTINATION chorus/lib COMPONENT python)
  endif()
  # chorus._fast when that build made one for this Python (python/CMakeLists.txt); else ctypes alone.
  file(GLOB fast "${dir}/python/chorus/_fast.*.so")
  find_package(Python3 COMPONENTS Interpreter)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"
                  OUTPUT_VARIABLE suffix OUTPUT_STRIP_TRAILING_WHITESPACE)
  foreach(f ${fast})
    if(f MATCHES "${suffix}$")
      install(FILES "${f}" DESTINATION chorus COMPONENT python)
    endif()
  endforeach()
  file(READ_ELF "${dir}/launcher/chorusrun" RUNPATH old_runpath)
  if(NOT old_runpath)
    file(READ_ELF "${dir}/launcher/chorusrun" RPATH old_runpath)
  endif()
  string(REPLACE ";" ":" old_runpath "${old_runpath}")  # READ_ELF lists the entries CMake's way
  # pyproject.toml's options for a build from source mean nothing here.
  set(unused "${CHORUS_BUILD_TESTS}${CHORUS_BUILD_EXAMPLES}${CHORUS_WITH_TORCH}")
  install(CODE "file(RPATH_CHANGE FILE \"\${CMAKE_INSTALL_PREFIX}/chorus/bin/chorusrun\"
                                   OLD_RPATH \"${old_runpath}\" NEW_RPATH \"\\\$ORIGIN/../lib\")"
          COMPONENT python)
endfunction()

# Building from source: the targets just made.
function(chorus_python_package_built)
  install(FILES $<TARGET_FILE:chorus_core> DESTINATION chorus/lib RENAME libchorus.so.0 COMPONENT python)
  if(TARGET chorus_tensorflow)
    install(TARGETS chorus_tensorflow LIBRARY DESTINATION chorus/lib COMPONENT python)
  endif()
  if(TARGET chorus_jax)
    install(TARGETS chorus_jax LIBRARY DESTINATION chorus/lib COMPONENT python)
  endif()
  if(TARGET chorusrun)
    set_target_properties(chorusrun PROPERTIES INSTALL_RPATH "$ORIGIN/../lib")
    install(TARGETS chorusrun RUNTIME DESTINATION chorus/bin COMPONENT python)
    install(TARGETS chorusrun_exit_hook LIBRARY DESTINATION chorus/bin COMPONENT python)
  endif()
endfunction()
