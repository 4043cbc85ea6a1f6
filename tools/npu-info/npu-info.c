/* SPDX-License-Identifier: MIT */
/*
 * npu-info: opens an NPU device and prints what it is: the backend, its
 * cores, the hardware and driver versions and, for the simulator, its
 * version, whether it runs strict or lenient and the timing model its
 * figures come from. With "auto" (the default) it first says which backend
 * was chosen and why each one before it was passed over (no node with its
 * driver, permission denied, unknown driver version). Last, the host side: the fp32 GEMM
 * path the CPU executor runs on this machine and why (never a generic BLAS kernel silently).
 *
 *   npu-info [-b BACKEND] [--lenient]      BACKEND: auto (default), sim, rknpu, rocket
 */
#include <stdio.h>
#include <string.h>

#include "npu/npu-cpu.h"
#include "npu/npu-device.h"

static int
usage(FILE *f)
{
    fprintf(f, "usage: npu-info [-b auto|sim|rknpu|rocket] [--lenient]\n");
    return f == stdout ? 0 : 2;
}

int
main(int argc, char **argv)
{
    const char *backend = "auto";
    struct npu_device_options opts = {.strict = -1};
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-b") || !strcmp(argv[i], "--backend")) && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--lenient"))
            opts.strict = 0;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return usage(stdout);
        else
            return usage(stderr);
    }
    if (!strcmp(backend, "auto")) {
        struct npu_backend_probe p[8];
        unsigned n = npu_device_probe_backends(p, 8);
        const char *chosen = NULL;
        for (unsigned i = 0; i < n && i < 8; i++) {
            if (!chosen && p[i].status == NPU_OK)
                chosen = p[i].name;
            printf("probe:        %-7s %s: %s\n", p[i].name,
                   p[i].status == NPU_OK ? (chosen == p[i].name ? "chosen" : "available")
                                         : npu_status_str(p[i].status),
                   p[i].reason);
        }
    }
    struct npu_device *dev = NULL;
    enum npu_status st = npu_device_open_ex(backend, &opts, &dev);
    if (st != NPU_OK) {
        fprintf(stderr, "npu-info: cannot open backend '%s': %s\n", backend, npu_status_str(st));
        return 1;
    }
    struct npu_device_info info;
    st = npu_device_get_info(dev, &info);
    if (st != NPU_OK) {
        fprintf(stderr, "npu-info: %s\n", npu_status_str(st));
        npu_device_close(dev);
        return 1;
    }
    printf("backend:      %s\n", info.backend);
    printf("description:  %s\n", info.description);
    printf("cores:        %u\n", info.n_cores);
    printf("hardware:     %s", info.hw_version_str);
    if (info.hw_version)
        printf(" (0x%08x)", info.hw_version);
    printf("\n");
    printf("driver:       %s (%u)\n", info.drv_version_str, info.drv_version);
    if (info.flags & NPU_DEVICE_SIMULATED)
        printf("mode:         %s\n", info.flags & NPU_DEVICE_STRICT
                                         ? "strict (refuses unverified register patterns)"
                                         : "lenient (warns on unverified register patterns)");
    if (info.flags & NPU_DEVICE_MODELED_TIMING)
        printf("timing:       modeled (%s)\n", info.timing_model);
    else
        printf("timing:       measured by the hardware\n");
    const char *why = NULL;
    const char *gemm = npu_cpu_gemm_path(&why);
    printf("cpu gemm:     %s: %s\n", gemm, why);
    printf("cpu const B:  %s\n", npu_cpu_gemm_const_path());
    printf("cpu int8:     %s\n", npu_cpu_int8_path());
    npu_device_close(dev);
    return 0;
}
