/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu.h: the CPU kernels (core/cpu). They are the reference every NPU
 * result is compared with and the fallback for every op the NPU cannot run.
 *
 * Contract with the callers (the graph executor in compiler/, the model
 * runtime):
 *  - a kernel implements the newest ONNX form of its op (opset 21): operands
 *    that older opsets gave as attributes (Slice starts/ends, Split sizes,
 *    Squeeze/Unsqueeze/Reduce* axes, Pad pads, Clip min/max, Resize scales)
 *    arrive as input tensors; the importer upgrades older forms;
 *  - the caller has already inferred every output's dtype and shape and
 *    allocated out[i]->data (npu_tensor_nbytes bytes, suitably aligned);
 *    kernels never allocate outputs and never read past the given shapes;
 *  - optional inputs that are absent are NULL entries in `in` (nin counts them);
 *  - a kernel returns NPU_ERR_UNSUPPORTED with a logged reason for a dtype or
 *    attribute value it does not handle, NPU_ERR_INVALID for inconsistent
 *    shapes; it never asserts on input.
 */
#ifndef NPU_CPU_H
#define NPU_CPU_H

#include "npu/npu-common.h"
#include "npu/npu-ops.h"
#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_cpu_ctx;

/* nthreads <= 0: use the number of online CPUs. */
struct npu_cpu_ctx *npu_cpu_ctx_create(int nthreads);
void npu_cpu_ctx_destroy(struct npu_cpu_ctx *ctx);
int npu_cpu_ctx_threads(const struct npu_cpu_ctx *ctx);

/* True if a kernel exists for op (whatever dtypes it supports). */
bool npu_cpu_supports(enum npu_op op);

enum npu_status npu_cpu_run(struct npu_cpu_ctx *ctx, enum npu_op op, const struct npu_attrs *attrs,
                            const struct npu_tensor *const *in, int nin,
                            struct npu_tensor *const *out, int nout);

/* Load-time work for one node whose constant inputs are known, done once per model instead
 * of at every run: today an fp32 Conv with group 1 packs its weights for the direct
 * convolution. in[i] with data != NULL is constant: its bytes must stay valid and unchanged
 * while the result lives; in[i] with data == NULL (or a NULL entry) is only known at run
 * time. *out is NULL when the op has nothing to prepare (not an error). Free with
 * npu_cpu_prep_free (NULL is fine). A prepared object is read-only: any number of contexts
 * may use it at once. */
struct npu_cpu_prep;
enum npu_status npu_cpu_prepare(enum npu_op op, const struct npu_attrs *attrs,
                                const struct npu_tensor *const *in, int nin,
                                struct npu_cpu_prep **out);
void npu_cpu_prep_free(struct npu_cpu_prep *prep);
/* npu_cpu_run with what npu_cpu_prepare made for this node (NULL: plain npu_cpu_run). The
 * kernel uses it only if it was made from the same constant tensors (same data pointer and
 * shape); otherwise it runs as npu_cpu_run does. */
enum npu_status npu_cpu_run_prep(struct npu_cpu_ctx *ctx, const struct npu_cpu_prep *prep,
                                 enum npu_op op, const struct npu_attrs *attrs,
                                 const struct npu_tensor *const *in, int nin,
                                 struct npu_tensor *const *out, int nout);

/* An fp32 1x1 Conv (stride 1, unpadded, one group, its npu_act) whose only reader is a
 * depthwise Conv (W2 [E, 1, KH, KW], group E, its npu_act), run as one step, band of output
 * rows by band, so that the expanded tensor is never written whole (MobileNets' expand ->
 * depthwise pairs). Y is bit-identical to the two Convs run one after the other, with any
 * thread count. Wanted: this CPU has the band form for these shapes (planning asks; the run
 * takes any shape and falls back to the two Convs with a temporary). pw_prep: what
 * npu_cpu_prepare made for the 1x1 Conv, or NULL. NPU_CPU_PWDW=0 in the environment: never
 * wanted, and the run unfused. */
bool npu_cpu_pw_dw_wanted(const struct npu_attrs *pw_attrs, const struct npu_tensor *x,
                          const struct npu_tensor *pw_w, const struct npu_attrs *dw_attrs,
                          const struct npu_tensor *dw_w);
enum npu_status npu_cpu_run_pw_dw(struct npu_cpu_ctx *ctx, const struct npu_cpu_prep *pw_prep,
                                  const struct npu_attrs *pw_attrs, const struct npu_tensor *x,
                                  const struct npu_tensor *pw_w, const struct npu_tensor *pw_b,
                                  const struct npu_attrs *dw_attrs, const struct npu_tensor *dw_w,
                                  const struct npu_tensor *dw_b, struct npu_tensor *y);

/* The fp32 GEMM path the CPU kernels use on this machine ("OpenBLAS (Haswell kernels)",
 * "own AVX-512 6x32 micro-kernel", ...) and, in *why if not NULL, the reason it was chosen
 * (e.g. OpenBLAS running generic kernels on a CPU it does not know). Decided once. */
