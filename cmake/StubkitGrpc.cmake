# stubkit_add_grpc_library(<name>
#     PROTOS <file.proto>...
#     [IMPORT_DIRS <dir>...]
#     [NO_STUBKIT])
#
# Runs protoc with the message, gRPC and stubkit plugins over PROTOS and makes
# a static library <name> holding the generated code. Generated files land in
# ${CMAKE_CURRENT_BINARY_DIR}/<name>_gen, keeping each proto's path relative
# to the import directory that holds it, and that directory is on the
# library's public include path:
#
#   stubkit_add_grpc_library(echo_grpc
#       PROTOS protos/echo.proto IMPORT_DIRS protos)
#   target_link_libraries(app PRIVATE echo_grpc)   // #include "echo.stubkit.h"
#
# NO_STUBKIT skips the stubkit plugin (plain messages and gRPC stubs only).
#
# Long-running operations (docs/long-running-operations.md): when a proto in
# PROTOS imports "google/longrunning/operations.proto" and does not list it,
# the library links the code generated from it (messages, gRPC stub and the
# stubkit OperationsClient the awaiters poll with):
#   - LONGRUNNING_TARGET <target>: the user's library holding that code,
#     e.g. one made by this function over googleapis' copy (which is then
#     in IMPORT_DIRS);
#   - otherwise stubkit_longrunning_protos, made once per build over the
#     wire-compatible copy stubkit ships (google/longrunning/operations.proto
#     and google/rpc/status.proto), whose directory joins the import path.
#     An IMPORT_DIRS entry holding its own google/longrunning/operations.proto
#     is then an error: protoc would compile against it, the program would
#     link stubkit's.

# Where stubkit's copies of the googleapis protos are: the source tree, or
# (set by stubkit-config.cmake) the installed share/stubkit/protos.
if(NOT DEFINED STUBKIT_GOOGLEAPIS_PROTO_DIR)
  get_filename_component(STUBKIT_GOOGLEAPIS_PROTO_DIR
    "${CMAKE_CURRENT_LIST_DIR}/../protos/third_party/googleapis" ABSOLUTE)
endif()
# A global property: functions run in their caller's scope.
set_property(GLOBAL PROPERTY STUBKIT_GOOGLEAPIS_PROTO_DIR
  "${STUBKIT_GOOGLEAPIS_PROTO_DIR}")

# Sets `out` to TRUE when one of PROTOS imports `rel` ("a/b.proto")
# directly, as protoc reads them with IMPORT_DIRS: the `dependency` fields
# of their FileDescriptorProtos, decoded to text by protoc itself. A proto
# that protoc cannot read stops the configuration with protoc's message.
# Editing a proto runs the configuration again, so an import added later
# is seen.
function(_stubkit_protos_import out name rel)
  cmake_parse_arguments(ARG "" "" "PROTOS;IMPORT_DIRS" ${ARGN})
  get_target_property(protoc protobuf::protoc IMPORTED_LOCATION_NONE)
  if(NOT protoc)
    get_target_property(protoc protobuf::protoc IMPORTED_LOCATION_RELEASE)
  endif()
  if(NOT protoc)
    get_target_property(protoc protobuf::protoc IMPORTED_LOCATION)
  endif()
  if(NOT protoc)
    find_program(protoc protoc REQUIRED)
  endif()
  set(flags)
  foreach(dir IN LISTS ARG_IMPORT_DIRS)
    list(APPEND flags "-I${dir}")
  endforeach()
  set(descriptors "${CMAKE_CURRENT_BINARY_DIR}/${name}_gen/imports.pb")
  execute_process(
    COMMAND "${protoc}" ${flags} "--descriptor_set_out=${descriptors}"
      ${ARG_PROTOS}
    RESULT_VARIABLE result ERROR_VARIABLE error)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "stubkit_add_grpc_library(${name}): protoc cannot "
      "read PROTOS:\n${error}")
  endif()
  execute_process(
    COMMAND "${protoc}" --decode=google.protobuf.FileDescriptorSet
      google/protobuf/descriptor.proto
    INPUT_FILE "${descriptors}"
    RESULT_VARIABLE result OUTPUT_VARIABLE text ERROR_VARIABLE error)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "stubkit_add_grpc_library(${name}): protoc cannot "
      "decode the descriptors of PROTOS:\n${error}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ARG_PROTOS})
  string(FIND "${text}" "dependency: \"${rel}\"" at)
  if(at EQUAL -1)
    set(${out} FALSE PARENT_SCOPE)
  else()
    set(${out} TRUE PARENT_SCOPE)
  endif()
endfunction()

