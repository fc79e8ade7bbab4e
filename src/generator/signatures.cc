// Copyright 2026 The stubkit Authors.

#include "src/generator/signatures.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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
const Param kOnDone{"::stubkit::DoneCallback", "on_done", ""};

constexpr Layout kOnePerLine{};
constexpr Layout kSplitReturn{ParamLayout::kFirstInlineOnePerLine, false, true};
constexpr Layout kJoined{ParamLayout::kBreakJoined, false, false};
constexpr Layout kFirstInline{ParamLayout::kFirstInlineOnePerLine, false,
                              false};
constexpr Layout kReturnApartFirstInline{ParamLayout::kFirstInlineOnePerLine,
                                         true, false};
constexpr Layout kReturnApartInline{ParamLayout::kInlineJoined, true, false};

const std::vector<Signature>& Table() {
  static const auto* const kTable = new std::vector<Signature>{
      // The stub: one attempt.
      {Layer::kStub,
       Kind::kUnary,
       Variant::kSync,
       "::absl::StatusOr<$Response$>",
       "$Method$",
       {kContext, kOptionsView, kRequest},
       kOnePerLine,
       kOnePerLine},
      {Layer::kStub,
       Kind::kUnary,
       Variant::kAsync,
       "void",
       "Async$Method$",
       {kContext, kOptionsView, kRequest, kDone},
       kOnePerLine,
       kOnePerLine},
      {Layer::kStub,
       Kind::kServerStreaming,
       Variant::kSync,
       "::std::unique_ptr<::grpc::ClientReaderInterface<$Response$>>",
       "$Method$",
       {kContext, kOptionsView, kRequest},
       kOnePerLine,
       kOnePerLine},
      {Layer::kStub,
       Kind::kServerStreaming,
       Variant::kAsync,
       "::absl::Status",
       "Async$Method$",
       {kContext,
        kOptionsView,
        kRequest,
        {"::grpc::ClientReadReactor<$Response$>*", "reactor", ""}},
       kOnePerLine,
       kOnePerLine},
      {Layer::kStub,
       Kind::kClientStreaming,
       Variant::kSync,
       "::std::unique_ptr<::grpc::ClientWriterInterface<$Request$>>",
       "$Method$",
       {kContext, kOptionsView, {"$Response$*", "response", ""}},
       kOnePerLine,
       kOnePerLine},
      {Layer::kStub,
       Kind::kBidi,
       Variant::kSync,
       "::std::unique_ptr<::grpc::ClientReaderWriterInterface<$Request$, "
       "$Response$>>",
       "$Method$",
       {kContext, kOptionsView},
       kSplitReturn,
       kSplitReturn},

      // The connection: one call, retried.
      {Layer::kConnection,
       Kind::kUnary,
       Variant::kSync,
       "::absl::StatusOr<$Response$>",
       "$Method$",
       {kOptionsView, kRequest},
       kOnePerLine,
       kOnePerLine},
      {Layer::kConnection,
       Kind::kUnary,
       Variant::kAsync,
       "void",
       "Async$Method$",
       {kOptionsView, kRequest, kDone},
       kOnePerLine,
       kOnePerLine},
      {Layer::kConnection,
       Kind::kServerStreaming,
       Variant::kSync,
       "::stubkit::StreamReader<$Response$>",
       "$Method$",
       {kOptionsView, kRequest},
       kOnePerLine,
       kOnePerLine},
      {Layer::kConnection,
       Kind::kServerStreaming,
       Variant::kAsync,
       "void",
       "Async$Method$",
       {kOptionsView, kRequest, kOnMessage, kOnDone},
       kOnePerLine,
       kOnePerLine},
      {Layer::kConnection,
       Kind::kClientStreaming,
       Variant::kSync,
       "::stubkit::StreamWriter<$Request$, $Response$>",
       "$Method$",
       {kOptionsView},
       kOnePerLine,
       kOnePerLine},
      {Layer::kConnection,
       Kind::kBidi,
       Variant::kSync,
       "::stubkit::StreamReaderWriter<$Request$, $Response$>",
       "$Method$",
       {kOptionsView},
       kOnePerLine,
       kOnePerLine},

      // The client: what users call, with per-call options.
      {Layer::kClient,
       Kind::kUnary,
       Variant::kSync,
       "::absl::StatusOr<$Response$>",
       "$Method$",
       {kRequest, kCall},
       kOnePerLine,
       kJoined},
      {Layer::kClient,
       Kind::kUnary,
       Variant::kFuture,
       "::std::future<::absl::StatusOr<$Response$>>",
       "Async$Method$",
       {kRequest, kCall},
       kOnePerLine,
       kReturnApartFirstInline},
      {Layer::kClient,
       Kind::kUnary,
       Variant::kAsync,
       "void",
       "Async$Method$",
       {kRequest, kDone, kCall},
       kOnePerLine,
       kFirstInline},
      {Layer::kClient,
       Kind::kServerStreaming,
       Variant::kSync,
       "::stubkit::StreamReader<$Response$>",
       "$Method$",
       {kRequest, kCall},
       kOnePerLine,
       kJoined},
      {Layer::kClient,
       Kind::kServerStreaming,
       Variant::kAsync,
       "void",
       "Async$Method$",
       {kRequest, kOnMessage, kOnDone, kCall},
       kOnePerLine,
       kFirstInline},
      {Layer::kClient,
       Kind::kClientStreaming,
       Variant::kSync,
       "::stubkit::StreamWriter<$Request$, $Response$>",
       "$Method$",
       {kCall},
       kOnePerLine,
       kReturnApartInline},
      {Layer::kClient,
       Kind::kBidi,
       Variant::kSync,
       "::stubkit::StreamReaderWriter<$Request$, $Response$>",
       "$Method$",
       {kCall},
       kOnePerLine,
       kReturnApartInline},
  };
  return *kTable;
}

