/* SPDX-License-Identifier: MIT */
/*
 * test-multicore.c: one matmul split by N over three cores (npu-mc-matmul.h), run as one
 * submit with core mask 7 and the three chains in subcore_task[2..4], on the backend named
 * by argv[1]; and the same matmul on one core. Both must match a double-precision reference.
 * On the simulator the job results carry modeled times, so the split's speed-up is printed
 * (modeled, timing model v2, the default: three cores sharing dma_bytes_per_s_total) and the
 * planner's analytic estimate is checked against the simulator's task-by-task figures.
 */
#include <math.h>

#include "npu-handprog.h"
#include "npu-kdouble.h"
#include "npu-layout.h"
#include "npu-mc-matmul.h"
#include "npu-test-matmul.h"
#include "npu-test.h"
#include "npu/npu-timing.h"

enum { A = NPU_TEST_MM_A, B = NPU_TEST_MM_B, C = NPU_TEST_MM_C, NB = NPU_TEST_MM_NBUF };

struct run {
    double modeled_s;
    bool timing;
};

static void
run_plan(struct npu_device *dev, struct npu_mc_plan *plan, struct npu_test_mm *mm, struct run *out)
{
    struct npu_bo *const *buf = mm->bo;
    uint32_t M = plan->m, K = plan->k, N = plan->n;
    memset(npu_bo_map(buf[C]), 0, npu_bo_size(buf[C]));
    struct npu_stream s;
    npu_stream_init(&s);
    CHECK_EQ_INT(NPU_OK, npu_mc_emit_matmul(plan, &s, (struct npu_ref_buf){A, 0},
                                            (struct npu_ref_buf){B, 0}, (struct npu_ref_buf){C, 0},
                                            NULL, NULL));
    uint32_t n_tasks = s.n_tasks;
    struct npu_bo *rc, *task;
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, (size_t)n_tasks * 1024 + 4096, 0, &rc));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 40 * n_tasks, NPU_BO_TASKS, &task));
    struct npu_regcmd_image img;
    CHECK_EQ_INT(NPU_OK, npu_stream_layout(&s, npu_bo_iova(rc), NPU_SEGMENT_ALIGN, &img));
    struct npu_submit sub = ts_submit(task, 0, 1, 0);
    CHECK_EQ_INT(NPU_OK, npu_mc_finish(plan, &img, &sub));
    uint32_t iova[NB] = {npu_bo_iova(buf[A]), npu_bo_iova(buf[B]), npu_bo_iova(buf[C])};
    CHECK_EQ_INT(NPU_OK, npu_image_relocate(&img, iova, NB));
    memcpy(npu_bo_map(rc), img.qwords, img.n_qwords * 8);
    CHECK_EQ_INT(NPU_OK, npu_image_fill_rknpu_tasks(&img, npu_bo_map(task), n_tasks));
    struct npu_job_result r;
    memset(&r, 0, sizeof(r));
    char msg[512] = "";
    CHECK_EQ_INT(NPU_OK, ts_run(dev, &sub, &r, msg, sizeof(msg)));
    if (msg[0])
        fprintf(stderr, "%u-core matmul: %s\n", plan->cores, msg);
    CHECK_EQ_INT((int)n_tasks, (int)r.task_counter);
    out->timing = r.timing_valid;
    out->modeled_s = r.modeled_s;

    float *c = malloc(sizeof(float) * M * N);
    CHECK_EQ_INT(NPU_OK, npu_nc1hwc2_to_nchw(c, sizeof(float) * M * N, npu_bo_map(buf[C]),
                                             npu_bo_size(buf[C]), 4, 1, N, M, 1));
    double worst = npu_test_mm_worst(mm, c);
    CHECK(worst <= K);
    free(c);
    npu_image_fini(&img);
    npu_stream_fini(&s);
    npu_bo_destroy(rc);
    npu_bo_destroy(task);
}

