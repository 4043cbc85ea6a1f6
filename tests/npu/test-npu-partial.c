/* SPDX-License-Identifier: MIT */
/*
 * test-npu-partial.c: route (a) against ab-rknn-conv-partial.tsv, the partial
 * vendor table (83 conv shapes incl. depthwise and 5x5; 23 registers per
 * task; NOTES §2 "L0 (task counts, amounts, masks), L4, and L2 for the 23
 * listed registers").
 *
 * For each shape the geometry is recovered from the first task (slug: input
 * channels and size; WEIGHT_SIZE2: kernel; CONV_CON1: depthwise;
 * DATA_CUBE_CHANNEL: output channels; the output width gives stride and
 * padding, taken symmetric), the conv is compiled with RKNN's single-core
 * tiling rule (rknn_tiling) and compared with chain 0 (the single-core plan:
 * the leading tasks before the first 104-qword multi-core task):
 *   L0  task count and enables; amounts of the full tasks (ours are all full:
 *       108 qwords; RKNN's later tasks are 12..19-qword deltas, NOTES S2);
 *   L4  per task: input rows, output rows, kernels, CBUF split and reuse;
 *   L2  the 23 registers as effective state (two register groups, errata S1),
 *       addresses aside, FEATURE_GRAINS aside (NOTES S11), DST_SURF_STRIDE /
 *       SURFACE_ADD compared through RKNN's rounding of the surface to 4 atoms
 *       (see test-npu-golden.c).
 * Shapes whose plan differs are counted with the first difference printed;
 * the test requires every shape RKNN runs as one task to match entirely and
 * prints the agreement figures for the tiled ones.
 *
 * usage: test-npu-partial <golden dir> [-v]
 */
#include <ctype.h>

#include "npu-test-util.h"

#define MAXROW 1024
#define NCOL 29

struct row {
    char slug[64];
    int count;
    char amounts[512];
    int index, amount;
    uint32_t v[NCOL];
    bool set[NCOL];
};

/* register of column c (from the header), 0 for non-register columns */
static uint16_t col_reg[NCOL];
static uint16_t col_tgt[NCOL];

static int
load(const char *path, struct row *rows)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[8192];
    int n = 0;
    bool hdr = false;
    while (fgets(line, sizeof(line), f) && n < MAXROW) {
        if (line[0] == '#')
            continue;
        char *save = NULL, *tok;
        int c = 0;
        if (!hdr) {
            for (tok = strtok_r(line, "\t\n", &save); tok && c < NCOL;
                 tok = strtok_r(NULL, "\t\n", &save), c++) {
                unsigned t, o;
                char *p = strchr(tok, '(');
                if (p && sscanf(p, "(%x:%x)", &t, &o) == 2) {
                    col_tgt[c] = (uint16_t)t;
                    col_reg[c] = (uint16_t)o;
                }
            }
            hdr = true;
            continue;
        }
        struct row *r = &rows[n];
        memset(r, 0, sizeof(*r));
        for (tok = strtok_r(line, "\t\n", &save); tok && c < NCOL;
             tok = strtok_r(NULL, "\t\n", &save), c++) {
            switch (c) {
            case 0: snprintf(r->slug, sizeof(r->slug), "%s", tok); break;
            case 1: r->count = atoi(tok); break;
            case 2: snprintf(r->amounts, sizeof(r->amounts), "%s", tok); break;
            case 3: break;
            case 4: r->index = atoi(tok); break;
            case 5: r->amount = atoi(tok); break;
            default:
                if (strcmp(tok, "-")) {
                    r->v[c] = (uint32_t)strtoul(tok, NULL, 16);
                    r->set[c] = true;
                }
            }
        }
        n++;
    }
    fclose(f);
    return n;
}

static int
col_of(uint16_t reg)
{
    for (int c = 0; c < NCOL; c++)
        if (col_reg[c] == reg)
            return c;
    return -1;
}

static uint32_t
colv(const struct row *r, uint16_t reg)
{
    int c = col_of(reg);
    return c >= 0 ? r->v[c] : 0;
}

struct stats {
    int shapes, single, single_ok, tiled, tiled_ok, regs_cmp, regs_ok;
};

/* Value of register reg in task t of a job (last write). */
static bool
job_reg(const struct npu_prog_job *j, uint32_t t, uint16_t reg, uint32_t *v)
{
    bool found = false;
    const uint64_t *q = j->regcmd + j->tasks[t].start;
    for (uint32_t i = 0; i < j->tasks[t].n_body; i++)
        if (npu_regcmd_offset(q[i]) == reg && npu_regcmd_target(q[i])) {
            *v = npu_regcmd_value(q[i]);
            found = true;
        }
    return found;
}

