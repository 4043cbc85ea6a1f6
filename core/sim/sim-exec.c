/* SPDX-License-Identifier: MIT */
/*
 * sim-exec.c: one core running its share of a job, the way the PC does it
 * (facts §1.4, §4.1): the driver programs the first task's regcmd address and
 * AMOUNT (from regcfg_amount), the PC fetches (AMOUNT + 1) * 2 qwords, applies
 * the register writes in order into each block's current register group,
 * starts the blocks named by the op_en entry, follows the tail
 * (PC_BASE_ADDRESS / PC_REGISTER_AMOUNTS) to the next segment and stops after
 * task_number tasks; then the interrupt status of the last task is compared
 * with its int_mask as the vendor driver does.
 *
 * Register groups (NOTES S1, S19): every block has two groups. Writes land in
 * the group the block's pointer names; a launch executes that group and, when
 * S_POINTER enabled ping-pong (0x0E), flips the pointer, so a task sees the
 * registers it did not write as the task two back left them. S_POINTER with
 * the clear bits (0x30) resets the pointer to group 0.
 *
 * Anything the hardware would refuse, or that the facts leave open, stops the
 * job with a message naming the task (descriptor index), block and address.
 */
#include "sim-priv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-abi.h"

/* ------------------------------------------------------------ reporting */

static void
vrecord(struct sim_exec *x, enum npu_status st, const char *fmt, va_list ap)
{
    if (x->status != NPU_OK)
        return;
    x->status = st;
    char text[448];
    vsnprintf(text, sizeof(text), fmt, ap);
    snprintf(x->sub->msg, sizeof(x->sub->msg), "task %u: %s", x->task, text);
}

bool
sim_fail(struct sim_exec *x, enum npu_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vrecord(x, st, fmt, ap);
    va_end(ap);
    return false;
}

bool
sim_unverified(struct sim_exec *x, const char *fact, const char *fmt, ...)
{
    char text[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (x->strict)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "%s: unverified on hardware (%s); strict mode refuses it "
                        "(NPU_DEBUG=lenient runs it with the simulator's guess)",
                        text, fact);
    /* Lenient: warn once per distinct message per sub-job. */
    for (unsigned i = 0; i < x->n_warned; i++)
        if (!strncmp(x->warned[i], text, sizeof(x->warned[i]) - 1))
            return true;
    if (x->n_warned < NPU_ARRAY_SIZE(x->warned))
        snprintf(x->warned[x->n_warned++], sizeof(x->warned[0]), "%.95s", text);
    npu_warn("sim", "core %u task %u: %s: unverified (%s); lenient mode continues", x->core->index,
             x->task, text, fact);
    return true;
}

const char *
sim_reg_name(uint16_t off)
{
    const struct npu_reg_info *r = npu_reg_lookup(off);
    return r ? r->full_name : "?";
}

/* ------------------------------------------------------------ registers */

static inline int
block_of(uint16_t off)
{
    int b = npu_block_for_offset(off);
    return b >= 0 && b < SIM_NBLK ? b : -1;
}

static inline unsigned
reg_index(int blk, uint16_t off)
{
    return (unsigned)(off - npu_rk3588_blocks[blk].base) / 4u;
}

uint32_t
sim_reg(struct sim_exec *x, uint16_t off, bool *ok)
{
    int b = block_of(off);
    if (b < 0)
        npu_die("sim_reg: offset 0x%04x is not in a regcmd block", off);
    unsigned g = x->grp[b], i = reg_index(b, off);
    if (!x->core->written[b][g][i] && ok && *ok) {
        if (x->strict) {
            sim_fail(x, NPU_ERR_HW_REFUSED,
                     "%s: reads %s, which no regcmd has written in register group %u since "
                     "power-on; its reset value is undocumented",
                     npu_block_name(b), sim_reg_name(off), g);
            *ok = false;
        } else {
            sim_unverified(x, "reset values, facts §2",
                           "%s reads the never-written %s (taken as 0)", npu_block_name(b),
                           sim_reg_name(off));
        }
    }
    return x->core->regs[b][g][i];
}

