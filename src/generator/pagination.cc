// Copyright 2026 The stubkit Authors.

#include "src/generator/pagination.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "src/generator/convention.h"
#include "src/generator/model.h"
#include "src/generator/names.h"
#include "src/generator/printers.h"

namespace stubkit {
namespace generator {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;

namespace {

bool IsSingular(const FieldDescriptor* field, FieldDescriptor::CppType type) {
  return field != nullptr && !field->is_repeated() && field->cpp_type() == type;
}

bool IsSingularInteger(const FieldDescriptor* field) {
  if (field == nullptr || field->is_repeated()) return false;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

std::string QualifiedEnumName(const EnumDescriptor* e) {
  std::string name = e->name();
  for (const Descriptor* outer = e->containing_type(); outer != nullptr;
       outer = outer->containing_type()) {
    name = absl::StrCat(outer->name(), "_", name);
  }
  return absl::StrCat(PackageToNamespace(e->file()->package()), "::", name);
}

// The C++ type of one value of `field` (an element, for a repeated one).
std::string ValueType(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return "::int32_t";
    case FieldDescriptor::CPPTYPE_INT64:
      return "::int64_t";
    case FieldDescriptor::CPPTYPE_UINT32:
      return "::uint32_t";
    case FieldDescriptor::CPPTYPE_UINT64:
      return "::uint64_t";
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return "double";
    case FieldDescriptor::CPPTYPE_FLOAT:
      return "float";
    case FieldDescriptor::CPPTYPE_BOOL:
      return "bool";
    case FieldDescriptor::CPPTYPE_ENUM:
      return QualifiedEnumName(field->enum_type());
    case FieldDescriptor::CPPTYPE_STRING:
      return "::std::string";
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return QualifiedMessageName(field->message_type());
  }
  return "";
}

// The client's MRange: `request` by value, as the range keeps it.
const Signature& RangeSignature() {
  static const auto* const kSignature =
      new Signature{Layer::kClient,
                    Kind::kUnary,
                    Variant::kSync,
                    "::stubkit::PageRange<$Item$>",
                    "$Method$Range",
                    {{"$Request$", "request", ""},
                     {"const ::stubkit::Options&", "call", "{}"}}};
  return *kSignature;
}

Printer::Vars RangeVars(const FileModel& file, const ServiceModel& service,
                        const MethodModel& method) {
  Printer::Vars vars = MethodVars(file, service, method);
  vars["Item"] = method.pagination.item_type;
  vars["items_field"] = method.pagination.items_field;
  return vars;
}

}  // namespace

PaginationModel DetectPagination(const MethodDescriptor* method,
                                 int protoc_release) {
  PaginationModel model;
  if (method->client_streaming() || method->server_streaming()) return model;
  const Descriptor* request = method->input_type();
  const Descriptor* response = method->output_type();
  if (!IsSingular(request->FindFieldByName("page_token"),
                  FieldDescriptor::CPPTYPE_STRING) ||
      !(IsSingularInteger(request->FindFieldByName("page_size")) ||
        IsSingularInteger(request->FindFieldByName("max_results"))) ||
      !IsSingular(response->FindFieldByName("next_page_token"),
                  FieldDescriptor::CPPTYPE_STRING)) {
    return model;
  }
  const FieldDescriptor* items = nullptr;
  for (int i = 0; i < response->field_count(); ++i) {
    const FieldDescriptor* field = response->field(i);
    if (!field->is_repeated()) continue;
    if (items == nullptr || field->number() < items->number()) items = field;
  }
  if (items == nullptr) return model;
  model.paginated = true;
  model.items_field = ProtobufFieldName(items, protoc_release);
  if (items->is_map()) {
    const Descriptor* entry = items->message_type();
    model.item_type = absl::StrCat("::std::pair<", ValueType(entry->map_key()),
                                   ", ", ValueType(entry->map_value()), ">");
  } else {
    model.item_type = ValueType(items);
  }
  return model;
}

namespace {

std::string CheckPaginationNames(const ServiceDescriptor* service,
                                 const ServiceModel& model) {
  for (const MethodModel& method : model.methods) {
    if (!method.pagination.paginated) continue;
    const std::string range = method.name + "Range";
    if (service->FindMethodByName(range) == nullptr) continue;
    return absl::StrCat(
        "service ", service->full_name(), ", method ", range,
        ": stubkit generates '", range, "' in ", model.name,
        "Client for the paginated rpc ", method.name,
        ", which clashes with this method's members. Rename the method");
  }
  return "";
}

bool HasPagination(const FileModel& file) {
  for (const ServiceModel& service : file.services) {
    for (const MethodModel& method : service.methods) {
      if (method.pagination.paginated) return true;
    }
  }
  return false;
}

void PrintPaginationDeclarations(Printer& w, const FileModel& file,
                                 const ServiceModel& service) {
  for (const MethodModel& method : service.methods) {
    if (!method.pagination.paginated) continue;
    const Printer::Vars vars = RangeVars(file, service, method);
    w.Print("\n");
    w.Indent();
    w.PrintComment(vars,
                   "Every $Item$ that $Method$ lists, page after page, each "
                   "page fetched when needed by one $Method$ call (retried "
                   "as usual). See stubkit/page_range.h.");
    w.Outdent();
    PrintDeprecated(w, vars, method);
    w.Print(SignatureVars(w, vars, RangeSignature()), "  $declaration$;\n");
  }
}

void PrintPaginationDefinitions(Printer& w, const FileModel& file,
                                const ServiceModel& service) {
  for (const MethodModel& method : service.methods) {
    if (!method.pagination.paginated) continue;
    const Printer::Vars vars = RangeVars(file, service, method);
    w.Print("\n");
    // MRange of a deprecated M calls M: no warning for the generated code.
    if (method.deprecated) {
      w.Print(
          "#pragma GCC diagnostic push\n"
          "#pragma GCC diagnostic ignored \"-Wdeprecated-declarations\"\n");
    }
    w.Print(
        SignatureVars(w, vars, RangeSignature(), "$Service$Client"),
        "$definition$ {\n"
        "  using Item = $Item$;\n"
        "  return ::stubkit::internal::MakePageRange<Item>(\n"
        "      ::std::move(request), call, "
        "method_options_.View($Service$Methods::k$Method$, call, options_),\n"
        "      [client = *this](const auto& page_request, "
        "const auto& options) mutable {\n"
        "        return client.$Method$(page_request, options);\n"
        "      },\n"
        "      [](auto& response) { return "
        "response.mutable_$items_field$(); });\n"
        "}\n");
    if (method.deprecated) w.Print("#pragma GCC diagnostic pop\n");
  }
}

// AIP-158 as a unit: SClient's MRange, after its other members.
class Pagination final : public Convention {
 public:
  std::string BuildMethod(const MethodDescriptor* method, int protoc_release,
                          MethodModel& model) const override {
    model.pagination = DetectPagination(method, protoc_release);
    return "";
  }
  std::string CheckService(const ServiceDescriptor* service,
                           const ServiceModel& model) const override {
    return CheckPaginationNames(service, model);
  }
  void AddHeaderIncludes(const FileModel& file,
                         Includes& includes) const override {
    if (HasPagination(file)) {
      includes.project.push_back("stubkit/page_range.h");
    }
  }
  void AddSourceIncludes(const FileModel& file,
                         Includes& includes) const override {
    if (HasPagination(file)) {
      includes.project.push_back("stubkit/internal/entry/make_page_range.h");
    }
  }
  void PrintClientDeclarations(Printer& w, const FileModel& file,
                               const ServiceModel& service) const override {
    PrintPaginationDeclarations(w, file, service);
  }
  void PrintClientDefinitions(Printer& w, const FileModel& file,
                              const ServiceModel& service) const override {
    PrintPaginationDefinitions(w, file, service);
  }
};

}  // namespace

const Convention* PaginationConvention() {
  static const Convention* const kUnit = new Pagination();
  return kUnit;
}

}  // namespace generator
}  // namespace stubkit
