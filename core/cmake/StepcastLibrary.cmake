# Installs libstepcast as a dependency for other programs (included from core/CMakeLists.txt):
# the pkg-config file stepcast.pc and the CMake package stepcast (stepcast::stepcast).
include(CMakePackageConfigHelpers)

set(SC_LIB_PKGCONFIG_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
set(SC_LIB_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/stepcast")
# From the .pc file's folder back to the prefix ("../.." for lib/pkgconfig).
file(RELATIVE_PATH SC_PC_REL_PREFIX "/sc-prefix/${SC_LIB_PKGCONFIG_DIR}" "/sc-prefix")
string(REGEX REPLACE "/$" "" SC_PC_REL_PREFIX "${SC_PC_REL_PREFIX}")

configure_file("${CMAKE_CURRENT_LIST_DIR}/stepcast.pc.in"
               "${PROJECT_BINARY_DIR}/lib-package/stepcast.pc" @ONLY)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/stepcast-config.cmake.in"
  "${PROJECT_BINARY_DIR}/lib-package/stepcast-config.cmake"
  INSTALL_DESTINATION "${SC_LIB_CMAKE_DIR}"
  PATH_VARS SC_DATA_INSTALL_SUBDIR SC_PLUGIN_INSTALL_SUBDIR)
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/lib-package/stepcast-config-version.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMajorVersion)

install(FILES "${PROJECT_BINARY_DIR}/lib-package/stepcast.pc"
        DESTINATION "${SC_LIB_PKGCONFIG_DIR}")
install(FILES "${PROJECT_BINARY_DIR}/lib-package/stepcast-config.cmake"
              "${PROJECT_BINARY_DIR}/lib-package/stepcast-config-version.cmake"
        DESTINATION "${SC_LIB_CMAKE_DIR}")
install(EXPORT stepcast-targets NAMESPACE stepcast:: DESTINATION "${SC_LIB_CMAKE_DIR}")
