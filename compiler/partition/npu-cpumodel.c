/* SPDX-License-Identifier: MIT */
/*
 * npu-cpumodel.c: "RK3588 CPU model v1", the analytic CPU cost that
 * partitioning uses in board mode (npu-partition.h). It prices a node as our
 * CPU kernel would run on the RK3588's Cortex-A76 cores - modeled, NOT
 * measured on a board - so that the same model compiles to the same program
 * on any host (the simulator compiles what the board would) and twice in a
 * row (no measurement noise). Per node:
 *
 *   compute_s = flops / (cores x per-core GEMM rate)          GEMM-like ops
 *             + elements x cycles per element / (cores x clock)  the rest
 *   memory_s  = bytes read and written / DRAM bandwidth       (shared by the cores)
 *   time      = max(compute_s, memory_s) + dispatch
 *
 * The constants (one table, npu_cpu_model_v1 below; docs/performance.md
 * quotes it) come from public specs where one exists and are otherwise
 * assumptions, stated as such:
 *
 *   cores            4 Cortex-A76 for threads <= 0, else min(threads, 4) (the
 *                    four A55s are ignored: a quarter of an A76's NEON rate each)
 *   clock            2.4 GHz (RK3588 datasheet, A76 cluster maximum)
 *   fp32 peak        16 FLOP/cycle/core: two 128-bit NEON FMA pipes x 4 lanes x 2
 *                    (Arm Cortex-A76 software optimisation guide) = 38.4 GFLOP/s
 *   GEMM efficiency  0.65 of peak (assumption: OpenBLAS-class sgemm on A76)
 *   DRAM bandwidth   12 GB/s effective for the CPU cluster (assumption: LPDDR4x,
 *                    ~34 GB/s theoretical, CPU streaming typically 10-15 GB/s)
 *   dispatch         1 us per op (assumption: executor step and kernel entry;
 *                    the kernel entry alone is 0.1 us on the calibration host)
 *   Add              1 cycle per element on one A76 (assumption: 4-lane NEON on
 *                    cache-resident operands, with our generic broadcast loops)
 *
 * Other elementwise, transcendental, normalisation and data-movement ops are
 * priced in cycles per element RELATIVE to Add. The ratios were measured once,
 * offline, with our own kernels on the x86 development host, one thread, on
 * [196, 768] fp32 operands that stay in its caches
 * (tests/artifact/calib-cpu-model; Add 0.14 ns per element there), and are
 * written below as constants: nothing is measured at compile time. Ops that
 * were not calibrated take their class's figure (noted in the table).
 *
 * Host conversions (fp32 NCHW <-> fp16 NC1HWC2, one thread: a dtype pass and
 * a layout pass, npu-program-convert.c) are modeled the same way: 9.6 cycles
 * per element (9.6 x Add on the calibration host) against 10 bytes of traffic
 * per element on one core.
 */
#include <math.h>
#include <string.h>

#include "npu/npu-partition.h"

const struct npu_cpu_model npu_cpu_model_v1 = {
    .name = "RK3588 CPU model v1",
    .big_cores = 4,
    .clock_hz = 2.4e9,
    .flop_per_cycle = 16,
    .gemm_efficiency = 0.65,
    .dram_bytes_per_s = 12e9,
    .dispatch_s = 1e-6,
    .add_cycles_per_elem = 1.0,
    .convert_cycles_per_elem = 9.6,
    .convert_bytes_per_elem = 10,
};

/* Cycles per element relative to Add (calibration host ratios, see above), and
 * the class an op is priced by. "elements" is the output's count, except for
 * reductions and global pools (the input's). */
struct op_model {
    enum npu_cpu_class cls;
    double rel; /* x Add's cycles per element */
};

