/* SPDX-License-Identifier: MIT */
/*
 * test-golden-parse.c: the golden-regcmd v1 parser and writer. A small hand-written sample is
 * parsed and checked field by field; malformed inputs must fail with the right line number;
 * and every file in the golden folder (argv[1]) must parse and write back byte for byte.
 */
#include <dirent.h>

#include "npu-hw.h"
#include "npu-test.h"

static const char sample[] =
    "# format: golden-regcmd v1\n"
    "# case: sample\n"
    "# buffer: input 0x00100000 0x100 the input\n"
    "# buffer: weight 0x00800000 0x400\n"
    "task 0 amount=2 enable=0x0d int_mask=0x300(assumed) addr=0x00010000 plan=2core next=none\n"
    "1001 4004 0000000e\n"
    "0201 1070 00100040 @input+0x40\n"
    "0101 0010 00010080\n"
    "0101 0014 00010005\n"
    "0041 0000 00000000\n"
    "0081 0008 0000000d\n"
    "task 1 amount=1 enable=0x0d addr=0x00010080 dup_of=0\n"
    "task 2 amount=1 enable=0x18 int_mask=0x300\n"
    "0201 1184 00000000 *?\n"
    "0000 0000 00000000 *\n"
    "0101 0014 00000000\n"
    "0041 0000 00000000\n"
    "0081 0008 00000018\n";

static void
test_sample(void)
{
    struct npu_golden g;
    size_t len;
    char *back;

    CHECK_EQ_INT(NPU_OK, npu_golden_parse(sample, strlen(sample), "sample", &g));
    CHECK_EQ_INT(4, g.n_header);
    CHECK_STR("sample", npu_golden_header(&g, "case"));
    CHECK_EQ_INT(2, g.n_buffers);
    CHECK_STR("input", g.buffers[0].name);
    CHECK_EQ_HEX(0x100000, g.buffers[0].start);
    CHECK_EQ_HEX(0x100, g.buffers[0].size);
    CHECK_STR("the input", g.buffers[0].note);
    CHECK_STR("", g.buffers[1].note);
    CHECK_EQ_INT(3, g.n_tasks);
    CHECK_EQ_INT(2, g.tasks[0].amount);
    CHECK_EQ_HEX(0x0d, g.tasks[0].enable);
    CHECK_EQ_HEX(0x300, g.tasks[0].int_mask);
    CHECK_EQ_HEX(0x10000, g.tasks[0].addr);
    CHECK_EQ_INT(-1, g.tasks[0].next);
    CHECK_STR("2core", npu_golden_task_get(&g.tasks[0], "plan"));
    CHECK_EQ_INT(6, g.tasks[0].n_q);
    CHECK_EQ_HEX(0x0201001000401070ull, g.tasks[0].q[1].q);
    CHECK_EQ_INT(NPU_GQ_RELOC, g.tasks[0].q[1].flags);
    CHECK_EQ_INT(0, g.tasks[0].q[1].buffer);
    CHECK_EQ_HEX(0x40, g.tasks[0].q[1].buf_offset);
    CHECK_EQ_INT(0, g.tasks[1].n_q);
    CHECK_EQ_INT(0, g.tasks[1].dup_of);
    CHECK_EQ_INT(NPU_GQ_INSERTED | NPU_GQ_AMBIGUOUS, g.tasks[2].q[0].flags);
    CHECK_EQ_INT(NPU_GQ_INSERTED, g.tasks[2].q[1].flags);
    CHECK_EQ_INT(1, g.n_relocs);
    CHECK_EQ_INT(0, g.relocs[0].task);
    CHECK_EQ_INT(1, g.relocs[0].qword);
    back = npu_golden_to_string(&g, &len);
    CHECK(back && len == strlen(sample) && !memcmp(back, sample, len));
    free(back);
    npu_golden_free(&g);
}

