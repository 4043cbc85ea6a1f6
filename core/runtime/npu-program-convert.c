/* SPDX-License-Identifier: MIT */
/*
 * npu-program-convert.c: the CONVERT step and the runtime's I/O conversions.
 * A conversion moves a tensor between the host's row-major layout in its
 * logical dtype and what the NPU reads and writes: NC1HWC2 with 16-byte atoms
 * (facts §2.10), the small-channel input layout, fp16 for fp32 tensors, int8
 * with a scale and zero point for quantised ones.
 *
 * Each conversion is two passes at most: a dtype pass with the bulk
 * converters of core/hw (vectorised fp32 <-> fp16) over contiguous memory,
 * and a layout pass that moves whole elements (NC1HWC2 from a [C][H][W]
 * view: C2 planes read in step, atoms written in order; from a [pixels][C]
 * view: up to 16 contiguous bytes per atom). When the dtypes are equal the
 * dtype pass is skipped; when the layouts are equal the layout pass is.
 */
#include <math.h>
#include <string.h>

#include "npu-fp16.h"
#include "npu-layout.h"
#include "npu/npu-cpu.h"
#include "npu/npu-program-check.h"

#define DOM "program"

enum npu_dtype
npu_prog_mem_dtype(const struct npu_prog_tensor *t)
{
    return t->mem_dtype != NPU_DTYPE_UNDEFINED ? t->mem_dtype : t->t.dtype;
}

/* The (images, C, H, W) view of an NC1HWC2 / SMALL_C tensor; false when its
 * element count does not fit npu_c / npu_h / npu_w. npu-program.h defines the
 * orders by the logical row-major element index i, whatever the logical dims:
 * NPU_VIEW_NCHW: element (c, h, w) of image n is i = ((n * C + c) * H + h) * W
 * + w (images stored back to back; one image for what the back end makes);
 * NPU_VIEW_HWC: element (c, h, w) is i = (h * W + w) * C + c (one image). So a
 * [1, 256] Flatten of a [1, 16, 4, 4] map keeps the map's bytes and view. */
struct view {
    uint64_t n;       /* images */
    uint32_t c, h, w; /* npu_c, npu_h, npu_w */
    bool rows;        /* NPU_VIEW_HWC: logical [pixels][C] */
};

static bool
tensor_view(const struct npu_prog_tensor *t, struct view *v)
{
    int64_t numel = npu_tensor_numel(&t->t);
    v->c = t->npu_c;
    v->h = t->npu_h;
    v->w = t->npu_w;
    v->rows = t->npu_order == NPU_VIEW_HWC;
    v->n = 1;
    if (numel < 0 || t->npu_order > NPU_VIEW_HWC)
        return false;
    uint64_t chw = (uint64_t)v->c * v->h * v->w;
    if (!chw)
        return numel == 0;
    if (v->rows)
        return (uint64_t)numel == chw;
    if ((uint64_t)numel % chw)
        return false;
    v->n = (uint64_t)numel / chw;
    return true;
}

uint64_t
npu_prog_tensor_need(const struct npu_prog_tensor *t)
{
    const uint64_t bad = UINT64_MAX;
    enum npu_dtype dt = npu_prog_mem_dtype(t);
    size_t es = npu_dtype_size(dt);
    int64_t numel = npu_tensor_numel(&t->t);
    struct view v;
    if (!es || numel < 0)
        return bad;
    switch (t->layout) {
    case NPU_LAYOUT_NCHW:
        if ((uint64_t)numel > UINT64_MAX / 16)
            return bad;
        return (uint64_t)numel * es;
    case NPU_LAYOUT_NC1HWC2: {
        if (!npu_c2(es) || !tensor_view(t, &v))
            return bad;
        if (numel == 0)
            return 0;
        size_t one = npu_nc1hwc2_bytes(es, v.c, v.h, v.w);
        if (!one || v.n > UINT64_MAX / 16 / one)
            return bad;
        return v.n * one;
    }
    case NPU_LAYOUT_SMALL_C: {
        if (!tensor_view(t, &v) || v.c < 1 || v.c > 4)
            return bad;
        if (numel == 0)
            return 0;
        size_t one = npu_argb_bytes(es, v.c, v.h, v.w, 0);
        if (!one || v.n > UINT64_MAX / 16 / one)
            return bad;
        return v.n * one;
    }
    }
    return bad;
}

