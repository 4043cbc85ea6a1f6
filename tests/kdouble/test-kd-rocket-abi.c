/* SPDX-License-Identifier: MIT */
/*
 * test-kd-rocket-abi.c: the rocket half of the kernel double checked through raw ioctls, as
 * the upstream driver and the DRM core behave (facts §4.2; rocket_drv.c, rocket_gem.c,
 * rocket_job.c): driver identity, CREATE_BO placement (per-file IOVA spaces from the bottom,
 * best fit), mmap rules, PREP_BO / FINI_BO answers and the cache model behind them, SUBMIT's
 * own errors and the per-job errors it swallows, one launch per task, implicit completion
 * through the output BOs, a hung job, and the first uapi revision.
 */
#include "kd-test.h"

struct rbo {
    struct npu_rocket_create_bo c;
    void *map;
};

static int
rcreate(int fd, uint32_t size, struct rbo *b)
{
    memset(b, 0, sizeof(*b));
    b->c.size = size;
    int r = kt_ioctl(fd, NPU_ROCKET_IOCTL_CREATE_BO, &b->c);
    if (r)
        return r;
    b->map = mmap(NULL, NPU_ALIGN(size, 4096u), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                  (off_t)b->c.offset);
    return b->map == MAP_FAILED ? -errno : 0;
}

static void
rclose(int fd, struct rbo *b)
{
    munmap(b->map, NPU_ALIGN(b->c.size, 4096u));
    struct {
        uint32_t handle, pad;
    } gc = {b->c.handle, 0};
    CHECK_EQ_INT(0, kt_ioctl(fd, KT_IOCTL_GEM_CLOSE, &gc));
}

static int
prep(int fd, uint32_t handle, int64_t rel_ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    struct npu_rocket_prep_bo p = {.handle = handle, .timeout_ns = rel_ns ? now + rel_ns : 0};
    return kt_ioctl(fd, NPU_ROCKET_IOCTL_PREP_BO, &p);
}

static int
fini(int fd, uint32_t handle)
{
    struct npu_rocket_fini_bo f = {.handle = handle};
    return kt_ioctl(fd, NPU_ROCKET_IOCTL_FINI_BO, &f);
}

static void
test_identity_and_bos(void)
{
    char name[32];
    int maj = -1, min = -1, pat = -1;
    int fd = kt_open("accel/accel0");
    CHECK(fd >= 0);
    CHECK_EQ_INT(0, kt_version(fd, name, sizeof(name), &maj, &min, &pat));
    CHECK_STR("rocket", name);
    CHECK_EQ_INT(0, maj + min + pat);

    /* raw layout (facts §4.2): size at 0 in, handle 4, dma_address 8, offset 16 out */
    uint8_t raw[24];
    memset(raw, 0, sizeof(raw));
    uint32_t rsize = 4096;
    memcpy(raw, &rsize, 4);
    CHECK_EQ_INT(0, kt_ioctl(fd, 0xC0186440ul, raw));
    uint32_t rh;
    uint64_t rdma, roff;
    memcpy(&rh, raw + 4, 4);
    memcpy(&rdma, raw + 8, 8);
    memcpy(&roff, raw + 16, 8);
    CHECK_EQ_INT(1, (int)rh);
    CHECK_EQ_HEX(0u, (uint32_t)rdma);
    CHECK(roff >= 0x100000000ull);
    uint8_t fb8[8];
    memset(fb8, 0, sizeof(fb8));
    memcpy(fb8, &rh, 4);
    CHECK_EQ_INT(0, kt_ioctl(fd, 0x40086443ul, fb8)); /* FINI_BO */
    uint8_t pb16[16];
    memset(pb16, 0, sizeof(pb16));
    memcpy(pb16, &rh, 4);
    CHECK_EQ_INT(0, kt_ioctl(fd, 0x40106442ul, pb16)); /* PREP_BO, no fence */
    uint8_t gc8[8];
    memset(gc8, 0, sizeof(gc8));
    memcpy(gc8, &rh, 4);
    CHECK_EQ_INT(0, kt_ioctl(fd, KT_IOCTL_GEM_CLOSE, gc8));

    struct npu_rocket_create_bo c = {.size = 0};
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_ROCKET_IOCTL_CREATE_BO, &c));
    struct rbo a, b, d;
    CHECK_EQ_INT(0, rcreate(fd, 100, &a));
    CHECK_EQ_INT(0, rcreate(fd, 3 * 4096 + 1, &b));
    CHECK_EQ_INT(0, rcreate(fd, 4096, &d));
    /* from the bottom of the aperture, page aligned: 0, 0x1000, 0x5000 */
    CHECK_EQ_HEX(0u, (uint32_t)a.c.dma_address);
    CHECK_EQ_HEX(0x1000u, (uint32_t)b.c.dma_address);
    CHECK_EQ_HEX(0x5000u, (uint32_t)d.c.dma_address);
    CHECK(a.c.offset >= 0x100000000ull && b.c.offset != a.c.offset);
    CHECK_EQ_INT(1, (int)a.c.handle);
    /* best fit: a freed hole is reused by a BO that fits it */
    rclose(fd, &b);
    struct rbo e;
    CHECK_EQ_INT(0, rcreate(fd, 8192, &e));
    CHECK_EQ_HEX(0x1000u, (uint32_t)e.c.dma_address);
    struct {
        uint32_t handle, pad;
    } gc = {999, 0};
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, KT_IOCTL_GEM_CLOSE, &gc));

    /* every file has its own IOMMU domain, hence its own IOVAs */
    int fd2 = kt_open("accel/accel0");
    struct rbo f2;
    CHECK_EQ_INT(0, rcreate(fd2, 4096, &f2));
    CHECK_EQ_HEX(0u, (uint32_t)f2.c.dma_address);
    void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)f2.c.offset);
    CHECK(p == MAP_FAILED && errno == EACCES);
    rclose(fd2, &f2);
    close(fd2);
    p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, (off_t)a.c.offset);
    CHECK(p == MAP_FAILED && errno == EINVAL);

    /* PREP_BO / FINI_BO answers */
    struct npu_rocket_prep_bo pb = {.handle = a.c.handle, .reserved = 1};
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_ROCKET_IOCTL_PREP_BO, &pb));
    CHECK_EQ_INT(-ENOENT, prep(fd, 999, 0));
    CHECK_EQ_INT(0, prep(fd, a.c.handle, 0)); /* no fence: nothing to wait for */
    struct npu_rocket_fini_bo fb = {.handle = a.c.handle, .reserved = 1};
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_ROCKET_IOCTL_FINI_BO, &fb));
    CHECK_EQ_INT(-ENOENT, fini(fd, 999));
    CHECK_EQ_INT(0, fini(fd, a.c.handle));
    rclose(fd, &a);
    rclose(fd, &d);
    rclose(fd, &e);
    close(fd);
}

