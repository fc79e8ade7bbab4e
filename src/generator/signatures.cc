// Copyright 2026 The stubkit Authors.

#include "src/generator/signatures.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace stubkit {
namespace generator {
namespace {

const Param kContext{"::grpc::ClientContext&", "context", ""};
const Param kOptionsView{"const ::stubkit::OptionsView&", "options", ""};
const Param kRequest{"const $Request$&", "request", ""};
const Param kCall{"const ::stubkit::Options&", "call", "{}"};
const Param kDone{"::stubkit::AsyncCallback<$Response$>", "done", ""};
const Param kOnMessage{"::stubkit::MessageCallback<$Response$>", "on_message",
                       ""};
const Param kOnDone{"::stubkit::StreamDoneCallback", "on_done", ""};

const std::vector<Signature>& Table() {
  static const auto* const kTable = new std::vector<Signature>{
      // The stub: one attempt.
      {Layer::kStub,
       Kind::kUnary,
       Variant::kSync,
       "::absl::StatusOr<$Response$>",
       "$Method$",
       {kContext, kOptionsView, kRequest}},
      {Layer::kStub,
       Kind::kUnary,
       Variant::kAsync,
       "void",
       "Async$Method$",
       {kContext, kOptionsView, kRequest, kDone}},
      {Layer::kStub,
       Kind::kServerStreaming,
       Variant::kSync,
       "::std::unique_ptr<::grpc::ClientReaderInterface<$Response$>>",
       "$Method$",
       {kContext, kOptionsView, kRequest}},
      {Layer::kStub,
       Kind::kServerStreaming,
       Variant::kAsync,
       "::absl::Status",
       "Async$Method$",
       {kContext,
        kOptionsView,
        kRequest,
        {"::grpc::ClientReadReactor<$Response$>*", "reactor", ""}}},
      {Layer::kStub,
       Kind::kClientStreaming,
       Variant::kSync,
       "::std::unique_ptr<::grpc::ClientWriterInterface<$Request$>>",
       "$Method$",
       {kContext, kOptionsView, {"$Response$*", "response", ""}}},
      {Layer::kStub,
       Kind::kBidi,
       Variant::kSync,
       "::std::unique_ptr<::grpc::ClientReaderWriterInterface<$Request$, "
       "$Response$>>",
       "$Method$",
       {kContext, kOptionsView}},
      {Layer::kStub,
       Kind::kClientStreaming,
       Variant::kAsync,
       "::absl::Status",
       "Async$Method$",
       {kContext,
        kOptionsView,
        {"$Response$*", "response", ""},
        {"::grpc::ClientWriteReactor<$Request$>*", "reactor", ""}}},
      {Layer::kStub,
       Kind::kBidi,
       Variant::kAsync,
       "::absl::Status",
       "Async$Method$",
       {kContext,
        kOptionsView,
        {"::grpc::ClientBidiReactor<$Request$, $Response$>*", "reactor", ""}}},

      // The connection: one call, retried.
      {Layer::kConnection,
       Kind::kUnary,
       Variant::kSync,
       "::absl::StatusOr<$Response$>",
       "$Method$",
       {kOptionsView, kRequest}},
      {Layer::kConnection,
       Kind::kUnary,
       Variant::kAsync,
       "void",
       "Async$Method$",
       {kOptionsView, kRequest, kDone}},
      {Layer::kConnection,
       Kind::kServerStreaming,
       Variant::kSync,
       "::stubkit::StreamReader<$Response$>",
       "$Method$",
       {kOptionsView, kRequest}},
      {Layer::kConnection,
       Kind::kServerStreaming,
       Variant::kAsync,
       "::stubkit::AsyncStreamReader<$Response$>",
       "Async$Method$",
       {kOptionsView, kRequest, kOnMessage, kOnDone}},
      {Layer::kConnection,
       Kind::kClientStreaming,
       Variant::kSync,
       "::stubkit::StreamWriter<$Request$, $Response$>",
       "$Method$",
       {kOptionsView}},
      {Layer::kConnection,
       Kind::kBidi,
       Variant::kSync,
       "::stubkit::StreamReaderWriter<$Request$, $Response$>",
       "$Method$",
       {kOptionsView}},
      {Layer::kConnection,
       Kind::kClientStreaming,
       Variant::kAsync,
       "::stubkit::AsyncStreamWriter<$Request$>",
       "Async$Method$",
       {kOptionsView, kDone}},
      {Layer::kConnection,
       Kind::kBidi,
       Variant::kAsync,
       "::stubkit::AsyncStreamWriter<$Request$>",
       "Async$Method$",
       {kOptionsView, kOnMessage, kOnDone}},

      // The client: what users call, with per-call options.
      {Layer::kClient,
       Kind::kUnary,
       Variant::kSync,
       "::absl::StatusOr<$Response$>",
       "$Method$",
       {kRequest, kCall}},
      {Layer::kClient,
       Kind::kUnary,
       Variant::kFuture,
       "::std::future<::absl::StatusOr<$Response$>>",
       "Async$Method$",
       {kRequest, kCall}},
      {Layer::kClient,
       Kind::kUnary,
       Variant::kAsync,
       "void",
       "Async$Method$",
       {kRequest, kDone, kCall}},
      {Layer::kClient,
       Kind::kServerStreaming,
       Variant::kSync,
       "::stubkit::StreamReader<$Response$>",
       "$Method$",
       {kRequest, kCall}},
      {Layer::kClient,
       Kind::kServerStreaming,
       Variant::kAsync,
       "::stubkit::AsyncStreamReader<$Response$>",
       "Async$Method$",
       {kRequest, kOnMessage, kOnDone, kCall}},
      {Layer::kClient,
       Kind::kClientStreaming,
       Variant::kSync,
       "::stubkit::StreamWriter<$Request$, $Response$>",
       "$Method$",
       {kCall}},
      {Layer::kClient,
       Kind::kBidi,
       Variant::kSync,
       "::stubkit::StreamReaderWriter<$Request$, $Response$>",
       "$Method$",
       {kCall}},
      {Layer::kClient,
       Kind::kClientStreaming,
       Variant::kAsync,
       "::stubkit::AsyncStreamWriter<$Request$>",
       "Async$Method$",
       {kDone, kCall}},
      {Layer::kClient,
       Kind::kBidi,
       Variant::kAsync,
       "::stubkit::AsyncStreamWriter<$Request$>",
       "Async$Method$",
       {kOnMessage, kOnDone, kCall}},
  };
  return *kTable;
}

// The parameters as "type name", "/*name*/" for the unnamed, with the
// default values if `defaults`.
std::vector<std::string> Params(const Signature& signature, bool defaults,
                                const Unnamed& unnamed) {
  std::vector<std::string> params;
  for (const Param& param : signature.params) {
    std::string text = absl::StrCat(param.type, " ",
                                    unnamed.count(param.name) > 0
                                        ? absl::StrCat("/*", param.name, "*/")
                                        : param.name);
    if (defaults && !param.default_value.empty()) {
      absl::StrAppend(&text, " = ", param.default_value);
    }
    params.push_back(std::move(text));
  }
  return params;
}

// The fixed template `text` filled with `values`, which are text: the
// $Request$ of a type stays in the result for the printer to expand.
std::string Fill(const Printer::Vars& values, absl::string_view text) {
  std::string error;  // none: `text` names only variables of `values`
  return Expand(values, text, &error);
}

}  // namespace

std::vector<const Signature*> SignaturesFor(Layer layer, Kind kind) {
  std::vector<const Signature*> result;
  for (const Signature& signature : Table()) {
    if (signature.layer == layer && signature.kind == kind) {
      result.push_back(&signature);
    }
  }
  return result;
}

const Signature* FindSignature(Layer layer, Kind kind, Variant variant) {
  for (const Signature& signature : Table()) {
    if (signature.layer == layer && signature.kind == kind &&
        signature.variant == variant) {
      return &signature;
    }
  }
  return nullptr;
}

std::string Declaration(const Signature& signature, const Unnamed& unnamed) {
  return Fill(
      {{"return_type", signature.return_type},
       {"name", signature.name},
       {"params", absl::StrJoin(Params(signature, true, unnamed), ", ")}},
      "$return_type$ $name$($params$)");
}

std::string Definition(const Signature& signature, const std::string& cls,
                       const Unnamed& unnamed) {
  return Fill(
      {{"return_type", signature.return_type},
       {"cls", cls},
       {"name", signature.name},
       {"params", absl::StrJoin(Params(signature, false, unnamed), ", ")}},
      "$return_type$ $cls$::$name$($params$)");
}

Printer::Vars SignatureVars(Printer& w, const Printer::Vars& vars,
                            const Signature& signature, const std::string& cls,
                            const Unnamed& unnamed) {
  Printer::Vars result = vars;
  result["declaration"] = w.Expand(vars, Declaration(signature, unnamed));
  if (!cls.empty()) {
    result["definition"] = w.Expand(vars, Definition(signature, cls, unnamed));
  }
  std::vector<std::string> names;
  for (const Param& param : signature.params) names.push_back(param.name);
  result["arguments"] = absl::StrJoin(names, ", ");
  return result;
}

void PrintDeclaration(Printer& w, const Printer::Vars& vars,
                      const Signature& signature, const std::string& prefix,
                      const std::string& suffix, const Unnamed& unnamed) {
  Printer::Vars sv = SignatureVars(w, vars, signature, "", unnamed);
  sv["prefix"] = prefix;
  sv["suffix"] = suffix;
  w.Print(sv, "  $prefix$$declaration$$suffix$\n");
}

void PrintDefinition(Printer& w, const Printer::Vars& vars,
                     const Signature& signature, const std::string& cls,
                     const std::string& suffix, const Unnamed& unnamed) {
  Printer::Vars sv = SignatureVars(w, vars, signature, cls, unnamed);
  sv["suffix"] = suffix;
  w.Print(sv, "$definition$$suffix$\n");
}

std::string MockMethod(const Signature& signature) {
  std::vector<std::string> types;
  for (const Param& param : signature.params) {
    // gMock wants a parenthesized type when it contains a comma.
    types.push_back(param.type.find(',') != std::string::npos
                        ? absl::StrCat("(", param.type, ")")
                        : param.type);
  }
  return Fill({{"return_type", signature.return_type},
               {"name", signature.name},
               {"types", absl::StrJoin(types, ", ")}},
              "MOCK_METHOD(($return_type$), $name$, ($types$), (override));");
}

void PrintMockMethod(Printer& w, const Printer::Vars& vars,
                     const Signature& signature) {
  Printer::Vars sv = vars;
  sv["mock_method"] = w.Expand(vars, MockMethod(signature));
  w.Print(sv, "  $mock_method$\n");
}

std::string ParamTypes(const Signature& signature) {
  std::vector<std::string> types;
  for (const Param& param : signature.params) types.push_back(param.type);
  return absl::StrJoin(types, ", ");
}

}  // namespace generator
}  // namespace stubkit
