/* SPDX-License-Identifier: MIT */
/*
 * test-npu-routes.c: the three codegen routes give identical bytes.
 *   (a) direct: lower + codegen of the graph;
 *   (b) through the IR text: the lowered graph saved with npu_ir_save (text +
 *       sidecar), loaded again and compiled: same jobs, relocations, weights
 *       and memory sizes;
 *   (c) template replay: route (a)'s job written as golden-regcmd v1 text with
 *       its relocations, read back, relocated at fixed buffer addresses: same
 *       bytes as route (a)'s relocated the same way; and the replayed job
 *       runs on the simulator (strict) with the same result.
 * Cases: a tiled matmul (channel-block accumulation: bias, partials, EW add)
 * and a padded, strided 3x3 conv with bias and clip split in row tiles.
 */
#include <unistd.h>

#include "npu-test-util.h"

static bool
same_job(const struct npu_prog_job *a, const struct npu_prog_job *b)
{
    if (a->n_qwords != b->n_qwords || a->n_tasks != b->n_tasks || a->n_relocs != b->n_relocs ||
        a->segment_align != b->segment_align)
        return false;
    if (memcmp(a->regcmd, b->regcmd, (size_t)a->n_qwords * 8))
        return false;
    for (uint32_t i = 0; i < a->n_tasks; i++)
        if (a->tasks[i].start != b->tasks[i].start || a->tasks[i].n_body != b->tasks[i].n_body ||
            a->tasks[i].enable_mask != b->tasks[i].enable_mask ||
            a->tasks[i].int_mask != b->tasks[i].int_mask)
            return false;
    /* relocations as a set (route c lists them in qword order) */
    for (uint32_t i = 0; i < a->n_relocs; i++) {
        bool found = false;
        for (uint32_t k = 0; k < b->n_relocs && !found; k++)
            found = a->relocs[i].qword == b->relocs[k].qword &&
                    a->relocs[i].buffer == b->relocs[k].buffer &&
                    a->relocs[i].offset == b->relocs[k].offset;
        if (!found)
            return false;
    }
    return true;
}

/* Relocates a job at fixed addresses into a fresh buffer. */
static uint64_t *
relocated(const struct npu_prog_job *j)
{
    struct npu_regcmd_image img;
    memset(&img, 0, sizeof(img));
    img.qwords = malloc((size_t)j->n_qwords * 8);
    memcpy(img.qwords, j->regcmd, (size_t)j->n_qwords * 8);
    img.n_qwords = j->n_qwords;
    img.iova = 0x00400000;
    img.align = j->segment_align;
    img.tasks = calloc(j->n_tasks, sizeof(*img.tasks));
    img.relocs = calloc(j->n_relocs + 1, sizeof(*img.relocs));
    for (uint32_t i = 0; i < j->n_tasks; i++) {
        img.tasks[i].start = j->tasks[i].start;
        img.tasks[i].n_body = j->tasks[i].n_body;
        img.tasks[i].enable_mask = j->tasks[i].enable_mask;
        img.tasks[i].int_mask = j->tasks[i].int_mask;
    }
    for (uint32_t i = 0; i < j->n_relocs; i++)
        img.relocs[i] =
            (struct npu_reloc){j->relocs[i].qword, j->relocs[i].buffer, j->relocs[i].offset};
    img.n_tasks = j->n_tasks;
    img.n_relocs = img.cap_relocs = j->n_relocs;
    uint32_t iova[NPU_BUF_COUNT] = {0x10000000, 0x20000000};
    CHECK_EQ_INT(NPU_OK, npu_image_relocate(&img, iova, NPU_BUF_COUNT));
    free(img.tasks);
    free(img.relocs);
    return img.qwords;
}

