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

function(stubkit_add_grpc_library name)
  cmake_parse_arguments(ARG "NO_STUBKIT" "" "PROTOS;IMPORT_DIRS" ${ARGN})
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

  # Every command depends on all of the library's protos: one may import
  # another, and protoc reads the imports.
  set(all_protos)
  foreach(proto IN LISTS ARG_PROTOS)
    get_filename_component(proto_abs "${proto}" ABSOLUTE)
    list(APPEND all_protos "${proto_abs}")
  endforeach()

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
endfunction()