const char *npu_cpu_gemm_path(const char **why);
/* fp32 MatMul / Gemm with a constant B (most model products) is packed once per model and
 * runs its own kernels, whatever npu_cpu_gemm_path says; this names them (or says packing
 * is off, NPU_CPU_PACK_MB=0). Decided once. */
const char *npu_cpu_gemm_const_path(void);
/* The int8 product kernel (MatMulInteger, QLinearMatMul, QLinearConv) on this machine:
 * "AVX-512 VNNI (vpdpbusd)", "AVX2 (vpmaddwd)", "NEON sdot" or "portable C" by the CPU's
 * features, or the reference loops under NPU_CPU_QGEMM=ref. Decided once. */
const char *npu_cpu_int8_path(void);

/* A decode step's attention over a KV cache held where and as the NPU holds it
 * (core/cpu/npu-cpu-attn16.c): fp16 in the NPU's NC1HWC2 feature layout (facts §2.10,
 * 16-byte atoms), K and V each logical [kv_heads, slots, head_dim] under the canonical view
 * (C = head_dim, H = kv_heads x slots, W = 1), read in place, nothing converted; fp32
 * arithmetic with the fp16 values widened on load (F16C on x86-64, NEON on aarch64, scalar
 * elsewhere). The program runtime calls it for a CPU npu.Attention whose K and V are a
 * resident cache (core/runtime/npu-program-cpu.c); the caller owns the backend's cache
 * maintenance (a CPU read of a device BO needs its sync from the device first). */
/* One cache tensor in the NPU layout: fp16, C2 = 8, W = 1. */
struct npu_attn16_cache {
    const uint16_t *base; /* element (c = 0, row 0) */
    int64_t surf;         /* elements from one 8-channel surface to the next (>= rows x 8) */
};

struct npu_attn16_shape {
    int64_t kv_heads; /* K / V heads */
    int64_t group;    /* query rows per K / V head (GQA group x new tokens; GPT-2: 1) */
    int64_t slots;    /* keys per head, the cache's rows of one head */
    int64_t head_dim; /* channels of K and V, a multiple of 8 */
    float scale;      /* 1 / sqrt(head_dim) */
};

/* A mask value at or below this switches a slot off (a decode step's empty cache slots;
 * compiler/llm/npu-llm.c uses it for them). */
#define NPU_ATTN16_MASK_OFF (-10000.0f)

/* y[kvh][g][d] = sum_j softmax_j(scale x q[kvh][g] . K[kvh][j] + mask[g][j]) V[kvh][j][d]
 * for kv heads h0 .. h1 - 1. q and y are row-major fp32 [kv_heads, group, head_dim], mask
 * fp32 [group, slots] (shared by every head). Query row g reads and sums only slots 0 ..
 * npu_cpu_attn16_read_slots(mask + g x slots, slots) - 1: its trailing slots switched off
 * (mask <= NPU_ATTN16_MASK_OFF) are skipped, whatever K and V hold there (the same result
 * wherever their weights underflow to 0 in fp32, i.e. scores within ~9,900 of each other).
 * work: slots floats. Refuses (NPU_ERR_INVALID) a head_dim not a multiple of 8, a surface
 * stride below the rows, an empty head range or NULL arrays. */
enum npu_status npu_cpu_attn16_decode(const struct npu_attn16_shape *sh, const float *q,
                                      const float *mask, const struct npu_attn16_cache *k,
                                      const struct npu_attn16_cache *v, int64_t h0, int64_t h1,
                                      float *work, float *y);
/* The same, and *read (when not NULL; only on success) the most slots one query row read
 * (npu_cpu_attn16_read_slots of its mask row): each mask row is scanned once. */
enum npu_status npu_cpu_attn16_decode_read(const struct npu_attn16_shape *sh, const float *q,
                                           const float *mask, const struct npu_attn16_cache *k,
                                           const struct npu_attn16_cache *v, int64_t h0, int64_t h1,
                                           float *work, float *y, int64_t *read);

/* fp32 -> 8-bit integers with one scale and zero point, as QuantizeLinear: rintf(x / scale)
 * + zero in float, clamped to [lo, hi], NaN to the zero point; y int8 (u8 false) or uint8.
 * The CPU kernel's common case and the runtime's quantising conversions. */
void npu_cpu_quantize_f32_8(const float *x, int64_t n, float scale, float zero, float lo, float hi,
                            bool u8, void *y);

/* The slots npu_cpu_attn16_decode reads for a query row with this mask row: up to and
 * including the last one above NPU_ATTN16_MASK_OFF (all of them when every one is off). */
int64_t npu_cpu_attn16_read_slots(const float *mask_row, int64_t slots);

/* Which widening loop npu_cpu_attn16_decode runs here: "f16c", "neon" or "scalar".
 * NPU_CPU_ATTN16=scalar forces the scalar one (the tests compare both). */
const char *npu_cpu_attn16_isa(void);

#ifdef __cplusplus
}
#endif

#endif /* NPU_CPU_H */
