/* SPDX-License-Identifier: MIT */
/*
 * test-kd-rknpu-abi.c: the rknpu half of the kernel double checked through raw ioctls, as
 * the vendor driver 0.9.8 and the DRM core behave (facts §4.1; rknpu_drv.c, rknpu_gem.c,
 * rknpu_job.c): node discovery answers, ioctl numbers and struct sizes, every ioctl's
 * success and error answers, IOVA placement, mmap rules, the cache model behind MEM_SYNC,
 * blocking / nonblocking / fenced submits, the core-mask and subcore_task indexing, and
 * what a hung job looks like.
 */
#include "kd-test.h"

#define WC_FLAGS                                                                                   \
    (NPU_RKNPU_MEM_NON_CONTIGUOUS | NPU_RKNPU_MEM_WRITE_COMBINE |                                  \
     NPU_RKNPU_MEM_IOMMU_LIMIT_IOVA_ALIGNMENT)
#define DATA_FLAGS 0x403u /* librknnrt: NON_CONTIGUOUS | CACHEABLE | LIMIT_IOVA_ALIGNMENT */
#define TASK_FLAGS 0x40bu /* + KERNEL_MAPPING */

struct kbo {
    struct npu_rknpu_mem_create c;
    void *map;
};

static int
kcreate(int fd, uint64_t size, uint32_t flags, struct kbo *b)
{
    memset(b, 0, sizeof(*b));
    b->c.size = size;
    b->c.flags = flags;
    int r = kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_CREATE, &b->c);
    if (r)
        return r;
    struct npu_rknpu_mem_map m = {.handle = b->c.handle};
    r = kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_MAP, &m);
    if (r)
        return r;
    b->map = mmap(NULL, b->c.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)m.offset);
    return b->map == MAP_FAILED ? -errno : 0;
}

static void
kfree(int fd, struct kbo *b)
{
    munmap(b->map, b->c.size);
    struct npu_rknpu_mem_destroy d = {.handle = b->c.handle, .obj_addr = b->c.obj_addr};
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_DESTROY, &d));
}

static int
action(int fd, uint32_t id, uint32_t *value)
{
    struct npu_rknpu_action a = {.flags = id, .value = *value};
    int r = kt_ioctl(fd, NPU_RKNPU_IOCTL_ACTION, &a);
    *value = a.value;
    return r;
}

static void
test_nodes(void)
{
    char name[32];
    int maj, min, pat;
    int fd = kt_open("dri/card0");
    CHECK(fd >= 0);
    CHECK_EQ_INT(0, kt_version(fd, name, sizeof(name), &maj, &min, &pat));
    CHECK_STR("rockchip", name);
    /* a display driver has no rknpu ioctls */
    uint32_t v = 0;
    CHECK_EQ_INT(-EINVAL, action(fd, NPU_RKNPU_GET_DRV_VERSION, &v));
    close(fd);

    fd = kt_open("dri/card1");
    CHECK(fd >= 0);
    CHECK_EQ_INT(0, kt_version(fd, name, sizeof(name), &maj, &min, &pat));
    CHECK_STR("rknpu", name);
    CHECK_EQ_INT(0, maj);
    CHECK_EQ_INT(9, min);
    CHECK_EQ_INT(8, pat);
    /* drm_copy_field: at most name_len bytes copied, the full length reported */
    char small[8] = "XXXXXXX";
    struct kt_version kv;
    memset(&kv, 0, sizeof(kv));
    kv.name = small;
    kv.name_len = 2;
    CHECK_EQ_INT(0, kt_ioctl(fd, KT_IOCTL_VERSION, &kv));
    CHECK_EQ_INT(5, (int)kv.name_len);
    CHECK(small[0] == 'r' && small[1] == 'k' && small[2] == 'X');
    /* NULL buffers: lengths only */
    memset(&kv, 0, sizeof(kv));
    CHECK_EQ_INT(0, kt_ioctl(fd, KT_IOCTL_VERSION, &kv));
    CHECK_EQ_INT(5, (int)kv.name_len);
    CHECK_EQ_INT(12, (int)kv.desc_len);
    /* an unreadable argument, an nr past the table */
    CHECK_EQ_INT(-EFAULT, kt_ioctl(fd, NPU_RKNPU_IOCTL_ACTION, (void *)16));
    CHECK_EQ_INT(-EFAULT, kt_ioctl(fd, NPU_RKNPU_IOCTL_ACTION, NULL));
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_DRM_IOWR(0x06, struct npu_rknpu_action), &v));
    close(fd);

    setenv("NPU_KDOUBLE", "rocket", 1);
    CHECK(kt_open("dri/card1") < 0 && errno == ENXIO);
    unsetenv("NPU_KDOUBLE");
    setenv("NPU_KDOUBLE_EACCES", "dri/renderD129,dri/card1", 1);
    CHECK(kt_open("dri/card1") < 0 && errno == EACCES);
    CHECK(kt_open("dri/renderD129") < 0 && errno == EACCES);
    unsetenv("NPU_KDOUBLE_EACCES");
    fd = kt_open("dri/renderD129");
    CHECK(fd >= 0);
    close(fd);
}

