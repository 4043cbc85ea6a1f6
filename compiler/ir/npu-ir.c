/* SPDX-License-Identifier: MIT */
/*
 * npu-ir.c: graph construction and editing: the arena every node, value, name
 * and constant payload lives in, the name table that keeps value names unique
 * (the text form refers to values by name), node list surgery for passes, and
 * attribute setters. Nothing here knows about ONNX or kernels.
 */
#include "npu/npu-ir.h"

#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ir-priv.h"
#include "npu/npu-program.h"

#define DOM "ir"
#define ARENA_CHUNK (256u * 1024u)
/* Refuse single allocations above this: a model file asking for more is corrupt
 * (and size_t arithmetic near SIZE_MAX must never wrap). */
#define ARENA_MAX_ALLOC ((size_t)1 << 40)
/* Blocks of at least this size are mapped (and populated) on their own. */
#define ARENA_MAP_MIN ((size_t)1 << 20)

struct arena_chunk {
    struct arena_chunk *next;
    size_t size, used;
    unsigned char *mem; /* 64-byte aligned, inside raw */
    void *raw;
    size_t mapped; /* raw is an anonymous mapping of this many bytes (0: from calloc) */
};

struct arena_mapping {
    struct arena_mapping *next;
    void *addr;
    size_t len; /* 0: addr came from malloc (npu_graph_adopt_malloc) */
};

struct npu_arena {
    struct arena_chunk *chunks;
    size_t total;
    struct arena_mapping *mappings; /* npu_graph_adopt_mapping: unmapped with the graph */
    /* npu_graph_alloc_weights: one reserved range, shared with the programs codegen makes
     * (npu-program.h); [0, wused) handed out */
    struct npu_shared_mapping *wmap;
    size_t wused;
    bool wnone; /* no region could be reserved: plain arena memory */
};

static void *
arena_alloc(struct npu_arena *a, size_t size)
{
    if (size > ARENA_MAX_ALLOC)
        return NULL;
    size = NPU_ALIGN(size ? size : 1, 64);
    struct arena_chunk *c = a->chunks;
    if (!c || c->size - c->used < size) {
        size_t csize = size > ARENA_CHUNK / 4 ? size : ARENA_CHUNK;
        c = calloc(1, sizeof(*c));
        if (!c)
            return NULL;
        /* calloc, not posix_memalign + memset: a large chunk comes from fresh pages that
         * are zero already, so the weights copied in are not preceded by a clearing pass */
        if (csize >= ARENA_MAP_MIN) {
            /* a big block: its own populated mapping (zero pages, faulted in one call
             * instead of one fault per page as the weights are copied in; huge pages where
             * the kernel offers them, npu_map_anon) */
            void *m = npu_map_anon(csize, false, true);
            if (m) {
                c->raw = m;
                c->mapped = csize;
            }
        }
        if (!c->raw)
            c->raw = calloc(1, csize + 63);
        if (!c->raw) {
            free(c);
            return NULL;
        }
        c->mem = (unsigned char *)c->raw + (-(uintptr_t)c->raw & 63);
        c->size = csize;
        a->total += csize;
        if (size > ARENA_CHUNK / 4 && a->chunks) {
            /* Big blocks get their own chunk behind the current one so that the
             * current chunk keeps serving small allocations. */
            c->next = a->chunks->next;
            a->chunks->next = c;
        } else {
            c->next = a->chunks;
            a->chunks = c;
        }
    }
    void *p = c->mem + c->used;
    c->used += size;
    return p;
}

void *
npu_graph_alloc(struct npu_graph *g, size_t size)
{
    void *p = arena_alloc(g->arena, size);
    if (!p)
        npu_err(DOM, "out of memory allocating %zu bytes", size);
    return p;
}

/* The weight region's reservation: address space only (pages are committed as
 * allocations reach them); the codegen's weights must stay under 4 GiB anyway. */
#define WEIGHT_REGION_BYTES ((size_t)1 << (sizeof(size_t) >= 8 ? 33 : 30))

