// Ops beyond the issue's list that JAX emits often: abs, power, chlo.erf
// (jax.nn.gelu(approximate=False)), reduce with minimum, and the @Sharding
// custom_call of with_sharding_constraint (one device: nothing to do).
module @jit_extras attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x8xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x8xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<3xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{replicated}"} : (tensor<3x8xf32>) -> tensor<3x8xf32>
    %cst = stablehlo.constant dense<0.707106769> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<3x8xf32>
    %3 = chlo.erf %2 : tensor<3x8xf32> -> tensor<3x8xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %5 = stablehlo.add %4, %3 : tensor<3x8xf32>
    %6 = stablehlo.multiply %0, %5 : tensor<3x8xf32>
    %cst_1 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %8 = stablehlo.multiply %6, %7 : tensor<3x8xf32>
    %9 = stablehlo.abs %0 : tensor<3x8xf32>
    %cst_2 = stablehlo.constant dense<1.500000e+00> : tensor<3x8xf32>
    %10 = stablehlo.power %9, %cst_2 : tensor<3x8xf32>
    %cst_3 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %11 = stablehlo.reduce(%10 init: %cst_3) applies stablehlo.minimum across dimensions = [1] : (tensor<3x8xf32>, tensor<f32>) -> tensor<3xf32>
    return %8, %11 : tensor<3x8xf32>, tensor<3xf32>
  }
}
