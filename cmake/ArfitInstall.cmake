# Installing arfit as a C++ library: `cmake --install`, the CMake package (find_package(arfit)), the
# pkg-config file of the model library and the Debian packages (cpack -G DEB).
#
# Each embeddable library calls arfit_install_library() from its own CMakeLists.txt. That gives it
#   - the imported name consumers use (arfit::<name>, also as an ALIAS inside this build, so the same
#     target_link_libraries line works in-tree and against an installed arfit),
#   - position-independent code (a consumer may link it into a shared object, e.g. an NCCL tuner plugin),
#   - its headers under <prefix>/include/arfit/<folder>/, so that `#include "model/model_set.h"` works the
#     same against the source tree and the install (INSTALL_INTERFACE include dir <prefix>/include/arfit),
#   - a place in the export set arfitTargets, written to <prefix>/lib/cmake/arfit/ by arfit_install_package().
#
# Install components: `dev` (static libraries, headers, CMake package, pkg-config file) and `tools` (the arfit
# and arbench programs, the NCCL tuner plugin libnccl-tuner-arfit.so). cpack builds one Debian package per component: arfit (tools) and arfit-dev.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ARFIT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/arfit)
set(ARFIT_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/arfit)

# arfit_install_library(<target> NAME <export name> [HEADERS_FROM <folder>])
# The headers are every *.h directly in <folder> (default: the calling folder; subfolders such as fuzz/ are
# not part of the API).
function(arfit_install_library target)
  cmake_parse_arguments(A "" "NAME;HEADERS_FROM" "" ${ARGN})
  if(NOT A_HEADERS_FROM)
    set(A_HEADERS_FROM ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${A_HEADERS_FROM})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${A_NAME} POSITION_INDEPENDENT_CODE ON)
  add_library(arfit::${A_NAME} ALIAS ${target})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                              $<INSTALL_INTERFACE:${ARFIT_INSTALL_INCLUDEDIR}>)
  install(TARGETS ${target} EXPORT arfitTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  file(GLOB headers CONFIGURE_DEPENDS ${A_HEADERS_FROM}/*.h)
  install(FILES ${headers} DESTINATION ${ARFIT_INSTALL_INCLUDEDIR}/${folder} COMPONENT dev)
  set_property(GLOBAL APPEND PROPERTY ARFIT_INSTALLED_LIBRARIES ${A_NAME})
endfunction()

# arfit_install_programs(<target>...): the command-line tools, component `tools`.
function(arfit_install_programs)
  foreach(target ${ARGN})
    # Libraries found outside the system directories (CUDA and NCCL under /usr/local/cuda) stay reachable.
    set_target_properties(${target} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
    install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  endforeach()
endfunction()

# arfit_installed_closure(<component> <out-var>): the component and every installed arfit library it links,
# directly or through another (its PUBLIC and PRIVATE links: a static library's users link them all), read from
# the targets as this configuration declared them (fit links ingest, trace links plots, only when those are
# built). The package config gets this graph, so it cannot drift from the CMakeLists.
function(arfit_installed_closure component out)
  get_property(installed GLOBAL PROPERTY ARFIT_INSTALLED_LIBRARIES)
  set(closure ${component})
  set(todo ${component})
  while(todo)
    list(POP_FRONT todo name)
    get_target_property(target arfit::${name} ALIASED_TARGET)
    get_target_property(links ${target} LINK_LIBRARIES)
    foreach(link IN LISTS links)
      if(NOT TARGET ${link})
        continue()
      endif()
      get_target_property(real ${link} ALIASED_TARGET)
      if(NOT real)
        set(real ${link})
      endif()
      get_target_property(dep ${real} EXPORT_NAME)
      if(dep AND dep IN_LIST installed AND NOT dep IN_LIST closure)
        list(APPEND closure ${dep})
        list(APPEND todo ${dep})
      endif()
    endforeach()
  endwhile()
  set(${out} ${closure} PARENT_SCOPE)
endfunction()

# Called once, after every library has been declared: the export set, the package config and version files,
# the pkg-config file, and the CPack settings.
function(arfit_install_package)
  install(EXPORT arfitTargets NAMESPACE arfit:: FILE arfitTargets.cmake
          DESTINATION ${ARFIT_INSTALL_CMAKEDIR} COMPONENT dev)
  get_property(ARFIT_INSTALLED_LIBRARIES GLOBAL PROPERTY ARFIT_INSTALLED_LIBRARIES)
  # set(_arfit_needs_<component> ...) lines for the package config.
  set(ARFIT_COMPONENT_CLOSURES "")
  foreach(component IN LISTS ARFIT_INSTALLED_LIBRARIES)
    arfit_installed_closure(${component} closure)
    list(JOIN closure " " closure)
    string(APPEND ARFIT_COMPONENT_CLOSURES "set(_arfit_needs_${component} ${closure})\n")
  endforeach()
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/arfitConfig.cmake.in
                                ${PROJECT_BINARY_DIR}/arfitConfig.cmake
                                INSTALL_DESTINATION ${ARFIT_INSTALL_CMAKEDIR})
  # The API may change between major versions only (0.x counts as one major version here: say so in docs/api.md).
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/arfitConfigVersion.cmake
                                   COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/arfitConfig.cmake ${PROJECT_BINARY_DIR}/arfitConfigVersion.cmake
          DESTINATION ${ARFIT_INSTALL_CMAKEDIR} COMPONENT dev)

  # pkg-config for the model library alone (the part with no heavy dependencies: Eigen and nlohmann_json,
  # both header-only and both shipping .pc files in Debian). Relocatable: paths are relative to the .pc file.
  file(RELATIVE_PATH pc_to_prefix ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
  string(REGEX REPLACE "/$" "" pc_to_prefix "${pc_to_prefix}")
  set(ARFIT_PC_PREFIX "\${pcfiledir}/${pc_to_prefix}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/arfit-model.pc.in ${PROJECT_BINARY_DIR}/arfit-model.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/arfit-model.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

  # Debian packages: `cpack -G DEB` in the build directory. The tools' Depends come from dpkg-shlibdeps (the
  # Debian packages of the shared libraries the programs actually link); the -dev package depends on the tools
  # package of the same version and on the -dev packages find_package(arfit) looks for.
  set(CPACK_PACKAGE_NAME arfit)
  set(CPACK_PACKAGE_VENDOR "arfit")
  set(CPACK_PACKAGE_CONTACT "arfit developers <arfit@localhost>")
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
  set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
  set(CPACK_DEB_COMPONENT_INSTALL ON)
  set(CPACK_COMPONENTS_ALL tools dev)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_SECTION science)
  set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME arfit)
  set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
  # gnuplot draws `arfit plot`; mpirun launches arbench. Neither is a linked library, so shlibdeps cannot see them.
  set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "gnuplot-nox, openmpi-bin")
  set(CPACK_DEBIAN_TOOLS_DESCRIPTION "arfit and arbench: measure, model and choose GPU collective strategies")
  set(CPACK_DEBIAN_DEV_PACKAGE_NAME arfit-dev)
  set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
      "arfit (= ${PROJECT_VERSION}), libeigen3-dev, nlohmann-json3-dev, libceres-dev, libboost-iostreams-dev, libboost-system-dev, libboost-filesystem-dev, libre2-dev, pkg-config")
  set(CPACK_DEBIAN_DEV_DESCRIPTION "arfit libraries, headers and CMake package (find_package(arfit))")
  if(ARFIT_HAVE_CUDA)
    # CUDA and NCCL come from NVIDIA's installer under /usr/local/cuda, not from a Debian package: dpkg-shlibdeps
    # is told where they are (-l) and ignores libraries it cannot map to a package, so Depends lists only the
    # Debian ones and the README says arbench's GPU backends need the CUDA toolkit's runtime.
    set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
  endif()
  include(CPack)
  cpack_add_component(tools DISPLAY_NAME "arfit and arbench")
  cpack_add_component(dev DISPLAY_NAME "arfit libraries and headers" DEPENDS tools)
endfunction()
