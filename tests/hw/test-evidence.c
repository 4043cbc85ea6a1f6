/* SPDX-License-Identifier: MIT */
/*
 * test-evidence.c: the evidence ledger and its classification API. The table
 * is sorted and every entry well formed; lookups find the strongest entry
 * (the vendor LUT index shifts of onpu-tanh are O, a shift no source uses is
 * uncovered, with the nearest entry named); a task's weakest level is the
 * minimum over its writes; and every golden stream (argv[1]) classifies at
 * the level of its own source: Rockchip's captures (ab-*) V, the open
 * projects' streams (mtx-*, onpu-*) O (zeros the sparse source did not print
 * are left out, as the ledger leaves them out).
 */
#include <dirent.h>

#include "npu-hw.h"
#include "npu-test.h"
#include "npu/npu-evidence.h"

static void
test_table(void)
{
    unsigned n = 0;
    const struct npu_evidence_entry *e = npu_evidence_ledger(&n);
    CHECK(n > 100);
    for (unsigned i = 0; i < n; i++) {
        CHECK(e[i].id && e[i].source && e[i].purpose && e[i].block && e[i].reg);
        CHECK(e[i].level >= NPU_EVIDENCE_T && e[i].level <= NPU_EVIDENCE_V);
        CHECK(e[i].any == (e[i].n_values == 0));
        for (unsigned k = 1; k < e[i].n_values; k++)
            CHECK(e[i].values[k - 1] < e[i].values[k]);
        if (i)
            CHECK(e[i - 1].offset < e[i].offset ||
                  (e[i - 1].offset == e[i].offset && e[i - 1].level >= e[i].level));
        if (e[i].offset != NPU_OP_EN_OFFSET) {
            const struct npu_reg_info *r = npu_reg_lookup(e[i].offset);
            CHECK(r && !strcmp(r->name, e[i].reg));
        }
    }
    enum npu_evidence_level lv;
    CHECK_EQ_INT(NPU_OK, npu_evidence_level_parse("o", &lv));
    CHECK_EQ_INT(NPU_EVIDENCE_O, lv);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_evidence_level_parse("X", &lv));
    CHECK_STR("V", npu_evidence_level_name(NPU_EVIDENCE_V));
    CHECK_STR("none", npu_evidence_level_name(NPU_EVIDENCE_NONE));
}

static void
test_lookup(void)
{
    /* RKNN's tanh: LUT_INFO 0x50500 (index shift 5), onpu-tanh task 1 (O). */
    const struct npu_evidence_entry *e = npu_evidence_lookup(REG_DPU_LUT_INFO, 0x50500);
    CHECK(e && e->level == NPU_EVIDENCE_O && strstr(e->source, "onpu-tanh"));
    /* A shift nobody writes: uncovered, nearest named. */
    uint32_t odd = DPU_LUT_INFO_LUT_LE_INDEX_SELECT(3) | DPU_LUT_INFO_LUT_LO_INDEX_SELECT(3);
    if (!npu_evidence_lookup(REG_DPU_LUT_INFO, odd)) {
        uint32_t nv = 0;
        const struct npu_evidence_entry *n = npu_evidence_nearest(REG_DPU_LUT_INFO, odd, &nv);
        CHECK(n && !strcmp(n->reg, "LUT_INFO"));
        CHECK(npu_evidence_lookup(REG_DPU_LUT_INFO, nv) != NULL);
    } else {
        CHECK(!"LUT_INFO with shifts 3/3 should be outside the ledger");
    }
    /* Addresses are geometry: any value, at the level of the vendor capture. */
    e = npu_evidence_lookup(REG_CNA_FEATURE_DATA_ADDR, 0x12345670);
    CHECK(e && e->any && e->level == NPU_EVIDENCE_V);
    /* op_en 0x0d (CNA+CORE+DPU) is in every vendor conv capture; 0x1d is Mesa's. */
    e = npu_evidence_lookup(NPU_OP_EN_OFFSET, 0x0d);
    CHECK(e && e->level == NPU_EVIDENCE_V);
    e = npu_evidence_lookup(NPU_OP_EN_OFFSET, 0x1d);
    CHECK(e && e->level == NPU_EVIDENCE_M);
    CHECK(!npu_evidence_lookup(0x4ffc, 0));
    CHECK(!npu_evidence_nearest(0x4ffc, 0, NULL));
}

