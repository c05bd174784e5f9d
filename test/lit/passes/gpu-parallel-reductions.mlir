// drc-gpu-parallel-reductions (docs/cuda.md).
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-parallel-reductions))" | FileCheck %s

#along = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

// A sum of squares over 2^20 elements: 32768 partial sums of 32, thread p
// adding x[j * 32768 + p], then split again: 1024 and 32 partials.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK: %[[P:.*]] = memref.alloc() : memref<32768xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[P]] : memref<32768xf32>)
// CHECK: %[[X:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [32, 32768]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : memref<32x32768xf32>) outs(%[[P]] : memref<32768xf32>)
// CHECK: arith.mulf
// CHECK: %[[Q:.*]] = memref.alloc() : memref<1024xf32>
// CHECK: memref.expand_shape %[[P]] {{\[\[}}0, 1]] output_shape [32, 1024]
// CHECK: linalg.generic {{.*}} outs(%[[Q]] : memref<1024xf32>)
// CHECK: %[[R:.*]] = memref.alloc() : memref<32xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[R]] : memref<32xf32>) outs(%{{.*}} : memref<f32>)
// CHECK: memref.dealloc %[[R]]
// CHECK: memref.dealloc %[[Q]]
// CHECK: memref.dealloc %[[P]]
func.func @sum_of_squares(%x: memref<1048576xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#along, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<1048576xf32>) outs(%out : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %sum = arith.addf %sq, %acc : f32
    linalg.yield %sum : f32
  }
  return
}

// 1000 elements: 16 partials of the first 992, and the last 8 as they are.
// CHECK-LABEL: func.func @uneven
// CHECK: memref.subview %{{.*}}[0] [992] [1]
// CHECK: memref.alloc() : memref<16xf32>
// CHECK: output_shape [62, 16]
// CHECK: memref.subview %{{.*}}[992] [8] [1]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : memref<8xf32, strided<[1], offset: 992>>)
func.func @uneven(%x: memref<1000xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#along, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<1000xf32>) outs(%out : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %sum = arith.addf %v, %acc : f32
    linalg.yield %sum : f32
  }
  return
}

// A sum over tokens and streams (an HC coefficient's gradient) is collapsed
// to one dimension first: 2048 x 4 x 4 = 32768 elements, 1024 partials.
// CHECK-LABEL: func.func @three_dims
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1, 2]] : memref<2048x4x4xf32> into memref<32768xf32>
// CHECK: memref.alloc() : memref<1024xf32>
// CHECK: memref.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [32, 1024]
func.func @three_dims(%x: memref<2048x4x4xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(t, i, j) -> (t, i, j)>, affine_map<(t, i, j) -> ()>],
                  iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%x : memref<2048x4x4xf32>) outs(%out : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// A maximum is not a sum: left alone. So is a sum too short to split.
// CHECK-LABEL: func.func @not_sums
// CHECK-NOT: memref.alloc
// CHECK: arith.maximumf
// CHECK: arith.addf
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @not_sums(%x: memref<4096xf32>, %y: memref<64xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#along, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<4096xf32>) outs(%out : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %v, %acc : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#along, #scalar], iterator_types = ["reduction"]}
      ins(%y : memref<64xf32>) outs(%out : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// A column sum over tokens written reduction-first gets its parallel
// dimension first.
// CHECK-LABEL: func.func @column_sum
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction"]}
func.func @column_sum(%x: memref<256x64xf32>, %out: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, c) -> (t, c)>, affine_map<(t, c) -> (c)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<256x64xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  }
  return
}
