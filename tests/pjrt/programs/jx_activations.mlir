// Probe (branch shloprobe): activations and elementwise ops as jax.nn and
// jnp lower them: elu (exponential_minus_one), softplus (jnp.logaddexp(x, 0):
// log_plus_one, a NaN test by compare NE), silu (logistic), lax.clamp with
// scalar bounds of jnp.sin + jnp.cos, jnp.floor + jnp.sign, jnp.round
// (round_nearest_even), as `jax.jit(f).lower(x).as_text()` prints them in
// jax 0.4.2x-0.4.35. Written by hand from our knowledge of that output.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x8xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x8xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<3x8xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}, tensor<3x8xf32> {jax.result_info = "[2]", mhlo.layout_mode = "default"}, tensor<3x8xf32> {jax.result_info = "[3]", mhlo.layout_mode = "default"}, tensor<3x8xf32> {jax.result_info = "[4]", mhlo.layout_mode = "default"}, tensor<3x8xf32> {jax.result_info = "[5]", mhlo.layout_mode = "default"}) {
    %0 = call @elu(%arg0) : (tensor<3x8xf32>) -> tensor<3x8xf32>
    %1 = call @softplus(%arg0) : (tensor<3x8xf32>) -> tensor<3x8xf32>
    %2 = call @silu(%arg0) : (tensor<3x8xf32>) -> tensor<3x8xf32>
    %3 = stablehlo.sine %arg0 : tensor<3x8xf32>
    %4 = stablehlo.cosine %arg0 : tensor<3x8xf32>
    %5 = stablehlo.add %3, %4 : tensor<3x8xf32>
    %cst = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %cst_0 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %6 = stablehlo.clamp %cst, %5, %cst_0 : (tensor<f32>, tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %8 = stablehlo.multiply %arg0, %7 : tensor<3x8xf32>
    %9 = stablehlo.floor %8 : tensor<3x8xf32>
    %10 = stablehlo.sign %arg0 : tensor<3x8xf32>
    %11 = stablehlo.add %9, %10 : tensor<3x8xf32>
    %cst_2 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %13 = stablehlo.multiply %arg0, %12 : tensor<3x8xf32>
    %14 = stablehlo.round_nearest_even %13 : tensor<3x8xf32>
    return %0, %1, %2, %6, %11, %14 : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
  }
  func.func private @elu(%arg0: tensor<3x8xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x8xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %1 = stablehlo.compare  GT, %arg0, %0,  FLOAT : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xi1>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %3 = stablehlo.select %1, %2, %arg0 : tensor<3x8xi1>, tensor<3x8xf32>
    %4 = stablehlo.exponential_minus_one %3 : tensor<3x8xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %6 = stablehlo.multiply %5, %4 : tensor<3x8xf32>
    %7 = stablehlo.select %1, %arg0, %6 : tensor<3x8xi1>, tensor<3x8xf32>
    return %7 : tensor<3x8xf32>
  }
  func.func private @softplus(%arg0: tensor<3x8xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x8xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = call @logaddexp(%arg0, %cst) : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
    return %0 : tensor<3x8xf32>
  }
  func.func private @logaddexp(%arg0: tensor<3x8xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<f32> {mhlo.layout_mode = "default"}) -> (tensor<3x8xf32> {mhlo.layout_mode = "default"}) {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<3x8xf32>
    %2 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %3 = stablehlo.subtract %arg0, %2 : tensor<3x8xf32>
    %4 = stablehlo.compare  NE, %3, %3,  FLOAT : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xi1>
    %5 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<3x8xf32>
    %6 = stablehlo.add %arg0, %5 : tensor<3x8xf32>
    %7 = stablehlo.abs %3 : tensor<3x8xf32>
    %8 = stablehlo.negate %7 : tensor<3x8xf32>
    %9 = stablehlo.exponential %8 : tensor<3x8xf32>
    %10 = stablehlo.log_plus_one %9 : tensor<3x8xf32>
    %11 = stablehlo.add %1, %10 : tensor<3x8xf32>
    %12 = stablehlo.select %4, %6, %11 : tensor<3x8xi1>, tensor<3x8xf32>
    return %12 : tensor<3x8xf32>
  }
  func.func private @silu(%arg0: tensor<3x8xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x8xf32> {mhlo.layout_mode = "default"}) {
    %0 = stablehlo.logistic %arg0 : tensor<3x8xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<3x8xf32>
    return %1 : tensor<3x8xf32>
  }
}