/* Layouts checked independently of npu-abi.h: raw bytes at the offsets of facts §4.1 and the
 * ioctl numbers as literals. */
static void
test_raw_layout(int fd)
{
    uint8_t mc[48];
    memset(mc, 0, sizeof(mc));
    uint32_t flags = 0x403;
    uint64_t size = 5000;
    memcpy(mc + 4, &flags, 4);
    memcpy(mc + 8, &size, 8);
    CHECK_EQ_INT(0, kt_ioctl(fd, 0xC0306442ul, mc));
    uint32_t handle;
    uint64_t out_size, obj, dma;
    memcpy(&handle, mc + 0, 4);
    memcpy(&out_size, mc + 8, 8);
    memcpy(&obj, mc + 16, 8);
    memcpy(&dma, mc + 24, 8);
    CHECK(handle >= 1);
    CHECK_EQ_INT(8192, (int)out_size);
    CHECK((obj >> 40) == 0xffffffull);
    CHECK(dma >= 0xf0000000ull && !(dma & 0xfff));
    uint8_t mm[16];
    memset(mm, 0, sizeof(mm));
    memcpy(mm, &handle, 4);
    CHECK_EQ_INT(0, kt_ioctl(fd, 0xC0106443ul, mm));
    uint64_t off;
    memcpy(&off, mm + 8, 8);
    CHECK(off >= 0x100000000ull);
    uint8_t ms[32];
    memset(ms, 0, sizeof(ms));
    uint32_t dir = 1;
    memcpy(ms, &dir, 4);
    memcpy(ms + 8, &obj, 8);
    memcpy(ms + 24, &out_size, 8);
    CHECK_EQ_INT(0, kt_ioctl(fd, 0xC0206445ul, ms));
    uint8_t a[8] = {1, 0, 0, 0, 0, 0, 0, 0}; /* GET_DRV_VERSION */
    CHECK_EQ_INT(0, kt_ioctl(fd, 0xC0086440ul, a));
    uint32_t v;
    memcpy(&v, a + 4, 4);
    CHECK_EQ_INT(908, (int)v);
    /* SUBMIT (104 bytes): task_number 0 at offset 12 is refused */
    uint8_t sub[104];
    memset(sub, 0, sizeof(sub));
    sub[0] = 5;
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, 0xC0686441ul, sub));
    uint8_t md[16];
    memset(md, 0, sizeof(md));
    memcpy(md, &handle, 4);
    memcpy(md + 8, &obj, 8);
    CHECK_EQ_INT(0, kt_ioctl(fd, 0xC0106444ul, md));
}

