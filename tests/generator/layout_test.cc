// Copyright 2026 The stubkit Authors.
//
// The generator's layout of function heads and members (src/generator/
// layout.h). Each expected text is clang-format clean with the repository's
// .clang-format (clang-format 14, checked when the test was written inside
// `class C { ... };`); scripts/check-golden-format.sh checks the generated
// files themselves.

#include "src/generator/layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stubkit {
namespace generator {
namespace {

const std::string kLongType = "::a::very::long_package::name::v1::Response";
const std::string kLongRequest =
    "const ::a::very::long_package::name::v1::GetRequestWithAName& request";

TEST(LayoutTest, OneLineWhenItFits) {
  EXPECT_EQ(LayoutFunctionHead(
                {"virtual ", "int", "Get", {"int a", "int b"}, " = 0;"}, 2),
            "virtual int Get(int a, int b) = 0;");
  EXPECT_EQ(LayoutFunctionHead({"explicit ", "", "C", {"int a"}, ";"}, 2),
            "explicit C(int a);");
}

TEST(LayoutTest, AlignedAfterTheParenthesis) {
  EXPECT_EQ(LayoutFunctionHead({"",
                                "void",
                                "AsyncGet",
                                {"::grpc::ClientContext& context",
                                 "const ::stubkit::OptionsView& options"},
                                " override;"},
                               2),
            "void AsyncGet(::grpc::ClientContext& context,\n"
            "              const ::stubkit::OptionsView& options) override;");
}

TEST(LayoutTest, AlignedAfterALongHead) {
  EXPECT_EQ(LayoutFunctionHead({"virtual ",
                                "::absl::StatusOr<Resp>",
                                "Get",
                                {"const ::stubkit::OptionsView& options",
                                 "const ::a::b::GetRequest& request"},
                                " = 0;"},
                               2),
            "virtual ::absl::StatusOr<Resp> Get(const ::stubkit::OptionsView& "
            "options,\n"
            "                                   const ::a::b::GetRequest& "
            "request) = 0;");
}

TEST(LayoutTest, OverrideGoesToItsOwnLineBeforeAParameterIsSplit) {
  EXPECT_EQ(LayoutFunctionHead(
                {"",
                 "::absl::StatusOr<Resp>",
                 "Get",
                 {"::grpc::ClientContext& context",
                  "const ::stubkit::OptionsView& options", kLongRequest},
                 " override;"},
                2),
            "::absl::StatusOr<Resp> Get(\n"
            "    ::grpc::ClientContext& context, "
            "const ::stubkit::OptionsView& options,\n"
            "    const ::a::very::long_package::name::v1::GetRequestWithAName& "
            "request)\n"
            "    override;");
}

TEST(LayoutTest, ReturnTypeOnItsOwnLineBrokenInItsArguments) {
  EXPECT_EQ(
      LayoutFunctionHead({"",
                          "::std::unique_ptr<::grpc::ClientReaderInterface<" +
                              kLongType + ">>",
                          "Watch",
                          {"::grpc::ClientContext& context"},
                          " override;"},
                         2),
      "::std::unique_ptr<::grpc::ClientReaderInterface<\n"
      "    ::a::very::long_package::name::v1::Response>>\n"
      "Watch(::grpc::ClientContext& context) override;");
}

TEST(LayoutTest, BracedListsAndMembers) {
  EXPECT_EQ(LayoutList("static constexpr ::stubkit::MethodInfo kGet{",
                       {"\"a.very.long_package.name.v1.Service.Get\"",
                        "::stubkit::RpcKind::kUnary",
                        "::stubkit::Idempotency::kIdempotent"},
                       "};", 2),
            "static constexpr ::stubkit::MethodInfo kGet{\n"
            "    \"a.very.long_package.name.v1.Service.Get\", "
            "::stubkit::RpcKind::kUnary,\n"
            "    ::stubkit::Idempotency::kIdempotent};");
  EXPECT_EQ(LayoutVariable("::std::unique_ptr<" + kLongType + "StubInterface>",
                           "grpc_stub_;", 2),
            "::std::unique_ptr<::a::very::long_package::name::v1::"
            "ResponseStubInterface>\n"
            "    grpc_stub_;");
}

TEST(LayoutTest, MockMethods) {
  const std::vector<std::string> params = {"::grpc::ClientContext&",
                                           "const ::stubkit::OptionsView&",
                                           "const ::NoPackageRequest&"};
  EXPECT_EQ(
      LayoutMockMethod("::absl::StatusOr<::NoPackageResponse>", "Lookup",
                       params, 2),
      "MOCK_METHOD((::absl::StatusOr<::NoPackageResponse>), Lookup,\n"
      "            (::grpc::ClientContext&, const ::stubkit::OptionsView&,\n"
      "             const ::NoPackageRequest&),\n"
      "            (override));");
  // On the next line rather than break the return type.
  EXPECT_EQ(LayoutMockMethod("::std::unique_ptr<::grpc::ClientReaderInterface<:"
                             ":NoPackageResponse>>",
                             "Watch", params, 2),
            "MOCK_METHOD(\n"
            "    "
            "(::std::unique_ptr<::grpc::ClientReaderInterface<::"
            "NoPackageResponse>>),\n"
            "    Watch,\n"
            "    (::grpc::ClientContext&, const ::stubkit::OptionsView&,\n"
            "     const ::NoPackageRequest&),\n"
            "    (override));");
  EXPECT_EQ(LayoutMockMethod("void", "F", {"int"}, 2),
            "MOCK_METHOD((void), F, (int), (override));");
}

TEST(LayoutTest, ClassHeads) {
  EXPECT_EQ(LayoutClassHead("MockS", "::a::S", 0),
            "class MockS : public ::a::S {");
  EXPECT_EQ(
      LayoutClassHead("MockLibraryStub",
                      "::stubkit::testing::gen::library::v1::LibraryStub", 0),
      "class MockLibraryStub\n"
      "    : public ::stubkit::testing::gen::library::v1::LibraryStub {");
}

TEST(LayoutTest, CallHeadTooLongBreaksInItsTemplateArguments) {
  EXPECT_EQ(
      LayoutList("return ::stubkit::internal::RunUnary<::a::very::long_package"
                 "::name::v1::Book>(",
                 {"Methods::kGet", "options", "request"}, ");", 4),
      "return ::stubkit::internal::RunUnary<\n"
      "    ::a::very::long_package::name::v1::Book>(\n"
      "    Methods::kGet, options, request);");
  // Aligned after '<' when the arguments fit there.
  EXPECT_EQ(LayoutType("return ::stubkit::internal::OpenBidiStream<"
                       "::stubkit::testing::Item, ::stubkit::testing::Item>",
                       "(", 4),
            "return ::stubkit::internal::OpenBidiStream<::stubkit::testing::"
            "Item,\n"
            "                                           ::stubkit::testing::"
            "Item>(");
}

TEST(LayoutTest, TypeBreaksInTheInnerArgumentsOfItsOnlyArgument) {
  EXPECT_EQ(
      LayoutType("auto writer = ::std::make_unique<::stubkit::internal::"
                 "GrpcStreamWriter<::stubkit::testing::Item, "
                 "::stubkit::testing::SumResponse>>",
                 "();", 4),
      "auto writer = ::std::make_unique<::stubkit::internal::GrpcStreamWriter<"
      "\n"
      "    ::stubkit::testing::Item, ::stubkit::testing::SumResponse>>();");
  EXPECT_EQ(LayoutType("auto [future, fulfil] = ::stubkit::internal::"
                       "FulfilPromise<::google::longrunning::Operation>",
                       "::Make();", 2),
            "auto [future, fulfil] = ::stubkit::internal::FulfilPromise<\n"
            "    ::google::longrunning::Operation>::Make();");
}

TEST(LayoutTest, TypeBreaksAfterTheEqualsWhenItsArgumentsCannot) {
  EXPECT_EQ(
      LayoutType("auto stream = ::std::make_unique<::stubkit::internal::"
                 "GrpcStreamReaderWriter<::stubkit::testing::Item, "
                 "::stubkit::testing::Item>>",
                 "(", 4),
      "auto stream =\n"
      "    ::std::make_unique<::stubkit::internal::GrpcStreamReaderWriter<\n"
      "        ::stubkit::testing::Item, ::stubkit::testing::Item>>(");
}

TEST(LayoutTest, ConstGoesToItsOwnLineLikeOverride) {
  EXPECT_EQ(
      LayoutFunctionHead({"",
                          "::stubkit::internal::AsyncUnaryAttempt<LibraryStub, "
                          "::a::b::GetBookRequest, ::a::b::Book, "
                          "&LibraryStub::AsyncGetBook>",
                          "AsyncGetBookAttempt",
                          {"const ::stubkit::testing::gen::library::v1::"
                           "GetBookRequest& request"},
                          " const {"},
                         2),
      "::stubkit::internal::AsyncUnaryAttempt<LibraryStub, "
      "::a::b::GetBookRequest,\n"
      "                                       ::a::b::Book,\n"
      "                                       &LibraryStub::AsyncGetBook>\n"
      "AsyncGetBookAttempt(\n"
      "    const ::stubkit::testing::gen::library::v1::GetBookRequest& "
      "request)\n"
      "    const {");
}

TEST(LayoutTest, AssignmentBreaksAfterTheEqualsWhenTheRestFitsOnALine) {
  EXPECT_EQ(LayoutType("auto [future, fulfil] = ::stubkit::internal::"
                       "FulfilPromise<::google::protobuf::Empty>",
                       "::Make();", 2),
            "auto [future, fulfil] =\n"
            "    ::stubkit::internal::FulfilPromise<::google::protobuf::Empty>"
            "::Make();");
  EXPECT_EQ(LayoutList("connection_ = ::std::make_shared<"
                       "JobsRefusingConnection>(",
                       {"method_options_.status()"}, ");", 4),
            "connection_ =\n"
            "    ::std::make_shared<JobsRefusingConnection>("
            "method_options_.status());");
}

TEST(LayoutTest, BracedListBrokenAfterItsBraceOnALineOfItsOwn) {
  // Aligned after '(' on a tie of lines...
  EXPECT_EQ(LayoutList("method_options_(",
                       {"options_", "\"x.Y\"",
                        "{\"ReadRowsAndMore\", \"PingPong\", "
                        "\"GetTableOfContents\", \"StreamRows\", "
                        "\"WriteRows\", \"Plain\"}"},
                       "),", 6),
            "method_options_(options_, \"x.Y\",\n"
            "                {\"ReadRowsAndMore\", \"PingPong\", "
            "\"GetTableOfContents\",\n"
            "                 \"StreamRows\", \"WriteRows\", \"Plain\"}),");
  // ...below the head when the list then fits on one line.
  EXPECT_EQ(LayoutList("method_options_(",
                       {"options_", "\"routing.v1.Routed\"",
                        "{\"ReadRows\", \"Ping\", \"GetTable\", "
                        "\"StreamRows\", \"WriteRows\", \"Plain\"}"},
                       "),", 6),
            "method_options_(\n"
            "    options_, \"routing.v1.Routed\",\n"
            "    {\"ReadRows\", \"Ping\", \"GetTable\", \"StreamRows\", "
            "\"WriteRows\", \"Plain\"}),");
}

TEST(LayoutTest, OverrideMovedDownBeatsAParameterSplitOnATie) {
  const std::vector<std::string> params = {
      "const ::stubkit::OptionsView& options",
      "const ::stubkit::testing::gen::lro::v1::StartJobRequest& request",
      "::stubkit::AsyncCallback<::google::longrunning::Operation> done"};
  EXPECT_EQ(
      LayoutFunctionHead({"", "void", "AsyncStartJob", params, " override {"},
                         2),
      "void AsyncStartJob(\n"
      "    const ::stubkit::OptionsView& options,\n"
      "    const ::stubkit::testing::gen::lro::v1::StartJobRequest& request,\n"
      "    ::stubkit::AsyncCallback<::google::longrunning::Operation> done)\n"
      "    override {");
  // One split parameter takes fewer lines than the moved " override".
  EXPECT_EQ(LayoutFunctionHead({"",
                                "void",
                                "AsyncPeekJob",
                                {"const ::stubkit::OptionsView& options",
                                 "const ::stubkit::testing::gen::lro::v1::Job& "
                                 "request",
                                 params[2]},
                                " override {"},
                               2),
            "void AsyncPeekJob(const ::stubkit::OptionsView& options,\n"
            "                  const ::stubkit::testing::gen::lro::v1::Job& "
            "request,\n"
            "                  ::stubkit::AsyncCallback<::google::longrunning::"
            "Operation>\n"
            "                      done) override {");
}

TEST(LayoutTest, CommentInPlaceOfANameIsNotIndented) {
  EXPECT_EQ(LayoutFunctionHead(
                {"",
                 "::absl::StatusOr<::stubkit::testing::gen::library::v1::Book>",
                 "CreateBook",
                 {"const ::stubkit::OptionsView& /*options*/",
                  "const ::stubkit::testing::gen::library::v1::"
                  "CreateBookRequest& /*request*/"},
                 " override {"},
                2),
            "::absl::StatusOr<::stubkit::testing::gen::library::v1::Book> "
            "CreateBook(\n"
            "    const ::stubkit::OptionsView& /*options*/,\n"
            "    const ::stubkit::testing::gen::library::v1::"
            "CreateBookRequest&\n"
            "    /*request*/) override {");
}

TEST(LayoutTest, CallBrokenAfterTheEqualsTakesItsArguments8ColumnsIn) {
  EXPECT_EQ(
      LayoutList("auto stream = ::std::make_unique<::stubkit::internal::"
                 "GrpcStreamReaderWriter<::stubkit::testing::Item, "
                 "::stubkit::testing::Item>>(",
                 {"StreamServiceMethods::kDouble"}, ");", 4),
      "auto stream =\n"
      "    ::std::make_unique<::stubkit::internal::GrpcStreamReaderWriter<\n"
      "        ::stubkit::testing::Item, ::stubkit::testing::Item>>(\n"
      "        StreamServiceMethods::kDouble);");
}

TEST(LayoutTest, LambdaHeadAlignedOrBrokenLikeAFunctionHead) {
  EXPECT_EQ(
      LayoutFunctionHead({"",
                          "",
                          "[stub = stub_]",
                          {"::grpc::ClientContext& context",
                           "const ::stubkit::OptionsView& attempt_options",
                           "const ::NoPackageRequest& attempt_request",
                           "::grpc::ClientReadReactor<::NoPackageResponse>"
                           "* reactor"},
                          " {"},
                         8),
      "[stub = stub_](\n"
      "    ::grpc::ClientContext& context,\n"
      "    const ::stubkit::OptionsView& attempt_options,\n"
      "    const ::NoPackageRequest& attempt_request,\n"
      "    ::grpc::ClientReadReactor<::NoPackageResponse>* reactor) {");
  EXPECT_EQ(LayoutFunctionHead({"",
                                "",
                                "[&]",
                                {"::grpc::ClientContext& context",
                                 "::routing::v1::ReadResponse* response"},
                                " {"},
                               8),
            "[&](::grpc::ClientContext& context,\n"
            "    ::routing::v1::ReadResponse* response) {");
}

TEST(LayoutTest, NestedCallArgumentLaidOutAsACallFromItsColumn) {
  // Aligned after '(' when the inner call's arguments fit there...
  EXPECT_EQ(LayoutList("return MakeRoutedConnection(",
                       {"::std::make_shared<RoutedGrpcStub>(::routing::v1::"
                        "Routed::NewStub(channel))",
                        "options"},
                       ");", 2),
            "return MakeRoutedConnection(::std::make_shared<RoutedGrpcStub>(\n"
            "                                ::routing::v1::Routed::NewStub("
            "channel)),\n"
            "                            options);");
  // ...else 4 columns in.
  EXPECT_EQ(LayoutList("return MakeLibraryConnection(",
                       {"::std::make_shared<LibraryGrpcStub>(::stubkit::testing"
                        "::gen::library::v1::Library::NewStub(channel))",
                        "options"},
                       ");", 2),
            "return MakeLibraryConnection(\n"
            "    ::std::make_shared<LibraryGrpcStub>(\n"
            "        ::stubkit::testing::gen::library::v1::Library::NewStub("
            "channel)),\n"
            "    options);");
}

TEST(LayoutTest, NestedCallHeadOfAnAssignment) {
  int offset = 0;
  EXPECT_EQ(LayoutNestedCallHead("connection_",
                                 "::std::make_shared<JobsRefusingConnection>(",
                                 "::absl::InvalidArgumentError(", 4, &offset),
            "connection_ =\n"
            "    ::std::make_shared<JobsRefusingConnection>(::absl::"
            "InvalidArgumentError(");
  EXPECT_EQ(offset, 8);
  EXPECT_EQ(LayoutNestedCallHead(
                "connection_", "::std::make_shared<LibraryRefusingConnection>(",
                "::absl::InvalidArgumentError(", 4, &offset),
            "connection_ = ::std::make_shared<LibraryRefusingConnection>(\n"
            "    ::absl::InvalidArgumentError(");
  EXPECT_EQ(offset, 8);
  EXPECT_EQ(LayoutNestedCallHead("x", "f(", "g(", 4, &offset), "x = f(g(");
  EXPECT_EQ(offset, 4);
}

TEST(LayoutTest, StringLiteralTooLongBrokenAfterASpace) {
  EXPECT_EQ(LayoutStringLiterals(
                {"stubkit.testing.gen.library.v1.Library: DecoratorsOption "
                 "must be given to ",
                 "the call was not sent"},
                "));", 12),
            "\"stubkit.testing.gen.library.v1.Library: DecoratorsOption must "
            "be \"\n"
            "\"given to \"\n"
            "\"the call was not sent\"));");
}

TEST(LayoutTest, MockReturnTypeBrokenInTheFewestNestedArgumentLists) {
  // Both layouts break the return type: on the next line it breaks in the
  // outer arguments, aligned in the inner ones; the outer break wins.
  EXPECT_EQ(LayoutMockMethod(
                "::std::unique_ptr<::grpc::ClientReaderInterface<"
                "::pages::v1::ListBooksResponse>>",
                "StreamBooks",
                {"::grpc::ClientContext&", "const ::stubkit::OptionsView&",
                 "const ::pages::v1::ListBooksRequest&"},
                2),
            "MOCK_METHOD(\n"
            "    (::std::unique_ptr<\n"
            "        ::grpc::ClientReaderInterface<::pages::v1::"
            "ListBooksResponse>>),\n"
            "    StreamBooks,\n"
            "    (::grpc::ClientContext&, const ::stubkit::OptionsView&,\n"
            "     const ::pages::v1::ListBooksRequest&),\n"
            "    (override));");
}

TEST(LayoutTest, OnATieOfLinesTheFewestBreaksInsideParametersWin) {
  // Aligned breaks two parameters, below the head one: below wins.
  EXPECT_EQ(LayoutFunctionHead(
                {"",
                 "void",
                 "AsyncClient",
                 {"const ::stubkit::testing::gen::deeply::nested::pkg::"
                  "Options& request",
                  "::stubkit::AsyncCallback<::stubkit::testing::gen::deeply::"
                  "nested::pkg::Status> done",
                  "const ::stubkit::Options& call = {}"},
                 ";"},
                2),
            "void AsyncClient(\n"
            "    const ::stubkit::testing::gen::deeply::nested::pkg::Options& "
            "request,\n"
            "    ::stubkit::AsyncCallback<\n"
            "        ::stubkit::testing::gen::deeply::nested::pkg::Status>\n"
            "        done,\n"
            "    const ::stubkit::Options& call = {});");
  // A type broken in its template arguments counts as a break too.
  EXPECT_EQ(LayoutFunctionHead({"explicit ",
                                "",
                                "BuilderGrpcStub",
                                {"::std::unique_ptr<::stubkit::testing::lro::"
                                 "Builder::StubInterface> grpc_stub"},
                                ""},
                               2),
            "explicit BuilderGrpcStub(\n"
            "    ::std::unique_ptr<::stubkit::testing::lro::Builder::"
            "StubInterface>\n"
            "        grpc_stub)");
  // One break each (a parameter, " override" moved down): aligned.
  EXPECT_EQ(
      LayoutFunctionHead(
          {"",
           "void",
           "AsyncGet",
           {"::grpc::ClientContext& context",
            "const ::stubkit::OptionsView& options",
            "const ::stubkit::testing::gen::common::Entry_Ref& request",
            "::stubkit::AsyncCallback<::stubkit::testing::gen::common::Entry> "
            "done"},
           " override;"},
          2),
      "void AsyncGet(::grpc::ClientContext& context,\n"
      "              const ::stubkit::OptionsView& options,\n"
      "              const ::stubkit::testing::gen::common::Entry_Ref& "
      "request,\n"
      "              ::stubkit::AsyncCallback<::stubkit::testing::gen::common::"
      "Entry>\n"
      "                  done) override;");
}

TEST(LayoutTest, CallArgumentsBelowTheHeadWhenAlignedTakesMoreLines) {
  EXPECT_EQ(LayoutList("::stubkit::internal::RunAsyncUnary<::demo::Entry>(",
                       {"KeyValueMethods::kGet", "options",
                        "AsyncGetAttempt(request)", "::std::move(done)"},
                       ");", 4),
            "::stubkit::internal::RunAsyncUnary<::demo::Entry>(\n"
            "    KeyValueMethods::kGet, options, AsyncGetAttempt(request),\n"
            "    ::std::move(done));");
}

TEST(LayoutTest, MockParameterTypeBrokenInItsTemplateArguments) {
  // Too long on either layout: aligned, the type broken.
  EXPECT_EQ(
      LayoutMockMethod(
          "void", "AsyncClient",
          {"::grpc::ClientContext&", "const ::stubkit::OptionsView&",
           "const ::stubkit::testing::gen::deeply::nested::pkg::"
           "Options&",
           "::stubkit::AsyncCallback<::stubkit::testing::gen::"
           "deeply::nested::pkg::Status>"},
          2),
      "MOCK_METHOD((void), AsyncClient,\n"
      "            (::grpc::ClientContext&, const ::stubkit::OptionsView&,\n"
      "             const ::stubkit::testing::gen::deeply::nested::pkg::"
      "Options&,\n"
      "             ::stubkit::AsyncCallback<\n"
      "                 ::stubkit::testing::gen::deeply::nested::pkg::Status>),"
      "\n"
      "            (override));");
  // Whole on the next line: that rather than break it.
  EXPECT_EQ(
      LayoutMockMethod(
          "void", "AsyncGetBook",
          {"::grpc::ClientContext&", "const ::stubkit::OptionsView&",
           "const ::stubkit::testing::gen::library::v1::"
           "GetBookRequest&",
           "::stubkit::AsyncCallback<::stubkit::testing::gen::"
           "library::v1::Book>"},
          2),
      "MOCK_METHOD(\n"
      "    (void), AsyncGetBook,\n"
      "    (::grpc::ClientContext&, const ::stubkit::OptionsView&,\n"
      "     const ::stubkit::testing::gen::library::v1::GetBookRequest&,\n"
      "     ::stubkit::AsyncCallback<::stubkit::testing::gen::library::v1::"
      "Book>),\n"
      "    (override));");
}

TEST(LayoutTest, ArgumentsFollowABrokenCallHeadWhenTheyFit) {
  EXPECT_EQ(
      LayoutList("return ::stubkit::StreamReaderWriter<::stubkit::testing"
                 "::gen::common::Entry, ::stubkit::testing::gen::common::"
                 "Entry>(",
                 {"::std::move(stream)"}, ");", 4),
      "return ::stubkit::StreamReaderWriter<\n"
      "    ::stubkit::testing::gen::common::Entry,\n"
      "    ::stubkit::testing::gen::common::Entry>(::std::move(stream));");
}

TEST(LayoutTest, CallInACallInACallBrokenAtEachLevel) {
  EXPECT_EQ(LayoutList("return MakeEmptyConnection(",
                       {"::std::make_shared<EmptyGrpcStub>(::stubkit::testing::"
                        "gen::deeply::nested::pkg::Empty::NewStub(channel))",
                        "options"},
                       ");", 2),
            "return MakeEmptyConnection(\n"
            "    ::std::make_shared<EmptyGrpcStub>(\n"
            "        ::stubkit::testing::gen::deeply::nested::pkg::Empty::"
            "NewStub(\n"
            "            channel)),\n"
            "    options);");
}

// A call with no arguments as an argument ("status()"): its empty argument
// list became an empty item, whose back() was read (undefined behaviour;
// clang's UBSan in scripts/sanitize.sh's ASan pass stopped the plugin on
// every proto with a pointer-overflow report).
TEST(LayoutTest, ArgumentThatIsACallWithoutArguments) {
  EXPECT_EQ(
      LayoutList(
          "connection_ = ::std::make_shared<StreamServiceRefusingConnection>(",
          {"method_options_.status()"}, ");", 4),
      "connection_ = ::std::make_shared<StreamServiceRefusingConnection>(\n"
      "    method_options_.status());");
}

}  // namespace
}  // namespace generator
}  // namespace stubkit
