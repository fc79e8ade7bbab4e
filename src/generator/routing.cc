// Copyright 2026 The stubkit Authors.

#include "src/generator/routing.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/unknown_field_set.h>

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "src/generator/convention.h"
#include "src/generator/model.h"
#include "src/generator/names.h"
#include "src/generator/printer.h"
#include "src/generator/printers.h"

namespace stubkit {
namespace generator {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

namespace {

// Field numbers from googleapis' google/api/routing.proto, annotations.proto
// and http.proto.
constexpr int kRoutingExtensionNumber = 72295729;
constexpr int kRoutingRuleParameters = 2;
constexpr int kRoutingParameterField = 1;
constexpr int kRoutingParameterPathTemplate = 2;
constexpr int kHttpExtensionNumber = 72295728;
constexpr int kHttpRulePathFirst = 2;  // get, put, post, delete, patch = 2..6
constexpr int kHttpRulePathLast = 6;
constexpr int kHttpRuleCustom = 8;  // CustomHttpPattern, path = 2
constexpr int kCustomHttpPatternPath = 2;
constexpr int kHttpRuleAdditionalBindings = 11;

std::string Where(const MethodDescriptor* method) {
  return absl::StrCat("service ", method->service()->full_name(), ", method ",
                      method->name(), ": ");
}

// The length-delimited values of field `number` in `fields`.
std::vector<std::string> BytesOf(const UnknownFieldSet& fields, int number) {
  std::vector<std::string> values;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& field = fields.field(i);
    if (field.number() == number &&
        field.type() == UnknownField::TYPE_LENGTH_DELIMITED) {
      values.push_back(field.length_delimited());
    }
  }
  return values;
}

// The `{variable=...}` names in an http path, in order.
void PathVariables(const std::string& path, std::vector<std::string>* names) {
  size_t open = path.find('{');
  while (open != std::string::npos) {
    size_t close = path.find('}', open);
    if (close == std::string::npos) return;
    std::string variable = path.substr(open + 1, close - open - 1);
    std::string name = variable.substr(0, variable.find('='));
    bool seen = false;
    for (const std::string& known : *names) seen = seen || known == name;
    if (!seen) names->push_back(name);
    open = path.find('{', close);
  }
}

// The variables of an HttpRule's paths and its additional bindings'.
void HttpRuleVariables(const std::string& bytes,
                       std::vector<std::string>* names) {
  UnknownFieldSet rule;
  if (!rule.ParseFromString(bytes)) return;
  for (int i = 0; i < rule.field_count(); ++i) {
    const UnknownField& field = rule.field(i);
    if (field.type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
    if (field.number() >= kHttpRulePathFirst &&
        field.number() <= kHttpRulePathLast) {
      PathVariables(field.length_delimited(), names);
    } else if (field.number() == kHttpRuleCustom) {
      UnknownFieldSet custom;
      if (!custom.ParseFromString(field.length_delimited())) continue;
      for (const std::string& path : BytesOf(custom, kCustomHttpPatternPath)) {
        PathVariables(path, names);
      }
    }
  }
  for (const std::string& binding :
       BytesOf(rule, kHttpRuleAdditionalBindings)) {
    HttpRuleVariables(binding, names);
  }
}

// The accessor chain of a dotted field path, "request.a().b()"; the last
// field in `*last`. "" when a part names no field or an inner part is not
// a singular message. `*presence`: the has_ checks that tell whether the
// last field is set, joined by "&&": one per message on the path, and one
// for the last field when it has presence; "" when there are none.
std::string Getter(const Descriptor* message, const std::string& path,
                   int protoc_release, const FieldDescriptor** last,
                   std::string* presence = nullptr) {
  std::string getter = "request";
  std::vector<std::string> checks;
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i < parts.size(); ++i) {
    if (message == nullptr) return "";
    const FieldDescriptor* field = message->FindFieldByName(parts[i]);
    if (field == nullptr || field->is_repeated()) return "";
    const std::string name = ProtobufFieldName(field, protoc_release);
    if (field->has_presence()) {
      checks.push_back(absl::StrCat(getter, ".has_", name, "()"));
    }
    absl::StrAppend(&getter, ".", name, "()");
    message = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE
                  ? field->message_type()
                  : nullptr;
    *last = field;
  }
  if (presence != nullptr) *presence = absl::StrJoin(checks, " && ");
  return getter;
}

// The name of the one variable of a routing path_template; "" unless it
// has exactly one.
std::string TemplateKey(const std::string& path_template) {
  std::vector<std::string> names;
  size_t count = 0;
  for (char c : path_template) count += c == '{' ? 1 : 0;
  PathVariables(path_template, &names);
  return count == 1 && names.size() == 1 ? names[0] : "";
}

bool BuildExplicit(const MethodDescriptor* method,
                   const std::vector<std::string>& rules, int protoc_release,
                   RoutingModel* model, std::string* error) {
  for (const std::string& bytes : rules) {
    UnknownFieldSet rule;
    if (!rule.ParseFromString(bytes)) continue;
    for (const std::string& parameter_bytes :
         BytesOf(rule, kRoutingRuleParameters)) {
      UnknownFieldSet parameter;
      if (!parameter.ParseFromString(parameter_bytes)) continue;
      std::string field;
      std::string path_template;
      for (const std::string& value :
           BytesOf(parameter, kRoutingParameterField)) {
        field = value;
      }
      for (const std::string& value :
           BytesOf(parameter, kRoutingParameterPathTemplate)) {
        path_template = value;
      }
      const FieldDescriptor* last = nullptr;
      std::string getter =
          Getter(method->input_type(), field, protoc_release, &last);
      if (getter.empty() ||
          last->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
        *error = absl::StrCat(
            Where(method), "its google.api.routing parameter names field '",
            field, "', which is not a singular string field of ",
            method->input_type()->full_name(),
            " (or a path to one through singular messages)");
        return false;
      }
      RoutingParam param{field, getter, path_template, ""};
      if (!path_template.empty()) {
        param.key = TemplateKey(path_template);
        if (param.key.empty()) {
          *error = absl::StrCat(
              Where(method), "its google.api.routing path_template '",
              path_template, "' must have exactly one named variable");
          return false;
        }
      }
      model->params.push_back(std::move(param));
    }
  }
  return true;
}

bool BuildImplicit(const MethodDescriptor* method,
                   const std::vector<std::string>& rules, int protoc_release,
                   RoutingModel* model, std::string* error) {
  std::vector<std::string> names;
  for (const std::string& bytes : rules) HttpRuleVariables(bytes, &names);
  for (const std::string& name : names) {
    const FieldDescriptor* last = nullptr;
    std::string presence;
    std::string getter =
        Getter(method->input_type(), name, protoc_release, &last, &presence);
    if (getter.empty()) {
      *error = absl::StrCat(Where(method), "its google.api.http path names '",
                            name, "', which is not a singular field of ",
                            method->input_type()->full_name());
      return false;
    }
    // Strings and integers have a text form; other path variables (enums,
    // floats, bools, messages) are left out of the header. An empty string
    // is never sent (it is the unset value, and no path segment), so it
    // needs no check; an integer is sent whenever it is set (AIP-4222), 0
    // too, which for a proto3 integer without presence is always.
    switch (last->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        model->params.push_back({name, getter, "", ""});
        break;
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_UINT64:
        model->params.push_back({name, getter, "", presence});
        break;
      default:
        break;
    }
  }
  return true;
}

// C++ string literal contents for `text` (field paths and templates hold
// no quotes in practice; escape anyway).
std::string Quote(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted.push_back('\\');
    quoted.push_back(c);
  }
  return quoted + "\"";
}

}  // namespace