static void
routes(struct npu_graph *(*make)(const void *), const void *arg, const char *label)
{
    struct npu_backend_options o = {0};
    /* (a) */
    struct npu_graph *ga = make(arg);
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(ga, &o));
    struct npu_program *pa = NULL;
    CHECK_EQ_INT(NPU_OK, npu_codegen(ga, &o, &pa));
    /* (b): the lowered graph through its text form */
    char path[] = "/tmp/npu-routes-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_EQ_INT(NPU_OK, npu_ir_save(ga, path));
    struct npu_graph *gb = NULL;
    CHECK_EQ_INT(NPU_OK, npu_ir_load(path, &gb));
    char side[64];
    snprintf(side, sizeof(side), "%s.bin", path);
    unlink(path);
    unlink(side);
    struct npu_program *pb = NULL;
    if (gb)
        CHECK_EQ_INT(NPU_OK, npu_codegen(gb, &o, &pb));
    CHECK(pa && pb);
    if (!pa || !pb)
        goto out;
    CHECK_EQ_INT(pa->n_jobs, pb->n_jobs);
    CHECK_EQ_INT(pa->n_steps, pb->n_steps);
    CHECK_EQ_INT(pa->act_bytes, pb->act_bytes);
    CHECK_EQ_INT(pa->weights_bytes, pb->weights_bytes);
    CHECK(pa->weights_bytes == pb->weights_bytes &&
          !memcmp(pa->weights, pb->weights, pa->weights_bytes));
    for (int j = 0; j < pa->n_jobs && j < pb->n_jobs; j++)
        CHECK(same_job(&pa->jobs[j], &pb->jobs[j]));

    /* (c): template text of job 0, read back */
    for (int j = 0; j < pa->n_jobs; j++) {
        char *text = NULL;
        size_t len = 0;
        CHECK_EQ_INT(NPU_OK, npu_job_to_golden(&pa->jobs[j], label, &text, &len));
        struct npu_prog_job jc;
        CHECK_EQ_INT(NPU_OK, npu_job_from_golden(text, len, pa, &jc));
        CHECK(same_job(&pa->jobs[j], &jc));
        uint64_t *ra = relocated(&pa->jobs[j]), *rc = relocated(&jc);
        CHECK(!memcmp(ra, rc, (size_t)jc.n_qwords * 8));
        free(ra);
        free(rc);
        free(text);
        /* run the program with the replayed job in place of route (a)'s */
        if (j == 0) {
            struct prun r1, r2;
            struct npu_program *pc = pa;
            const struct npu_prog_job *keep = pa->jobs;
            struct npu_prog_job *swapped =
                npu_program_alloc(pa, sizeof(*swapped) * (size_t)pa->n_jobs);
            memcpy(swapped, pa->jobs, sizeof(*swapped) * (size_t)pa->n_jobs);
            swapped[0] = jc;
            swapped[0].modeled_s = pa->jobs[0].modeled_s;
            const struct npu_prog_tensor *it = &pa->tensors[pa->inputs[0]];
            int64_t n = npu_tensor_numel(&it->t);
            float *x = malloc((size_t)n * 4);
            uint32_t s = 5;
            tu_fill(x, (size_t)n, &s, 16);
            struct npu_tensor in = it->t, o1[2], o2[2];
            in.data = x;
            CHECK_EQ_INT(NPU_OK, prun_open(&r1, pa));
            CHECK_EQ_INT(NPU_OK, prun_run(&r1, &in, o1));
            pc->jobs = swapped;
            CHECK_EQ_INT(NPU_OK, prun_open(&r2, pc));
            CHECK_EQ_INT(NPU_OK, prun_run(&r2, &in, o2));
            CHECK(!memcmp(o1[0].data, o2[0].data, (size_t)npu_tensor_nbytes(&o1[0])));
            pc->jobs = keep;
            prun_close(&r1);
            prun_close(&r2);
            free(x);
        }
    }
    printf("%-44s routes a, b, c: %d job(s), %u task(s), identical bytes\n", label, pa->n_jobs,
           pa->n_jobs ? pa->jobs[0].n_tasks : 0);
out:
    npu_program_free(pa);
    npu_program_free(pb);
    npu_graph_free(ga);
    npu_graph_free(gb);
}

static struct npu_graph *
make_mm(const void *arg)
{
    return tu_matmul_graph(arg);
}

static struct npu_graph *
make_conv(const void *arg)
{
    return tu_conv_graph(arg);
}

int
main(void)
{
    struct tu_mm mm = {.rank = 2,
                       .M = 196,
                       .K = 1536,
                       .N = 40,
                       .bias = true,
                       .act = "relu",
                       .range = 8,
                       .seed = 3};
    routes(make_mm, &mm, "matmul 196x1536x40 (channel blocks)");
    struct tu_mm mm2 = {.rank = 2, .M = 4, .K = 32, .N = 16, .range = 8, .seed = 4};
    routes(make_mm, &mm2, "matmul 4x32x16");
    struct tu_conv cv = {.C = 24,
                         .H = 90,
                         .W = 90,
                         .K = 40,
                         .kh = 3,
                         .kw = 3,
                         .sy = 2,
                         .sx = 2,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .act = "clip",
                         .act_alpha = -1,
                         .act_beta = 2,
                         .range = 8,
                         .seed = 5};
    routes(make_conv, &cv, "conv 3x3/2 pad 1 24x90x90->40 bias clip");
    struct tu_conv cv2 = {.C = 64,
                          .H = 120,
                          .W = 120,
                          .K = 64,
                          .kh = 3,
                          .kw = 3,
                          .pt = 1,
                          .pl = 1,
                          .pb = 1,
                          .pr = 1,
                          .range = 8,
                          .seed = 6};
    routes(make_conv, &cv2, "conv 3x3 64x120x120->64 (row tiles)");
    return npu_test_done("npu-routes");
}
