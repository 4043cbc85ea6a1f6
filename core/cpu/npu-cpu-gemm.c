/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-gemm.c: the GEMM engine and the ops built on it (MatMul with numpy
 * batch broadcasting and 1-D operands, Gemm, MatMulInteger, QLinearMatMul).
 *
 * fp32 GEMM goes to OpenBLAS (cblas_sgemm) when the build found it, else to
 * our own blocked kernel: B packed into 16-column panels, A into 6-row
 * panels, a 6x16 register-tiled micro-kernel written with GCC vector types
 * (compiled for the baseline ISA and, on x86-64, also for AVX2+FMA with
 * load-time dispatch; on aarch64 an 8x12 NEON kernel in arm_neon.h intrinsics,
 * npu-cpu-gemm-neon.c, takes its place). Threads never meet inside one GEMM call: the batched
 * driver cuts every problem into tiles whose size depends on the shape alone
 * and runs one single-threaded GEMM per tile, so the result is bit-identical
 * for any thread count. OpenBLAS is therefore pinned to one thread (its own
 * pool would otherwise compete with ours for the same cores).
 */
#include <stdio.h>
#include <strings.h>

#include "npu-cpu-gemm-packed.h"
#include "npu-cpu-internal.h"
#include "npu-cpu-qgemm.h"

#ifdef NPU_HAVE_BLAS
#include <cblas.h>
#endif
#ifdef NPU_CPU_NEON_GEMM
#include "npu-cpu-gemm-neon.h"
#endif

/* ---- BLAS ----------------------------------------------------------------------------------- */

#ifdef NPU_HAVE_BLAS
#if defined(NPU_HAVE_OPENBLAS_THREADS) && defined(__GNUC__) && defined(__ELF__)
/* OpenBLAS's own (not in cblas.h): stops its server threads (it starts them again if a later
 * call wants more than one thread). Weak: a build of OpenBLAS without threads lacks it. */
extern int blas_thread_shutdown_(void) __attribute__((weak));
#define CPU_BLAS_SHUTDOWN 1
#endif
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
/* One BLAS thread (our pool splits the work), and no idle OpenBLAS server threads: a pthread
 * OpenBLAS starts nproc - 1 of them when the library loads, and each spins (sched_yield) for
 * 2^28 cycles, about 0.1 s, before it sleeps. With our own workers that made one thread too
 * many per CPU for the first ~0.1 s of every process: the "2-thread slow start", whose first
 * 7-10 MobileNetV2 runs at 2 threads took 5 ms instead of 2.6 ms. */
static void
blas_init(void)
{
#ifdef NPU_HAVE_OPENBLAS_THREADS
    openblas_set_num_threads(1); /* first: it restarts the server threads if they are down */
#endif
#ifdef CPU_BLAS_SHUTDOWN
    if (blas_thread_shutdown_)
        blas_thread_shutdown_();
#endif
}
#endif

void
cpu_blas_settle(void)
{
#ifdef NPU_HAVE_BLAS
    pthread_once(&blas_once, blas_init);
#endif
}

/* BLAS can be switched off at run time (NPU_CPU_BLAS=0 in the environment, or
 * cpu_gemm_use_blas(false) from tests) to exercise and measure the fallback kernel. */
static int blas_on = -1; /* -1: not decided yet */

static bool
blas_enabled(void)
{
    int v = __atomic_load_n(&blas_on, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("NPU_CPU_BLAS");
        v = cpu_have_blas() && !(e && !strcmp(e, "0"));
        __atomic_store_n(&blas_on, v, __ATOMIC_RELAXED);
    }
    return v;
}

#ifdef NPU_HAVE_BLAS
/* Whether a GEMM goes to BLAS: switched on, K > 0, and every size fitting BLAS's int
 * arguments. Pins BLAS to one thread on first use (our pool splits the work). */
static bool
blas_takes(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc)
{
    if (M <= INT32_MAX && N <= INT32_MAX && K <= INT32_MAX && lda <= INT32_MAX &&
        ldb <= INT32_MAX && ldc <= INT32_MAX && K > 0 && blas_enabled()) {
        pthread_once(&blas_once, blas_init);
        return true;
    }
    return false;
}
#endif

bool
cpu_have_blas(void)
{
#ifdef NPU_HAVE_BLAS
    return true;
#else
    return false;
#endif
}

/* ---- which fp32 GEMM runs, and why ------------------------------------------------------------
 * Debian's OpenBLAS is built with DYNAMIC_ARCH and picks its kernel set when it is loaded, from
 * a table of CPUs it knows. A CPU newer than that table gets a generic set ("Prescott": SSE3,
 * a quarter of an AVX-512 machine's speed), silently; the core it picked is only readable
 * after the fact (openblas_get_corename), and OPENBLAS_CORETYPE is read at load time, before
 * any code of ours runs. So the fp32 path is decided here, once: the ISA level of the kernel
 * set OpenBLAS runs is compared with the CPU's own (cpuid), and when OpenBLAS's is lower our
 * packed micro-kernels (AVX2+FMA or AVX-512, chosen by CPU feature) take the fp32 GEMMs.
 * NPU_CPU_GEMM=openblas|own forces a path. fp64 stays with BLAS (our fp64 loop is plain).
 * aarch64 has no ISA levels to compare: there cpu_openblas_arm_misfit() judges the core set
 * OpenBLAS picked against the CPU's cores (MIDR_EL1), and a misfit runs our NEON 8x12 kernel. */

/* ISA levels: 0 scalar/SSE, 1 AVX, 2 AVX2+FMA, 3 AVX-512F; NEON counts as 2 on aarch64 */
static int
cpu_isa_level(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 3;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 2;
    if (__builtin_cpu_supports("avx"))
        return 1;
    return 0;
#elif defined(__aarch64__)
    return 2;
#else
    return 0;
#endif
}

static const char *
isa_name(int level)
{
#if defined(__aarch64__)
    return level >= 2 ? "NEON" : "scalar";
#else
    static const char *const n[] = {"SSE", "AVX", "AVX2+FMA", "AVX-512"};
    return n[level < 0 ? 0 : level > 3 ? 3 : level];
#endif
}

/* The ISA level of an OpenBLAS x86-64 kernel set, by the core name OpenBLAS reports;
 * -1 for a name not in this table (then it is trusted). */
int
cpu_openblas_core_level(const char *core)
{
    static const struct {
        const char *name;
        int level;
    } t[] = {
        {"SkylakeX", 3},    {"Cooperlake", 3},  {"SapphireRapids", 3}, {"Haswell", 2},
        {"Zen", 2},         {"Sandybridge", 1}, {"Bulldozer", 1},      {"Piledriver", 1},
        {"Steamroller", 1}, {"Excavator", 1},   {"Prescott", 0},       {"Core2", 0},
        {"Penryn", 0},      {"Dunnington", 0},  {"Nehalem", 0},        {"Atom", 0},
        {"Nano", 0},        {"Opteron", 0},     {"Opteron(SSE3)", 0},  {"Barcelona", 0},
        {"Bobcat", 0},      {"Katmai", 0},      {"Coppermine", 0},     {"Northwood", 0},
        {"Banias", 0},      {"Athlon", 0},      {"Generic", 0},
    };
    if (!core)
        return -1;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcasecmp(core, t[i].name))
            return t[i].level;
    return -1;
}

/* aarch64 core parts (MIDR_EL1 bits 15:4 of implementer 0x41, Arm) of little, in-order cores */
static bool
arm_part_little(int part)
{
    return part == 0xd03 || part == 0xd04 || part == 0xd05 || part == 0xd46; /* A53 A35 A55 A510 */
}

static const char *
arm_part_name(int part)
{
    switch (part) {
    case 0xd03: return "Cortex-A53";
    case 0xd05: return "Cortex-A55";
    case 0xd07: return "Cortex-A57";
    case 0xd08: return "Cortex-A72";
    case 0xd09: return "Cortex-A73";
    case 0xd0a: return "Cortex-A75";
    case 0xd0b: return "Cortex-A76";
    case 0xd0c: return "Neoverse-N1";
    case 0xd0d: return "Cortex-A77";
    case 0xd41: return "Cortex-A78";
    default: return NULL;
    }
}

