// Probe (branch shloprobe): flax nn.LayerNorm (epsilon 1e-6, the fast
// variance mean(x^2) - mean(x)^2 clamped at 0, lax.rsqrt) on a [2, 5, 16]
// batch, as `jax.jit(ln.apply).lower(params, x).as_text()` prints it in jax
// 0.4.2x (layout_mode argument attributes, "[0]"-style result info absent
// for one result). Written by hand from our knowledge of that output.
module @jit_apply attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<16xf32> {mhlo.layout_mode = "default"}, %arg2: tensor<2x5x16xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x5x16xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg2 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %cst_0 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x5xf32>
    %2 = stablehlo.divide %0, %1 : tensor<2x5xf32>
    %3 = stablehlo.multiply %arg2, %arg2 : tensor<2x5x16xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %cst_2 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x5xf32>
    %6 = stablehlo.divide %4, %5 : tensor<2x5xf32>
    %7 = stablehlo.multiply %2, %2 : tensor<2x5xf32>
    %8 = stablehlo.subtract %6, %7 : tensor<2x5xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x5xf32>
    %10 = stablehlo.maximum %9, %8 : tensor<2x5xf32>
    %11 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %12 = stablehlo.broadcast_in_dim %10, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %13 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x16xf32>
    %14 = stablehlo.subtract %arg2, %13 : tensor<2x5x16xf32>
    %cst_4 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %16 = stablehlo.add %12, %15 : tensor<2x5x1xf32>
    %17 = stablehlo.rsqrt %16 : tensor<2x5x1xf32>
    %18 = stablehlo.reshape %arg1 : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %19 = stablehlo.broadcast_in_dim %17, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x16xf32>
    %20 = stablehlo.broadcast_in_dim %18, dims = [0, 1, 2] : (tensor<1x1x16xf32>) -> tensor<2x5x16xf32>
    %21 = stablehlo.multiply %19, %20 : tensor<2x5x16xf32>
    %22 = stablehlo.multiply %14, %21 : tensor<2x5x16xf32>
    %23 = stablehlo.reshape %arg0 : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0, 1, 2] : (tensor<1x1x16xf32>) -> tensor<2x5x16xf32>
    %25 = stablehlo.add %22, %24 : tensor<2x5x16xf32>
    return %25 : tensor<2x5x16xf32>
  }
}