function(stubkit_add_grpc_library name)
  cmake_parse_arguments(ARG "NO_STUBKIT" "LONGRUNNING_TARGET"
    "PROTOS;IMPORT_DIRS" ${ARGN})
  if(NOT ARG_PROTOS)
    message(FATAL_ERROR "stubkit_add_grpc_library(${name}): PROTOS is empty")
  endif()
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/${name}_gen")
  file(MAKE_DIRECTORY "${out_dir}")

  set(import_dirs)
  foreach(dir IN LISTS ARG_IMPORT_DIRS)
    get_filename_component(abs "${dir}" ABSOLUTE)
    list(APPEND import_dirs "${abs}")
  endforeach()
  if(NOT import_dirs)
    list(APPEND import_dirs "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()

  # Long-running operations: a proto that imports operations.proto without
  # this library compiling it gets it from another library (see above).
  # Which protos import it, protoc says: their descriptors' dependency
  # lists, read at configure time, which comments, odd spacing or
  # `import weak` cannot fool as a regex over the text could. stubkit's copy
  # of googleapis comes last on the probe's path, so that the import
  # resolves when no IMPORT_DIRS entry has it.
  get_property(googleapis_dir GLOBAL PROPERTY STUBKIT_GOOGLEAPIS_PROTO_DIR)
  set(longrunning_rel "google/longrunning/operations.proto")
  set(lists_longrunning FALSE)
  set(all_protos)
  foreach(proto IN LISTS ARG_PROTOS)
    get_filename_component(proto_abs "${proto}" ABSOLUTE)
    list(APPEND all_protos "${proto_abs}")
    if(proto_abs MATCHES "/${longrunning_rel}$")
      set(lists_longrunning TRUE)
    endif()
  endforeach()
  _stubkit_protos_import(imports_longrunning "${name}" "${longrunning_rel}"
    PROTOS ${all_protos} IMPORT_DIRS ${import_dirs} "${googleapis_dir}")
  set(longrunning_link)
  if(imports_longrunning AND NOT lists_longrunning)
    if(ARG_LONGRUNNING_TARGET)
      set(longrunning_link "${ARG_LONGRUNNING_TARGET}")
    else()
      foreach(dir IN LISTS import_dirs)
        if(EXISTS "${dir}/${longrunning_rel}")
          message(FATAL_ERROR "stubkit_add_grpc_library(${name}): "
            "${dir}/${longrunning_rel} would be compiled against but not "
            "linked; list it (and what it imports) in PROTOS of a library "
            "and pass that library as LONGRUNNING_TARGET")
        endif()
      endforeach()
      if(NOT TARGET stubkit_longrunning_protos)
        stubkit_add_grpc_library(stubkit_longrunning_protos
          PROTOS
            "${googleapis_dir}/google/rpc/status.proto"
            "${googleapis_dir}/${longrunning_rel}"
          IMPORT_DIRS "${googleapis_dir}")
      endif()
      set(longrunning_link stubkit_longrunning_protos)
      list(APPEND import_dirs "${googleapis_dir}")
    endif()
  endif()

  set(include_flags)
  foreach(dir IN LISTS import_dirs)
    list(APPEND include_flags "-I${dir}")
  endforeach()

  if(TARGET protoc-gen-stubkit)
    set(stubkit_plugin "$<TARGET_FILE:protoc-gen-stubkit>")
    set(stubkit_plugin_dep protoc-gen-stubkit)
  elseif(DEFINED STUBKIT_PROTOC_PLUGIN)
    set(stubkit_plugin "${STUBKIT_PROTOC_PLUGIN}")
    set(stubkit_plugin_dep "${STUBKIT_PROTOC_PLUGIN}")
  endif()
  if(NOT ARG_NO_STUBKIT AND NOT stubkit_plugin)
    message(FATAL_ERROR "stubkit_add_grpc_library(${name}): protoc-gen-stubkit not found")
  endif()
  get_target_property(grpc_plugin gRPC::grpc_cpp_plugin IMPORTED_LOCATION_NONE)
  if(NOT grpc_plugin)
    set(grpc_plugin "$<TARGET_FILE:gRPC::grpc_cpp_plugin>")
  endif()

  # Every command depends on all of the library's protos (all_protos,
  # above): one may import another, and protoc reads the imports.

  set(sources)
  set(headers)
  foreach(proto IN LISTS ARG_PROTOS)
    get_filename_component(proto_abs "${proto}" ABSOLUTE)
    # The proto's path relative to the first import dir that contains it.
    set(rel)
    foreach(dir IN LISTS import_dirs)
      file(RELATIVE_PATH candidate "${dir}" "${proto_abs}")
      if(NOT candidate MATCHES "^\\.\\./")
        set(rel "${candidate}")
        break()
      endif()
    endforeach()
    if(NOT rel)
      message(FATAL_ERROR "stubkit_add_grpc_library(${name}): ${proto} is not under any IMPORT_DIRS")
    endif()
    string(REGEX REPLACE "\\.proto$" "" stem "${rel}")
    set(outputs
      "${out_dir}/${stem}.pb.cc" "${out_dir}/${stem}.pb.h"
      "${out_dir}/${stem}.grpc.pb.cc" "${out_dir}/${stem}.grpc.pb.h")
    set(plugin_args
      "--plugin=protoc-gen-grpc=${grpc_plugin}"
      "--cpp_out=${out_dir}" "--grpc_out=${out_dir}")
    set(deps ${all_protos})
    if(NOT ARG_NO_STUBKIT)
      list(APPEND outputs
        "${out_dir}/${stem}.stubkit.cc" "${out_dir}/${stem}.stubkit.h"
        "${out_dir}/${stem}.stubkit_mock.h")
      list(APPEND plugin_args
        "--plugin=protoc-gen-stubkit=${stubkit_plugin}"
        "--stubkit_out=${out_dir}")
      list(APPEND deps ${stubkit_plugin_dep})
    endif()
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND protobuf::protoc ${include_flags} ${plugin_args} "${proto_abs}"
      DEPENDS ${deps}
      COMMENT "protoc ${rel}"
      VERBATIM)
    foreach(output IN LISTS outputs)
      if(output MATCHES "\\.cc$")
        list(APPEND sources "${output}")
      else()
        list(APPEND headers "${output}")
      endif()
    endforeach()
  endforeach()

  add_library(${name} STATIC ${sources} ${headers})
  target_include_directories(${name} PUBLIC "${out_dir}")
  target_link_libraries(${name} PUBLIC protobuf::libprotobuf gRPC::grpc++)
  if(NOT ARG_NO_STUBKIT)
    target_link_libraries(${name} PUBLIC stubkit::stubkit)
  endif()
  if(longrunning_link)
    target_link_libraries(${name} PUBLIC ${longrunning_link})
  endif()
endfunction()
