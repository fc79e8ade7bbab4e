// Copyright 2026 The stubkit Authors.
//
// The mocks: gMock classes of SStub and SConnection, in the nested
// namespace kMockNamespace.

#include "src/generator/printers.h"

namespace stubkit {
namespace generator {

void PrintMockHeader(Printer& w, const FileModel& file,
                     const ServiceModel& service) {
  const Printer::Vars vars = ServiceVars(file, service);
  w.Print(vars,
          "class Mock$Service$Stub : public $package$::$Service$Stub {\n"
          " public:\n");
  for (const MethodModel& method : service.methods) {
    for (const Signature* signature :
         SignaturesFor(Layer::kStub, method.kind)) {
      PrintMockMethod(w, MethodVars(file, service, method), *signature);
    }
  }
  w.Print("};\n\n");
  w.Print(vars,
          "class Mock$Service$Connection : public "
          "$package$::$Service$Connection {\n"
          " public:\n");
  for (const MethodModel& method : service.methods) {
    for (const Signature* signature :
         SignaturesFor(Layer::kConnection, method.kind)) {
      PrintMockMethod(w, MethodVars(file, service, method), *signature);
    }
  }
  w.Print("};\n\n");
}

}  // namespace generator
}  // namespace stubkit
