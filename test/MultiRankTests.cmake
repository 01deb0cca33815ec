# One multi-rank case registered under every launcher and rank count it runs
# at, instead of one copy per launcher (included by test/CMakeLists.txt,
# which sets CHORUS_MPIRUN_LOCAL_FLAGS and CHORUS_MPIRUN_ENV first).
#
# chorus_add_multirank_test(NAME <pattern>
#     COMMAND <program> [<arg>...] | PROGRAMS <program>...
#     RANKS <n>... LAUNCHERS <launcher>...
#     [ENV <VAR=value>...] [ENVIRONMENT <VAR=value>...]
#     [TIMEOUT <s>] [LABELS <label>...] [RUN_SERIAL] [PYTHON <interpreter>]
#     [PROPERTIES <property> <value>...])
#
# registers one CTest test per launcher and rank count, named <pattern> with
# "<launcher>" replaced by the launcher's short name (below), then _np<n>:
#   NAME <launcher>          ->  mpi_np2, tcp_np2, chorusrun_tcp_np2
#   NAME python_<launcher>   ->  python_mpi_np2, python_torchrun_np2
#   NAME mpi_ring            ->  mpi_ring_np2 (one launcher only)
#
# LAUNCHERS (short name), and what starts the job:
#   mpirun         (mpi)            mpirun -n N, CHORUS_MPIRUN_LOCAL_FLAGS    needs CHORUS_HAVE_MPI
#   chorusrun      (chorusrun)      chorusrun -np N, over mpirun              needs chorusrun and MPI
#   chorusrun_tcp  (chorusrun_tcp)  chorusrun --tcp -np N                     needs chorusrun
#   tcp_hand       (tcp)            tcp/run_tcp_job.sh N: torchrun's          always
#                                   variables set by hand
#   torchrun       (torchrun)       python/run_torchrun.sh PYTHON N           needs PYTHON (the script
#                                                                             skips without torch)
# A launcher this configuration lacks registers nothing, silently.
#
# COMMAND: the program every rank runs. PROGRAMS instead: several Catch2 (or
# C) test programs, one job each under the launcher, every rank of each
# required to say it passed (tcp/run_tcp_suites.sh; tcp_hand and
# chorusrun_tcp only).
# ENV: variables for the ranks, passed the launcher's way: mpirun's -x
# VAR=value on its command line; under the other launchers the ranks inherit
# the test's environment, so ENV goes there (run_tcp_job.sh reads its
# TCP_JOB_HOSTS and TCP_JOB_RANKS_PER_HOST from it too).
# ENVIRONMENT: the test's own environment (CTest's ENVIRONMENT), under every
# launcher. The launchers that start mpirun (mpirun, chorusrun) get
# CHORUS_MPIRUN_ENV in front of it (the entries ENVIRONMENT does not already
# hold).
# TIMEOUT, LABELS, RUN_SERIAL: CTest's properties; PROPERTIES: any others
# (not ENVIRONMENT), as set_tests_properties takes them.
set(CHORUS_TEST_SCRIPTS_DIR ${CMAKE_CURRENT_LIST_DIR})