/* ---- dtype pass ----------------------------------------------------------------- */

static bool
is_q8(enum npu_dtype d)
{
    return d == NPU_DTYPE_INT8 || d == NPU_DTYPE_UINT8 || d == NPU_DTYPE_INT16;
}

static bool
is_intlike(enum npu_dtype d)
{
    return npu_dtype_is_int(d) || d == NPU_DTYPE_BOOL;
}

static bool
is_float(enum npu_dtype d)
{
    return d == NPU_DTYPE_FP32 || d == NPU_DTYPE_FP16 || d == NPU_DTYPE_FP64;
}

/* Whether zero is a value of the quantised side's dtype where the pass from a to b
 * quantises or dequantises (the zero point is one, as in ONNX; the quantising loop adds it in
 * float and converts the result to an integer, so one far outside would not be a value) */
static bool
zero_ok(enum npu_dtype a, enum npu_dtype b, int32_t zero)
{
    const enum npu_dtype q = is_q8(b) && is_float(a)   ? b
                             : is_q8(a) && is_float(b) ? a
                                                       : NPU_DTYPE_UNDEFINED;
    switch (q) {
    case NPU_DTYPE_INT8: return zero >= INT8_MIN && zero <= INT8_MAX;
    case NPU_DTYPE_UINT8: return zero >= 0 && zero <= UINT8_MAX;
    case NPU_DTYPE_INT16: return zero >= INT16_MIN && zero <= INT16_MAX;
    default: return true;
    }
}

/* Whether the dtype pass can go from a to b; q = the scale is known. */
static bool
dtype_pair_ok(enum npu_dtype a, enum npu_dtype b, bool q)
{
    if (a == b)
        return true;
    bool fa = is_float(a), fb = is_float(b);
    if (fa && fb)
        return true;
    if ((fa && is_q8(b)) || (is_q8(a) && fb))
        return q;
    return is_intlike(a) && is_intlike(b);
}

static double
load_f(enum npu_dtype d, const void *p, size_t i)
{
    switch (d) {
    case NPU_DTYPE_FP32: return ((const float *)p)[i];
    case NPU_DTYPE_FP64: return ((const double *)p)[i];
    case NPU_DTYPE_FP16: return npu_fp16_to_fp32(((const uint16_t *)p)[i]);
    case NPU_DTYPE_INT8: return ((const int8_t *)p)[i];
    case NPU_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case NPU_DTYPE_INT16: return ((const int16_t *)p)[i];
    default: return 0;
    }
}

static int64_t
load_i(enum npu_dtype d, const void *p, size_t i)
{
    switch (d) {
    case NPU_DTYPE_INT8: return ((const int8_t *)p)[i];
    case NPU_DTYPE_UINT8:
    case NPU_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case NPU_DTYPE_INT16: return ((const int16_t *)p)[i];
    case NPU_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case NPU_DTYPE_INT32: return ((const int32_t *)p)[i];
    case NPU_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case NPU_DTYPE_INT64: return ((const int64_t *)p)[i];
    case NPU_DTYPE_UINT64: {
        uint64_t v = ((const uint64_t *)p)[i];
        return v > INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    default: return 0;
    }
}

static int64_t
sat(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void
store_i(enum npu_dtype d, void *p, size_t i, int64_t v)
{
    switch (d) {
    case NPU_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)sat(v, INT8_MIN, INT8_MAX); break;
    case NPU_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)sat(v, 0, UINT8_MAX); break;
    case NPU_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case NPU_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)sat(v, INT16_MIN, INT16_MAX); break;
    case NPU_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)sat(v, 0, UINT16_MAX); break;
    case NPU_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)sat(v, INT32_MIN, INT32_MAX); break;
    case NPU_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)sat(v, 0, UINT32_MAX); break;
    case NPU_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
    case NPU_DTYPE_UINT64: ((uint64_t *)p)[i] = v < 0 ? 0 : (uint64_t)v; break;
    default: break;
    }
}

