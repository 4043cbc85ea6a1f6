module @jit_mlp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x32xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg2: tensor<32x8xf32> {mhlo.layout_mode = "default"}, %arg3: tensor<8xf32> {mhlo.layout_mode = "default"}, %arg4: tensor<4x16xf32> {mhlo.layout_mode = "default"}) -> (tensor<4x8xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.dot_general %arg4, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<32xf32>) -> tensor<4x32xf32>
    %2 = stablehlo.add %0, %1 : tensor<4x32xf32>
    %3 = call @relu(%2) : (tensor<4x32xf32>) -> tensor<4x32xf32>
    %4 = stablehlo.dot_general %3, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
    %5 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
    %6 = stablehlo.add %4, %5 : tensor<4x8xf32>
    %7 = stablehlo.tanh %6 : tensor<4x8xf32>
    return %7 : tensor<4x8xf32>
  }
  func.func private @relu(%arg0: tensor<4x32xf32>) -> tensor<4x32xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x32xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<4x32xf32>
    return %1 : tensor<4x32xf32>
  }
}
