// Copyright 2026 The stubkit Authors.
//
// The connection layer: SConnection (one call under the retry rules; what
// users mock), MakeSConnection, and in the source SConnectionImpl (the
// runtime's retry loops over a stub stack).

#include <string>

#include "src/generator/printers.h"

namespace stubkit {
namespace generator {
namespace {

// SConnectionImpl's M and AsyncM: the runtime's loop for the kind over the
// stub. A stream's loop opens each attempt through a lambda; the stream
// outlives this call (and a client or bidi stream opens one attempt per
// retry), so the lambda owns the stub. The channel lets a retry wait follow
// the connection back after a connection failure.
void PrintConnectionImplMethod(Printer& w, const Printer::Vars& mv,
                               const MethodModel& method) {
  const Printer::Vars sync = SignatureVars(
      w, mv, *FindSignature(Layer::kConnection, method.kind, Variant::kSync));
  const Printer::Vars async = SignatureVars(
      w, mv, *FindSignature(Layer::kConnection, method.kind, Variant::kAsync));
  switch (method.kind) {
    case Kind::kUnary:
      w.Print(sync,
              "\n"
              "  $declaration$ override {\n"
              "    return ::stubkit::internal::RunUnary<$Response$>(\n"
              "        $Service$Methods::k$Method$, options, request,\n"
              "        [&](::grpc::ClientContext& context) {\n"
              "          return stub_->$Method$(context, options, request);\n"
              "        },\n"
              "        [&] { return Async$Method$Attempt(request); }, "
              "channel_);\n"
              "  }\n\n");
      w.Print(async,
              "  $declaration$ override {\n"
              "    ::stubkit::internal::RunAsyncUnary<$Response$>("
              "$Service$Methods::k$Method$, options, "
              "Async$Method$Attempt(request), ::std::move(done), channel_);\n"
              "  }\n");
      break;
    case Kind::kServerStreaming:
      w.Print(sync,
              "\n"
              "  $declaration$ override {\n"
              "    return ::stubkit::internal::OpenServerStream<"
              "$Service$Client::$Method$ResumeOption, $Request$, $Response$>(\n"
              "        $Service$Methods::k$Method$, options, request,\n"
              "        [stub = stub_](::grpc::ClientContext& context, "
              "const ::stubkit::OptionsView& attempt_options, "
              "const $Request$& attempt_request) {\n"
              "          return stub->$Method$(context, attempt_options, "
              "attempt_request);\n"
              "        }, channel_);\n"
              "  }\n\n");
      w.Print(async,
              "  $declaration$ override {\n"
              "    return ::stubkit::internal::StartAsyncServerStream<"
              "$Service$Client::$Method$ResumeOption, $Request$, $Response$>(\n"
              "        $Service$Methods::k$Method$, options, request,\n"
              "        [stub = stub_](::grpc::ClientContext& context, "
              "const ::stubkit::OptionsView& attempt_options, "
              "const $Request$& attempt_request, "
              "::grpc::ClientReadReactor<$Response$>* reactor) {\n"
              "          return stub->Async$Method$(context, attempt_options, "
              "attempt_request, reactor);\n"
              "        },\n"
              "        ::std::move(on_message), ::std::move(on_done), "
              "channel_);\n"
              "  }\n");
      break;
    case Kind::kClientStreaming:
      w.Print(sync,
              "\n"
              "  $declaration$ override {\n"
              "    return ::stubkit::internal::OpenClientStream<"
              "$Service$Client::$Method$ResumeOption, $Request$, $Response$>(\n"
              "        $Service$Methods::k$Method$, options,\n"
              "        [stub = stub_](::grpc::ClientContext& context, "
              "const ::stubkit::OptionsView& attempt_options, "
              "$Response$* response) {\n"
              "          return stub->$Method$(context, attempt_options, "
              "response);\n"
              "        }, channel_);\n"
              "  }\n\n");
      w.Print(async,
              "  $declaration$ override {\n"
              "    return ::stubkit::internal::StartAsyncClientStream<"
              "$Service$Client::$Method$ResumeOption, $Request$, $Response$>(\n"
              "        $Service$Methods::k$Method$, options,\n"
              "        [stub = stub_](::grpc::ClientContext& context, "
              "const ::stubkit::OptionsView& attempt_options, "
              "$Response$* response, "
              "::grpc::ClientWriteReactor<$Request$>* reactor) {\n"
              "          return stub->Async$Method$(context, attempt_options, "
              "response, reactor);\n"
              "        },\n"
              "        ::std::move(done), channel_);\n"
              "  }\n");
      break;
    case Kind::kBidi:
      w.Print(sync,
              "\n"
              "  $declaration$ override {\n"
              "    return ::stubkit::internal::OpenBidiStream<"
              "$Service$Client::$Method$ResumeOption, $Request$, $Response$>(\n"
              "        $Service$Methods::k$Method$, options,\n"
              "        [stub = stub_](::grpc::ClientContext& context, "
              "const ::stubkit::OptionsView& attempt_options) {\n"
              "          return stub->$Method$(context, attempt_options);\n"
              "        }, channel_);\n"
              "  }\n\n");
      w.Print(async,
              "  $declaration$ override {\n"
              "    return ::stubkit::internal::StartAsyncBidiStream<"
              "$Service$Client::$Method$ResumeOption, $Request$, $Response$>(\n"
              "        $Service$Methods::k$Method$, options,\n"
              "        [stub = stub_](::grpc::ClientContext& context, "
              "const ::stubkit::OptionsView& attempt_options, "
              "::grpc::ClientBidiReactor<$Request$, $Response$>* reactor) {\n"
              "          return stub->Async$Method$(context, attempt_options, "
              "reactor);\n"
              "        },\n"
              "        ::std::move(on_message), ::std::move(on_done), "
              "channel_);\n"
              "  }\n");
      break;
  }
}

void PrintConnectionImpl(Printer& w, const FileModel& file,
                         const ServiceModel& service) {
  w.Print(ServiceVars(file, service),
          "class $Service$ConnectionImpl : public $Service$Connection {\n"
          " public:\n");
  // `channel`: the one the stub stack calls through, when the connection
  // was made over a channel; unary retry waits follow it back after a
  // connection failure (stubkit/internal/engine/connection_channel.h).
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
  w.Print(vars,
          "::std::shared_ptr<$Service$Connection> Make$Service$Connection("
          "::std::shared_ptr<::grpc::ChannelInterface> channel, "
          "const ::stubkit::Options& options = {});\n"
          "// The default connection over any stub stack, e.g. a mock.\n"
          "::std::shared_ptr<$Service$Connection> Make$Service$Connection("
          "::std::shared_ptr<$Service$Stub> stub, "
          "const ::stubkit::Options& options = {});\n"
          "\n");
}

void PrintConnectionSource(Printer& w, const FileModel& file,
                           const ServiceModel& service) {
  w.Print("namespace {\n\n");
  PrintConnectionImpl(w, file, service);
  const Printer::Vars vars = ServiceVars(file, service);
  w.Print("}  // namespace\n\n");
  w.Print(vars,
          "::std::shared_ptr<$Service$Connection> Make$Service$Connection("
          "::std::shared_ptr<::grpc::ChannelInterface> channel, "
          "const ::stubkit::Options& options) {\n"
          "  return ::std::make_shared<$Service$ConnectionImpl>(\n"
          "      ::stubkit::internal::ApplyDecorators<$Service$Stub>("
          "::std::make_shared<$Service$GrpcStub>("
          "$grpc_class$::NewStub(channel)), "
          "options.get<$Service$Client::DecoratorsOption>()),\n"
          "      ::stubkit::internal::ConnectionChannel::Make(channel));\n"
          "}\n"
          "\n"
          "::std::shared_ptr<$Service$Connection> Make$Service$Connection("
          "::std::shared_ptr<$Service$Stub> stub, "
          "const ::stubkit::Options& options) {\n"
          "  return ::std::make_shared<$Service$ConnectionImpl>(\n"
          "      ::stubkit::internal::ApplyDecorators(::std::move(stub), "
          "options.get<$Service$Client::DecoratorsOption>()),\n"
          "      nullptr);\n"
          "}\n\n");
}

}  // namespace generator
}  // namespace stubkit