/* n elements a -> b. scale/zero: the quantisation of whichever side is an
 * 8/16-bit integer when the other is a float. */
static void
dtype_pass(enum npu_dtype a, const void *src, enum npu_dtype b, void *dst, size_t n, float scale,
           int32_t zero)
{
    if (a == b) {
        memcpy(dst, src, n * npu_dtype_size(a));
        return;
    }
    if (a == NPU_DTYPE_FP32 && b == NPU_DTYPE_FP16) {
        npu_fp32_to_fp16_n(dst, src, n);
        return;
    }
    if (a == NPU_DTYPE_FP16 && b == NPU_DTYPE_FP32) {
        npu_fp16_to_fp32_n(dst, src, n);
        return;
    }
    bool fa = is_float(a), fb = is_float(b);
    if (fa && fb) { /* with fp64 on one side: through double (fp16 rounds from fp32) */
        for (size_t i = 0; i < n; i++) {
            double x = load_f(a, src, i);
            if (b == NPU_DTYPE_FP64)
                ((double *)dst)[i] = x;
            else if (b == NPU_DTYPE_FP32)
                ((float *)dst)[i] = (float)x;
            else
                ((uint16_t *)dst)[i] = npu_fp32_to_fp16((float)x);
        }
        return;
    }
    if (a == NPU_DTYPE_FP32 && (b == NPU_DTYPE_INT8 || b == NPU_DTYPE_UINT8)) {
        /* quantise fp32 by the CPU's QuantizeLinear loop itself, so that a conversion that
         * quantises (the back end's fold_conversions) gives its values */
        const bool u8 = b == NPU_DTYPE_UINT8;
        npu_cpu_quantize_f32_8(src, (int64_t)n, scale, (float)zero, u8 ? 0.0f : -128.0f,
                               u8 ? 255.0f : 127.0f, u8, dst);
        return;
    }
    if (fa && is_q8(b)) { /* quantise: round half to even, saturate (ONNX QuantizeLinear) */
        int64_t lo = b == NPU_DTYPE_INT8 ? INT8_MIN : b == NPU_DTYPE_UINT8 ? 0 : INT16_MIN;
        int64_t hi = b == NPU_DTYPE_INT8 ? INT8_MAX : b == NPU_DTYPE_UINT8 ? UINT8_MAX : INT16_MAX;
        for (size_t i = 0; i < n; i++) {
            double q = nearbyint(load_f(a, src, i) / scale) + zero;
            int64_t v = isnan(q) ? 0 : q < (double)lo ? lo : q > (double)hi ? hi : (int64_t)q;
            store_i(b, dst, i, v);
        }
        return;
    }
    if (is_q8(a) && fb) { /* dequantise */
        for (size_t i = 0; i < n; i++) {
            double d = (load_f(a, src, i) - zero) * scale;
            if (b == NPU_DTYPE_FP64)
                ((double *)dst)[i] = d;
            else if (b == NPU_DTYPE_FP32)
                ((float *)dst)[i] = (float)d;
            else
                ((uint16_t *)dst)[i] = npu_fp32_to_fp16((float)d);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) /* integer widths: value-preserving, saturating */
        store_i(b, dst, i, load_i(a, src, i));
}

/* ---- layout pass ---------------------------------------------------------------- */

/* Scatter (to_npu) or gather between logical order and NC1HWC2 for element
 * size ES; C2 = 16 / ES channels per atom (facts §2.10). */
#define DEFINE_CHW(T)                                                                              \
    static void chw_##T(T *npu, T *lin, const struct view *v, bool to_npu)                         \
    {                                                                                              \
        const uint32_t c2 = 16 / sizeof(T);                                                        \
        const size_t hw = (size_t)v->h * v->w, c1 = (v->c + c2 - 1) / c2;                          \
        for (uint64_t n = 0; n < v->n; n++) {                                                      \
            T *img = npu + n * c1 * hw * c2;                                                       \
            T *plane = lin + n * (size_t)v->c * hw;                                                \
            for (size_t cb = 0; cb < c1; cb++) {                                                   \
                uint32_t cn = NPU_MIN(c2, v->c - (uint32_t)cb * c2);                               \
                T *atoms = img + cb * hw * c2;                                                     \
                T *src0 = plane + cb * c2 * hw;                                                    \
                if (to_npu) {                                                                      \
                    for (size_t p = 0; p < hw; p++) {                                              \
                        uint32_t j = 0;                                                            \
                        for (; j < cn; j++)                                                        \
                            atoms[p * c2 + j] = src0[j * hw + p];                                  \
                        for (; j < c2; j++)                                                        \
                            atoms[p * c2 + j] = 0;                                                 \
                    }                                                                              \
                } else {                                                                           \
                    for (size_t p = 0; p < hw; p++)                                                \
                        for (uint32_t j = 0; j < cn; j++)                                          \
                            src0[j * hw + p] = atoms[p * c2 + j];                                  \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEFINE_CHW(uint8_t)
DEFINE_CHW(uint16_t)
DEFINE_CHW(uint32_t)

/* [pixels][C] <-> NC1HWC2: each atom is up to 16 contiguous bytes of a row. */
static void
rows_move(uint8_t *npu, uint8_t *lin, const struct view *v, size_t es, bool to_npu)
{
    const uint32_t c2 = (uint32_t)(16 / es);
    const size_t px = (size_t)v->h * v->w, c1 = (v->c + c2 - 1) / c2;
    const size_t row = (size_t)v->c * es;
    for (size_t cb = 0; cb < c1; cb++) {
        uint32_t cn = NPU_MIN(c2, v->c - (uint32_t)cb * c2);
        size_t nb = cn * es;
        uint8_t *atoms = npu + cb * px * 16;
        uint8_t *src0 = lin + cb * 16;
        if (to_npu) {
            if (nb == 16) {
                for (size_t p = 0; p < px; p++)
                    memcpy(atoms + p * 16, src0 + p * row, 16);
            } else {
                for (size_t p = 0; p < px; p++) {
                    memcpy(atoms + p * 16, src0 + p * row, nb);
                    memset(atoms + p * 16 + nb, 0, 16 - nb);
                }
            }
        } else if (nb == 16) { /* a constant size: inlined, no library call per atom */
            for (size_t p = 0; p < px; p++)
                memcpy(src0 + p * row, atoms + p * 16, 16);
        } else {
            for (size_t p = 0; p < px; p++)
                memcpy(src0 + p * row, atoms + p * 16, nb);
        }
    }
}

/* Small-channel layout, [H][W][C] per image (line = W), from a [C][H][W] or
 * [pixels][C] view. */
static void
smallc_move(uint8_t *npu, uint8_t *lin, const struct view *v, size_t es, bool to_npu)
{
    const size_t hw = (size_t)v->h * v->w, img = hw * v->c * es;
    for (uint64_t n = 0; n < v->n; n++) {
        uint8_t *d = npu + n * img, *s = lin + n * img;
        if (v->rows) { /* [pixels][C] is already the small-channel order */
            if (to_npu)
                memcpy(d, s, img);
            else
                memcpy(s, d, img);
            continue;
        }
        for (size_t p = 0; p < hw; p++)
            for (uint32_t c = 0; c < v->c; c++) {
                uint8_t *a = d + (p * v->c + c) * es, *b = s + ((size_t)c * hw + p) * es;
                if (to_npu)
                    memcpy(a, b, es);
                else
                    memcpy(b, a, es);
            }
    }
}

/* Moves between logical row-major order (lin) and t's layout (npu). */
static void
layout_pass(const struct npu_prog_tensor *t, void *npu, void *lin, bool to_npu)
{
    size_t es = npu_dtype_size(npu_prog_mem_dtype(t));
    struct view v;
    tensor_view(t, &v);
    if (npu_tensor_numel(&t->t) == 0)
        return;
    if (t->layout == NPU_LAYOUT_SMALL_C) {
        smallc_move(npu, lin, &v, es, to_npu);
    } else if (v.rows) {
        rows_move(npu, lin, &v, es, to_npu);
    } else {
        switch (es) {
        case 1: chw_uint8_t(npu, lin, &v, to_npu); break;
        case 2: chw_uint16_t(npu, lin, &v, to_npu); break;
        default: chw_uint32_t(npu, lin, &v, to_npu); break;
        }
    }
}

/* ---- the conversion ------------------------------------------------------------- */

static void
quant_of(const struct npu_prog_tensor *src, const struct npu_prog_tensor *dst, float *scale,
         int32_t *zero)
{
    const struct npu_prog_tensor *q = is_q8(npu_prog_mem_dtype(dst)) ? dst : src;
    *scale = q->t.qscale;
    *zero = q->t.qzero;
}

bool
npu_prog_convert_ok(const struct npu_prog_tensor *src, const struct npu_prog_tensor *dst,
                    const char **why)
{
    const char *w = NULL;
    enum npu_dtype a = npu_prog_mem_dtype(src), b = npu_prog_mem_dtype(dst);
    float scale;
    int32_t zero;
    quant_of(src, dst, &scale, &zero);
    if (npu_tensor_numel(&src->t) < 0 || npu_tensor_numel(&src->t) != npu_tensor_numel(&dst->t))
        w = "element counts differ";
    else if (npu_prog_tensor_need(src) == UINT64_MAX)
        w = "source layout inconsistent with its dims";
    else if (npu_prog_tensor_need(dst) == UINT64_MAX)
        w = "destination layout inconsistent with its dims";
    else if (src->layout != NPU_LAYOUT_NCHW && dst->layout != NPU_LAYOUT_NCHW)
        w = "both sides in NPU layouts (one must be row-major)";
    else if (!dtype_pair_ok(a, b, isfinite(scale) && scale != 0))
        w = "dtype pair not supported (floats, same type, integers, or 8/16-bit with a scale)";
    else if (!zero_ok(a, b, zero))
        w = "zero point outside the quantised dtype's range";
    if (why)
        *why = w;
    return w == NULL;
}

size_t
npu_prog_convert_scratch(const struct npu_prog_tensor *src, const struct npu_prog_tensor *dst)
{
    enum npu_dtype a = npu_prog_mem_dtype(src), b = npu_prog_mem_dtype(dst);
    if (a == b || (src->layout == NPU_LAYOUT_NCHW && dst->layout == NPU_LAYOUT_NCHW))
        return 0;
    int64_t n = npu_tensor_numel(&src->t);
    /* the intermediate is in the NPU side's dtype, logical order */
    enum npu_dtype mid = src->layout == NPU_LAYOUT_NCHW ? b : a;
    return n > 0 ? (size_t)n * npu_dtype_size(mid) : 0;
}

enum npu_status
npu_prog_convert(const struct npu_prog_tensor *src, const void *src_data,
                 const struct npu_prog_tensor *dst, void *dst_data, void *tmp)
{
    const char *why;
    if (!npu_prog_convert_ok(src, dst, &why)) {
        npu_err(DOM, "convert '%s' -> '%s': %s", src->name ? src->name : "?",
                dst->name ? dst->name : "?", why);
        return NPU_ERR_INVALID;
    }
    enum npu_dtype a = npu_prog_mem_dtype(src), b = npu_prog_mem_dtype(dst);
    size_t n = (size_t)npu_tensor_numel(&src->t);
    float scale;
    int32_t zero;
    quant_of(src, dst, &scale, &zero);
    if (n == 0)
        return NPU_OK;
    bool lin_src = src->layout == NPU_LAYOUT_NCHW, lin_dst = dst->layout == NPU_LAYOUT_NCHW;
    if (lin_src && lin_dst) {
        dtype_pass(a, src_data, b, dst_data, n, scale, zero);
    } else if (lin_src) { /* host -> NPU layout */
        const void *mid = src_data;
        if (a != b) {
            dtype_pass(a, src_data, b, tmp, n, scale, zero);
            mid = tmp;
        }
        layout_pass(dst, dst_data, (void *)mid, true);
    } else { /* NPU layout -> host */
        void *mid = a != b ? tmp : dst_data;
        layout_pass(src, (void *)src_data, mid, false);
        if (a != b)
            dtype_pass(a, mid, b, dst_data, n, scale, zero);
    }
    return NPU_OK;
}

/* ---- argmax over an NPU tensor --------------------------------------------------- */

/* One element's value in the running scan (the first maximum: strictly greater only). */
static inline void
argmax_take(struct npu_prog_argmax *acc, int64_t i, float v)
{
    if (acc->index < 0 || v > acc->value) {
        acc->index = i;
        acc->value = v;
    }
}

/* Element e of an fp16 (es 2) or fp32 (es 4) array, as a float (exact); of an int8 array (es
 * 1), its dequantised value, (q - zero) x scale as the conversion's dtype pass computes it. */
static inline float
argmax_load(const uint8_t *p, size_t es, size_t e, float scale, int32_t zero)
{
    if (es == 1)
        return (float)(((double)(int8_t)p[e] - zero) * scale);
    if (es == 2) {
        uint16_t h;
        memcpy(&h, p + e * 2, 2);
        return npu_fp16_to_fp32(h);
    }
    float f;
    memcpy(&f, p + e * 4, 4);
    return f;
}

bool
npu_prog_argmax_dtype_ok(const struct npu_prog_tensor *t)
{
    const enum npu_dtype md = npu_prog_mem_dtype(t);
    return md == NPU_DTYPE_FP16 || md == NPU_DTYPE_FP32 ||
           (md == NPU_DTYPE_INT8 && isfinite(t->t.qscale) && t->t.qscale > 0 &&
            t->t.qzero >= INT8_MIN && t->t.qzero <= INT8_MAX);
}

enum npu_status
npu_prog_argmax(const struct npu_prog_tensor *t, const void *data, int64_t base,
                struct npu_prog_argmax *acc)
{
    const enum npu_dtype md = t ? npu_prog_mem_dtype(t) : NPU_DTYPE_UNDEFINED;
    if (!t || !acc || !npu_prog_argmax_dtype_ok(t) || npu_prog_tensor_need(t) == UINT64_MAX ||
        (t->layout != NPU_LAYOUT_NCHW && t->layout != NPU_LAYOUT_NC1HWC2)) {
        npu_err(DOM,
                "argmax: '%s' is not an fp16 / fp32 / int8 (with a positive scale) row-major or "
                "NC1HWC2 tensor",
                t && t->name ? t->name : "?");
        return NPU_ERR_INVALID;
    }
    const float qs = md == NPU_DTYPE_INT8 ? t->t.qscale : 1.0f;
    const int32_t qz = md == NPU_DTYPE_INT8 ? t->t.qzero : 0;
    const int64_t numel = npu_tensor_numel(&t->t);
    if (numel > 0 && !data)
        return NPU_ERR_INVALID;
    const uint8_t *d = data;
    const size_t es = npu_dtype_size(md);
    if (t->layout == NPU_LAYOUT_NCHW) {
        for (int64_t i = 0; i < numel; i++)
            argmax_take(acc, base + i, argmax_load(d, es, (size_t)i, qs, qz));
        return NPU_OK;
    }
    struct view v;
    tensor_view(t, &v);
    if (numel == 0)
        return NPU_OK;
    const size_t c2 = 16 / es, px = (size_t)v.h * v.w;            /* channels per 16-byte atom */
    const size_t one = npu_nc1hwc2_bytes(es, v.c, v.h, v.w) / es; /* an image, in elements */
    int64_t i = base;
    if (v.rows) { /* logical [pixels][C]: i = p * C + c */
        for (size_t p = 0; p < px; p++)
            for (uint32_t c = 0; c < v.c; c++)
                argmax_take(acc, i++,
                            argmax_load(d, es, ((c / c2) * px + p) * c2 + c % c2, qs, qz));
        return NPU_OK;
    }
    for (uint64_t n = 0; n < v.n; n++) /* logical [C][H][W] per image */
        for (uint32_t c = 0; c < v.c; c++) {
            const size_t plane = n * one + (c / c2) * px * c2 + c % c2;
            for (size_t p = 0; p < px; p++)
                argmax_take(acc, i++, argmax_load(d, es, plane + p * c2, qs, qz));
        }
    return NPU_OK;
}