bool
cpu_openblas_arm_misfit(const char *core, int big_part, char *why, size_t n)
{
    char cpu[48] = "";
    const char *pn = big_part >= 0 ? arm_part_name(big_part) : NULL;
    if (pn)
        snprintf(cpu, sizeof(cpu), "%s, part 0x%03x", pn, big_part);
    else if (big_part >= 0)
        snprintf(cpu, sizeof(cpu), "part 0x%03x", big_part);
    else
        snprintf(cpu, sizeof(cpu), "MIDR_EL1 not readable");
    if (core && !strcasecmp(core, "armv8")) {
        /* OpenBLAS 0.3.21 maps no Cortex-A76 (part 0xd0b) and falls back to this set */
        snprintf(why, n,
                 "OpenBLAS fell back to its generic 'armv8' kernels: it does not know this CPU "
                 "(%s); ours are NEON 8x12",
                 cpu);
        return true;
    }
    if (core && (!strcasecmp(core, "cortexa53") || !strcasecmp(core, "cortexa55")) &&
        big_part >= 0 && !arm_part_little(big_part)) {
        /* it reads the MIDR of the core it was loaded on: an RK3588 process started on one of
         * its A55s gets kernels scheduled for in-order cores, and keeps them on the A76s */
        snprintf(why, n,
                 "OpenBLAS picked its '%s' kernels (for in-order little cores: it was loaded on "
                 "one) on a CPU with bigger cores (%s); ours are NEON 8x12",
                 core, cpu);
        return true;
    }
    if (!core)
        snprintf(why, n, "OpenBLAS does not name its core set; trusted (%s)", cpu);
    else
        snprintf(why, n,
                 "OpenBLAS picked its '%s' kernels, a set for a core it knows; trusted (%s)", core,
                 cpu);
    return false;
}

#if defined(__aarch64__)
/* the MIDR part of the biggest core (the first core that is not a little one, else the first
 * core); -1 when the kernel does not show MIDR_EL1 (qemu-user, old kernels) */
static int
arm_big_part(void)
{
    int first = -1;
    for (int c = 0; c < 64; c++) {
        char path[96], line[64];
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/regs/identification/midr_el1",
                 c);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        bool ok = fgets(line, sizeof(line), f) != NULL;
        fclose(f);
        if (!ok)
            continue;
        unsigned long midr = strtoul(line, NULL, 16);
        if (((midr >> 24) & 0xff) != 0x41)
            continue;
        int part = (int)((midr >> 4) & 0xfff);
        if (!arm_part_little(part))
            return part;
        if (first < 0)
            first = part;
    }
    return first;
}
#endif

static pthread_once_t path_once = PTHREAD_ONCE_INIT;
static bool path_own;      /* fp32 GEMM on our micro-kernels although BLAS is there */
static char path_why[256]; /* the reason, for npu-info */
static char path_name[96]; /* "OpenBLAS 0.3.21 (Haswell kernels)", "own AVX-512 6x32" */

static void own_kernel_name(char *buf, size_t n);

static void
path_decide(void)
{
    int cpu = cpu_isa_level();
    const char *force = getenv("NPU_CPU_GEMM");
    char own[64];
    own_kernel_name(own, sizeof(own));
    if (!blas_enabled()) {
        path_own = true;
        snprintf(path_name, sizeof(path_name), "own %s", own);
        snprintf(path_why, sizeof(path_why), "%s",
                 cpu_have_blas() ? "BLAS switched off (NPU_CPU_BLAS=0)" : "built without OpenBLAS");
        return;
    }
    const char *core = NULL;
#ifdef NPU_HAVE_OPENBLAS_CORENAME
    core = openblas_get_corename();
#endif
    int blas = -1;
#if defined(__x86_64__)
    blas = cpu_openblas_core_level(core);
#endif
    if (force && !strcmp(force, "own")) {
        path_own = true;
        snprintf(path_why, sizeof(path_why), "NPU_CPU_GEMM=own");
    } else if (force && !strcmp(force, "openblas")) {
        path_own = false;
        snprintf(path_why, sizeof(path_why), "NPU_CPU_GEMM=openblas");
    }
#if defined(__aarch64__) && defined(NPU_CPU_NEON_GEMM)
    else if (cpu_openblas_arm_misfit(core, arm_big_part(), path_why, sizeof(path_why))) {
        path_own = true;
    } else if (blas < 0) {
        path_own = false; /* path_why says why OpenBLAS fits */
    }
#endif
    else if (blas >= 0 && blas < cpu && cpu >= 2) {
        path_own = true;
        snprintf(path_why, sizeof(path_why),
                 "OpenBLAS picked its '%s' kernels (%s) on a CPU with %s (%s); ours use %s", core,
                 isa_name(blas), isa_name(cpu),
                 blas == 0 ? "a generic fallback: it does not know this CPU"
                           : "it does not know this CPU's wider units",
                 isa_name(cpu));
    } else {
        path_own = false;
        if (blas >= 0)
            snprintf(path_why, sizeof(path_why), "OpenBLAS's '%s' kernels use %s, the CPU has %s",
                     core, isa_name(blas), isa_name(cpu));
        else
            snprintf(path_why, sizeof(path_why), "OpenBLAS core '%s' (CPU: %s)",
                     core ? core : "unknown", isa_name(cpu));
    }
    if (force && force[0] && strcmp(force, "own") && strcmp(force, "openblas")) {
        size_t n = strlen(path_why);
        snprintf(path_why + n, sizeof(path_why) - n,
                 " (NPU_CPU_GEMM=%.32s ignored: not 'own' or 'openblas')", force);
    }
    if (path_own)
        snprintf(path_name, sizeof(path_name), "own %s", own);
    else
        snprintf(path_name, sizeof(path_name), "OpenBLAS (%s kernels)", core ? core : "?");
}

const char *
npu_cpu_gemm_path(const char **why)
{
    pthread_once(&path_once, path_decide);
    if (why)
        *why = path_why;
    return path_name;
}

/* fp32 GEMMs go to BLAS unless the path decided on our own kernels */
static bool
sgemm_blas(void)
{
    pthread_once(&path_once, path_decide);
    return !path_own;
}

void
cpu_gemm_use_blas(bool on)
{
    pthread_once(&path_once, path_decide);
    __atomic_store_n(&blas_on, on && cpu_have_blas(), __ATOMIC_RELAXED);
    path_own = !(on && cpu_have_blas());
}

/* ---- fallback fp32 GEMM --------------------------------------------------------------------- */

#define MR 6
#define NRMAX 32
#define KC 256
#define MC 120  /* multiple of MR */
#define NC 1024 /* multiple of NRMAX */

/* Unaligned 8-lane loads and stores as macros, not functions: a function taking or returning
 * v8f has a different ABI with and without AVX, which clang refuses to call from the
 * AVX2 clone below (the fuzzing build is clang). */
#define ld8(v, p) memcpy(&(v), (p), sizeof(v))
#define st8(p, v) memcpy((p), &(v), sizeof(v))

/* tile[MR][16] = Ap . Bp over kc: 12 accumulators of 8 lanes (AVX2, NEON) */
#define UKERNEL16_BODY                                                                             \
    v8f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};                          \
    v8f c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};                          \
    for (int64_t k = 0; k < kc; k++) {                                                             \
        v8f b0, b1;                                                                                \
        ld8(b0, bp), ld8(b1, bp + 8);                                                              \
        c00 += ap[0] * b0;                                                                         \
        c01 += ap[0] * b1;                                                                         \
        c10 += ap[1] * b0;                                                                         \
        c11 += ap[1] * b1;                                                                         \
        c20 += ap[2] * b0;                                                                         \
        c21 += ap[2] * b1;                                                                         \
        c30 += ap[3] * b0;                                                                         \
        c31 += ap[3] * b1;                                                                         \
        c40 += ap[4] * b0;                                                                         \
        c41 += ap[4] * b1;                                                                         \
        c50 += ap[5] * b0;                                                                         \
        c51 += ap[5] * b1;                                                                         \
        ap += MR;                                                                                  \
        bp += 16;                                                                                  \
    }                                                                                              \
    st8(tile + 0 * 16, c00), st8(tile + 0 * 16 + 8, c01);                                          \
    st8(tile + 1 * 16, c10), st8(tile + 1 * 16 + 8, c11);                                          \
    st8(tile + 2 * 16, c20), st8(tile + 2 * 16 + 8, c21);                                          \
    st8(tile + 3 * 16, c30), st8(tile + 3 * 16 + 8, c31);                                          \
    st8(tile + 4 * 16, c40), st8(tile + 4 * 16 + 8, c41);                                          \
    st8(tile + 5 * 16, c50), st8(tile + 5 * 16 + 8, c51);

