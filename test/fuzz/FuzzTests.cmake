# Registers the decoders' fuzz tests where a fuzzing compiler exists:
# clang++ that links -fsanitize=fuzzer,address,undefined (Debian: clang-14
# and libclang-rt-14-dev). The fuzzers build apart from the main g++ build
# (build_fuzzers.sh, run by the fuzz_build test, or `cmake --build . --target
# chorus_fuzzers`), so they cost nothing unless the tests run. Where no such
# compiler is found the tests are not registered and configure says why.
set(CHORUS_FUZZ_SECONDS 5 CACHE STRING "seconds each fuzz test runs")
find_program(CHORUS_FUZZ_CXX NAMES clang++ clang++-14 clang++-15 clang++-16 DOC "compiler for the fuzz targets")

set(chorus_fuzz_why "")
if(NOT CHORUS_FUZZ_CXX)
  set(chorus_fuzz_why "no clang++ found (install clang-14 and libclang-rt-14-dev, or set CHORUS_FUZZ_CXX)")
else()
  set(probe_dir ${CMAKE_BINARY_DIR}/fuzz_probe)
  file(MAKE_DIRECTORY ${probe_dir})
  file(WRITE ${probe_dir}/probe.cc
       "#include <cstddef>\n#include <cstdint>\n"
       "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${CHORUS_FUZZ_CXX} -fsanitize=fuzzer,address,undefined ${probe_dir}/probe.cc
                          -o ${probe_dir}/probe
                  RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_VARIABLE probe_err)
  if(NOT probe_rc EQUAL 0)
    string(REGEX REPLACE "\n.*" "" probe_err "${probe_err}")
    string(CONCAT chorus_fuzz_why "${CHORUS_FUZZ_CXX} cannot link -fsanitize=fuzzer (libFuzzer missing? "
                  "install libclang-rt-14-dev): ${probe_err}")
  endif()
endif()

if(chorus_fuzz_why)
  message(STATUS "Fuzz tests: not registered: ${chorus_fuzz_why}")
  return()
endif()
message(STATUS "Fuzz tests: registered, built with ${CHORUS_FUZZ_CXX}, ${CHORUS_FUZZ_SECONDS} s each")

set(fuzz_dir ${CMAKE_BINARY_DIR}/fuzz)
set(fuzz_build_command ${CMAKE_CURRENT_LIST_DIR}/build_fuzzers.sh ${CHORUS_FUZZ_CXX} ${PROJECT_SOURCE_DIR} ${fuzz_dir})
add_custom_target(chorus_fuzzers COMMAND ${fuzz_build_command} USES_TERMINAL)
add_test(NAME fuzz_build COMMAND ${fuzz_build_command})
set_tests_properties(fuzz_build PROPERTIES TIMEOUT 600 FIXTURES_SETUP chorus_fuzzers_built)
foreach(decoder request_list response_list slot_bits elastic_wire handshake rendezvous mesh_frames etcd_response)
  add_test(NAME fuzz_${decoder}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_fuzzer.sh ${fuzz_dir}/fuzz_${decoder} ${fuzz_dir}/corpus/${decoder}
                   ${CHORUS_FUZZ_SECONDS} ${CMAKE_CURRENT_LIST_DIR}/corpus/${decoder})
  set_tests_properties(fuzz_${decoder} PROPERTIES TIMEOUT 120 FIXTURES_REQUIRED chorus_fuzzers_built LABELS fuzz)
endforeach()
