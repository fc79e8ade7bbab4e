// Copyright 2026 The stubkit Authors.
//
// The client layer: SClient, the value type users call. It holds the
// client's Options, their per-method entries resolved once
// (::stubkit::internal::MethodOptionsTable method_options_) and a
// connection; each call layers the per-call options over its method's, its
// service's and the client's (method_options_.View(index, call, options_,
// request)) and hands them to the connection.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/generator/convention.h"
#include "src/generator/names.h"
#include "src/generator/printers.h"

namespace stubkit {
namespace generator {
namespace {

// The comment above the asynchronous members of a method, if any.
const char* AsyncComment(Kind kind) {
  switch (kind) {
    case Kind::kUnary:
      return "$Method$ without blocking: retries wait on a timer, not a "
             "thread.";
    case Kind::kServerStreaming:
      return "$Method$ without blocking: each message goes to "
             "`on_message`, then the final status to `on_done`; the returned "
             "handle cancels it (any thread).";
    case Kind::kBidi:
      return "$Method$ without blocking: write through the returned handle "
             "(any thread); each message goes to `on_message`, then the "
             "final status to `on_done`.";
    case Kind::kClientStreaming:
      return "$Method$ without blocking: write through the returned handle "
             "(any thread); the response, or the final status, goes to "
             "`done`.";
  }
  return "";
}

// The effective options of a call of the method ($view$): with the
// request, for the request-aware idempotency predicate.
const char* ViewOf(Kind kind) {
  return kind == Kind::kClientStreaming || kind == Kind::kBidi
             ? "method_options_.View($Service$Methods::k$Method$, call, "
               "options_)"
             : "method_options_.View($Service$Methods::k$Method$, call, "
               "options_, request)";
}

// The body of SClient's M (or AsyncM): the connection's method of the same
// variant with the call's effective options, $view$; the future wraps the
// callback one.
const char* ClientBody(Kind kind, Variant variant) {
  switch (kind) {
    case Kind::kUnary:
      switch (variant) {
        case Variant::kSync:
          return "  return connection_->$Method$($view$, request);\n";
        case Variant::kFuture:
          // The promise, its shared state and the callback in one
          // allocation.
          return "  auto [future, fulfil] = "
                 "::stubkit::internal::FulfilPromise<$Response$>::Make();\n"
                 "  connection_->Async$Method$($view$, request, fulfil);\n"
                 "  return ::std::move(future);\n";
        case Variant::kAsync:
          return "  connection_->Async$Method$($view$, request, "
                 "::std::move(done));\n";
      }
      break;
    case Kind::kServerStreaming:
      return variant == Variant::kSync
                 ? "  return connection_->$Method$($view$, request);\n"
                 : "  return connection_->Async$Method$($view$, request, "
                   "::std::move(on_message), ::std::move(on_done));\n";
    case Kind::kClientStreaming:
      return variant == Variant::kSync
                 ? "  return connection_->$Method$($view$);\n"
                 : "  return connection_->Async$Method$($view$, "
                   "::std::move(done));\n";
    case Kind::kBidi:
      return variant == Variant::kSync
                 ? "  return connection_->$Method$($view$);\n"
                 : "  return connection_->Async$Method$($view$, "
                   "::std::move(on_message), ::std::move(on_done));\n";
  }
  return "";
}

// How the service's calls are retried, said once on the client class; each
// method then says only what is its own (RetryComment).
std::string ServiceRetryComment(const ServiceModel& service) {
  bool streams = false;
  for (const MethodModel& method : service.methods) {
    streams = streams || method.kind != Kind::kUnary;
  }
  std::string comment =
      "Retries: a call that fails with a retryable code is retried under the "
      "retry policy if its method is idempotent, as each method below says "
      "(from the proto's idempotency_level or google.api.http get or put "
      "binding), and not otherwise; IdempotencyOption, IdempotencyMapOption "
      "and IdempotencyPredicateOption override the proto.";
  if (streams) {
    absl::StrAppend(
        &comment,
        " A stream is reopened only before its first response (client and "
        "bidi streams replaying up to 256 KiB of writes); after it, only its "
        "method's ResumeOption hook resumes it, and setting the hook makes "
        "the call idempotent.");
  }
  return comment;
}

// What differs per method: whether the proto makes it idempotent, and for
// a stream that is not, what makes it retryable.
std::string RetryComment(const MethodModel& method) {
  if (method.idempotent) {
    return absl::StrCat("Idempotent (", method.idempotency_reason,
                        " in the proto).");
  }
  if (method.kind == Kind::kUnary) return "Not idempotent: not retried.";
  return "Not idempotent: not retried unless $Method$ResumeOption or "
         "IdempotencyOption is set.";
}

}  // namespace

void PrintClientHeader(Printer& w, const FileModel& file,
                       const ServiceModel& service) {
  const Printer::Vars vars = ServiceVars(file, service);
  if (!service.comment.empty()) w.PrintRaw(service.comment + "//\n");
  w.PrintComment(
      vars,
      "The client of $service_full_name$: cheap to copy, safe to share "
      "between threads. Every call takes per-call options that "
      "override the client's.");
  w.PrintRaw("//\n");
  w.PrintComment(vars, ServiceRetryComment(service));
  w.Print(vars,
          "class $Service$Client {\n"
          " public:\n");
  w.Indent();
  w.PrintComment(vars,
                 "User decorators of $Service$Stub, applied when the "
                 "connection is made: by Make$Service$Connection, or by the "
                 "constructor that takes a channel.");
  w.Outdent();
  w.Print(vars,
          "  using DecoratorsOption = "
          "::stubkit::DecoratorsOptionFor<$Service$Stub>;\n");
  for (const MethodModel& method : service.methods) {
    if (method.kind == Kind::kUnary) continue;
    const bool server = method.kind == Kind::kServerStreaming;
    w.Indent();
    w.PrintComment(MethodVars(file, service, method),
                   server ? "Resumes a broken $Method$ stream: rewrite the "
                            "request from the last response received; return "
                            "false to report the break instead. Setting it "
                            "makes the call idempotent unless "
                            "IdempotencyOption or IdempotencyMapOption says "
                            "otherwise."
                   : method.kind == Kind::kBidi
                       ? "Resumes a broken $Method$ stream: given the last "
                         "response read, write what restores the server's "
                         "view on the new stream; return false to report "
                         "the break instead. Setting it makes the call "
                         "idempotent unless IdempotencyOption or "
                         "IdempotencyMapOption says otherwise."
                       : "Resumes a broken $Method$ stream whose writes "
                         "outgrew the replay buffer: write what restores the "
                         "server's view on the new stream (`last` is null); "
                         "return false to report the break instead. Setting "
                         "it makes the call idempotent unless "
                         "IdempotencyOption or IdempotencyMapOption says "
                         "otherwise.");
    w.Outdent();
    const Printer::Vars mv = MethodVars(file, service, method);
    w.Print(mv, server ? "  struct $Method$ResumeOption {\n"
                         "    using Type = ::stubkit::ResumeHook<$Request$, "
                         "$Response$>;\n"
                         "    static Type Default() { return nullptr; }\n"
                         "  };\n"
                       : "  struct $Method$ResumeOption {\n"
                         "    using Type = ::stubkit::StreamResumeHook<"
                         "$Request$, $Response$>;\n"
                         "    static Type Default() { return nullptr; }\n"
                         "  };\n");
  }
  for (const Convention* convention : Conventions()) {
    convention->PrintClientOptions(w, file, service);
  }
  w.Print("\n");
  w.Print(vars,
          "  explicit $Service$Client("
          "::std::shared_ptr<::grpc::ChannelInterface> channel, "
          "::stubkit::Options options = {});\n");
  w.Indent();
  w.PrintComment(vars,
                 "Over a connection made by Make$Service$Connection, or a "
                 "mock. It cannot apply decorators: when `options` hold a "
                 "non-empty DecoratorsOption, every call fails with "
                 "INVALID_ARGUMENT before anything is sent.");
  w.Outdent();
  w.Print(vars,
          "  explicit $Service$Client("
          "::std::shared_ptr<$Service$Connection> connection, "
          "::stubkit::Options options = {});\n");
  for (const MethodModel& method : service.methods) {
    const Printer::Vars mv = MethodVars(file, service, method);
    w.Print("\n");
    w.Indent();
    w.PrintRaw(method.comment);
    if (!method.comment.empty()) w.PrintRaw("//\n");
    w.PrintComment(mv, RetryComment(method));
    w.Outdent();
    bool first_async = true;
    for (const Signature* signature :
         SignaturesFor(Layer::kClient, method.kind)) {
      if (signature->variant != Variant::kSync && first_async) {
        w.Indent();
        w.PrintComment(mv, AsyncComment(method.kind));
        w.Outdent();
        first_async = false;
      }
      PrintDeprecated(w, mv, method);
      w.Print(SignatureVars(w, mv, *signature), "  $declaration$;\n");
    }
    for (const Convention* convention : Conventions()) {
      convention->PrintClientMethodDeclarations(w, file, service, method);
    }
  }
  for (const Convention* convention : Conventions()) {
    convention->PrintClientDeclarations(w, file, service);
  }
  w.Print(vars,
          "\n"
          " private:\n"
          "  ::stubkit::Options options_;\n"
          "  // Its MethodOptionsOption entries, resolved once.\n"
          "  ::stubkit::internal::MethodOptionsTable method_options_;\n"
          "  ::std::shared_ptr<$Service$Connection> connection_;\n");
  for (const Convention* convention : Conventions()) {
    convention->PrintClientMembers(w, service);
  }
  w.Print("};\n\n");
}

void PrintClientSource(Printer& w, const FileModel& file,
                       const ServiceModel& service) {
  // The constructors. Both resolve the client's MethodOptionsOption once;
  // a key naming a method this service lacks makes every call fail,
  // unsent (the table's View refuses). The one over a connection cannot
  // apply decorators, so it refuses too when it is given some.
  Printer::Vars vars = ServiceVars(file, service);
  std::vector<std::string> method_names;
  for (const MethodModel& method : service.methods) {
    method_names.push_back(absl::StrCat("\"", method.name, "\""));
  }
  vars["method_names"] = absl::StrJoin(method_names, ", ");
  // The constructor over a channel may still need it after it made the
  // connection (a convention's constructor tail).
  bool keeps_channel = false;
  for (const Convention* convention : Conventions()) {
    keeps_channel = keeps_channel || convention->KeepsChannel(service);
  }
  vars["channel_arg"] = keeps_channel ? "channel" : "::std::move(channel)";
  w.Print(vars,
          "$Service$Client::$Service$Client("
          "::std::shared_ptr<::grpc::ChannelInterface> channel, "
          "::stubkit::Options options)\n"
          "    : options_(::std::move(options)),\n"
          "      method_options_(options_, \"$service_full_name$\", "
          "{$method_names$}),\n"
          "      connection_(Make$Service$Connection($channel_arg$, options_)) "
          "{\n");
  for (const Convention* convention : Conventions()) {
    convention->PrintConstructorTail(w, service, /*from_channel=*/true);
  }
  w.Print("}\n\n");
  w.Print(
      vars,
      "$Service$Client::$Service$Client("
      "::std::shared_ptr<$Service$Connection> connection, "
      "::stubkit::Options options)\n"
      "    : options_(::std::move(options)),\n"
      "      method_options_(options_, \"$service_full_name$\", "
      "{$method_names$}),\n"
      "      connection_(::std::move(connection)) {\n"
      "  method_options_.RefuseDecorators<DecoratorsOption>(\n"
      "      options_, \"Make$Service$Connection\", \"$Service$Client\");\n");
  for (const Convention* convention : Conventions()) {
    convention->PrintConstructorTail(w, service, /*from_channel=*/false);
  }
  w.Print("}\n");
  // The calls.
  for (const MethodModel& method : service.methods) {
    Printer::Vars mv = MethodVars(file, service, method);
    mv["view"] = w.Expand(mv, ViewOf(method.kind));
    for (const Signature* signature :
         SignaturesFor(Layer::kClient, method.kind)) {
      const Printer::Vars sv =
          SignatureVars(w, mv, *signature, "$Service$Client");
      w.Print(sv,
              "\n"
              "$definition$ {\n");
      w.Print(sv, ClientBody(method.kind, signature->variant));
      w.Print("}\n");
    }
    for (const Convention* convention : Conventions()) {
      convention->PrintClientMethodDefinitions(w, file, service, method);
    }
  }
  for (const Convention* convention : Conventions()) {
    convention->PrintClientDefinitions(w, file, service);
  }
}

}  // namespace generator
}  // namespace stubkit