static void
ukernel16(int64_t kc, const float *ap, const float *bp, float *tile)
{
    UKERNEL16_BODY
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(NPU_CPU_NO_CLONES)
/* x86-64: the 16-column kernel again for AVX2+FMA, and a 32-column one for AVX-512 (the
 * same 12 accumulators, twice as wide: half the instructions per FMA); chosen at run time */
#define HAVE_UKERNEL32 1
typedef float v16f __attribute__((vector_size(64), aligned(4)));

__attribute__((target("avx2,fma"))) static void
ukernel16_avx2(int64_t kc, const float *ap, const float *bp, float *tile)
{
    UKERNEL16_BODY
}

__attribute__((target("avx512f"))) static void
ukernel32(int64_t kc, const float *ap, const float *bp, float *tile)
{
    v16f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
    v16f c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};
    for (int64_t k = 0; k < kc; k++) {
        v16f b0, b1;
        memcpy(&b0, bp, sizeof(b0));
        memcpy(&b1, bp + 16, sizeof(b1));
        c00 += ap[0] * b0;
        c01 += ap[0] * b1;
        c10 += ap[1] * b0;
        c11 += ap[1] * b1;
        c20 += ap[2] * b0;
        c21 += ap[2] * b1;
        c30 += ap[3] * b0;
        c31 += ap[3] * b1;
        c40 += ap[4] * b0;
        c41 += ap[4] * b1;
        c50 += ap[5] * b0;
        c51 += ap[5] * b1;
        ap += MR;
        bp += 32;
    }
    v16f acc[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
    memcpy(tile, acc, sizeof(acc));
}
#endif

typedef void (*ukernel_fn)(int64_t kc, const float *ap, const float *bp, float *tile);

/* The micro-kernel and its panel width for this CPU, decided once. */
static pthread_once_t uk_once = PTHREAD_ONCE_INIT;
static ukernel_fn uk_fn = ukernel16;
static int uk_nr = 16;
#ifdef NPU_CPU_NEON_GEMM
static bool uk_neon = true; /* aarch64: the NEON 8x12 GEMM of npu-cpu-gemm-neon.c */
#endif
static void
uk_pick(void)
{
#ifdef HAVE_UKERNEL32
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        uk_fn = ukernel16_avx2;
    if (__builtin_cpu_supports("avx512f")) {
        uk_fn = ukernel32;
        uk_nr = 32;
    }
#endif
}

static void
own_kernel_name(char *buf, size_t n)
{
    pthread_once(&uk_once, uk_pick);
#ifdef HAVE_UKERNEL32
    if (uk_fn == ukernel32)
        snprintf(buf, n, "AVX-512 6x32 micro-kernel");
    else if (uk_fn == ukernel16_avx2)
        snprintf(buf, n, "AVX2+FMA 6x16 micro-kernel");
    else
        snprintf(buf, n, "baseline-ISA 6x16 micro-kernel");
#elif defined(NPU_CPU_NEON_GEMM)
    snprintf(buf, n, uk_neon ? "NEON 8x12 micro-kernel" : "NEON 6x16 micro-kernel (vector types)");
#elif defined(__aarch64__)
    snprintf(buf, n, "NEON 6x16 micro-kernel");
#else
    snprintf(buf, n, "portable 6x16 micro-kernel");
#endif
}

int
cpu_gemm_kernel_width(int want)
{
    pthread_once(&uk_once, uk_pick);
#ifdef NPU_CPU_NEON_GEMM
    if (want == 12 || want == 16)
        uk_neon = want == 12;
    if (uk_neon)
        return 12;
#endif
    if (want == 16) {
        uk_fn = ukernel16;
        uk_nr = 16;
#ifdef HAVE_UKERNEL32
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            uk_fn = ukernel16_avx2;
#endif
    }
#ifdef HAVE_UKERNEL32
    if (want == 32 && __builtin_cpu_supports("avx512f")) {
        uk_fn = ukernel32;
        uk_nr = 32;
    }
#endif
    return uk_nr;
}

/* C[mr x nr] = tile + (first ? beta * C : C); beta 0 ignores C (NaN there is not kept) */
CPU_HOT static void
tile_store(const float *tile, int nrw, float *c, int64_t ldc, int mr, int nr, float beta,
           bool first)
{
    for (int i = 0; i < mr; i++) {
        float *cr = c + i * ldc;
        const float *tr = tile + i * nrw;
        if (!first)
            for (int j = 0; j < nr; j++)
                cr[j] += tr[j];
        else if (beta == 0.0f)
            for (int j = 0; j < nr; j++)
                cr[j] = tr[j];
        else
            for (int j = 0; j < nr; j++)
                cr[j] = beta * cr[j] + tr[j];
    }
}

/* Packs op(B)[pc:pc+kc, jc:jc+nc] into nrw-wide panels, zero padded. */
CPU_HOT static void
pack_b(bool tb, const float *B, int64_t ldb, int64_t pc, int64_t kc, int64_t jc, int64_t nc,
       int nrw, float *bp)
{
    for (int64_t j0 = 0; j0 < nc; j0 += nrw) {
        int64_t nr = nc - j0 < nrw ? nc - j0 : nrw;
        for (int64_t k = 0; k < kc; k++) {
            float *d = bp + k * nrw;
            if (!tb) {
                const float *s = B + (pc + k) * ldb + jc + j0;
                int64_t j = 0;
                for (; j < nr; j++)
                    d[j] = s[j];
                for (; j < nrw; j++)
                    d[j] = 0;
            } else {
                const float *s = B + (jc + j0) * ldb + pc + k;
                int64_t j = 0;
                for (; j < nr; j++)
                    d[j] = s[j * ldb];
                for (; j < nrw; j++)
                    d[j] = 0;
            }
        }
        bp += kc * nrw;
    }
}

/* Packs alpha * op(A)[ic:ic+mc, pc:pc+kc] into MR-high panels, zero padded. */
CPU_HOT static void
pack_a(bool ta, const float *A, int64_t lda, int64_t ic, int64_t mc, int64_t pc, int64_t kc,
       float alpha, float *ap)
{
    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
        int64_t mr = mc - i0 < MR ? mc - i0 : MR;
        for (int64_t k = 0; k < kc; k++) {
            float *d = ap + k * MR;
            int64_t i = 0;
            if (!ta)
                for (; i < mr; i++)
                    d[i] = alpha * A[(ic + i0 + i) * lda + pc + k];
            else
                for (; i < mr; i++)
                    d[i] = alpha * A[(pc + k) * lda + ic + i0 + i];
            for (; i < MR; i++)
                d[i] = 0;
        }
        ap += kc * MR;
    }
}

/* The packing buffers of a GEMM kernel: per thread, at least n floats, 64-byte aligned, kept
 * until the thread exits (grown when a kernel with larger blocks runs on the same thread: the
 * portable and the NEON kernel share it). NULL when out of memory. */
struct pack_buf {
    size_t n;
    float *p;
};
static pthread_key_t pack_key;
static pthread_once_t pack_once = PTHREAD_ONCE_INIT;
static void
pack_buf_free(void *v)
{
    struct pack_buf *b = v;
    free(b->p);
    free(b);
}
static void
pack_key_init(void)
{
    if (pthread_key_create(&pack_key, pack_buf_free))
        npu_die("pthread_key_create failed");
}

float *
cpu_gemm_pack_buffer(size_t n)
{
    pthread_once(&pack_once, pack_key_init);
    struct pack_buf *b = pthread_getspecific(pack_key);
    if (!b) {
        if (!(b = calloc(1, sizeof(*b))))
            return NULL;
        if (pthread_setspecific(pack_key, b)) {
            free(b);
            return NULL;
        }
    }
    if (b->n < n) {
        float *p;
        if (posix_memalign((void **)&p, 64, sizeof(float) * n))
            return NULL;
        free(b->p);
        b->p = p, b->n = n;
    }
    return b->p;
}

/* C[i][0..n) of rows [0, m): the epilogue (nothing when ep is NULL or empty) */
static void
epilogue_rows(const struct cpu_epilogue *ep, float *C, int64_t ldc, int64_t m, int64_t n)
{
    if (!ep)
        return;
    bool act = ep->act && ep->act->kind != CPU_ACT_NONE;
    if (!ep->bias_row && !ep->bias_col && !act)
        return;
    for (int64_t i = 0; i < m; i++) {
        float *c = C + i * ldc;
        if (ep->bias_col)
            for (int64_t q = 0; q < n; q++)
                c[q] += ep->bias_col[q];
        if (ep->bias_row) {
            float br = ep->bias_row[i];
            for (int64_t q = 0; q < n; q++)
                c[q] += br;
        }
        if (act)
            cpu_act_apply(ep->act, c, n);
    }
}