/* ------------------------------------------------------------------ DMA */

/* Adds [lo, hi) to the task's access record: merged with a touching range of the same
 * kind, else appended, else (record full) the nearest range of that kind is widened to
 * cover it, so the record is always a superset of what the task touched. */
static void
rec_access(struct sim_task_rec *r, uint32_t lo, uint32_t hi, bool write)
{
    int best = -1;
    uint64_t best_gap = UINT64_MAX;
    for (uint32_t i = 0; i < r->n_access; i++) {
        struct npu_task_access *e = &r->access[i];
        if (e->write != (uint32_t)write)
            continue;
        uint64_t gap = hi < e->lo ? e->lo - hi : lo > e->hi ? lo - e->hi : 0;
        if (gap < best_gap)
            best_gap = gap, best = (int)i;
    }
    if (best >= 0 && (best_gap == 0 || r->n_access == NPU_TASK_ACCESS_MAX)) {
        struct npu_task_access *e = &r->access[best];
        e->lo = NPU_MIN(e->lo, lo);
        e->hi = NPU_MAX(e->hi, hi);
        return;
    }
    if (r->n_access < NPU_TASK_ACCESS_MAX) {
        r->access[r->n_access++] = (struct npu_task_access){lo, hi, write};
        return;
    }
    /* full and no range of this kind: widen range 0 and make it count as both kinds */
    r->access[0].lo = NPU_MIN(r->access[0].lo, lo);
    r->access[0].hi = NPU_MAX(r->access[0].hi, hi);
    r->access[0].write = 1;
}

uint8_t *
sim_dma(struct sim_exec *x, int blk, const char *what, uint32_t addr, uint64_t len)
{
    /* TASK_DMA_BASE_ADDR is added to block DMA addresses (TRM "final address
     * = base + offset", facts §1.4); not to PC fetches (open question §6.10:
     * every vendor stream chains absolute addresses). */
    uint64_t a = addr;
    if (blk != NPU_BLOCK_PC)
        a += x->task_base;
    if (len == 0)
        len = 1;
    if (a > 0xffffffffull || len > 0x100000000ull - a) {
        sim_fail(x, NPU_ERR_FAULT,
                 "%s: %s DMA of %llu bytes at 0x%08llx runs past the 32-bit address space",
                 npu_block_name(blk), what, (unsigned long long)len, (unsigned long long)a);
        return NULL;
    }
    const struct npu_sim_bo *bo = NULL;
    uint8_t *p = sim_memview_resolve(&x->mem, a, len, &bo);
    if (p) {
        if (blk != NPU_BLOCK_PC)
            rec_access(&x->rec, (uint32_t)a, (uint32_t)(a + len),
                       blk == NPU_BLOCK_DPU || blk == NPU_BLOCK_PPU);
        return p;
    }
    if (!bo)
        sim_fail(x, NPU_ERR_FAULT,
                 "%s: %s DMA at 0x%08llx (%llu bytes): address not mapped (IOMMU fault)",
                 npu_block_name(blk), what, (unsigned long long)a, (unsigned long long)len);
    else
        sim_fail(x, NPU_ERR_FAULT,
                 "%s: %s DMA at 0x%08llx (%llu bytes) runs past the end of the BO "
                 "0x%08x..0x%08llx",
                 npu_block_name(blk), what, (unsigned long long)a, (unsigned long long)len,
                 bo->iova, (unsigned long long)bo->iova + bo->size);
    return NULL;
}