struct rjob {
    struct rbo rc, x, y, z;
    int8_t ref[512 * 16];
    uint32_t W;
    struct npu_rocket_task task;
};

static void
rjob_make(int fd, struct rjob *j, uint32_t W, uint32_t seed)
{
    j->W = W;
    CHECK_EQ_INT(0, rcreate(fd, 4096, &j->rc));
    CHECK_EQ_INT(0, rcreate(fd, W * 16, &j->x));
    CHECK_EQ_INT(0, rcreate(fd, W * 16, &j->y));
    CHECK_EQ_INT(0, rcreate(fd, W * 16, &j->z));
    kt_fill(j->x.map, j->y.map, j->ref, W * 16, seed);
    uint32_t body =
        kt_add_prog(j->rc.map, (uint32_t)j->x.c.dma_address, (uint32_t)j->y.c.dma_address,
                    (uint32_t)j->z.c.dma_address, W, 0, 0);
    j->task.regcmd = (uint32_t)j->rc.c.dma_address;
    j->task.regcmd_count = body + 4;
}

static void
rjob_free(int fd, struct rjob *j)
{
    rclose(fd, &j->rc);
    rclose(fd, &j->x);
    rclose(fd, &j->y);
    rclose(fd, &j->z);
}

static int
submit(int fd, struct npu_rocket_task *tasks, uint32_t n, uint32_t *in, uint32_t n_in,
       uint32_t *out, uint32_t n_out)
{
    struct npu_rocket_job job = {
        .tasks = (uint64_t)(uintptr_t)tasks,
        .in_bo_handles = (uint64_t)(uintptr_t)in,
        .out_bo_handles = (uint64_t)(uintptr_t)out,
        .task_count = n,
        .task_struct_size = sizeof(*tasks),
        .in_bo_handle_count = n_in,
        .out_bo_handle_count = n_out,
    };
    struct npu_rocket_submit s = {
        .jobs = (uint64_t)(uintptr_t)&job, .job_count = 1, .job_struct_size = sizeof(job)};
    return kt_ioctl(fd, NPU_ROCKET_IOCTL_SUBMIT, &s);
}

