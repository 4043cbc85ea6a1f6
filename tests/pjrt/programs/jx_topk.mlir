// Probe (branch shloprobe): jax.lax.top_k(logits, 3) (chlo.top_k with two
// results, the values and i32 indices), jnp.isinf and jnp.isneginf
// (chlo.is_inf, chlo.is_neg_inf), as `jax.jit(f).lower(x).as_text()` prints
// them in jax 0.4.2x-0.5. Written by hand from our knowledge of that output.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x10xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x3xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<2x3xi32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}, tensor<2x10xi1> {jax.result_info = "[2]", mhlo.layout_mode = "default"}, tensor<2x10xi1> {jax.result_info = "[3]", mhlo.layout_mode = "default"}) {
    %0:2 = chlo.top_k(%arg0, k = 3) : tensor<2x10xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
    %1 = chlo.is_inf %arg0 : tensor<2x10xf32> -> tensor<2x10xi1>
    %2 = chlo.is_neg_inf %arg0 : tensor<2x10xf32> -> tensor<2x10xi1>
    return %0#0, %0#1, %1, %2 : tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x10xi1>, tensor<2x10xi1>
  }
}
