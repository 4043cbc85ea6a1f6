// Probe (branch shloprobe): a dense layer with jax.lax.with_sharding_constraint
// on a one-device mesh, in the form jax 0.6-0.7 prints with Shardy on
// (module attribute jax.uses_shape_polymorphism, an sdy.mesh, sdy.sharding
// argument / result attributes, sdy.sharding_constraint), as
// `jax.jit(f).lower(x, w).as_text()` would print it. Written by hand from our
// knowledge of that output (the least sure of these programs), not produced
// by jax.
module @jit_f attributes {jax.uses_shape_polymorphism = false, mhlo.frontend_attributes = {xla.sdy.use_tuple_args = false}, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]>
  func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<4x3xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {}]> : tensor<4x3xf32>
    %2 = stablehlo.tanh %1 : tensor<4x3xf32>
    return %2 : tensor<4x3xf32>
  }
}