/* ---- few rows: M <= SMALL_M without packing ------------------------------------------------
 * A fully connected layer at batch 1 or a decoder step (M = 1) reads B once and does 2 FLOPs per
 * element of it: packing B into panels (a strided gather when B is transposed, as Linear's Gemm
 * exports it) and running the 6-row kernel on 1 row cost several times the product itself.
 * Here B is streamed once: with B [K, N], 32 columns of every row at a time, accumulated in
 * registers over all of K; with B^T [N, K], 4 dot products of contiguous rows at a time. */
#define SMALL_M 4

/* c = alpha * acc + (beta == 0 ? 0 : beta * c) */
static inline float
small_out(float acc, float alpha, float beta, const float *c)
{
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

/* B [K, N]: the rows of B are read in order (2048 columns of each at a time, accumulated in
 * L1 for every row of A), so B streams from memory sequentially; every output sums over k in
 * order. */
#define SMALL_NC 2048
CPU_HOT static void
small_m_nn(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
           const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    float acc[SMALL_M][SMALL_NC] __attribute__((aligned(64)));
    for (int64_t j0 = 0; j0 < N; j0 += SMALL_NC) {
        int64_t nc = N - j0 < SMALL_NC ? N - j0 : SMALL_NC;
        for (int64_t i = 0; i < M; i++)
            memset(acc[i], 0, sizeof(float) * (size_t)nc);
        int64_t k = 0;
        /* four rows of B per pass over acc (added in k order, as one at a time would): a
         * quarter of the loads and stores of acc, four streams of B in flight */
        for (; k + 4 <= K; k += 4) {
            const float *b0 = B + k * ldb + j0, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            for (int64_t i = 0; i < M; i++) {
                const float *a = A + i * lda + k;
                const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
                float *c = acc[i];
                for (int64_t q = 0; q < nc; q++) {
                    float v = c[q] + a0 * b0[q];
                    v = v + a1 * b1[q];
                    v = v + a2 * b2[q];
                    c[q] = v + a3 * b3[q];
                }
            }
        }
        for (; k < K; k++) {
            const float *b = B + k * ldb + j0;
            for (int64_t i = 0; i < M; i++) {
                const float a = A[i * lda + k];
                float *c = acc[i];
                for (int64_t q = 0; q < nc; q++)
                    c[q] += a * b[q];
            }
        }
        for (int64_t i = 0; i < M; i++) {
            float *c = C + i * ldc + j0;
            for (int64_t q = 0; q < nc; q++)
                c[q] = small_out(acc[i][q], alpha, beta, c + q);
        }
    }
}

/* sum of the 8 lanes, in a fixed order */
static inline float
hsum8(v8f v)
{
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

CPU_HOT static void
small_m_nt(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
           const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    const int64_t K8 = K & ~(int64_t)7;
    for (int64_t i = 0; i < M; i++) {
        const float *a = A + i * lda;
        int64_t j = 0;
        for (; j + 4 <= N; j += 4) {
            const float *b0 = B + j * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            v8f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
            for (int64_t k = 0; k < K8; k += 8) {
                v8f av, x0, x1, x2, x3;
                ld8(av, a + k), ld8(x0, b0 + k), ld8(x1, b1 + k), ld8(x2, b2 + k), ld8(x3, b3 + k);
                s0 += av * x0;
                s1 += av * x1;
                s2 += av * x2;
                s3 += av * x3;
            }
            float r0 = hsum8(s0), r1 = hsum8(s1), r2 = hsum8(s2), r3 = hsum8(s3);
            for (int64_t k = K8; k < K; k++) {
                r0 += a[k] * b0[k];
                r1 += a[k] * b1[k];
                r2 += a[k] * b2[k];
                r3 += a[k] * b3[k];
            }
            float *c = C + i * ldc + j;
            c[0] = small_out(r0, alpha, beta, c);
            c[1] = small_out(r1, alpha, beta, c + 1);
            c[2] = small_out(r2, alpha, beta, c + 2);
            c[3] = small_out(r3, alpha, beta, c + 3);
        }
        for (; j < N; j++) {
            const float *b = B + j * ldb;
            v8f sv = {0};
            for (int64_t k = 0; k < K8; k += 8) {
                v8f av, x;
                ld8(av, a + k), ld8(x, b + k);
                sv += av * x;
            }
            float r = hsum8(sv);
            for (int64_t k = K8; k < K; k++)
                r += a[k] * b[k];
            C[i * ldc + j] = small_out(r, alpha, beta, C + i * ldc + j);
        }
    }
}

static void
sgemm_fallback(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
               const struct cpu_epilogue *ep)
{
    if (M <= SMALL_M && !ta && K > 0) {
        bool nt_neon = false;
#ifdef NPU_CPU_NEON_GEMM
        if (tb && uk_neon) {
            cpu_sgemm_neon_small_nt(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            nt_neon = true;
        }
#endif
        if (tb && !nt_neon)
            small_m_nt(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        else if (!tb)
            small_m_nn(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        epilogue_rows(ep, C, ldc, M, N);
        return;
    }
#ifdef NPU_CPU_NEON_GEMM
    /* aarch64: the NEON 8x12 kernel (false only when its buffers cannot be allocated) */
    if (uk_neon && cpu_sgemm_neon(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) {
        epilogue_rows(ep, C, ldc, M, N);
        return;
    }
#endif
    pthread_once(&uk_once, uk_pick);
    const int nrw = uk_nr;
    float *bpack = cpu_gemm_pack_buffer(KC * NC + KC * MC), *apack = bpack ? bpack + KC * NC : NULL;
    float tile[MR * NRMAX] __attribute__((aligned(64)));
    if (K == 0) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        epilogue_rows(ep, C, ldc, M, N);
        return;
    }
    if (!bpack) {
        /* no memory for packing: the plain triple loop still gives the right answer */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                float acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (ta ? A[k * lda + i] : A[i * lda + k]) *
                           (tb ? B[j * ldb + k] : B[k * ldb + j]);
                C[i * ldc + j] = alpha * acc + (beta == 0.0f ? 0.0f : beta * C[i * ldc + j]);
            }
        epilogue_rows(ep, C, ldc, M, N);
        return;
    }
    for (int64_t jc = 0; jc < N; jc += NC) {
        int64_t nc = N - jc < NC ? N - jc : NC;
        /* the B micro-panel (kcb x nrw floats) should take half of a 32 KB L1: 16 KB */
        const int64_t kcb = nrw == 32 ? KC / 2 : KC;
        for (int64_t pc = 0; pc < K; pc += kcb) {
            int64_t kc = K - pc < kcb ? K - pc : kcb;
            pack_b(tb, B, ldb, pc, kc, jc, nc, nrw, bpack);
            for (int64_t ic = 0; ic < M; ic += MC) {
                int64_t mc = M - ic < MC ? M - ic : MC;
                pack_a(ta, A, lda, ic, mc, pc, kc, alpha, apack);
                for (int64_t j0 = 0; j0 < nc; j0 += nrw)
                    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
                        uk_fn(kc, apack + i0 * kc, bpack + j0 * kc, tile);
                        tile_store(tile, nrw, C + (ic + i0) * ldc + jc + j0, ldc,
                                   (int)(mc - i0 < MR ? mc - i0 : MR),
                                   (int)(nc - j0 < nrw ? nc - j0 : nrw), beta, pc == 0);
                    }
                if (ep && pc + kc >= K) {
                    /* this block of C is final and still in L2 */
                    struct cpu_epilogue e = {ep->bias_row ? ep->bias_row + ic : NULL,
                                             ep->bias_col ? ep->bias_col + jc : NULL, ep->act};
                    epilogue_rows(&e, C + ic * ldc + jc, ldc, mc, nc);
                }
            }
        }
    }
}

void
cpu_sgemm_ep(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
             int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
             const struct cpu_epilogue *ep)
{
    if (M <= 0 || N <= 0)
        return;
#ifdef NPU_HAVE_BLAS
    /* a few rows stream B once on any path: BLAS packs B for them as for a full GEMM (Debian's
     * OpenBLAS 0.3.21 took 0.7 ms for the 1x1280x1000 classifier, the streaming loop 0.2) */
    if (sgemm_blas() && !(M <= SMALL_M && !ta && K > 0) && blas_takes(M, N, K, lda, ldb, ldc)) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (int)M, (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
        epilogue_rows(ep, C, ldc, M, N);
        return;
    }
#endif
    sgemm_fallback(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep);
}

void
cpu_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
          int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    cpu_sgemm_ep(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void
cpu_dgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double *A,
          int64_t lda, const double *B, int64_t ldb, double beta, double *C, int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return;
#ifdef NPU_HAVE_BLAS
    if (blas_takes(M, N, K, lda, ldb, ldc)) {
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (int)M, (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
        return;
    }
#endif
    for (int64_t i = 0; i < M; i++) {
        double *c = C + i * ldc;
        for (int64_t j = 0; j < N; j++)
            c[j] = beta == 0.0 ? 0.0 : beta * c[j];
        for (int64_t k = 0; k < K; k++) {
            double a = alpha * (ta ? A[k * lda + i] : A[i * lda + k]);
            if (!tb) {
                const double *b = B + k * ldb;
                for (int64_t j = 0; j < N; j++)
                    c[j] += a * b[j];
            } else {
                for (int64_t j = 0; j < N; j++)
                    c[j] += a * B[j * ldb + k];
            }
        }
    }
}

/* ---- threaded batched driver ---------------------------------------------------------------- */

struct gemm_job {
    const struct cpu_gemm_batch *g;
    int64_t mb, nb, mt, nt;
};

static void
gemm_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct gemm_job *j = arg;
    const struct cpu_gemm_batch *g = j->g;
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / (j->mt * j->nt), r = t % (j->mt * j->nt);
        int64_t m0 = (r / j->nt) * j->mb, n0 = (r % j->nt) * j->nb;
        int64_t m = g->M - m0 < j->mb ? g->M - m0 : j->mb;
        int64_t n = g->N - n0 < j->nb ? g->N - n0 : j->nb;
        const float *A = g->A + (g->a_off ? g->a_off[b] : 0) + (g->ta ? m0 : m0 * g->lda);
        const float *B = g->B + (g->b_off ? g->b_off[b] : 0) + (g->tb ? n0 * g->ldb : n0);
        float *C = g->C + (g->c_off ? g->c_off[b] : 0) + m0 * g->ldc + n0;
        struct cpu_epilogue ep = {g->bias_row ? g->bias_row + m0 : NULL,
                                  g->bias_col ? g->bias_col + n0 : NULL, g->act};
        cpu_sgemm_ep(g->ta, g->tb, m, n, g->K, g->alpha, A, g->lda, B, g->ldb, g->beta, C, g->ldc,
                     &ep);
    }
}

void
cpu_gemm_batched(struct npu_cpu_ctx *ctx, const struct cpu_gemm_batch *g)
{
    if (g->batch <= 0 || g->M <= 0 || g->N <= 0)
        return;
    /* Tile size from the shape alone (never from the thread count): about 4 MFLOP or more
     * per tile, N cut in multiples of 64 columns (128 for wide problems: each tile repacks
     * its A block, so narrow tiles cost packing), M cut only when it is tall. The ViT
     * projection 196x768x768 becomes 6 tiles of 196x128. */
    struct gemm_job j = {.g = g, .mb = g->M, .nb = g->N};
    double flops = 2.0 * (double)g->M * (double)g->N * (double)(g->K ? g->K : 1);
    if (g->M <= SMALL_M && (double)g->N * (double)g->K >= 262144.0) {
        /* few rows: bound by reading B; columns cut (in multiples of 256, at most 16 tiles)
         * so that threads share the reading */
        j.nb = NPU_MAX((int64_t)256, NPU_ALIGN(NPU_DIV_ROUND_UP(g->N, (int64_t)16), (int64_t)256));
    } else if (flops > 8e6) {
        if (g->M > 512)
            j.mb = 256;
        int64_t want = (int64_t)(flops * (double)j.mb / (double)g->M / 4e6);
        int64_t minw = g->N >= 256 ? 128 : 64;
        int64_t cols =
            NPU_MAX(minw, NPU_ALIGN(NPU_DIV_ROUND_UP(g->N, NPU_MAX(want, 1)), (int64_t)64));
        if (want > 1 && cols < g->N)
            j.nb = NPU_MIN(cols, (int64_t)512);
    }
    j.mt = NPU_DIV_ROUND_UP(g->M, j.mb);
    j.nt = NPU_DIV_ROUND_UP(g->N, j.nb);
    cpu_parallel_for(ctx, g->batch * j.mt * j.nt, 1, gemm_task, &j);
}

/* ---- generic (fp64 / integer) matmul rows --------------------------------------------------- */

/* One output row i of batch b: C[i,:] = sum_k A[i,k] B[k,:] for the non-fp32 types; integer
 * arithmetic wraps (unsigned), as numpy's does. */
#define MM_ROW_FN(sfx, T, W)                                                                       \
    static void mm_row_##sfx(const void *A_, const void *B_, void *C_, int64_t K, int64_t N)       \
    {                                                                                              \
        const T *a = A_, *B = B_;                                                                  \
        T *c = C_;                                                                                 \
        for (int64_t j = 0; j < N; j++)                                                            \
            c[j] = 0;                                                                              \
        for (int64_t k = 0; k < K; k++) {                                                          \
            W av = (W)a[k];                                                                        \
            const T *b = B + k * N;                                                                \
            for (int64_t j = 0; j < N; j++)                                                        \
                c[j] = (T)((W)c[j] + av * (W)b[j]);                                                \
        }                                                                                          \
    }
MM_ROW_FN(f64, double, double)
MM_ROW_FN(i32, int32_t, uint32_t)
MM_ROW_FN(i64, int64_t, uint64_t)
MM_ROW_FN(u32, uint32_t, uint32_t)
MM_ROW_FN(u64, uint64_t, uint64_t)
typedef void (*mm_row_fn)(const void *A, const void *B, void *C, int64_t K, int64_t N);

struct mm_gen_job {
    mm_row_fn fn;
    size_t es;
    const char *A, *B;
    char *C;
    const int64_t *a_off, *b_off;
    int64_t M, N, K;
};

static void
mm_gen_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct mm_gen_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / j->M, i = t % j->M;
        j->fn(j->A + (size_t)(j->a_off[b] + i * j->K) * j->es, j->B + (size_t)j->b_off[b] * j->es,
              j->C + (size_t)(b * j->M * j->N + i * j->N) * j->es, j->K, j->N);
    }
}

