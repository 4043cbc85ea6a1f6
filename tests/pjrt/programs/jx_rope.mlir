// Probe (branch shloprobe): rotary position embedding of x [1, 6, 8]:
// positions from iota converted to f32, inverse frequencies closed over (a
// hex blob), their outer product by broadcast multiply, sin / cos, the two
// halves by slice, rotated and concatenated, as
// `jax.jit(rope).lower(x).as_text()` prints it in jax 0.4.2x-0.4.35.
// Written by hand from our knowledge of that output, not produced by jax.
module @jit_rope attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x6x8xf32> {mhlo.layout_mode = "default"}) -> (tensor<1x6x8xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.iota dim = 0 : tensor<6xi32>
    %1 = stablehlo.convert %0 : (tensor<6xi32>) -> tensor<6xf32>
    %cst = stablehlo.constant dense<"0x0000803FCDCCCC3D0AD7233C6F12833A"> : tensor<4xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<6xf32>) -> tensor<6x4xf32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [1] : (tensor<4xf32>) -> tensor<6x4xf32>
    %4 = stablehlo.multiply %2, %3 : tensor<6x4xf32>
    %5 = stablehlo.sine %4 : tensor<6x4xf32>
    %6 = stablehlo.cosine %4 : tensor<6x4xf32>
    %7 = stablehlo.slice %arg0 [0:1, 0:6, 0:4] : (tensor<1x6x8xf32>) -> tensor<1x6x4xf32>
    %8 = stablehlo.slice %arg0 [0:1, 0:6, 4:8] : (tensor<1x6x8xf32>) -> tensor<1x6x4xf32>
    %9 = stablehlo.broadcast_in_dim %6, dims = [1, 2] : (tensor<6x4xf32>) -> tensor<1x6x4xf32>
    %10 = stablehlo.multiply %7, %9 : tensor<1x6x4xf32>
    %11 = stablehlo.broadcast_in_dim %5, dims = [1, 2] : (tensor<6x4xf32>) -> tensor<1x6x4xf32>
    %12 = stablehlo.multiply %8, %11 : tensor<1x6x4xf32>
    %13 = stablehlo.subtract %10, %12 : tensor<1x6x4xf32>
    %14 = stablehlo.multiply %8, %9 : tensor<1x6x4xf32>
    %15 = stablehlo.multiply %7, %11 : tensor<1x6x4xf32>
    %16 = stablehlo.add %14, %15 : tensor<1x6x4xf32>
    %17 = stablehlo.concatenate %13, %16, dim = 2 : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x8xf32>
    return %17 : tensor<1x6x8xf32>
  }
}
