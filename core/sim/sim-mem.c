/* SPDX-License-Identifier: MIT */
/*
 * sim-mem.c: the simulated NPU's 32-bit IOVA space. All NPU address registers
 * are 32 bits (facts §1.1), so every BO lives below 4 GiB; the vendor runtime
 * sees addresses near the top of the space, growing down (facts §3), and so do
 * we, leaving a one-page hole between BOs so that an overrun lands on nothing
 * instead of on a neighbour.
 *
 * Every DMA the simulator performs goes through sim_mem_resolve(): the whole
 * byte range must lie inside one mapped BO, otherwise the job faults with a
 * message naming the task, the block and the address. A job works on a
 * snapshot of the mapping table taken when it starts (with a reference on
 * each BO), so a BO destroyed while a job runs stays readable by that job and
 * no lookup needs a lock.
 */
#include "sim-priv.h"

#include <stdlib.h>
#include <string.h>

#define SIM_PAGE 4096u
#define SIM_IOVA_TOP 0x100000000ull
/* The lowest page is never mapped, so that address 0 always faults. */
#define SIM_IOVA_BOTTOM 0x00001000ull

void
sim_bo_unref(struct npu_sim_bo *bo)
{
    if (!bo)
        return;
    if (__atomic_sub_fetch(&bo->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        free(bo->host);
        free(bo);
    }
}

static void
bo_ref(struct npu_sim_bo *bo)
{
    __atomic_add_fetch(&bo->refs, 1, __ATOMIC_RELAXED);
}

bool
sim_bo_ref_if_mapped(struct npu_sim_bo *bo)
{
    struct sim_mem *mem = &bo->sim->mem;
    pthread_mutex_lock(&mem->lock);
    bool ok = bo->mapped;
    if (ok)
        bo_ref(bo);
    pthread_mutex_unlock(&mem->lock);
    return ok;
}

void
sim_mem_init(struct sim_mem *mem)
{
    memset(mem, 0, sizeof(*mem));
    pthread_mutex_init(&mem->lock, NULL);
}

void
sim_mem_fini(struct sim_mem *mem)
{
    for (size_t i = 0; i < mem->n; i++) {
        npu_warn("sim", "BO at IOVA 0x%08x (%zu bytes) still mapped at close; freed",
                 mem->bos[i]->iova, mem->bos[i]->size);
        mem->bos[i]->mapped = false;
        sim_bo_unref(mem->bos[i]);
    }
    free(mem->bos);
    pthread_mutex_destroy(&mem->lock);
}

/* Index of the first BO whose IOVA is >= iova (table sorted by IOVA). */
static size_t
lower_bound(struct npu_sim_bo *const *bos, size_t n, uint64_t iova)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (bos[mid]->iova < iova)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Inserts bo (span already set) at its sorted place; caller holds the lock. */
static enum npu_status
insert_locked(struct sim_mem *mem, struct npu_sim_bo *bo)
{
    if (mem->n == mem->cap) {
        size_t cap = mem->cap ? mem->cap * 2 : 32;
        struct npu_sim_bo **nb = realloc(mem->bos, cap * sizeof(*nb));
        if (!nb)
            return NPU_ERR_NOMEM;
        mem->bos = nb;
        mem->cap = cap;
    }
    size_t i = lower_bound(mem->bos, mem->n, bo->iova);
    memmove(&mem->bos[i + 1], &mem->bos[i], (mem->n - i) * sizeof(*mem->bos));
    mem->bos[i] = bo;
    mem->n++;
    return NPU_OK;
}

/* Whether [lo, hi) (page-rounded, with a one-page guard each side for
 * automatically placed BOs) is free; caller holds the lock. */
static bool
range_free_locked(const struct sim_mem *mem, uint64_t lo, uint64_t hi)
{
    size_t i = lower_bound(mem->bos, mem->n, lo);
    if (i < mem->n && mem->bos[i]->iova < hi)
        return false;
    if (i > 0) {
        const struct npu_sim_bo *p = mem->bos[i - 1];
        if ((uint64_t)p->iova + p->span > lo)
            return false;
    }
    return true;
}

static struct npu_sim_bo *
bo_alloc(struct npu_sim *sim, size_t size)
{
    if (size == 0 || size > SIM_IOVA_TOP - SIM_IOVA_BOTTOM) {
        npu_err("sim", "BO size %zu is not between 1 byte and the 32-bit IOVA space", size);
        return NULL;
    }
    struct npu_sim_bo *bo = calloc(1, sizeof(*bo));
    if (!bo)
        return NULL;
    bo->sim = sim;
    bo->size = size;
    bo->span = NPU_ALIGN((uint64_t)size, SIM_PAGE);
    /* Page-aligned, zeroed host memory: rknpu BOs come from shmem pages, which
     * the kernel hands out zeroed. */
    bo->host = aligned_alloc(SIM_PAGE, bo->span);
    if (!bo->host) {
        free(bo);
        npu_err("sim", "out of host memory for a %zu-byte BO", size);
        return NULL;
    }
    memset(bo->host, 0, bo->span);
    bo->refs = 1;
    return bo;
}

enum npu_status
npu_sim_bo_create(struct npu_sim *sim, size_t size, struct npu_sim_bo **out)
{
    *out = NULL;
    struct npu_sim_bo *bo = bo_alloc(sim, size);
    if (!bo)
        return size ? NPU_ERR_NOMEM : NPU_ERR_INVALID;
    struct sim_mem *mem = &sim->mem;
    pthread_mutex_lock(&mem->lock);
    /* Top-down first fit: walk the gaps between neighbours from the top of
     * the space, keeping a one-page guard next to every existing BO. */
    uint64_t found = 0;
    for (size_t k = mem->n + 1; k-- > 0;) {
        uint64_t hi = k == mem->n ? SIM_IOVA_TOP : (uint64_t)mem->bos[k]->iova - SIM_PAGE;
        uint64_t lo = k == 0 ? SIM_IOVA_BOTTOM
                             : (uint64_t)mem->bos[k - 1]->iova + mem->bos[k - 1]->span + SIM_PAGE;
        if (hi > lo && hi - lo >= bo->span) {
            found = hi - bo->span;
            break;
        }
    }
    enum npu_status st = NPU_OK;
    if (!found) {
        st = NPU_ERR_NOMEM;
        npu_err("sim", "no room for a %zu-byte BO in the 32-bit IOVA space", size);
    } else {
        bo->iova = (uint32_t)found;
        bo->mapped = true;
        st = insert_locked(mem, bo);
    }
    pthread_mutex_unlock(&mem->lock);
    if (st != NPU_OK) {
        sim_bo_unref(bo);
        return st;
    }
    *out = bo;
    return NPU_OK;
}

enum npu_status
npu_sim_bo_create_at(struct npu_sim *sim, uint32_t iova, size_t size, struct npu_sim_bo **out)
{
    *out = NULL;
    if (iova % SIM_PAGE || iova < SIM_IOVA_BOTTOM) {
        npu_err("sim", "fixed IOVA 0x%08x must be page aligned and not in page 0", iova);
        return NPU_ERR_INVALID;
    }
    if (size == 0 || (uint64_t)iova + size > SIM_IOVA_TOP) {
        npu_err("sim", "BO of %zu bytes at 0x%08x does not fit below 4 GiB", size, iova);
        return NPU_ERR_INVALID;
    }
    struct npu_sim_bo *bo = bo_alloc(sim, size);
    if (!bo)
        return NPU_ERR_NOMEM;
    bo->iova = iova;
    struct sim_mem *mem = &sim->mem;
    pthread_mutex_lock(&mem->lock);
    enum npu_status st = NPU_OK;
    if (!range_free_locked(mem, iova, (uint64_t)iova + bo->span)) {
        st = NPU_ERR_BUSY;
        npu_err("sim", "IOVA range 0x%08x+0x%llx overlaps a mapped BO", iova,
                (unsigned long long)bo->span);
    } else {
        bo->mapped = true;
        st = insert_locked(mem, bo);
    }
    pthread_mutex_unlock(&mem->lock);
    if (st != NPU_OK) {
        sim_bo_unref(bo);
        return st;
    }
    *out = bo;
    return NPU_OK;
}

void *
npu_sim_bo_cpu(const struct npu_sim_bo *bo)
{
    return bo->host;
}

uint32_t
npu_sim_bo_iova(const struct npu_sim_bo *bo)
{
    return bo->iova;
}

size_t
npu_sim_bo_size(const struct npu_sim_bo *bo)
{
    return bo->size;
}

void
npu_sim_bo_destroy(struct npu_sim_bo *bo)
{
    if (!bo)
        return;
    struct sim_mem *mem = &bo->sim->mem;
    pthread_mutex_lock(&mem->lock);
    size_t i = lower_bound(mem->bos, mem->n, bo->iova);
    if (i < mem->n && mem->bos[i] == bo) {
        memmove(&mem->bos[i], &mem->bos[i + 1], (mem->n - i - 1) * sizeof(*mem->bos));
        mem->n--;
    }
    bo->mapped = false;
    pthread_mutex_unlock(&mem->lock);
    sim_bo_unref(bo);
}

enum npu_status
sim_memview_take(struct sim_mem *mem, struct sim_memview *view)
{
    memset(view, 0, sizeof(*view));
    pthread_mutex_lock(&mem->lock);
    if (mem->n) {
        view->bos = malloc(mem->n * sizeof(*view->bos));
        if (!view->bos) {
            pthread_mutex_unlock(&mem->lock);
            return NPU_ERR_NOMEM;
        }
        for (size_t i = 0; i < mem->n; i++) {
            view->bos[i] = mem->bos[i];
            bo_ref(mem->bos[i]);
        }
        view->n = mem->n;
    }
    pthread_mutex_unlock(&mem->lock);
    return NPU_OK;
}

void
sim_memview_release(struct sim_memview *view)
{
    for (size_t i = 0; i < view->n; i++)
        sim_bo_unref(view->bos[i]);
    free(view->bos);
    memset(view, 0, sizeof(*view));
}

/* The BO containing iova, or NULL. */
const struct npu_sim_bo *
sim_memview_find(struct sim_memview *view, uint64_t iova)
{
    if (view->hint < view->n) {
        const struct npu_sim_bo *b = view->bos[view->hint];
        if (iova >= b->iova && iova < (uint64_t)b->iova + b->size)
            return b;
    }
    size_t i = lower_bound(view->bos, view->n, iova + 1);
    if (i == 0)
        return NULL;
    const struct npu_sim_bo *b = view->bos[i - 1];
    if (iova >= b->iova && iova < (uint64_t)b->iova + b->size) {
        view->hint = i - 1;
        return b;
    }
    return NULL;
}

uint8_t *
sim_memview_resolve(struct sim_memview *view, uint64_t iova, uint64_t len,
                    const struct npu_sim_bo **bo_out)
{
    const struct npu_sim_bo *b = sim_memview_find(view, iova);
    if (bo_out)
        *bo_out = b;
    if (!b)
        return NULL;
    if (len > (uint64_t)b->iova + b->size - iova)
        return NULL;
    return b->host + (iova - b->iova);
}
