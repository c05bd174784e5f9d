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
// #drc.init<trunc_normal(std, clip)>, <constant(value)>, <values(dense)>
//===----------------------------------------------------------------------===//

ParseResult mlir::drc::parseInitBody(AsmParser &parser, InitAttr &init) {
  std::string kindName;
  SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseKeywordOrString(&kindName))
    return failure();
  MLIRContext *ctx = parser.getContext();
  if (kindName == "zeros" || kindName == "ones") {
    init = InitAttr::constant(ctx, kindName == "ones" ? 1.0 : 0.0);
    return success();
  }
  std::optional<InitKind> kind = symbolizeInitKind(kindName);
  if (!kind)
    return parser.emitError(kindLoc, "unknown initialiser '")
           << kindName
           << "'; expected trunc_normal(std, clip), constant(value), zeros, "
              "ones, matrix or values(dense<...>)";
  if (*kind == InitKind::Matrix) {
    init = InitAttr::matrix(ctx);
    return success();
  }
  if (parser.parseLParen())
    return failure();
  if (*kind == InitKind::Values) {
    DenseElementsAttr values;
    if (parser.parseAttribute(values) || parser.parseRParen())
      return failure();
    init = InitAttr::fromValues(values);
    return success();
  }
  double first = 0, second = 0;
  if (parser.parseFloat(first))
    return failure();
  if (*kind == InitKind::TruncNormal &&
      (parser.parseComma() || parser.parseFloat(second)))
    return failure();
  if (parser.parseRParen())
    return failure();
  init = parser.getChecked<InitAttr>(ctx, *kind, APFloat(first),
                                     APFloat(second), DenseElementsAttr());
  return success(static_cast<bool>(init));
}

void mlir::drc::printInitBody(AsmPrinter &printer, InitAttr init) {
  printer << stringifyInitKind(init.getKind());
  switch (init.getKind()) {
  case InitKind::TruncNormal:
    printer << "(" << init.getFirstValue() << ", " << init.getSecondValue()
            << ")";
    return;
  case InitKind::Constant:
    printer << "(" << init.getFirstValue() << ")";
    return;
  case InitKind::Values:
    printer << "(" << init.getValues() << ")";
    return;
  case InitKind::Matrix:
    return;
  }
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  InitAttr init;
  if (parser.parseLess() || parseInitBody(parser, init) ||
      parser.parseGreater())
    return {};
  return init;
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printInitBody(printer, *this);
  printer << ">";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, APFloat first, APFloat second,
                               DenseElementsAttr values) {
  if (kind == InitKind::TruncNormal &&
      (first.convertToDouble() <= 0 || second.convertToDouble() <= 0))
    return emitError() << "trunc_normal needs a positive std and clip, got ("
                       << first.convertToDouble() << ", "
                       << second.convertToDouble() << ")";
  if ((kind == InitKind::Values) != static_cast<bool>(values))
    return emitError() << "values(...) and only it carries initial values";
  return success();
}

//===----------------------------------------------------------------------===//
// drc.weight "name" [sizes] (init <body> | = %value) decay : type
//===----------------------------------------------------------------------===//

ParseResult WeightOp::parse(OpAsmParser &parser, OperationState &result) {
  auto &props = result.getOrAddProperties<WeightOp::Properties>();
  std::string name;
  if (parser.parseString(&name))
    return failure();
  props.name = parser.getBuilder().getStringAttr(name);
  SmallVector<OpAsmParser::UnresolvedOperand> sizes;
  if (succeeded(parser.parseOptionalLSquare()) &&
      (parser.parseOperandList(sizes) || parser.parseRSquare()))
    return failure();
  std::optional<OpAsmParser::UnresolvedOperand> value;
  if (succeeded(parser.parseOptionalKeyword("init"))) {
    InitAttr init;
    if (parseInitBody(parser, init))
      return failure();
    props.init = init;
  } else if (succeeded(parser.parseOptionalEqual())) {
    value.emplace();
    if (parser.parseOperand(*value))
      return failure();
  } else {
    return parser.emitError(parser.getCurrentLocation(),
                            "expected `init <initialiser>` or `= %value`");
  }
  if (succeeded(parser.parseOptionalKeyword("decay")))
    props.decay = parser.getBuilder().getUnitAttr();
  Type type;
  if (parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(type))
    return failure();
  props.operandSegmentSizes = {static_cast<int32_t>(sizes.size()),
                               value ? 1 : 0};
  if (parser.resolveOperands(sizes, parser.getBuilder().getIndexType(),
                             result.operands) ||
      (value && parser.resolveOperand(*value, type, result.operands)))
    return failure();
  result.addTypes(type);
  return success();
}

void WeightOp::print(OpAsmPrinter &p) {
  p << " ";
  p.printAttributeWithoutType(getNameAttr());
  if (!getSizes().empty())
    p << " [" << getSizes() << "]";
  if (InitAttr init = getInitAttr()) {
    p << " init ";
    printInitBody(p, init);
  } else if (Value value = getValue()) {
    p << " = " << value;
  }
  if (getDecay())
    p << " decay";
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {"name", "init", "decay", "operandSegmentSizes"});
  p << " : " << getType();
}