static void
test_actions(int fd)
{
    uint32_t v = 0;
    CHECK_EQ_INT(0, action(fd, NPU_RKNPU_GET_DRV_VERSION, &v));
    CHECK_EQ_INT(908, (int)v);
    CHECK_EQ_INT(0, action(fd, NPU_RKNPU_GET_HW_VERSION, &v));
    CHECK_EQ_HEX(0x46495245u, v);
    CHECK_EQ_INT(0, action(fd, NPU_RKNPU_GET_FREQ, &v));
    CHECK_EQ_INT(1000000000, (int)v);
    CHECK_EQ_INT(0, action(fd, NPU_RKNPU_GET_IOMMU_EN, &v));
    CHECK_EQ_INT(1, (int)v);
    /* what 0.9.8 does not implement: -1 with EINVAL (facts §4.1 trace: POWER_ON -> -1) */
    CHECK_EQ_INT(-EINVAL, action(fd, NPU_RKNPU_POWER_ON, &v));
    CHECK_EQ_INT(-EINVAL, action(fd, NPU_RKNPU_POWER_OFF, &v));
    CHECK_EQ_INT(-EINVAL, action(fd, NPU_RKNPU_SET_FREQ, &v));
    CHECK_EQ_INT(-EINVAL, action(fd, NPU_RKNPU_GET_BW_PRIORITY, &v));
    CHECK_EQ_INT(-EINVAL, action(fd, 99, &v));
    /* RW amounts: "not supported", 0, value untouched */
    v = 0x1234;
    CHECK_EQ_INT(0, action(fd, NPU_RKNPU_GET_TOTAL_RW_AMOUNT, &v));
    CHECK_EQ_HEX(0x1234u, v);
    v = (uint32_t)-19;
    CHECK_EQ_INT(0, action(fd, NPU_RKNPU_SET_PROC_NICE, &v));
}

static void
test_memory(int fd)
{
    struct npu_rknpu_mem_create c;
    memset(&c, 0, sizeof(c));
    c.flags = DATA_FLAGS;
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_CREATE, &c)); /* size 0 */

    struct kbo a, b;
    CHECK_EQ_INT(0, kcreate(fd, 100, DATA_FLAGS, &a));
    CHECK_EQ_INT(0, kcreate(fd, 5000, DATA_FLAGS, &b));
    CHECK_EQ_INT(4096, (int)a.c.size); /* rounded to pages */
    CHECK_EQ_INT(8192, (int)b.c.size);
    CHECK(a.c.handle >= 1 && b.c.handle == a.c.handle + 1);
    CHECK(a.c.dma_addr >= 0xf0000000ull && a.c.dma_addr + a.c.size <= 0x100000000ull);
    CHECK_EQ_INT(0, (int)(a.c.dma_addr & 0xfff));
    CHECK(b.c.dma_addr + b.c.size <= a.c.dma_addr); /* top-down */
    CHECK((a.c.obj_addr >> 40) == 0xffffffull && a.c.obj_addr != b.c.obj_addr);
    CHECK(((uint8_t *)a.map)[99] == 0);

    /* handle != 0 naming an object: that object comes back */
    memset(&c, 0, sizeof(c));
    c.handle = a.c.handle;
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_CREATE, &c));
    CHECK_EQ_HEX(a.c.handle, c.handle);
    CHECK(c.dma_addr == a.c.dma_addr && c.obj_addr == a.c.obj_addr);

    /* the 40-byte form: the DRM core zero-extends it */
    struct npu_rknpu_mem_create_v1 c1;
    memset(&c1, 0, sizeof(c1));
    c1.size = 4096;
    c1.flags = DATA_FLAGS;
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_CREATE_V1, &c1));
    CHECK(c1.handle > b.c.handle && c1.dma_addr < b.c.dma_addr);
    struct npu_rknpu_mem_destroy d = {.handle = c1.handle};
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_DESTROY, &d));
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_DESTROY, &d)); /* gone */
    /* the lowest free handle is reused */
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_CREATE_V1, &c1));
    CHECK_EQ_HEX(d.handle, c1.handle);
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_DESTROY, &d));

    /* MEM_MAP and mmap */
    struct npu_rknpu_mem_map m = {.handle = 777};
    CHECK_EQ_INT(-ENOENT, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_MAP, &m));
    m.handle = a.c.handle;
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_MAP, &m));
    CHECK(m.offset >= 0x100000000ull && !(m.offset & 0xfff));
    void *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)m.offset);
    CHECK(p == MAP_FAILED && errno == EINVAL); /* longer than the object */
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)m.offset + 0x10000000);
    CHECK(p == MAP_FAILED && errno == EINVAL); /* no object starts there */
    int fd2 = kt_open("dri/card1");
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, (off_t)m.offset);
    CHECK(p == MAP_FAILED && errno == EACCES); /* no handle in that file */
    close(fd2);

    /* MEM_SYNC */
    struct npu_rknpu_mem_sync s = {.flags = 1, .obj_addr = 0, .size = 4096};
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_SYNC, &s));
    s.obj_addr = 0xffffff8012345000ull;
    CHECK_EQ_INT(-EFAULT, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_SYNC, &s));
    s.obj_addr = a.c.obj_addr;
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_SYNC, &s));
    struct kbo w;
    CHECK_EQ_INT(0, kcreate(fd, 4096, WC_FLAGS, &w));
    s.obj_addr = w.c.obj_addr; /* write-combined: nothing to sync, -EINVAL */
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_SYNC, &s));

    /* destroy while mapped: the memory stays until munmap */
    struct npu_kdouble_stats st0, st1;
    npu_kdouble_get_stats(&st0);
    memset(w.map, 0x5a, 4096);
    struct npu_rknpu_mem_destroy dw = {.handle = w.c.handle, .obj_addr = w.c.obj_addr};
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_DESTROY, &dw));
    CHECK(((uint8_t *)w.map)[4095] == 0x5a);
    npu_kdouble_get_stats(&st1);
    CHECK_EQ_INT((int)st0.bos_live, (int)st1.bos_live);
    munmap(w.map, 4096);
    npu_kdouble_get_stats(&st1);
    CHECK_EQ_INT((int)st0.bos_live - 1, (int)st1.bos_live);
    kfree(fd, &a);
    kfree(fd, &b);
}

