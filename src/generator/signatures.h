// Copyright 2026 The stubkit Authors.
//
// Every generated function signature that depends on the RPC kind, in one
// table: the stub (and so the decorator, the gRPC stub and the stub mock),
// the connection (its implementations and mock) and the client, each in its
// synchronous and asynchronous forms. Printers and the client-member
// collision check read them from here; none spells a signature itself.

#ifndef STUBKIT_SRC_GENERATOR_SIGNATURES_H_
#define STUBKIT_SRC_GENERATOR_SIGNATURES_H_

#include <set>
#include <string>
#include <vector>

#include "src/generator/model.h"
#include "src/generator/printer.h"

namespace stubkit {
namespace generator {

enum class Layer { kStub, kConnection, kClient };

// kFuture: the client's unary AsyncM that returns a std::future.
enum class Variant { kSync, kFuture, kAsync };

struct Param {
  std::string type;  // may use $Request$ and $Response$
  std::string name;
  std::string default_value;  // client declarations only; "" for none
};

struct Signature {
  Layer layer;
  Kind kind;
  Variant variant;
  std::string return_type;  // may use $Request$ and $Response$
  std::string name;         // "$Method$" or "Async$Method$"
  std::vector<Param> params;
};

// The signatures of `layer` for `kind`, in the order they are printed:
// sync, future, async. Each kind has a sync one at every layer.
std::vector<const Signature*> SignaturesFor(Layer layer, Kind kind);

// One signature; nullptr when `kind` has no such variant at `layer`.
const Signature* FindSignature(Layer layer, Kind kind, Variant variant);

// Parameter names to print as /*name*/ (unused in the body).
using Unnamed = std::set<std::string>;

// The declaration inside its class, with default arguments, on one line,
// as a template (with $Request$, $Response$, $Method$).
std::string Declaration(const Signature& signature,
                        const Unnamed& unnamed = {});

// The out-of-class definition head, `cls`::name, without defaults, on one
// line, as a template.
std::string Definition(const Signature& signature, const std::string& cls,
                       const Unnamed& unnamed = {});

// `vars` (a method's) and the variables a printer's template spells a
// signature with, each expanded with `vars`:
//   $declaration$  Declaration(): "R Name(T a, U b = {})", in its class
//   $definition$   Definition() in `cls` (a template: "$Service$Client"),
//                  when `cls` is not empty
//   $arguments$    the parameter names, "a, b": to forward the call
// so that a template shows the function around them:
//   w.Print(SignatureVars(w, vars, sig, "$Service$StubDecorator"),
//           "$definition$ {\n"
//           "  return child_->$Method$($arguments$);\n"
//           "}\n");
// An error (an unknown variable) goes to `w`, as its Print's do.
Printer::Vars SignatureVars(Printer& w, const Printer::Vars& vars,
                            const Signature& signature,
                            const std::string& cls = "",
                            const Unnamed& unnamed = {});

// Prints `prefix`, the declaration and `suffix` (" = 0;", " override {")
// on one line, as a member of the class being printed. The printers write
// "  $declaration$ override;\n" in their templates instead; this one-line
// form stays for tests/generator/printer_test.cc.
void PrintDeclaration(Printer& w, const Printer::Vars& vars,
                      const Signature& signature, const std::string& prefix,
                      const std::string& suffix, const Unnamed& unnamed = {});

// Prints the definition head of `signature` in class `cls` (a template),
// then `suffix` (" {"), on one line (as PrintDeclaration, for the tests).
void PrintDefinition(Printer& w, const Printer::Vars& vars,
                     const Signature& signature, const std::string& cls,
                     const std::string& suffix, const Unnamed& unnamed = {});

// "MOCK_METHOD((R), F, (parameter types), (override));" on one line, as a
// template; a type with a comma is parenthesized, as gMock needs. The
// parameters are unnamed: clang-format misreads "T& name" in a macro
// argument as a multiplication-like expression ("T & name").
std::string MockMethod(const Signature& signature);

// Prints the MOCK_METHOD of `signature` as a member of the mock class.
void PrintMockMethod(Printer& w, const Printer::Vars& vars,
                     const Signature& signature);

// The parameter types joined with ", " (a template).
std::string ParamTypes(const Signature& signature);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_SIGNATURES_H_
