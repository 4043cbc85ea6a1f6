// Probe (branch shloprobe): lax.dynamic_slice(x, (i, 0), (2, 4)) and x[i]
// with i a traced scalar (tensor<i32> argument): the index wrapped when
// negative (compare / add / select), then stablehlo.dynamic_slice (whose
// start is clamped into range), and a static x[1:7:2] slice, as
// `jax.jit(f).lower(x, i).as_text()` prints it in jax 0.4.36-0.5.
// Written by hand from our knowledge of that output, not produced by jax.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32>, %arg1: tensor<i32>) -> (tensor<2x4xf32> {jax.result_info = "result[0]"}, tensor<4xf32> {jax.result_info = "result[1]"}, tensor<3x4xf32> {jax.result_info = "result[2]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare  LT, %arg1, %c,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<8> : tensor<i32>
    %1 = stablehlo.add %arg1, %c_0 : tensor<i32>
    %2 = stablehlo.select %0, %1, %arg1 : tensor<i1>, tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.dynamic_slice %arg0, %2, %c_1, sizes = [2, 4] : (tensor<8x4xf32>, tensor<i32>, tensor<i32>) -> tensor<2x4xf32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.compare  LT, %arg1, %c_2,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_3 = stablehlo.constant dense<8> : tensor<i32>
    %5 = stablehlo.add %arg1, %c_3 : tensor<i32>
    %6 = stablehlo.select %4, %5, %arg1 : tensor<i1>, tensor<i32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.dynamic_slice %arg0, %6, %c_4, sizes = [1, 4] : (tensor<8x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %8 = stablehlo.reshape %7 : (tensor<1x4xf32>) -> tensor<4xf32>
    %9 = stablehlo.slice %arg0 [1:7:2, 0:4] : (tensor<8x4xf32>) -> tensor<3x4xf32>
    return %3, %8, %9 : tensor<2x4xf32>, tensor<4xf32>, tensor<3x4xf32>
  }
}
