/* SPDX-License-Identifier: MIT */
/*
 * test-probe.c: backend selection against the kernel double. "auto" takes rknpu, then
 * rocket, then the simulator, and says why it passed over each (no node with the driver,
 * permission denied, unknown driver version); naming a backend gives the matching status:
 * NPU_ERR_NO_DEVICE, NPU_ERR_PERMISSION (with the udev hint), NPU_ERR_VERSION.
 */
#include <stdlib.h>

#include "npu-kdouble.h"
#include "npu-test.h"
#include "npu/npu-device.h"

static const char *dev_dir;

static void
env(const char *which, const char *eacces, const char *version)
{
    setenv("NPU_DEV_DIR", dev_dir, 1);
    setenv("NPU_KDOUBLE", which, 1);
    if (eacces)
        setenv("NPU_KDOUBLE_EACCES", eacces, 1);
    else
        unsetenv("NPU_KDOUBLE_EACCES");
    if (version)
        setenv("NPU_KDOUBLE_RKNPU_VERSION", version, 1);
    else
        unsetenv("NPU_KDOUBLE_RKNPU_VERSION");
    unsetenv("NPU_KDOUBLE_ROCKET_UAPI");
}

/* The backend auto opens, "" if it fails. */
static void
auto_is(const char *expect)
{
    struct npu_device *dev = NULL;
    CHECK_EQ_INT(NPU_OK, npu_device_open("auto", &dev));
    struct npu_device_info info;
    memset(&info, 0, sizeof(info));
    if (dev)
        npu_device_get_info(dev, &info);
    CHECK_STR(expect, info.backend);
    npu_device_close(dev);
}

static struct npu_backend_probe p[3];

static void
probe(void)
{
    CHECK_EQ_INT(3, (int)npu_device_probe_backends(p, 3));
    CHECK_STR("rknpu", p[0].name);
    CHECK_STR("rocket", p[1].name);
    CHECK_STR("sim", p[2].name);
    CHECK_EQ_INT(NPU_OK, p[2].status);
}

int
main(void)
{
    CHECK(npu_kdouble_present());
    dev_dir = getenv("NPU_DEV_DIR");
    CHECK(dev_dir != NULL);
    struct npu_device *dev = NULL;

    env("both", NULL, NULL);
    probe();
    CHECK_EQ_INT(NPU_OK, p[0].status);
    CHECK(strstr(p[0].reason, "rknpu 0.9.8") != NULL);
    CHECK_EQ_INT(NPU_OK, p[1].status);
    auto_is("rknpu");

    env("rocket", NULL, NULL);
    probe();
    CHECK_EQ_INT(NPU_ERR_NO_DEVICE, p[0].status);
    CHECK(strstr(p[0].reason, "node with driver rknpu") != NULL);
    CHECK(strstr(p[0].reason, "card0=rockchip") != NULL); /* the display node was asked */
    auto_is("rocket");
    CHECK_EQ_INT(NPU_ERR_NO_DEVICE, npu_device_open("rknpu", &dev));
    CHECK(dev == NULL);

    env("rknpu", "dri/card1,dri/renderD129", NULL);
    probe();
    CHECK_EQ_INT(NPU_ERR_PERMISSION, p[0].status);
    CHECK(strstr(p[0].reason, "permission denied") != NULL);
    CHECK(strstr(p[0].reason, "udev") != NULL);
    CHECK_EQ_INT(NPU_ERR_NO_DEVICE, p[1].status);
    auto_is("sim");
    CHECK_EQ_INT(NPU_ERR_PERMISSION, npu_device_open("rknpu", &dev));

    /* one node refused, the other open: the render node serves */
    env("rknpu", "dri/card1", NULL);
    probe();
    CHECK_EQ_INT(NPU_OK, p[0].status);
    CHECK(strstr(p[0].reason, "renderD129") != NULL);

    env("rocket", "accel/accel0", NULL);
    probe();
    CHECK_EQ_INT(NPU_ERR_PERMISSION, p[1].status);
    CHECK(strstr(p[1].reason, "accel0 permission denied") != NULL);
    CHECK_EQ_INT(NPU_ERR_PERMISSION, npu_device_open("rocket", &dev));

    env("both", NULL, "1.2.0");
    probe();
    CHECK_EQ_INT(NPU_ERR_VERSION, p[0].status);
    CHECK(strstr(p[0].reason, "1.2.0") != NULL);
    auto_is("rocket"); /* passed over, not fatal */
    CHECK_EQ_INT(NPU_ERR_VERSION, npu_device_open("rknpu", &dev));
    setenv("NPU_RKNPU_ALLOW_VERSION", "1", 1);
    CHECK_EQ_INT(NPU_OK, npu_device_open("rknpu", &dev));
    npu_device_close(dev);
    unsetenv("NPU_RKNPU_ALLOW_VERSION");

    env("rocket", NULL, NULL);
    setenv("NPU_KDOUBLE_ROCKET_UAPI", "1", 1);
    probe();
    CHECK_EQ_INT(NPU_ERR_VERSION, p[1].status);
    CHECK(strstr(p[1].reason, "PREP_BO") != NULL);
    unsetenv("NPU_KDOUBLE_ROCKET_UAPI");

    setenv("NPU_DEV_DIR", "/nonexistent-npu-dev", 1);
    probe();
    CHECK_EQ_INT(NPU_ERR_NO_DEVICE, p[0].status);
    CHECK_EQ_INT(NPU_ERR_NO_DEVICE, p[1].status);
    auto_is("sim");

    struct npu_kdouble_stats st;
    npu_kdouble_get_stats(&st);
    CHECK_EQ_INT(0, (int)st.bos_live); /* probes leave nothing behind */
    return npu_test_done("probe");
}
