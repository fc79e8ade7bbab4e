# stubkit_etcd_protos(): makes the library `stubkit_etcd_protos` (messages,
# gRPC stubs and the generated stubkit clients etcdserverpb::KVClient,
# LeaseClient, WatchClient, ...) from the .proto files of Debian's
# golang-etcd-server-dev (scripts/install-etcd.sh), and sets
# STUBKIT_ETCD_PROTOS_FOUND in the caller's scope. Used by tests/etcd and
# benchmarks/etcd_recovery; made once per build.
#
# etcd's rpc.proto imports gogoproto/gogo.proto, google/api/annotations.proto
# (which imports google/api/http.proto), etcd/mvcc/mvccpb/kv.proto and
# etcd/auth/authpb/auth.proto: all five are listed in PROTOS so that their
# code is generated and linked, not only found. protoc compiles the gogoproto
# options as they are (they are plain custom options on descriptor.proto), so
# nothing is patched: the import path is Debian's own folders.
#
# STUBKIT_ETCD_PROTO_ROOT may point elsewhere. By default: Debian's own
# folders when golang-etcd-server-dev is installed, else where
# scripts/install-etcd.sh unpacks the same files (without the ~180 Go
# packages that installing it pulls in).

if(EXISTS "/usr/share/gocode/src/go.etcd.io/etcd/etcdserver/etcdserverpb/rpc.proto")
  set(stubkit_etcd_root_default "/usr/share/gocode/src")
else()
  set(stubkit_etcd_root_default "/usr/local/share/stubkit/etcd-protos")
endif()
set(STUBKIT_ETCD_PROTO_ROOT "${stubkit_etcd_root_default}" CACHE PATH
  "Where etcd's .proto files are, in the layout of /usr/share/gocode/src")

function(stubkit_etcd_protos)
  set(root "${STUBKIT_ETCD_PROTO_ROOT}")
  set(etcd_dir "${root}/go.etcd.io")
  set(gogo_dir "${root}/github.com/gogo/protobuf")
  set(api_dir "${root}/github.com/grpc-ecosystem/grpc-gateway/third_party/googleapis")
  set(protos
    "${etcd_dir}/etcd/etcdserver/etcdserverpb/rpc.proto"
    "${etcd_dir}/etcd/mvcc/mvccpb/kv.proto"
    "${etcd_dir}/etcd/auth/authpb/auth.proto"
    "${gogo_dir}/gogoproto/gogo.proto"
    "${api_dir}/google/api/annotations.proto"
    "${api_dir}/google/api/http.proto")
  set(missing)
  foreach(proto IN LISTS protos)
    if(NOT EXISTS "${proto}")
      list(APPEND missing "${proto}")
    endif()
  endforeach()
  if(missing)
    set(STUBKIT_ETCD_PROTOS_FOUND FALSE PARENT_SCOPE)
    get_property(told GLOBAL PROPERTY STUBKIT_ETCD_TOLD)
    if(NOT told)
      set_property(GLOBAL PROPERTY STUBKIT_ETCD_TOLD TRUE)
      list(JOIN missing ", " missing_text)
      message(STATUS "etcd protos not found (${missing_text}): skipping the "
        "etcd suite (tests/etcd) and benchmarks/etcd_recovery; "
        "scripts/install-etcd.sh installs them")
    endif()
    return()
  endif()
  set(STUBKIT_ETCD_PROTOS_FOUND TRUE PARENT_SCOPE)
  if(TARGET stubkit_etcd_protos)
    return()
  endif()
  stubkit_add_grpc_library(stubkit_etcd_protos
    PROTOS ${protos}
    IMPORT_DIRS "${etcd_dir}" "${gogo_dir}" "${api_dir}")
  # Generated code, not ours: no warnings from it.
  target_compile_options(stubkit_etcd_protos PRIVATE -w)
endfunction()
