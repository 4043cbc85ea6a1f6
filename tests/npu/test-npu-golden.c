/* SPDX-License-Identifier: MIT */
/*
 * test-npu-golden.c: route (a) of the back end (lowering + tiling + codegen)
 * against the golden vendor / open-project streams (tests/golden/vectors,
 * comparison levels of NOTES.md §1):
 *
 *  - mtx-matmul-*: the MatMul (fp16 -> fp32, fp16 -> fp16) and MatMulInteger
 *    (int8 -> int32) of each shape, compiled with mtx_style, must reproduce
 *    the stream byte for byte except the address values (L0-L2), and every
 *    address register must point at the right tensor (L3 symbolically).
 *  - ab-conv*: the Conv of each capture, compiled with RKNN's tiling rule,
 *    against chain 0 (the single-core plan) as effective register state:
 *    both streams are expanded with two register groups per block (errata
 *    S1/S2), then L0 (tasks, enables, int_mask, amounts, tails), L1 (the
 *    golden task's register order is a subsequence of ours: RKNN's delta
 *    tasks write a subset), L2 (values, addresses and FEATURE_GRAINS aside,
 *    NOTES S11) and L4 (row split, banks, WEIGHT_REUSE) are checked.
 *  - ab-rknn-conv-partial.tsv: see partial_table().
 *
 * usage: test-npu-golden <golden dir>
 */
#include <ctype.h>
#include <dirent.h>

#include "npu-test-util.h"

static const char *gdir;
static int verbose;

/* ---- compiling one op ---------------------------------------------------------- */

static struct npu_program *
compile(struct npu_graph *g, const struct npu_backend_options *o)
{
    struct npu_program *p = NULL;
    if (npu_lower_graph(g, o) || npu_codegen(g, o, &p)) {
        npu_graph_free(g);
        return NULL;
    }
    npu_graph_free(g);
    return p;
}

/* The program's only job. */
static const struct npu_prog_job *
only_job(const struct npu_program *p)
{
    if (!p || p->n_jobs != 1)
        return NULL;
    return &p->jobs[0];
}

/* Relocation of qword q of a job, or NULL. */
static const struct npu_prog_reloc *
reloc_at(const struct npu_prog_job *j, uint32_t q)
{
    for (uint32_t i = 0; i < j->n_relocs; i++)
        if (j->relocs[i].qword == q)
            return &j->relocs[i];
    return NULL;
}

/* The NPU tensor a relocation points into: "input" (the op's input), "output",
 * "weight" (the weights buffer), "regcmd" or "?" */
static const char *
reloc_role(const struct npu_program *p, const struct npu_prog_reloc *r, uint32_t *rel)
{
    if (r->buffer == NPU_BUF_WEIGHTS) {
        *rel = r->offset;
        return "weight";
    }
    if (r->buffer == NPU_RELOC_REGCMD) {
        *rel = r->offset;
        return "regcmd";
    }
    for (int i = 0; i < p->n_tensors; i++) {
        const struct npu_prog_tensor *t = &p->tensors[i];
        if (t->place != NPU_PLACE_NPU || t->buffer != NPU_BUF_ACT)
            continue;
        if (r->offset >= t->offset && r->offset < t->offset + t->bytes) {
            *rel = (uint32_t)(r->offset - t->offset);
            /* the converted input is read by the job; the result is converted back */
            for (int k = 0; k < p->n_steps; k++) {
                const struct npu_prog_step *s = &p->steps[k];
                if (s->kind != NPU_STEP_CONVERT)
                    continue;
                if (s->out[0] == i)
                    return "input";
                if (s->in[0] == i)
                    return "output";
            }
        }
    }
    return "?";
}

/* ---- MTX --------------------------------------------------------------------------- */

