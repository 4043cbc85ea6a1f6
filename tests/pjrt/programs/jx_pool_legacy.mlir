// Probe (branch shloprobe): flax nn.max_pool((2, 2), strides=(2, 2),
// padding="SAME") of a 5x5 map (padding (0, 1) with -inf) and nn.avg_pool
// ((2, 2), strides=(2, 2)) (a window sum divided by 4), in the older form
// jax 0.4.1x prints (jax.arg_info argument attributes, reduce_window's
// attributes as a dictionary after the region with dense<...> : tensor<4xi64>
// arrays, a generic broadcast_in_dim with an empty dense<> list).
// Written by hand from our knowledge of that output, not produced by jax.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x5x5x2xf32> {jax.arg_info = "x", mhlo.sharding = "{replicated}"}, %arg1: tensor<1x4x4x2xf32> {jax.arg_info = "y", mhlo.sharding = "{replicated}"}) -> (tensor<1x3x3x2xf32> {jax.result_info = "[0]"}, tensor<1x2x2x2xf32> {jax.result_info = "[1]"}) {
    %0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %7 = stablehlo.maximum %arg2, %arg3 : tensor<f32>
      stablehlo.return %7 : tensor<f32>
    }) {padding = dense<[[0, 0], [0, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>, window_dimensions = dense<[1, 2, 2, 1]> : tensor<4xi64>, window_strides = dense<[1, 2, 2, 1]> : tensor<4xi64>} : (tensor<1x5x5x2xf32>, tensor<f32>) -> tensor<1x3x3x2xf32>
    %2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = "stablehlo.reduce_window"(%arg1, %2) ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %7 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %7 : tensor<f32>
    }) {padding = dense<0> : tensor<4x2xi64>, window_dimensions = dense<[1, 2, 2, 1]> : tensor<4xi64>, window_strides = dense<[1, 2, 2, 1]> : tensor<4xi64>} : (tensor<1x4x4x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
    %4 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %5 = "stablehlo.broadcast_in_dim"(%4) {broadcast_dimensions = dense<> : tensor<0xi64>} : (tensor<f32>) -> tensor<1x2x2x2xf32>
    %6 = stablehlo.divide %3, %5 : tensor<1x2x2x2xf32>
    return %1, %6 : tensor<1x3x3x2xf32>, tensor<1x2x2x2xf32>
  }
}
