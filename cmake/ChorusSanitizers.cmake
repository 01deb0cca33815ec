# CHORUS_SANITIZE: build every Chorus target with GCC/Clang sanitizers, e.g.
#   -DCHORUS_SANITIZE=address,undefined   or   -DCHORUS_SANITIZE=thread
# (scripts/run_sanitizers.sh uses both). Empty (the default) adds nothing.
set(CHORUS_SANITIZE "" CACHE STRING
    "Sanitizers for every target, as for -fsanitize= (e.g. address,undefined or thread); empty: none")

# Adds the sanitizer flags to every target built under DIR and its
# subdirectories. Called once all targets exist, so the flags land after each
# target's own options: -O1 overrides the core's -O3 (the last -O wins), which
# keeps the reports' stacks and line numbers exact.
function(chorus_sanitize_targets_in dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|STATIC_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      target_compile_options(${target} PRIVATE ${CHORUS_SANITIZE_FLAGS})
      target_link_options(${target} PRIVATE -fsanitize=${CHORUS_SANITIZE})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    chorus_sanitize_targets_in(${subdir})
  endforeach()
endfunction()

function(chorus_apply_sanitizers)
  if(NOT CHORUS_SANITIZE)
    return()
  endif()
  if(CHORUS_SANITIZE MATCHES "thread" AND CHORUS_SANITIZE MATCHES "address")
    message(FATAL_ERROR "CHORUS_SANITIZE=${CHORUS_SANITIZE}: thread and address cannot be combined")
  endif()
  set(CHORUS_SANITIZE_FLAGS -fsanitize=${CHORUS_SANITIZE} -fno-omit-frame-pointer -O1 -g)
  # Undefined behaviour stops the program: a test that only prints a report
  # would pass. (float-cast-overflow is not part of GCC's "undefined" group.)
  if(CHORUS_SANITIZE MATCHES "undefined|float-cast-overflow")
    list(APPEND CHORUS_SANITIZE_FLAGS -fno-sanitize-recover=all)
  endif()
  chorus_sanitize_targets_in(${PROJECT_SOURCE_DIR})
  message(STATUS "Chorus: sanitizers ${CHORUS_SANITIZE} (-O1 -g) on every target")
endfunction()
