/* SPDX-License-Identifier: MIT */
/*
 * test-npu-actw.c: npu_conv_emit_call, the conv/matmul task entry for
 * composites, with the weight operand in activation memory (what
 * attention's Q.K^T and A.V need): the operands are placed in one
 * activation BO (input NC1HWC2, weights packed as npu_weight_pack does, as a
 * layout copy would leave them), the tasks are emitted, chained, relocated
 * and run on the simulator (strict), and the result is compared with a
 * double-precision reference. Exact data (k/16) as in test-npu-matmul.c;
 * fp32 results, so the comparison is exact up to fp32 summation (exact here).
 */
#include "npu-be.h"
#include "npu-test-util.h"
#include "npu/npu-timing.h"

static void
put16(uint8_t *p, float v)
{
    uint16_t h = npu_fp32_to_fp16(v);
    memcpy(p, &h, 2);
}

static void
run(uint32_t C, uint32_t H, uint32_t W, uint32_t K, uint32_t kh, uint32_t s1, uint32_t pad,
    bool bias, int act, const char *label)
{
    struct npu_conv_call c = {.c = C,
                              .h = H,
                              .w_px = W,
                              .k = K,
                              .kh = kh,
                              .kw = kh,
                              .sy = s1,
                              .sx = s1,
                              .pad_top = pad,
                              .pad_left = pad,
                              .pad_bottom = pad,
                              .pad_right = pad,
                              .out_dt = NPU_DTYPE_FP32,
                              .has_bias = bias,
                              .act = act};
    uint32_t oh = (H + 2 * pad - kh) / s1 + 1, ow = (W + 2 * pad - kh) / s1 + 1;
    struct npu_weight_layout l;
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, 2, K, C, kh, kh, false));
    size_t xb = npu_nc1hwc2_bytes(2, (C + 63) / 64 * 64, H, W);
    size_t yb = npu_nc1hwc2_bytes(4, (K + 63) / 64 * 64, oh, ow);
    size_t wb = (l.total_bytes + 63) / 64 * 64, bb = (size_t)(K + 63) / 64 * 64 * 4;
    c.x = (struct npu_ref_buf){NPU_BUF_ACT, 0};
    c.w = (struct npu_ref_buf){NPU_BUF_ACT, (uint32_t)xb};
    c.bias = (struct npu_ref_buf){NPU_BUF_ACT, (uint32_t)(xb + wb)};
    c.y = (struct npu_ref_buf){NPU_BUF_ACT, (uint32_t)(xb + wb + bb)};
    size_t total = xb + wb + bb + yb;
    /* data */
    uint32_t seed = C * 7 + K;
    float *x = malloc(sizeof(float) * C * H * W), *w = malloc(sizeof(float) * K * C * kh * kh);
    float *b = malloc(sizeof(float) * K);
    tu_fill(x, (size_t)C * H * W, &seed, 16);
    tu_fill(w, (size_t)K * C * kh * kh, &seed, 16);
    tu_fill(b, K, &seed, 16);
    struct npu_device *dev = NULL;
    struct npu_device_options o = {.strict = 1};
    CHECK_EQ_INT(NPU_OK, npu_device_open_ex("sim", &o, &dev));
    struct npu_bo *abo = NULL, *rbo = NULL, *tbo = NULL;
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, total, 0, &abo));
    uint8_t *m = npu_bo_map(abo);
    for (uint32_t ch = 0; ch < C; ch++)
        for (uint32_t y = 0; y < H; y++)
            for (uint32_t xx = 0; xx < W; xx++)
                put16(m + npu_nc1hwc2_offset(2, ch, y, xx, H, W), x[((size_t)ch * H + y) * W + xx]);
    uint16_t *wh = malloc(2 * (size_t)K * C * kh * kh);
    npu_fp32_to_fp16_n(wh, w, (size_t)K * C * kh * kh);
    CHECK_EQ_INT(NPU_OK, npu_weight_pack(&l, m + c.w.offset, l.total_bytes, wh, 0));
    memcpy(m + c.bias.offset, b, sizeof(float) * K);
    /* emit, lay out, run */
    struct npu_stream s;
    npu_stream_init(&s);
    double sec = 0;
    CHECK_EQ_INT(NPU_OK, npu_conv_emit_call(&s, &c, &sec));
    struct npu_regcmd_image img;
    CHECK_EQ_INT(NPU_OK, npu_stream_layout(&s, 0, 64, &img));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, img.n_qwords * 8, 0, &rbo));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, img.n_tasks * sizeof(struct npu_rknpu_task),
                                       NPU_BO_TASKS, &tbo));
    img.iova = npu_bo_iova(rbo);
    CHECK_EQ_INT(NPU_OK, npu_image_chain(&img, 0, img.n_tasks, 1));
    uint32_t iovas[NPU_BUF_COUNT] = {0, npu_bo_iova(abo)};
    CHECK_EQ_INT(NPU_OK, npu_image_relocate(&img, iovas, NPU_BUF_COUNT));
    memcpy(npu_bo_map(rbo), img.qwords, img.n_qwords * 8);
    CHECK_EQ_INT(NPU_OK, npu_image_fill_rknpu_tasks(&img, npu_bo_map(tbo), img.n_tasks));
    struct npu_submit sub;
    memset(&sub, 0, sizeof(sub));
    sub.task_bo = tbo;
    sub.task_number = img.n_tasks;
    sub.core_mask = 1;
    sub.subcore_task[0].task_number = img.n_tasks;
    sub.flags = NPU_JOB_PC | NPU_JOB_PINGPONG;
    struct npu_job *job = NULL;
    struct npu_job_result res;
    CHECK_EQ_INT(NPU_OK, npu_job_submit(dev, &sub, &job));
    enum npu_status st = npu_job_wait(job, -1, &res);
    if (st)
        fprintf(stderr, "%s: %s\n", label, res.message);
    CHECK_EQ_INT(NPU_OK, st);
    /* reference */
    int bad = 0;
    for (uint32_t k = 0; k < K && !st; k++)
        for (uint32_t y = 0; y < oh; y++)
            for (uint32_t xx = 0; xx < ow; xx++) {
                double acc = bias ? b[k] : 0;
                for (uint32_t ch = 0; ch < C; ch++)
                    for (uint32_t ky = 0; ky < kh; ky++)
                        for (uint32_t kx = 0; kx < kh; kx++) {
                            int64_t iy = (int64_t)y * s1 + ky - pad;
                            int64_t ix = (int64_t)xx * s1 + kx - pad;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                continue;
                            acc += (double)x[((size_t)ch * H + iy) * W + ix] *
                                   w[(((size_t)k * C + ch) * kh + ky) * kh + kx];
                        }
                if (act == 1 && acc < 0)
                    acc = 0;
                float got;
                memcpy(&got, m + c.y.offset + npu_nc1hwc2_offset(4, k, y, xx, oh, ow), 4);
                if ((double)got != (double)(float)acc && bad++ < 3)
                    fprintf(stderr, "%s: (%u,%u,%u) %g, expected %g\n", label, k, y, xx, got, acc);
            }
    CHECK_EQ_INT(0, bad);
    printf("%-44s %u task(s), modeled %.1f us (%s), exact\n", label, img.n_tasks, sec * 1e6,
           npu_timing_model()->label);
    npu_job_destroy(job);
    npu_image_fini(&img);
    npu_stream_fini(&s);
    npu_bo_destroy(abo);
    npu_bo_destroy(rbo);
    npu_bo_destroy(tbo);
    npu_device_close(dev);
    free(x);
    free(w);
    free(wh);
    free(b);
}

int
main(void)
{
    /* attention-shaped: S = Q K^T (Q 196 x 64, K 196 x 64), O = A V (A 196 x 196, V^T 64 x 196) */
    run(64, 196, 1, 196, 1, 1, 0, false, 0, "Q.K^T 196x64 . 64x196 (K in act memory)");
    run(196, 196, 1, 64, 1, 1, 0, false, 0, "A.V 196x196 . 196x64 (V^T in act memory)");
    /* bias + relu, a 3x3 conv, and shapes that need row and kernel tiles */
    run(32, 12, 12, 40, 3, 1, 1, true, 1, "conv 3x3 pad 1 + bias + relu");
    run(256, 1500, 1, 96, 1, 1, 0, true, 0, "1500x256 . 256x96 (row tiles)");
    run(512, 600, 1, 1200, 1, 1, 0, false, 0, "600x512 . 512x1200 (rows x kernels)");
    return npu_test_done("npu-actw");
}