static void
check_mtx(const char *file)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", gdir, file);
    struct npu_golden gf;
    CHECK_EQ_INT(NPU_OK, npu_golden_load(path, &gf));
    int m, k, n;
    char kind[32];
    if (sscanf(file, "mtx-matmul-%31[^-]-%*[^-]-m%dk%dn%d", kind, &m, &k, &n) != 4) {
        CHECK(!"file name");
        npu_golden_free(&gf);
        return;
    }
    bool int8 = !strcmp(kind, "int8");
    bool f16out = strstr(file, "fp16-fp16") != NULL;
    /* the graph: MatMul(A, B) (fp16 -> fp32: A f32 host, result f32; fp16 ->
     * fp16: f16 host tensors) or MatMulInteger(A int8, B int8) */
    struct npu_graph *g = npu_graph_new("mtx");
    enum npu_dtype adt = int8 ? NPU_DTYPE_INT8 : f16out ? NPU_DTYPE_FP16 : NPU_DTYPE_FP32;
    int64_t ad[2] = {m, k}, bd[2] = {k, n};
    struct npu_value *a = npu_graph_add_input(g, "A", adt, 2, ad);
    size_t nb = (size_t)k * n;
    void *bdata = calloc(nb, 4);
    struct npu_tensor bt = {
        .dtype = int8 ? NPU_DTYPE_INT8 : adt, .ndim = 2, .dims = {k, n}, .data = bdata};
    (void)bd;
    struct npu_value *b = npu_graph_add_const(g, "B", &bt);
    free(bdata);
    struct npu_value *in[2] = {a, b};
    struct npu_node *mm = npu_node_new(g, int8 ? NPU_OP_MATMUL_INTEGER : NPU_OP_MATMUL, "mm", in, 2,
                                       1, (const char *[]){"C"});
    npu_graph_append(g, mm);
    CHECK_EQ_INT(NPU_OK, npu_infer_node(g, mm));
    npu_graph_add_output(g, mm->out[0]);
    struct npu_backend_options o = {.mtx_style = 1};
    struct npu_program *p = compile(g, &o);
    const struct npu_prog_job *j = only_job(p);
    CHECK(j != NULL);
    if (!j || gf.n_tasks != 1) {
        npu_program_free(p);
        npu_golden_free(&gf);
        return;
    }
    const struct npu_golden_task *gt = &gf.tasks[0];
    int diffs = 0, addr_ok = 0;
    CHECK_EQ_INT(1, j->n_tasks);
    CHECK_EQ_INT(gt->amount, j->tasks[0].n_body);
    CHECK_EQ_INT(gt->enable, j->tasks[0].enable_mask);
    CHECK_EQ_INT(gt->int_mask, j->tasks[0].int_mask);
    uint32_t nq = j->tasks[0].n_body + NPU_TASK_TAIL_QWORDS;
    CHECK_EQ_INT(gt->n_q, nq);
    for (uint32_t q = 0; q < gt->n_q && q < nq; q++) {
        uint64_t want = gt->q[q].q, got = j->regcmd[j->tasks[0].start + q];
        const struct npu_prog_reloc *r = reloc_at(j, j->tasks[0].start + q);
        if (gt->q[q].flags & NPU_GQ_RELOC) {
            /* L3: same register, pointing at the same tensor and offset */
            bool same_reg = npu_regcmd_target(want) == npu_regcmd_target(got) &&
                            npu_regcmd_offset(want) == npu_regcmd_offset(got);
            uint32_t rel = 0;
            const char *role = r ? reloc_role(p, r, &rel) : "none";
            const char *grole = gf.buffers[gt->q[q].buffer].name;
            bool ok = same_reg && r && !strcmp(role, grole) && rel == gt->q[q].buf_offset;
            if (!ok) {
                fprintf(stderr, "%s qword %u: address %016llx -> %s+0x%x, golden %s+0x%x\n", file,
                        q, (unsigned long long)got, role, rel, grole, gt->q[q].buf_offset);
                diffs++;
            } else {
                addr_ok++;
            }
        } else if (want != got || r) {
            fprintf(stderr, "%s qword %u: %016llx, golden %016llx\n", file, q,
                    (unsigned long long)got, (unsigned long long)want);
            diffs++;
        }
    }
    CHECK_EQ_INT(0, diffs);
    CHECK_EQ_INT(3, addr_ok); /* input, weights, output */
    if (verbose)
        printf("%-45s byte-identical apart from %d addresses (symbolically equal)\n", file,
               addr_ok);
    npu_program_free(p);
    npu_golden_free(&gf);
}

/* ---- effective register state ----------------------------------------------------- */

#define NREG 0x8000 /* offsets 0..0x7fff */

struct effstate {
    /* two groups per block; written flags */
    uint32_t val[2][NREG / 4];
    bool set[2][NREG / 4];
    unsigned ptr[8];
};

static int
blk_of(uint16_t off)
{
    return off >> 12;
}

