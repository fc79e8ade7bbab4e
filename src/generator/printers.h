// Copyright 2026 The stubkit Authors.
//
// The printers of protoc-gen-stubkit, one per layer of the generated code,
// each with its header (.stubkit.h) and source (.stubkit.cc) halves:
//
//   stub_printer.cc        SMethods, SStub, SStubDecorator, SGrpcStub
//   connection_printer.cc  SConnection, its implementations, MakeSConnection
//   client_printer.cc      SClient
//   mock_printer.cc        stubkit_mocks::MockSStub, MockSConnection
//
// stubkit_generator.cc prints the file around them (includes, namespaces).
// Signatures come from signatures.h; the printers write bodies only.

#ifndef STUBKIT_SRC_GENERATOR_PRINTERS_H_
#define STUBKIT_SRC_GENERATOR_PRINTERS_H_

#include <string>
#include <vector>

#include "src/generator/model.h"
#include "src/generator/printer.h"
#include "src/generator/signatures.h"

namespace stubkit {
namespace generator {

// $Service$, $service_full_name$, $grpc_class$, $package$, $mocks$, $file$.
Printer::Vars ServiceVars(const FileModel& file, const ServiceModel& service);
// The service's and $Method$, $method_full_name$, $Request$, $Response$,
// $kind$, $idempotency$.
Printer::Vars MethodVars(const FileModel& file, const ServiceModel& service,
                         const MethodModel& method);

// Prints `text` one indentation level deeper: a member of a class.
void PrintMember(Printer& w, const Printer::Vars& vars,
                 const std::string& text);

// A member whose layout depends on the names in it, laid out as
// clang-format would (layout.h), one level deeper than the printer's
// indentation. Each piece is a template.
//   explicit `name`(`params`)`suffix`
void PrintConstructor(Printer& w, const Printer::Vars& vars,
                      const std::string& name,
                      const std::vector<std::string>& params,
                      const std::string& suffix);
//   `head``items, ...``tail`, e.g. a braced initializer
void PrintListMember(Printer& w, const Printer::Vars& vars,
                     const std::string& head,
                     const std::vector<std::string>& items,
                     const std::string& tail);
//   `type` `name`
void PrintVariableMember(Printer& w, const Printer::Vars& vars,
                         const std::string& type, const std::string& name);
//   `type``suffix`, broken in its template arguments
void PrintTypeMember(Printer& w, const Printer::Vars& vars,
                     const std::string& type, const std::string& suffix);

// `type``suffix` in a function body, `depth` levels deeper than the
// printer's indentation, broken in its template arguments (or after its
// '=') when it does not fit: the head of a statement such as
// "return f<A, B>(" whose arguments the template prints on the next lines.
void PrintType(Printer& w, const Printer::Vars& vars, int depth,
               const std::string& type, const std::string& suffix);

// "`capture`(`params`) {", a lambda's head, `depth` levels deeper than
// the printer's indentation, its parameters laid out as a function's.
void PrintLambdaHead(Printer& w, const Printer::Vars& vars, int depth,
                     const std::string& capture,
                     const std::vector<std::string>& params);

// A statement `head``args, ...``tail` in a function body, `depth` levels
// (of 2 columns) deeper than the printer's indentation, laid out as
// clang-format would lay out the call.
void PrintCall(Printer& w, const Printer::Vars& vars, int depth,
               const std::string& head, const std::vector<std::string>& args,
               const std::string& tail);

// The abstract interface of one layer (`Layer::kStub`: SStub,
// `Layer::kConnection`: SConnection): `class_name` with a virtual
// destructor and every method of `layer` as pure virtual.
void PrintInterface(Printer& w, const FileModel& file,
                    const ServiceModel& service, const std::string& class_name,
                    Layer layer);

// "[[deprecated(...)]]\n" before a member of a deprecated method.
void PrintDeprecated(Printer& w, const Printer::Vars& vars,
                     const MethodModel& method);

void PrintStubHeader(Printer& w, const FileModel& file,
                     const ServiceModel& service);
void PrintStubSource(Printer& w, const FileModel& file,
                     const ServiceModel& service);

void PrintConnectionHeader(Printer& w, const FileModel& file,
                           const ServiceModel& service);
void PrintConnectionSource(Printer& w, const FileModel& file,
                           const ServiceModel& service);

void PrintClientHeader(Printer& w, const FileModel& file,
                       const ServiceModel& service);
void PrintClientSource(Printer& w, const FileModel& file,
                       const ServiceModel& service);

void PrintMockHeader(Printer& w, const FileModel& file,
                     const ServiceModel& service);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_PRINTERS_H_