void *
npu_graph_alloc_weights(struct npu_graph *g, size_t size)
{
    struct npu_arena *a = g->arena;
    if (!a->wmap && !a->wnone && sizeof(void *) >= 8) {
        a->wmap = npu_shared_mapping_new(WEIGHT_REGION_BYTES);
        a->wnone = !a->wmap;
    }
    size_t off = NPU_ALIGN(a->wused, 64);
    if (!a->wmap || size > npu_shared_mapping_size(a->wmap) - off)
        return npu_graph_alloc(g, size);
    npu_shared_mapping_commit(a->wmap, off, size);
    a->wused = off + size;
    return (unsigned char *)npu_shared_mapping_addr(a->wmap) + off;
}

struct npu_shared_mapping *
npu_graph_weight_region(const struct npu_graph *g, size_t *used)
{
    if (used)
        *used = g->arena->wmap ? g->arena->wused : 0;
    return g->arena->wmap;
}

char *
npu_graph_strdup(struct npu_graph *g, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s);
    char *d = npu_graph_alloc(g, n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

enum npu_status
npu_graph_adopt_malloc(struct npu_graph *g, void *p)
{
    if (!p)
        return NPU_OK;
    enum npu_status st = npu_graph_adopt_mapping(g, p, 1);
    if (!st)
        g->arena->mappings->len = 0; /* freed, not unmapped */
    return st;
}

bool
npu_graph_free_unused_const(struct npu_graph *g, struct npu_value *v)
{
    if (!g || !g->arena || !v || v->kind != NPU_VALUE_CONST || v->nusers || v->is_output ||
        !v->t.data)
        return false;
    /* the adopted block holding v's data (a view, or one column block of a cut weight, may
     * start inside it) */
    const uint8_t *p = v->t.data, *lo = NULL, *hi = NULL;
    struct arena_mapping **pm = &g->arena->mappings;
    for (; *pm; pm = &(*pm)->next) {
        if ((*pm)->len)
            continue;
        lo = (*pm)->addr;
        hi = lo + malloc_usable_size((*pm)->addr);
        if (p >= lo && p < hi)
            break;
    }
    if (!*pm)
        return false;
    /* every value pointing into it must be dead (no users, not an output) */
    for (int k = 0; k < g->nvalues; k++) {
        const struct npu_value *u = g->values[k];
        const uint8_t *d = u->kind == NPU_VALUE_CONST ? u->t.data : NULL;
        if (d && d >= lo && d < hi && (u->nusers || u->is_output))
            return false;
    }
    for (int k = 0; k < g->nvalues; k++) {
        struct npu_value *u = g->values[k];
        const uint8_t *d = u->kind == NPU_VALUE_CONST ? u->t.data : NULL;
        if (d && d >= lo && d < hi)
            u->t.data = NULL;
    }
    struct arena_mapping *m = *pm;
    *pm = m->next;
    free(m->addr);
    free(m);
    return true;
}

bool
npu_graph_release_data(const struct npu_graph *g, const void *p, size_t n)
{
    for (const struct arena_chunk *c = g && g->arena ? g->arena->chunks : NULL; c; c = c->next)
        if (c->mapped && (const void *)c->mem == p && c->used == NPU_ALIGN(n ? n : 1, 64) &&
            c->mem == (unsigned char *)c->raw)
            return madvise(c->raw, c->mapped, MADV_DONTNEED) == 0;
    return false;
}

enum npu_status
npu_graph_adopt_mapping(struct npu_graph *g, void *addr, size_t len)
{
    struct arena_mapping *m = calloc(1, sizeof(*m));
    if (!m) {
        npu_err(DOM, "out of memory");
        return NPU_ERR_NOMEM;
    }
    m->addr = addr;
    m->len = len;
    m->next = g->arena->mappings;
    g->arena->mappings = m;
    return NPU_OK;
}

bool
npu_graph_owns(const struct npu_graph *g, const void *p, size_t n)
{
    const uintptr_t lo = (uintptr_t)p;
    if (!g || !p || lo + n < lo)
        return false;
    for (const struct arena_chunk *c = g->arena->chunks; c; c = c->next)
        if (lo >= (uintptr_t)c->mem && lo + n <= (uintptr_t)c->mem + c->used)
            return true;
    for (const struct arena_mapping *m = g->arena->mappings; m; m = m->next)
        if (lo >= (uintptr_t)m->addr && lo + n <= (uintptr_t)m->addr + m->len)
            return true;
    const uintptr_t w = (uintptr_t)npu_shared_mapping_addr(g->arena->wmap);
    return w && lo >= w && lo + n <= w + g->arena->wused;
}

size_t
npu_graph_arena_bytes(const struct npu_graph *g)
{
    return g->arena->total;
}

/* ---- name map: open addressing, names -> values ------------------------- */

struct npu_name_map {
    struct npu_value **slot;
    size_t cap, count;
};

static uint64_t
str_hash(const char *s)
{
    return npu_fnv1a64(s, strlen(s));
}

static struct npu_value **
map_lookup(const struct npu_name_map *m, const char *name)
{
    size_t mask = m->cap - 1;
    for (size_t i = str_hash(name) & mask;; i = (i + 1) & mask) {
        if (!m->slot[i] || !strcmp(m->slot[i]->name, name))
            return &m->slot[i];
    }
}

static bool
map_grow(struct npu_name_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 256;
    struct npu_value **old = m->slot;
    size_t ocap = m->cap;
    m->slot = calloc(ncap, sizeof(*m->slot));
    if (!m->slot) {
        m->slot = old;
        return false;
    }
    m->cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i])
            *map_lookup(m, old[i]->name) = old[i];
    free(old);
    return true;
}