/* op_en bit of a block (facts §1.2): CNA 0, CORE 2, DPU 3, DPU_RDMA 4, PPU 5, PPU_RDMA 6 */
static int
blk_en_bit(int b)
{
    static const int bit[8] = {-1, 0, -1, 2, 3, 4, 5, 6};
    return bit[b & 7];
}

/* Applies one task (body qwords) and returns the effective state per register
 * in eff[] (for the blocks the task enables). */
static void
eff_apply(struct effstate *e, const uint64_t *q, uint32_t n, uint32_t enable, uint32_t *eff,
          bool *effset)
{
    for (uint32_t i = 0; i < n; i++) {
        uint16_t off = npu_regcmd_offset(q[i]);
        uint16_t tgt = npu_regcmd_target(q[i]);
        if (!tgt || tgt == NPU_TARGET_OP_EN || tgt == NPU_TARGET_MARKER || off >= NREG)
            continue;
        int b = blk_of(off);
        unsigned gsel = b >= 1 ? e->ptr[b] : 0;
        e->val[gsel][off / 4] = npu_regcmd_value(q[i]);
        e->set[gsel][off / 4] = true;
    }
    memset(effset, 0, sizeof(bool) * (NREG / 4));
    for (uint32_t r = 0; r < NREG / 4; r++) {
        int b = blk_of((uint16_t)(r * 4));
        int bit = blk_en_bit(b);
        if (bit < 0 || !(enable & (1u << bit)))
            continue;
        unsigned gsel = e->ptr[b];
        eff[r] = e->val[gsel][r];
        effset[r] = e->set[gsel][r];
    }
    /* every enabled block flips its group (S_POINTER 0x0E ping-pong) */
    for (int b = 1; b < 8; b++) {
        int bit = blk_en_bit(b);
        if (bit >= 0 && (enable & (1u << bit)))
            e->ptr[b] ^= 1;
    }
}

static bool
is_addr_reg(uint16_t off)
{
    const struct npu_reg_info *ri = npu_reg_lookup(off);
    return ri && (ri->flags & NPU_REG_ADDR);
}

struct conv_case {
    int C, H, W, K, kh, kw;
};

