// Probe (branch shloprobe): jax.lax.composite (a stablehlo.composite whose
// decomposition is a private function named after it), a private function
// with two results bound as %0:2 and used as %0#0 / %0#1 (func.call
// spelling), a closed-over 2x4 weight printed as a hex blob, as
// `jax.jit(f).lower(x, s).as_text()` prints it in jax 0.4.3x-0.6.
// Written by hand from our knowledge of that output, not produced by jax.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x2xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<f32> {mhlo.layout_mode = "default"}) -> (tensor<3x4xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<3x4xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<"0x0000003F000080BF0000803E000000400000C03F0000403F000000BF000000C0"> : tensor<2x4xf32>
    %0 = stablehlo.dot_general %arg0, %cst, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %1 = stablehlo.composite "opennpu.scaled_tanh" %0, %arg1 {composite_attributes = {approximate = false}, decomposition = @opennpu.scaled_tanh} : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
    %2:2 = func.call @split_sign(%1) : (tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>)
    %3 = stablehlo.subtract %2#0, %2#1 : tensor<3x4xf32>
    return %3, %2#1 : tensor<3x4xf32>, tensor<3x4xf32>
  }
  func.func private @opennpu.scaled_tanh(%arg0: tensor<3x4xf32>, %arg1: tensor<f32>) -> tensor<3x4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<3x4xf32>
    %2 = stablehlo.tanh %1 : tensor<3x4xf32>
    return %2 : tensor<3x4xf32>
  }
  func.func private @split_sign(%arg0: tensor<3x4xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x4xf32> {mhlo.layout_mode = "default"}, tensor<3x4xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<3x4xf32>
    %2 = stablehlo.minimum %arg0, %0 : tensor<3x4xf32>
    return %1, %2 : tensor<3x4xf32>, tensor<3x4xf32>
  }
}