static void
test_classify(void)
{
    uint64_t q[] = {
        npu_regcmd_pack(NPU_TARGET_DPU, REG_DPU_LUT_INFO, 0x50500),
        npu_regcmd_pack(NPU_TARGET_CNA, REG_CNA_FEATURE_DATA_ADDR, 0x1000),
        0,
        npu_regcmd_pack(NPU_TARGET_PC, REG_PC_REGISTER_AMOUNTS, 0),
        NPU_MARKER_QWORD,
        npu_regcmd_op_en(0x0d),
    };
    struct npu_evidence_write w[8];
    size_t n = 0;
    enum npu_evidence_level lv = NPU_EVIDENCE_NONE;
    CHECK_EQ_INT(NPU_OK, npu_evidence_classify_task(q, NPU_ARRAY_SIZE(q), w, 8, &n, &lv));
    CHECK_EQ_INT(4, n);
    CHECK_EQ_INT(NPU_EVIDENCE_O, lv);
    CHECK_EQ_INT(0, w[0].qword);
    CHECK_EQ_INT(5, w[3].qword);
    CHECK_EQ_HEX(NPU_OP_EN_OFFSET, w[3].offset);
    CHECK(w[3].entry && w[3].entry->level == NPU_EVIDENCE_V);
    /* Mutated: the task drops to none, the write names no entry. */
    q[0] = npu_regcmd_pack(NPU_TARGET_DPU, REG_DPU_LUT_INFO, 0x30303);
    CHECK_EQ_INT(NPU_OK, npu_evidence_classify_task(q, NPU_ARRAY_SIZE(q), w, 2, &n, &lv));
    CHECK_EQ_INT(4, n);
    CHECK_EQ_INT(NPU_EVIDENCE_NONE, lv);
    CHECK(w[0].entry == NULL);
    /* An unknown register is not covered either. */
    q[0] = npu_regcmd_pack(NPU_TARGET_DPU, 0x4ffc, 0);
    CHECK_EQ_INT(NPU_OK, npu_evidence_classify_task(q, NPU_ARRAY_SIZE(q), NULL, 0, NULL, &lv));
    CHECK_EQ_INT(NPU_EVIDENCE_NONE, lv);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_evidence_classify_task(NULL, 3, NULL, 0, NULL, &lv));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_evidence_classify_task(q, 3, NULL, 0, NULL, NULL));
}

static void
test_golden(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d)
        return;
    unsigned files = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 8 || strcmp(de->d_name + l - 7, ".regcmd"))
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct npu_golden g;
        CHECK_EQ_INT(NPU_OK, npu_golden_load(path, &g));
        enum npu_evidence_level want =
            strncmp(de->d_name, "ab-", 3) ? NPU_EVIDENCE_O : NPU_EVIDENCE_V;
        for (uint32_t t = 0; t < g.n_tasks; t++) {
            uint64_t q[2048];
            size_t n = 0;
            for (uint32_t i = 0; i < g.tasks[t].n_q && n < NPU_ARRAY_SIZE(q); i++)
                if (!(g.tasks[t].q[i].flags & (NPU_GQ_INSERTED | NPU_GQ_AMBIGUOUS)))
                    q[n++] = g.tasks[t].q[i].q;
            enum npu_evidence_level lv;
            CHECK_EQ_INT(NPU_OK, npu_evidence_classify_task(q, n, NULL, 0, NULL, &lv));
            if (lv < want) {
                fprintf(stderr, "%s task %u: level %s, want %s\n", de->d_name, g.tasks[t].index,
                        npu_evidence_level_name(lv), npu_evidence_level_name(want));
                CHECK(lv >= want);
            }
        }
        npu_golden_free(&g);
        files++;
    }
    closedir(d);
    CHECK(files >= 40);
}

int
main(int argc, char **argv)
{
    test_table();
    test_lookup();
    test_classify();
    if (argc > 1)
        test_golden(argv[1]);
    return npu_test_done("test-evidence");
}
