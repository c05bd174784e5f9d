//===- DrcDialect.cpp - drc dialect registration and attributes ----------===//
//
// Registers the dialect's ops and attributes and implements the custom
// syntax and checks of #drc.init.
//
//===----------------------------------------------------------------------===//
#include "dialect/DrcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::drc;

#include "dialect/DrcDialect.cpp.inc"
#include "dialect/DrcEnums.cpp.inc"
#include "dialect/DrcInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/DrcAttrs.cpp.inc"

#define GET_OP_CLASSES
#include "dialect/DrcOps.cpp.inc"

void DrcDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/DrcAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialect/DrcOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #drc.init<trunc_normal(std, clip)> and #drc.init<constant(value)>
//===----------------------------------------------------------------------===//

Attribute InitAttr::parse(AsmParser &parser, Type) {
  std::string kindName;
  SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeywordOrString(&kindName))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(kindName);
  if (!kind) {
    parser.emitError(kindLoc, "unknown initialiser '")
        << kindName << "'; expected trunc_normal(std, clip) or constant(value)";
    return {};
  }
  double first = 0, second = 0;
  if (parser.parseLParen() || parser.parseFloat(first))
    return {};
  if (*kind == InitKind::TruncNormal &&
      (parser.parseComma() || parser.parseFloat(second)))
    return {};
  if (parser.parseRParen() || parser.parseGreater())
    return {};
  return parser.getChecked<InitAttr>(parser.getContext(), *kind, APFloat(first),
                                     APFloat(second));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind()) << "(" << getFirstValue();
  if (getKind() == InitKind::TruncNormal)
    printer << ", " << getSecondValue();
  printer << ")>";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, APFloat first, APFloat second) {
  if (kind == InitKind::TruncNormal &&
      (first.convertToDouble() <= 0 || second.convertToDouble() <= 0))
    return emitError() << "trunc_normal needs a positive std and clip, got ("
                       << first.convertToDouble() << ", "
                       << second.convertToDouble() << ")";
  return success();
}
