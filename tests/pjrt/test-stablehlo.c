// SPDX-License-Identifier: MIT
/*
 * test-stablehlo.c: the StableHLO text reader on its own. Each program given
 * on the command line must parse into a graph that verifies; then every
 * prefix of it (up to 800) and 1,500 random mutations (bytes replaced by the
 * characters the syntax hangs on) must be refused or accepted without a
 * crash, a hang or a leak (run under ASan by the sanitizer build); and the
 * refusals must name the problem: an unknown op with its line and the
 * StableHLO version, an undefined value, dynamic shapes, bf16, a result type
 * that disagrees with the op, recursion, a missing entry.
 *
 * Usage: test-stablehlo PROGRAM.mlir...
 *   $STABLEHLO_MUTANTS (default 1500) and $STABLEHLO_SEED (default 12345)
 *   set the number of mutants per program and the seed, for longer runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-ir.h"
#include "npu/npu-stablehlo.h"
#include "shlo-test-util.h"

static int failures;

static enum npu_status
parse(const char *text, size_t len)
{
    struct npu_graph *g = NULL;
    last[0] = 0;
    enum npu_status st = npu_stablehlo_parse(text, len, &g);
    if (st == NPU_OK) {
        if (!g || npu_graph_verify(g) != NPU_OK) {
            failures++;
            fprintf(stderr, "FAIL: accepted text gives a graph that does not verify\n");
        }
        npu_graph_free(g);
    } else if (g) {
        failures++;
        fprintf(stderr, "FAIL: a graph came back with an error\n");
    }
    return st;
}

static void
expect_error(const char *text, const char *needle)
{
    enum npu_status st = parse(text, strlen(text));
    if (st == NPU_OK || !strstr(last, needle)) {
        failures++;
        fprintf(stderr, "FAIL: expected an error with '%s', got status %d: %s\n", needle, st, last);
    }
}

static void
expect_ok(const char *text)
{
    if (parse(text, strlen(text)) != NPU_OK) {
        failures++;
        fprintf(stderr, "FAIL: expected the text to parse: %s\n", last);
    }
}

int
main(int argc, char **argv)
{
    npu_log_set_handler(sink, NULL);
    static const char hot[] = "%{}()[]<>:=,x0-\"\n @#";
    const char *es = getenv("STABLEHLO_SEED"), *em = getenv("STABLEHLO_MUTANTS");
    unsigned seed = es ? (unsigned)strtoul(es, NULL, 0) : 12345;
    int nmut = em ? atoi(em) : 1500;
    for (int a = 1; a < argc; a++) {
        size_t len = 0;
        char *text = npu_test_slurp(argv[a], &len);
        if (!text) {
            fprintf(stderr, "FAIL: cannot read %s\n", argv[a]);
            failures++;
            continue;
        }
        if (parse(text, len) != NPU_OK) {
            failures++;
            fprintf(stderr, "FAIL: %s: %s\n", argv[a], last);
        }
        int accepted = 0, mutants = nmut;
        for (size_t cut = 0; cut < len; cut += 1 + len / 800)
            accepted += parse(text, cut) == NPU_OK;
        char *m = malloc(len + 1);
        for (int i = 0; m && i < mutants; i++) {
            memcpy(m, text, len + 1);
            for (int k = 0; k < 1 + i % 3; k++) {
                seed = seed * 1103515245u + 12345u;
                size_t pos = (seed >> 8) % (len ? len : 1);
                seed = seed * 1103515245u + 12345u;
                m[pos] = hot[(seed >> 8) % (sizeof hot - 1)];
            }
            accepted += parse(m, len) == NPU_OK;
        }
        free(m);
        printf("%s: parsed; prefixes and %d mutants survived (%d accepted)\n", argv[a], mutants,
               accepted);
        free(text);
    }

    expect_error("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                 "  %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n"
                 "  %1 = stablehlo.cbrt %0 : tensor<4xf32>\n"
                 "  return %1 : tensor<4xf32>\n}\n",
                 "line 3: 'stablehlo.cbrt' is not supported by the StableHLO reader (StableHLO "
                 "1.0.0");
    expect_error("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                 "  %0 = stablehlo.add %arg0, %nope : tensor<4xf32>\n"
                 "  return %0 : tensor<4xf32>\n}\n",
                 "'%nope' is not defined");
    expect_error("func.func public @main(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
                 "  return %arg0 : tensor<?x4xf32>\n}\n",
                 "dynamic shapes");
    expect_error("func.func public @main(%arg0: tensor<4xbf16>) -> tensor<4xbf16> {\n"
                 "  return %arg0 : tensor<4xbf16>\n}\n",
                 "'bf16' is not supported");
    expect_error("func.func public @main(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
                 "  %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<2x3xf32>) -> "
                 "tensor<2x3xf32>\n"
                 "  return %0 : tensor<2x3xf32>\n}\n",
                 "the result is tensor<3x2xf32> but the program declares tensor<2x3xf32>");
    expect_error("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                 "  %0 = call @f(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n"
                 "  return %0 : tensor<4xf32>\n}\n"
                 "func.func private @f(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                 "  %0 = call @f(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n"
                 "  return %0 : tensor<4xf32>\n}\n",
                 "nested deeper than");
    expect_error("func.func public @a(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                 "  return %arg0 : tensor<4xf32>\n}\n"
                 "func.func public @b(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                 "  return %arg0 : tensor<4xf32>\n}\n",
                 "several public functions");
    expect_error("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                 "  %0 = stablehlo.custom_call @foo(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n"
                 "  return %0 : tensor<4xf32>\n}\n",
                 "custom_call target 'foo'");
    expect_error("func.func public @main(%arg0: tensor<2x3xf32>) -> tensor<2xf32> {\n"
                 "  %c = stablehlo.constant dense<1.0> : tensor<f32>\n"
                 "  %0 = stablehlo.reduce(%arg0 init: %c) applies stablehlo.power across "
                 "dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
                 "  return %0 : tensor<2xf32>\n}\n",
                 "found stablehlo.power");
    expect_error("func.func public @main() -> tensor<3xf32> {\n"
                 "  %c = stablehlo.constant dense<[1.0, 2.0]> : tensor<3xf32>\n"
                 "  return %c : tensor<3xf32>\n}\n",
                 "dense literal has 2 elements");
    /* forms JAX emits that stay outside the reader (branch shloprobe): each
     * refused naming the op or the form, with its line */
    expect_error("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                 "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
                 "  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, "
                 "tensor<4xf32>\n"
                 "   cond {\n"
                 "    %c_1 = stablehlo.constant dense<3> : tensor<i32>\n"
                 "    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i32>, "
                 "tensor<i32>) -> tensor<i1>\n"
                 "    stablehlo.return %1 : tensor<i1>\n"
                 "  } do {\n"
                 "    stablehlo.return %iterArg, %iterArg_0 : tensor<i32>, tensor<4xf32>\n"
                 "  }\n"
                 "  return %0#1 : tensor<4xf32>\n}\n",
                 "line 3: 'stablehlo.while' is not supported");
    expect_error(
        "func.func public @main(%arg0: tensor<8x4xf32>, %arg1: tensor<2x3xf32>, %arg2: "
        "tensor<i32>) -> tensor<8x4xf32> {\n"
        "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
        "  %0 = stablehlo.dynamic_update_slice %arg0, %arg1, %arg2, %c : (tensor<8x4xf32>, "
        "tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<8x4xf32>\n"
        "  return %0 : tensor<8x4xf32>\n}\n",
        "line 3: dynamic_update_slice: an update smaller than the operand on more than one "
        "axis is not supported");
    expect_error("func.func public @main(%arg0: tensor<4x5xf32>, %arg1: tensor<3x2xi32>) -> "
                 "tensor<3xf32> {\n"
                 "  %0 = \"stablehlo.gather\"(%arg0, %arg1) <{dimension_numbers = "
                 "#stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], "
                 "index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, "
                 "1>}> : (tensor<4x5xf32>, tensor<3x2xi32>) -> tensor<3xf32>\n"
                 "  return %0 : tensor<3xf32>\n}\n",
                 "line 2: gather: only the take form is supported");
    expect_error(
        "func.func public @main(%arg0: tensor<4x6xf32>) -> tensor<4x3xf32> {\n"
        "  %cst = stablehlo.constant dense<0.0> : tensor<f32>\n"
        "  %0 = \"stablehlo.reduce_window\"(%arg0, %cst) <{base_dilations = array<i64: 1, "
        "2>, window_dimensions = array<i64: 1, 4>, window_strides = array<i64: 1, 4>}> ({\n"
        "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "    %1 = stablehlo.add %a, %b : tensor<f32>\n"
        "    stablehlo.return %1 : tensor<f32>\n"
        "  }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x3xf32>\n"
        "  return %0 : tensor<4x3xf32>\n}\n",
        "line 3: reduce_window: base dilation is not supported");
    expect_error("func.func public @main(%arg0: tensor<4x6xf32>) -> tensor<4x3xf32> {\n"
                 "  %cst = stablehlo.constant dense<1.0> : tensor<f32>\n"
                 "  %0 = \"stablehlo.reduce_window\"(%arg0, %cst) <{window_dimensions = array<i64: "
                 "1, 2>, window_strides = array<i64: 1, 2>}> ({\n"
                 "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
                 "    %1 = stablehlo.multiply %a, %b : tensor<f32>\n"
                 "    stablehlo.return %1 : tensor<f32>\n"
                 "  }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x3xf32>\n"
                 "  return %0 : tensor<4x3xf32>\n}\n",
                 "line 3: reduce_window: stablehlo.multiply is not supported");
    expect_error(
        "func.func public @main(%arg0: tensor<4x5xf32>, %arg1: tensor<4x5xf32>) -> "
        "tensor<4xf32> {\n"
        "  %cst = stablehlo.constant dense<0.0> : tensor<f32>\n"
        "  %0:2 = stablehlo.reduce(%arg0 init: %cst), (%arg1 init: %cst) across dimensions "
        "= [1] : (tensor<4x5xf32>, tensor<4x5xf32>, tensor<f32>, tensor<f32>) -> "
        "(tensor<4xf32>, tensor<4xf32>)\n"
        "   reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<f32>, %d: tensor<f32>)  {\n"
        "    %1 = stablehlo.add %a, %c : tensor<f32>\n"
        "    %2 = stablehlo.add %b, %d : tensor<f32>\n"
        "    stablehlo.return %1, %2 : tensor<f32>, tensor<f32>\n"
        "  }\n"
        "  return %0#0 : tensor<4xf32>\n}\n",
        "line 3: reduce: several operands are supported only in the argmax / argmin form");
    expect_error("func.func public @main(%arg0: tensor<3x4xf32>) -> tensor<7x4xf32> {\n"
                 "  %cst = stablehlo.constant dense<0.0> : tensor<f32>\n"
                 "  %0 = stablehlo.pad %arg0, %cst, low = [0, 0], high = [2, 0], interior = [1, 0] "
                 ": (tensor<3x4xf32>, tensor<f32>) -> tensor<7x4xf32>\n"
                 "  return %0 : tensor<7x4xf32>\n}\n",
                 "line 3: pad: interior or negative padding is not supported");
    expect_error(
        "func.func public @main(%arg0: tensor<1x4x4x2xf32>, %arg1: tensor<3x3x2x3xf32>) "
        "-> tensor<1x4x4x3xf32> {\n"
        "  %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, "
        "o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[2, 1], [2, 1]], lhs_dilate = "
        "[2, 2], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 "
        ": i64} : (tensor<1x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x4x4x3xf32>\n"
        "  return %0 : tensor<1x4x4x3xf32>\n}\n",
        "line 2: convolution: input dilation (lhs_dilate, a transposed convolution) is "
        "supported only with window strides 1");
    expect_error("func.func public @main(%arg0: tensor<4xbf16>) -> tensor<4xf32> {\n"
                 "  %0 = stablehlo.convert %arg0 : (tensor<4xbf16>) -> tensor<4xf32>\n"
                 "  return %0 : tensor<4xf32>\n}\n",
                 "line 1: @main argument 0: element type 'bf16' is not supported");
    /* argmin with the reducer in the generic form (as MLIR bytecode decodes), and a take
     * of one index with index_vector_dim left out (0) */
    expect_ok("func.func public @main(%arg0: tensor<4x5xf32>) -> tensor<4xi32> {\n"
              "  %0 = stablehlo.iota dim = 1 : tensor<4x5xi32>\n"
              "  %cst = stablehlo.constant dense<0x7F800000> : tensor<f32>\n"
              "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
              "  %1:2 = \"stablehlo.reduce\"(%arg0, %0, %cst, %c) ({\n"
              "  ^bb0(%a: tensor<f32>, %b: tensor<i32>, %x: tensor<f32>, %y: tensor<i32>):\n"
              "    %2 = \"stablehlo.compare\"(%a, %x) {compare_type = "
              "#stablehlo<comparison_type FLOAT>, comparison_direction = "
              "#stablehlo<comparison_direction LT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
              "    %3 = \"stablehlo.select\"(%2, %a, %x) : (tensor<i1>, tensor<f32>, tensor<f32>) "
              "-> tensor<f32>\n"
              "    %4 = \"stablehlo.select\"(%2, %b, %y) : (tensor<i1>, tensor<i32>, tensor<i32>) "
              "-> tensor<i32>\n"
              "    \"stablehlo.return\"(%3, %4) : (tensor<f32>, tensor<i32>) -> ()\n"
              "  }) {dimensions = array<i64: 1>} : (tensor<4x5xf32>, tensor<4x5xi32>, "
              "tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)\n"
              "  return %1#1 : tensor<4xi32>\n}\n");
    expect_ok("func.func public @main(%arg0: tensor<5x3xf32>, %arg1: tensor<1xi32>) -> "
              "tensor<3xf32> {\n"
              "  %0 = \"stablehlo.gather\"(%arg0, %arg1) <{dimension_numbers = "
              "#stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [0], start_index_map = "
              "[0]>, indices_are_sorted = true, slice_sizes = array<i64: 1, 3>}> : "
              "(tensor<5x3xf32>, tensor<1xi32>) -> tensor<3xf32>\n"
              "  return %0 : tensor<3xf32>\n}\n");
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
