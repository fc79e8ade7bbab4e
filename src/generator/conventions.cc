// Copyright 2026 The stubkit Authors.
//
// The list of API conventions (convention.h). Printing order follows it.

#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "src/generator/convention.h"
#include "src/generator/model.h"
#include "src/generator/signatures.h"

namespace stubkit {
namespace generator {

const std::vector<const Convention*>& Conventions() {
  static const auto& conventions = *new std::vector<const Convention*>{
      LroConvention(), PaginationConvention(), RoutingConvention()};
  return conventions;
}

ClientMember ClientMemberOf(const Signature& signature,
                            const MethodModel& method,
                            const std::string& what) {
  auto expand = [&method](const std::string& text) {
    return absl::StrReplaceAll(text, {{"$Method$", method.name},
                                      {"$Request$", method.request},
                                      {"$Response$", method.response}});
  };
  return {expand(signature.name), true, expand(ParamTypes(signature)),
          method.index, what};
}

}  // namespace generator
}  // namespace stubkit