std::string Format(const Signature& signature, const Layout& layout,
                   const std::string& name, bool defaults,
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
  std::string out;
  const std::string& ret = signature.return_type;
  if (layout.split_return) {
    const size_t open = ret.find('<') + 1;
    out = absl::StrCat(ret.substr(0, open), "\n    ", ret.substr(open), "\n",
                       name);
  } else {
    out = absl::StrCat(ret, layout.return_on_own_line ? "\n" : " ", name);
  }
  switch (layout.params) {
    case ParamLayout::kBreakOnePerLine:
      absl::StrAppend(&out, "(\n    ", absl::StrJoin(params, ",\n    "), ")");
      break;
    case ParamLayout::kBreakJoined:
      absl::StrAppend(&out, "(\n    ", absl::StrJoin(params, ", "), ")");
      break;
    case ParamLayout::kFirstInlineOnePerLine:
      absl::StrAppend(&out, "(", absl::StrJoin(params, ",\n    "), ")");
      break;
    case ParamLayout::kInlineJoined:
      absl::StrAppend(&out, "(", absl::StrJoin(params, ", "), ")");
      break;
  }
  return out;
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
  return Format(signature, signature.declaration, signature.name,
                /*defaults=*/true, unnamed);
}

std::string Definition(const Signature& signature, const std::string& cls,
                       const Unnamed& unnamed) {
  return Format(signature, signature.definition,
                absl::StrCat(cls, "::", signature.name), /*defaults=*/false,
                unnamed);
}

std::string MockMethod(const Signature& signature) {
  std::vector<std::string> params;
  for (const Param& param : signature.params) {
    params.push_back(absl::StrCat(param.type, " ", param.name));
  }
  // gMock wants a parenthesized type when it contains a comma.
  return absl::StrCat("MOCK_METHOD((", signature.return_type, "), ",
                      signature.name, ",\n            (",
                      absl::StrJoin(params, ", "),
                      "),\n            (override));\n");
}

std::string ParamTypes(const Signature& signature) {
  std::vector<std::string> types;
  for (const Param& param : signature.params) types.push_back(param.type);
  return absl::StrJoin(types, ", ");
}

}  // namespace generator
}  // namespace stubkit
