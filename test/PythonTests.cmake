# What every Python test folder (python, tensorflow, jax, spark, ray) does
# first: find out whether its interpreter has the modules it needs (saying
# which interpreter, or why the folder's tests are off), and the one pytest
# command line they all run.

# chorus_python_tests_possible(<WHAT> <PYTHON> <MODULES> <HINT> <OUT>):
# OUT is true when PYTHON imports every one of MODULES (a list); configure
# says "Chorus: <WHAT> tests with <PYTHON>" or why they are off (HINT: how
# to get the modules).
function(chorus_python_tests_possible what python modules hint out)
  list(JOIN modules ", " imports)
  execute_process(COMMAND ${python} -c "import ${imports}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    message(STATUS "Chorus: ${what} tests with ${python}")
    set(${out} TRUE PARENT_SCOPE)
  else()
    message(STATUS "Chorus: ${what} tests off (${python} lacks one of ${imports}${hint})")
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# chorus_pytest_command(<OUT> <PYTHON> <PATH>...): PYTHON -m pytest, quiet,
# no cache or colour (ctest's logs), over PATHs.
function(chorus_pytest_command out python)
  set(${out} ${python} -m pytest -q -p no:cacheprovider --color=no ${ARGN} PARENT_SCOPE)
endfunction()
