# Install rules: `cmake --install <build> --prefix <dir>` puts
#   include/stubkit/*.h                      the runtime's public headers
#   include/stubkit/internal/*/*.h           what generated code needs, not API
#   lib/libstubkit.a (or .so)                the runtime
#   lib/libstubkit_explain.a (or .so)        stubkit::explain, the policy
#                                            explainer (docs/explain.md)
#   lib/libstubkit_prometheus.a (or .so)     stubkit::prometheus, when built
#   bin/protoc-gen-stubkit                   the protoc plugin (when built)
#   bin/stubkit-explain                      the policy explainer
#                                            (docs/explain.md)
#   lib/cmake/stubkit/                       find_package(stubkit CONFIG):
#                                            stubkit::stubkit,
#                                            stubkit::explain,
#                                            stubkit::prometheus (if built),
#                                            the plugin as
#                                            stubkit::protoc-gen-stubkit, and
#                                            stubkit_add_grpc_library()
#   lib/pkgconfig/stubkit.pc                 pkg-config --cflags --libs stubkit
#   lib/pkgconfig/stubkit_explain.pc         ... stubkit_explain
#
# Included once, at the end of the top-level CMakeLists.txt.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(STUBKIT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/stubkit"
    CACHE STRING "Where to install stubkit's CMake package files")

install(TARGETS stubkit EXPORT stubkit-targets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS stubkit_explain EXPORT stubkit-targets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
if(TARGET stubkit_prometheus)
  install(TARGETS stubkit_prometheus EXPORT stubkit-targets
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  set(STUBKIT_HAS_PROMETHEUS TRUE)
  set(stubkit_exclude_prometheus_h)
else()
  set(STUBKIT_HAS_PROMETHEUS FALSE)
  # Its header would not compile without prometheus-cpp.
  set(stubkit_exclude_prometheus_h PATTERN "prometheus.h" EXCLUDE)
endif()
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/stubkit"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  FILES_MATCHING PATTERN "*.h" ${stubkit_exclude_prometheus_h})

if(TARGET protoc-gen-stubkit)
  install(TARGETS protoc-gen-stubkit EXPORT stubkit-targets
    RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  set(STUBKIT_HAS_PLUGIN TRUE)
else()
  set(STUBKIT_HAS_PLUGIN FALSE)
endif()

# Not exported: a command, not something to link against.
install(TARGETS stubkit-explain RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

# stubkit's copies of google/longrunning/operations.proto and
# google/rpc/status.proto, for stubkit_add_grpc_library.
set(STUBKIT_INSTALL_PROTODIR "${CMAKE_INSTALL_DATADIR}/stubkit/protos")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/protos/third_party/googleapis/"
  DESTINATION "${STUBKIT_INSTALL_PROTODIR}"
  FILES_MATCHING PATTERN "*.proto")

install(EXPORT stubkit-targets
  NAMESPACE stubkit::
  FILE stubkit-targets.cmake
  DESTINATION "${STUBKIT_INSTALL_CMAKEDIR}")

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/stubkit-config.cmake.in"
  "${PROJECT_BINARY_DIR}/stubkit-config.cmake"
  INSTALL_DESTINATION "${STUBKIT_INSTALL_CMAKEDIR}"
  PATH_VARS CMAKE_INSTALL_BINDIR STUBKIT_INSTALL_PROTODIR)
# 0.x releases: only a matching minor version is compatible.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/stubkit-config-version.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/stubkit-config.cmake"
  "${PROJECT_BINARY_DIR}/stubkit-config-version.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/StubkitGrpc.cmake"
  DESTINATION "${STUBKIT_INSTALL_CMAKEDIR}")

# pkg-config: the runtime library and what it links against. The prefix is
# found from the .pc file's own place, so the install can be moved (and
# `cmake --install --prefix` works after configuring with another prefix).
file(RELATIVE_PATH STUBKIT_PC_PREFIX_FROM_PCFILEDIR
  "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" STUBKIT_PC_PREFIX_FROM_PCFILEDIR
  "${STUBKIT_PC_PREFIX_FROM_PCFILEDIR}")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(STUBKIT_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(STUBKIT_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# What stubkit's headers and library need. pkg-config flattens `Requires`:
# the Abseil .pc files require each other, so `--libs` would repeat the
# libraries they share (absl_raw_logging_internal about 20 times). When
# pkg-config is here, the flattened list is written into `Libs` once, each
# -l at its last place (a static archive must follow its users), and the
# packages move to `Requires.private` (still read for `--cflags` and
# `--static`).
set(STUBKIT_PC_PACKAGES grpc++ protobuf absl_status absl_statusor
  absl_strings absl_flat_hash_map absl_synchronization absl_time)
string(JOIN " " STUBKIT_PC_PACKAGES_TEXT ${STUBKIT_PC_PACKAGES})
set(STUBKIT_PC_REQUIRES "Requires: ${STUBKIT_PC_PACKAGES_TEXT}")
set(STUBKIT_PC_DEPENDENCY_LIBS "")
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  execute_process(
    COMMAND "${PKG_CONFIG_EXECUTABLE}" --libs ${STUBKIT_PC_PACKAGES}
    OUTPUT_VARIABLE stubkit_pc_libs
    RESULT_VARIABLE stubkit_pc_result
    ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(stubkit_pc_result EQUAL 0)
    separate_arguments(stubkit_pc_libs UNIX_COMMAND "${stubkit_pc_libs}")
    # Walk backwards, keeping the first -l/-L seen (the last in order).
    list(REVERSE stubkit_pc_libs)
    set(stubkit_pc_kept "")
    set(stubkit_pc_seen "")
    foreach(flag IN LISTS stubkit_pc_libs)
      if(flag MATCHES "^-[lL]")
        if(flag IN_LIST stubkit_pc_seen)
          continue()
        endif()
        list(APPEND stubkit_pc_seen "${flag}")
      endif()
      list(APPEND stubkit_pc_kept "${flag}")
    endforeach()
    list(REVERSE stubkit_pc_kept)
    string(JOIN " " STUBKIT_PC_DEPENDENCY_LIBS ${stubkit_pc_kept})
    set(STUBKIT_PC_REQUIRES "Requires.private: ${STUBKIT_PC_PACKAGES_TEXT}")
  endif()
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/stubkit.pc.in"
  "${PROJECT_BINARY_DIR}/stubkit.pc" @ONLY)
# The explainer: its library over stubkit's (Requires), which has the rest.
configure_file("${PROJECT_SOURCE_DIR}/cmake/stubkit_explain.pc.in"
  "${PROJECT_BINARY_DIR}/stubkit_explain.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/stubkit.pc"
  "${PROJECT_BINARY_DIR}/stubkit_explain.pc"
  DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