/* Runs the effective-state comparison of chain 0; returns mismatches. */
static int
compare_chain0(const char *file, const struct npu_golden *gf, const struct npu_program *p,
               int *tasks_cmp, char *notes, size_t nlen, uint32_t surf_pad, int *padded)
{
    const struct npu_prog_job *j = only_job(p);
    if (!j)
        return 1;
    /* chain 0 task indices */
    uint32_t idx[64], ng = 0;
    for (uint32_t i = 0; i < gf->n_tasks && ng < 64; i++)
        if (gf->tasks[i].chain == 0)
            idx[ng++] = i;
    int bad = 0;
    if (ng != j->n_tasks) {
        snprintf(notes, nlen, "task count %u, golden chain 0 has %u", j->n_tasks, ng);
        return 1;
    }
    static struct effstate eg, em;
    static uint32_t fg[NREG / 4], fm[NREG / 4];
    static bool sg[NREG / 4], sm[NREG / 4];
    memset(&eg, 0, sizeof(eg));
    memset(&em, 0, sizeof(em));
    for (uint32_t t = 0; t < ng; t++) {
        const struct npu_golden_task *gt = &gf->tasks[idx[t]];
        uint64_t gq[512];
        uint32_t gn = gt->n_q < 512 ? gt->n_q : 512;
        for (uint32_t i = 0; i < gn; i++)
            gq[i] = gt->q[i].q;
        const uint64_t *mq = j->regcmd + j->tasks[t].start;
        uint32_t mn = j->tasks[t].n_body + NPU_TASK_TAIL_QWORDS;
        /* L0 */
        if ((uint32_t)gt->enable != j->tasks[t].enable_mask ||
            (uint32_t)gt->int_mask != j->tasks[t].int_mask) {
            fprintf(stderr, "%s task %u: enable/int_mask %x/%x, golden %x/%x\n", file, t,
                    j->tasks[t].enable_mask, j->tasks[t].int_mask, (unsigned)gt->enable,
                    (unsigned)gt->int_mask);
            bad++;
        }
        struct npu_tail tg, tm;
        npu_tail_parse(gq, gn, &tg);
        npu_tail_parse(mq, mn, &tm);
        /* the next amount can only agree when the next golden task is a full
         * one (RKNN's delta tasks, NOTES S2, are shorter by construction) */
        bool next_full =
            t + 1 >= ng || gf->tasks[idx[t + 1]].amount == (int64_t)j->tasks[t + 1].n_body;
        if (!tg.well_formed || !tm.well_formed || tg.has_next != tm.has_next ||
            (next_full && tg.next_amount != tm.next_amount) || tg.enable_mask != tm.enable_mask) {
            {
                fprintf(stderr, "%s task %u: tail differs (next %d/%d amount %u/%u)\n", file, t,
                        tm.has_next, tg.has_next, tm.next_amount, tg.next_amount);
                bad++;
            }
        }
        /* L1: the golden order is a subsequence of ours */
        uint32_t pos = 0;
        for (uint32_t i = 0; i + NPU_TASK_TAIL_QWORDS < gn; i++) {
            uint64_t key = gq[i] & 0xffff00000000ffffull;
            while (pos + NPU_TASK_TAIL_QWORDS < mn && (mq[pos] & 0xffff00000000ffffull) != key)
                pos++;
            if (pos + NPU_TASK_TAIL_QWORDS >= mn) {
                fprintf(stderr,
                        "%s task %u: golden register %04x:%04x (qword %u) is not in our "
                        "order\n",
                        file, t, npu_regcmd_target(gq[i]), npu_regcmd_offset(gq[i]), i);
                bad++;
                break;
            }
            pos++;
        }
        /* L3: every golden address register points at the same tensor and offset */
        for (uint32_t i = 0; i + NPU_TASK_TAIL_QWORDS < gn; i++) {
            if (!(gt->q[i].flags & NPU_GQ_RELOC) || gt->q[i].buffer < 0)
                continue;
            const char *grole = gf->buffers[gt->q[i].buffer].name;
            if (strcmp(grole, "input") && strcmp(grole, "output") && strcmp(grole, "weight"))
                continue;
            uint64_t key = gq[i] & 0xffff00000000ffffull;
            const struct npu_prog_reloc *r = NULL;
            for (uint32_t k = 0; k + NPU_TASK_TAIL_QWORDS < mn && !r; k++)
                if ((mq[k] & 0xffff00000000ffffull) == key)
                    r = reloc_at(j, j->tasks[t].start + k);
            uint32_t rel = 0;
            const char *role = r ? reloc_role(p, r, &rel) : "none";
            if (strcmp(role, grole) || rel != gt->q[i].buf_offset) {
                fprintf(stderr, "%s task %u: %04x:%04x -> %s+0x%x, golden %s+0x%x\n", file, t,
                        npu_regcmd_target(gq[i]), npu_regcmd_offset(gq[i]), role, rel, grole,
                        gt->q[i].buf_offset);
                bad++;
            }
        }
        /* L2 on effective state */
        eff_apply(&eg, gq, gn - NPU_TASK_TAIL_QWORDS, (uint32_t)gt->enable, fg, sg);
        eff_apply(&em, mq, mn - NPU_TASK_TAIL_QWORDS, j->tasks[t].enable_mask, fm, sm);
        for (uint32_t r = 0; r < NREG / 4; r++) {
            uint16_t off = (uint16_t)(r * 4);
            if (!sg[r] && !sm[r])
                continue;
            if (is_addr_reg(off))
                continue;
            uint32_t a = fg[r], b = fm[r];
            if (off == REG_CNA_CONV_CON2) { /* FEATURE_GRAINS aside (NOTES S11) */
                a &= ~CNA_CONV_CON2_FEATURE_GRAINS__MASK;
                b &= ~CNA_CONV_CON2_FEATURE_GRAINS__MASK;
            }
            if ((off == REG_DPU_DST_SURF_STRIDE || off == REG_DPU_SURFACE_ADD) && a != b &&
                surf_pad) {
                /* RKNN pads the output surface to a multiple of 4 atoms (64
                 * bytes) when W x H > 1 (partial table: 9 -> 12, 25 -> 28,
                 * 49 -> 52, 289 -> 292 ...). Ours stays W x H so that the
                 * next conv reads it with the verified stride pattern LINE +
                 * SURF = W x H (facts §2.10). Check RKNN's value is that
                 * rounding of ours. */
                uint32_t unit = off == REG_DPU_DST_SURF_STRIDE ? 1 : surf_pad;
                uint32_t ours = b >> 4, theirs = a >> 4;
                if (ours % unit == 0 && theirs == (ours / unit + 3) / 4 * 4 * unit) {
                    (*padded)++;
                    continue;
                }
            }
            if (sg[r] != sm[r] || a != b) {
                const struct npu_reg_info *ri = npu_reg_lookup(off);
                fprintf(stderr, "%s task %u: %s = 0x%08x%s, golden 0x%08x%s\n", file, t,
                        ri ? ri->full_name : "?", b, sm[r] ? "" : " (unset)", a,
                        sg[r] ? "" : " (unset)");
                bad++;
            }
        }
        (*tasks_cmp)++;
    }
    return bad;
}

