// Probe (branch shloprobe): jax.nn.logsumexp(x, axis=1) (the max made 0
// where it is not finite: stablehlo.is_finite, select; sign and abs of the
// sum) and jnp.mod(n, 3) on i32 (stablehlo.remainder, then the sign fix:
// compare on i1, and, select), as `jax.jit(f).lower(x, n).as_text()` prints
// them in jax 0.4.2x-0.5, and jnp.prod(x, axis=1) (reduce with multiply).
// Written by hand from our knowledge of that output.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x5xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<6xi32> {mhlo.layout_mode = "default"}) -> (tensor<3xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<6xi32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}, tensor<3xf32> {jax.result_info = "[2]", mhlo.layout_mode = "default"}) {
    %0 = call @logsumexp(%arg0) : (tensor<3x5xf32>) -> tensor<3xf32>
    %1 = call @remainder(%arg1) : (tensor<6xi32>) -> tensor<6xi32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.multiply across dimensions = [1] : (tensor<3x5xf32>, tensor<f32>) -> tensor<3xf32>
    return %0, %1, %2 : tensor<3xf32>, tensor<6xi32>, tensor<3xf32>
  }
  func.func private @logsumexp(%arg0: tensor<3x5xf32> {mhlo.layout_mode = "default"}) -> (tensor<3xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<3x5xf32>, tensor<f32>) -> tensor<3xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<3xf32>) -> tensor<3x1xf32>
    %2 = stablehlo.is_finite %1 : (tensor<3x1xf32>) -> tensor<3x1xi1>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3x1xf32>
    %4 = stablehlo.select %2, %1, %3 : tensor<3x1xi1>, tensor<3x1xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<3x1xf32>) -> tensor<3x5xf32>
    %6 = stablehlo.subtract %arg0, %5 : tensor<3x5xf32>
    %7 = stablehlo.exponential %6 : tensor<3x5xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.reduce(%7 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<3x5xf32>, tensor<f32>) -> tensor<3xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0] : (tensor<3xf32>) -> tensor<3x1xf32>
    %10 = stablehlo.sign %9 : tensor<3x1xf32>
    %11 = stablehlo.abs %9 : tensor<3x1xf32>
    %12 = stablehlo.log %11 : tensor<3x1xf32>
    %13 = stablehlo.add %12, %4 : tensor<3x1xf32>
    %14 = stablehlo.reshape %13 : (tensor<3x1xf32>) -> tensor<3xf32>
    return %14 : tensor<3xf32>
  }
  func.func private @remainder(%arg0: tensor<6xi32> {mhlo.layout_mode = "default"}) -> (tensor<6xi32> {mhlo.layout_mode = "default"}) {
    %c = stablehlo.constant dense<3> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %1 = stablehlo.remainder %arg0, %0 : tensor<6xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %3 = stablehlo.compare  NE, %1, %2,  SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %5 = stablehlo.compare  LT, %1, %4,  SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.compare  LT, %c, %c_2,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<i1>) -> tensor<6xi1>
    %8 = stablehlo.compare  NE, %5, %7,  UNSIGNED : (tensor<6xi1>, tensor<6xi1>) -> tensor<6xi1>
    %9 = stablehlo.and %8, %3 : tensor<6xi1>
    %10 = stablehlo.add %1, %0 : tensor<6xi32>
    %11 = stablehlo.select %9, %10, %1 : tensor<6xi1>, tensor<6xi32>
    return %11 : tensor<6xi32>
  }
}