static struct op_model
op_model(enum npu_op op)
{
    switch (op) {
    /* GEMM-like: priced by flops */
    case NPU_OP_MATMUL:
    case NPU_OP_GEMM:
    case NPU_OP_CONV:
    case NPU_OP_CONV_TRANSPOSE:
    case NPU_OP_EINSUM:
    case NPU_OP_MATMUL_INTEGER:
    case NPU_OP_CONV_INTEGER:
    case NPU_OP_QLINEAR_MATMUL:
    case NPU_OP_QLINEAR_CONV: return (struct op_model){NPU_CPU_CLASS_GEMM, 0};
    case NPU_OP_FUSED_ATTENTION: /* its two products, plus the softmax per score */
        return (struct op_model){NPU_CPU_CLASS_GEMM, 6.25};
    /* elementwise, calibrated: Add 1.00, Mul 0.9-1.0, Relu 0.7, Div 1.47, Sqrt 2.44,
     * Cast to fp16 3.85 */
    case NPU_OP_DIV:
    case NPU_OP_RECIPROCAL:
    case NPU_OP_MOD: return (struct op_model){NPU_CPU_CLASS_ELEMENTWISE, 1.47};
    case NPU_OP_SQRT: return (struct op_model){NPU_CPU_CLASS_ELEMENTWISE, 2.44};
    case NPU_OP_CAST:
    case NPU_OP_CAST_LIKE: return (struct op_model){NPU_CPU_CLASS_ELEMENTWISE, 3.85};
    /* transcendental, calibrated: Exp 3.71, Tanh 8.2, Erf 7.5, Sigmoid 5.45, Gelu 9.1,
     * npu.GeluTanh 5.93, npu.SiLU 5.93; Log as Exp, Sin/Cos/Pow as Tanh, Softplus,
     * Elu, Selu as Sigmoid (not calibrated) */
    case NPU_OP_EXP:
    case NPU_OP_LOG: return (struct op_model){NPU_CPU_CLASS_TRANSCENDENTAL, 3.71};
    case NPU_OP_TANH:
    case NPU_OP_SIN:
    case NPU_OP_COS:
    case NPU_OP_POW: return (struct op_model){NPU_CPU_CLASS_TRANSCENDENTAL, 8.2};
    case NPU_OP_ERF: return (struct op_model){NPU_CPU_CLASS_TRANSCENDENTAL, 7.5};
    case NPU_OP_SIGMOID:
    case NPU_OP_SOFTPLUS:
    case NPU_OP_ELU:
    case NPU_OP_SELU: return (struct op_model){NPU_CPU_CLASS_TRANSCENDENTAL, 5.45};
    case NPU_OP_GELU: return (struct op_model){NPU_CPU_CLASS_TRANSCENDENTAL, 9.1};
    case NPU_OP_FUSED_GELU_TANH:
    case NPU_OP_FUSED_SILU: return (struct op_model){NPU_CPU_CLASS_TRANSCENDENTAL, 5.93};
    /* normalisations and reductions, calibrated: Softmax 6.25 per element,
     * LayerNorm 2.7, ReduceMean 0.78 per input element; InstanceNorm as LayerNorm,
     * BatchNorm (an affine per element) 1.5, other reductions as ReduceMean */
    case NPU_OP_SOFTMAX:
    case NPU_OP_LOG_SOFTMAX: return (struct op_model){NPU_CPU_CLASS_REDUCTION, 6.25};
    case NPU_OP_LAYER_NORMALIZATION:
    case NPU_OP_INSTANCE_NORMALIZATION: return (struct op_model){NPU_CPU_CLASS_REDUCTION, 2.7};
    case NPU_OP_BATCH_NORMALIZATION: return (struct op_model){NPU_CPU_CLASS_REDUCTION, 1.5};
    case NPU_OP_REDUCE_MEAN:
    case NPU_OP_REDUCE_SUM:
    case NPU_OP_REDUCE_MAX:
    case NPU_OP_REDUCE_MIN:
    case NPU_OP_REDUCE_PROD:
    case NPU_OP_REDUCE_L2:
    case NPU_OP_REDUCE_SUM_SQUARE:
    case NPU_OP_ARGMAX:
    case NPU_OP_ARGMIN:
    case NPU_OP_GLOBAL_AVERAGE_POOL:
    case NPU_OP_GLOBAL_MAX_POOL:
    case NPU_OP_CUMSUM: return (struct op_model){NPU_CPU_CLASS_REDUCTION, 0.78};
    case NPU_OP_MAX_POOL:
    case NPU_OP_AVERAGE_POOL: /* per output element and window tap */
        return (struct op_model){NPU_CPU_CLASS_REDUCTION, 1.0};
    /* data movement, calibrated: Transpose 4.3 per element, Identity (a memmove)
     * 0.68; Gather and GatherElements as Transpose (indexed reads), Resize as
     * Tanh (interpolation), contiguous copies as Add */
    case NPU_OP_TRANSPOSE:
    case NPU_OP_GATHER:
    case NPU_OP_GATHER_ELEMENTS: return (struct op_model){NPU_CPU_CLASS_MOVE, 4.3};
    case NPU_OP_RESIZE: return (struct op_model){NPU_CPU_CLASS_MOVE, 8.2};
    case NPU_OP_CONCAT:
    case NPU_OP_SPLIT:
    case NPU_OP_SLICE:
    case NPU_OP_PAD:
    case NPU_OP_EXPAND:
    case NPU_OP_TILE:
    case NPU_OP_TRILU: return (struct op_model){NPU_CPU_CLASS_MOVE, 1.0};
    /* views: our CPU executor still copies the bytes (memmove) */
    case NPU_OP_RESHAPE:
    case NPU_OP_FLATTEN:
    case NPU_OP_SQUEEZE:
    case NPU_OP_UNSQUEEZE:
    case NPU_OP_IDENTITY:
    case NPU_OP_DROPOUT: return (struct op_model){NPU_CPU_CLASS_VIEW, 0.68};
    case NPU_OP_SHAPE:
    case NPU_OP_SIZE:
    case NPU_OP_CONSTANT:
    case NPU_OP_CONSTANT_OF_SHAPE:
    case NPU_OP_RANGE: return (struct op_model){NPU_CPU_CLASS_VIEW, 1.0};
    case NPU_OP_QUANTIZE_LINEAR:
    case NPU_OP_DEQUANTIZE_LINEAR: /* as Div (scale, round) */
        return (struct op_model){NPU_CPU_CLASS_ELEMENTWISE, 1.47};
    default: /* the remaining elementwise ops: as Add */
        return (struct op_model){NPU_CPU_CLASS_ELEMENTWISE, 1.0};
    }
}