static bool
map_insert(struct npu_name_map *m, struct npu_value *v)
{
    if ((m->count + 1) * 2 > m->cap && !map_grow(m))
        return false;
    struct npu_value **s = map_lookup(m, v->name);
    if (!*s)
        m->count++;
    *s = v;
    return true;
}

static void
map_remove(struct npu_name_map *m, const char *name)
{
    if (!m->cap)
        return;
    struct npu_value **s = map_lookup(m, name);
    if (!*s)
        return;
    *s = NULL;
    m->count--;
    /* Re-insert the rest of the cluster so lookups do not stop early. */
    size_t mask = m->cap - 1;
    for (size_t i = ((size_t)(s - m->slot) + 1) & mask; m->slot[i]; i = (i + 1) & mask) {
        struct npu_value *v = m->slot[i];
        m->slot[i] = NULL;
        *map_lookup(m, v->name) = v;
    }
}

/* ---- graph ----------------------------------------------------------------- */

struct npu_graph *
npu_graph_new(const char *name)
{
    struct npu_graph *g = calloc(1, sizeof(*g));
    if (!g)
        goto err;
    g->arena = calloc(1, sizeof(*g->arena));
    g->names = calloc(1, sizeof(*g->names));
    if (!g->arena || !g->names || !map_grow(g->names))
        goto err_free;
    g->name = npu_graph_strdup(g, name ? name : "main");
    if (!g->name)
        goto err_free;
    g->opset = 21;
    return g;
err_free:
    npu_graph_free(g);
err:
    npu_err(DOM, "out of memory creating a graph");
    return NULL;
}

void
npu_graph_free(struct npu_graph *g)
{
    if (!g)
        return;
    if (g->arena) {
        for (struct arena_chunk *c = g->arena->chunks, *nx; c; c = nx) {
            nx = c->next;
            if (c->mapped)
                munmap(c->raw, c->mapped);
            else
                free(c->raw);
            free(c);
        }
        for (struct arena_mapping *m = g->arena->mappings, *nx; m; m = nx) {
            nx = m->next;
            if (m->len)
                munmap(m->addr, m->len);
            else
                free(m->addr);
            free(m);
        }
        npu_shared_mapping_put(g->arena->wmap);
        free(g->arena);
    }
    if (g->names) {
        free(g->names->slot);
        free(g->names);
    }
    free(g->values);
    free(g->inputs);
    free(g->outputs);
    free(g->use_pool);
    free(g);
}