/* ---- MatMul --------------------------------------------------------------------------------- */

/* Shapes of a numpy matmul: batch dims broadcast, 1-D operands promoted and their unit dim
 * dropped from the result. Fills per-batch element offsets (caller frees). */
struct mm_shape {
    int64_t M, N, K, batch;
    int64_t *a_off, *b_off;
    bool a_flat; /* A's batch folds into M (B has no batch dims, A contiguous) */
};

static enum npu_status
mm_plan(struct npu_cpu_ctx *ctx, const struct npu_tensor *a, const struct npu_tensor *b,
        const struct npu_tensor *y, enum npu_dtype ydt, struct mm_shape *s)
{
    memset(s, 0, sizeof(*s));
    if (a->ndim < 1 || b->ndim < 1)
        return KINVAL("operands must have rank >= 1");
    int64_t ad[NPU_MAX_DIMS + 1], bd[NPU_MAX_DIMS + 1];
    int ar = a->ndim, br = b->ndim;
    memcpy(ad, a->dims, sizeof(int64_t) * (size_t)ar);
    memcpy(bd, b->dims, sizeof(int64_t) * (size_t)br);
    bool a1 = ar == 1, b1 = br == 1;
    if (a1) { /* [K] -> [1,K] */
        ad[1] = ad[0];
        ad[0] = 1;
        ar = 2;
    }
    if (b1) { /* [K] -> [K,1] */
        bd[1] = 1;
        br = 2;
    }
    s->M = ad[ar - 2];
    s->K = ad[ar - 1];
    s->N = bd[br - 1];
    if (bd[br - 2] != s->K) {
        char s1[160], s2[160];
        return KINVAL("inner dims differ: %s x %s", cpu_dims_str(a, s1, sizeof(s1)),
                      cpu_dims_str(b, s2, sizeof(s2)));
    }
    int abr = ar - 2, bbr = br - 2, nbr = abr > bbr ? abr : bbr;
    int64_t yd[NPU_MAX_DIMS + 2];
    int yr = 0;
    for (int d = 0; d < nbr; d++) {
        int ia = d - (nbr - abr), ib = d - (nbr - bbr);
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return KINVAL("batch dims %lld and %lld do not broadcast", (long long)da,
                          (long long)db);
        yd[yr++] = da == 1 ? db : da;
    }
    s->batch = cpu_dims_prod(yd, 0, yr);
    if (!a1)
        yd[yr++] = s->M;
    if (!b1)
        yd[yr++] = s->N;
    if (yr > NPU_MAX_DIMS)
        return KINVAL("result rank %d is too high", yr);
    CPU_TRY(cpu_check_out(ctx, y, ydt, yr, yd));
    s->a_flat = bbr == 0 || cpu_dims_prod(bd, 0, bbr) == 1;
    if (s->a_flat) {
        /* every batch uses the one B: fold A's batch into M */
        s->M *= s->batch;
        s->batch = 1;
    }
    s->a_off = calloc((size_t)NPU_MAX(s->batch, 1), sizeof(int64_t));
    s->b_off = calloc((size_t)NPU_MAX(s->batch, 1), sizeof(int64_t));
    if (!s->a_off || !s->b_off) {
        free(s->a_off);
        free(s->b_off);
        return KNOMEM();
    }
    if (!s->a_flat) {
        /* walk the broadcast batch index, accumulating each operand's offset */
        int64_t idx[NPU_MAX_DIMS] = {0};
        for (int64_t t = 0; t < s->batch; t++) {
            int64_t oa = 0, ob = 0, sa = s->M * s->K, sb = s->K * s->N;
            for (int d = nbr - 1; d >= 0; d--) {
                int ia = d - (nbr - abr), ib = d - (nbr - bbr);
                int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
                if (da != 1)
                    oa += idx[d] * sa;
                if (db != 1)
                    ob += idx[d] * sb;
                sa *= da;
                sb *= db;
            }
            s->a_off[t] = oa;
            s->b_off[t] = ob;
            cpu_index_next(idx, yd, nbr);
        }
    }
    return NPU_OK;
}