bool
sim_cube_alloc(struct sim_exec *x, struct sim_cube *cube, uint32_t w, uint32_t h, uint32_t c,
               bool is_int)
{
    uint64_t n = (uint64_t)w * h * c;
    /* 13-bit cube fields allow 8192^3; refuse what no real program means
     * (2^27 elements is 100x the largest vendor task) rather than exhaust
     * host memory. */
    if (n == 0 || n > (1ull << 27)) {
        sim_fail(x, NPU_ERR_UNSUPPORTED, "feature cube %ux%ux%u is too large to simulate", w, h, c);
        return false;
    }
    cube->w = w;
    cube->h = h;
    cube->c = c;
    cube->is_int = is_int;
    if (is_int) {
        if (cube->cap_i < n) {
            free(cube->i);
            cube->i = malloc(n * sizeof(*cube->i));
            cube->cap_i = cube->i ? n : 0;
        }
        if (!cube->i)
            return sim_fail(x, NPU_ERR_NOMEM, "no host memory for a %llu-element cube",
                            (unsigned long long)n);
    } else {
        if (cube->cap_f < n) {
            free(cube->f);
            cube->f = malloc(n * sizeof(*cube->f));
            cube->cap_f = cube->f ? n : 0;
        }
        if (!cube->f)
            return sim_fail(x, NPU_ERR_NOMEM, "no host memory for a %llu-element cube",
                            (unsigned long long)n);
    }
    return true;
}

void
sim_cube_free(struct sim_cube *cube)
{
    free(cube->f);
    free(cube->i);
    free(cube->winsum);
    memset(cube, 0, sizeof(*cube));
}

/* --------------------------------------------------------- core state */

struct sim_core *
sim_core_new(unsigned index)
{
    struct sim_core *c = calloc(1, sizeof(*c));
    if (c)
        c->index = index;
    return c;
}

void
sim_core_free(struct sim_core *core)
{
    if (!core)
        return;
    free(core->cbuf.weights);
    free(core->cbuf.data_f);
    free(core->cbuf.data_i);
    free(core->cbuf.wmemo_src);
    free(core->cbuf.wmemo_mat);
    free(core);
}

/* S_POINTER (facts §2.3): not ping-pong shadowed itself. PP_CLEAR bits reset
 * the pointer; with POINTER_PP_EN the pointer alternates per launch, without
 * it the POINTER bit selects the group. Vendor streams use only 0x0E and 0x30
 * (NOTES S19); the kernel adds the core index in bits 28+ for CNA/CORE. */
static bool
write_s_pointer(struct sim_exec *x, int blk, uint32_t v, bool from_kernel)
{
    struct sim_core *c = x->core;
    /* The field layout is CNA.S_POINTER's for every block (same_fields). */
    uint32_t core_bits = v & CNA_S_POINTER_CORE_INDEX__MASK;
    uint32_t base = v & ~core_bits;
    uint32_t pp = CNA_S_POINTER_POINTER_PP_EN(1) | CNA_S_POINTER_EXECUTER_PP_EN(1) |
                  CNA_S_POINTER_POINTER_PP_MODE(1);
    uint32_t clr = CNA_S_POINTER_POINTER_PP_CLEAR(1) | CNA_S_POINTER_EXECUTER_PP_CLEAR(1);
    if (base != pp && base != clr) {
        if (!sim_unverified(x, "NOTES S19: vendor streams write only 0x0E and 0x30",
                            "%s S_POINTER = 0x%08x", npu_block_name(blk), v))
            return false;
    }
    if (core_bits && !from_kernel && blk != NPU_BLOCK_CNA && blk != NPU_BLOCK_CORE) {
        if (!sim_unverified(x, "facts §1.4: only the kernel sets core bits, on CNA/CORE",
                            "%s S_POINTER core bits 0x%08x", npu_block_name(blk), core_bits))
            return false;
    }
    if (base & CNA_S_POINTER_POINTER_PP_CLEAR(1))
        c->ptr[blk] = 0;
    c->pp_toggle[blk] =
        (base & CNA_S_POINTER_POINTER_PP_EN__MASK) && (base & CNA_S_POINTER_POINTER_PP_MODE__MASK);
    if (!(base & CNA_S_POINTER_POINTER_PP_EN__MASK))
        c->ptr[blk] = CNA_S_POINTER_POINTER__GET(base);
    return true;
}

/* --------------------------------------------------------------- launch */

static const char *
op_en_text(uint32_t m, char *buf, size_t n)
{
    npu_format_op_en(buf, n, m);
    return buf;
}

