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
// Signatures come from signatures.h, as $declaration$ and $definition$
// (SignatureVars); the printers write the code around them as templates
// shaped like the code they print. Lines are not broken to a
// column limit: the goldens go through clang-format (golden_test.cc).

#ifndef STUBKIT_SRC_GENERATOR_PRINTERS_H_
#define STUBKIT_SRC_GENERATOR_PRINTERS_H_

#include <string>

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