static enum npu_status
matmul_generic(struct npu_cpu_ctx *ctx, const struct mm_shape *s, const struct npu_tensor *a,
               const struct npu_tensor *b, struct npu_tensor *y)
{
    mm_row_fn fn;
    switch (a->dtype) {
    case NPU_DTYPE_FP64: fn = mm_row_f64; break;
    case NPU_DTYPE_INT32: fn = mm_row_i32; break;
    case NPU_DTYPE_INT64: fn = mm_row_i64; break;
    case NPU_DTYPE_UINT32: fn = mm_row_u32; break;
    case NPU_DTYPE_UINT64: fn = mm_row_u64; break;
    default: return KUNSUP("dtype %s is not supported", npu_dtype_name(a->dtype));
    }
    struct mm_gen_job j = {fn,       cpu_esize(a), a->data, b->data, y->data,
                           s->a_off, s->b_off,     s->M,    s->N,    s->K};
    cpu_parallel_for(ctx, s->batch * s->M, NPU_MAX((int64_t)1, 65536 / NPU_MAX(s->N * s->K, 1)),
                     mm_gen_task, &j);
    return NPU_OK;
}

enum npu_status
cpu_k_matmul(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *a = in[0], *b = in[1], *bias = nin > 2 ? in[2] : NULL;
    struct npu_tensor *y = out[0];
    if (a->dtype != b->dtype)
        return KINVAL("operand dtypes differ (%s, %s)", npu_dtype_name(a->dtype),
                      npu_dtype_name(b->dtype));
    struct cpu_act_spec act;
    CPU_TRY(cpu_act_parse(ctx, attrs, &act));
    struct mm_shape s;
    CPU_TRY(mm_plan(ctx, a, b, y, a->dtype, &s));
    enum npu_status st = NPU_OK;
    float *bias_tmp = NULL;
    if (a->dtype != NPU_DTYPE_FP32) {
        if (bias || act.kind != CPU_ACT_NONE)
            st = KUNSUP("bias and fused activation need fp32 or fp16");
        else
            st = matmul_generic(ctx, &s, a, b, y);
        goto out;
    }
    const float *bias_col = NULL;
    if (bias) {
        int64_t bn = cpu_numel(bias);
        if (bias->dtype != NPU_DTYPE_FP32 || (bn != s.N && bn != 1) ||
            (bias->ndim > 0 && bias->dims[bias->ndim - 1] != bn)) {
            st = KINVAL("bias must be fp32 of shape [N] (N = %lld)", (long long)s.N);
            goto out;
        }
        bias_col = bias->data;
        if (bn == 1 && s.N != 1) {
            bias_tmp = malloc(sizeof(float) * (size_t)s.N);
            if (!bias_tmp) {
                st = KNOMEM();
                goto out;
            }
            for (int64_t j = 0; j < s.N; j++)
                bias_tmp[j] = ((const float *)bias->data)[0];
            bias_col = bias_tmp;
        }
    }
    /* a constant B packed once (npu_cpu_prepare) */
    if (s.batch == 1 && cpu_mm_packed_run(ctx, ctx->prep, b, false, s.M, a->data, s.K, y->data, s.N,
                                          false, bias_col, &act))
        goto out;
    int64_t *c_off = NULL;
    if (s.batch > 1) {
        c_off = malloc(sizeof(int64_t) * (size_t)s.batch);
        if (!c_off) {
            st = KNOMEM();
            goto out;
        }
        for (int64_t t = 0; t < s.batch; t++)
            c_off[t] = t * s.M * s.N;
    }
    struct cpu_gemm_batch g = {
        .M = s.M,
        .N = s.N,
        .K = s.K,
        .alpha = 1.0f,
        .beta = 0.0f,
        .A = a->data,
        .B = b->data,
        .C = y->data,
        .lda = s.K,
        .ldb = s.N,
        .ldc = s.N,
        .a_off = s.a_off,
        .b_off = s.b_off,
        .c_off = c_off,
        .batch = s.batch,
        .bias_col = bias_col,
        .act = &act,
    };
    cpu_gemm_batched(ctx, &g);
    free(c_off);
out:
    free(bias_tmp);
    free(s.a_off);
    free(s.b_off);
    return st;
}

/* ---- Gemm ----------------------------------------------------------------------------------- */