/* Starts the blocks of op_en mask m with the current register groups. */
static bool
launch(struct sim_exec *x, uint32_t m)
{
    struct sim_core *c = x->core;
    char names[96];
    x->enable = m;
    x->rec.enable = m;
    if (!m)
        return sim_fail(x, NPU_ERR_FAULT,
                        "op_en entry with mask 0 starts no block; the hardware would wait for a "
                        "completion interrupt that never comes");
    for (int b = 0; b < SIM_NBLK; b++)
        x->grp[b] = c->ptr[b];

    bool cna = m & NPU_OP_EN_CNA, core = m & NPU_OP_EN_CORE, dpu = m & NPU_OP_EN_DPU;
    bool rdma = m & NPU_OP_EN_DPU_RDMA, ppu = m & NPU_OP_EN_PPU, prdma = m & NPU_OP_EN_PPU_RDMA;
    /* Data flow of facts §5.1: CNA -> CORE -> DPU -> (PPU); flying modes take
     * the DPU input from DPU_RDMA and the PPU input from PPU_RDMA. */
    if (cna != core)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "op_en 0x%x (%s): CNA and CORE only run together (CNA feeds the MAC "
                        "array)",
                        m, op_en_text(m, names, sizeof(names)));
    if (cna && !dpu)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "op_en 0x%x (%s): the CORE accumulators drain only through the DPU", m,
                        op_en_text(m, names, sizeof(names)));
    if (rdma && !dpu)
        return sim_fail(x, NPU_ERR_HW_REFUSED, "op_en 0x%x (%s): DPU_RDMA only feeds the DPU", m,
                        op_en_text(m, names, sizeof(names)));
    if (prdma && !ppu)
        return sim_fail(x, NPU_ERR_HW_REFUSED, "op_en 0x%x (%s): PPU_RDMA only feeds the PPU", m,
                        op_en_text(m, names, sizeof(names)));
    /* The deny-list passed; now the allow-list (sim-evidence.c). */
    if (!sim_evidence_check(x, NPU_OP_EN_OFFSET, m))
        return false;

    bool ok = true;
    bool dpu_flying = false, dpu_to_ppu = false, dpu_to_mem = false, ppu_flying = false;
    if (dpu) {
        uint32_t fm = sim_reg(x, REG_DPU_FEATURE_MODE_CFG, &ok);
        if (!ok)
            return false;
        dpu_flying = DPU_FEATURE_MODE_CFG_FLYING_MODE__GET(fm);
        uint32_t om = DPU_FEATURE_MODE_CFG_OUTPUT_MODE__GET(fm);
        dpu_to_ppu = om & NPU_DPU_OUTPUT_MODE_PPU;
        dpu_to_mem = om & NPU_DPU_OUTPUT_MODE_MEMORY;
        if (dpu_flying && !rdma)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "DPU FLYING_MODE=1 takes its input from DPU_RDMA, which op_en 0x%x "
                            "does not start",
                            m);
        if (!dpu_flying && !core)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "DPU FLYING_MODE=0 takes its input from CORE, which op_en 0x%x does "
                            "not start",
                            m);
        if (dpu_flying && core)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "op_en 0x%x starts CNA/CORE but the DPU reads DPU_RDMA "
                            "(FLYING_MODE=1): the accumulators would never drain",
                            m);
        if (dpu_to_ppu && !ppu)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "DPU OUTPUT_MODE sends data to the PPU, which op_en 0x%x does not "
                            "start",
                            m);
        if (!dpu_to_ppu && !dpu_to_mem)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "DPU OUTPUT_MODE=0: the DPU output goes nowhere");
    }
    if (ppu) {
        uint32_t om = sim_reg(x, REG_PPU_OPERATION_MODE_CFG, &ok);
        if (!ok)
            return false;
        ppu_flying = PPU_OPERATION_MODE_CFG_FLYING_MODE__GET(om);
        if (ppu_flying && !prdma)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "PPU FLYING_MODE=1 reads PPU_RDMA, which op_en 0x%x does not start", m);
        if (!ppu_flying && !(dpu && dpu_to_ppu))
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "PPU FLYING_MODE=0 takes its input from the DPU, which does not send "
                            "it any (op_en 0x%x)",
                            m);
        if (ppu_flying && dpu && dpu_to_ppu)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "the DPU sends data to the PPU, but the PPU reads PPU_RDMA "
                            "(FLYING_MODE=1)");
        if (!ppu_flying &&
            !sim_unverified(x, "facts §5.4 / NOTES §4: no vendor pooling stream",
                            "PPU fed directly by the DPU (on-the-fly pooling after a conv)"))
            return false;
    }

    if (cna && !sim_cna_run(x, &x->core_out))
        return false;
    if (dpu && !sim_dpu_run(x, dpu_flying ? NULL : &x->core_out, dpu_to_ppu, dpu_to_mem))
        return false;
    if (ppu && !sim_ppu_run(x, ppu_flying ? NULL : &x->dpu_out))
        return false;

    for (int b = 0; b < SIM_NBLK; b++) {
        int bit = npu_rk3588_blocks[b].op_en_bit;
        if (bit >= 0 && (m & (1u << bit)) && c->pp_toggle[b])
            c->ptr[b] ^= 1;
    }
    return true;
}

