/* SPDX-License-Identifier: MIT */
/*
 * sim-dpu.c: the DPU (post-processing, NVDLA "SDP" heritage) and DPU_RDMA,
 * facts §5.3:
 *
 *   input (CORE accumulators, or MRDMA in flying mode, fp16 widened with
 *   MRDMA_FP16TOFP32_EN) -> BS (ALU then MUL, then ReLU/ReLU-X/PReLU)
 *   -> CPEND/OW (OD_BYPASS=0) -> BN (MUL then ALU, then ReLU...)
 *   -> EW (operand converter, ALU or MUL with an ERDMA or register operand,
 *   LUT, ReLU) -> OUT_CVT -> WDMA (memory) and/or the PPU.
 *
 * fp pipelines compute in binary32; integer pipelines in 64-bit integers,
 * saturated to the output precision at the end (and INT32 ABS/NEG wrap, AB
 * observation, facts §5.3). Register operands follow AB's observation: ALU
 * and ReLU-X operands are fp32 bit patterns in fp pipelines, MUL operands
 * fp16 (int16 in integer pipelines).
 *
 * Output: packed NC1HWC2 atoms at DST_BASE_ADDR; surface s of a group of
 * SIZE_E + 1 surfaces goes to (s / (SIZE_E+1)) * SURFACE_ADD + (s % (SIZE_E+1))
 * * DST_SURF_STRIDE, which is the packed layout whenever SURFACE_ADD =
 * DST_SURF_STRIDE x (SIZE_E + 1) (facts §2.10); channels past ORIG_CHANNEL
 * get OFFSET_PEND. The transpose copy of RKNN's layout tasks (BS_OW_CFG
 * TP_ORG_EN, NOTES S17) is executed as derived from the onpu relu/add streams
 * (docs/simulator.md); the other transpose/regroup modes are refused.
 */
#include "sim-priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim-num.h"

/* Bytes per element of a DPU/DPU_RDMA precision code (facts §2.9). */
static unsigned
prec_bytes(unsigned p)
{
    switch (p) {
    case NPU_PRECISION_INT8: return 1;
    case NPU_PRECISION_INT16:
    case NPU_PRECISION_FP16:
    case NPU_PRECISION_BF16: return 2;
    case NPU_PRECISION_INT32:
    case NPU_PRECISION_FP32: return 4;
    default: return 0;
    }
}

static bool
prec_is_float(unsigned p)
{
    return p == NPU_PRECISION_FP16 || p == NPU_PRECISION_FP32 || p == NPU_PRECISION_BF16;
}

static bool
prec_is_int(unsigned p)
{
    return p == NPU_PRECISION_INT8 || p == NPU_PRECISION_INT16 || p == NPU_PRECISION_INT32;
}

static const char *
prec_name(unsigned p)
{
    static const char *const n[] = {"int8", "int16", "fp16", "bf16", "int32", "fp32", "int4", "?"};
    return n[p & 7];
}

/* Reads one element of precision p (no widening flags) as a double. */
static inline double
load_elem(const uint8_t *p, unsigned prec)
{
    switch (prec) {
    case NPU_PRECISION_INT8: return (int8_t)p[0];
    case NPU_PRECISION_INT16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case NPU_PRECISION_FP16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return sim_f16_to_f32(v);
    }
    case NPU_PRECISION_INT32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case NPU_PRECISION_FP32: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    }
    return 0;
}