/* One int8 add over W pixels in its own BOs; task BO with n_tasks copies. */
struct job {
    struct kbo task, rc, x, y, z;
    int8_t ref[256 * 16];
    uint32_t W;
};

static void
job_make(int fd, struct job *j, uint32_t W, uint32_t data_flags, unsigned n_desc, uint32_t seed)
{
    j->W = W;
    CHECK_EQ_INT(0, kcreate(fd, 40 * n_desc, TASK_FLAGS, &j->task));
    CHECK_EQ_INT(0, kcreate(fd, 4096, WC_FLAGS, &j->rc));
    CHECK_EQ_INT(0, kcreate(fd, W * 16, data_flags, &j->x));
    CHECK_EQ_INT(0, kcreate(fd, W * 16, data_flags, &j->y));
    CHECK_EQ_INT(0, kcreate(fd, W * 16, data_flags, &j->z));
    kt_fill(j->x.map, j->y.map, j->ref, W * 16, seed);
    uint32_t body = kt_add_prog(j->rc.map, (uint32_t)j->x.c.dma_addr, (uint32_t)j->y.c.dma_addr,
                                (uint32_t)j->z.c.dma_addr, W, 0, 0);
    struct npu_rknpu_task *t = j->task.map;
    for (unsigned i = 0; i < n_desc; i++) {
        memset(&t[i], 0, sizeof(t[i]));
        t[i].enable_mask = 0x18;
        t[i].int_mask = 0x300;
        t[i].int_clear = 0x1ffff;
        t[i].regcfg_amount = body;
        t[i].regcmd_addr = j->rc.c.dma_addr;
    }
}