/* ------------------------------------------------------------ qwords */

struct seg_state {
    bool op_en_seen;
    bool after_marker;
    bool next_addr_set, next_amount_set;
    uint32_t next_addr, next_amount;
};

static bool
write_pc(struct sim_exec *x, struct seg_state *s, const struct npu_qword_info *q)
{
    if (q->offset == REG_PC_BASE_ADDRESS) {
        s->next_addr = q->value;
        s->next_addr_set = true;
        return sim_evidence_check(x, q->offset, q->value);
    }
    if (q->offset == REG_PC_REGISTER_AMOUNTS) {
        uint32_t cores = PC_REGISTER_AMOUNTS_CORE_NUM__GET(q->value);
        if (npu_reg_reserved_bits(q->reg, q->value))
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "PC_REGISTER_AMOUNTS = 0x%08x sets reserved bits", q->value);
        /* Bits 17:16 = cores of the plan - 1 (errata S3): seen only in RKNN's
         * multi-core chains; what the PC does with them is not known. */
        if (cores && !sim_unverified(x, "errata S3: multi-core plan bits",
                                     "PC_REGISTER_AMOUNTS core-count bits = %u", cores))
            return false;
        s->next_amount = q->value;
        s->next_amount_set = true;
        return sim_evidence_check(x, q->offset, q->value);
    }
    /* The regcmd stream writes only the chain registers (NOTES S15). */
    return sim_fail(x, NPU_ERR_HW_REFUSED,
                    "PC: %s (0x%04x) cannot be written from a regcmd stream; only "
                    "PC_BASE_ADDRESS and PC_REGISTER_AMOUNTS are (NOTES S15)",
                    q->reg ? q->reg->full_name : "?", q->offset);
}