static inline int64_t
load_int(const uint8_t *p, unsigned bytes)
{
    if (bytes == 1)
        return (int8_t)p[0];
    if (bytes == 2) {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline int64_t
prec_min(unsigned p)
{
    return p == NPU_PRECISION_INT8 ? INT8_MIN : p == NPU_PRECISION_INT16 ? INT16_MIN : INT32_MIN;
}

static inline int64_t
prec_max(unsigned p)
{
    return p == NPU_PRECISION_INT8 ? INT8_MAX : p == NPU_PRECISION_INT16 ? INT16_MAX : INT32_MAX;
}

/* ------------------------------------------------------------------ LUT */

bool
sim_lut_access(struct sim_exec *x, uint16_t off, uint32_t value)
{
    struct sim_core *c = x->core;
    if (off == REG_DPU_LUT_ACCESS_CFG) {
        c->lut_access = value;
        c->lut_ptr = DPU_LUT_ACCESS_CFG_LUT_ADDR__GET(value);
        return true;
    }
    /* LUT_ACCESS_DATA: consecutive writes fill consecutive entries (AB
     * observation, facts §2.5); with ACCESS_TYPE read nothing is stored
     * (RKNN writes DATA = 0 before switching to write, NOTES S19). */
    if (DPU_LUT_ACCESS_CFG_LUT_ACCESS_TYPE__GET(c->lut_access) != NPU_LUT_ACCESS_WRITE)
        return true;
    unsigned t = DPU_LUT_ACCESS_CFG_LUT_TABLE_ID__GET(c->lut_access);
    if (c->lut_ptr >= SIM_LUT_ENTRIES)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "DPU: LUT_ACCESS_DATA write to %s entry %u; the tables have %u entries",
                        t ? "LO" : "LE", c->lut_ptr, SIM_LUT_ENTRIES);
    c->lut[t][c->lut_ptr++] = (int16_t)(value & 0xffff);
    x->rec.uses_lut |= NPU_TASK_LUT_UPLOAD; /* the table stays in this core */
    if (c->lut_ptr == SIM_LUT_ENTRIES)
        c->lut_written[t] = true;
    return true;
}

struct lut_cfg {
    uint32_t cfg;
    int64_t le_start, le_end, lo_start, lo_end;
    unsigned le_sel, lo_sel;
    int16_t le_uscale, le_oscale, lo_uscale, lo_oscale;
    unsigned le_ushift, le_oshift, lo_ushift, lo_oshift;
};

/* One table lookup with linear interpolation between neighbours, or the
 * under/overflow extrapolation with the slope registers (NVDLA-style
 * semantics, facts §5.3 [DER/GUESS]; the index/interpolation part is checked
 * against RKNN's tanh program, NOTES S19). */
static inline double
lut_table(const int16_t *t, double xv, int64_t start, int64_t end, unsigned sel, int16_t uscale,
          unsigned ushift, int16_t oscale, unsigned oshift)
{
    if (xv < (double)start)
        return t[0] + (xv - (double)start) * uscale / ldexp(1.0, (int)ushift);
    if (xv > (double)end)
        return t[SIM_LUT_ENTRIES - 1] + (xv - (double)end) * oscale / ldexp(1.0, (int)oshift);
    double idx = (xv - (double)start) / ldexp(1.0, (int)sel);
    double fl = floor(idx);
    if (fl >= SIM_LUT_ENTRIES - 1)
        return t[SIM_LUT_ENTRIES - 1];
    unsigned i = (unsigned)fl;
    double frac = idx - fl;
    return t[i] + (t[i + 1] - t[i]) * frac;
}

/*
 * The LUT index models (docs/simulator.md, "LUT"; chosen per device, npu_device_options
 * lut_index or NPU_SIM_LUT):
 *
 *   double: idx = (u - START) / 2^INDEX_SELECT of the exact value u (binary32 in fp
 *           pipelines), frac = idx - floor(idx). Every bit of u interpolates.
 *   fixed:  q = the integer nearest u (ties to even, saturated to int32; NaN taken as 0),
 *           idx = (q - START) >> INDEX_SELECT, frac = ((q - START) mod 2^INDEX_SELECT) /
 *           2^INDEX_SELECT. Only the low INDEX_SELECT bits of q interpolate, so with
 *           INDEX_SELECT 0 the output steps from entry to entry.
 *
 * Evidence for fixed [DER from RKNN's tanh, NOTES S19, and AB's SiLU program]: the range
 * registers hold integers (LE_START 0xffffc000 = -16384 would be a NaN as binary32) although
 * the pipeline is fp16, and RKNN scales x by 5424 (BN MUL 0x6d4c) so that its 512 steps span
 * +-16384 with INDEX_SELECT 5, leaving 5 integer bits under each step; with a real-valued
 * index a scale of 169.5 and INDEX_SELECT 0 would do. The BN ALU's 0x80000000 is binary32
 * -0.0, the exact identity of IEEE addition (an int32 add of -2^31 would send every value
 * below LE_START), so the conversion to an integer happens at the LUT, after BN. Inferred,
 * not proven: the rounding of the conversion (nearest-even here; truncation would double
 * the error of an INDEX_SELECT 0 table), saturation, NaN, and that the interpolation keeps
 * the exact fraction (an integer result would add <= 0.5 entry units). Integer pipelines
 * give both models the same result (u is an integer already).
 */
static inline double
lut_fix(double u)
{
    if (u != u)
        return 0; /* [GUESS] */
    if (u >= 2147483647.0)
        return 2147483647.0;
    if (u <= -2147483648.0)
        return -2147483648.0;
    return nearbyint(u);
}

static inline double
lut_eval(const struct sim_core *c, const struct lut_cfg *l, double xv)
{
    bool le_in = xv >= (double)l->le_start && xv <= (double)l->le_end;
    bool lo_in = xv >= (double)l->lo_start && xv <= (double)l->lo_end;
    int use_lo;
    if (le_in && lo_in)
        use_lo = DPU_LUT_CFG_LUT_HYBRID_PRIORITY__GET(l->cfg);
    else if (le_in || lo_in)
        use_lo = lo_in;
    else if (xv < (double)l->le_start && xv < (double)l->lo_start)
        use_lo = DPU_LUT_CFG_LUT_UFLOW_PRIORITY__GET(l->cfg);
    else if (xv > (double)l->le_end && xv > (double)l->lo_end)
        use_lo = DPU_LUT_CFG_LUT_OFLOW_PRIORITY__GET(l->cfg);
    else
        use_lo = 0; /* between the ranges: [GUESS] LE */
    if (use_lo)
        return lut_table(c->lut[1], xv, l->lo_start, l->lo_end, l->lo_sel, l->lo_uscale,
                         l->lo_ushift, l->lo_oscale, l->lo_oshift);
    return lut_table(c->lut[0], xv, l->le_start, l->le_end, l->le_sel, l->le_uscale, l->le_ushift,
                     l->le_oscale, l->le_oshift);
}

/* ----------------------------------------------------------- the stages */

/* One BS or BN stage as programmed. */
struct stage {
    bool bypass, alu_bypass, mul_bypass, prelu, relu_bypass, relux;
    bool alu_mem, mul_mem;
    unsigned algo;
    uint32_t alu_reg, mul_reg, relux_reg;
    unsigned shift, shift_neg;
    bool mul_first;     /* BN: MUL then ALU (AB observation) */
    const uint8_t *ops; /* per-channel operand array (BRDMA/NRDMA) */
    unsigned op_stride, alu_slot, mul_slot;
};

struct ew {
    bool bypass, op_bypass, mul, prelu, op_mem, lut, cvt, relu, relux;
    unsigned algo;
    unsigned mode;  /* ERDMA data mode */
    unsigned esize; /* operand element bytes */
    uint32_t cvt_offset, cvt_scale_reg;
    uint32_t relux_reg;
    uint32_t op_value[8];
    const uint8_t *ops;
    uint64_t surf_bytes, line_atoms;
    struct lut_cfg lut_cfg;
    unsigned truncate, truncate_neg;
};

struct dpu {
    unsigned in_p, proc_p, out_p;
    bool fp; /* fp pipeline (binary32) */
    /* after an integer CORE with PROC_PRECISION fp16: the int32 sums enter the fp
     * pipeline as binary32 (an int8 product dequantised in the DPU, TRM-inferred) */
    bool int_in_fp;
    uint32_t w, h, c, c_real;
    struct stage bs, bn;
    bool cpend;
    int16_t ow_op;
    struct ew ew;
    /* OUT_CVT */
    uint32_t cvt_offset, cvt_scale, cvt_shift_reg;
    bool f32tof16;
    uint32_t offset_pend;
    /* WDMA */
    uint32_t dst, surf_bytes, surface_add, notch0;
    unsigned size_e;
    bool tp;
    uint32_t tp_w, tp_h, tp_line;
};

static inline double
alu_f(unsigned algo, double a, double b)
{
    switch (algo) {
    case NPU_ALU_ALGO_MAX: return a > b ? a : b;
    case NPU_ALU_ALGO_MIN: return a < b ? a : b;
    case NPU_ALU_ALGO_ADD: return a + b;
    case NPU_ALU_ALGO_DIV: return a / b;
    case NPU_ALU_ALGO_MINUS: return a - b;
    case NPU_ALU_ALGO_ABS: return fabs(a);
    case NPU_ALU_ALGO_NEG: return -a;
    case NPU_ALU_ALGO_FLOOR: return floor(a);
    case NPU_ALU_ALGO_CEIL: return ceil(a);
    }
    return a;
}

/* Integer ALU (AB observation, facts §5.3): exact, saturated later; INT32
 * ABS/NEG of INT32_MIN wrap to INT32_MIN. */
static inline int64_t
alu_i(unsigned algo, int64_t a, int64_t b, unsigned prec)
{
    switch (algo) {
    case NPU_ALU_ALGO_MAX: return a > b ? a : b;
    case NPU_ALU_ALGO_MIN: return a < b ? a : b;
    case NPU_ALU_ALGO_ADD: return a + b;
    case NPU_ALU_ALGO_MINUS: return a - b;
    case NPU_ALU_ALGO_ABS:
        if (prec == NPU_PRECISION_INT32 && a == INT32_MIN)
            return INT32_MIN;
        return a < 0 ? -a : a;
    case NPU_ALU_ALGO_NEG:
        if (prec == NPU_PRECISION_INT32 && a == INT32_MIN)
            return INT32_MIN;
        return -a;
    }
    return a;
}

static bool
decode_stage(struct sim_exec *x, struct stage *s, bool bn, bool fp, unsigned neg_shift)
{
    bool ok = true;
    uint16_t r_cfg = bn ? REG_DPU_BN_CFG : REG_DPU_BS_CFG;
    uint32_t cfg = sim_reg(x, r_cfg, &ok);
    if (!ok)
        return false;
    /* BS_CFG and BN_CFG share one layout (facts §2.5). */
    s->bypass = DPU_BS_CFG_BS_BYPASS__GET(cfg);
    s->mul_first = bn;
    if (s->bypass)
        return true;
    s->alu_bypass = DPU_BS_CFG_BS_ALU_BYPASS__GET(cfg);
    s->mul_bypass = DPU_BS_CFG_BS_MUL_BYPASS__GET(cfg);
    s->prelu = DPU_BS_CFG_BS_MUL_PRELU__GET(cfg);
    s->relu_bypass = DPU_BS_CFG_BS_RELU_BYPASS__GET(cfg);
    s->relux = DPU_BS_CFG_BS_RELUX_EN__GET(cfg);
    s->alu_mem = DPU_BS_CFG_BS_ALU_SRC__GET(cfg);
    s->algo = DPU_BS_CFG_BS_ALU_ALGO__GET(cfg);
    const char *nm = bn ? "BN" : "BS";
    if (!s->alu_bypass) {
        if (s->algo != NPU_ALU_ALGO_ADD && s->algo != NPU_ALU_ALGO_MINUS &&
            !sim_unverified(x, "facts §2.5: BS/BN ALU_ALGO lists only add and minus",
                            "DPU %s ALU_ALGO %u", nm, s->algo))
            return false;
        if (!s->alu_mem) {
            s->alu_reg = sim_reg(x, bn ? REG_DPU_BN_ALU_CFG : REG_DPU_BS_ALU_CFG, &ok);
            if (!ok)
                return false;
        }
    }
    if (!s->mul_bypass) {
        uint32_t mc = sim_reg(x, bn ? REG_DPU_BN_MUL_CFG : REG_DPU_BS_MUL_CFG, &ok);
        if (!ok)
            return false;
        s->mul_mem = DPU_BS_MUL_CFG_BS_MUL_SRC__GET(mc);
        s->mul_reg = DPU_BS_MUL_CFG_BS_MUL_OPERAND__GET(mc);
        s->shift = DPU_BS_MUL_CFG_BS_MUL_SHIFT_VALUE__GET(mc);
        s->shift_neg = neg_shift;
        if (DPU_BS_MUL_CFG_BS_TRUNCATE_SRC__GET(mc) &&
            !sim_unverified(x, "facts §2.5: no program sets TRUNCATE_SRC", "DPU %s TRUNCATE_SRC",
                            nm))
            return false;
        if (fp && (s->shift || s->shift_neg) &&
            !sim_unverified(x, "facts §5.3: MUL shifts are integer-pipeline fields",
                            "DPU %s MUL shift %u/%u in an fp pipeline", nm, s->shift, s->shift_neg))
            return false;
        if (s->prelu &&
            !sim_unverified(x, "facts §5.3: PReLU has no proven program", "DPU %s MUL_PRELU", nm))
            return false;
    }
    if (!s->relu_bypass) {
        if (s->relux) {
            s->relux_reg =
                sim_reg(x, bn ? REG_DPU_BN_RELUX_CMP_VALUE : REG_DPU_BS_RELUX_CMP_VALUE, &ok);
            if (!ok)
                return false;
        }
    }
    return true;
}

/* Per-channel operands from BRDMA/NRDMA (facts §2.6, §6.13). */
static bool
decode_stage_mem(struct sim_exec *x, struct stage *s, bool bn, bool fp, uint32_t channels)
{
    bool need_alu = !s->bypass && !s->alu_bypass && s->alu_mem;
    bool need_mul = !s->bypass && !s->mul_bypass && s->mul_mem;
    if (!need_alu && !need_mul)
        return true;
    const char *nm = bn ? "NRDMA" : "BRDMA";
    if (!(x->enable & NPU_OP_EN_DPU_RDMA))
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "DPU %s operands come from memory through %s, but op_en 0x%x does not "
                        "start DPU_RDMA",
                        bn ? "BN" : "BS", nm, x->enable);
    bool ok = true;
    uint32_t cfg = sim_reg(x, bn ? REG_DPU_RDMA_NRDMA_CFG : REG_DPU_RDMA_BRDMA_CFG, &ok);
    uint32_t addr = sim_reg(x, bn ? REG_DPU_RDMA_BN_BASE_ADDR : REG_DPU_RDMA_BS_BASE_ADDR, &ok);
    if (!ok)
        return false;
    /* DATA_USE bits: 0 ALU, 1 CPEND (BRDMA only), 2 MUL, 3 TRT. Same field
     * position in both registers. */
    uint32_t use = DPU_RDMA_BRDMA_CFG_BRDMA_DATA_USE__GET(cfg);
    if (DPU_RDMA_BRDMA_CFG_BRDMA_DISABLE__GET(cfg))
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "DPU_RDMA %s_CFG disable bit set, but the %s stage reads operands from "
                        "memory",
                        nm, bn ? "BN" : "BS");
    if ((need_alu && !(use & 1)) || (need_mul && !(use & 4)))
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "DPU_RDMA %s DATA_USE 0x%x lacks the operand the %s stage takes from "
                        "memory (%s%s)",
                        nm, use, bn ? "BN" : "BS", need_alu ? "ALU " : "", need_mul ? "MUL" : "");
    unsigned kinds = __builtin_popcount(use);
    if (kinds > 1 &&
        !sim_unverified(x, "facts §6.13: per-channel layout with several operand kinds",
                        "%s DATA_USE 0x%x (taken as %u interleaved 32-bit operands per channel)",
                        nm, use, kinds))
        return false;
    /* slot = rank of the bit among the used ones */
    s->op_stride = 4 * kinds;
    s->alu_slot = 0;
    s->mul_slot = __builtin_popcount(use & 3u);
    s->ops = sim_dma(x, NPU_BLOCK_DPU_RDMA, bn ? "NRDMA operand read" : "BRDMA operand read", addr,
                     (uint64_t)channels * s->op_stride);
    if (!s->ops)
        return false;
    x->rec.rdma_bytes += (uint64_t)channels * s->op_stride;
    (void)fp;
    return true;
}

