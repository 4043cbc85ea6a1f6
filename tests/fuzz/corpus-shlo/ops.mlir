// Every op of the reader outside the model programs, in the pretty and the
// generic forms, with several results (written in the form JAX prints).
module @jit_ops attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<4x6xf32> {mhlo.layout_mode = "default"}, %arg2: tensor<6x5xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x3xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<3xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}, tensor<11x2xf32> {jax.result_info = "[2]", mhlo.layout_mode = "default"}, tensor<4xi32> {jax.result_info = "[3]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.custom_call @opennpu.matmul(%arg0, %arg2) : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
    %1 = stablehlo.multiply %arg0, %arg0 : tensor<4x6xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<4x6xf32>
    %2 = "stablehlo.add"(%1, %cst) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    %3 = stablehlo.negate %2 : tensor<4x6xf32>
    %4 = stablehlo.exponential %3 : tensor<4x6xf32>
    %5 = stablehlo.log %2 : tensor<4x6xf32>
    %6 = stablehlo.sqrt %2 : tensor<4x6xf32>
    %7 = stablehlo.rsqrt %2 : tensor<4x6xf32>
    %8 = stablehlo.logistic %arg1 : tensor<4x6xf32>
    %9 = stablehlo.add %4, %5 : tensor<4x6xf32>
    %10 = stablehlo.add %9, %6 : tensor<4x6xf32>
    %11 = stablehlo.subtract %10, %7 : tensor<4x6xf32>
    %12 = stablehlo.add %11, %8 : tensor<4x6xf32>
    %13 = stablehlo.minimum %12, %arg1 : tensor<4x6xf32>
    %cst_0 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %15 = stablehlo.multiply %13, %14 : tensor<4x6xf32>
    %16 = stablehlo.negate %arg0 : tensor<4x6xf32>
    %17 = stablehlo.subtract %15, %16 : tensor<4x6xf32>
    %18 = stablehlo.concatenate %17, %0, dim = 1 : (tensor<4x6xf32>, tensor<4x5xf32>) -> tensor<4x11xf32>
    %19 = stablehlo.slice %18 [1:4, 2:11:3] : (tensor<4x11xf32>) -> tensor<3x3xf32>
    %20 = stablehlo.iota dim = 1 : tensor<3x3xf32>
    %21 = stablehlo.compare  GT, %19, %20,  FLOAT : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xi1>
    %22 = stablehlo.transpose %20, dims = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %23 = stablehlo.select %21, %19, %22 : tensor<3x3xi1>, tensor<3x3xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %24 = "stablehlo.reduce"(%23, %cst_1) ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %40 = "stablehlo.maximum"(%arg3, %arg4) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%40) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<3x3xf32>, tensor<f32>) -> tensor<3xf32>
    %25 = "stablehlo.transpose"(%18) {permutation = array<i64: 1, 0>} : (tensor<4x11xf32>) -> tensor<11x4xf32>
    %26 = stablehlo.reshape %25 : (tensor<11x4xf32>) -> tensor<11x2x2xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %27 = stablehlo.reduce(%26 init: %cst_2) across dimensions = [2] : (tensor<11x2x2xf32>, tensor<f32>) -> tensor<11x2xf32>
     reducer(%arg3: tensor<f32>, %arg4: tensor<f32>)  {
      %40 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %40 : tensor<f32>
    }
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<4x6xf32>
    %28 = "stablehlo.compare"(%arg0, %cst_3) {comparison_direction = #stablehlo<comparison_direction GT>} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
    %29 = stablehlo.convert %28 : (tensor<4x6xi1>) -> tensor<4x6xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %30 = stablehlo.reduce(%29 init: %c) applies stablehlo.add across dimensions = [1] : (tensor<4x6xi32>, tensor<i32>) -> tensor<4xi32>
    return %23, %24, %27, %30 : tensor<3x3xf32>, tensor<3xf32>, tensor<11x2xf32>, tensor<4xi32>
  }
}
