// Probe (branch shloprobe): a KV cache write, lax.dynamic_update_slice(cache,
// new, (0, pos, 0)) with pos a traced scalar (wrapped when negative, then
// clamped by the op: 7 gives 6), the updated cache read by a dot with a
// query, and a row write x.at[i].set(row) on a [6, 3] table (jnp's scatter
// for a scalar index prints as dynamic_update_slice too), as
// `jax.jit(step).lower(cache, new, pos, q, x, row).as_text()` prints it in
// jax 0.4.3x-0.5. Written by hand from our knowledge of that output.
module @jit_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x8x4xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<1x2x4xf32> {mhlo.layout_mode = "default"}, %arg2: tensor<i32> {mhlo.layout_mode = "default"}, %arg3: tensor<1x4xf32> {mhlo.layout_mode = "default"}, %arg4: tensor<6x3xf32> {mhlo.layout_mode = "default"}, %arg5: tensor<3xf32> {mhlo.layout_mode = "default"}) -> (tensor<1x8x4xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<1x8xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}, tensor<6x3xf32> {jax.result_info = "[2]", mhlo.layout_mode = "default"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare  LT, %arg2, %c,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<8> : tensor<i32>
    %1 = stablehlo.add %arg2, %c_0 : tensor<i32>
    %2 = stablehlo.select %0, %1, %arg2 : tensor<i1>, tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.dynamic_update_slice %arg0, %arg1, %c_1, %2, %c_1 : (tensor<1x8x4xf32>, tensor<1x2x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x4xf32>
    %4 = stablehlo.dot_general %arg3, %3, batching_dims = [0] x [0], contracting_dims = [1] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8xf32>
    %c_2 = stablehlo.constant dense<4> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %arg5, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.dynamic_update_slice %arg4, %5, %c_2, %c_3 : (tensor<6x3xf32>, tensor<1x3xf32>, tensor<i32>, tensor<i32>) -> tensor<6x3xf32>
    return %3, %4, %6 : tensor<1x8x4xf32>, tensor<1x8xf32>, tensor<6x3xf32>
  }
}