/* Where the EW operand of element (c, y, x) is read from memory (ERDMA): per pixel, a cube
 * laid out like the feature map; otherwise one value per channel. */
static inline const uint8_t *
ew_operand(const struct ew *e, uint32_t c, uint32_t y, uint32_t x)
{
    if (e->mode == NPU_EW_DATA_MODE_PER_PIXEL) {
        unsigned c2 = 16 / e->esize;
        return e->ops + (c / c2) * e->surf_bytes + ((uint64_t)y * e->line_atoms + x) * 16 +
               (c % c2) * e->esize;
    }
    return e->ops + (size_t)c * e->esize;
}

/* Operand values of a stage for channel c. */
static inline double
stage_alu_f(const struct stage *s, uint32_t c)
{
    if (s->alu_mem) {
        float f;
        memcpy(&f, s->ops + (size_t)c * s->op_stride + 4 * s->alu_slot, 4);
        return f;
    }
    return npu_bits_f32(s->alu_reg);
}

static inline double
stage_mul_f(const struct stage *s, uint32_t c)
{
    if (s->mul_mem) {
        float f;
        memcpy(&f, s->ops + (size_t)c * s->op_stride + 4 * s->mul_slot, 4);
        return f;
    }
    return sim_f16_to_f32((uint16_t)s->mul_reg);
}

static inline int64_t
stage_alu_i(const struct stage *s, uint32_t c)
{
    if (s->alu_mem) {
        int32_t v;
        memcpy(&v, s->ops + (size_t)c * s->op_stride + 4 * s->alu_slot, 4);
        return v;
    }
    return (int32_t)s->alu_reg;
}

static inline int64_t
stage_mul_i(const struct stage *s, uint32_t c)
{
    if (s->mul_mem) {
        int32_t v;
        memcpy(&v, s->ops + (size_t)c * s->op_stride + 4 * s->mul_slot, 4);
        return v;
    }
    return (int16_t)s->mul_reg;
}

/* fp stages work in binary32: every operation rounds to fp32. */
static inline double
run_stage_f(const struct stage *s, double v, uint32_t c)
{
    if (s->bypass)
        return v;
    float f = (float)v;
    if (s->mul_first && !s->mul_bypass && (!s->prelu || f < 0))
        f = f * (float)stage_mul_f(s, c);
    if (!s->alu_bypass)
        f = (float)alu_f(s->algo, f, (float)stage_alu_f(s, c));
    if (!s->mul_first && !s->mul_bypass && (!s->prelu || f < 0))
        f = f * (float)stage_mul_f(s, c);
    if (!s->relu_bypass) {
        f = f < 0 ? 0 : f;
        if (s->relux) {
            float cap = npu_bits_f32(s->relux_reg);
            f = f > cap ? cap : f;
        }
    }
    return f;
}

static inline int64_t
mul_shift_i(const struct stage *s, int64_t v, int64_t m)
{
    int64_t p = v * m;
    return sim_shift_round(p, p < 0 ? s->shift_neg : s->shift, 0);
}

static inline int64_t
run_stage_i(const struct stage *s, int64_t v, uint32_t c, unsigned prec)
{
    if (s->bypass)
        return v;
    if (s->mul_first && !s->mul_bypass && (!s->prelu || v < 0))
        v = mul_shift_i(s, v, stage_mul_i(s, c));
    if (!s->alu_bypass)
        v = alu_i(s->algo, v, stage_alu_i(s, c), prec);
    if (!s->mul_first && !s->mul_bypass && (!s->prelu || v < 0))
        v = mul_shift_i(s, v, stage_mul_i(s, c));
    if (!s->relu_bypass) {
        v = v < 0 ? 0 : v;
        if (s->relux && v > (int32_t)s->relux_reg)
            v = (int32_t)s->relux_reg;
    }
    return v;
}

/* ------------------------------------------------------------- decoding */