const char *
npu_cpu_class_name(enum npu_cpu_class c)
{
    switch (c) {
    case NPU_CPU_CLASS_GEMM: return "gemm";
    case NPU_CPU_CLASS_ELEMENTWISE: return "elementwise";
    case NPU_CPU_CLASS_TRANSCENDENTAL: return "transcendental";
    case NPU_CPU_CLASS_REDUCTION: return "reduction";
    case NPU_CPU_CLASS_MOVE: return "move";
    case NPU_CPU_CLASS_VIEW: return "view";
    }
    return "?";
}

static int64_t
numel(const struct npu_value *v)
{
    return v ? NPU_MAX(npu_tensor_numel(&v->t), 0) : 0;
}

static int64_t
nbytes(const struct npu_value *v)
{
    return v ? NPU_MAX(npu_tensor_nbytes(&v->t), 0) : 0;
}

static int64_t
dim_or1(const struct npu_value *v, int i)
{
    if (!v || v->t.ndim == 0)
        return 1;
    if (i < 0)
        i += v->t.ndim;
    return i >= 0 && i < v->t.ndim ? NPU_MAX(v->t.dims[i], 0) : 1;
}

/* Product of dims [from, ndim) of v. */
static double
dims_from(const struct npu_value *v, int from)
{
    double p = 1;
    for (int i = from; v && i < v->t.ndim; i++)
        p *= (double)NPU_MAX(v->t.dims[i], 0);
    return p;
}

/* Einsum: 2 x (size of every distinct index letter), the cost of the naive
 * contraction; ellipsis dims count as the output's leading dims. */
