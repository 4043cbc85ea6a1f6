// Probe (branch shloprobe): (jax.nn.softmax(x), jax.nn.log_softmax(x)) over
// the last axis, two results, each a jitted private function; the max is
// jnp.max(x, initial=-inf, keepdims=True) under lax.stop_gradient (which
// leaves no op), as `jax.jit(f).lower(x).as_text()` prints it in jax
// 0.4.2x-0.4.35. Written by hand from our knowledge of that output.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x7xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x3x7xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<2x3x7xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}) {
    %0 = call @softmax(%arg0) : (tensor<2x3x7xf32>) -> tensor<2x3x7xf32>
    %1 = call @log_softmax(%arg0) : (tensor<2x3x7xf32>) -> tensor<2x3x7xf32>
    return %0, %1 : tensor<2x3x7xf32>, tensor<2x3x7xf32>
  }
  func.func private @softmax(%arg0: tensor<2x3x7xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x3x7xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [2] : (tensor<2x3x7xf32>, tensor<f32>) -> tensor<2x3xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<2x3xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x3x1xf32>) -> tensor<2x3x7xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<2x3x7xf32>
    %6 = stablehlo.exponential %5 : tensor<2x3x7xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<2x3x7xf32>, tensor<f32>) -> tensor<2x3xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2] : (tensor<2x3x1xf32>) -> tensor<2x3x7xf32>
    %10 = stablehlo.divide %6, %9 : tensor<2x3x7xf32>
    return %10 : tensor<2x3x7xf32>
  }
  func.func private @log_softmax(%arg0: tensor<2x3x7xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x3x7xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [2] : (tensor<2x3x7xf32>, tensor<f32>) -> tensor<2x3xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<2x3xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x3x1xf32>) -> tensor<2x3x7xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<2x3x7xf32>
    %6 = stablehlo.exponential %5 : tensor<2x3x7xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<2x3x7xf32>, tensor<f32>) -> tensor<2x3xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
    %9 = stablehlo.log %8 : tensor<2x3x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1, 2] : (tensor<2x3x1xf32>) -> tensor<2x3x7xf32>
    %11 = stablehlo.subtract %5, %10 : tensor<2x3x7xf32>
    return %11 : tensor<2x3x7xf32>
  }
}
