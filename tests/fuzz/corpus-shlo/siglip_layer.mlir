module @jit_encoder_layer attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<32x32xf32> {mhlo.layout_mode = "default"}, %arg2: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg3: tensor<32x32xf32> {mhlo.layout_mode = "default"}, %arg4: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg5: tensor<32x32xf32> {mhlo.layout_mode = "default"}, %arg6: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg7: tensor<32x32xf32> {mhlo.layout_mode = "default"}, %arg8: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg9: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg10: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg11: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg12: tensor<64xf32> {mhlo.layout_mode = "default"}, %arg13: tensor<32x64xf32> {mhlo.layout_mode = "default"}, %arg14: tensor<32xf32> {mhlo.layout_mode = "default"}, %arg15: tensor<64x32xf32> {mhlo.layout_mode = "default"}, %arg16: tensor<1x16x32xf32> {mhlo.layout_mode = "default"}) -> (tensor<1x16x32xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = call @layer_norm(%arg8, %arg9, %arg16) : (tensor<32xf32>, tensor<32xf32>, tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
    %1 = stablehlo.dot_general %0, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x16x32xf32>, tensor<32x32xf32>) -> tensor<1x16x32xf32>
    %2 = stablehlo.broadcast_in_dim %arg4, dims = [2] : (tensor<32xf32>) -> tensor<1x16x32xf32>
    %3 = stablehlo.add %1, %2 : tensor<1x16x32xf32>
    %4 = stablehlo.dot_general %0, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x16x32xf32>, tensor<32x32xf32>) -> tensor<1x16x32xf32>
    %5 = stablehlo.broadcast_in_dim %arg0, dims = [2] : (tensor<32xf32>) -> tensor<1x16x32xf32>
    %6 = stablehlo.add %4, %5 : tensor<1x16x32xf32>
    %7 = stablehlo.dot_general %0, %arg7, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x16x32xf32>, tensor<32x32xf32>) -> tensor<1x16x32xf32>
    %8 = stablehlo.broadcast_in_dim %arg6, dims = [2] : (tensor<32xf32>) -> tensor<1x16x32xf32>
    %9 = stablehlo.add %7, %8 : tensor<1x16x32xf32>
    %10 = stablehlo.reshape %3 : (tensor<1x16x32xf32>) -> tensor<1x16x4x8xf32>
    %11 = stablehlo.reshape %6 : (tensor<1x16x32xf32>) -> tensor<1x16x4x8xf32>
    %12 = stablehlo.reshape %9 : (tensor<1x16x32xf32>) -> tensor<1x16x4x8xf32>
    %13 = stablehlo.dot_general %10, %11, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1x16x4x8xf32>, tensor<1x16x4x8xf32>) -> tensor<1x4x16x16xf32>
    %cst = stablehlo.constant dense<0.353553385> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x4x16x16xf32>
    %15 = stablehlo.multiply %13, %14 : tensor<1x4x16x16xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %16 = stablehlo.reduce(%15 init: %cst_0) applies stablehlo.maximum across dimensions = [3] : (tensor<1x4x16x16xf32>, tensor<f32>) -> tensor<1x4x16xf32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [0, 1, 2] : (tensor<1x4x16xf32>) -> tensor<1x4x16x16xf32>
    %18 = stablehlo.subtract %15, %17 : tensor<1x4x16x16xf32>
    %19 = stablehlo.exponential %18 : tensor<1x4x16x16xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %20 = stablehlo.reduce(%19 init: %cst_1) applies stablehlo.add across dimensions = [3] : (tensor<1x4x16x16xf32>, tensor<f32>) -> tensor<1x4x16xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1, 2] : (tensor<1x4x16xf32>) -> tensor<1x4x16x16xf32>
    %22 = stablehlo.divide %19, %21 : tensor<1x4x16x16xf32>
    %23 = stablehlo.dot_general %22, %12, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1], precision = [DEFAULT, DEFAULT] : (tensor<1x4x16x16xf32>, tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
    %24 = stablehlo.transpose %23, dims = [0, 2, 1, 3] : (tensor<1x4x16x8xf32>) -> tensor<1x16x4x8xf32>
    %25 = stablehlo.reshape %24 : (tensor<1x16x4x8xf32>) -> tensor<1x16x32xf32>
    %26 = stablehlo.dot_general %25, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x16x32xf32>, tensor<32x32xf32>) -> tensor<1x16x32xf32>
    %27 = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<32xf32>) -> tensor<1x16x32xf32>
    %28 = stablehlo.add %26, %27 : tensor<1x16x32xf32>
    %29 = stablehlo.add %arg16, %28 : tensor<1x16x32xf32>
    %30 = call @layer_norm(%arg10, %arg11, %29) : (tensor<32xf32>, tensor<32xf32>, tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
    %31 = stablehlo.dot_general %30, %arg13, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x16x32xf32>, tensor<32x64xf32>) -> tensor<1x16x64xf32>
    %32 = stablehlo.broadcast_in_dim %arg12, dims = [2] : (tensor<64xf32>) -> tensor<1x16x64xf32>
    %33 = stablehlo.add %31, %32 : tensor<1x16x64xf32>
    %34 = stablehlo.multiply %33, %33 : tensor<1x16x64xf32>
    %35 = stablehlo.multiply %33, %34 : tensor<1x16x64xf32>
    %cst_2 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %36 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1x16x64xf32>
    %37 = stablehlo.multiply %36, %35 : tensor<1x16x64xf32>
    %38 = stablehlo.add %33, %37 : tensor<1x16x64xf32>
    %cst_3 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %39 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<1x16x64xf32>
    %40 = stablehlo.multiply %39, %38 : tensor<1x16x64xf32>
    %41 = stablehlo.tanh %40 : tensor<1x16x64xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %42 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<1x16x64xf32>
    %43 = stablehlo.add %42, %41 : tensor<1x16x64xf32>
    %cst_5 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %44 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<1x16x64xf32>
    %45 = stablehlo.multiply %44, %43 : tensor<1x16x64xf32>
    %46 = stablehlo.multiply %33, %45 : tensor<1x16x64xf32>
    %47 = stablehlo.dot_general %46, %arg15, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x16x64xf32>, tensor<64x32xf32>) -> tensor<1x16x32xf32>
    %48 = stablehlo.broadcast_in_dim %arg14, dims = [2] : (tensor<32xf32>) -> tensor<1x16x32xf32>
    %49 = stablehlo.add %47, %48 : tensor<1x16x32xf32>
    %50 = stablehlo.add %29, %49 : tensor<1x16x32xf32>
    return %50 : tensor<1x16x32xf32>
  }
  func.func private @layer_norm(%arg0: tensor<32xf32>, %arg1: tensor<32xf32>, %arg2: tensor<1x16x32xf32>) -> tensor<1x16x32xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg2 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<1x16x32xf32>, tensor<f32>) -> tensor<1x16xf32>
    %cst_0 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1x16xf32>
    %2 = stablehlo.divide %0, %1 : tensor<1x16xf32>
    %3 = stablehlo.reshape %2 : (tensor<1x16xf32>) -> tensor<1x16x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<1x16x1xf32>) -> tensor<1x16x32xf32>
    %5 = stablehlo.subtract %arg2, %4 : tensor<1x16x32xf32>
    %6 = stablehlo.multiply %5, %5 : tensor<1x16x32xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<1x16x32xf32>, tensor<f32>) -> tensor<1x16xf32>
    %cst_2 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1x16xf32>
    %9 = stablehlo.divide %7, %8 : tensor<1x16xf32>
    %cst_3 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<1x16xf32>
    %11 = stablehlo.add %9, %10 : tensor<1x16xf32>
    %12 = stablehlo.rsqrt %11 : tensor<1x16xf32>
    %13 = stablehlo.reshape %12 : (tensor<1x16xf32>) -> tensor<1x16x1xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1, 2] : (tensor<1x16x1xf32>) -> tensor<1x16x32xf32>
    %15 = stablehlo.multiply %5, %14 : tensor<1x16x32xf32>
    %16 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<32xf32>) -> tensor<1x16x32xf32>
    %17 = stablehlo.multiply %15, %16 : tensor<1x16x32xf32>
    %18 = stablehlo.broadcast_in_dim %arg0, dims = [2] : (tensor<32xf32>) -> tensor<1x16x32xf32>
    %19 = stablehlo.add %17, %18 : tensor<1x16x32xf32>
    return %19 : tensor<1x16x32xf32>
  }
}
