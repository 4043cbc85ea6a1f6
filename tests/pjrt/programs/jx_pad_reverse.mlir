// Probe (branch shloprobe): jnp.pad(x, ((1, 2), (0, 1))) (stablehlo.pad
// with low / high / interior), jnp.flip(x, 1) (stablehlo.reverse) and
// jnp.transpose + reshape, as `jax.jit(f).lower(x).as_text()` prints them
// in jax 0.4.2x-0.5. Written by hand from our knowledge of that output.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32> {mhlo.layout_mode = "default"}) -> (tensor<6x5xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<3x4xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}, tensor<2x6xf32> {jax.result_info = "[2]", mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.pad %arg0, %cst, low = [1, 0], high = [2, 1], interior = [0, 0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<6x5xf32>
    %1 = stablehlo.reverse %arg0, dims = [1] : tensor<3x4xf32>
    %2 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %3 = stablehlo.reshape %2 : (tensor<4x3xf32>) -> tensor<2x6xf32>
    return %0, %1, %3 : tensor<6x5xf32>, tensor<3x4xf32>, tensor<2x6xf32>
  }
}
