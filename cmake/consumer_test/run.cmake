# ctest cmake_package_consumer: install the build tree MIMODET_BUILD to a fresh prefix
# under WORK, then configure, build and run the project in SOURCE against it.
#   cmake -DMIMODET_BUILD=... -DWORK=... -DSOURCE=... [-DCXX=...] [-DGENERATOR=...]
#         -P run.cmake

foreach(v MIMODET_BUILD WORK SOURCE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run.cmake: -D${v}=... is required")
  endif()
endforeach()

set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step("install to ${prefix}" ${CMAKE_COMMAND} --install ${MIMODET_BUILD} --prefix ${prefix})
set(gen_args)
if(GENERATOR)
  list(APPEND gen_args -G ${GENERATOR})
endif()
if(CXX)
  list(APPEND gen_args -DCMAKE_CXX_COMPILER=${CXX})
endif()
step("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build ${gen_args}
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DMIMODET_PREFIX=${prefix})
string(REGEX MATCH "gnuradio::gnuradio-mimodet: [^\n]*" found "${step_output}")
message(STATUS "${found}")
step("build the consumer" ${CMAKE_COMMAND} --build ${WORK}/build)
step("run the consumer" ${WORK}/build/mimodet_consumer)
message(STATUS "${step_output}")
file(REMOVE_RECURSE ${WORK})
