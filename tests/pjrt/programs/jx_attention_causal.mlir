// Probe (branch shloprobe): causal self-attention with einsum projections
// ('bsd,dhk->bshk', 'bqhd,bkhd->bhqk', 'bhqk,bkhd->bqhd', 'bshk,hkd->bsd'),
// the mask from jnp.arange(6)[:, None] >= jnp.arange(6)[None, :] and
// jnp.where(mask, s, -1e9) (the jitted private @_where), softmax, residual,
// as `jax.jit(f).lower(x, wq, wk, wv, wo).as_text()` prints it in jax
// 0.5-0.7 (%c constant names, plain argument lists). Written by hand from
// our knowledge of that output, not produced by jax.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x6x16xf32>, %arg1: tensor<16x2x8xf32>, %arg2: tensor<16x2x8xf32>, %arg3: tensor<16x2x8xf32>, %arg4: tensor<2x8x16xf32>) -> (tensor<1x6x16xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x6x16xf32>, tensor<16x2x8xf32>) -> tensor<1x6x2x8xf32>
    %1 = stablehlo.dot_general %arg0, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x6x16xf32>, tensor<16x2x8xf32>) -> tensor<1x6x2x8xf32>
    %2 = stablehlo.dot_general %arg0, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x6x16xf32>, tensor<16x2x8xf32>) -> tensor<1x6x2x8xf32>
    %3 = stablehlo.dot_general %0, %1, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>) -> tensor<1x2x6x6xf32>
    %cst = stablehlo.constant dense<0.353553385> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x2x6x6xf32>
    %5 = stablehlo.multiply %3, %4 : tensor<1x2x6x6xf32>
    %6 = stablehlo.iota dim = 0 : tensor<6xi32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %8 = stablehlo.iota dim = 0 : tensor<6xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [1] : (tensor<6xi32>) -> tensor<1x6xi32>
    %10 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<6x1xi32>) -> tensor<6x6xi32>
    %11 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<1x6xi32>) -> tensor<6x6xi32>
    %12 = stablehlo.compare  GE, %10, %11,  SIGNED : (tensor<6x6xi32>, tensor<6x6xi32>) -> tensor<6x6xi1>
    %13 = stablehlo.broadcast_in_dim %12, dims = [2, 3] : (tensor<6x6xi1>) -> tensor<1x2x6x6xi1>
    %cst_0 = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
    %14 = call @_where(%13, %5, %cst_0) : (tensor<1x2x6x6xi1>, tensor<1x2x6x6xf32>, tensor<f32>) -> tensor<1x2x6x6xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %15 = stablehlo.reduce(%14 init: %cst_1) applies stablehlo.maximum across dimensions = [3] : (tensor<1x2x6x6xf32>, tensor<f32>) -> tensor<1x2x6xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1, 2] : (tensor<1x2x6xf32>) -> tensor<1x2x6x1xf32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [0, 1, 2, 3] : (tensor<1x2x6x1xf32>) -> tensor<1x2x6x6xf32>
    %18 = stablehlo.subtract %14, %17 : tensor<1x2x6x6xf32>
    %19 = stablehlo.exponential %18 : tensor<1x2x6x6xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %20 = stablehlo.reduce(%19 init: %cst_2) applies stablehlo.add across dimensions = [3] : (tensor<1x2x6x6xf32>, tensor<f32>) -> tensor<1x2x6xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1, 2] : (tensor<1x2x6xf32>) -> tensor<1x2x6x1xf32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [0, 1, 2, 3] : (tensor<1x2x6x1xf32>) -> tensor<1x2x6x6xf32>
    %23 = stablehlo.divide %19, %22 : tensor<1x2x6x6xf32>
    %24 = stablehlo.dot_general %23, %2, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1], precision = [DEFAULT, DEFAULT] : (tensor<1x2x6x6xf32>, tensor<1x6x2x8xf32>) -> tensor<1x2x6x8xf32>
    %25 = stablehlo.transpose %24, dims = [0, 2, 1, 3] : (tensor<1x2x6x8xf32>) -> tensor<1x6x2x8xf32>
    %26 = stablehlo.dot_general %25, %arg4, contracting_dims = [2, 3] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<1x6x2x8xf32>, tensor<2x8x16xf32>) -> tensor<1x6x16xf32>
    %27 = stablehlo.add %arg0, %26 : tensor<1x6x16xf32>
    return %27 : tensor<1x6x16xf32>
  }
  func.func private @_where(%arg0: tensor<1x2x6x6xi1>, %arg1: tensor<1x2x6x6xf32>, %arg2: tensor<f32>) -> tensor<1x2x6x6xf32> {
    %0 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<1x2x6x6xf32>
    %1 = stablehlo.select %arg0, %arg1, %0 : tensor<1x2x6x6xi1>, tensor<1x2x6x6xf32>
    return %1 : tensor<1x2x6x6xf32>
  }
}
