// Copyright 2026 The stubkit Authors.
//
// The connection layer: SConnection (one call under the retry rules; what
// users mock), MakeSConnection, and in the source SConnectionImpl (the
// runtime's retry loops over a stub stack).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/generator/printers.h"

namespace stubkit {
namespace generator {
namespace {

// Prints "<signature> override {\n" as a member of the class.
void PrintOverrideHead(Printer& w, const Printer::Vars& vars,
                       const Signature& signature,
                       const Unnamed& unnamed = {}) {
  PrintDeclaration(w, vars, signature, "", " override {", unnamed);
}

// Ends the sync override of a streaming M and opens its async one.
void PrintAsyncOverrideHead(Printer& w, const Printer::Vars& vars, Kind kind) {
  w.Print("  }\n\n");
  PrintOverrideHead(w, vars,
                    *FindSignature(Layer::kConnection, kind, Variant::kAsync));
}

// The parameters of the lambda that opens one attempt of a stream.
const char kContext[] = "::grpc::ClientContext& context";
const char kAttemptOptions[] = "const ::stubkit::OptionsView& attempt_options";
const char kAttemptRequest[] = "const $Request$& attempt_request";
// How an async server or bidi stream's entry ends: its two callbacks and
// the channel to follow back after a connection failure.
const char kMessageAndDoneTail[] =
    "        },\n"
    "        ::std::move(on_message), ::std::move(on_done), channel_);\n";
// A sync stream's: the channel to follow back after a connection failure.
const char kChannelTail[] = "        }, channel_);\n";

// The runtime entry point that runs a stream, called with the method, the
// options, the request (for server streams) and a lambda that opens one
// attempt through the stub.
struct StreamEntry {
  const char* prefix;  // "return " or ""
  const char* entry;   // in ::stubkit::internal
  bool with_request;
  std::vector<std::string> params;  // the lambda's
  const char* stub_method;
  std::vector<std::string> args;  // of the stub call
  const char* tail;               // after the lambda's call
};

void PrintStreamEntry(Printer& w, const Printer::Vars& vars,
                      const StreamEntry& e) {
  w.Print(vars,
          absl::StrCat(
              "    ", e.prefix, "::stubkit::internal::", e.entry,
              "<$Service$Client::$Method$ResumeOption, $Request$, "
              "$Response$>(\n",
              e.with_request
                  ? "        $Service$Methods::k$Method$, options, request,\n"
                  : "        $Service$Methods::k$Method$, options,\n",
              "        [stub = stub_](", absl::StrJoin(e.params, ", "), ") {\n",
              "          return stub->", e.stub_method, "(",
              absl::StrJoin(e.args, ", "), ");\n", e.tail));
}

// SConnectionImpl's M (and AsyncM): the runtime's loop for the kind over
// the stub.
void PrintConnectionImplMethod(Printer& w, const Printer::Vars& mv,
                               const MethodModel& method) {
  w.Print("\n");
  PrintOverrideHead(
      w, mv, *FindSignature(Layer::kConnection, method.kind, Variant::kSync));
  switch (method.kind) {
    case Kind::kUnary:
      w.Print(mv,
              "    return ::stubkit::internal::RunUnary<$Response$>(\n"
              "        $Service$Methods::k$Method$, options, request,\n"
              "        [&](::grpc::ClientContext& context) {\n"
              "          return stub_->$Method$(context, options, request);\n"
              "        },\n"
              "        [&] { return Async$Method$Attempt(request); }, "
              "channel_);\n"
              "  }\n\n");
      PrintOverrideHead(
          w, mv,
          *FindSignature(Layer::kConnection, method.kind, Variant::kAsync));
      w.Print(mv,
              "    ::stubkit::internal::RunAsyncUnary<$Response$>("
              "$Service$Methods::k$Method$, options, "
              "Async$Method$Attempt(request), ::std::move(done), channel_);\n");
      break;
    case Kind::kServerStreaming:
      // The reader outlives this call, so the lambda owns the stub.
      PrintStreamEntry(w, mv,
                       {"return ",
                        "OpenServerStream",
                        true,
                        {kContext, kAttemptOptions, kAttemptRequest},
                        "$Method$",
                        {"context", "attempt_options", "attempt_request"},
                        kChannelTail});
      PrintAsyncOverrideHead(w, mv, method.kind);
      PrintStreamEntry(
          w, mv,
          {"return ",
           "StartAsyncServerStream",
           true,
           {kContext, kAttemptOptions, kAttemptRequest,
            "::grpc::ClientReadReactor<$Response$>* reactor"},
           "Async$Method$",
           {"context", "attempt_options", "attempt_request", "reactor"},
           kMessageAndDoneTail});
      break;
    case Kind::kClientStreaming:
      // The stream outlives this call and opens one attempt per retry, so
      // the lambda owns the stub.
      PrintStreamEntry(w, mv,
                       {"return ",
                        "OpenClientStream",
                        false,
                        {kContext, kAttemptOptions, "$Response$* response"},
                        "$Method$",
                        {"context", "attempt_options", "response"},
                        kChannelTail});
      PrintAsyncOverrideHead(w, mv, method.kind);
      PrintStreamEntry(w, mv,
                       {"return ",
                        "StartAsyncClientStream",
                        false,
                        {kContext, kAttemptOptions, "$Response$* response",
                         "::grpc::ClientWriteReactor<$Request$>* reactor"},
                        "Async$Method$",
                        {"context", "attempt_options", "response", "reactor"},
                        "        },\n"
                        "        ::std::move(done), channel_);\n"});
      break;
    case Kind::kBidi:
      PrintStreamEntry(w, mv,
                       {"return ",
                        "OpenBidiStream",
                        false,
                        {kContext, kAttemptOptions},
                        "$Method$",
                        {"context", "attempt_options"},
                        kChannelTail});
      PrintAsyncOverrideHead(w, mv, method.kind);
      PrintStreamEntry(
          w, mv,
          {"return ",
           "StartAsyncBidiStream",
           false,
           {kContext, kAttemptOptions,
            "::grpc::ClientBidiReactor<$Request$, $Response$>* reactor"},
           "Async$Method$",
           {"context", "attempt_options", "reactor"},
           kMessageAndDoneTail});
      break;
  }
  w.Print("  }\n");
}

void PrintConnectionImpl(Printer& w, const FileModel& file,
                         const ServiceModel& service) {
  w.Print(ServiceVars(file, service),
          "class $Service$ConnectionImpl : public $Service$Connection {\n"
          " public:\n");
  // `channel`: the one the stub stack calls through, when the connection
  // was made over a channel; unary retry waits follow it back after a
  // connection failure (stubkit/internal/connection_channel.h).
  w.Print(ServiceVars(file, service),
          "  explicit $Service$ConnectionImpl("
          "::std::shared_ptr<$Service$Stub> stub, "
          "::std::shared_ptr<::stubkit::internal::ConnectionChannel> channel)\n"
          "      : stub_(::std::move(stub)), "
          "channel_(::std::move(channel)) {}\n");
  for (const MethodModel& method : service.methods) {
    PrintConnectionImplMethod(w, MethodVars(file, service, method), method);
  }
  w.Print("\n private:\n");
  for (const MethodModel& method : service.methods) {
    if (method.kind != Kind::kUnary) continue;
    // An attempt that owns the stub and a copy of the request: async and
    // hedged attempts may outlive the call that started them. Not a
    // std::function: the async loop stores it in the call's one allocation.
    w.Print(
        MethodVars(file, service, method),
        "  ::stubkit::internal::AsyncUnaryAttempt<$Service$Stub, $Request$, "
        "$Response$, &$Service$Stub::Async$Method$> "
        "Async$Method$Attempt(const $Request$& request) const {\n"
        "    return {stub_, request};\n"
        "  }\n\n");
  }
  w.Print(ServiceVars(file, service),
          "  ::std::shared_ptr<$Service$Stub> stub_;\n"
          "  ::std::shared_ptr<::stubkit::internal::ConnectionChannel> "
          "channel_;\n"
          "};\n\n");
}

// "::std::shared_ptr<SConnection> MakeSConnection(`first`, const
// ::stubkit::Options& options)": declared (with " = {}") or defined.
void PrintMakeConnectionHead(Printer& w, const Printer::Vars& vars,
                             const std::string& first, bool declaration) {
  w.Print(vars, absl::StrCat("::std::shared_ptr<$Service$Connection> "
                             "Make$Service$Connection(",
                             first, ", const ::stubkit::Options& options",
                             declaration ? " = {});\n" : ") {\n"));
}

}  // namespace

void PrintConnectionHeader(Printer& w, const FileModel& file,
                           const ServiceModel& service) {
  const Printer::Vars vars = ServiceVars(file, service);
  w.PrintComment(vars,
                 "Runs each $service_full_name$ call under the stubkit retry "
                 "rules. Mock it ($mocks$::Mock$Service$Connection) to test "
                 "code that uses $Service$Client.");
  PrintInterface(w, file, service, vars.at("Service") + "Connection",
                 Layer::kConnection);
  w.PrintComment(vars,
                 "The default connection over `channel`. The decorators in "
                 "`options` ($Service$Client::DecoratorsOption) are applied "
                 "here, once.");
  PrintMakeConnectionHead(w, vars,
                          "::std::shared_ptr<::grpc::ChannelInterface> channel",
                          /*declaration=*/true);
  w.Print("// The default connection over any stub stack, e.g. a mock.\n");
  PrintMakeConnectionHead(w, vars, "::std::shared_ptr<$Service$Stub> stub",
                          /*declaration=*/true);
  w.Print("\n");
}

void PrintConnectionSource(Printer& w, const FileModel& file,
                           const ServiceModel& service) {
  w.Print("namespace {\n\n");
  PrintConnectionImpl(w, file, service);
  const Printer::Vars vars = ServiceVars(file, service);
  w.Print("}  // namespace\n\n");
  PrintMakeConnectionHead(w, vars,
                          "::std::shared_ptr<::grpc::ChannelInterface> channel",
                          /*declaration=*/false);
  w.Print(vars,
          "  return ::std::make_shared<$Service$ConnectionImpl>(\n"
          "      ::stubkit::internal::ApplyDecorators<$Service$Stub>("
          "::std::make_shared<$Service$GrpcStub>("
          "$grpc_class$::NewStub(channel)), "
          "options.get<$Service$Client::DecoratorsOption>()),\n"
          "      ::stubkit::internal::ConnectionChannel::Make(channel));\n"
          "}\n\n");
  PrintMakeConnectionHead(w, vars, "::std::shared_ptr<$Service$Stub> stub",
                          /*declaration=*/false);
  w.Print(vars,
          "  return ::std::make_shared<$Service$ConnectionImpl>(\n"
          "      ::stubkit::internal::ApplyDecorators(::std::move(stub), "
          "options.get<$Service$Client::DecoratorsOption>()),\n"
          "      nullptr);\n"
          "}\n\n");
}

}  // namespace generator
}  // namespace stubkit