static bool
decode_ew(struct sim_exec *x, struct dpu *d, uint32_t fmt)
{
    struct ew *e = &d->ew;
    bool ok = true;
    uint32_t cfg = sim_reg(x, REG_DPU_EW_CFG, &ok);
    if (!ok)
        return false;
    e->bypass = DPU_EW_CFG_EW_BYPASS__GET(cfg);
    if (e->bypass)
        return true;
    e->op_bypass = DPU_EW_CFG_EW_OP_BYPASS__GET(cfg);
    e->mul = DPU_EW_CFG_EW_OP_TYPE__GET(cfg) == NPU_EW_OP_TYPE_MUL;
    e->prelu = DPU_EW_CFG_EW_MUL_PRELU__GET(cfg);
    e->op_mem = DPU_EW_CFG_EW_OP_SRC__GET(cfg) == NPU_OPERAND_SRC_MEMORY;
    e->lut = !DPU_EW_CFG_EW_LUT_BYPASS__GET(cfg);
    e->cvt = !DPU_EW_CFG_EW_OP_CVT_BYPASS__GET(cfg);
    e->relu = !DPU_EW_CFG_EW_RELU_BYPASS__GET(cfg);
    e->relux = DPU_EW_CFG_EW_RELUX_EN__GET(cfg);
    e->algo = DPU_EW_CFG_EW_ALU_ALGO__GET(cfg);
    e->mode = DPU_EW_CFG_EW_DATA_MODE__GET(cfg);
    unsigned edata = DPU_EW_CFG_EDATA_SIZE__GET(cfg);
    e->truncate_neg = DPU_DATA_FORMAT_EW_TRUNCATE_NEG__GET(fmt);

    if (DPU_EW_CFG_EW_BINARY_EN__GET(cfg) &&
        !sim_unverified(x, "facts §2.5: no program sets EW_BINARY_EN", "DPU EW_BINARY_EN"))
        return false;
    if (!e->op_bypass) {
        if (e->mul && e->prelu &&
            !sim_unverified(x, "facts §5.3: EW PReLU has no proven program", "DPU EW_MUL_PRELU"))
            return false;
        if (!e->mul && !d->fp &&
            (e->algo == NPU_ALU_ALGO_DIV || e->algo == NPU_ALU_ALGO_FLOOR ||
             e->algo == NPU_ALU_ALGO_CEIL))
            return sim_fail(x, NPU_ERR_UNSUPPORTED,
                            "DPU: EW ALU_ALGO %u in an integer pipeline: AB found DIV/FLOOR/CEIL "
                            "are floating-point operations there with unknown integer results "
                            "(facts §5.3)",
                            e->algo);
        if (!e->mul && e->algo > NPU_ALU_ALGO_CEIL)
            return sim_fail(x, NPU_ERR_HW_REFUSED, "DPU: EW_ALU_ALGO %u is not defined", e->algo);
        uint32_t sc = sim_reg(x, REG_DPU_EW_CVT_SCALE_VALUE, &ok);
        if (!ok)
            return false;
        e->truncate = DPU_EW_CVT_SCALE_VALUE_EW_TRUNCATE__GET(sc);
        if ((e->truncate || e->truncate_neg) &&
            !sim_unverified(x, "facts §2.5: EW_TRUNCATE has no proven program",
                            "DPU EW_TRUNCATE %u / NEG %u", e->truncate, e->truncate_neg))
            return false;
        if (e->cvt) {
            e->cvt_scale_reg = sc;
            e->cvt_offset = sim_reg(x, REG_DPU_EW_CVT_OFFSET_VALUE, &ok);
            if (!ok)
                return false;
            unsigned scale = DPU_EW_CVT_SCALE_VALUE_EW_OP_CVT_SCALE__GET(sc);
            unsigned shift = DPU_EW_CVT_SCALE_VALUE_EW_OP_CVT_SHIFT__GET(sc);
            if ((scale != 1 || shift || e->cvt_offset) &&
                !sim_unverified(x, "facts §5.3: only the identity operand converter is proven",
                                "DPU EW operand converter scale %u shift %u offset 0x%x", scale,
                                shift, e->cvt_offset))
                return false;
        }
        if (e->op_mem) {
            if (!(x->enable & NPU_OP_EN_DPU_RDMA))
                return sim_fail(x, NPU_ERR_HW_REFUSED,
                                "DPU EW operand comes from ERDMA, but op_en 0x%x does not start "
                                "DPU_RDMA",
                                x->enable);
            uint32_t ec = sim_reg(x, REG_DPU_RDMA_ERDMA_CFG, &ok);
            uint32_t addr = sim_reg(x, REG_DPU_RDMA_EW_BASE_ADDR, &ok);
            if (!ok)
                return false;
            if (DPU_RDMA_ERDMA_CFG_ERDMA_DISABLE__GET(ec))
                return sim_fail(x, NPU_ERR_HW_REFUSED,
                                "DPU_RDMA ERDMA_DISABLE is set, but the EW stage reads its "
                                "operand through ERDMA");
            if (DPU_RDMA_ERDMA_CFG_ERDMA_DATA_MODE__GET(ec) != e->mode ||
                DPU_RDMA_ERDMA_CFG_ERDMA_DATA_SIZE__GET(ec) != edata)
                return sim_fail(x, NPU_ERR_HW_REFUSED,
                                "DPU EW_CFG (data mode %u, size %u) and DPU_RDMA ERDMA_CFG (mode "
                                "%u, size %u) disagree",
                                e->mode, edata, DPU_RDMA_ERDMA_CFG_ERDMA_DATA_MODE__GET(ec),
                                DPU_RDMA_ERDMA_CFG_ERDMA_DATA_SIZE__GET(ec));
            if ((DPU_RDMA_ERDMA_CFG_ERDMA_SURF_MODE__GET(ec) ||
                 DPU_RDMA_ERDMA_CFG_ERDMA_NONALIGN__GET(ec)) &&
                !sim_unverified(x, "facts §2.6: no program sets them",
                                "DPU_RDMA ERDMA surf-mode / non-align bits"))
                return false;
            if (edata == NPU_ELEM_SIZE_4BIT)
                return sim_fail(x, NPU_ERR_UNSUPPORTED,
                                "DPU: 4-bit EW operands are not "
                                "simulated");
            e->esize = 1u << (edata - 1);
            unsigned c2 = 16 / e->esize;
            uint64_t n;
            if (e->mode == NPU_EW_DATA_MODE_PER_PIXEL) {
                uint32_t ss = sim_reg(x, REG_DPU_RDMA_EW_SURF_STRIDE, &ok);
                uint32_t hh = sim_reg(x, REG_DPU_RDMA_DATA_CUBE_HEIGHT, &ok);
                if (!ok)
                    return false;
                e->surf_bytes = (uint64_t)DPU_RDMA_EW_SURF_STRIDE_EW_SURF_STRIDE__GET(ss) * 16;
                e->line_atoms = d->w + DPU_RDMA_DATA_CUBE_HEIGHT_EW_LINE_NOTCH_ADDR__GET(hh);
                uint64_t c1 = (d->c + c2 - 1) / c2;
                n = (c1 - 1) * e->surf_bytes + ((uint64_t)(d->h - 1) * e->line_atoms + d->w) * 16;
                if (e->surf_bytes < (uint64_t)d->h * e->line_atoms * 16 && c1 > 1 &&
                    !sim_unverified(x, "facts §2.6: EW surfaces overlap",
                                    "DPU_RDMA EW_SURF_STRIDE %llu bytes for %ux%u pixels",
                                    (unsigned long long)e->surf_bytes, d->w, d->h))
                    return false;
            } else if (e->mode == NPU_EW_DATA_MODE_PER_CHANNEL) {
                if (!sim_unverified(x, "facts §5.3: per-channel ERDMA has no proven program",
                                    "DPU EW operand per channel (taken as a dense array)"))
                    return false;
                n = (uint64_t)d->c * e->esize;
            } else {
                return sim_fail(x, NPU_ERR_UNSUPPORTED,
                                "DPU: ERDMA data mode %u (per-channel-by-pixel) is not simulated",
                                e->mode);
            }
            e->ops = sim_dma(x, NPU_BLOCK_DPU_RDMA, "ERDMA operand read", addr, n);
            if (!e->ops)
                return false;
            x->rec.rdma_bytes += n;
        } else {
            if (!sim_unverified(x, "facts §2.5: EW_OP_VALUE lane mapping undocumented",
                                "DPU EW operand from EW_OP_VALUE_0..7 (taken per channel mod 8)"))
                return false;
            for (unsigned i = 0; i < 8; i++) {
                e->op_value[i] = sim_reg(x, REG_DPU_EW_OP_VALUE_0 + 4 * i, &ok);
                if (!ok)
                    return false;
            }
        }
    }
    if (e->relu && e->relux) {
        e->relux_reg = sim_reg(x, REG_DPU_EW_RELUX_CMP_VALUE, &ok);
        if (!ok)
            return false;
    }
    if (e->lut) {
        struct lut_cfg *l = &e->lut_cfg;
        x->rec.uses_lut |= NPU_TASK_LUT_READ;
        l->cfg = sim_reg(x, REG_DPU_LUT_CFG, &ok);
        uint32_t info = sim_reg(x, REG_DPU_LUT_INFO, &ok);
        l->le_start = (int32_t)sim_reg(x, REG_DPU_LUT_LE_START, &ok);
        l->le_end = (int32_t)sim_reg(x, REG_DPU_LUT_LE_END, &ok);
        l->lo_start = (int32_t)sim_reg(x, REG_DPU_LUT_LO_START, &ok);
        l->lo_end = (int32_t)sim_reg(x, REG_DPU_LUT_LO_END, &ok);
        uint32_t les = sim_reg(x, REG_DPU_LUT_LE_SLOPE_SCALE, &ok);
        uint32_t lesh = sim_reg(x, REG_DPU_LUT_LE_SLOPE_SHIFT, &ok);
        uint32_t los = sim_reg(x, REG_DPU_LUT_LO_SLOPE_SCALE, &ok);
        uint32_t losh = sim_reg(x, REG_DPU_LUT_LO_SLOPE_SHIFT, &ok);
        if (!ok)
            return false;
        l->le_sel = DPU_LUT_INFO_LUT_LE_INDEX_SELECT__GET(info);
        l->lo_sel = DPU_LUT_INFO_LUT_LO_INDEX_SELECT__GET(info);
        l->le_uscale = (int16_t)DPU_LUT_LE_SLOPE_SCALE_LUT_LE_SLOPE_UFLOW_SCALE__GET(les);
        l->le_oscale = (int16_t)DPU_LUT_LE_SLOPE_SCALE_LUT_LE_SLOPE_OFLOW_SCALE__GET(les);
        l->lo_uscale = (int16_t)DPU_LUT_LO_SLOPE_SCALE_LUT_LO_SLOPE_UFLOW_SCALE__GET(los);
        l->lo_oscale = (int16_t)DPU_LUT_LO_SLOPE_SCALE_LUT_LO_SLOPE_OFLOW_SCALE__GET(los);
        l->le_ushift = DPU_LUT_LE_SLOPE_SHIFT_LUT_LE_SLOPE_UFLOW_SHIFT__GET(lesh);
        l->le_oshift = DPU_LUT_LE_SLOPE_SHIFT_LUT_LE_SLOPE_OFLOW_SHIFT__GET(lesh);
        l->lo_ushift = DPU_LUT_LO_SLOPE_SHIFT_LUT_LO_SLOPE_UFLOW_SHIFT__GET(losh);
        l->lo_oshift = DPU_LUT_LO_SLOPE_SHIFT_LUT_LO_SLOPE_OFLOW_SHIFT__GET(losh);
        if (!x->core->lut_written[0] || !x->core->lut_written[1])
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "DPU: the LUT is enabled but its %s table was never fully uploaded "
                            "(513 LUT_ACCESS_DATA writes)",
                            !x->core->lut_written[0] ? "LE" : "LO");
        /* RKNN's tanh configuration (NOTES S19) is the only proven one. */
        const uint32_t proven_cfg = DPU_LUT_CFG_LUT_LO_LE_MUX(2) |
                                    DPU_LUT_CFG_LUT_OFLOW_PRIORITY(1) |
                                    DPU_LUT_CFG_LUT_HYBRID_PRIORITY(1);
        if ((l->cfg != proven_cfg || les || lesh || los || losh) &&
            !sim_unverified(x, "facts §5.3: LUT semantics follow NVDLA beyond RKNN's tanh",
                            "DPU LUT_CFG 0x%x slopes 0x%x/0x%x/0x%x/0x%x", l->cfg, les, lesh, los,
                            losh))
            return false;
    }
    return true;
}

