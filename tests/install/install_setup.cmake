# The `install` label's setup (a ctest fixture): install the build tree into a fresh prefix, fit the fixture
# samples with the *installed* arfit, and build two consumer projects against the installed CMake package:
# examples/embed (the docs/api.md example, arfit::model only) and all_headers/ (every component, every header).
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -P install_setup.cmake
foreach(v BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "install_setup.cmake: -D${v}=... is required")
  endif()
endforeach()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "install test: ${what}: ok")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run_step("arfit fit with the installed arfit"
         ${prefix}/bin/arfit fit ${SOURCE_DIR}/tests/install/samples.csv -o ${WORK_DIR}/models.json -q)
foreach(project embed all_headers)
  if(project STREQUAL embed)
    set(src ${SOURCE_DIR}/examples/embed)
  else()
    set(src ${SOURCE_DIR}/tests/install/all_headers)
  endif()
  run_step("configure ${project} against the install"
           ${CMAKE_COMMAND} -S ${src} -B ${WORK_DIR}/${project} -DCMAKE_BUILD_TYPE=Release
           -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
  run_step("build ${project}" ${CMAKE_COMMAND} --build ${WORK_DIR}/${project})
endforeach()
