// Probe (branch shloprobe): element types and result kinds: an f16 argument
// and result (mixed precision: convert to f32, scale by a scalar tensor<f32>
// argument, convert back), i32 and i1 arguments (jnp.where(mask, 2 * n, -n)),
// a ui32 argument (u + 1 as f32), a scalar f32 result (jnp.sum) and an i1
// result (mask & (n > 0)), as `jax.jit(f).lower(...).as_text()` prints it
// in jax 0.4.2x-0.4.35. Written by hand from our knowledge of that output.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf16> {mhlo.layout_mode = "default"}, %arg1: tensor<f32> {mhlo.layout_mode = "default"}, %arg2: tensor<4xi32> {mhlo.layout_mode = "default"}, %arg3: tensor<4xi1> {mhlo.layout_mode = "default"}, %arg4: tensor<4xui32> {mhlo.layout_mode = "default"}) -> (tensor<4x4xf16> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<4xi32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}, tensor<4xf32> {jax.result_info = "[2]", mhlo.layout_mode = "default"}, tensor<f32> {jax.result_info = "[3]", mhlo.layout_mode = "default"}, tensor<4xi1> {jax.result_info = "[4]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.convert %arg0 : (tensor<4x4xf16>) -> tensor<4x4xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<4x4xf32>
    %3 = stablehlo.convert %2 : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %c = stablehlo.constant dense<2> : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %5 = stablehlo.multiply %4, %arg2 : tensor<4xi32>
    %6 = stablehlo.negate %arg2 : tensor<4xi32>
    %7 = call @_where(%arg3, %5, %6) : (tensor<4xi1>, tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    %c_0 = stablehlo.constant dense<1> : tensor<ui32>
    %8 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %9 = stablehlo.add %arg4, %8 : tensor<4xui32>
    %10 = stablehlo.convert %9 : (tensor<4xui32>) -> tensor<4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<f32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %13 = stablehlo.compare  GT, %arg2, %12,  SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %14 = stablehlo.and %arg3, %13 : tensor<4xi1>
    return %3, %7, %10, %11, %14 : tensor<4x4xf16>, tensor<4xi32>, tensor<4xf32>, tensor<f32>, tensor<4xi1>
  }
  func.func private @_where(%arg0: tensor<4xi1> {mhlo.layout_mode = "default"}, %arg1: tensor<4xi32> {mhlo.layout_mode = "default"}, %arg2: tensor<4xi32> {mhlo.layout_mode = "default"}) -> (tensor<4xi32> {mhlo.layout_mode = "default"}) {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<4xi1>, tensor<4xi32>
    return %0 : tensor<4xi32>
  }
}
