// Copyright 2026 The stubkit Authors.
//
// The generator's printer (src/generator/printer.h) and signature table
// (src/generator/signatures.h).

#include "src/generator/printer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "src/generator/signatures.h"

namespace stubkit {
namespace generator {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::IsNull;
using ::testing::NotNull;

TEST(PrinterTest, SubstitutesVariablesAndDollars) {
  Printer w;
  w.Print({{"name", "Get"}}, "void $name$();  // costs $$1\n");
  EXPECT_THAT(w.error(), IsEmpty());
  EXPECT_EQ(w.Finish(), "void Get();  // costs $1\n");
}

TEST(PrinterTest, UnknownVariableFailsAndPrintsNothingMore) {
  Printer w;
  w.Print("first\n");
  w.Print({{"Method", "Get"}}, "void $Method$($Request$ request);\n");
  w.Print("after\n");
  EXPECT_THAT(w.error(), HasSubstr("template variable $Request$ is not "
                                   "defined"));
  EXPECT_EQ(w.Finish(), "first\n");
}

TEST(PrinterTest, UnpairedDollarFails) {
  Printer w;
  w.Print("costs $1\n");
  EXPECT_THAT(w.error(), HasSubstr("unpaired '$'"));
  EXPECT_EQ(w.Finish(), "");
}

TEST(PrinterTest, CheckTemplate) {
  EXPECT_THAT(CheckTemplate({{"a", "1"}}, "$a$ $$ $a$"), IsEmpty());
  EXPECT_THAT(CheckTemplate({}, "$a$"), HasSubstr("$a$ is not defined"));
  EXPECT_THAT(CheckTemplate({{"a", "1"}}, "$a$ $"), HasSubstr("unpaired"));
}

TEST(PrinterTest, IndentsLinesTheTemplateStartsButNotEmptyOnes) {
  Printer w;
  w.Print("class A {\n");
  w.Indent();
  w.Print({{"x", "int"}}, "void F(\n    $x$ a);\n\nint b;\n");
  w.Outdent();
  w.Print("};\n");
  EXPECT_EQ(w.Finish(),
            "class A {\n"
            "  void F(\n"
            "      int a);\n"
            "\n"
            "  int b;\n"
            "};\n");
}

TEST(PrinterTest, PrintRawKeepsDollarsAndIndentsEveryLine) {
  Printer w;
  w.Indent();
  w.PrintRaw("// costs $1\n//\n// $x$\n");
  w.PrintRaw("no newline");
  w.Outdent();
  EXPECT_THAT(w.error(), IsEmpty());
  EXPECT_EQ(w.Finish(),
            "  // costs $1\n"
            "  //\n"
            "  // $x$\n"
            "  no newline");
}

TEST(PrinterTest, PrintCommentPrintsOneLineAtTheIndentation) {
  // clang-format refills it: the goldens' formatting step.
  Printer w;
  w.PrintComment({{"name", "Zero"}}, "$name$ one\ntwo");
  w.Indent();
  w.PrintComment({{"name", "Zero"}}, "$name$ one two");
  w.Outdent();
  EXPECT_THAT(w.error(), IsEmpty());
  EXPECT_EQ(w.Finish(),
            "// Zero one two\n"
            "  // Zero one two\n");
}

TEST(PrinterTest, PrintCommentFailsOnAnUnknownVariable) {
  Printer w;
  w.PrintComment({}, "about $name$");
  EXPECT_THAT(w.error(), HasSubstr("$name$ is not defined"));
  EXPECT_EQ(w.Finish(), "");
}

TEST(SignaturesTest, EveryKindHasASyncSignatureAtEveryLayer) {
  for (Kind kind : {Kind::kUnary, Kind::kServerStreaming,
                    Kind::kClientStreaming, Kind::kBidi}) {
    for (Layer layer : {Layer::kStub, Layer::kConnection, Layer::kClient}) {
      const std::vector<const Signature*> all = SignaturesFor(layer, kind);
      ASSERT_FALSE(all.empty());
      EXPECT_EQ(all.front()->variant, Variant::kSync);
      EXPECT_EQ(all.front(), FindSignature(layer, kind, Variant::kSync));
    }
  }
  // Every kind has an async form at every layer, and only the unary client
  // returns a future.
  for (Kind kind : {Kind::kUnary, Kind::kServerStreaming,
                    Kind::kClientStreaming, Kind::kBidi}) {
    for (Layer layer : {Layer::kStub, Layer::kConnection, Layer::kClient}) {
      EXPECT_THAT(FindSignature(layer, kind, Variant::kAsync), NotNull());
    }
  }
  EXPECT_THAT(FindSignature(Layer::kClient, Kind::kUnary, Variant::kFuture),
              NotNull());
  EXPECT_THAT(
      FindSignature(Layer::kClient, Kind::kServerStreaming, Variant::kFuture),
      IsNull());
}

// Issue 39, item 16: every async stream form a user calls returns a handle
// to cancel it; the server stream's returned void.
TEST(SignaturesTest, EveryAsyncStreamFormReturnsAHandle) {
  for (Layer layer : {Layer::kConnection, Layer::kClient}) {
    EXPECT_EQ(FindSignature(layer, Kind::kServerStreaming, Variant::kAsync)
                  ->return_type,
              "::stubkit::AsyncStreamReader<$Response$>");
    for (Kind kind : {Kind::kClientStreaming, Kind::kBidi}) {
      EXPECT_EQ(FindSignature(layer, kind, Variant::kAsync)->return_type,
                "::stubkit::AsyncStreamWriter<$Request$>");
    }
  }
}

TEST(SignaturesTest, DeclarationDefinitionAndMockShareOneEntry) {
  const Signature& sync =
      *FindSignature(Layer::kConnection, Kind::kUnary, Variant::kSync);
  EXPECT_EQ(Declaration(sync),
            "::absl::StatusOr<$Response$> $Method$("
            "const ::stubkit::OptionsView& options, const $Request$& request)");
  EXPECT_EQ(Declaration(sync, {"options"}),
            "::absl::StatusOr<$Response$> $Method$("
            "const ::stubkit::OptionsView& /*options*/, "
            "const $Request$& request)");
  EXPECT_EQ(Definition(sync, "C"),
            "::absl::StatusOr<$Response$> C::$Method$("
            "const ::stubkit::OptionsView& options, const $Request$& request)");
  EXPECT_EQ(MockMethod(sync),
            "MOCK_METHOD((::absl::StatusOr<$Response$>), $Method$, "
            "(const ::stubkit::OptionsView&, const $Request$&), (override));");
  EXPECT_EQ(ParamTypes(sync),
            "const ::stubkit::OptionsView&, const $Request$&");
}

TEST(SignaturesTest, ClientDefaultsOnlyInDeclarations) {
  const Signature& sync =
      *FindSignature(Layer::kClient, Kind::kBidi, Variant::kSync);
  EXPECT_THAT(Declaration(sync), HasSubstr("call = {})"));
  EXPECT_THAT(Definition(sync, "C"), HasSubstr("& call)"));
}

TEST(SignaturesTest, PrintsOnOneLineWithTheVariablesSubstituted) {
  const Signature& sync =
      *FindSignature(Layer::kConnection, Kind::kUnary, Variant::kSync);
  Printer w;
  w.Print("class C {\n");
  PrintDeclaration(
      w, {{"Method", "Get"}, {"Request", "Req"}, {"Response", "Resp"}}, sync,
      "virtual ", " = 0;");
  w.Print("};\n");
  PrintDefinition(w,
                  {{"Method", "Get"}, {"Request", "Req"}, {"Response", "Resp"}},
                  sync, "C", " {");
  EXPECT_THAT(w.error(), IsEmpty());
  EXPECT_EQ(
      w.Finish(),
      "class C {\n"
      "  virtual ::absl::StatusOr<Resp> Get(const ::stubkit::OptionsView& "
      "options, const Req& request) = 0;\n"
      "};\n"
      "::absl::StatusOr<Resp> C::Get(const ::stubkit::OptionsView& "
      "options, const Req& request) {\n");
}

TEST(SignaturesTest, MockMethodParenthesizesATypeWithAComma) {
  EXPECT_EQ(
      MockMethod(*FindSignature(Layer::kStub, Kind::kBidi, Variant::kAsync)),
      "MOCK_METHOD((::absl::Status), Async$Method$, "
      "(::grpc::ClientContext&, const ::stubkit::OptionsView&, "
      "(::grpc::ClientBidiReactor<$Request$, $Response$>*)), "
      "(override));");
}

TEST(SignaturesTest, AnUnknownVariableInASignatureFails) {
  Printer w;
  PrintDeclaration(w, {{"Method", "Get"}},
                   *FindSignature(Layer::kClient, Kind::kUnary, Variant::kSync),
                   "", ";");
  EXPECT_THAT(w.error(), HasSubstr("is not defined"));
}

TEST(SignaturesTest, EverySignaturePrintsWithMethodVariablesOnly) {
  const Printer::Vars vars = {
      {"Method", "M"}, {"Request", "Req"}, {"Response", "Resp"}};
  for (Kind kind : {Kind::kUnary, Kind::kServerStreaming,
                    Kind::kClientStreaming, Kind::kBidi}) {
    for (Layer layer : {Layer::kStub, Layer::kConnection, Layer::kClient}) {
      for (const Signature* signature : SignaturesFor(layer, kind)) {
        EXPECT_THAT(CheckTemplate(vars, Declaration(*signature)), IsEmpty());
        EXPECT_THAT(CheckTemplate(vars, Definition(*signature, "C")),
                    IsEmpty());
        EXPECT_THAT(CheckTemplate(vars, MockMethod(*signature)), IsEmpty());
      }
    }
  }
}

}  // namespace
}  // namespace generator
}  // namespace stubkit
