/* SPDX-License-Identifier: MIT */
/*
 * npu-program.c: the program object's memory and its printout. A program
 * (npu/npu-program.h) owns one arena from which every tensor, step, job and
 * image comes, so a whole program is freed at once; codegen and the .npub
 * loader build programs with these, the runtime executes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npu/npu-program.h"

/* ---- program arena ------------------------------------------------------------------ */

struct prog_block {
    struct prog_block *next;
    size_t used, cap;
    size_t mapped; /* an anonymous mapping of this many bytes (0: from aligned_alloc) */
    _Alignas(64) unsigned char data[];
};

struct prog_box {
    struct npu_program p; /* first: npu_program_free() casts back */
    struct prog_block *blocks;
    struct npu_shared_mapping *held; /* npu_program_hold_mapping */
};

struct npu_shared_mapping {
    unsigned char *addr;
    size_t len;       /* reserved */
    size_t committed; /* [0, committed) populated */
    int refs;
};

struct npu_shared_mapping *
npu_shared_mapping_new(size_t reserve)
{
    if (!reserve)
        return NULL;
    struct npu_shared_mapping *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    /* address space only: MAP_NORESERVE, and no page is touched until committed; in
     * huge pages where the kernel offers them (npu_map_anon: the packed weights are
     * written once, 4 KiB pages cost a fault each) */
    void *a = npu_map_anon(reserve, true, false);
    if (!a) {
        free(m);
        return NULL;
    }
    m->addr = a;
    m->len = reserve;
    m->refs = 1;
    return m;
}

void *
npu_shared_mapping_addr(const struct npu_shared_mapping *m)
{
    return m ? m->addr : NULL;
}

size_t
npu_shared_mapping_size(const struct npu_shared_mapping *m)
{
    return m ? m->len : 0;
}

void
npu_shared_mapping_commit(struct npu_shared_mapping *m, size_t off, size_t len)
{
    if (!m || off >= m->len)
        return;
    long psz = sysconf(_SC_PAGESIZE);
    size_t pg = psz > 0 ? (size_t)psz : 4096, end = off + NPU_MIN(len, m->len - off);
    size_t lo = NPU_MAX(off, m->committed) / pg * pg, hi = (end + pg - 1) / pg * pg;
    if (hi <= lo)
        return;
#ifdef MADV_POPULATE_WRITE
    /* zero pages faulted in by one call instead of one fault per page (Linux 5.14;
     * older kernels refuse it and the pages fault on first touch) */
    (void)madvise(m->addr + lo, NPU_MIN(hi, m->len) - lo, MADV_POPULATE_WRITE);
#endif
    m->committed = NPU_MAX(m->committed, NPU_MIN(hi, m->len));
}

void
npu_shared_mapping_get(struct npu_shared_mapping *m)
{
    if (m)
        __atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
}

void
npu_shared_mapping_put(struct npu_shared_mapping *m)
{
    if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL))
        return;
    munmap(m->addr, m->len);
    free(m);
}

enum npu_status
npu_program_hold_mapping(struct npu_program *p, struct npu_shared_mapping *m)
{
    struct prog_box *b = (struct prog_box *)p;
    if (!p || !m || b->held)
        return NPU_ERR_INVALID;
    npu_shared_mapping_get(m);
    b->held = m;
    return NPU_OK;
}

struct npu_program *
npu_program_new(void)
{
    struct prog_box *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->p.version = NPU_PROGRAM_VERSION;
    return &b->p;
}

static void *alloc_block(struct npu_program *p, size_t size, bool populate);

void *
npu_program_alloc(struct npu_program *p, size_t size)
{
    return alloc_block(p, size, true);
}

void *
npu_program_alloc_lazy(struct npu_program *p, size_t size)
{
    return alloc_block(p, size, false);
}

static void *
alloc_block(struct npu_program *p, size_t size, bool populate)
{
    struct prog_box *b = (struct prog_box *)p;
    size = (size + 63) & ~(size_t)63;
    if (!size)
        size = 64;
    struct prog_block *k = b->blocks;
    if (!k || k->cap - k->used < size) {
        size_t cap = size > (1u << 20) ? size : (1u << 20);
        size_t bytes = (sizeof(*k) + cap + 63) & ~(size_t)63;
        void *m = MAP_FAILED;
        if (size > (1u << 20)) /* a big buffer (weights): zero pages faulted in at once */
            m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
        k = m != MAP_FAILED ? m : aligned_alloc(64, bytes);
        if (!k)
            return NULL;
        k->next = b->blocks;
        k->used = 0;
        k->cap = cap;
        k->mapped = m != MAP_FAILED ? bytes : 0;
        b->blocks = k;
        if (k->mapped) { /* zero already */
            k->used = size;
            return k->data;
        }
    }
    void *r = k->data + k->used;
    k->used += size;
    memset(r, 0, size);
    return r;
}

char *
npu_program_strdup(struct npu_program *p, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *r = npu_program_alloc(p, n);
    if (r)
        memcpy(r, s, n);
    return r;
}

void
npu_program_free(struct npu_program *p)
{
    if (!p)
        return;
    struct prog_box *b = (struct prog_box *)p;
    for (struct prog_block *k = b->blocks, *n; k; k = n) {
        n = k->next;
        if (k->mapped)
            munmap(k, k->mapped);
        else
            free(k);
    }
    npu_shared_mapping_put(b->held);
    free(b);
}

/* ---- printing -------------------------------------------------------------------- */

void
npu_program_print(const struct npu_program *p, FILE *f)
{
    static const char *const kinds[] = {"cpu", "npu-job", "convert"};
    fprintf(f,
            "program v%u: %d steps, %d jobs, %d tensors, weights %llu B, activations %llu B, "
            "host arena %llu B",
            p->version, p->n_steps, p->n_jobs, p->n_tensors, (unsigned long long)p->weights_bytes,
            (unsigned long long)p->act_bytes, (unsigned long long)p->host_bytes);
    if (p->state_bytes)
        fprintf(f, ", state %llu B", (unsigned long long)p->state_bytes);
    fputc('\n', f);
    for (int i = 0; i < p->n_steps; i++) {
        const struct npu_prog_step *s = &p->steps[i];
        fprintf(f, "  step %d %s", i, kinds[s->kind]);
        if (s->kind == NPU_STEP_CPU)
            fprintf(f, " %s", npu_op_name(s->op));
        if (s->kind == NPU_STEP_NPU_JOB) {
            const struct npu_prog_job *j = &p->jobs[s->job];
            fprintf(f,
                    " job %d: %u tasks, %u qwords, %u relocs, modeled %.1f us (timing model "
                    "v1)",
                    s->job, j->n_tasks, j->n_qwords, j->n_relocs, j->modeled_s * 1e6);
            if (j->n_dynrelocs)
                fprintf(f, ", %u moved per run by position inputs", j->n_dynrelocs);
        }
        for (int k = 0; k < s->nin; k++)
            if (s->in[k] >= 0)
                fprintf(f, " <%s", p->tensors[s->in[k]].name);
        for (int k = 0; k < s->nout; k++)
            fprintf(f, " >%s", p->tensors[s->out[k]].name);
        fprintf(f, "  [%s]\n", s->name ? s->name : "");
    }
}