static bool
grow_ptrs(void ***arr, int *cap, int need)
{
    if (need <= *cap)
        return true;
    int ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    void **p = realloc(*arr, (size_t)ncap * sizeof(void *));
    if (!p)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

struct npu_value *
npu_graph_find_value(const struct npu_graph *g, const char *name)
{
    return *map_lookup(g->names, name);
}

static struct npu_value *
value_create(struct npu_graph *g, const char *name)
{
    struct npu_value *v = npu_graph_alloc(g, sizeof(*v));
    if (!v)
        return NULL;
    v->name = npu_graph_strdup(g, name);
    if (!v->name || !grow_ptrs((void ***)&g->values, &g->cap_values, g->nvalues + 1) ||
        !map_insert(g->names, v)) {
        npu_err(DOM, "out of memory adding value '%s'", name);
        return NULL;
    }
    v->id = g->next_value_id++;
    g->values[g->nvalues++] = v;
    return v;
}

struct npu_value *
npu_value_new_exact(struct npu_graph *g, const char *name)
{
    if (npu_graph_find_value(g, name)) {
        npu_err(DOM, "value name '%s' is defined twice", name);
        return NULL;
    }
    return value_create(g, name);
}

enum npu_status
npu_value_rename(struct npu_graph *g, struct npu_value *v, const char *name)
{
    if (!g || !v || !name || !*name)
        return NPU_ERR_INVALID;
    if (!strcmp(v->name, name))
        return NPU_OK;
    if (npu_graph_find_value(g, name)) {
        npu_err(DOM, "cannot rename '%s': value name '%s' is defined twice", v->name, name);
        return NPU_ERR_INVALID;
    }
    const char *nm = npu_graph_strdup(g, name);
    if (!nm || ((g->names->count + 1) * 2 > g->names->cap && !map_grow(g->names))) {
        npu_err(DOM, "out of memory renaming value '%s'", v->name);
        return NPU_ERR_NOMEM;
    }
    map_remove(g->names, v->name);
    v->name = nm;
    map_insert(g->names, v); /* room made above: cannot fail */
    return NPU_OK;
}

struct npu_value *
npu_value_new(struct npu_graph *g, const char *name)
{
    if (!name || !*name)
        name = "v";
    if (!npu_graph_find_value(g, name))
        return value_create(g, name);
    size_t n = strlen(name);
    char *buf = malloc(n + 24);
    if (!buf)
        return NULL;
    struct npu_value *v = NULL;
    for (unsigned i = 1;; i++) {
        snprintf(buf, n + 24, "%s.%u", name, i);
        if (!npu_graph_find_value(g, buf)) {
            v = value_create(g, buf);
            break;
        }
    }
    free(buf);
    return v;
}

static bool
set_shape(struct npu_tensor *t, enum npu_dtype dt, int ndim, const int64_t *dims)
{
    if (ndim < 0 || ndim > NPU_MAX_DIMS)
        return false;
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->dims[i] = dims[i];
    return npu_tensor_nbytes(t) >= 0;
}

struct npu_value *
npu_graph_add_input(struct npu_graph *g, const char *name, enum npu_dtype dt, int ndim,
                    const int64_t *dims)
{
    struct npu_value *v = npu_value_new_exact(g, name);
    if (!v)
        return NULL;
    if (!set_shape(&v->t, dt, ndim, dims)) {
        npu_err(DOM, "input '%s': bad shape", name);
        return NULL;
    }
    if (!grow_ptrs((void ***)&g->inputs, &g->cap_inputs, g->ninputs + 1))
        return NULL;
    v->kind = NPU_VALUE_INPUT;
    g->inputs[g->ninputs++] = v;
    return v;
}

struct npu_value *
npu_graph_add_const_owned(struct npu_graph *g, const char *name, const struct npu_tensor *t)
{
    struct npu_value *v = npu_value_new(g, name);
    if (!v)
        return NULL;
    v->kind = NPU_VALUE_CONST;
    v->t = *t;
    return v;
}

struct npu_value *
npu_graph_add_const(struct npu_graph *g, const char *name, const struct npu_tensor *t)
{
    int64_t nb = npu_tensor_nbytes(t);
    if (nb < 0) {
        npu_err(DOM, "constant '%s': bad shape", name);
        return NULL;
    }
    void *d = npu_graph_alloc(g, (size_t)nb);
    if (!d)
        return NULL;
    if (nb && t->data)
        memcpy(d, t->data, (size_t)nb);
    struct npu_tensor c = *t;
    c.data = d;
    return npu_graph_add_const_owned(g, name, &c);
}

struct npu_value *
npu_graph_add_const_weights(struct npu_graph *g, const char *name, const struct npu_tensor *t)
{
    int64_t nb = npu_tensor_nbytes(t);
    if (nb < 0) {
        npu_err(DOM, "constant '%s': bad shape", name);
        return NULL;
    }
    void *d = npu_graph_alloc_weights(g, (size_t)nb);
    if (!d)
        return NULL;
    if (nb && t->data)
        memcpy(d, t->data, (size_t)nb);
    struct npu_tensor c = *t;
    c.data = d;
    return npu_graph_add_const_owned(g, name, &c);
}

struct npu_value *
npu_graph_const_i64(struct npu_graph *g, const char *name, const int64_t *v, int n, bool scalar)
{
    struct npu_tensor t = {
        .dtype = NPU_DTYPE_INT64, .ndim = scalar ? 0 : 1, .dims = {n}, .data = (void *)v};
    return npu_graph_add_const(g, name, &t);
}

struct npu_value *
npu_graph_const_f32(struct npu_graph *g, const char *name, const float *v, int n, bool scalar)
{
    struct npu_tensor t = {
        .dtype = NPU_DTYPE_FP32, .ndim = scalar ? 0 : 1, .dims = {n}, .data = (void *)v};
    return npu_graph_add_const(g, name, &t);
}

enum npu_status
npu_graph_add_output(struct npu_graph *g, struct npu_value *v)
{
    if (!grow_ptrs((void ***)&g->outputs, &g->cap_outputs, g->noutputs + 1))
        return NPU_ERR_NOMEM;
    v->is_output = true;
    g->outputs[g->noutputs++] = v;
    return NPU_OK;
}

void
npu_value_make_const(struct npu_value *v, void *data)
{
    v->kind = NPU_VALUE_CONST;
    v->t.data = data;
    v->known = NULL;
    v->producer = NULL;
    v->producer_idx = 0;
    v->hash = 0;
}

/* ---- nodes ----------------------------------------------------------------- */

struct npu_node *
npu_node_new(struct npu_graph *g, enum npu_op op, const char *name, struct npu_value *const *in,
             int nin, int nout, const char *const *out_names)
{
    if (nin < 0 || nout < 0 || nin > 4096 || nout > 4096)
        return NULL;
    struct npu_node *n = npu_graph_alloc(g, sizeof(*n));
    if (!n)
        return NULL;
    n->op = op;
    n->id = g->next_node_id++;
    n->name = npu_graph_strdup(g, name);
    n->in = npu_graph_alloc(g, sizeof(*n->in) * (size_t)(nin ? nin : 1));
    n->out = npu_graph_alloc(g, sizeof(*n->out) * (size_t)(nout ? nout : 1));
    if (!n->name || !n->in || !n->out)
        return NULL;
    n->nin = nin;
    n->nout = nout;
    for (int i = 0; i < nin; i++)
        n->in[i] = in ? in[i] : NULL;
    for (int i = 0; i < nout; i++) {
        char buf[64];
        const char *on = out_names ? out_names[i] : NULL;
        if (!on || !*on) {
            snprintf(buf, sizeof(buf), "%.40s_out%d", *n->name ? n->name : npu_op_name(op), i);
            on = buf;
        }
        struct npu_value *v = npu_value_new(g, on);
        if (!v)
            return NULL;
        v->producer = n;
        v->producer_idx = i;
        n->out[i] = v;
    }
    return n;
}

struct npu_node *
npu_node_new_v(struct npu_graph *g, enum npu_op op, const char *name, struct npu_value *const *in,
               int nin, struct npu_value *const *out, int nout)
{
    struct npu_node *n = npu_node_new(g, op, name, in, nin, 0, NULL);
    if (!n)
        return NULL;
    n->out = npu_graph_alloc(g, sizeof(*n->out) * (size_t)(nout ? nout : 1));
    if (!n->out)
        return NULL;
    n->nout = nout;
    for (int i = 0; i < nout; i++) {
        struct npu_value *v = out[i];
        v->kind = NPU_VALUE_NODE;
        v->producer = n;
        v->producer_idx = i;
        n->out[i] = v;
    }
    return n;
}

void
npu_graph_append(struct npu_graph *g, struct npu_node *n)
{
    n->prev = g->tail;
    n->next = NULL;
    if (g->tail)
        g->tail->next = n;
    else
        g->head = n;
    g->tail = n;
    n->attached = true;
    g->nnodes++;
}

void
npu_graph_insert_before(struct npu_graph *g, struct npu_node *pos, struct npu_node *n)
{
    if (!pos) {
        npu_graph_append(g, n);
        return;
    }
    n->next = pos;
    n->prev = pos->prev;
    if (pos->prev)
        pos->prev->next = n;
    else
        g->head = n;
    pos->prev = n;
    n->attached = true;
    g->nnodes++;
}

void
npu_graph_remove(struct npu_graph *g, struct npu_node *n)
{
    if (!n->attached)
        return;
    if (n->prev)
        n->prev->next = n->next;
    else
        g->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        g->tail = n->prev;
    n->prev = n->next = NULL;
    n->attached = false;
    g->nnodes--;
    for (int i = 0; i < n->nout; i++)
        if (n->out[i] && n->out[i]->producer == n)
            n->out[i]->producer = NULL;
}

void
npu_node_set_output(struct npu_node *n, int i, struct npu_value *v)
{
    if (v->producer && v->producer != n && v->producer->out[v->producer_idx] == v) {
        /* The old producer keeps a placeholder so that it stays well formed
         * until it is removed. */
        v->producer->out[v->producer_idx] = n->out[i];
    }
    struct npu_value *old = n->out[i];
    if (old && old != v && old->producer == n) {
        old->producer = NULL;
    }
    n->out[i] = v;
    v->kind = NPU_VALUE_NODE;
    v->producer = n;
    v->producer_idx = i;
    v->t.data = NULL;
}

void
npu_graph_replace_uses(struct npu_graph *g, struct npu_value *from, struct npu_value *to)
{
    npu_graph_for_each_node (g, n)
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] == from)
                n->in[i] = to;
}

