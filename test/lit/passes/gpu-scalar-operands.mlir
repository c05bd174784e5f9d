// drc-gpu-scalar-operands (docs/cuda.md).
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-scalar-operands))" | FileCheck %s --check-prefix=SCALAR

// A scalar computed from a 0-d tensor moves into the kernel that uses it,
// and the tensor becomes that kernel's operand, read through () .
// SCALAR-LABEL: func.func @scale
// SCALAR: linalg.generic {indexing_maps = [#[[ROW:map[0-9]*]], #[[SCALAR:map[0-9]*]], #[[ROW]]]
// SCALAR-SAME: ins(%arg0, %arg1 : tensor<8xf32>, tensor<f32>)
// SCALAR: ^bb0(%[[IN:.*]]: f32, %[[N:.*]]: f32, %{{.*}}: f32):
// SCALAR: %[[INV:.*]] = arith.divf %{{.*}}, %[[N]]
// SCALAR: arith.mulf %[[IN]], %[[INV]]
#row = affine_map<(d0) -> (d0)>
func.func @scale(%x: tensor<8xf32>, %count: tensor<f32>) -> tensor<8xf32> {
  %one = arith.constant 1.0 : f32
  %n = tensor.extract %count[] : tensor<f32>
  %inv = arith.divf %one, %n : f32
  %init = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %inv : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

