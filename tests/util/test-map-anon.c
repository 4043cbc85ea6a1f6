/* SPDX-License-Identifier: MIT */
/*
 * test-map-anon.c: npu_map_anon (core/util/npu-common.c), the anonymous memory behind the
 * compiler's weight region and the graph arena's big chunks. Checks that a mapping is zero,
 * writable and exactly len bytes (its ends trimmed off the 2 MiB of slack, so that
 * munmap(p, len) frees all of it), 2 MiB aligned and marked for huge pages ("hg" in
 * /proc/self/smaps) from 2 MiB on, that populate makes every page resident (mincore) and
 * that a MAP_NORESERVE reservation far larger than the memory is granted, and that nothing of
 * the slack stays mapped after munmap(p, len) when len is not a whole number of pages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npu-test.h"
#include "npu/npu-common.h"

#define MIB ((size_t)1 << 20)

/* the smaps entry starting at p: its end, whether VmFlags has "hg" and (huge_kb not NULL)
 * its AnonHugePages in kB; false if none */
static bool
smaps_entry_huge(const void *p, uintptr_t *end, bool *hg, long *huge_kb)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return false;
    char line[512];
    bool in = false, found = false;
    *hg = false;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        const char *sp = strchr(line, ' ');
        /* "lo-hi perms ..." starts an entry; "Key:  value" lines describe it */
        if (sp && sp > line && sp[-1] != ':' && sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            in = lo == (uintptr_t)p;
            if (in) {
                *end = hi;
                found = true;
            }
        } else if (in && !strncmp(line, "VmFlags:", 8)) {
            *hg = strstr(line, " hg") != NULL;
        } else if (in && huge_kb && !strncmp(line, "AnonHugePages:", 14)) {
            *huge_kb = strtol(line + 14, NULL, 10);
        }
    }
    fclose(f);
    return found;
}

static bool
smaps_entry(const void *p, uintptr_t *end, bool *hg)
{
    return smaps_entry_huge(p, end, hg, NULL);
}

/* THP offered at all (always or madvise): otherwise MADV_HUGEPAGE may be refused */
static bool
thp_offered(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char s[128] = "";
    if (!f)
        return false;
    bool ok = fgets(s, sizeof(s), f) && !strstr(s, "[never]");
    fclose(f);
    return ok;
}

/* Set under a user-mode emulator (meson's cross builds run tests through qemu-user): its
 * smaps and mincore describe the host's view of the emulated mappings, so the checks of the
 * kernel's own view are skipped there; contents, alignment and sizes are still checked. */
static bool emulated;

static bool
all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void
test_sizes(void)
{
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const size_t sizes[] = {1, pg, 2 * MIB - pg, 2 * MIB, 2 * MIB + 1, 5 * MIB + 3 * pg};
    CHECK(npu_map_anon(0, false, false) == NULL);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t len = sizes[k];
        unsigned char *p = npu_map_anon(len, false, false);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK(all_zero(p, len));
        p[0] = 1;
        p[len - 1] = 2;
        CHECK((len == 1 || p[0] == 1) && p[len - 1] == 2);
        uintptr_t end = 0;
        bool hg = false;
        /* the mapping is exactly [p, p + len rounded to pages): nothing left of the slack
         * (the kernel may merge it with a neighbour only when flags agree: not for "hg") */
        if (len >= 2 * MIB) {
            CHECK(((uintptr_t)p & (2 * MIB - 1)) == 0);
            if (!emulated) {
                CHECK(smaps_entry(p, &end, &hg));
                CHECK_EQ_INT((long long)((len + pg - 1) / pg * pg),
                             (long long)(end - (uintptr_t)p));
                if (thp_offered())
                    CHECK(hg);
            }
        }
        CHECK(munmap(p, len) == 0);
        /* and the 2 MiB of slack past it went with the trim: no mapping is left starting
         * where [p, p + len) ends (the tail of a len that is not whole pages once was) */
        if (len >= 2 * MIB && !emulated) {
            uintptr_t tail = (uintptr_t)p + (len + pg - 1) / pg * pg;
            CHECK(!smaps_entry((const void *)tail, &end, &hg));
        }
    }
}

/* populate, by MADV_POPULATE_WRITE or (old_kernel: NPU_MAP_POPULATE_WRITE=0, as a kernel
 * before 5.14 that refuses it) by touching every page: every page resident, zero, and still
 * marked for huge pages; and where the first way got huge pages, the second gets them too
 * (pages faulted in before the range is marked for huge pages would be 4 KiB ones) */
static void
test_populate(bool old_kernel)
{
    static long huge_kb_madvise = -1;
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = 4 * MIB + pg;
    if (old_kernel)
        setenv("NPU_MAP_POPULATE_WRITE", "0", 1);
    unsigned char *p = npu_map_anon(len, false, true);
    unsetenv("NPU_MAP_POPULATE_WRITE");
    CHECK(p != NULL);
    if (!p)
        return;
    size_t npg = (len + pg - 1) / pg, resident = 0;
    unsigned char *vec = malloc(npg);
    CHECK(vec && mincore(p, len, vec) == 0);
    for (size_t i = 0; vec && i < npg; i++)
        resident += vec[i] & 1;
    if (!emulated) /* by either path (a kernel before 5.14 takes MAP_POPULATE's) */
        CHECK_EQ_INT((long long)npg, (long long)resident);
    uintptr_t end = 0;
    bool hg = false;
    long huge_kb = -1;
    if (!emulated) {
        CHECK(smaps_entry_huge(p, &end, &hg, &huge_kb));
        CHECK_EQ_INT((long long)((len + pg - 1) / pg * pg), (long long)(end - (uintptr_t)p));
        if (thp_offered())
            CHECK(hg);
        if (!old_kernel)
            huge_kb_madvise = huge_kb;
        else if (thp_offered() && huge_kb_madvise > 0 && huge_kb <= 0)
            fprintf(stderr,
                    "populate without MADV_POPULATE_WRITE: %ld kB in huge pages, %ld with\n",
                    huge_kb, huge_kb_madvise);
        if (old_kernel && thp_offered() && huge_kb_madvise > 0)
            CHECK(huge_kb > 0);
    }
    CHECK(all_zero(p, len));
    free(vec);
    CHECK(munmap(p, len) == 0);
}

static void
test_noreserve(void)
{
    /* the weight region's reservation: 8 GiB of address space, pages only where touched */
    size_t len = (size_t)8 << 30;
    unsigned char *p = npu_map_anon(len, true, false);
    CHECK(p != NULL);
    if (!p)
        return;
    p[len / 2] = 7;
    p[len - 1] = 9;
    CHECK(p[len / 2] == 7 && p[len - 1] == 9 && p[0] == 0);
    CHECK(munmap(p, len) == 0);
}

int
main(void)
{
    const char *em = getenv("NPU_TEST_EMULATED");
    emulated = em && *em && strcmp(em, "0") != 0;
    test_sizes();
    test_populate(false);
    test_populate(true);
    if (sizeof(size_t) >= 8)
        test_noreserve();
    return npu_test_done("test-map-anon");
}