enum npu_status
npu_graph_update_uses(struct npu_graph *g)
{
    size_t total = 0;
    for (int i = 0; i < g->nvalues; i++) {
        g->values[i]->nusers = 0;
        g->values[i]->users = NULL;
    }
    npu_graph_for_each_node (g, n)
        total += (size_t)n->nin;
    if (total > g->cap_use_pool) {
        struct npu_node **p = realloc(g->use_pool, (total + 64) * sizeof(*p));
        if (!p)
            return NPU_ERR_NOMEM;
        g->use_pool = p;
        g->cap_use_pool = total + 64;
    }
    npu_graph_for_each_node (g, n)
        for (int i = 0; i < n->nin; i++)
            if (n->in[i])
                n->in[i]->nusers++;
    size_t off = 0;
    for (int i = 0; i < g->nvalues; i++) {
        struct npu_value *v = g->values[i];
        v->users = g->use_pool ? g->use_pool + off : NULL; /* NULL + 0 is undefined */
        off += (size_t)v->nusers;
        v->nusers = 0;
    }
    npu_graph_for_each_node (g, n) {
        for (int i = 0; i < n->nin; i++) {
            struct npu_value *v = n->in[i];
            /* A node using one value twice is listed once per use. */
            if (v)
                v->users[v->nusers++] = n;
        }
    }
    return NPU_OK;
}