static double
einsum_flops(const struct npu_node *n)
{
    const char *eq = npu_node_string(n, "equation", "");
    int64_t size[128];
    bool seen[128] = {false};
    const char *p = eq;
    for (int k = 0; k < n->nin && *p && *p != '-'; k++) {
        const struct npu_value *v = n->in[k];
        const char *end = p;
        while (*end && *end != ',' && *end != '-')
            end++;
        /* letters before "..." map to leading dims, letters after it to trailing dims */
        const char *ell = NULL;
        for (const char *q = p; q + 2 < end; q++)
            if (q[0] == '.' && q[1] == '.' && q[2] == '.') {
                ell = q;
                break;
            }
        int trail = 0;
        for (const char *q = ell; q && q < end; q++)
            trail += (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z');
        int ndim = v ? v->t.ndim : 0, li = 0, ti = 0;
        for (const char *q = p; q < end; q++) {
            unsigned c = (unsigned char)*q;
            if (c >= 128 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
                continue;
            int d = ell && q > ell ? ndim - trail + ti++ : li++;
            int64_t s = v && d >= 0 && d < ndim ? NPU_MAX(v->t.dims[d], 0) : 1;
            if (!seen[c] || s > size[c])
                size[c] = s;
            seen[c] = true;
        }
        p = *end == ',' ? end + 1 : end;
    }
    double f = 2;
    for (int c = 0; c < 128; c++)
        if (seen[c])
            f *= (double)size[c];
    /* the ellipsis' batch dims: whatever of the output the letters do not explain */
    double letters_out = 1;
    const char *arrow = strstr(eq, "->");
    if (arrow)
        for (const char *q = arrow + 2; *q; q++)
            if ((unsigned char)*q < 128 && seen[(unsigned char)*q])
                letters_out *= (double)size[(unsigned char)*q];
    double out = n->nout ? (double)numel(n->out[0]) : 1;
    if (arrow && letters_out > 0 && out > letters_out)
        f *= out / letters_out;
    return f;
}

/* Floating-point operations of a GEMM-like node (multiply and add counted apart). */
static double
gemm_flops(const struct npu_node *n)
{
    const struct npu_value *y = n->nout ? n->out[0] : NULL;
    double out = (double)numel(y);
    switch (n->op) {
    case NPU_OP_MATMUL:
    case NPU_OP_MATMUL_INTEGER: return 2 * out * (double)dim_or1(n->nin ? n->in[0] : NULL, -1);
    case NPU_OP_QLINEAR_MATMUL: return 2 * out * (double)dim_or1(n->nin ? n->in[0] : NULL, -1);
    case NPU_OP_GEMM: {
        const struct npu_value *a = n->nin ? n->in[0] : NULL;
        bool ta = npu_node_int(n, "transA", 0) != 0;
        return 2 * out * (double)dim_or1(a, ta ? 0 : 1);
    }
    case NPU_OP_CONV:
    case NPU_OP_CONV_INTEGER: /* W [Cout, Cin/group, k...] */
        return 2 * out * dims_from(n->nin > 1 ? n->in[1] : NULL, 1);
    case NPU_OP_QLINEAR_CONV: return 2 * out * dims_from(n->nin > 3 ? n->in[3] : NULL, 1);
    case NPU_OP_CONV_TRANSPOSE: /* W [Cin, Cout/group, k...]: every input element scatters */
        return 2 * (double)numel(n->nin ? n->in[0] : NULL) *
               dims_from(n->nin > 1 ? n->in[1] : NULL, 1);
    case NPU_OP_EINSUM: return einsum_flops(n);
    case NPU_OP_FUSED_ATTENTION: { /* Q [.., Sq, D], K [.., Sk, D], V [.., Sk, Dv], Y [.., Sq, Dv]
                                    */
        double d = (double)dim_or1(n->nin ? n->in[0] : NULL, -1);
        double sk = (double)dim_or1(n->nin > 1 ? n->in[1] : NULL, -2);
        double dv = (double)dim_or1(y, -1);
        double rows = dv > 0 ? out / dv : 0;
        return 2 * rows * sk * d + 2 * out * sk;
    }
    default: return 0;
    }
}

/* Whether n, a node of graph g, is an npu.Attention that reads K and V as the fp16 rows the
 * NPU holds (npu_cpu_attn16_decode): both are caches the NPU appends to in place
 * (npu_partition_kv_read_in_place; the lowering then reads them there, whatever else the
 * partition decides, as long as their writes are on the NPU, which they are by cost: 4
 * against 83 us a write for GPT-2 small). Its Q, mask and Y stay host fp32. A compiled step
 * (g NULL) needs no test: its caller gives K and V their fp16 memory dtype, whose bytes are
 * what nbytes counts. */
static bool
attn_kv_fp16(const struct npu_graph *g, const struct npu_node *n)
{
    return g && n->op == NPU_OP_FUSED_ATTENTION && n->nin >= 3 && n->in[1] && n->in[2] &&
           npu_partition_kv_read_in_place(n->in[1]) && npu_partition_kv_read_in_place(n->in[2]);
}

double
npu_cpu_model_cost(const struct npu_graph *g, const struct npu_node *n, int threads,
                   struct npu_cpu_model_terms *terms)
{
    const struct npu_cpu_model *m = &npu_cpu_model_v1;
    struct op_model om = op_model(n->op);
    struct npu_cpu_model_terms t = {.cls = om.cls};
    t.cores = threads <= 0 ? m->big_cores : NPU_MIN((double)threads, m->big_cores);
    const struct npu_value *y = n->nout ? n->out[0] : NULL;

    /* bytes: every input read once and every output written once, except
     * where the kernel reads a part of an input */
    double in_b = 0, out_b = 0;
    const bool kv16 = attn_kv_fp16(g, n);
    for (int i = 0; i < n->nin; i++)
        in_b +=
            kv16 && (i == 1 || i == 2) ? 2.0 * (double)numel(n->in[i]) : (double)nbytes(n->in[i]);
    for (int i = 0; i < n->nout; i++)
        out_b += (double)nbytes(n->out[i]);
    if (n->op == NPU_OP_GATHER || n->op == NPU_OP_SLICE) /* only the rows it takes */
        in_b = out_b + (n->nin > 1 ? (double)nbytes(n->in[1]) : 0);
    t.bytes = in_b + out_b;

    double per_core_hz = m->clock_hz;
    if (om.cls == NPU_CPU_CLASS_GEMM) {
        t.flops = gemm_flops(n);
        if (n->op == NPU_OP_FUSED_ATTENTION) { /* the softmax over the scores */
            double dv = (double)dim_or1(y, -1);
            t.elems =
                dv > 0 ? (double)numel(y) / dv * (double)dim_or1(n->nin > 1 ? n->in[1] : NULL, -2)
                       : 0;
            t.cycles_per_elem = om.rel * m->add_cycles_per_elem;
        }
        t.compute_s = t.flops / (t.cores * m->flop_per_cycle * m->gemm_efficiency * per_core_hz) +
                      t.elems * t.cycles_per_elem / (t.cores * per_core_hz);
    } else {
        switch (n->op) {
        case NPU_OP_REDUCE_MEAN:
        case NPU_OP_REDUCE_SUM:
        case NPU_OP_REDUCE_MAX:
        case NPU_OP_REDUCE_MIN:
        case NPU_OP_REDUCE_PROD:
        case NPU_OP_REDUCE_L2:
        case NPU_OP_REDUCE_SUM_SQUARE:
        case NPU_OP_ARGMAX:
        case NPU_OP_ARGMIN:
        case NPU_OP_GLOBAL_AVERAGE_POOL:
        case NPU_OP_GLOBAL_MAX_POOL: t.elems = (double)numel(n->nin ? n->in[0] : NULL); break;
        case NPU_OP_MAX_POOL:
        case NPU_OP_AVERAGE_POOL: {
            size_t nk = 0;
            const int64_t *k = npu_node_ints(n, "kernel_shape", &nk);
            double taps = 1;
            for (size_t i = 0; k && i < nk; i++)
                taps *= (double)NPU_MAX(k[i], 1);
            t.elems = (double)numel(y) * taps;
            break;
        }
        default:
            for (int i = 0; i < n->nout; i++)
                t.elems += (double)numel(n->out[i]);
            break;
        }
        t.cycles_per_elem = om.rel * m->add_cycles_per_elem;
        t.compute_s = t.elems * t.cycles_per_elem / (t.cores * per_core_hz);
    }
    t.memory_s = t.bytes / m->dram_bytes_per_s;
    t.total_s = fmax(t.compute_s, t.memory_s) + m->dispatch_s;
    if (terms)
        *terms = t;
    return t.total_s;
}

double
npu_cpu_model_convert_rate(void)
{
    const struct npu_cpu_model *m = &npu_cpu_model_v1;
    double per_elem = fmax(m->convert_cycles_per_elem / m->clock_hz,
                           m->convert_bytes_per_elem / m->dram_bytes_per_s);
    return 4.0 / per_elem; /* bytes of fp32 per second */
}