static void
test_jobs(void)
{
    int fd = kt_open("accel/accel0");
    struct rbo page0; /* keep IOVA 0 out of the way (the simulator never maps page 0) */
    CHECK_EQ_INT(0, rcreate(fd, 4096, &page0));
    struct rjob j;
    rjob_make(fd, &j, 64, 41);
    uint32_t in[2] = {j.x.c.handle, j.y.c.handle}, out = j.z.c.handle;

    /* without FINI_BO the NPU reads memory as it was: zeros (the regcmds are flushed) */
    CHECK_EQ_INT(0, fini(fd, j.rc.c.handle));
    CHECK_EQ_INT(0, submit(fd, &j.task, 1, in, 2, &out, 1));
    CHECK_EQ_INT(0, prep(fd, out, 5000000000ll));
    int zeros = 0;
    for (int i = 0; i < 64 * 16; i++)
        zeros += ((int8_t *)j.z.map)[i] == 0;
    CHECK_EQ_INT(64 * 16, zeros);
    CHECK_EQ_INT(0, fini(fd, j.x.c.handle));
    CHECK_EQ_INT(0, fini(fd, j.y.c.handle));
    struct npu_kdouble_stats st0, st1;
    npu_kdouble_get_stats(&st0);
    CHECK_EQ_INT(0, submit(fd, &j.task, 1, in, 2, &out, 1));
    CHECK_EQ_INT(0, prep(fd, out, 5000000000ll));
    CHECK(!memcmp(j.z.map, j.ref, 64 * 16));
    npu_kdouble_get_stats(&st1);
    CHECK_EQ_INT(1, (int)(st1.jobs_done - st0.jobs_done));

    /* one launch per task; the chain in the tails is not followed */
    struct npu_rocket_task many[200];
    for (int i = 0; i < 200; i++)
        many[i] = j.task;
    npu_kdouble_get_stats(&st0);
    CHECK_EQ_INT(0, submit(fd, many, 200, in, 2, &out, 1));
    int r = prep(fd, out, 0); /* poll: still running */
    CHECK(r == -EBUSY || r == 0);
    CHECK_EQ_INT(0, prep(fd, out, 10000000000ll));
    npu_kdouble_get_stats(&st1);
    uint64_t launches = 0;
    for (int c = 0; c < 3; c++)
        launches += st1.launches[c] - st0.launches[c];
    CHECK_EQ_INT(200, (int)launches);

    /* SUBMIT's own errors */
    struct npu_rocket_submit s = {.jobs = 0, .job_count = 0, .job_struct_size = 0};
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_ROCKET_IOCTL_SUBMIT, &s)); /* no jobs: no-op */
    s.job_count = 1;
    s.job_struct_size = 39;
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_ROCKET_IOCTL_SUBMIT, &s));
    s.job_struct_size = 40;
    s.reserved = 1;
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_ROCKET_IOCTL_SUBMIT, &s));
    s.reserved = 0;
    s.jobs = 64; /* unreadable */
    CHECK_EQ_INT(-EFAULT, kt_ioctl(fd, NPU_ROCKET_IOCTL_SUBMIT, &s));
    /* per-job errors are dropped and SUBMIT still says 0 */
    npu_kdouble_get_stats(&st0);
    CHECK_EQ_INT(0, submit(fd, &j.task, 0, in, 2, &out, 1)); /* task_count 0 */
    struct npu_rocket_task zero = {j.task.regcmd, 0};
    CHECK_EQ_INT(0, submit(fd, &zero, 1, in, 2, &out, 1)); /* regcmd_count 0 */
    uint32_t bad = 4242;
    CHECK_EQ_INT(0, submit(fd, &j.task, 1, in, 2, &bad, 1));    /* unknown handle */
    CHECK_EQ_INT(0, submit(fd, (void *)64, 1, in, 2, &out, 1)); /* unreadable tasks */
    npu_kdouble_get_stats(&st1);
    CHECK_EQ_INT(4, (int)(st1.jobs_dropped - st0.jobs_dropped));
    CHECK_EQ_INT(0, (int)(st1.jobs_submitted - st0.jobs_submitted));

    /* a fault: the job is reset after 500 ms and its fence signalled anyway */
    kt_add_prog(j.rc.map, 0x00100000u, (uint32_t)j.y.c.dma_address, (uint32_t)j.z.c.dma_address, 64,
                0, 0);
    CHECK_EQ_INT(0, fini(fd, j.rc.c.handle));
    npu_kdouble_get_stats(&st0);
    double t0 = kt_now();
    CHECK_EQ_INT(0, submit(fd, &j.task, 1, in, 2, &out, 1));
    CHECK_EQ_INT(-ETIMEDOUT, prep(fd, out, 100000000ll)); /* 100 ms is not enough */
    CHECK_EQ_INT(0, prep(fd, out, 5000000000ll));
    CHECK(kt_now() - t0 >= 0.49);
    npu_kdouble_get_stats(&st1);
    CHECK_EQ_INT(1, (int)(st1.jobs_failed - st0.jobs_failed));
    CHECK(strstr(st1.last_dmesg, "NPU job timed out") != NULL);

    rjob_free(fd, &j);
    rclose(fd, &page0);
    close(fd);
}

static void
test_old_uapi(void)
{
    setenv("NPU_KDOUBLE_ROCKET_UAPI", "1", 1);
    int fd = kt_open("accel/accel0");
    unsetenv("NPU_KDOUBLE_ROCKET_UAPI");
    struct rbo a;
    CHECK_EQ_INT(0, rcreate(fd, 4096, &a));
    CHECK_EQ_INT(-EINVAL, prep(fd, a.c.handle, 0)); /* no such ioctl */
    CHECK_EQ_INT(-EINVAL, fini(fd, a.c.handle));
    rclose(fd, &a);
    close(fd);
}

int
main(void)
{
    CHECK(npu_kdouble_present());
    test_identity_and_bos();
    test_jobs();
    test_old_uapi();
    struct npu_kdouble_stats st;
    npu_kdouble_get_stats(&st);
    CHECK_EQ_INT(0, (int)st.mmaps_live);
    CHECK_EQ_INT(0, (int)st.bos_live);
    return npu_test_done("kdouble-rocket-abi");
}