static bool
write_block_reg(struct sim_exec *x, const struct npu_qword_info *q)
{
    const struct npu_reg_info *r = q->reg;
    int b = q->block;
    if (r->flags & NPU_REG_RO)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "%s: write of 0x%08x to read-only register %s (0x%04x)", npu_block_name(b),
                        q->value, r->full_name, q->offset);
    if (r->flags & NPU_REG_NO_REGCMD)
        return sim_fail(x, NPU_ERR_HW_REFUSED, "%s: %s (0x%04x) is not written through regcmd",
                        npu_block_name(b), r->full_name, q->offset);
    uint32_t reserved = npu_reg_reserved_bits(r, q->value);
    /* RKNN writes LUT entries sign-extended to 32 bits (onpu-tanh, NOTES
     * S19): vendor-proven, the upper half is ignored. */
    if (q->offset == REG_DPU_LUT_ACCESS_DATA &&
        reserved == (((q->value & 0x8000u) ? 0xffff0000u : 0) & reserved) &&
        (q->value >> 16) == ((q->value & 0x8000u) ? 0xffffu : 0))
        reserved = 0;
    /* Address registers keep bits 31:4 (facts §2.10 alignment summary). */
    if (reserved && (r->flags & NPU_REG_ADDR) && !(reserved & ~0xfu))
        return sim_fail(x, NPU_ERR_FAULT,
                        "%s: %s = 0x%08x is not 16-byte aligned (the register keeps bits 31:4, "
                        "facts §2.10)",
                        npu_block_name(b), r->full_name, q->value);
    if (reserved &&
        !sim_unverified(x, "reserved bits in the TRM / facts §2",
                        "%s = 0x%08x sets reserved bits 0x%08x", r->full_name, q->value, reserved))
        return false;
    unsigned i = reg_index(b, q->offset);
    if (i == reg_index(b, REG_CNA_S_POINTER - NPU_BLOCK_BASE_CNA + npu_rk3588_blocks[b].base))
        return write_s_pointer(x, b, q->value, false) && sim_evidence_check(x, q->offset, q->value);
    if (i ==
        reg_index(b, REG_CNA_OPERATION_ENABLE - NPU_BLOCK_BASE_CNA + npu_rk3588_blocks[b].base))
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "%s: OPERATION_ENABLE written from regcmd; blocks start through the op_en "
                        "entry (NOTES S15)",
                        npu_block_name(b));
    if ((r->flags & NPU_REG_UNDOCUMENTED) && q->value)
        if (!sim_unverified(x, "facts §6.9: every generator writes 0", "undocumented %s = 0x%08x",
                            r->full_name, q->value))
            return false;
    if (!sim_evidence_check(x, q->offset, q->value))
        return false;
    struct sim_core *c = x->core;
    unsigned g = c->ptr[b];
    c->regs[b][g][i] = q->value;
    c->written[b][g][i] = 1;
    if (q->offset == REG_DPU_LUT_ACCESS_CFG || q->offset == REG_DPU_LUT_ACCESS_DATA)
        return sim_lut_access(x, q->offset, q->value);
    return true;
}

static bool
apply_qword(struct sim_exec *x, struct seg_state *s, uint64_t qw, unsigned idx)
{
    struct npu_qword_info q;
    enum npu_qword_kind kind = npu_qword_classify(qw, &q);
    if (s->op_en_seen) {
        if (kind == NPU_QW_NOP)
            return true;
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "qword %u (0x%016llx) follows the op_en entry inside the fetched segment; "
                        "op_en must be the last entry (TRM, facts §1.2)",
                        idx, (unsigned long long)qw);
    }
    bool marker = s->after_marker;
    s->after_marker = false;
    switch (kind) {
    case NPU_QW_NOP: return true;
    case NPU_QW_MARKER: s->after_marker = true; return true;
    case NPU_QW_OP_EN:
        if (!marker)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "op_en entry (qword %u) is not preceded by the mandatory "
                            "0x0041000000000000 marker (TRM, facts §1.2)",
                            idx);
        s->op_en_seen = true;
        return launch(x, q.value);
    case NPU_QW_REG:
        if (q.block == NPU_BLOCK_PC)
            return write_pc(x, s, &q);
        return write_block_reg(x, &q);
    case NPU_QW_UNKNOWN_TARGET:
        if (q.target == (NPU_TARGET_DPU | NPU_TARGET_DPU_RDMA))
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "qword %u (0x%016llx): target 0x3001 would select DPU and DPU_RDMA "
                            "at once; no source uses it (facts §1.2)",
                            idx, (unsigned long long)qw);
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "qword %u (0x%016llx): unknown regcmd target 0x%04x (facts §1.2)", idx,
                        (unsigned long long)qw, q.target);
    case NPU_QW_TARGET_MISMATCH:
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "qword %u (0x%016llx): target 0x%04x (%s) does not match register offset "
                        "0x%04x (%s)",
                        idx, (unsigned long long)qw, q.target, npu_block_name(q.block), q.offset,
                        npu_block_name(npu_block_for_offset(q.offset)));
    case NPU_QW_UNKNOWN_REG:
        if (x->strict)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "qword %u (0x%016llx): unknown register 0x%04x in block %s (not in "
                            "the register database)",
                            idx, (unsigned long long)qw, q.offset, npu_block_name(q.block));
        npu_warn("sim", "core %u task %u: unknown register 0x%04x in block %s written (ignored)",
                 x->core->index, x->task, q.offset, npu_block_name(q.block));
        return true;
    case NPU_QW_BAD_SPECIAL:
        return sim_fail(x, NPU_ERR_HW_REFUSED, "qword %u (0x%016llx): malformed %s entry", idx,
                        (unsigned long long)qw,
                        q.target == NPU_TARGET_OP_EN    ? "op_en"
                        : q.target == NPU_TARGET_MARKER ? "marker"
                                                        : "target-0");
    }
    return sim_fail(x, NPU_ERR_INTERNAL, "unclassified qword");
}