static void
test_build(void)
{
    /* Building by hand writes the same text as the parser reads. */
    struct npu_golden g;
    struct npu_golden_task *t;
    struct npu_golden g2;
    char *txt;
    size_t len;

    memset(&g, 0, sizeof(g));
    CHECK_EQ_INT(NPU_OK, npu_golden_add_header(&g, "format", "golden-regcmd v1"));
    CHECK_EQ_INT(NPU_OK, npu_golden_add_buffer(&g, "out", 0x4000, 0x100, "output"));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_golden_add_buffer(&g, "bad name", 0, 1, NULL));
    t = npu_golden_add_task(&g, 0);
    CHECK(t != NULL);
    npu_golden_task_set(t, "amount", "1");
    npu_golden_task_set(t, "enable", "0x08");
    npu_golden_task_add_qword(t, npu_regcmd_reg(REG_DPU_DST_BASE_ADDR, 0x4010), NPU_GQ_RELOC, 0,
                              0x10);
    npu_golden_task_add_qword(t, 0, 0, -1, 0);
    npu_golden_task_add_qword(t, npu_regcmd_reg(REG_PC_REGISTER_AMOUNTS, 0), 0, -1, 0);
    npu_golden_task_add_qword(t, NPU_MARKER_QWORD, 0, -1, 0);
    npu_golden_task_add_qword(t, npu_regcmd_op_en(8), 0, -1, 0);
    CHECK_EQ_INT(NPU_OK, npu_golden_index(&g));
    CHECK_EQ_INT(1, g.tasks[0].amount);
    txt = npu_golden_to_string(&g, &len);
    CHECK(txt != NULL);
    if (txt) {
        CHECK(strstr(txt, "# buffer: out 0x00004000 0x100 output\n") != NULL);
        CHECK(strstr(txt, "task 0 amount=1 enable=0x08\n1001 4020 00004010 @out+0x10\n") != NULL);
        CHECK_EQ_INT(NPU_OK, npu_golden_parse(txt, len, "built", &g2));
        CHECK_EQ_INT(1, g2.n_relocs);
        npu_golden_free(&g2);
    }
    free(txt);
    npu_golden_free(&g);
}

static void
expect_error(const char *text, int line, const char *what)
{
    struct npu_golden g;
    char want[64];

    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_golden_parse(text, strlen(text), "bad", &g));
    snprintf(want, sizeof(want), "bad:%d: ", line);
    if (strncmp(g.errmsg, want, strlen(want)) || !strstr(g.errmsg, what)) {
        fprintf(stderr, "expected '%s...%s', got '%s'\n", want, what, g.errmsg);
        CHECK(!"error names the line and the problem");
    }
    CHECK(g.n_tasks == 0 && g.tasks == NULL);
}

