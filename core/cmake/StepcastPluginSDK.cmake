# Installs the plugin SDK's pkg-config file and CMake package (included from
# plugins/CMakeLists.txt). The header itself is installed with core/include/stepcast.
include(CMakePackageConfigHelpers)

# The ABI numbers come from the header, the single source of truth.
file(STRINGS "${PROJECT_SOURCE_DIR}/core/include/stepcast/plugin.h" _sc_abi_lines
     REGEX "^#define SC_PLUGIN_ABI_(MAJOR|MINOR) +[0-9]+")
foreach(_l ${_sc_abi_lines})
  if(_l MATCHES "SC_PLUGIN_ABI_(MAJOR|MINOR) +([0-9]+)")
    set(SC_PLUGIN_ABI_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  endif()
endforeach()
if(NOT DEFINED SC_PLUGIN_ABI_MAJOR OR NOT DEFINED SC_PLUGIN_ABI_MINOR)
  message(FATAL_ERROR "cannot read SC_PLUGIN_ABI_MAJOR/MINOR from plugin.h")
endif()

set(SC_PKGCONFIG_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
set(SC_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/stepcast-plugin")
# From the .pc file's folder back to the prefix ("../.." for lib/pkgconfig).
file(RELATIVE_PATH SC_PC_REL_PREFIX "/sc-prefix/${SC_PKGCONFIG_INSTALL_DIR}" "/sc-prefix")
string(REGEX REPLACE "/$" "" SC_PC_REL_PREFIX "${SC_PC_REL_PREFIX}")

configure_file("${CMAKE_CURRENT_LIST_DIR}/stepcast-plugin.pc.in"
               "${PROJECT_BINARY_DIR}/sdk/stepcast-plugin.pc" @ONLY)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/stepcast-plugin-config.cmake.in"
  "${PROJECT_BINARY_DIR}/sdk/stepcast-plugin-config.cmake"
  INSTALL_DESTINATION "${SC_CMAKE_INSTALL_DIR}"
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR SC_PLUGIN_INSTALL_SUBDIR)
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/sdk/stepcast-plugin-config-version.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMajorVersion)

install(FILES "${PROJECT_BINARY_DIR}/sdk/stepcast-plugin.pc"
        DESTINATION "${SC_PKGCONFIG_INSTALL_DIR}")
install(FILES "${PROJECT_BINARY_DIR}/sdk/stepcast-plugin-config.cmake"
              "${PROJECT_BINARY_DIR}/sdk/stepcast-plugin-config-version.cmake"
        DESTINATION "${SC_CMAKE_INSTALL_DIR}")
