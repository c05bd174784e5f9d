// drc-bank-stores-to-buffers: a depth bank's store (drc-store-banks') becomes
// a buffer before bufferization: appends materialize into views of it, bank
// reads are views of it, and empty-tensor elimination still makes an
// append's producer write into its rows.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-bank-stores-to-buffers))" | FileCheck %s
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-bank-stores-to-buffers,eliminate-empty-tensors),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},func.func(canonicalize))" | FileCheck %s --check-prefix=BUF

// The store first, each append's rows viewed next to it; a bank is the
// store's first rows, read where the slice was.
// CHECK-LABEL: func.func @store
// CHECK-NEXT: %[[STORE:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x3x4xf32>
// CHECK-NEXT: %[[ROW0:.*]] = memref.subview %[[STORE]][0, 0, 0] [8, 1, 4] [1, 1, 1]
// CHECK-NEXT: %[[ROW1:.*]] = memref.subview %[[STORE]][0, 1, 0] [8, 1, 4] [1, 1, 1] : memref<8x3x4xf32> to memref<8x4xf32, strided<[12, 1], offset: 4>>
// CHECK-NEXT: %[[ROW2:.*]] = memref.subview %[[STORE]][0, 2, 0] [8, 1, 4] [1, 1, 1]
// CHECK-NOT: tensor.empty() {drc.bank_store}
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[ROW0]]
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[ROW1]]
// CHECK: %[[VIEW1:.*]] = memref.subview %[[STORE]][0, 0, 0] [8, 2, 4] [1, 1, 1]
// CHECK-NEXT: %[[BANK1:.*]] = bufferization.to_tensor %[[VIEW1]] restrict
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[ROW2]]
// CHECK: %[[VIEW2:.*]] = memref.subview %[[STORE]][0, 0, 0] [8, 3, 4] [1, 1, 1]
// CHECK-NEXT: %[[BANK2:.*]] = bufferization.to_tensor %[[VIEW2]] restrict
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.copy ins(%[[BANK1]]
// CHECK: linalg.copy ins(%[[BANK2]]

// Each row's producer writes into the store and each bank is read in
// place: nothing is copied (the in-place materializations' self-copies fold
// away).
// BUF-LABEL: func.func @store
// BUF: %[[STORE:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x3x4xf32>
// BUF-NOT: memref.copy
// BUF: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<8x1x4xf32, strided<[12, 4, 1]>>)
// BUF: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<8x4xf32, strided<[12, 1], offset: 4>>)
// BUF: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<8x1x4xf32, strided<[12, 4, 1], offset: 8>>)
// BUF: linalg.copy ins(%{{.*}} : memref<8x2x4xf32, strided<[12, 4, 1]>>)
// BUF: linalg.copy ins(%[[STORE]] : memref<8x3x4xf32>)
// BUF-NOT: memref.copy
// BUF: return
func.func @store(%a: f32, %b: f32, %c: f32)
    -> (tensor<8x2x4xf32>, tensor<8x3x4xf32>) {
  %e0 = tensor.empty() : tensor<8x1x4xf32>
  %h = linalg.fill ins(%a : f32) outs(%e0 : tensor<8x1x4xf32>) -> tensor<8x1x4xf32>
  %e1 = tensor.empty() : tensor<8x4xf32>
  %f0 = linalg.fill ins(%b : f32) outs(%e1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %store = tensor.empty() {drc.bank_store} : tensor<8x3x4xf32>
  %s0 = tensor.insert_slice %h into %store[0, 0, 0] [8, 1, 4] [1, 1, 1] : tensor<8x1x4xf32> into tensor<8x3x4xf32>
  %s1 = tensor.insert_slice %f0 into %s0[0, 1, 0] [8, 1, 4] [1, 1, 1] : tensor<8x4xf32> into tensor<8x3x4xf32>
  %b1 = tensor.extract_slice %s1[0, 0, 0] [8, 2, 4] [1, 1, 1] : tensor<8x3x4xf32> to tensor<8x2x4xf32>
  %e2 = tensor.empty() : tensor<8x1x4xf32>
  %f1 = linalg.fill ins(%c : f32) outs(%e2 : tensor<8x1x4xf32>) -> tensor<8x1x4xf32>
  %s2 = tensor.insert_slice %f1 into %s1[0, 2, 0] [8, 1, 4] [1, 1, 1] : tensor<8x1x4xf32> into tensor<8x3x4xf32>
  %b2 = tensor.extract_slice %s2[0, 0, 0] [8, 3, 4] [1, 1, 1] : tensor<8x3x4xf32> to tensor<8x3x4xf32>
  %o1 = tensor.empty() : tensor<8x2x4xf32>
  %c1 = linalg.copy ins(%b1 : tensor<8x2x4xf32>) outs(%o1 : tensor<8x2x4xf32>) -> tensor<8x2x4xf32>
  %o2 = tensor.empty() : tensor<8x3x4xf32>
  %c2 = linalg.copy ins(%b2 : tensor<8x3x4xf32>) outs(%o2 : tensor<8x3x4xf32>) -> tensor<8x3x4xf32>
  return %c1, %c2 : tensor<8x2x4xf32>, tensor<8x3x4xf32>
}

// A read of rows a later append writes would see the append in a buffer,
// and a returned bank would let the buffer escape: those chains stay
// tensors. So does a store without the mark.
// CHECK-LABEL: func.func @read_before_append
// CHECK-NOT: memref.alloc
// CHECK: tensor.empty() {drc.bank_store}
// CHECK: tensor.insert_slice
// CHECK-LABEL: func.func @returned
// CHECK-NOT: memref.alloc
// CHECK: tensor.empty() {drc.bank_store}
// CHECK: tensor.insert_slice
// CHECK-LABEL: func.func @unmarked
// CHECK-NOT: memref.alloc
// CHECK: tensor.insert_slice
func.func @read_before_append(%h: tensor<8x1x4xf32>, %f: tensor<8x1x4xf32>)
    -> (tensor<8x2x4xf32>, tensor<8x2x4xf32>) {
  %store = tensor.empty() {drc.bank_store} : tensor<8x2x4xf32>
  %s0 = tensor.insert_slice %h into %store[0, 0, 0] [8, 1, 4] [1, 1, 1] : tensor<8x1x4xf32> into tensor<8x2x4xf32>
  %early = tensor.extract_slice %s0[0, 0, 0] [8, 2, 4] [1, 1, 1] : tensor<8x2x4xf32> to tensor<8x2x4xf32>
  %s1 = tensor.insert_slice %f into %s0[0, 1, 0] [8, 1, 4] [1, 1, 1] : tensor<8x1x4xf32> into tensor<8x2x4xf32>
  %late = tensor.extract_slice %s1[0, 0, 0] [8, 2, 4] [1, 1, 1] : tensor<8x2x4xf32> to tensor<8x2x4xf32>
  %o1 = tensor.empty() : tensor<8x2x4xf32>
  %c1 = linalg.copy ins(%early : tensor<8x2x4xf32>) outs(%o1 : tensor<8x2x4xf32>) -> tensor<8x2x4xf32>
  %o2 = tensor.empty() : tensor<8x2x4xf32>
  %c2 = linalg.copy ins(%late : tensor<8x2x4xf32>) outs(%o2 : tensor<8x2x4xf32>) -> tensor<8x2x4xf32>
  return %c1, %c2 : tensor<8x2x4xf32>, tensor<8x2x4xf32>
}

func.func @returned(%h: tensor<8x1x4xf32>) -> tensor<8x1x4xf32> {
  %store = tensor.empty() {drc.bank_store} : tensor<8x2x4xf32>
  %s0 = tensor.insert_slice %h into %store[0, 0, 0] [8, 1, 4] [1, 1, 1] : tensor<8x1x4xf32> into tensor<8x2x4xf32>
  %row = tensor.extract_slice %s0[0, 0, 0] [8, 1, 4] [1, 1, 1] : tensor<8x2x4xf32> to tensor<8x1x4xf32>
  return %row : tensor<8x1x4xf32>
}

func.func @unmarked(%h: tensor<8x1x4xf32>) -> tensor<8x1x4xf32> {
  %store = tensor.empty() : tensor<8x2x4xf32>
  %s0 = tensor.insert_slice %h into %store[0, 0, 0] [8, 1, 4] [1, 1, 1] : tensor<8x1x4xf32> into tensor<8x2x4xf32>
  %row = tensor.extract_slice %s0[0, 0, 0] [8, 1, 4] [1, 1, 1] : tensor<8x2x4xf32> to tensor<8x1x4xf32>
  return %row : tensor<8x1x4xf32>
}