static void
sync_obj(int fd, struct kbo *b, uint32_t dir)
{
    struct npu_rknpu_mem_sync s = {.flags = dir, .obj_addr = b->c.obj_addr, .size = b->c.size};
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_SYNC, &s));
}

static bool
job_ok(int fd, struct job *j)
{
    if (j->z.c.flags & NPU_RKNPU_MEM_CACHEABLE)
        sync_obj(fd, &j->z, NPU_RKNPU_MEM_SYNC_FROM_DEVICE);
    return !memcmp(j->z.map, j->ref, j->W * 16);
}

static void
job_free(int fd, struct job *j)
{
    kfree(fd, &j->task);
    kfree(fd, &j->rc);
    kfree(fd, &j->x);
    kfree(fd, &j->y);
    kfree(fd, &j->z);
}

static struct npu_rknpu_submit
submit_args(struct job *j, uint32_t mask, uint32_t n)
{
    struct npu_rknpu_submit s;
    memset(&s, 0, sizeof(s));
    s.flags = NPU_RKNPU_JOB_PC | NPU_RKNPU_JOB_PINGPONG;
    s.timeout = 6000;
    s.task_number = n;
    s.task_obj_addr = j->task.c.obj_addr;
    s.core_mask = mask;
    s.fence_fd = -1;
    for (int i = 0; i < 5; i++)
        s.subcore_task[i].task_number = n;
    return s;
}