static bool
check_precisions(struct sim_exec *x, struct dpu *d, bool flying, bool core_int, uint32_t rdma_fm)
{
    unsigned in = d->in_p, proc = d->proc_p, out = d->out_p;
    if (!prec_bytes(out) || !prec_bytes(in) || in == NPU_PRECISION_BF16 ||
        out == NPU_PRECISION_BF16 || proc == NPU_PRECISION_BF16)
        return sim_fail(x, NPU_ERR_UNSUPPORTED,
                        "DPU: precisions in %s / proc %s / out %s are not simulated", prec_name(in),
                        prec_name(proc), prec_name(out));
    bool proven = false;
    bool f16tof32 = flying && DPU_RDMA_FEATURE_MODE_CFG_MRDMA_FP16TOFP32_EN__GET(rdma_fm);
    if (!flying) {
        /* facts §2.9 working combinations */
        if (!core_int)
            proven = in == NPU_PRECISION_FP16 && proc == NPU_PRECISION_FP16 &&
                     ((out == NPU_PRECISION_FP32 && !d->f32tof16) ||
                      (out == NPU_PRECISION_FP16 && d->f32tof16));
        else if (in == NPU_PRECISION_INT8 && proc == NPU_PRECISION_FP16)
            /* dequantised product: int8 conv, fp16 processing and result; TRM-inferred
             * only (separate IN / PROC / OUT_PRECISION fields, facts §2.9), as the
             * flying dequantise below; not hardware-tested */
            proven = out == NPU_PRECISION_FP16 && d->f32tof16;
        else if (in == NPU_PRECISION_INT16 && proc == in && out == in)
            /* int16 requantised result (w16a16i): the int8 path's OUT_CVT with an int16
             * result; TRM-inferred only (facts §2.9 lists int16 -> int32 as tested), ledger
             * level T */
            proven = !d->f32tof16;
        else
            proven = (in == proc) && (in == NPU_PRECISION_INT8 || in == NPU_PRECISION_INT16) &&
                     (out == NPU_PRECISION_INT32 || (out == in && in == NPU_PRECISION_INT8)) &&
                     !d->f32tof16;
    } else {
        unsigned rin = DPU_RDMA_FEATURE_MODE_CFG_IN_PRECISION__GET(rdma_fm);
        unsigned rproc = DPU_RDMA_FEATURE_MODE_CFG_PROC_PRECISION__GET(rdma_fm);
        if (rin != in || rproc != proc)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "DPU (in %s, proc %s) and DPU_RDMA (in %s, proc %s) precisions "
                            "disagree",
                            prec_name(in), prec_name(proc), prec_name(rin), prec_name(rproc));
        if (in == NPU_PRECISION_FP16 && proc == NPU_PRECISION_FP16 && out == NPU_PRECISION_FP16)
            /* ONPU add/sub/mul/tanh/relu (fp32 inside) and div (fp16 inside) */
            proven = f16tof32 == d->f32tof16;
        else if (prec_is_int(in) && proc == in && !f16tof32 && !d->f32tof16)
            /* AB elementwise_int.py; RKNN int16 layout copies; AB int16 -> int32 */
            proven = out == in || (in == NPU_PRECISION_INT16 && out == NPU_PRECISION_INT32);
        else if (in == NPU_PRECISION_FP16 && proc == NPU_PRECISION_FP16 &&
                 out == NPU_PRECISION_INT8)
            /* quantise: TRM-inferred only (facts §2.9 lists IN / PROC / OUT_PRECISION as
             * separate fields; the int8 result is rounded half to even and saturated, the
             * CVT_ROUND 0 reading of §5.3). Not hardware-tested: its DATA_FORMAT and
             * FEATURE_MODE_CFG values are ledger level T, which NPU_SIM_EVIDENCE=O or
             * above refuses. */
            proven = f16tof32 && !d->f32tof16;
        else if (in == NPU_PRECISION_INT8 && proc == NPU_PRECISION_FP16 &&
                 out == NPU_PRECISION_FP16)
            /* dequantise: int8 read into the fp pipeline; TRM-inferred as above */
            proven = !f16tof32 && d->f32tof16;
    }
    if (!proven &&
        !sim_unverified(x, "facts §2.9 / §5.5 proven precision combinations",
                        "DPU %s in %s / proc %s / out %s%s%s", flying ? "flying" : "after CORE",
                        prec_name(in), prec_name(proc), prec_name(out),
                        f16tof32 ? " MRDMA_FP16TOFP32" : "", d->f32tof16 ? " FP32TOFP16" : ""))
        return false;
    return true;
}

/* Reads the flying-mode input cube through MRDMA (facts §2.6: laid out like
 * the output; line / surface notches as RKNN's layout copies use them). */
static bool
mrdma_read(struct sim_exec *x, struct dpu *d, uint32_t rdma_fm, struct sim_cube *cube)
{
    bool ok = true;
    uint32_t rw = sim_reg(x, REG_DPU_RDMA_DATA_CUBE_WIDTH, &ok);
    uint32_t rh = sim_reg(x, REG_DPU_RDMA_DATA_CUBE_HEIGHT, &ok);
    uint32_t rc = sim_reg(x, REG_DPU_RDMA_DATA_CUBE_CHANNEL, &ok);
    uint32_t src = sim_reg(x, REG_DPU_RDMA_SRC_BASE_ADDR, &ok);
    uint32_t dma = sim_reg(x, REG_DPU_RDMA_SRC_DMA_CFG, &ok);
    uint32_t sn = sim_reg(x, REG_DPU_RDMA_SURF_NOTCH, &ok);
    if (!ok)
        return false;
    uint32_t w = DPU_RDMA_DATA_CUBE_WIDTH_WIDTH__GET(rw) + 1;
    uint32_t h = DPU_RDMA_DATA_CUBE_HEIGHT_HEIGHT__GET(rh) + 1;
    uint32_t c = DPU_RDMA_DATA_CUBE_CHANNEL_CHANNEL__GET(rc) + 1;
    if (w != d->w || h != d->h || c != d->c)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "DPU cube %ux%ux%u and DPU_RDMA cube %ux%ux%u differ", d->w, d->h, d->c, w,
                        h, c);
    if (DPU_RDMA_FEATURE_MODE_CFG_MRDMA_DISABLE__GET(rdma_fm))
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "DPU FLYING_MODE=1 but DPU_RDMA MRDMA_DISABLE is set");
    if (DPU_RDMA_FEATURE_MODE_CFG_CONV_MODE__GET(rdma_fm) ||
        DPU_RDMA_FEATURE_MODE_CFG_COMB_USE__GET(rdma_fm)) {
        if (!sim_unverified(x, "facts §2.6: flying programs use CONV_MODE 0, COMB_USE 0",
                            "DPU_RDMA FEATURE_MODE_CFG 0x%x", rdma_fm))
            return false;
    }
    if ((DPU_RDMA_SRC_DMA_CFG_UNPOOLING_EN__GET(dma) ||
         DPU_RDMA_SRC_DMA_CFG_POOLING_METHOD__GET(dma) ||
         DPU_RDMA_SRC_DMA_CFG_KERNEL_WIDTH__GET(dma) ||
         DPU_RDMA_SRC_DMA_CFG_KERNEL_HEIGHT__GET(dma)) &&
        !sim_unverified(x, "facts §2.6: unpooling has no proven program",
                        "DPU_RDMA SRC_DMA_CFG unpooling fields 0x%x", dma))
        return false;
    unsigned isz = prec_bytes(d->in_p);
    unsigned c2 = 16 / isz;
    int64_t ln = DPU_RDMA_SRC_DMA_CFG_LINE_NOTCH_ADDR__GET(dma);
    int64_t snv = (int64_t)((int32_t)(sn & DPU_RDMA_SURF_NOTCH_SURF_NOTCH_ADDR__MASK)) >> 4;
    /* atoms: line y at y*(W + LN); next surface at (H-1)(W+LN) + W + SN */
    int64_t line = (int64_t)w + ln;
    int64_t surf = (int64_t)(h - 1) * line + w + snv;
    uint32_t c1 = (c + c2 - 1) / c2;
    int64_t lo = NPU_MIN((int64_t)0, (int64_t)(c1 - 1) * surf);
    int64_t hi = NPU_MAX((int64_t)(c1 - 1) * surf, (int64_t)0) + (int64_t)(h - 1) * line + w;
    if (surf < (int64_t)w && c1 > 1 && surf <= 0 && lo < 0)
        return sim_fail(x, NPU_ERR_FAULT,
                        "DPU_RDMA: surface notch %lld moves before the source "
                        "address",
                        (long long)snv);
    const uint8_t *base =
        sim_dma(x, NPU_BLOCK_DPU_RDMA, "MRDMA input read", src, (uint64_t)(hi - lo) * 16);
    if (!base)
        return false;
    if (!sim_cube_alloc(x, cube, w, h, c, !d->fp))
        return false;
    for (uint32_t ch = 0; ch < c; ch++) {
        int64_t s_off = (int64_t)(ch / c2) * surf;
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t xx = 0; xx < w; xx++) {
                int64_t atom = s_off + (int64_t)y * line + xx;
                const uint8_t *p = base + (size_t)(atom * 16) + (ch % c2) * isz;
                size_t o = ((size_t)ch * h + y) * w + xx;
                if (d->fp)
                    cube->f[o] = (float)load_elem(p, d->in_p);
                else
                    cube->i[o] = load_int(p, isz);
            }
    }
    x->rec.rdma_bytes += (uint64_t)c1 * w * h * 16;
    return true;
}

