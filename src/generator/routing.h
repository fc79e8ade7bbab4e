// Copyright 2026 The stubkit Authors.
//
// Routing headers (AIP-4222): what the gRPC stub of a unary or
// server-streaming method adds to each attempt as `x-goog-request-params`,
// read from the raw option bytes (no google/api code needed):
//   - a `google.api.routing` annotation (MethodOptions extension 72295729:
//     RoutingRule.routing_parameters = 2; RoutingParameter.field = 1,
//     path_template = 2) decides alone; an empty one means no header;
//   - else the variables of the `google.api.http` rule's paths (the primary
//     pattern and its additional_bindings), each the whole value of the
//     field it names.
// A field path that names no field, or an annotation field that is not a
// string, or a path_template without exactly one variable, is refused,
// naming the method. Its unit in the printers is RoutingConvention()
// (convention.h).

#ifndef STUBKIT_SRC_GENERATOR_ROUTING_H_
#define STUBKIT_SRC_GENERATOR_ROUTING_H_

#include <google/protobuf/descriptor.h>

#include <string>
#include <vector>

#include "src/generator/names.h"
#include "src/generator/printer.h"

namespace stubkit {
namespace generator {

struct MethodModel;

struct RoutingParam {
  std::string key;            // the header key
  std::string getter;         // "request.book().name()"
  std::string path_template;  // "" for the whole value
  // When not "", the value is sent only if this holds: "request.has_a()"
  // and the like, for an integer that is inside a message or has presence.
  std::string condition;
};

struct RoutingModel {
  std::vector<RoutingParam> params;  // empty: no header
};

// The routing of `method`; false with `*error` for a broken annotation.
// `protoc_release` names the fields' accessors (see ProtobufFieldName).
bool BuildRoutingModel(const google::protobuf::MethodDescriptor* method,
                       RoutingModel* model, std::string* error,
                       int protoc_release = kDefaultProtocRelease);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_ROUTING_H_