/* ------------------------------------------------------------ the chain */

static bool
rec_push(struct sim_exec *x)
{
    struct sim_subjob *sub = x->sub;
    if (sub->n_recs == sub->cap_recs) {
        size_t cap = sub->cap_recs ? sub->cap_recs * 2 : 16;
        struct sim_task_rec *n = realloc(sub->recs, cap * sizeof(*n));
        if (!n)
            return sim_fail(x, NPU_ERR_NOMEM, "out of host memory");
        sub->recs = n;
        sub->cap_recs = cap;
    }
    sub->recs[sub->n_recs++] = x->rec;
    return true;
}

/* Collapses each ping-pong pair of interrupt bits (0x3, 0xc, ... 0xc00) as the
 * vendor driver's rknpu_fuzz_status does before comparing with int_mask. */
static uint32_t
fuzz_status(uint32_t st)
{
    uint32_t r = 0;
    for (unsigned b = 0; b < 12; b += 2)
        if (st & (3u << b))
            r |= 3u << b;
    return r | (st & ~0xfffu);
}

static void
read_desc(const struct npu_sim_bo *tbo, uint32_t idx, struct npu_rknpu_task *d)
{
    memcpy(d, tbo->host + (size_t)idx * sizeof(*d), sizeof(*d));
}

static void
run_chain(struct sim_exec *x)
{
    struct sim_subjob *sub = x->sub;
    const struct npu_sim_bo *tbo = sub->job->task_bo;
    struct npu_rknpu_task first, last;
    read_desc(tbo, sub->task_start, &first);
    read_desc(tbo, sub->task_start + sub->task_number - 1, &last);
    x->task = sub->task_start;

    /* What the vendor driver programs before OP_EN (facts §1.4 steps 1-6). */
    uint32_t sp = CNA_S_POINTER_POINTER_PP_EN(1) | CNA_S_POINTER_EXECUTER_PP_EN(1) |
                  CNA_S_POINTER_POINTER_PP_MODE(1) | CNA_S_POINTER_CORE_INDEX(x->core->index);
    if (!write_s_pointer(x, NPU_BLOCK_CNA, sp, true) ||
        !write_s_pointer(x, NPU_BLOCK_CORE, sp, true))
        return;
    if (first.regcmd_addr > 0xffffffffull) {
        sim_fail(x, NPU_ERR_FAULT, "PC: regcmd_addr 0x%llx does not fit the 32-bit PC_BASE_ADDRESS",
                 (unsigned long long)first.regcmd_addr);
        return;
    }
    uint32_t addr = (uint32_t)first.regcmd_addr;
    /* rknpu_job_subcore_commit_pc: (regcfg_amount + 4 + 1) / 2 - 1. */
    uint32_t amount = npu_pc_amount((size_t)first.regcfg_amount + NPU_TASK_TAIL_QWORDS);
    if (x->task_base && !sim_unverified(x, "facts §6.10: TASK_DMA_BASE_ADDR scope",
                                        "task_base_addr 0x%08x", x->task_base))
        return;

    uint32_t last_int = 0;
    for (uint32_t k = 0; k < sub->task_number; k++) {
        x->task = sub->task_start + k;
        memset(&x->rec, 0, sizeof(x->rec));
        x->rec.task = x->task;
        x->rec.cbuf_from = UINT32_MAX;
        if (addr & 0xfu) {
            sim_fail(x, NPU_ERR_FAULT,
                     "PC: regcmd address 0x%08x is not 16-byte aligned (PC_BASE_ADDRESS keeps "
                     "bits 31:4; bit 0 would select slave mode; facts §1.3)",
                     addr);
            return;
        }
        size_t nq = npu_pc_amount_qwords(amount);
        x->rec.regcmd_bytes = nq * 8;
        const uint8_t *seg = sim_dma(x, NPU_BLOCK_PC, "regcmd fetch", addr, nq * 8);
        if (!seg)
            return;
        struct seg_state s = {0};
        for (size_t i = 0; i < nq; i++) {
            uint64_t q;
            memcpy(&q, seg + 8 * i, 8);
            if (!apply_qword(x, &s, q, (unsigned)i))
                return;
        }
        if (!s.op_en_seen) {
            sim_fail(x, NPU_ERR_FAULT,
                     "PC: the %zu qwords fetched at 0x%08x hold no op_en entry; no block starts "
                     "and the driver would time out",
                     nq, addr);
            return;
        }
        uint32_t term = (x->enable & NPU_OP_EN_PPU) ? NPU_BLOCK_PPU : NPU_BLOCK_DPU;
        uint32_t g = x->grp[term];
        last_int = term == NPU_BLOCK_PPU
                       ? (g ? PC_INTERRUPT_MASK_PPU_1(1) : PC_INTERRUPT_MASK_PPU_0(1))
                       : (g ? PC_INTERRUPT_MASK_DPU_1(1) : PC_INTERRUPT_MASK_DPU_0(1));
        if (!rec_push(x))
            return;
        sub->tasks_done++;
        if (k + 1 == sub->task_number)
            break;
        if (!s.next_addr_set || !s.next_amount_set || s.next_addr == 0) {
            sim_fail(x, NPU_ERR_FAULT,
                     "PC: the chain ends here (tail has no next PC_BASE_ADDRESS) after %u of "
                     "task_number %u tasks",
                     k + 1, sub->task_number);
            return;
        }
        addr = s.next_addr;
        amount = PC_REGISTER_AMOUNTS_PC_DATA_AMOUNT__GET(s.next_amount);
    }

    /* The vendor driver programs INTERRUPT_MASK with the last task's int_mask
     * and completes the job only if the collapsed status equals it; anything
     * else is "invalid irq status" and the job times out (facts §1.4, §4.1). */
    sub->int_status = last_int & last.int_mask;
    if (fuzz_status(sub->int_status) != last.int_mask) {
        x->task = sub->task_start + sub->task_number - 1;
        sim_fail(x, NPU_ERR_TIMEOUT,
                 "last task raises interrupt 0x%x but its int_mask is 0x%x: the vendor driver "
                 "reports an invalid irq status and the job times out",
                 last_int, last.int_mask);
        return;
    }
    /* The driver writes the status back into the last descriptor. */
    uint32_t st = sub->int_status;
    memcpy(tbo->host + (size_t)(sub->task_start + sub->task_number - 1) * sizeof(last) +
               offsetof(struct npu_rknpu_task, int_status),
           &st, sizeof(st));
}

void
sim_exec_subjob(struct npu_sim *sim, struct sim_core *core, struct sim_subjob *sub)
{
    struct sim_exec *x = calloc(1, sizeof(*x));
    if (!x) {
        sub->status = NPU_ERR_NOMEM;
        snprintf(sub->msg, sizeof(sub->msg), "out of host memory");
        return;
    }
    x->sim = sim;
    x->core = core;
    x->sub = sub;
    x->strict = sim->strict;
    x->lut_fixed = sim->lut_fixed;
    x->cna_ftz = sim->cna_ftz;
    x->task_base = sub->job->task_base;
    x->task = sub->task_start;
    if (sim_memview_take(&sim->mem, &x->mem) != NPU_OK)
        sim_fail(x, NPU_ERR_NOMEM, "out of host memory");
    else
        run_chain(x);
    sub->status = x->status;
    sim_memview_release(&x->mem);
    sim_cube_free(&x->core_out);
    sim_cube_free(&x->dpu_out);
    sim_cube_free(&x->rdma_in);
    free(x);
}