enum npu_status
cpu_k_gemm(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *a = in[0], *b = in[1], *c = nin > 2 ? in[2] : NULL;
    struct npu_tensor *y = out[0];
    bool ta = npu_attrs_int(attrs, "transA", 0) != 0, tb = npu_attrs_int(attrs, "transB", 0) != 0;
    float alpha = npu_attrs_float(attrs, "alpha", 1.0f),
          beta = npu_attrs_float(attrs, "beta", 1.0f);
    if (a->ndim != 2 || b->ndim != 2)
        return KINVAL("A and B must be 2-D");
    if (a->dtype != b->dtype)
        return KINVAL("A and B dtypes differ");
    int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    int64_t K2 = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    if (K != K2)
        return KINVAL("inner dims differ (%lld vs %lld)", (long long)K, (long long)K2);
    int64_t yd[2] = {M, N};
    CPU_TRY(cpu_check_out(ctx, y, a->dtype, 2, yd));
    struct cpu_act_spec act;
    CPU_TRY(cpu_act_parse(ctx, attrs, &act));
    if (c && c->dtype != a->dtype)
        return KINVAL("C dtype differs from A");
    if (c && c->ndim > 2)
        return KINVAL("C must have rank <= 2");
    bool has_c = c && beta != 0.0f && cpu_numel(c) > 0;
    /* C of shape [N] or [1, N] with beta 1 (Linear's bias): added in the epilogue */
    const float *bias_col = NULL;
    if (has_c && a->dtype == NPU_DTYPE_FP32 && beta == 1.0f && c->ndim >= 1 && cpu_numel(c) == N &&
        c->dims[c->ndim - 1] == N) {
        bias_col = c->data;
        has_c = false;
    }
    if (has_c) {
        /* Y = beta * broadcast(C), then accumulate alpha AB on top */
        struct cpu_bcast bc;
        const struct npu_tensor *ins[1] = {c};
        CPU_TRY(cpu_bcast_plan(ctx, &bc, y, ins, 1, false));
        int64_t cm = c->ndim == 2 ? c->dims[0] : 1, cn = c->ndim >= 1 ? c->dims[c->ndim - 1] : 1;
        size_t es = cpu_esize(y);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                memcpy((char *)y->data + (size_t)(i * N + j) * es,
                       (const char *)c->data +
                           (size_t)((cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)) * es,
                       es);
    }
    if (a->dtype == NPU_DTYPE_FP32) {
        if (has_c && beta != 1.0f) {
            float *v = y->data;
            for (int64_t i = 0; i < M * N; i++)
                v[i] *= beta;
        }
        if (!ta && alpha == 1.0f &&
            cpu_mm_packed_run(ctx, ctx->prep, b, tb, M, a->data, a->dims[1], y->data, N, has_c,
                              bias_col, &act))
            return NPU_OK;
        struct cpu_gemm_batch g = {
            .ta = ta,
            .tb = tb,
            .M = M,
            .N = N,
            .K = K,
            .alpha = alpha,
            .beta = has_c ? 1.0f : 0.0f,
            .A = a->data,
            .B = b->data,
            .C = y->data,
            .lda = a->dims[1],
            .ldb = b->dims[1],
            .ldc = N,
            .batch = 1,
            .bias_col = bias_col,
            .act = &act,
        };
        cpu_gemm_batched(ctx, &g);
        return NPU_OK;
    }
    if (act.kind != CPU_ACT_NONE)
        return KUNSUP("fused activation needs fp32 or fp16");
    if (a->dtype == NPU_DTYPE_FP64) {
        cpu_dgemm(ta, tb, M, N, K, alpha, a->data, a->dims[1], b->data, b->dims[1],
                  has_c ? beta : 0.0, y->data, N);
        return NPU_OK;
    }
    /* integers: Y = alpha*A.B + beta*C with alpha and beta applied in the integer type */
    if (!npu_dtype_is_int(a->dtype))
        return KUNSUP("dtype %s is not supported", npu_dtype_name(a->dtype));
    int64_t ai = cpu_sat_i64(alpha), bi = cpu_sat_i64(beta);
    if ((float)ai != alpha || (float)bi != beta)
        return KUNSUP("integer Gemm needs integral alpha and beta");
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            uint64_t acc = 0;
            for (int64_t k = 0; k < K; k++) {
                int64_t av = cpu_scalar_i64(a, ta ? k * M + i : i * K + k);
                int64_t bv = cpu_scalar_i64(b, tb ? j * K + k : k * N + j);
                acc += (uint64_t)av * (uint64_t)bv;
            }
            acc *= (uint64_t)ai;
            if (has_c)
                acc += (uint64_t)bi * (uint64_t)cpu_scalar_i64(y, i * N + j);
            int64_t v = (int64_t)acc;
            cpu_convert(&v, NPU_DTYPE_INT64, (char *)y->data + (size_t)(i * N + j) * cpu_esize(y),
                        y->dtype, 1);
        }
    return NPU_OK;
}

/* ---- integer matmul: MatMulInteger, QLinearMatMul ------------------------------------------- */

/* Zero point of an operand: scalar, or a vector along `len` (per row of A / column of B). */
static enum npu_status
zero_points(struct npu_cpu_ctx *ctx, const struct npu_tensor *zp, const struct npu_tensor *x,
            int64_t len, const char *what, int32_t *out)
{
    if (cpu_absent(zp)) {
        for (int64_t i = 0; i < len; i++)
            out[i] = 0;
        return NPU_OK;
    }
    if (zp->dtype != x->dtype)
        return KINVAL("%s zero point dtype %s differs from the operand's %s", what,
                      npu_dtype_name(zp->dtype), npu_dtype_name(x->dtype));
    int64_t n = cpu_numel(zp);
    if (n != 1 && n != len)
        return KINVAL("%s zero point has %lld entries, expected 1 or %lld", what, (long long)n,
                      (long long)len);
    for (int64_t i = 0; i < len; i++)
        out[i] = (int32_t)cpu_scalar_i64(zp, n == 1 ? 0 : i);
    return NPU_OK;
}

struct imm_job {
    const struct npu_tensor *a;
    const int32_t *bq;  /* B - bzp as int32, per batch K*N */
    const int32_t *azp; /* [M] */
    int32_t *y;
    const int64_t *a_off, *b_off;
    int64_t M, N, K;
};

static void
imm_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct imm_job *j = arg;
    bool s8 = j->a->dtype == NPU_DTYPE_INT8;
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / j->M, i = t % j->M;
        int64_t ao = j->a_off[b] + i * j->K;
        const int32_t *bq = j->bq + j->b_off[b];
        uint32_t *y = (uint32_t *)j->y + (b * j->M + i) * j->N;
        for (int64_t q = 0; q < j->N; q++)
            y[q] = 0;
        for (int64_t k = 0; k < j->K; k++) {
            int32_t av = (s8 ? ((const int8_t *)j->a->data)[ao + k]
                             : ((const uint8_t *)j->a->data)[ao + k]) -
                         j->azp[i];
            if (!av)
                continue;
            const int32_t *br = bq + k * j->N;
            for (int64_t q = 0; q < j->N; q++)
                y[q] += (uint32_t)(av * br[q]); /* |av*br| < 2^17: no overflow */
        }
    }
}

/* int_matmul on the packed kernels: B prepared once (npu_cpu_prepare) or packed per batch */
static enum npu_status
int_matmul_fast(struct npu_cpu_ctx *ctx, const struct npu_tensor *a, const struct npu_tensor *b,
                struct npu_tensor *y, const struct mm_shape *s, const int32_t *azp,
                const int32_t *bzp)
{
    if (s->M < 1 || s->N < 1)
        return NPU_OK;
    if (s->K < 1) { /* empty sums */
        memset(y->data, 0, sizeof(int32_t) * (size_t)(s->batch * s->M * s->N));
        return NPU_OK;
    }
    const struct cpu_qpack *prepared = cpu_qgemm_prepared(ctx->prep, b);
    struct cpu_qpack *own = NULL;
    int64_t own_off = -1;
    bool as8 = a->dtype == NPU_DTYPE_INT8, bs8 = b->dtype == NPU_DTYPE_INT8;
    enum npu_status st = NPU_OK;
    for (int64_t t = 0; t < s->batch && st == NPU_OK; t++) {
        const struct cpu_qpack *pk = prepared;
        if (!pk || s->b_off[t] != 0) {
            if (s->b_off[t] != own_off) {
                cpu_qpack_free(own);
                own = cpu_qpack_new((const uint8_t *)b->data + s->b_off[t], bs8, s->N, 1, s->K,
                                    s->N, false);
                own_off = s->b_off[t];
                if (!own)
                    return KNOMEM();
            }
            pk = own;
        }
        st = cpu_qgemm(ctx, pk, s->M, (const uint8_t *)a->data + s->a_off[t], as8, s->K, azp, bzp,
                       (int32_t *)y->data + t * s->M * s->N, s->N);
    }
    cpu_qpack_free(own);
    return st;
}

/* int32 Y = (A - azp) (B - bzp) with matmul broadcasting; zero points per tensor, per row of
 * A (azp [M]) or per column of B (bzp [N]). */