static bool
decode_out(struct sim_exec *x, struct dpu *d)
{
    bool ok = true;
    uint32_t ow = sim_reg(x, REG_DPU_BS_OW_CFG, &ok);
    uint32_t w0 = sim_reg(x, REG_DPU_WDMA_SIZE_0, &ok);
    uint32_t w1 = sim_reg(x, REG_DPU_WDMA_SIZE_1, &ok);
    uint32_t ss = sim_reg(x, REG_DPU_DST_SURF_STRIDE, &ok);
    uint32_t sa = sim_reg(x, REG_DPU_SURFACE_ADD, &ok);
    uint32_t notch = sim_reg(x, REG_DPU_DATA_CUBE_NOTCH_ADDR, &ok);
    uint32_t dst = sim_reg(x, REG_DPU_DST_BASE_ADDR, &ok);
    uint32_t fmt = sim_reg(x, REG_DPU_DATA_FORMAT, &ok);
    if (!ok)
        return false;
    d->dst = dst;
    d->surf_bytes = DPU_DST_SURF_STRIDE_DST_SURF_STRIDE__GET(ss) * 16;
    d->surface_add = DPU_SURFACE_ADD_SURF_ADD__GET(sa) * 16;
    d->notch0 = DPU_DATA_CUBE_NOTCH_ADDR_NOTCH_ADDR_0__GET(notch);
    unsigned n1 = DPU_DATA_CUBE_NOTCH_ADDR_NOTCH_ADDR_1__GET(notch);
    unsigned e0 = DPU_BS_OW_CFG_SIZE_E_0__GET(ow), e1 = DPU_BS_OW_CFG_SIZE_E_1__GET(ow);
    unsigned e2 = DPU_BS_OW_CFG_SIZE_E_2__GET(ow);
    d->size_e = e0;
    d->tp = DPU_BS_OW_CFG_TP_ORG_EN__GET(ow);
    if (dst & 0xfu)
        return sim_fail(x, NPU_ERR_FAULT,
                        "DPU: DST_BASE_ADDR 0x%08x is not 16-byte aligned (bits 31:4, facts §2.10)",
                        dst);
    if (DPU_DATA_FORMAT_MC_SURF_OUT__GET(fmt) &&
        !sim_unverified(x, "facts §2.5: MC_SURF_OUT has no proven program", "DPU MC_SURF_OUT"))
        return false;
    if (DPU_BS_OW_CFG_RGP_CNTER__GET(ow) || DPU_BS_OW_CFG_OW_SRC__GET(ow)) {
        if (!sim_unverified(x, "NOTES S17: regroup counters / OW_SRC have no derived semantics",
                            "DPU BS_OW_CFG 0x%08x (RGP_CNTER %u, OW_SRC %u)", ow,
                            DPU_BS_OW_CFG_RGP_CNTER__GET(ow), DPU_BS_OW_CFG_OW_SRC__GET(ow)))
            return false;
    }
    if (e0 != e1 || e0 != e2) {
        if (!sim_unverified(x, "facts §2.10: SIZE_E_0/1/2 are always equal", "DPU SIZE_E %u/%u/%u",
                            e0, e1, e2))
            return false;
    }
    unsigned obytes = prec_bytes(d->out_p);
    if (d->tp) {
        /* RKNN layout copy (NOTES S17), as derived from onpu-relu/add:
         * 16-bit data, every stage bypassed; pixel p = y*W + x of channel c
         * goes to lane p % 8 of atom j = p / 8, atom j at row j / Wt, column
         * j % Wt of a (Ht x Wt) grid whose lines are Wt + NOTCH atoms long;
         * channel c's grid starts at c * DST_SURF_STRIDE. */
        d->tp_w = DPU_WDMA_SIZE_1_WIDTH_WDMA__GET(w1) + 1;
        d->tp_h = DPU_WDMA_SIZE_1_HEIGHT_WDMA__GET(w1) + 1;
        d->tp_line = d->tp_w + d->notch0;
        uint64_t groups = ((uint64_t)d->w * d->h + 7) / 8;
        bool shape_ok = DPU_WDMA_SIZE_0_TP_PRECISION__GET(w0) == NPU_TP_PRECISION_16BIT &&
                        obytes == 2 && prec_bytes(d->in_p) == 2 && e0 == 7 && n1 == d->notch0 &&
                        (uint64_t)d->tp_w * d->tp_h == groups && (d->w * d->h) % 8 == 0 &&
                        DPU_WDMA_SIZE_0_SIZE_C_WDMA__GET(w0) == (d->c + 7) / 8 - 1 &&
                        DPU_WDMA_SIZE_0_CHANNEL_WDMA__GET(w0) == d->c - 1 &&
                        d->surface_add == 8 * d->surf_bytes;
        if (!shape_ok)
            return sim_unverified(x, "NOTES S17: only RKNN's 16-bit layout copy is derived",
                                  "DPU transpose TP_ORG_EN with WDMA_SIZE 0x%08x/0x%08x, SIZE_E "
                                  "%u, NOTCH 0x%08x, SURFACE_ADD %u",
                                  w0, w1, e0, notch, d->surface_add) &&
                   sim_fail(x, NPU_ERR_UNSUPPORTED,
                            "DPU: this TP_ORG_EN transpose shape is not simulated");
        if (!d->bs.bypass || !d->bn.bypass || !d->ew.bypass || d->cpend)
            return sim_fail(x, NPU_ERR_UNSUPPORTED,
                            "DPU: TP_ORG_EN transpose with an active BS/BN/EW stage is not "
                            "simulated");
        return true;
    }
    if (DPU_WDMA_SIZE_0_TP_PRECISION__GET(w0) || DPU_WDMA_SIZE_0_SIZE_C_WDMA__GET(w0)) {
        if (!sim_unverified(x, "NOTES S17: transpose WDMA fields without TP_ORG_EN",
                            "DPU WDMA_SIZE_0 0x%08x", w0))
            return false;
    }
    if (DPU_WDMA_SIZE_0_CHANNEL_WDMA__GET(w0) + 1 != d->c ||
        DPU_WDMA_SIZE_1_WIDTH_WDMA__GET(w1) + 1 != d->w ||
        DPU_WDMA_SIZE_1_HEIGHT_WDMA__GET(w1) + 1 != d->h)
        if (!sim_unverified(x, "facts §2.10: WDMA sizes equal the cube",
                            "DPU WDMA size %ux%ux%u for a %ux%ux%u cube",
                            DPU_WDMA_SIZE_1_WIDTH_WDMA__GET(w1) + 1,
                            DPU_WDMA_SIZE_1_HEIGHT_WDMA__GET(w1) + 1,
                            DPU_WDMA_SIZE_0_CHANNEL_WDMA__GET(w0) + 1, d->w, d->h, d->c))
            return false;
    if (n1 != d->notch0 &&
        !sim_unverified(x, "facts §2.5: NOTCH_ADDR_0 = NOTCH_ADDR_1 in every program",
                        "DPU DATA_CUBE_NOTCH_ADDR 0x%08x", notch))
        return false;
    if (d->surface_add != d->surf_bytes * (d->size_e + 1) &&
        !sim_unverified(x, "facts §2.10: SURFACE_ADD = DST_SURF_STRIDE x (SIZE_E + 1)",
                        "DPU SURFACE_ADD %u bytes with DST_SURF_STRIDE %u bytes, SIZE_E %u",
                        d->surface_add, d->surf_bytes, d->size_e))
        return false;
    uint64_t line = (uint64_t)d->w + d->notch0;
    if ((uint64_t)d->surf_bytes < line * d->h * 16 && (d->c + 16 / obytes - 1) / (16 / obytes) > 1)
        if (!sim_unverified(x, "facts §2.10: output surfaces overlap",
                            "DPU DST_SURF_STRIDE %u bytes for %ux%u pixels (lines of %llu)",
                            d->surf_bytes, d->w, d->h, (unsigned long long)line))
            return false;
    return true;
}

/* Byte offset of output element (c, y, x) from DST_BASE_ADDR. */
static inline uint64_t
out_offset(const struct dpu *d, uint32_t c, uint32_t y, uint32_t xx, unsigned obytes)
{
    if (d->tp) {
        uint64_t p = (uint64_t)y * d->w + xx, j = p / 8;
        return (uint64_t)c * d->surf_bytes + ((j / d->tp_w) * d->tp_line + j % d->tp_w) * 16 +
               (p % 8) * obytes;
    }
    unsigned c2 = 16 / obytes;
    uint64_t s = c / c2;
    uint64_t group = s / (d->size_e + 1), in_group = s % (d->size_e + 1);
    return group * d->surface_add + in_group * d->surf_bytes +
           ((uint64_t)y * (d->w + d->notch0) + xx) * 16 + (c % c2) * obytes;
}

/* OUT_CVT of facts §5.3 on an integer value. */
static inline int64_t
out_cvt_i(const struct dpu *d, int64_t v)
{
    int64_t scale = DPU_OUT_CVT_SCALE_OUT_CVT_SCALE__GET(d->cvt_scale);
    unsigned shift = DPU_OUT_CVT_SHIFT_OUT_CVT_SHIFT__GET(d->cvt_shift_reg);
    int half_up = DPU_OUT_CVT_SHIFT_CVT_ROUND__GET(d->cvt_shift_reg);
    int64_t off = (int32_t)d->cvt_offset;
    if (DPU_OUT_CVT_SHIFT_CVT_TYPE__GET(d->cvt_shift_reg))
        return sim_shift_round((v + off) * scale, shift, half_up);
    return sim_shift_round(v * scale, shift > 62 ? 62 : shift, half_up) + off;
}

/* OUT_CVT on an fp value: scale / 2^shift, offset, then the exponent
 * adjustment MINUS_EXP (derived from RKNN's tanh, whose int16 LUT output is
 * scaled by 2^-15, NOTES S19). Precomputed as y = v * mul + add (CVT_TYPE 0)
 * or (v + off) * mul (CVT_TYPE 1); in double every step is exact for a
 * binary32 v and the 16-bit scale, so this equals the stepwise definition. */
struct out_cvt_f {
    bool add_first;
    double mul, add, off;
};

static inline void
out_cvt_f_init(const struct dpu *d, struct out_cvt_f *o)
{
    double scale = DPU_OUT_CVT_SCALE_OUT_CVT_SCALE__GET(d->cvt_scale);
    int shift = (int)DPU_OUT_CVT_SHIFT_OUT_CVT_SHIFT__GET(d->cvt_shift_reg);
    int mexp = (int)DPU_OUT_CVT_SHIFT_MINUS_EXP__GET(d->cvt_shift_reg);
    double off = (int32_t)d->cvt_offset;
    o->add_first = DPU_OUT_CVT_SHIFT_CVT_TYPE__GET(d->cvt_shift_reg);
    o->mul = ldexp(scale, -shift - mexp);
    o->add = ldexp(off, -mexp);
    o->off = off;
}

static inline double
out_cvt_f(const struct out_cvt_f *o, double v)
{
    return o->add_first ? (v + o->off) * o->mul : v * o->mul + o->add;
}

static inline void
store_out(uint8_t *p, unsigned out_p, bool fp, double vf, int64_t vi)
{
    switch (out_p) {
    case NPU_PRECISION_FP32: {
        float f = (float)vf;
        memcpy(p, &f, 4);
        break;
    }
    case NPU_PRECISION_FP16: {
        uint16_t h = npu_fp32_to_fp16((float)vf);
        memcpy(p, &h, 2);
        break;
    }
    default: {
        int64_t v = fp ? (int64_t)llrint(vf) : vi;
        v = sim_sat(v, prec_min(out_p), prec_max(out_p));
        if (out_p == NPU_PRECISION_INT8) {
            p[0] = (uint8_t)(int8_t)v;
        } else if (out_p == NPU_PRECISION_INT16) {
            int16_t s = (int16_t)v;
            memcpy(p, &s, 2);
        } else {
            int32_t s = (int32_t)v;
            memcpy(p, &s, 4);
        }
    }
    }
}