static void
test_submit(int fd)
{
    struct job j;
    job_make(fd, &j, 64, WC_FLAGS, 3, 11);
    struct npu_rknpu_submit s = submit_args(&j, 0, 1);
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    CHECK_EQ_INT(1, (int)s.task_counter);
    CHECK(s.hw_elapse_time > 0); /* modeled (the timing model in use), in ns */
    CHECK(job_ok(fd, &j));
    /* the driver writes the status back into the last descriptor */
    CHECK((((struct npu_rknpu_task *)j.task.map)[0].int_status & 0x300u) != 0);

    /* refusals */
    s = submit_args(&j, 0, 0);
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    s = submit_args(&j, 8, 1);
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    s = submit_args(&j, 1, 1);
    s.flags = NPU_RKNPU_JOB_PINGPONG;
    double t0 = kt_now();
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    CHECK(kt_now() - t0 >= 0.09); /* rknpu_job_abort's msleep(100) */
    s = submit_args(&j, 1, 1);
    s.task_obj_addr = 0;
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    s.task_obj_addr = 0xffffff8000001000ull;
    CHECK_EQ_INT(-EFAULT, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    s.task_obj_addr = j.x.c.obj_addr; /* no KERNEL_MAPPING */
    CHECK_EQ_INT(-EFAULT, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    s = submit_args(&j, 1, 1);
    s.subcore_task[0].task_start = 200; /* past the descriptors of its (one-page) mapping */
    CHECK_EQ_INT(-EFAULT, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    s = submit_args(&j, 1, 1);
    s.flags |= NPU_RKNPU_JOB_FENCE_IN;
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    CHECK_EQ_INT(-EFAULT, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, (void *)32));

    /* nonblocking with a fence: poll the fd */
    memset(j.z.map, 0, 64 * 16);
    s = submit_args(&j, 2, 1);
    s.flags |= NPU_RKNPU_JOB_NONBLOCK | NPU_RKNPU_JOB_FENCE_OUT;
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    CHECK(s.fence_fd >= 0);
    struct pollfd pf = {.fd = s.fence_fd, .events = POLLIN};
    CHECK_EQ_INT(1, poll(&pf, 1, 10000));
    close(s.fence_fd);
    CHECK(job_ok(fd, &j));
    /* a kernel without CONFIG_ROCKCHIP_RKNPU_FENCE */
    setenv("NPU_KDOUBLE_RKNPU_FENCE", "0", 1);
    int fd2 = kt_open("dri/card1");
    unsetenv("NPU_KDOUBLE_RKNPU_FENCE");
    CHECK_EQ_INT(-EINVAL, kt_ioctl(fd2, NPU_RKNPU_IOCTL_SUBMIT, &s));
    close(fd2);

    /* timeouts: 0 gives up at once; mask 5 is never committed; a fault hangs */
    s = submit_args(&j, 1, 1);
    s.timeout = 0;
    CHECK_EQ_INT(-ETIMEDOUT, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    s = submit_args(&j, 5, 1);
    s.timeout = 50;
    t0 = kt_now();
    CHECK_EQ_INT(-ETIMEDOUT, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    CHECK(kt_now() - t0 >= 0.045);
    CHECK_EQ_INT(0, (int)s.task_counter);
    struct npu_kdouble_stats st0, st1;
    npu_kdouble_get_stats(&st0);
    kt_add_prog(j.rc.map, 0x00100000u, (uint32_t)j.y.c.dma_addr, (uint32_t)j.z.c.dma_addr, 64, 0,
                0);
    s = submit_args(&j, 4, 1);
    s.timeout = 50;
    CHECK_EQ_INT(-ETIMEDOUT, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    npu_kdouble_get_stats(&st1);
    CHECK_EQ_INT(1, (int)(st1.jobs_failed - st0.jobs_failed));
    CHECK(strstr(st1.last_dmesg, "failed to wait job") != NULL);
    job_free(fd, &j);
}

static void
test_cache_model(int fd)
{
    /* cacheable data BOs: the NPU sees CPU writes only after TO_DEVICE, the CPU sees NPU
     * writes only after FROM_DEVICE */
    struct job j;
    job_make(fd, &j, 32, DATA_FLAGS, 1, 21);
    struct npu_rknpu_submit s = submit_args(&j, 1, 1);
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    sync_obj(fd, &j.z, NPU_RKNPU_MEM_SYNC_FROM_DEVICE);
    int zeros = 0;
    for (int i = 0; i < 32 * 16; i++)
        zeros += ((int8_t *)j.z.map)[i] == 0;
    CHECK_EQ_INT(32 * 16, zeros); /* it added what memory held: zeros */
    sync_obj(fd, &j.x, NPU_RKNPU_MEM_SYNC_TO_DEVICE);
    sync_obj(fd, &j.y, NPU_RKNPU_MEM_SYNC_TO_DEVICE);
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    CHECK(memcmp(j.z.map, j.ref, 32 * 16) != 0); /* not yet invalidated: stale zeros */
    CHECK(job_ok(fd, &j));
    /* A store dirties its line whatever the value: zeros stored over a CPU view that
     * already holds zeros, while the NPU has since written the memory, reach the device
     * when cleaned (a runtime writing the same input again into reused arena memory). */
    memset(j.z.map, 0, 32 * 16);
    sync_obj(fd, &j.z, NPU_RKNPU_MEM_SYNC_TO_DEVICE);
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s)); /* memory: the sums again */
    memset(j.z.map, 0, 32 * 16);                               /* the same bytes as the view */
    sync_obj(fd, &j.z, NPU_RKNPU_MEM_SYNC_TO_DEVICE);
    sync_obj(fd, &j.z, NPU_RKNPU_MEM_SYNC_FROM_DEVICE);
    zeros = 0;
    for (int i = 0; i < 32 * 16; i++)
        zeros += ((int8_t *)j.z.map)[i] == 0;
    CHECK_EQ_INT(32 * 16, zeros);
    job_free(fd, &j);
}

static void
test_cores(int fd)
{
    /* masks 1+2 ("two cores": core i reads subcore_task[i]) and 7 ([i + 2]) */
    struct job j[3];
    struct npu_kdouble_stats st0, st1;
    for (int i = 0; i < 3; i++)
        job_make(fd, &j[i], 128, WC_FLAGS, 1, 31 + i);
    struct kbo task;
    CHECK_EQ_INT(0, kcreate(fd, 3 * 40, TASK_FLAGS, &task));
    for (int i = 0; i < 3; i++)
        memcpy((uint8_t *)task.map + 40 * i, j[i].task.map, 40);
    struct npu_rknpu_submit s;
    memset(&s, 0, sizeof(s));
    s.flags = NPU_RKNPU_JOB_PC | NPU_RKNPU_JOB_PINGPONG;
    s.timeout = 6000;
    s.task_number = 2;
    s.task_obj_addr = task.c.obj_addr;
    s.core_mask = 3;
    s.subcore_task[0] = (struct npu_rknpu_subcore_task){0, 1};
    s.subcore_task[1] = (struct npu_rknpu_subcore_task){1, 1};
    npu_kdouble_get_stats(&st0);
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    npu_kdouble_get_stats(&st1);
    CHECK(job_ok(fd, &j[0]) && job_ok(fd, &j[1]));
    CHECK_EQ_INT(1, (int)(st1.launches[0] - st0.launches[0]));
    CHECK_EQ_INT(1, (int)(st1.launches[1] - st0.launches[1]));
    CHECK_EQ_INT(0, (int)(st1.launches[2] - st0.launches[2]));
    /* task_counter is submit.task_number on success (rknpu_job_wait) */
    CHECK_EQ_INT(2, (int)s.task_counter);

    for (int i = 0; i < 3; i++)
        memset(j[i].z.map, 0, 128 * 16);
    s.core_mask = 7;
    s.task_number = 3;
    s.subcore_task[0] = (struct npu_rknpu_subcore_task){0, 0};
    s.subcore_task[1] = (struct npu_rknpu_subcore_task){0, 0};
    for (uint32_t i = 0; i < 3; i++)
        s.subcore_task[i + 2] = (struct npu_rknpu_subcore_task){i, 1};
    npu_kdouble_get_stats(&st0);
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_SUBMIT, &s));
    npu_kdouble_get_stats(&st1);
    for (int i = 0; i < 3; i++) {
        CHECK(job_ok(fd, &j[i]));
        CHECK_EQ_INT(1, (int)(st1.launches[i] - st0.launches[i]));
    }
    kfree(fd, &task);
    for (int i = 0; i < 3; i++)
        job_free(fd, &j[i]);
}

static void
test_old_driver(void)
{
    /* a 0.8.x driver has the 40-byte struct; with strict sizes the 48-byte form fails */
    setenv("NPU_KDOUBLE_RKNPU_VERSION", "0.8.2", 1);
    setenv("NPU_KDOUBLE_STRICT_SIZE", "1", 1);
    int fd = kt_open("dri/card1");
    unsetenv("NPU_KDOUBLE_RKNPU_VERSION");
    unsetenv("NPU_KDOUBLE_STRICT_SIZE");
    uint32_t v = 0;
    CHECK_EQ_INT(0, action(fd, NPU_RKNPU_GET_DRV_VERSION, &v));
    CHECK_EQ_INT(802, (int)v);
    struct npu_rknpu_mem_create c;
    memset(&c, 0, sizeof(c));
    c.size = 4096;
    CHECK_EQ_INT(-ENOTTY, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_CREATE, &c));
    struct npu_rknpu_mem_create_v1 c1;
    memset(&c1, 0, sizeof(c1));
    c1.size = 4096;
    CHECK_EQ_INT(0, kt_ioctl(fd, NPU_RKNPU_IOCTL_MEM_CREATE_V1, &c1));
    close(fd); /* the file's handles go with it */
}

int
main(void)
{
    CHECK(npu_kdouble_present());
    test_nodes();
    int fd = kt_open("dri/card1");
    CHECK(fd >= 0);
    test_raw_layout(fd);
    test_actions(fd);
    test_memory(fd);
    test_submit(fd);
    test_cache_model(fd);
    test_cores(fd);
    close(fd);
    test_old_driver();
    struct npu_kdouble_stats st;
    npu_kdouble_get_stats(&st);
    CHECK_EQ_INT(0, (int)st.mmaps_live);
    return npu_test_done("kdouble-rknpu-abi");
}
