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

// How a signature is broken into lines (kept to reproduce the layout the
// generator has always printed).
enum class ParamLayout {
  kBreakOnePerLine,        // "R F(\n    a,\n    b)"
  kBreakJoined,            // "R F(\n    a, b)"
  kFirstInlineOnePerLine,  // "R F(a,\n    b)"
  kInlineJoined,           // "R F(a, b)"
};
struct Layout {
  ParamLayout params = ParamLayout::kBreakOnePerLine;
  bool return_on_own_line = false;
  // Break the return type after its first '<' and put the name on its own
  // line.
  bool split_return = false;
};

struct Signature {
  Layer layer;
  Kind kind;
  Variant variant;
  std::string return_type;  // may use $Request$ and $Response$
  std::string name;         // "$Method$" or "Async$Method$"
  std::vector<Param> params;
  Layout declaration;  // in the class
  Layout definition;   // out of the class
};

// The signatures of `layer` for `kind`, in the order they are printed:
// sync, future, async. Each kind has a sync one at every layer.
std::vector<const Signature*> SignaturesFor(Layer layer, Kind kind);

// One signature; nullptr when `kind` has no such variant at `layer`.
const Signature* FindSignature(Layer layer, Kind kind, Variant variant);

// Parameter names to print as /*name*/ (unused in the body).
using Unnamed = std::set<std::string>;

// The declaration inside its class, with default arguments, as a template
// for the printer: continuation lines are indented by 4 relative to the
// printer's indentation.
std::string Declaration(const Signature& signature,
                        const Unnamed& unnamed = {});

// The out-of-class definition head, `cls`::name, without defaults.
std::string Definition(const Signature& signature, const std::string& cls,
                       const Unnamed& unnamed = {});

// "MOCK_METHOD((R), F,\n            (params),\n            (override));\n".
std::string MockMethod(const Signature& signature);

// The parameter types joined with ", " (a template).
std::string ParamTypes(const Signature& signature);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_SIGNATURES_H_
