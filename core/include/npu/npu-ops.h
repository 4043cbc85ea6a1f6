/* SPDX-License-Identifier: MIT */
/*
 * npu-ops.h: the one list of operations that the importer, the IR, the CPU
 * kernels, the partitioner and the NPU lowering all name. ONNX ops keep their
 * ONNX name; ops that exist only after our fusion passes are named "npu.*".
 * Attributes are stored generically (as ONNX does) so that a node can carry
 * whatever its producer had; kernels read them with the npu_attrs_* getters.
 *
 * Adding an op: append a row (never reorder: artifacts store the enum value
 * through its name, but keep the table stable anyway), then give it shape
 * inference (compiler/ir) and a CPU kernel (core/cpu).
 */
#ifndef NPU_OPS_H
#define NPU_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum suffix, name) */
#define NPU_OP_LIST(X)                                                                             \
    /* elementwise, binary with numpy broadcasting */                                              \
    X(ADD, "Add") X(SUB, "Sub") X(MUL, "Mul") X(DIV, "Div") X(POW, "Pow") X(MAX, "Max")           \
    X(MIN, "Min") X(MOD, "Mod") X(SUM, "Sum") X(MEAN, "Mean")                                     \
    X(EQUAL, "Equal") X(LESS, "Less") X(GREATER, "Greater") X(LESS_OR_EQUAL, "LessOrEqual")       \
    X(GREATER_OR_EQUAL, "GreaterOrEqual") X(AND, "And") X(OR, "Or") X(XOR, "Xor")                 \
    X(WHERE, "Where") X(PRELU, "PRelu")                                                           \
    /* elementwise, unary */                                                                      \
    X(SQRT, "Sqrt") X(EXP, "Exp") X(LOG, "Log") X(ABS, "Abs") X(NEG, "Neg")                       \
    X(RECIPROCAL, "Reciprocal") X(RELU, "Relu") X(LEAKY_RELU, "LeakyRelu")                        \
    X(SIGMOID, "Sigmoid") X(TANH, "Tanh") X(HARD_SIGMOID, "HardSigmoid")                          \
    X(HARD_SWISH, "HardSwish") X(ELU, "Elu") X(SELU, "Selu") X(GELU, "Gelu")                      \
    X(SOFTPLUS, "Softplus") X(CLIP, "Clip") X(ERF, "Erf") X(NOT, "Not") X(CAST, "Cast")           \
    X(CAST_LIKE, "CastLike") X(FLOOR, "Floor") X(CEIL, "Ceil") X(ROUND, "Round")                  \
    X(SIGN, "Sign") X(SIN, "Sin") X(COS, "Cos") X(IDENTITY, "Identity") X(DROPOUT, "Dropout")     \
    /* linear algebra and convolution */                                                          \
    X(MATMUL, "MatMul") X(GEMM, "Gemm") X(CONV, "Conv") X(CONV_TRANSPOSE, "ConvTranspose")       \
    X(EINSUM, "Einsum")                                                                           \
    /* pooling and normalisation */                                                               \
    X(MAX_POOL, "MaxPool") X(AVERAGE_POOL, "AveragePool")                                         \
    X(GLOBAL_AVERAGE_POOL, "GlobalAveragePool") X(GLOBAL_MAX_POOL, "GlobalMaxPool")               \
    X(BATCH_NORMALIZATION, "BatchNormalization")                                                  \
    X(INSTANCE_NORMALIZATION, "InstanceNormalization")                                            \
    X(LAYER_NORMALIZATION, "LayerNormalization") X(SOFTMAX, "Softmax")                            \
    X(LOG_SOFTMAX, "LogSoftmax")                                                                  \
    /* reductions */                                                                              \
    X(REDUCE_MEAN, "ReduceMean") X(REDUCE_SUM, "ReduceSum") X(REDUCE_MAX, "ReduceMax")            \
    X(REDUCE_MIN, "ReduceMin") X(REDUCE_PROD, "ReduceProd") X(REDUCE_L2, "ReduceL2")              \
    X(REDUCE_SUM_SQUARE, "ReduceSumSquare") X(ARGMAX, "ArgMax") X(ARGMIN, "ArgMin")               \
    /* shape and data movement */                                                                 \
    X(RESHAPE, "Reshape") X(FLATTEN, "Flatten") X(TRANSPOSE, "Transpose")                         \
    X(SQUEEZE, "Squeeze") X(UNSQUEEZE, "Unsqueeze") X(CONCAT, "Concat") X(SPLIT, "Split")         \
    X(SLICE, "Slice") X(GATHER, "Gather") X(GATHER_ELEMENTS, "GatherElements") X(PAD, "Pad")      \
    X(EXPAND, "Expand") X(TILE, "Tile") X(SHAPE, "Shape") X(SIZE, "Size")                         \
    X(CONSTANT, "Constant") X(CONSTANT_OF_SHAPE, "ConstantOfShape") X(RANGE, "Range")             \
    X(RESIZE, "Resize") X(TRILU, "Trilu") X(CUMSUM, "CumSum")                                     \
    /* quantisation */                                                                            \
    X(QUANTIZE_LINEAR, "QuantizeLinear") X(DEQUANTIZE_LINEAR, "DequantizeLinear")                 \
    X(QLINEAR_CONV, "QLinearConv") X(QLINEAR_MATMUL, "QLinearMatMul")                             \
    X(MATMUL_INTEGER, "MatMulInteger") X(CONV_INTEGER, "ConvInteger")                             \
    /* made by our fusion passes */                                                               \
    X(FUSED_ATTENTION, "npu.Attention") /* softmax(Q.K^T*scale + mask).V */                       \
    X(FUSED_SILU, "npu.SiLU")           /* x * sigmoid(x) */                                      \
    X(FUSED_GELU_TANH, "npu.GeluTanh")  /* 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) */          \
    /* NPU back end: lowered ops whose attributes fix their hardware tasks                  */     \
    /* (docs/npu-backend.md). rk.* values live in NPU memory in the layout their producer  */     \
    /* records; rk.ToNpu / rk.ToHost are the host <-> NPU conversions.                      */     \
    X(RK_TO_NPU, "rk.ToNpu")            /* host tensor -> NPU tensor (CONVERT step) */          \
    X(RK_TO_HOST, "rk.ToHost")          /* NPU tensor -> host tensor (CONVERT step) */          \
    X(RK_CONV, "rk.Conv")               /* conv / matmul tasks on CNA+CORE+DPU */               \
    X(RK_DPU, "rk.Dpu")                 /* DPU / PPU / small-conv task list (DPU lowerings) */  \
    /* added after the rows above, whose values artifacts and tests already hold */               \
    X(DEPTH_TO_SPACE, "DepthToSpace") X(SPACE_TO_DEPTH, "SpaceToDepth")                           \
    X(SCATTER_ND, "ScatterND") X(SCATTER_ELEMENTS, "ScatterElements") X(TOP_K, "TopK")          \
    X(RNN, "RNN") X(GRU, "GRU") X(LSTM, "LSTM")                                                  \
    X(IS_NAN, "IsNaN") X(IS_INF, "IsInf") X(CELU, "Celu") X(ONE_HOT, "OneHot")                    \
    X(GATHER_ND, "GatherND") X(REDUCE_L1, "ReduceL1") X(REDUCE_LOG_SUM, "ReduceLogSum")           \
    X(REDUCE_LOG_SUM_EXP, "ReduceLogSumExp") X(GRID_SAMPLE, "GridSample")                       \
    X(GROUP_NORMALIZATION, "GroupNormalization") X(MISH, "Mish")                                  \
    X(BITWISE_AND, "BitwiseAnd") X(BITWISE_OR, "BitwiseOr") X(BITWISE_XOR, "BitwiseXor")          \
    X(BITWISE_NOT, "BitwiseNot") X(RMS_NORMALIZATION, "RMSNormalization")                        \
    X(CENTER_CROP_PAD, "CenterCropPad") X(COL2IM, "Col2Im") X(AFFINE_GRID, "AffineGrid")          \
    X(STATE_WRITE, "npu.StateWrite") /* S with ROW written at run-time position POS on axis */