static void
one_shape(const struct row *rows, int first, int n_rows, struct stats *st, int verbose)
{
    const struct row *r0 = &rows[first];
    int C = 0, H = 0, K;
    const char *sp = r0->slug;
    while (*sp && !(sp[0] == 'c' && isdigit((unsigned char)sp[1])))
        sp++;
    if (sscanf(sp, "c%d_h%d", &C, &H) != 2) {
        fprintf(stderr, "%s: cannot read the slug\n", r0->slug);
        CHECK(0);
        return;
    }
    int W = H;
    /* chain 0: leading tasks before the first multi-core (104-qword) task */
    int chain = 0;
    bool any104 = strstr(r0->amounts, "104") != NULL;
    for (int i = 0; i < n_rows; i++) {
        if (rows[first + i].amount == 104 || rows[first + i].amount == 26)
            break;
        chain++;
    }
    if (!any104)
        chain = 1; /* three single-task plans */
    uint32_t ws2 = colv(r0, REG_CNA_WEIGHT_SIZE2), con1 = colv(r0, REG_CNA_CONV_CON1);
    int kw = (int)CNA_WEIGHT_SIZE2_WEIGHT_WIDTH__GET(ws2);
    int kh = (int)CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT__GET(ws2);
    bool dw = CNA_CONV_CON1_CONV_MODE__GET(con1) == NPU_CONV_MODE_DEPTHWISE;
    K = (int)DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL__GET(colv(r0, REG_DPU_DATA_CUBE_CHANNEL)) + 1;
    uint32_t os0 = colv(r0, REG_CORE_DATAOUT_SIZE_0);
    int ow = (int)CORE_DATAOUT_SIZE_0_DATAOUT_WIDTH__GET(os0) + 1;
    /* output height: sum of chain 0 tile heights; a short task inherits a
     * register it does not write from two tasks back (errata S1) */
    int oh = 0, co = col_of(REG_CORE_DATAOUT_SIZE_0);
    uint32_t eo[2] = {0, 0};
    for (int i = 0; i < chain; i++) {
        const struct row *r = &rows[first + i];
        if (r->set[co])
            eo[i & 1] = r->v[co];
        oh += (int)CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT__GET(eo[i & 1]) + 1;
    }
    if (dw) {
        /* depthwise tasks cover channel tiles (RKNN: 32-channel blocks or as many
         * as fit): the tiles' rows repeat per channel tile */
        uint32_t per =
            CNA_WEIGHT_SIZE1_WEIGHT_BYTES_PER_KERNEL__GET(colv(r0, REG_CNA_WEIGHT_SIZE1));
        int nc = (int)(per / (uint32_t)(kh * kw * 2));
        int ct = nc > 0 ? (C + nc - 1) / nc : 1;
        oh /= ct;
    }
    /* stride and symmetric padding from the width */
    int sx = 0, ptot = 0;
    for (int s = 1; s <= 2 && !sx; s++)
        for (int pt = 0; pt < kw && !sx; pt++)
            if ((W + pt - kw) >= 0 && (W + pt - kw) / s + 1 == ow)
                sx = s, ptot = pt;
    if (!sx) {
        fprintf(stderr, "%s: no stride/padding gives width %d from %d\n", r0->slug, ow, W);
        CHECK(0);
        return;
    }
    int pl = ptot / 2, pr = ptot - pl;
    /* vertical: same stride; padding so that the height comes out */
    int pv = -1;
    for (int pt = 0; pt < kh && pv < 0; pt++)
        if ((H + pt - kh) >= 0 && (H + pt - kh) / sx + 1 == oh)
            pv = pt;
    if (pv < 0) {
        fprintf(stderr, "%s: no padding gives height %d\n", r0->slug, oh);
        CHECK(0);
        return;
    }
    int ptop = pv / 2, pbot = pv - ptop;
    struct tu_conv tc = {.C = C,
                         .H = H,
                         .W = W,
                         .K = dw ? C : K,
                         .kh = kh,
                         .kw = kw,
                         .sy = sx,
                         .sx = sx,
                         .pt = ptop,
                         .pl = pl,
                         .pb = pbot,
                         .pr = pr,
                         .group = dw ? C : 1,
                         .range = 4,
                         .seed = 1};
    struct npu_graph *g = tu_conv_graph(&tc);
    g->inputs[0]->t.dtype = NPU_DTYPE_FP16;
    npu_graph_for_each_node (g, n)
        npu_infer_node(g, n);
    struct npu_backend_options o = {.rknn_tiling = 1};
    struct npu_program *p = NULL;
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(g, &o));
    CHECK_EQ_INT(NPU_OK, npu_codegen(g, &o, &p));
    npu_graph_free(g);
    if (!p || p->n_jobs != 1) {
        CHECK(0);
        npu_program_free(p);
        return;
    }
    const struct npu_prog_job *j = &p->jobs[0];
    char why[256] = "";
    bool ok = true;
    st->shapes++;
    if ((int)j->n_tasks != chain) {
        snprintf(why, sizeof(why), "%u tasks, RKNN's chain 0 has %d", j->n_tasks, chain);
        ok = false;
    }
    /* effective state of the listed registers, RKNN side */
    uint32_t grp[2][NCOL];
    bool gset[2][NCOL];
    memset(gset, 0, sizeof(gset));
    for (int t = 0; ok && t < chain; t++) {
        const struct row *r = &rows[first + t];
        for (int c = 6; c < NCOL; c++)
            if (r->set[c]) {
                grp[t & 1][c] = r->v[c];
                gset[t & 1][c] = true;
            }
        if (t < 2 && r->amount != (int)j->tasks[t].n_body) {
            snprintf(why, sizeof(why), "task %d amount %u, RKNN %d", t, j->tasks[t].n_body,
                     r->amount);
            ok = false;
        }
        if (j->tasks[t].enable_mask != 0x0d) {
            snprintf(why, sizeof(why), "task %d enable 0x%x", t, j->tasks[t].enable_mask);
            ok = false;
        }
        for (int c = 6; ok && c < NCOL; c++) {
            uint16_t reg = col_reg[c];
            if (!reg || !gset[t & 1][c])
                continue;
            const struct npu_reg_info *ri = npu_reg_lookup(reg);
            if (ri && (ri->flags & NPU_REG_ADDR))
                continue;
            uint32_t mine;
            if (!job_reg(j, (uint32_t)t, reg, &mine)) {
                snprintf(why, sizeof(why), "task %d: we do not write %s", t, ri->full_name);
                ok = false;
                break;
            }
            uint32_t theirs = grp[t & 1][c];
            if (reg == REG_CNA_CONV_CON2) {
                mine &= ~CNA_CONV_CON2_FEATURE_GRAINS__MASK;
                theirs &= ~CNA_CONV_CON2_FEATURE_GRAINS__MASK;
            }
            if ((reg == REG_DPU_DST_SURF_STRIDE || reg == REG_DPU_SURFACE_ADD) && mine != theirs) {
                uint32_t unit = reg == REG_DPU_SURFACE_ADD
                                    ? DPU_BS_OW_CFG_SIZE_E_0__GET(dw ? 0x36e : 0x126) + 1
                                    : 1;
                uint32_t a = mine >> 4, b = theirs >> 4;
                if (dw && reg == REG_DPU_SURFACE_ADD)
                    unit = 4;
                if (a % unit == 0 && b == (a / unit + 3) / 4 * 4 * unit)
                    continue;
            }
            st->regs_cmp++;
            if (mine == theirs) {
                st->regs_ok++;
            } else {
                snprintf(why, sizeof(why), "task %d: %s = 0x%08x, RKNN 0x%08x", t,
                         ri ? ri->full_name : "?", mine, theirs);
                ok = false;
            }
        }
    }
    bool single = chain == 1;
    if (single) {
        st->single++;
        st->single_ok += ok;
    } else {
        st->tiled++;
        st->tiled_ok += ok;
    }
    if (single && !ok)
        fprintf(stderr, "%s (%dx%d/%d, %s): %s\n", r0->slug, kh, kw, sx, dw ? "dw" : "conv", why);
    if (verbose)
        printf("%-28s %dx%d/%d %-4s %2d task(s): %s%s\n", r0->slug, kh, kw, sx, dw ? "dw" : "",
               chain, ok ? "L0 L2 L4 match" : "differs: ", ok ? "" : why);
    if (single)
        CHECK(ok);
    npu_program_free(p);
}

int
main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/golden/vectors";
    int verbose = argc > 2 && !strcmp(argv[2], "-v");
    char path[1024];
    snprintf(path, sizeof(path), "%s/ab-rknn-conv-partial.tsv", dir);
    static struct row rows[MAXROW];
    int n = load(path, rows);
    CHECK(n > 700);
    struct stats st = {0};
    for (int i = 0; i < n;) {
        int k = i;
        while (k < n && !strcmp(rows[k].slug, rows[i].slug))
            k++;
        one_shape(rows, i, k - i, &st, verbose);
        i = k;
    }
    printf("partial table: %d shapes; single-task plans %d/%d match; tiled plans %d/%d match "
           "entirely; %d/%d compared register values equal\n",
           st.shapes, st.single_ok, st.single, st.tiled_ok, st.tiled, st.regs_ok, st.regs_cmp);
    CHECK_EQ_INT(83, st.shapes);
    return npu_test_done("npu-partial");
}
