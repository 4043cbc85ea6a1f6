module @jit_conv_block attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3x3x8xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<8xf32> {mhlo.layout_mode = "default"}, %arg2: tensor<3x3x8x16xf32> {mhlo.layout_mode = "default"}, %arg3: tensor<16xf32> {mhlo.layout_mode = "default"}, %arg4: tensor<1x8x8x3xf32> {mhlo.layout_mode = "default"}) -> (tensor<1x16xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.convolution(%arg4, %arg0) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [3] : (tensor<8xf32>) -> tensor<1x8x8x8xf32>
    %2 = stablehlo.add %0, %1 : tensor<1x8x8x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x8x8x8xf32>
    %4 = stablehlo.maximum %2, %3 : tensor<1x8x8x8xf32>
    %5 = stablehlo.convolution(%4, %arg2) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 1], [0, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x4x4x16xf32>
    %6 = stablehlo.broadcast_in_dim %arg3, dims = [3] : (tensor<16xf32>) -> tensor<1x4x4x16xf32>
    %7 = stablehlo.add %5, %6 : tensor<1x4x4x16xf32>
    %8 = stablehlo.logistic %7 : tensor<1x4x4x16xf32>
    %9 = stablehlo.multiply %7, %8 : tensor<1x4x4x16xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%9 init: %cst_0) applies stablehlo.add across dimensions = [1, 2] : (tensor<1x4x4x16xf32>, tensor<f32>) -> tensor<1x16xf32>
    %cst_1 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x16xf32>
    %12 = stablehlo.divide %10, %11 : tensor<1x16xf32>
    return %12 : tensor<1x16xf32>
  }
}