function(chorus_add_multirank_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "RUN_SERIAL" "NAME;TIMEOUT;PYTHON"
                        "COMMAND;PROGRAMS;RANKS;LAUNCHERS;ENV;ENVIRONMENT;LABELS;PROPERTIES")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_NAME OR NOT arg_RANKS OR NOT arg_LAUNCHERS)
    message(FATAL_ERROR "chorus_add_multirank_test: NAME, RANKS and LAUNCHERS, and nothing unknown "
                        "(left over: ${arg_UNPARSED_ARGUMENTS})")
  endif()
  if((arg_COMMAND AND arg_PROGRAMS) OR NOT (arg_COMMAND OR arg_PROGRAMS))
    message(FATAL_ERROR "chorus_add_multirank_test(${arg_NAME}): COMMAND or PROGRAMS, one of them")
  endif()
  if(arg_PROGRAMS)
    foreach(launcher IN LISTS arg_LAUNCHERS)
      if(NOT launcher MATCHES "^(tcp_hand|chorusrun_tcp)$")
        message(FATAL_ERROR "chorus_add_multirank_test(${arg_NAME}): PROGRAMS under tcp_hand and "
                            "chorusrun_tcp only, not ${launcher}")
      endif()
    endforeach()
  endif()
  list(LENGTH arg_LAUNCHERS launcher_count)
  if(launcher_count GREATER 1 AND NOT arg_NAME MATCHES "<launcher>")
    message(FATAL_ERROR "chorus_add_multirank_test(${arg_NAME}): several launchers need <launcher> in NAME")
  endif()

  foreach(np IN LISTS arg_RANKS)
    foreach(launcher IN LISTS arg_LAUNCHERS)
      set(mpirun_env "")  # CHORUS_MPIRUN_ENV, for launchers that start mpirun
      set(rank_env_in_test_env TRUE)  # ENV into the test's environment (all but mpirun)
      set(suites_launch "")  # run_tcp_suites.sh's LAUNCH
      if(launcher STREQUAL "mpirun")
        if(NOT CHORUS_HAVE_MPI)
          continue()
        endif()
        set(short mpi)
        set(mpirun_env ${CHORUS_MPIRUN_ENV})
        set(rank_env_in_test_env FALSE)
        set(launch ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${CHORUS_MPIRUN_LOCAL_FLAGS})
        foreach(var IN LISTS arg_ENV)
          list(APPEND launch -x ${var})
        endforeach()
      elseif(launcher STREQUAL "chorusrun")
        if(NOT TARGET chorusrun OR NOT CHORUS_HAVE_MPI)
          continue()
        endif()
        set(short chorusrun)
        set(mpirun_env ${CHORUS_MPIRUN_ENV})
        set(launch $<TARGET_FILE:chorusrun> -np ${np})
      elseif(launcher STREQUAL "chorusrun_tcp")
        if(NOT TARGET chorusrun)
          continue()
        endif()
        set(short chorusrun_tcp)
        set(launch $<TARGET_FILE:chorusrun> --tcp -np ${np})
        set(suites_launch $<TARGET_FILE:chorusrun>)
      elseif(launcher STREQUAL "tcp_hand")
        set(short tcp)
        set(launch ${CHORUS_TEST_SCRIPTS_DIR}/tcp/run_tcp_job.sh ${np})
        set(suites_launch hand)
      elseif(launcher STREQUAL "torchrun")
        if(NOT arg_PYTHON)
          continue()
        endif()
        set(short torchrun)
        set(launch ${CHORUS_TEST_SCRIPTS_DIR}/python/run_torchrun.sh ${arg_PYTHON} ${np})
      else()
        message(FATAL_ERROR "chorus_add_multirank_test(${arg_NAME}): unknown launcher ${launcher} "
                            "(mpirun, chorusrun, chorusrun_tcp, tcp_hand, torchrun)")
      endif()

      if(arg_PROGRAMS)  # run_tcp_suites.sh LAUNCH NP PROGRAM...
        set(command ${CHORUS_TEST_SCRIPTS_DIR}/tcp/run_tcp_suites.sh ${suites_launch} ${np} ${arg_PROGRAMS})
      else()
        set(command ${launch} ${arg_COMMAND})
      endif()

      string(REPLACE "<launcher>" "${short}" name "${arg_NAME}")
      set(name ${name}_np${np})
      add_test(NAME ${name} COMMAND ${command})

      set(test_env "")
      foreach(var IN LISTS mpirun_env)
        if(NOT var IN_LIST arg_ENVIRONMENT)
          list(APPEND test_env "${var}")
        endif()
      endforeach()
      list(APPEND test_env ${arg_ENVIRONMENT})
      if(rank_env_in_test_env)
        list(APPEND test_env ${arg_ENV})
      endif()
      if(test_env)
        set_tests_properties(${name} PROPERTIES ENVIRONMENT "${test_env}")
      endif()
      if(arg_TIMEOUT)
        set_tests_properties(${name} PROPERTIES TIMEOUT ${arg_TIMEOUT})
      endif()
      if(arg_LABELS)
        set_tests_properties(${name} PROPERTIES LABELS "${arg_LABELS}")
      endif()
      if(arg_RUN_SERIAL)
        set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
      endif()
      if(arg_PROPERTIES)
        set_tests_properties(${name} PROPERTIES ${arg_PROPERTIES})
      endif()
    endforeach()
  endforeach()
endfunction()