static void
test_split(struct npu_device *dev, uint32_t M, uint32_t K, uint32_t N, bool timing_backend)
{
    struct npu_mc_plan one, three, best;
    CHECK_EQ_INT(NPU_OK, npu_mc_plan_matmul_cores(M, K, N, NPU_REF_MATMUL_FP16_FP32, 1, &one));
    CHECK_EQ_INT(NPU_OK, npu_mc_plan_matmul_cores(M, K, N, NPU_REF_MATMUL_FP16_FP32, 3, &three));
    CHECK_EQ_INT(NPU_OK, npu_mc_plan_matmul(M, K, N, NPU_REF_MATMUL_FP16_FP32, 3, &best));
    CHECK_EQ_INT(3, (int)three.cores);
    CHECK(best.est_s <= three.est_s && best.est_s <= one.est_s);
    CHECK_EQ_INT((int)N, (int)(three.share[0].n + three.share[1].n + three.share[2].n));

    struct npu_test_mm mm;
    npu_test_mm_operands(dev, M, K, N, 0, M + K + N, 700.0f, &mm);

    struct npu_kdouble_stats st0, st1;
    npu_kdouble_get_stats(&st0);
    struct run r1, r3;
    run_plan(dev, &one, &mm, &r1);
    run_plan(dev, &three, &mm, &r3);
    npu_kdouble_get_stats(&st1);
    printf("matmul %ux%ux%u fp16: %u tasks of %u columns; planner: 1 core %.1f us, 3 cores %.1f "
           "us (DMA stretch %.2f), chooses %u core(s) - modeled (%s)\n",
           M, K, N, NPU_DIV_ROUND_UP(N, one.tile_n), one.tile_n, one.est_s * 1e6, three.est_s * 1e6,
           three.dma_stretch, best.cores, npu_timing_model()->label);
    if (timing_backend && r1.timing && r3.timing) {
        printf("  simulator: 1 core %.1f us, 3 cores %.1f us, speed-up %.2fx - modeled (%s)\n",
               r1.modeled_s * 1e6, r3.modeled_s * 1e6, r1.modeled_s / r3.modeled_s,
               npu_timing_model()->label);
        /* the analytic plan and the simulator's task-by-task model agree */
        CHECK(fabs(one.est_s - r1.modeled_s) <= 0.15 * r1.modeled_s);
        CHECK(fabs(three.est_s - r3.modeled_s) <= 0.15 * r3.modeled_s);
    }
    if (st1.jobs_submitted > st0.jobs_submitted) {
        printf("  launches per core through the double:");
        for (int c = 0; c < 3; c++)
            printf(" %llu", (unsigned long long)(st1.launches[c] - st0.launches[c]));
        printf("\n");
    }
    npu_test_mm_free(&mm);
}

int
main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "sim";
    CHECK(npu_kdouble_present());
    struct npu_device *dev = NULL;
    CHECK_EQ_INT(NPU_OK, npu_device_open(backend, &dev));
    if (!dev)
        return npu_test_done("multicore");
    struct npu_device_info info;
    npu_device_get_info(dev, &info);
    bool timing = (info.flags & NPU_DEVICE_MODELED_TIMING) != 0;
    test_split(dev, 64, 512, 960, timing);
    test_split(dev, 200, 768, 768, timing);

    /* The planner on SigLIP-B/16-like encoder matmuls (197 tokens padded to 200). */
    static const uint32_t shapes[][3] = {{200, 768, 768}, {200, 768, 2304}, {200, 768, 3072}};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(shapes); i++) {
        struct npu_mc_plan p1, p3;
        npu_mc_plan_matmul_cores(shapes[i][0], shapes[i][1], shapes[i][2], NPU_REF_MATMUL_FP16_FP32,
                                 1, &p1);
        npu_mc_plan_matmul_cores(shapes[i][0], shapes[i][1], shapes[i][2], NPU_REF_MATMUL_FP16_FP32,
                                 3, &p3);
        printf("plan %ux%ux%u: 1 core %.1f us, 3 cores %.1f us, speed-up %.2fx - modeled "
               "(%s)\n",
               shapes[i][0], shapes[i][1], shapes[i][2], p1.est_s * 1e6, p3.est_s * 1e6,
               p1.est_s / p3.est_s, npu_timing_model()->label);
        CHECK(p3.est_s < p1.est_s);
    }
    npu_device_close(dev);
    return npu_test_done("multicore");
}
