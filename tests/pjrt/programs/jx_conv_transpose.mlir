// Probe (branch shloprobe): flax nn.ConvTranspose(3, (3, 3), strides=(2, 2),
// padding="SAME") (jax.lax.conv_transpose: a convolution with lhs_dilate 2
// and padding (2, 1), the kernel not flipped), a VALID one with a 2x2
// kernel (padding (1, 1)), and a depthwise nn.Conv(2, (3, 3),
// feature_group_count=2), as `jax.jit(f).lower(...).as_text()` prints them
// in jax 0.4.2x-0.5. Written by hand from our knowledge of that output.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x4x4x2xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<3x3x2x3xf32> {mhlo.layout_mode = "default"}, %arg2: tensor<2x2x2x3xf32> {mhlo.layout_mode = "default"}, %arg3: tensor<3x3x1x2xf32> {mhlo.layout_mode = "default"}) -> (tensor<1x8x8x3xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<1x8x8x3xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}, tensor<1x4x4x2xf32> {jax.result_info = "[2]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 1], [2, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x8x8x3xf32>
    %1 = stablehlo.convolution(%arg0, %arg2) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x4x4x2xf32>, tensor<2x2x2x3xf32>) -> tensor<1x8x8x3xf32>
    %2 = stablehlo.convolution(%arg0, %arg3) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x4x4x2xf32>, tensor<3x3x1x2xf32>) -> tensor<1x4x4x2xf32>
    return %0, %1, %2 : tensor<1x8x8x3xf32>, tensor<1x8x8x3xf32>, tensor<1x4x4x2xf32>
  }
}