void
npu_graph_gc_values(struct npu_graph *g)
{
    npu_graph_update_uses(g);
    int k = 0;
    for (int i = 0; i < g->nvalues; i++) {
        struct npu_value *v = g->values[i];
        bool live = v->kind == NPU_VALUE_INPUT || v->is_output || v->nusers > 0 ||
                    (v->kind == NPU_VALUE_NODE && v->producer && v->producer->attached);
        if (live) {
            g->values[k++] = v;
        } else {
            map_remove(g->names, v->name);
        }
    }
    g->nvalues = k;
}

/* ---- attributes -------------------------------------------------------- */

static struct npu_attr *
attr_slot(struct npu_graph *g, struct npu_node *n, const char *name)
{
    for (int i = 0; i < n->nattr; i++)
        if (!strcmp(n->attr[i].name, name)) {
            memset(&n->attr[i], 0, sizeof(n->attr[i]));
            n->attr[i].name = name;
            n->attr[i].name = npu_graph_strdup(g, name);
            return n->attr[i].name ? &n->attr[i] : NULL;
        }
    if (n->nattr == n->cap_attr) {
        int ncap = n->cap_attr ? n->cap_attr * 2 : 4;
        struct npu_attr *a = npu_graph_alloc(g, sizeof(*a) * (size_t)ncap);
        if (!a)
            return NULL;
        if (n->nattr)
            memcpy(a, n->attr, sizeof(*a) * (size_t)n->nattr);
        n->attr = a;
        n->cap_attr = ncap;
    }
    struct npu_attr *a = &n->attr[n->nattr];
    memset(a, 0, sizeof(*a));
    a->name = npu_graph_strdup(g, name);
    if (!a->name)
        return NULL;
    n->nattr++;
    return a;
}