bool
sim_dpu_run(struct sim_exec *x, const struct sim_cube *in, bool to_ppu, bool to_mem)
{
    sim_num_init();
    struct dpu d;
    memset(&d, 0, sizeof(d));
    bool ok = true;
    uint32_t fm = sim_reg(x, REG_DPU_FEATURE_MODE_CFG, &ok);
    uint32_t fmt = sim_reg(x, REG_DPU_DATA_FORMAT, &ok);
    uint32_t cw = sim_reg(x, REG_DPU_DATA_CUBE_WIDTH, &ok);
    uint32_t ch = sim_reg(x, REG_DPU_DATA_CUBE_HEIGHT, &ok);
    uint32_t cc = sim_reg(x, REG_DPU_DATA_CUBE_CHANNEL, &ok);
    uint32_t ow = sim_reg(x, REG_DPU_BS_OW_CFG, &ok);
    uint32_t cs = sim_reg(x, REG_DPU_OUT_CVT_SCALE, &ok);
    if (!ok)
        return false;
    bool flying = in == NULL;
    d.in_p = DPU_DATA_FORMAT_IN_PRECISION__GET(fmt);
    d.proc_p = DPU_DATA_FORMAT_PROC_PRECISION__GET(fmt);
    d.out_p = DPU_DATA_FORMAT_OUT_PRECISION__GET(fmt);
    d.w = DPU_DATA_CUBE_WIDTH_WIDTH__GET(cw) + 1;
    d.h = DPU_DATA_CUBE_HEIGHT_HEIGHT__GET(ch) + 1;
    d.c = DPU_DATA_CUBE_CHANNEL_CHANNEL__GET(cc) + 1;
    d.c_real = DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL__GET(cc) + 1;
    d.cvt_scale = cs;
    d.f32tof16 = DPU_OUT_CVT_SCALE_FP32TOFP16_EN__GET(cs);
    d.int_in_fp = !flying && in->is_int && prec_is_float(d.proc_p);
    d.fp = flying ? prec_is_float(d.proc_p) : !in->is_int || d.int_in_fp;

    /* ---- mode fields that are refused or flagged */
    if (DPU_FEATURE_MODE_CFG_TP_EN__GET(fm) || DPU_FEATURE_MODE_CFG_RGP_TYPE__GET(fm) ||
        DPU_FEATURE_MODE_CFG_COMB_USE__GET(fm) || DPU_FEATURE_MODE_CFG_NONALIGN__GET(fm)) {
        if (!sim_unverified(
                x, "NOTES S17: DPU transpose/regroup semantics not derived",
                "DPU FEATURE_MODE_CFG 0x%08x (TP_EN %u, RGP_TYPE %u, COMB_USE %u, "
                "NONALIGN %u)",
                fm, DPU_FEATURE_MODE_CFG_TP_EN__GET(fm), DPU_FEATURE_MODE_CFG_RGP_TYPE__GET(fm),
                DPU_FEATURE_MODE_CFG_COMB_USE__GET(fm), DPU_FEATURE_MODE_CFG_NONALIGN__GET(fm)))
            return false;
        return sim_fail(x, NPU_ERR_UNSUPPORTED,
                        "DPU: TP_EN / RGP_TYPE / COMB_USE / NONALIGN modes are not simulated");
    }
    unsigned dmode = DPU_FEATURE_MODE_CFG_CONV_MODE__GET(fm);
    if (DPU_DATA_CUBE_HEIGHT_MINMAX_CTL__GET(ch) &&
        !sim_unverified(x, "facts §2.5: MINMAX_CTL has no proven program", "DPU MINMAX_CTL %u",
                        DPU_DATA_CUBE_HEIGHT_MINMAX_CTL__GET(ch)))
        return false;
    if (d.c_real > d.c)
        return sim_fail(x, NPU_ERR_HW_REFUSED, "DPU: ORIG_CHANNEL %u exceeds the padded CHANNEL %u",
                        d.c_real, d.c);

    if (!flying) {
        if (in->w != d.w || in->h != d.h || in->c != d.c)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "DPU cube %ux%ux%u does not match the CORE output %ux%ux%u", d.w, d.h,
                            d.c, in->w, in->h, in->c);
        uint32_t misc = sim_reg(x, REG_CORE_MISC_CFG, &ok);
        if (!ok)
            return false;
        bool dw = CORE_MISC_CFG_DW_EN__GET(misc);
        if ((dmode == NPU_CONV_MODE_DEPTHWISE) != dw)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "DPU CONV_MODE %u does not match CORE DW_EN %u (depthwise needs both)",
                            dmode, dw);
        unsigned cna_p = CORE_MISC_CFG_PROC_PRECISION__GET(misc);
        unsigned want = cna_p; /* CNA and DPU codes agree for int8/int16/fp16 */
        if (d.in_p != want)
            if (!sim_unverified(x, "facts §2.9: DPU IN_PRECISION = conv precision",
                                "DPU IN_PRECISION %s after a %s conv", prec_name(d.in_p),
                                prec_name(want)))
                return false;
    } else if (dmode) {
        return sim_fail(x, NPU_ERR_HW_REFUSED, "DPU: flying mode with CONV_MODE %u", dmode);
    }

    uint32_t rdma_fm = 0;
    if (flying) {
        rdma_fm = sim_reg(x, REG_DPU_RDMA_FEATURE_MODE_CFG, &ok);
        if (!ok)
            return false;
        if (!DPU_RDMA_FEATURE_MODE_CFG_FLYING_MODE__GET(rdma_fm))
            return sim_fail(x, NPU_ERR_HW_REFUSED, "DPU FLYING_MODE=1 but DPU_RDMA FLYING_MODE=0");
    }
    if (!check_precisions(x, &d, flying, in && in->is_int, rdma_fm))
        return false;
    if (d.fp != prec_is_float(d.proc_p) && flying)
        return sim_fail(x, NPU_ERR_INTERNAL, "precision class");

    /* ---- stages */
    if (!decode_stage(x, &d.bs, false, d.fp, DPU_DATA_FORMAT_BS_MUL_SHIFT_VALUE_NEG__GET(fmt)) ||
        !decode_stage(x, &d.bn, true, d.fp, DPU_DATA_FORMAT_BN_MUL_SHIFT_VALUE_NEG__GET(fmt)))
        return false;
    d.cpend = !DPU_BS_OW_CFG_OD_BYPASS__GET(ow);
    if (d.cpend) {
        if (!sim_unverified(x, "facts §6.8: CPEND/OW semantics inferred from Mesa only",
                            "DPU CPEND stage (OD_BYPASS=0)"))
            return false;
        if (d.fp || !in || !in->winsum)
            return sim_fail(x, NPU_ERR_UNSUPPORTED,
                            "DPU: CPEND needs an integer conv with CORE QD_EN=1 (window sums)");
        uint32_t op = sim_reg(x, REG_DPU_BS_OW_OP, &ok);
        if (!ok)
            return false;
        d.ow_op = (int16_t)DPU_BS_OW_OP_OW_OP__GET(op);
    }
    if (!decode_ew(x, &d, fmt))
        return false;
    uint32_t nchan = d.c;
    if (!decode_stage_mem(x, &d.bs, false, d.fp, nchan) ||
        !decode_stage_mem(x, &d.bn, true, d.fp, nchan))
        return false;

    /* ---- OUT_CVT */
    d.cvt_offset = sim_reg(x, REG_DPU_OUT_CVT_OFFSET, &ok);
    d.cvt_shift_reg = sim_reg(x, REG_DPU_OUT_CVT_SHIFT, &ok);
    uint32_t pend = sim_reg(x, REG_DPU_OFFSET_PEND, &ok);
    if (!ok)
        return false;
    d.offset_pend = DPU_OFFSET_PEND_OFFSET_PEND__GET(pend);
    if (d.fp) {
        unsigned scale = DPU_OUT_CVT_SCALE_OUT_CVT_SCALE__GET(cs);
        unsigned shift = DPU_OUT_CVT_SHIFT_OUT_CVT_SHIFT__GET(d.cvt_shift_reg);
        bool plain = scale == 1 && !shift && !d.cvt_offset &&
                     !DPU_OUT_CVT_SHIFT_MINUS_EXP__GET(d.cvt_shift_reg) &&
                     !DPU_OUT_CVT_SHIFT_CVT_TYPE__GET(d.cvt_shift_reg);
        /* RKNN's tanh: offset and MINUS_EXP after the LUT (NOTES S19). */
        bool tanh_like =
            scale == 1 && !shift && d.ew.lut && !DPU_OUT_CVT_SHIFT_CVT_TYPE__GET(d.cvt_shift_reg);
        if (!plain && !tanh_like &&
            !sim_unverified(x, "facts §5.3: fp OUT_CVT beyond identity",
                            "DPU fp OUT_CVT scale %u shift %u offset %d MINUS_EXP %u", scale, shift,
                            (int32_t)d.cvt_offset,
                            DPU_OUT_CVT_SHIFT_MINUS_EXP__GET(d.cvt_shift_reg)))
            return false;
    } else if (DPU_OUT_CVT_SHIFT_MINUS_EXP__GET(d.cvt_shift_reg) &&
               !sim_unverified(x, "facts §2.5: MINUS_EXP in an integer pipeline",
                               "DPU MINUS_EXP %u",
                               DPU_OUT_CVT_SHIFT_MINUS_EXP__GET(d.cvt_shift_reg))) {
        return false;
    }
    if (!decode_out(x, &d))
        return false;

    /* ---- input */
    const struct sim_cube *src = in;
    if (flying) {
        if (!mrdma_read(x, &d, rdma_fm, &x->rdma_in))
            return false;
        src = &x->rdma_in;
    }

    /* ---- output buffers */
    unsigned obytes = prec_bytes(d.out_p);
    uint8_t *out = NULL;
    uint64_t out_lo = 0, out_hi = 0;
    if (to_mem) {
        /* extent of the writes: the furthest element of any channel */
        for (uint32_t c = 0; c < d.c; c++) {
            uint64_t a = out_offset(&d, c, d.h - 1, d.w - 1, obytes) + obytes;
            if (a > out_hi)
                out_hi = a;
        }
        out = sim_dma(x, NPU_BLOCK_DPU, "WDMA output write", d.dst, out_hi - out_lo);
        if (!out)
            return false;
    }
    if (to_ppu && !sim_cube_alloc(x, &x->dpu_out, d.w, d.h, d.c, !prec_is_float(d.out_p)))
        return false;

    /* ---- the pipeline, element by element */
    const unsigned prec = d.proc_p;
    struct out_cvt_f ocf;
    out_cvt_f_init(&d, &ocf);
    const uint64_t line_bytes = (uint64_t)(d.w + d.notch0) * 16;
    /* The plain fp pass (BS, BN and EW bypassed, results only to memory, not transposed):
     * each value is OUT_CVT of the accumulator, as in the general loop below, without its
     * per-element stage tests; fp16 results are converted a channel plane at a time
     * (npu_fp32_to_fp16_n: the same bits as npu_fp32_to_fp16, element for element). */
    const size_t plane_n = (size_t)d.w * d.h;
    float *planef = NULL;
    uint16_t *planeh = NULL;
    bool plain = d.fp && !d.int_in_fp && d.bs.bypass && d.bn.bypass && d.ew.bypass && out &&
                 !to_ppu && !d.tp &&
                 (d.out_p == NPU_PRECISION_FP32 || d.out_p == NPU_PRECISION_FP16);
    /* OUT_CVT is the identity (scale 1, no shift, offset or MINUS_EXP) */
    const bool ident = !ocf.add_first && ocf.mul == 1.0 && ocf.add == 0.0;
    if (plain && d.out_p == NPU_PRECISION_FP16) {
        planef = malloc(plane_n * sizeof(float));
        planeh = malloc(plane_n * sizeof(uint16_t));
        plain = planef && planeh; /* else element by element */
    }
    for (uint32_t c = 0; c < d.c; c++) {
        bool pad_ch = c >= d.c_real;
        uint64_t c_base = out_offset(&d, c, 0, 0, obytes);
        if (plain && !pad_ch) {
            const float *sf = src->f + (size_t)c * plane_n;
            if (d.out_p == NPU_PRECISION_FP32 && ident) {
                /* v * 1 + 0 in binary64 and back is v + 0.0f: the same bits (-0 becomes +0,
                 * NaN stays NaN with its payload, subnormals are kept) */
                for (uint32_t y = 0; y < d.h; y++) {
                    uint8_t *row = out + c_base + y * line_bytes;
                    const float *srow = sf + (size_t)y * d.w;
                    for (uint32_t xx = 0; xx < d.w; xx++) {
                        float f = srow[xx] + 0.0f;
                        memcpy(row + (size_t)xx * 16, &f, 4);
                    }
                }
            } else if (d.out_p == NPU_PRECISION_FP32) {
                for (uint32_t y = 0; y < d.h; y++) {
                    uint8_t *row = out + c_base + y * line_bytes;
                    const float *srow = sf + (size_t)y * d.w;
                    for (uint32_t xx = 0; xx < d.w; xx++) {
                        float f = (float)out_cvt_f(&ocf, (double)srow[xx]);
                        memcpy(row + (uint64_t)xx * 16, &f, 4);
                    }
                }
            } else {
                if (ident)
                    for (size_t i = 0; i < plane_n; i++)
                        planef[i] = sf[i] + 0.0f;
                else
                    for (size_t i = 0; i < plane_n; i++)
                        planef[i] = (float)out_cvt_f(&ocf, (double)sf[i]);
                npu_fp32_to_fp16_n(planeh, planef, plane_n);
                for (uint32_t y = 0; y < d.h; y++) {
                    uint8_t *row = out + c_base + y * line_bytes;
                    const uint16_t *hrow = planeh + (size_t)y * d.w;
                    for (uint32_t xx = 0; xx < d.w; xx++)
                        memcpy(row + (uint64_t)xx * 16, hrow + xx, 2);
                }
            }
            continue;
        }
        for (uint32_t y = 0; y < d.h; y++)
            for (uint32_t xx = 0; xx < d.w; xx++) {
                size_t o = ((size_t)c * d.h + y) * d.w + xx;
                double vf = 0;
                int64_t vi = 0;
                if (d.fp) {
                    double v = d.int_in_fp ? (double)(float)src->i[o] : src->f[o];
                    v = run_stage_f(&d.bs, v, c);
                    v = run_stage_f(&d.bn, v, c);
                    if (!d.ew.bypass) {
                        const struct ew *e = &d.ew;
                        if (!e->op_bypass) {
                            double op;
                            if (e->op_mem) {
                                const uint8_t *p = ew_operand(e, c, y, xx);
                                op = e->esize == 2   ? sim_f16_to_f32((uint16_t)(p[0] | p[1] << 8))
                                     : e->esize == 4 ? (double)npu_bits_f32((uint32_t)p[0] |
                                                                            (uint32_t)p[1] << 8 |
                                                                            (uint32_t)p[2] << 16 |
                                                                            (uint32_t)p[3] << 24)
                                                     : (double)(int8_t)p[0];
                            } else {
                                op = npu_bits_f32(e->op_value[c % 8]);
                            }
                            v = e->mul ? (float)((float)v * (float)op)
                                       : (float)alu_f(e->algo, (float)v, (float)op);
                        }
                        if (e->lut)
                            v = lut_eval(x->core, &e->lut_cfg, x->lut_fixed ? lut_fix(v) : v);
                        if (e->relu) {
                            v = v < 0 ? 0 : v;
                            if (e->relux && v > npu_bits_f32(e->relux_reg))
                                v = npu_bits_f32(e->relux_reg);
                        }
                    }
                    /* binary32 datapath: round each stage result to fp32 */
                    vf = out_cvt_f(&ocf, (float)v);
                } else {
                    int64_t v = src->i[o];
                    v = run_stage_i(&d.bs, v, c, prec);
                    if (d.cpend)
                        v += (int64_t)d.ow_op * src->winsum[(size_t)y * d.w + xx];
                    v = run_stage_i(&d.bn, v, c, prec);
                    if (!d.ew.bypass) {
                        const struct ew *e = &d.ew;
                        if (!e->op_bypass) {
                            int64_t op;
                            if (e->op_mem) {
                                const uint8_t *p = ew_operand(e, c, y, xx);
                                op = load_int(p, e->esize);
                            } else {
                                op = (int32_t)e->op_value[c % 8];
                            }
                            if (e->mul) {
                                /* int32 pipelines take the MUL operand as
                                 * signed int16 (AB observation). */
                                if (prec == NPU_PRECISION_INT32)
                                    op = (int16_t)(op & 0xffff);
                                int64_t p = v * op;
                                v = sim_shift_round(p, p < 0 ? e->truncate_neg : e->truncate, 0);
                            } else {
                                v = alu_i(e->algo, v, op, prec);
                            }
                        }
                        if (e->lut)
                            v = (int64_t)llrint(
                                lut_eval(x->core, &e->lut_cfg,
                                         x->lut_fixed ? lut_fix((double)v) : (double)v));
                        if (e->relu) {
                            v = v < 0 ? 0 : v;
                            if (e->relux && v > (int32_t)e->relux_reg)
                                v = (int32_t)e->relux_reg;
                        }
                    }
                    vi = out_cvt_i(&d, v);
                }
                if (out) {
                    uint8_t *p = out + (d.tp ? out_offset(&d, c, y, xx, obytes)
                                             : c_base + y * line_bytes + (uint64_t)xx * 16);
                    if (pad_ch) {
                        /* channels past ORIG_CHANNEL hold OFFSET_PEND */
                        uint32_t pv = d.offset_pend;
                        memset(p, 0, obytes);
                        memcpy(p, &pv, obytes < 2 ? obytes : 2);
                    } else {
                        store_out(p, d.out_p, d.fp, vf, vi);
                    }
                }
                if (to_ppu) {
                    if (x->dpu_out.is_int)
                        x->dpu_out.i[o] = d.fp ? (int64_t)llrint(vf)
                                               : sim_sat(vi, prec_min(d.out_p), prec_max(d.out_p));
                    else
                        x->dpu_out.f[o] = d.out_p == NPU_PRECISION_FP16
                                              ? sim_f16_to_f32(npu_fp32_to_fp16((float)vf))
                                              : (float)vf;
                }
            }
    }
    free(planef);
    free(planeh);
    if (to_mem)
        x->rec.output_bytes += (uint64_t)NPU_DIV_ROUND_UP(d.c, 16 / obytes) * d.w * d.h * 16;
    /* A DPU-only task: one 16-byte atom per cycle (the timing model's flying rate). */
    if (!(x->enable & NPU_OP_EN_CNA)) {
        const struct npu_timing_model *tm = npu_timing_model();
        double s = (double)d.w * d.h * d.c / (tm->clock_hz * tm->flying_elems_per_cycle);
        if (s > x->rec.compute_s)
            x->rec.compute_s = s;
    }
    return true;
}