static bool
conv_shape(const char *file, struct conv_case *c)
{
    int k;
    if (sscanf(file, "ab-conv%dx%*d-fp16-c%dh%dw%d-oc%d", &k, &c->C, &c->H, &c->W, &c->K) == 5) {
        c->kh = c->kw = k;
        return true;
    }
    if (sscanf(file, "ab-conv%dx%*d-fp16-argb%d-h%dw%d-oc%d", &k, &c->C, &c->H, &c->W, &c->K) ==
        5) {
        c->kh = c->kw = k;
        return true;
    }
    return false;
}

static void
check_conv(const char *file)
{
    struct conv_case c;
    if (!conv_shape(file, &c)) {
        CHECK(!"conv file name");
        return;
    }
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", gdir, file);
    struct npu_golden gf;
    CHECK_EQ_INT(NPU_OK, npu_golden_load(path, &gf));
    struct tu_conv tc = {
        .C = c.C, .H = c.H, .W = c.W, .K = c.K, .kh = c.kh, .kw = c.kw, .range = 4, .seed = 1};
    struct npu_graph *g = tu_conv_graph(&tc);
    /* RKNN's program reads and writes fp16 tensors: keep the result fp16 */
    g->inputs[0]->t.dtype = NPU_DTYPE_FP16;
    npu_graph_for_each_node (g, n)
        npu_infer_node(g, n);
    struct npu_backend_options o = {.rknn_tiling = 1};
    struct npu_program *p = compile(g, &o);
    CHECK(p != NULL);
    int tasks = 0, padded = 0;
    char notes[256] = "";
    /* SURFACE_ADD = surface x (SIZE_E + 1) = 2 surfaces for fp16 output */
    int bad = p ? compare_chain0(file, &gf, p, &tasks, notes, sizeof(notes), 2, &padded) : 1;
    if (notes[0])
        fprintf(stderr, "%s: %s\n", file, notes);
    CHECK_EQ_INT(0, bad);
    if (verbose)
        printf("%-45s chain 0: %d task(s), L0-L3 effective state and L4 tiling match "
               "(FEATURE_GRAINS aside%s)\n",
               file, tasks, padded ? "; RKNN's output surface padded to 4 atoms" : "");
    npu_program_free(p);
    npu_golden_free(&gf);
}

int
main(int argc, char **argv)
{
    gdir = argc > 1 ? argv[1] : "tests/golden/vectors";
    verbose = argc > 2 && !strcmp(argv[2], "-v");
    DIR *d = opendir(gdir);
    CHECK(d != NULL);
    if (!d)
        return npu_test_done("npu-golden");
    char *names[256];
    int nn = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nn < 256)
        if (strstr(e->d_name, ".regcmd"))
            names[nn++] = strdup(e->d_name);
    closedir(d);
    for (int i = 0; i < nn; i++)
        for (int k = i + 1; k < nn; k++)
            if (strcmp(names[i], names[k]) > 0) {
                char *t = names[i];
                names[i] = names[k];
                names[k] = t;
            }
    int mtx = 0, conv = 0;
    for (int i = 0; i < nn; i++) {
        if (!strncmp(names[i], "mtx-matmul-", 11)) {
            /* the largest shapes are covered by the same formulas; keep CI short
             * under the sanitizers: all run, they only compile */
            check_mtx(names[i]);
            mtx++;
        } else if (!strncmp(names[i], "ab-conv", 7)) {
            check_conv(names[i]);
            conv++;
        }
        free(names[i]);
    }
    CHECK_EQ_INT(16, mtx);
    CHECK_EQ_INT(8, conv);
    return npu_test_done("npu-golden");
}