enum npu_status
npu_node_set_int(struct npu_graph *g, struct npu_node *n, const char *name, int64_t v)
{
    struct npu_attr *a = attr_slot(g, n, name);
    if (!a)
        return NPU_ERR_NOMEM;
    a->type = NPU_ATTR_INT;
    a->i = v;
    return NPU_OK;
}

enum npu_status
npu_node_set_float(struct npu_graph *g, struct npu_node *n, const char *name, float v)
{
    struct npu_attr *a = attr_slot(g, n, name);
    if (!a)
        return NPU_ERR_NOMEM;
    a->type = NPU_ATTR_FLOAT;
    a->f = v;
    return NPU_OK;
}

enum npu_status
npu_node_set_string(struct npu_graph *g, struct npu_node *n, const char *name, const char *v)
{
    char *s = npu_graph_strdup(g, v);
    struct npu_attr *a = s ? attr_slot(g, n, name) : NULL;
    if (!a)
        return NPU_ERR_NOMEM;
    a->type = NPU_ATTR_STRING;
    a->s = s;
    return NPU_OK;
}

enum npu_status
npu_node_set_ints(struct npu_graph *g, struct npu_node *n, const char *name, const int64_t *v,
                  size_t cnt)
{
    int64_t *d = npu_graph_alloc(g, sizeof(*d) * cnt);
    struct npu_attr *a = d ? attr_slot(g, n, name) : NULL;
    if (!a)
        return NPU_ERR_NOMEM;
    if (cnt)
        memcpy(d, v, sizeof(*d) * cnt);
    a->type = NPU_ATTR_INTS;
    a->ints = d;
    a->n = cnt;
    return NPU_OK;
}

enum npu_status
npu_node_set_floats(struct npu_graph *g, struct npu_node *n, const char *name, const float *v,
                    size_t cnt)
{
    float *d = npu_graph_alloc(g, sizeof(*d) * cnt);
    struct npu_attr *a = d ? attr_slot(g, n, name) : NULL;
    if (!a)
        return NPU_ERR_NOMEM;
    if (cnt)
        memcpy(d, v, sizeof(*d) * cnt);
    a->type = NPU_ATTR_FLOATS;
    a->floats = d;
    a->n = cnt;
    return NPU_OK;
}

enum npu_status
npu_node_set_strings(struct npu_graph *g, struct npu_node *n, const char *name,
                     const char *const *v, size_t cnt)
{
    const char **d = npu_graph_alloc(g, sizeof(*d) * cnt);
    if (!d)
        return NPU_ERR_NOMEM;
    for (size_t i = 0; i < cnt; i++)
        if (!(d[i] = npu_graph_strdup(g, v[i])))
            return NPU_ERR_NOMEM;
    struct npu_attr *a = attr_slot(g, n, name);
    if (!a)
        return NPU_ERR_NOMEM;
    a->type = NPU_ATTR_STRINGS;
    a->strs = d;
    a->n = cnt;
    return NPU_OK;
}