static void
test_malformed(void)
{
    const char *h = "# format: golden-regcmd v1\n";
    char buf[512];

    expect_error("# format: golden-regcmd v2\n", 1, "first line");
    expect_error("task 0 amount=0\n", 1, "first line");
    snprintf(buf, sizeof(buf), "%s1001 4004 0000000e\n", h);
    expect_error(buf, 2, "before the first task");
    snprintf(buf, sizeof(buf), "%stask 0\n1001 40g4 0000000e\n", h);
    expect_error(buf, 3, "qword line");
    snprintf(buf, sizeof(buf), "%stask 0\n1001 4004 00000000e\n", h);
    expect_error(buf, 3, "qword line");
    snprintf(buf, sizeof(buf), "%stask 0\n1001 4004 0000000e @nobuf+0x0\n", h);
    expect_error(buf, 3, "not declared");
    snprintf(buf, sizeof(buf), "%stask 0\n1001 4004 0000000e ?\n", h);
    expect_error(buf, 3, "unknown qword flag");
    snprintf(buf, sizeof(buf), "%stask 0\n1001 4004 0000000e * x\n", h);
    expect_error(buf, 3, "more than 4 fields");
    snprintf(buf, sizeof(buf), "%s# buffer: a 0x10 0x10\ntask 0\n1001 4004 00000010 @a+16\n", h);
    expect_error(buf, 4, "@name+0xOFFSET");
    snprintf(buf, sizeof(buf), "%stask x amount=1\n", h);
    expect_error(buf, 2, "bad task index");
    snprintf(buf, sizeof(buf), "%stask 0 amount\n", h);
    expect_error(buf, 2, "key=value");
    snprintf(buf, sizeof(buf), "%stask 0 amount=zz\n", h);
    expect_error(buf, 2, "not a number");
    snprintf(buf, sizeof(buf), "%stask 0 amount=1\n1001 4004 0000000e\ntask 1\n", h);
    expect_error(buf, 2, "needs 5 qwords");
    snprintf(buf, sizeof(buf), "%stask 0 amount=0\n0000 0000 00000000\n", h);
    expect_error(buf, 2, "needs 4 qwords");
    snprintf(buf, sizeof(buf), "%stask 1 dup_of=0\n1001 4004 0000000e\n", h);
    expect_error(buf, 3, "dup_of");
    snprintf(buf, sizeof(buf), "%s# buffer: a 0x10\n", h);
    expect_error(buf, 2, "buffer line");
    snprintf(buf, sizeof(buf), "%s# buffer: a 0xffffff00 0x200\n", h);
    expect_error(buf, 2, "crosses 4 GiB");
    snprintf(buf, sizeof(buf), "%s# buffer: a 0x10 0x10\n# buffer: a 0x20 0x10\n", h);
    expect_error(buf, 3, "declared twice");
    expect_error("", 0, "empty");
    /* A NUL in the middle of a line. */
    char nul[] = "# format: golden-regcmd v1\ntask 0\n1001\0004004 0000000e\n";
    struct npu_golden g;
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_golden_parse(nul, sizeof(nul) - 1, "bad", &g));
    CHECK(strstr(g.errmsg, "bad:3:") != NULL);
    /* Missing file. */
    CHECK_EQ_INT(NPU_ERR_IO, npu_golden_load("/nonexistent/x.regcmd", &g));
    CHECK(strstr(g.errmsg, "/nonexistent/x.regcmd") != NULL);
}

static void
test_vectors(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    unsigned files = 0;

    CHECK(d != NULL);
    if (!d)
        return;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name), len, flen;
        char path[4096];
        struct npu_golden g;
        FILE *f;
        char *orig, *back;

        if (l < 8 || strcmp(e->d_name + l - 7, ".regcmd"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (npu_golden_load(path, &g) != NPU_OK) {
            fprintf(stderr, "%s\n", g.errmsg);
            CHECK(!"vector parses");
            continue;
        }
        files++;
        f = fopen(path, "rb");
        fseek(f, 0, SEEK_END);
        flen = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        orig = malloc(flen);
        CHECK(fread(orig, 1, flen, f) == flen);
        fclose(f);
        back = npu_golden_to_string(&g, &len);
        if (!back || len != flen || memcmp(back, orig, flen)) {
            fprintf(stderr, "%s: written text differs from the file\n", e->d_name);
            CHECK(!"round trip is byte exact");
        }
        /* Every relocation names a declared buffer and lands inside it. */
        for (uint32_t r = 0; r < g.n_relocs; r++) {
            const struct npu_golden_reloc *rl = &g.relocs[r];
            const struct npu_golden_buffer *b = &g.buffers[rl->buffer];
            uint32_t v = (uint32_t)(g.tasks[rl->task].q[rl->qword].q >> 16);
            CHECK(rl->offset <= b->size);
            /* ONPU's templates zero their addresses; elsewhere value = start + offset. */
            CHECK(v == 0 || v == b->start + rl->offset);
        }
        free(orig);
        free(back);
        npu_golden_free(&g);
    }
    closedir(d);
    printf("golden files round-tripped: %u\n", files);
    CHECK(files >= 40);
}

int
main(int argc, char **argv)
{
    test_sample();
    test_build();
    test_malformed();
    if (argc > 1)
        test_vectors(argv[1]);
    return npu_test_done("test-golden-parse");
}
