/* SPDX-License-Identifier: MIT */
/*
 * dpu-lut.c: DPU lookup tables for activation functions, and a host model of the lookup.
 *
 * The hardware (facts §2.5, §5.3; semantics as the simulator implements them, checked on
 * RKNN's tanh program, NOTES S19): two tables of 513 int16 entries, LE and LO, each covering
 * [start, start + 512 * 2^sel] of the EW stage's value u with linear interpolation between
 * entries; with RKNN's LUT_CFG 0x68 (the only configuration strict mode accepts) LO wins
 * where both cover u, u below both ranges reads LE[0], above both LO[512]; slopes stay 0,
 * so both ends saturate. The entry, plus OUT_CVT's offset, is scaled by 2^-MINUS_EXP.
 *
 * Our tables: the function's argument t is scaled into the index domain by the BN stage
 * (u = t * in_scale, in_scale a power of two so it is exact in the fp16 MUL operand), LE
 * covers the negative side and LO the positive side, each with 512 steps of 2^LUT_FRAC_BITS
 * index units (so that a fixed-point index keeps interpolation bits); entries are
 * round(f(t) * 2^mexp) - 1 with OUT_CVT offset 1 (RKNN's tanh offset: 32767 + 1 = 2^15
 * represents 1 exactly). Designs per function are in docs/npu-dpu-ops.md with their
 * measured errors.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "npu-dpu.h"

/* Standard normal CDF and the tanh form used by GELU(approximate="tanh"). */
static double
phi_erf(double x)
{
    return 0.5 * (1.0 + erf(x / sqrt(2.0)));
}