enum npu_status
npu_node_set_tensor(struct npu_graph *g, struct npu_node *n, const char *name,
                    const struct npu_tensor *t)
{
    int64_t nb = npu_tensor_nbytes(t);
    if (nb < 0)
        return NPU_ERR_INVALID;
    struct npu_tensor *c = npu_graph_alloc(g, sizeof(*c));
    void *d = npu_graph_alloc(g, (size_t)nb);
    if (!c || !d)
        return NPU_ERR_NOMEM;
    *c = *t;
    if (nb && t->data)
        memcpy(d, t->data, (size_t)nb);
    c->data = d;
    struct npu_attr *a = attr_slot(g, n, name);
    if (!a)
        return NPU_ERR_NOMEM;
    a->type = NPU_ATTR_TENSOR;
    a->t = c;
    return NPU_OK;
}

enum npu_status
npu_node_set_attr(struct npu_graph *g, struct npu_node *n, const struct npu_attr *a)
{
    switch (a->type) {
    case NPU_ATTR_INT: return npu_node_set_int(g, n, a->name, a->i);
    case NPU_ATTR_FLOAT: return npu_node_set_float(g, n, a->name, a->f);
    case NPU_ATTR_STRING: return npu_node_set_string(g, n, a->name, a->s);
    case NPU_ATTR_INTS: return npu_node_set_ints(g, n, a->name, a->ints, a->n);
    case NPU_ATTR_FLOATS: return npu_node_set_floats(g, n, a->name, a->floats, a->n);
    case NPU_ATTR_STRINGS: return npu_node_set_strings(g, n, a->name, a->strs, a->n);
    case NPU_ATTR_TENSOR: return npu_node_set_tensor(g, n, a->name, a->t);
    }
    return NPU_ERR_INVALID;
}

void
npu_node_del_attr(struct npu_node *n, const char *name)
{
    for (int i = 0; i < n->nattr; i++)
        if (!strcmp(n->attr[i].name, name)) {
            memmove(&n->attr[i], &n->attr[i + 1], sizeof(n->attr[0]) * (size_t)(n->nattr - i - 1));
            n->nattr--;
            return;
        }
}

/* ---- value helpers --------------------------------------------------------- */

uint64_t
npu_fnv1a64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t
npu_value_hash(struct npu_value *v)
{
    if (!v->hash && v->kind == NPU_VALUE_CONST) {
        int64_t nb = npu_tensor_nbytes(&v->t);
        v->hash = npu_fnv1a64(v->t.data, nb > 0 ? (size_t)nb : 0);
    }
    return v->hash;
}

int64_t
npu_value_get_i64(const struct npu_value *v, int64_t i)
{
    return npu_dtype_load_i64(v->t.dtype, npu_value_data(v), i);
}

double
npu_value_get_f64(const struct npu_value *v, int64_t i)
{
    return npu_dtype_load_f64(v->t.dtype, npu_value_data(v), i);
}

bool
npu_value_is_scalar_const(const struct npu_value *v, double x, double rel_tol)
{
    if (!v || !npu_value_data(v))
        return false;
    int64_t n = npu_value_numel(v);
    if (n < 1)
        return false;
    for (int64_t i = 0; i < n; i++) {
        double e = npu_value_get_f64(v, i);
        if (npu_dtype_is_float(v->t.dtype)) {
            if (!(fabs(e - x) <= rel_tol * fmax(fabs(x), 1e-30)))
                return false;
        } else if (e != x) {
            return false;
        }
    }
    return true;
}

const char *
npu_device_name(enum npu_node_device d)
{
    switch (d) {
    case NPU_DEVICE_ANY: return "any";
    case NPU_DEVICE_CPU: return "cpu";
    case NPU_DEVICE_NPU: return "npu";
    }
    return "?";
}

void
npu_graph_apply_cost(struct npu_graph *g, npu_ir_cost_fn fn, void *user)
{
    npu_graph_for_each_node (g, n)
        n->cost = fn(n, n->device, user);
}