static enum npu_status
int_matmul(struct npu_cpu_ctx *ctx, const struct npu_tensor *a, const struct npu_tensor *azp_t,
           const struct npu_tensor *b, const struct npu_tensor *bzp_t, struct npu_tensor *y,
           struct mm_shape *s)
{
    for (int i = 0; i < 2; i++) {
        enum npu_dtype dt = i ? b->dtype : a->dtype;
        if (dt != NPU_DTYPE_INT8 && dt != NPU_DTYPE_UINT8)
            return KUNSUP("operand dtype %s is not supported (int8/uint8 only)",
                          npu_dtype_name(dt));
    }
    CPU_TRY(mm_plan(ctx, a, b, y, y->dtype, s));
    enum npu_status st = NPU_OK;
    int64_t Mrow = a->ndim >= 2 ? a->dims[a->ndim - 2] : 1;
    int64_t nb_b = cpu_numel(b) / NPU_MAX(s->K * s->N, (int64_t)1);
    int32_t *azp = malloc(sizeof(int32_t) * (size_t)NPU_MAX(s->M, (int64_t)1));
    int32_t *bzp = malloc(sizeof(int32_t) * (size_t)NPU_MAX(s->N, (int64_t)1));
    int32_t *bq = NULL; /* the reference loop's B - bzp, made below if it runs */
    if (!azp || !bzp) {
        st = KNOMEM();
        goto out;
    }
    /* per-row zero points repeat across the batch (M may have folded the batch in) */
    int32_t *azp_rows = malloc(sizeof(int32_t) * (size_t)NPU_MAX(Mrow, (int64_t)1));
    if (!azp_rows) {
        st = KNOMEM();
        goto out;
    }
    st = zero_points(ctx, azp_t, a, Mrow, "A", azp_rows);
    for (int64_t i = 0; st == NPU_OK && i < s->M; i++)
        azp[i] = azp_rows[i % Mrow];
    free(azp_rows);
    if (st != NPU_OK)
        goto out;
    st = zero_points(ctx, bzp_t, b, s->N, "B", bzp);
    if (st != NPU_OK)
        goto out;
    if (cpu_qgemm_on()) { /* the fast exact product (npu-cpu-qgemm.c) */
        st = int_matmul_fast(ctx, a, b, y, s, azp, bzp);
        goto out;
    }
    bq = malloc(sizeof(int32_t) * (size_t)NPU_MAX(cpu_numel(b), (int64_t)1));
    if (!bq) {
        st = KNOMEM();
        goto out;
    }
    for (int64_t t = 0; t < nb_b; t++)
        for (int64_t k = 0; k < s->K; k++)
            for (int64_t q = 0; q < s->N; q++) {
                int64_t e = (t * s->K + k) * s->N + q;
                bq[e] = (int32_t)cpu_scalar_i64(b, e) - bzp[q];
            }
    struct imm_job j = {a, bq, azp, y->data, s->a_off, s->b_off, s->M, s->N, s->K};
    cpu_parallel_for(ctx, s->batch * s->M, NPU_MAX((int64_t)1, 32768 / NPU_MAX(s->N * s->K, 1)),
                     imm_task, &j);
out:
    free(azp);
    free(bzp);
    free(bq);
    return st;
}

enum npu_status
cpu_k_matmul_integer(CPU_KERNEL_ARGS)
{
    if (out[0]->dtype != NPU_DTYPE_INT32)
        return KINVAL("output must be int32");
    struct mm_shape s = {0};
    enum npu_status st =
        int_matmul(ctx, in[0], nin > 2 ? in[2] : NULL, in[1], nin > 3 ? in[3] : NULL, out[0], &s);
    free(s.a_off);
    free(s.b_off);
    return st;
}

/* Requantises int32 accumulators: y = saturate(rint(acc * scale[j]) + zp), in float like the
 * ONNX reference (scale = a_scale * w_scale / y_scale computed in float). One row at a time
 * with the output type and the scale's layout fixed, so that the loop vectorises (vroundps
 * rounds half to even like rintf in the default mode; the same float operations in the same
 * order, so the same bytes). */
static inline __attribute__((always_inline)) void
requant_row(const int32_t *acc, int64_t cols, const float *scale, bool per_col, float sc, float fzp,
            float lo, float hi, bool u8, void *y)
{
    for (int64_t j = 0; j < cols; j++) {
        float v = rintf((float)acc[j] * (per_col ? scale[j] : sc)) + fzp;
        v = v != v ? fzp : v; /* NaN scale: the zero point, never an UB cast */
        v = v < lo ? lo : v > hi ? hi : v;
        if (u8)
            ((uint8_t *)y)[j] = (uint8_t)(int32_t)v;
        else
            ((int8_t *)y)[j] = (int8_t)(int32_t)v;
    }
}

CPU_HOT void
cpu_requantize(const int32_t *acc, int64_t rows, int64_t cols, const float *scale, bool per_col,
               int32_t zp, enum npu_dtype dt, void *y)
{
    const bool u8 = dt == NPU_DTYPE_UINT8;
    const float fzp = (float)zp, lo = u8 ? 0.0f : -128.0f, hi = u8 ? 255.0f : 127.0f;
    for (int64_t i = 0; i < rows; i++) {
        const int32_t *a = acc + i * cols;
        char *o = (char *)y + i * cols; /* one byte per element */
        if (per_col && u8)
            requant_row(a, cols, scale, true, 0.0f, fzp, lo, hi, true, o);
        else if (per_col)
            requant_row(a, cols, scale, true, 0.0f, fzp, lo, hi, false, o);
        else if (u8)
            requant_row(a, cols, scale, false, scale[i], fzp, lo, hi, true, o);
        else
            requant_row(a, cols, scale, false, scale[i], fzp, lo, hi, false, o);
    }
}

enum npu_status
cpu_k_qlinear_matmul(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *a = in[0], *as = in[1], *azp = in[2], *b = in[3], *bs = in[4],
                            *bzp = in[5], *ys = in[6], *yzp = in[7];
    /* input 8 (OpenNPU's, as QLinearConv's B): int32 bias per column, added to the sums */
    const struct npu_tensor *bias = nin > 8 ? in[8] : NULL;
    struct npu_tensor *y = out[0];
    if (bias && bias->dtype != NPU_DTYPE_INT32)
        return KINVAL("bias must be int32");
    if (a->dtype == NPU_DTYPE_INT16) { /* w16a16i */
        if (bias)
            return KUNSUP("an int16 QLinearMatMul with a bias input (input 8)");
        return cpu_qlinear_matmul_i16(ctx, attrs, in, nin, out, nout);
    }
    if (y->dtype != NPU_DTYPE_UINT8 && y->dtype != NPU_DTYPE_INT8)
        return KUNSUP("output dtype %s is not supported", npu_dtype_name(y->dtype));
    if (as->dtype != NPU_DTYPE_FP32 || bs->dtype != NPU_DTYPE_FP32 || ys->dtype != NPU_DTYPE_FP32)
        return KINVAL("scales must be float");
    if (cpu_numel(as) != 1 || cpu_numel(ys) != 1 || (yzp && cpu_numel(yzp) != 1))
        return KUNSUP("a_scale, y_scale and y_zero_point must be scalars");
    if (yzp && yzp->dtype != y->dtype)
        return KINVAL("y_zero_point dtype differs from the output");
    /* the int32 product, then requantise */
    struct npu_tensor acc = *y;
    acc.dtype = NPU_DTYPE_INT32;
    acc.data = malloc(sizeof(int32_t) * (size_t)NPU_MAX(cpu_numel(y), (int64_t)1));
    if (!acc.data)
        return KNOMEM();
    struct mm_shape s = {0};
    enum npu_status st = int_matmul(ctx, a, azp, b, bzp, &acc, &s);
    if (st == NPU_OK) {
        int64_t nbs = cpu_numel(bs);
        if (nbs != 1 && nbs != s.N) {
            st = KINVAL("b_scale has %lld entries, expected 1 or N", (long long)nbs);
        } else if (bias && cpu_numel(bias) != s.N) {
            st = KINVAL("bias has %lld entries, expected N = %lld", (long long)cpu_numel(bias),
                        (long long)s.N);
        } else {
            if (bias) {
                int32_t *acc32 = acc.data;
                const int32_t *bb = bias->data;
                int64_t rows = cpu_numel(y) / NPU_MAX(s.N, (int64_t)1);
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t j = 0; j < s.N; j++) {
                        int64_t v = (int64_t)acc32[r * s.N + j] + bb[j];
                        acc32[r * s.N + j] = (int32_t)(v > INT32_MAX   ? INT32_MAX
                                                       : v < INT32_MIN ? INT32_MIN
                                                                       : v);
                    }
            }
            float *scale = malloc(sizeof(float) * (size_t)NPU_MAX(s.N, (int64_t)1));
            if (!scale) {
                st = KNOMEM();
            } else {
                float a_s = ((const float *)as->data)[0], y_s = ((const float *)ys->data)[0];
                for (int64_t j = 0; j < s.N; j++)
                    scale[j] = a_s * ((const float *)bs->data)[nbs == 1 ? 0 : j] / y_s;
                int32_t zp = yzp ? (int32_t)cpu_scalar_i64(yzp, 0) : 0;
                cpu_requantize(acc.data, cpu_numel(y) / NPU_MAX(s.N, (int64_t)1), s.N, scale, true,
                               zp, y->dtype, y->data);
                free(scale);
            }
        }
    }
    free(s.a_off);
    free(s.b_off);
    free(acc.data);
    return st;
}