static double
phi_tanh(double x)
{
    return 0.5 * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

double
npu_dpu_fn_ref(enum npu_dpu_fn fn, double x)
{
    switch (fn) {
    case NPU_DPU_FN_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case NPU_DPU_FN_TANH: return tanh(x);
    case NPU_DPU_FN_ERF: return erf(x);
    case NPU_DPU_FN_GELU: return x * phi_erf(x);
    case NPU_DPU_FN_GELU_TANH: return x * phi_tanh(x);
    case NPU_DPU_FN_SILU: return x / (1.0 + exp(-x));
    case NPU_DPU_FN_PHI: return phi_erf(x);
    case NPU_DPU_FN_PHI_TANH: return phi_tanh(x);
    case NPU_DPU_FN_EXP_NEG: return exp(x);
    case NPU_DPU_FN_COUNT: break;
    }
    return NAN;
}

const char *
npu_dpu_fn_name(enum npu_dpu_fn fn)
{
    static const char *const n[] = {"sigmoid", "tanh", "erf",      "gelu",   "gelu_tanh",
                                    "silu",    "phi",  "phi_tanh", "exp_neg"};
    return fn < NPU_DPU_FN_COUNT ? n[fn] : "?";
}

/* One design: t range of each table and output exponent. */
struct design {
    double scale; /* u = t * scale */
    double le_t0; /* LE covers [le_t0, le_t0 + 512 * 2^le_sel / scale] */
    unsigned le_sel;
    double lo_t0;
    unsigned lo_sel;
    unsigned mexp;
};

static struct design
design_for(enum npu_dpu_fn fn)
{
    switch (fn) {
    case NPU_DPU_FN_TANH: /* [-8, 8] in steps of 1/64; tanh(8) = 1 - 2.3e-7 */
        return (struct design){64, -8, 0, 0, 0, 15};
    case NPU_DPU_FN_ERF: /* [-4, 4] in steps of 1/128; erf(4) = 1 - 1.5e-8 */
        return (struct design){128, -4, 0, 0, 0, 15};
    case NPU_DPU_FN_SIGMOID: /* [-16, 16] in steps of 1/32; sigmoid(-16) = 1.1e-7 */
    case NPU_DPU_FN_PHI:
    case NPU_DPU_FN_PHI_TANH: return (struct design){32, -16, 0, 0, 0, 15};
    case NPU_DPU_FN_GELU: /* LE [-8, 0] steps 1/64, LO [0, 16] steps 1/32; |y| <= 16 */
    case NPU_DPU_FN_GELU_TANH: return (struct design){64, -8, 0, 0, 1, 11};
    case NPU_DPU_FN_SILU: /* [-16, 16] steps 1/32, silu(-16) = -1.8e-6 */
        return (struct design){32, -16, 0, 0, 0, 11};
    case NPU_DPU_FN_EXP_NEG: /* LO [-16, 0] steps 1/32, LE below: all 0 */
        return (struct design){32, -32, 0, -16, 0, 15};
    default: break;
    }
    return (struct design){1, 0, 0, 0, 0, 0};
}

static int16_t
entry(double v, unsigned mexp)
{
    double e = nearbyint(v * ldexp(1.0, (int)mexp)) - 1.0;
    if (e > 32767)
        e = 32767;
    if (e < -32768)
        e = -32768;
    return (int16_t)e;
}

/*
 * Index bits below each step: every table's index domain is 2^5 times finer than its step
 * (in_scale, ranges x 32, INDEX_SELECT + 5), RKNN's layout (tanh: ranges -16384 ... 0 ...
 * 16384, INDEX_SELECT 5, NOTES S19). Under the simulator's double index model this changes
 * no output (the same entries, the same fractional index: the scales are powers of two);
 * under the fixed model (the value rounded to an integer at the LUT, docs/simulator.md)
 * it leaves 32 interpolation steps per entry where INDEX_SELECT 0 left none
 * (docs/npu-dpu-ops.md has both models' errors). [DER: that the hardware indexes an
 * integer is inferred from RKNN's integer ranges, not proven.]
 */
#define LUT_FRAC_BITS 5

enum npu_status
npu_dpu_lut_build(enum npu_dpu_fn fn, struct npu_dpu_lut *l)
{
    if (fn >= NPU_DPU_FN_COUNT)
        return NPU_ERR_INVALID;
    struct design d = design_for(fn);
    d.scale *= 1u << LUT_FRAC_BITS;
    d.le_sel += LUT_FRAC_BITS;
    d.lo_sel += LUT_FRAC_BITS;
    memset(l, 0, sizeof(*l));
    l->in_scale = (float)d.scale;
    l->in_offset = 0;
    l->le_sel = d.le_sel;
    l->lo_sel = d.lo_sel;
    l->le_start = (int32_t)lrint(d.le_t0 * d.scale);
    l->lo_start = (int32_t)lrint(d.lo_t0 * d.scale);
    l->minus_exp = d.mexp;
    l->out_offset = 1;
    l->id = 0x100u + (uint32_t)fn;
    for (unsigned i = 0; i < 513; i++) {
        double tle = (l->le_start + (double)i * (1u << d.le_sel)) / d.scale;
        double tlo = (l->lo_start + (double)i * (1u << d.lo_sel)) / d.scale;
        l->le[i] = entry(npu_dpu_fn_ref(fn, tle), d.mexp);
        l->lo[i] = entry(npu_dpu_fn_ref(fn, tlo), d.mexp);
    }
    if (fn == NPU_DPU_FN_EXP_NEG)
        for (unsigned i = 0; i < 513; i++)
            l->le[i] = -1; /* exp(t <= -16) reads as 0 */
    return NPU_OK;
}

/*
 * Band tables for 1/sqrt(v), v >= 0 (layer norm): band k covers v in [L_k, H_k] and gives
 * g_k(v) = sqrt(L_k / clamp(v, L_k, H_k)) in (0, 1]; the bands telescope, so
 * 1/sqrt(v) = 2^-(lg L_0)/2 * prod_k g_k(v) for v in [L_0, H_last] (docs/npu-dpu-ops.md).
 * LE covers [L, 129 L] in steps of L/4, LO [129 L, 16513 L] in steps of 32 L, which keeps
 * the interpolation error of a band below 0.6 % (one Newton step then gives fp16 accuracy).
 */
enum npu_status
npu_dpu_lut_rsqrt_band(int lg_lo, struct npu_dpu_lut *l)
{
    /* u = v * 128 / L: LE starts at u = 128 with step 32 (v steps of L / 4), LO at u =
     * 16512 with step 4096 (32 L); LUT_FRAC_BITS index bits below each step */
    if (lg_lo < -20 || lg_lo > 12)
        return NPU_ERR_INVALID;
    double L = ldexp(1.0, lg_lo), H = ldexp(1.0, lg_lo + NPU_DPU_RSQRT_BAND_LG);
    memset(l, 0, sizeof(*l));
    l->in_scale = (float)ldexp(1.0, 2 + LUT_FRAC_BITS - lg_lo);
    l->le_start = 4 << LUT_FRAC_BITS;
    l->le_sel = LUT_FRAC_BITS;
    l->lo_start = 516 << LUT_FRAC_BITS;
    l->lo_sel = 7 + LUT_FRAC_BITS;
    l->minus_exp = 15;
    l->out_offset = 1;
    l->id = 0x200u + (uint32_t)(lg_lo + 64);
    for (unsigned i = 0; i < 513; i++) {
        double vle = (4.0 + i) * L / 4.0, vlo = (516.0 + 128.0 * i) * L / 4.0;
        l->le[i] = entry(sqrt(L / NPU_MIN(NPU_MAX(vle, L), H)), 15);
        l->lo[i] = entry(sqrt(L / NPU_MIN(NPU_MAX(vlo, L), H)), 15);
    }
    return NPU_OK;
}

/* The lookup as the simulator performs it (sim-dpu.c lut_eval / lut_table, LUT_CFG 0x68,
 * zero slopes), in double. */
static double
table(const int16_t *t, double u, int64_t start, unsigned sel)
{
    double end = (double)start + 512.0 * (double)(1u << sel);
    if (u < (double)start)
        return t[0];
    if (u > end)
        return t[512];
    double idx = (u - (double)start) / (double)(1u << sel);
    double fl = floor(idx);
    if (fl >= 512)
        return t[512];
    unsigned i = (unsigned)fl;
    return t[i] + (t[i + 1] - t[i]) * (idx - fl);
}

double
npu_dpu_lut_lookup(const struct npu_dpu_lut *l, double u)
{
    double le_end = l->le_start + 512.0 * (1u << l->le_sel);
    double lo_end = l->lo_start + 512.0 * (1u << l->lo_sel);
    bool le_in = u >= l->le_start && u <= le_end, lo_in = u >= l->lo_start && u <= lo_end;
    bool use_lo;
    if (le_in && lo_in)
        use_lo = true; /* HYBRID_PRIORITY 1 */
    else if (le_in || lo_in)
        use_lo = lo_in;
    else if (u < l->le_start && u < l->lo_start)
        use_lo = false; /* UFLOW_PRIORITY 0 */
    else if (u > le_end && u > lo_end)
        use_lo = true; /* OFLOW_PRIORITY 1 */
    else
        use_lo = false;
    double v =
        use_lo ? table(l->lo, u, l->lo_start, l->lo_sel) : table(l->le, u, l->le_start, l->le_sel);
    return (v + l->out_offset) * ldexp(1.0, -(int)l->minus_exp);
}

/* The fixed-point index model of the simulator (sim-dpu.c lut_fix): the integer nearest
 * u, saturated to int32, then the same lookup (exact: an integer u gives the index and the
 * low-bit fraction of the fixed-point form). */
double
npu_dpu_lut_lookup_fixed(const struct npu_dpu_lut *l, double u)
{
    double q = u != u               ? 0
               : u >= 2147483647.0  ? 2147483647.0
               : u <= -2147483648.0 ? -2147483648.0
                                    : nearbyint(u);
    return npu_dpu_lut_lookup(l, q);
}

static double
eval(const struct npu_dpu_lut *l, float t, bool fixed)
{
    /* BN: MUL by the fp16 operand, then ADD the fp32 operand, each rounded to fp32 */
    float u = t * npu_fp16_to_fp32(npu_fp32_to_fp16(l->in_scale));
    u = u + l->in_offset;
    double y = fixed ? npu_dpu_lut_lookup_fixed(l, u) : npu_dpu_lut_lookup(l, u);
    return npu_fp16_to_fp32(npu_fp32_to_fp16((float)y));
}

double
npu_dpu_lut_eval(const struct npu_dpu_lut *l, float t)
{
    return eval(l, t, false);
}

double
npu_dpu_lut_eval_fixed(const struct npu_dpu_lut *l, float t)
{
    return eval(l, t, true);
}

/* exp(t), t <= 0, with INDEX_SELECT 0 (u = 32 t): for the attention path whose shift is an
 * fp16 map in table units (dpu-attn.c), where the finer domain would overflow fp16. Under
 * the fixed index model its output steps by 1/32 in t (docs/npu-dpu-ops.md). */
static void
exp_neg_coarse(struct npu_dpu_lut *l)
{
    npu_dpu_lut_build(NPU_DPU_FN_EXP_NEG, l);
    l->le_start /= 1 << LUT_FRAC_BITS;
    l->lo_start /= 1 << LUT_FRAC_BITS;
    l->le_sel -= LUT_FRAC_BITS;
    l->lo_sel -= LUT_FRAC_BITS;
    l->in_scale /= 1 << LUT_FRAC_BITS;
    l->id = NPU_DPU_LUT_EXP_NEG_COARSE;
}

enum npu_status
npu_dpu_lut_from_id(uint32_t id, struct npu_dpu_lut *l)
{
    /* the tables built once (npu_dpu_lut_get) hold exactly what a rebuild would give: a
     * copy instead of 1,026 evaluations per lowering (a chain of N Sigmoids lowers N
     * times, dry runs included) */
    const struct npu_dpu_lut *t = npu_dpu_lut_get(id);
    if (t) {
        *l = *t;
        return NPU_OK;
    }
    if (id == NPU_DPU_LUT_EXP_NEG_COARSE) {
        exp_neg_coarse(l);
        return NPU_OK;
    }
    if (id >= 0x100u && id < 0x100u + NPU_DPU_FN_COUNT)
        return npu_dpu_lut_build((enum npu_dpu_fn)(id - 0x100u), l);
    if (id >= 0x200u && id < 0x200u + 128u)
        return npu_dpu_lut_rsqrt_band((int)(id - 0x200u) - 64, l);
    return NPU_ERR_INVALID;
}

/* Every table, built once (tables are 2 KB each; rk.Dpu tasks keep pointers to them). */
static struct npu_dpu_lut fn_tables[NPU_DPU_FN_COUNT];
static struct npu_dpu_lut band_tables[33]; /* lg_lo -20 .. 12 */
static struct npu_dpu_lut exp_coarse_table;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void
build_tables(void)
{
    for (int f = 0; f < NPU_DPU_FN_COUNT; f++)
        npu_dpu_lut_build((enum npu_dpu_fn)f, &fn_tables[f]);
    for (int i = 0; i < 33; i++)
        npu_dpu_lut_rsqrt_band(i - 20, &band_tables[i]);
    exp_neg_coarse(&exp_coarse_table);
}

const struct npu_dpu_lut *
npu_dpu_lut_get(uint32_t id)
{
    pthread_once(&tables_once, build_tables);
    if (id == NPU_DPU_LUT_EXP_NEG_COARSE)
        return &exp_coarse_table;
    if (id >= 0x100u && id < 0x100u + NPU_DPU_FN_COUNT)
        return &fn_tables[id - 0x100u];
    if (id >= 0x200u + 44u && id <= 0x200u + 76u)
        return &band_tables[id - 0x200u - 44u];
    return NULL;
}
