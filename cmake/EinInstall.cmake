# `cmake --install build --prefix PREFIX`: the embedded C++ API as a CMake
# package. Installs
#   PREFIX/include/ein/ein.h, PREFIX/include/ein/API/*.h   (the public headers
#       only: every other header under include/ein includes MLIR or LLVM)
#   PREFIX/lib/libein.so                                    (target EinAPI)
#   PREFIX/lib/cmake/ein/einConfig.cmake (+ version, targets)
# so that an outside project can write
#   find_package(ein CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE ein::ein)
# (examples/cpp). libein.so holds ein's static libraries; it needs libMLIR and
# libLLVM from LLVM 19's lib/, found through its RPATH, and the JIT opens
# libmlir_c_runner_utils.so and libomp.so from there by absolute path
# (lib/Execution/CMakeLists.txt), so an installed ein runs on a machine with
# the same LLVM 19 packages. Included from the top-level CMakeLists.txt after
# lib/; does nothing until lib/API defines EinAPI.
if(NOT TARGET EinAPI)
  return()
endif()

include(CMakePackageConfigHelpers)

set(EIN_INSTALL_LIBDIR lib)
set(EIN_INSTALL_INCLUDEDIR include)
set(EIN_INSTALL_CMAKEDIR ${EIN_INSTALL_LIBDIR}/cmake/ein)

# What users of ein::ein get: the headers' directory (EinAPI's
# INSTALL_INTERFACE) and C++17 at least; nothing of EinAPI's PRIVATE
# dependencies (static ein libraries, MLIR, fmt) is part of its interface.
# The installed libein.so keeps the directories it was linked against
# (LLVM 19's lib/) in its RPATH, as einc does.
target_compile_features(EinAPI INTERFACE cxx_std_17)
set_target_properties(EinAPI PROPERTIES
  EXPORT_NAME ein
  INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS EinAPI EXPORT einTargets
  LIBRARY DESTINATION ${EIN_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${EIN_INSTALL_LIBDIR}
  RUNTIME DESTINATION bin)

# The public headers, and no other: ein.h and include/ein/API/*.h.
install(FILES ${PROJECT_SOURCE_DIR}/include/ein/ein.h
  DESTINATION ${EIN_INSTALL_INCLUDEDIR}/ein)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ein/API/
  DESTINATION ${EIN_INSTALL_INCLUDEDIR}/ein/API
  FILES_MATCHING PATTERN "*.h")

# einTargets-*.cmake names fmt::fmt in IMPORTED_LINK_DEPENDENT_LIBRARIES
# (libein.so needs libfmt.so at run time, found in the system's lib/): that
# property only feeds -rpath-link, and a project without an fmt::fmt target
# links ein::ein all the same (test/cpp-api/install.test).
install(EXPORT einTargets
  NAMESPACE ein::
  FILE einTargets.cmake
  DESTINATION ${EIN_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/einConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/einConfig.cmake
  INSTALL_DESTINATION ${EIN_INSTALL_CMAKEDIR}
  PATH_VARS EIN_INSTALL_INCLUDEDIR)
# 0.x: a new minor version may change the API.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/einConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/einConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/einConfigVersion.cmake
  DESTINATION ${EIN_INSTALL_CMAKEDIR})