enum npu_op {
    NPU_OP_NONE = 0,
#define NPU_OP_ENUM(e, n) NPU_OP_##e,
    NPU_OP_LIST(NPU_OP_ENUM)
#undef NPU_OP_ENUM
        NPU_OP_COUNT
};

/* "Add", "npu.Attention", ...; "?" if out of range. */
const char *npu_op_name(enum npu_op op);
/* Exact, case-sensitive; NPU_OP_NONE if unknown. */
enum npu_op npu_op_from_name(const char *name);
/* True for the NPU back end's lowered ops ("rk.*": NPU-resident, defined by the back end). */
bool npu_op_is_rk(enum npu_op op);

enum npu_attr_type {
    NPU_ATTR_INT,
    NPU_ATTR_FLOAT,
    NPU_ATTR_STRING,
    NPU_ATTR_INTS,
    NPU_ATTR_FLOATS,
    NPU_ATTR_STRINGS,
    NPU_ATTR_TENSOR,
};

struct npu_attr {
    const char *name;
    enum npu_attr_type type;
    int64_t i;               /* INT */
    float f;                 /* FLOAT */
    const char *s;           /* STRING */
    const int64_t *ints;     /* INTS, n entries */
    const float *floats;     /* FLOATS, n entries */
    const char *const *strs; /* STRINGS, n entries */
    size_t n;
    const struct npu_tensor *t; /* TENSOR (data materialised) */
};

/* A borrowed array of attributes; the owner (IR arena, artifact) keeps storage alive. */
struct npu_attrs {
    const struct npu_attr *v;
    size_t n;
};

const struct npu_attr *npu_attrs_find(const struct npu_attrs *a, const char *name);
int64_t npu_attrs_int(const struct npu_attrs *a, const char *name, int64_t def);
float npu_attrs_float(const struct npu_attrs *a, const char *name, float def);
const char *npu_attrs_string(const struct npu_attrs *a, const char *name, const char *def);
/* Returns NULL and *n = 0 when absent (or of another type). */
const int64_t *npu_attrs_ints(const struct npu_attrs *a, const char *name, size_t *n);
const float *npu_attrs_floats(const struct npu_attrs *a, const char *name, size_t *n);
const struct npu_tensor *npu_attrs_tensor(const struct npu_attrs *a, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* NPU_OPS_H */
