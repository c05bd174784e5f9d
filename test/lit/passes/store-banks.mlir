// drc-store-banks: a chain of appends that grows a depth bank writes into one
// store; a bank read after a later append reads the latest store, so
// bufferization writes every row in place and copies no bank.
// RUN: drc-opt %s --drc-store-banks | FileCheck %s
// RUN: drc-opt %s --drc-store-banks --drc-lower-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func.func @bank
// CHECK: %[[E:.*]] = tensor.empty() {drc.bank_store} : tensor<8x3x4xf32>
// CHECK: %[[S0:.*]] = tensor.insert_slice %{{.*}} into %[[E]][0, 0, 0] [8, 1, 4]
// CHECK: %[[S1:.*]] = tensor.insert_slice %{{.*}} into %[[S0]][0, 1, 0] [8, 1, 4]
// CHECK: %[[B1:.*]] = tensor.extract_slice %[[S1]][0, 0, 0] [8, 2, 4]
// CHECK: drc.softmax %[[B1]]
// CHECK: %[[S2:.*]] = tensor.insert_slice %{{.*}} into %[[S1]][0, 2, 0] [8, 1, 4]
// CHECK: %[[LATE:.*]] = tensor.extract_slice %[[S2]][0, 0, 0] [8, 2, 4]
// CHECK: %[[B2:.*]] = tensor.extract_slice %[[S2]][0, 0, 0] [8, 3, 4]
// CHECK: drc.normed_linear %[[LATE]]
// CHECK-NOT: drc.append
// CHECK: return

// One buffer for the whole bank; each row copied into it once, no bank
// copied out of it: the projection of a bank's rows reads them in place
// (a contraction over the set, not a matmul of its collapsed rows).
// BUF-LABEL: func.func @bank
// BUF: memref.alloc() {{.*}} : memref<8x3x4xf32>
// BUF-COUNT-3: memref.copy %{{.*}}, %{{.*}} : memref<8x1x4xf32> to memref<8x1x4xf32, strided
// BUF-NOT: memref.copy %{{.*}}, %{{.*}} : memref<8x2x4xf32, strided
// BUF-NOT: memref.collapse_shape
// BUF: return
func.func @bank(%h: tensor<8x1x4xf32>, %f0: tensor<8x1x4xf32>, %f1: tensor<8x1x4xf32>,
                %w: tensor<1x4xf32>)
    -> (tensor<8x2x4xf32>, tensor<8x2x1xf32>, tensor<8x3x4xf32>) {
  %b1 = drc.append %h, %f0 : (tensor<8x1x4xf32>, tensor<8x1x4xf32>) -> tensor<8x2x4xf32>
  %early = drc.softmax %b1 {axis = 1} : tensor<8x2x4xf32>
  %b2 = drc.append %b1, %f1 : (tensor<8x2x4xf32>, tensor<8x1x4xf32>) -> tensor<8x3x4xf32>
  %late = drc.normed_linear %b1, %w : (tensor<8x2x4xf32>, tensor<1x4xf32>) -> tensor<8x2x1xf32>
  return %early, %late, %b2 : tensor<8x2x4xf32>, tensor<8x2x1xf32>, tensor<8x3x4xf32>
}

// HC's [H ; f] before its write mix extends no bank: left to the regions.
// CHECK-LABEL: func.func @not_a_bank
// CHECK: drc.append
// CHECK-NOT: tensor.insert_slice
func.func @not_a_bank(%streams: tensor<8x4x4xf32>, %f: tensor<8x1x4xf32>,
                      %c: tensor<8x5x4xf32>) -> tensor<8x4x4xf32> {
  %rows = drc.append %streams, %f : (tensor<8x4x4xf32>, tensor<8x1x4xf32>) -> tensor<8x5x4xf32>
  %h = drc.mix %rows by %c : (tensor<8x5x4xf32>, tensor<8x5x4xf32>) -> tensor<8x4x4xf32>
  return %h : tensor<8x4x4xf32>
}