bool BuildRoutingModel(const MethodDescriptor* method, RoutingModel* model,
                       std::string* error, int protoc_release) {
  // Client and bidi streams have no request when an attempt starts.
  if (method->client_streaming()) return true;
  UnknownFieldSet fields;
  if (!fields.ParseFromString(method->options().SerializeAsString())) {
    return true;
  }
  std::vector<std::string> routing = BytesOf(fields, kRoutingExtensionNumber);
  if (!routing.empty()) {
    return BuildExplicit(method, routing, protoc_release, model, error);
  }
  return BuildImplicit(method, BytesOf(fields, kHttpExtensionNumber),
                       protoc_release, model, error);
}

namespace {

bool HasRouting(const FileModel& file) {
  for (const ServiceModel& service : file.services) {
    for (const MethodModel& method : service.methods) {
      if (!method.routing.params.empty()) return true;
    }
  }
  return false;
}

void PrintRoutingParamsFunction(Printer& w, const Printer::Vars& vars,
                                const MethodModel& method) {
  if (method.routing.params.empty()) return;
  w.Print(vars,
          "// The x-goog-request-params of a $Method$ attempt.\n"
          "void $routing_params$(const $Request$& request, "
          "::stubkit::internal::RequestParams& params) {\n");
  for (const RoutingParam& param : method.routing.params) {
    // Keys and templates come from the proto and may hold a '$': values,
    // which the printer does not read as a template.
    Printer::Vars pv = {{"key", Quote(param.key)},
                        {"getter", param.getter},
                        {"path_template", Quote(param.path_template)},
                        {"condition", param.condition}};
    pv["call"] = w.Expand(pv, param.path_template.empty()
                                  ? "params.Set($key$, $getter$);"
                                  : "params.Match($key$, $getter$, "
                                    "$path_template$);");
    w.Print(pv, param.condition.empty() ? "  $call$\n"
                                        : "  if ($condition$) {\n"
                                          "    $call$\n"
                                          "  }\n");
  }
  w.Print("}\n\n");
}

void PrintRoutingHeader(Printer& w, const Printer::Vars& vars,
                        const MethodModel& method) {
  if (method.routing.params.empty()) return;
  w.Print(vars,
          "  ::stubkit::internal::ApplyRoutingHeader(context, options, "
          "request, $routing_params$);\n");
}

// AIP-4222 as a unit: a function per routed method in the source, called
// by the gRPC stub before each attempt.
class Routing final : public Convention {
 public:
  std::string BuildMethod(const MethodDescriptor* method, int protoc_release,
                          MethodModel& model) const override {
    std::string error;
    BuildRoutingModel(method, &model.routing, &error, protoc_release);
    return error;
  }
  void AddHeaderIncludes(const FileModel& file,
                         Includes& includes) const override {
    // RoutingHeaderOption, for users of a client that sends the header.
    if (HasRouting(file)) includes.project.push_back("stubkit/routing.h");
  }
  void AddSourceIncludes(const FileModel& file,
                         Includes& includes) const override {
    if (HasRouting(file)) {
      includes.project.push_back("stubkit/internal/api/routing_header.h");
    }
  }
  void PrintStubHelpers(Printer& w, const Printer::Vars& vars,
                        const MethodModel& method) const override {
    PrintRoutingParamsFunction(w, vars, method);
  }
  void PrintBeforeAttempt(Printer& w, const Printer::Vars& vars,
                          const MethodModel& method) const override {
    PrintRoutingHeader(w, vars, method);
  }
};

}  // namespace

const Convention* RoutingConvention() {
  static const Convention* const kUnit = new Routing();
  return kUnit;
}

}  // namespace generator
}  // namespace stubkit
