# ctest py_import_wrong_python: gnuradio.mimodet imported by a python3 that cannot
# import GNU Radio (the first on PATH, e.g. pyenv's) must fail with an ImportError that
# names the interpreter to use, not pybind11's bare "initialization failed".
#   cmake -DPYTHONPATH=<build>/python -P wrong_python_test.cmake
# Prints "SKIP:" (the test's skip pattern) where the python3 on PATH can import GNU Radio.

find_program(other NAMES python3)
if(NOT other)
  message("SKIP: no python3 on PATH")
  return()
endif()
execute_process(COMMAND ${other} -c "import gnuradio.gr" RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_QUIET)
if(rc EQUAL 0)
  message("SKIP: ${other} can import GNU Radio; no wrong interpreter to test with")
  return()
endif()

set(ENV{PYTHONPATH} ${PYTHONPATH})
execute_process(COMMAND ${other} -c "from gnuradio import mimodet" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${other}: exit ${rc}\n${out}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${other} imported gnuradio.mimodet without GNU Radio")
endif()
string(REGEX MATCH "[^\n]+\n*$" last "${out}")
foreach(want "^ImportError: gnuradio.mimodet cannot be loaded by "
             "GNU Radio's Python" "PYTHON_EXECUTABLE" "/usr/bin/python3 on Debian")
  if(NOT last MATCHES "${want}")
    message(FATAL_ERROR "the error's last line does not match \"${want}\": ${last}")
  endif()
endforeach()
