/* SPDX-License-Identifier: MIT */
/*
 * npu-npub-read.c: the .npub loader. The file is mapped read-only (or, from
 * memory, copied to an aligned buffer) and checked in layers, each before
 * anything relies on it:
 *   1. header: size, magic, format version, header size, file size, header
 *      hash, body hash (XXH64);
 *   2. section table: hash, count, kinds known and unique, offsets aligned,
 *      ranges inside the file and not overlapping the header or table,
 *      record counts times record sizes equal to the section sizes, each
 *      section's hash;
 *   3. records: every string reference inside the pool (which ends in NUL),
 *      model metadata within its bounds (sizes, unique non-empty keys),
 *      every enum value in range, every index range inside its array, every
 *      payload range inside CONSTS and aligned, constant sizes equal to what
 *      dtype and dims give, op names known;
 *   4. the program as a whole (npu_program_validate: buffer ranges, tensor
 *      layouts, step operands, relocations on address registers, no
 *      unrelocated address);
 *   5. every CPU step's output dtypes and shapes re-inferred by the IR's
 *      shape inference from its inputs and attributes, so kernels only ever
 *      see consistent shapes.
 * Large payloads (weights, constants) stay in the mapping; small arrays are
 * decoded into memory owned by the artifact.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-hash.h"
#include "npu/npu-backend.h"
#include "npu/npu-ir.h"
#include "npu/npu-npub.h"
#include "npu/npu-program-check.h"
#include "npub-format.h"

#define DOM "npub"
/* Small constants are given to shape inference with their data (shape
 * operands); larger ones only as typed values. */
#define INFER_DATA_MAX 4096

struct npu_npub {
    struct npu_program prog;
    struct npu_npub_meta meta;
    uint8_t *bytes; /* the file */
    size_t len;
    bool mapped;
    struct npu_prog_tensor *tensors;
    struct npu_prog_step *steps;
    struct npu_attr *attrs;
    struct npu_tensor *attr_tensors;
    void **payloads; /* decoded attribute arrays */
    size_t npayloads;
    int *indices;
    struct npu_prog_job *jobs;
    struct npu_prog_task *tasks;
    struct npu_prog_reloc *relocs;
    struct npu_prog_dynreloc *dynrelocs;
    uint64_t *regcmd;
    char *meta_text;
    struct npu_model_prop *props;
};

struct sec {
    bool present;
    uint32_t count;
    uint64_t off, size;
    const uint8_t *p;
};

struct rd {
    struct npu_npub *a;
    struct sec s[SEC_KIND_END];
    char *err;
    size_t err_len;
    uint32_t n_indices;
};

static const char *const sec_names[SEC_KIND_END] = {
    [SEC_META] = "META",       [SEC_STRINGS] = "STRINGS", [SEC_PROGRAM] = "PROGRAM",
    [SEC_TENSORS] = "TENSORS", [SEC_STEPS] = "STEPS",     [SEC_ATTRS] = "ATTRS",
    [SEC_INDICES] = "INDICES", [SEC_JOBS] = "JOBS",       [SEC_TASKS] = "TASKS",
    [SEC_RELOCS] = "RELOCS",   [SEC_REGCMD] = "REGCMD",   [SEC_WEIGHTS] = "WEIGHTS",
    [SEC_CONSTS] = "CONSTS",   [SEC_PROPS] = "PROPS",     [SEC_DYNRELOCS] = "DYNRELOCS",
};

static const uint32_t rec_bytes[SEC_KIND_END] = {
    [SEC_PROGRAM] = PROGRAM_BYTES,
    [SEC_TENSORS] = TENSOR_BYTES,
    [SEC_STEPS] = STEP_BYTES,
    [SEC_ATTRS] = ATTR_BYTES,
    [SEC_INDICES] = 4,
    [SEC_JOBS] = JOB_BYTES,
    [SEC_TASKS] = TASK_BYTES,
    [SEC_RELOCS] = RELOC_BYTES,
    [SEC_REGCMD] = 8,
    [SEC_PROPS] = PROP_BYTES,
    [SEC_DYNRELOCS] = DYNRELOC_BYTES,
};

static enum npu_status NPU_PRINTF(2, 3) fail(struct rd *r, const char *fmt, ...)
{
    if (r->err && r->err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err, r->err_len, fmt, ap);
        va_end(ap);
    }
    return NPU_ERR_CORRUPT;
}

/* [off, off + n) inside [0, size)? (overflow safe) */
static bool
in_range(uint64_t off, uint64_t n, uint64_t size)
{
    return off <= size && n <= size - off;
}

/* A string reference: NULL for NPUB_NO_STRING, else a pointer into the pool.
 * *ok is cleared (and the error set) when the reference is bad. */
static const char *
str_ref(struct rd *r, uint32_t ref, const char *what, int idx, bool *ok)
{
    if (ref == NPUB_NO_STRING)
        return NULL;
    const struct sec *s = &r->s[SEC_STRINGS];
    if (ref >= s->size) {
        if (*ok)
            fail(r, "%s %d: string reference %u outside the %llu-byte string pool", what, idx, ref,
                 (unsigned long long)s->size);
        *ok = false;
        return NULL;
    }
    return (const char *)s->p + ref; /* the pool ends in NUL (checked) */
}

static bool
dtype_ok(uint32_t d)
{
    return d > NPU_DTYPE_UNDEFINED && d < NPU_DTYPE_COUNT;
}

/* ---- layer 1 and 2: header, table, hashes -------------------------------------------- */

static enum npu_status
check_container(struct rd *r)
{
    const uint8_t *b = r->a->bytes;
    uint64_t len = r->a->len;
    if (len < NPUB_HEADER_BYTES)
        return fail(r, "file is %llu bytes, shorter than the %u-byte header",
                    (unsigned long long)len, NPUB_HEADER_BYTES);
    if (memcmp(b + H_MAGIC, NPUB_MAGIC, 8))
        return fail(r, "bad magic (not a .npub artifact)");
    uint32_t fmt = get32(b + H_FORMAT);
    if (fmt < NPU_NPUB_FORMAT_MIN || fmt > NPU_NPUB_FORMAT_VERSION) {
        fail(r, "format version %u; this build reads versions %u to %u (recompile the model)", fmt,
             NPU_NPUB_FORMAT_MIN, NPU_NPUB_FORMAT_VERSION);
        return NPU_ERR_VERSION;
    }
    if (get32(b + H_HEADER_SIZE) != NPUB_HEADER_BYTES)
        return fail(r, "header size %u (expected %u)", get32(b + H_HEADER_SIZE), NPUB_HEADER_BYTES);
    if (get64(b + H_HEADER_HASH) != npu_xxh64(b, H_HEADER_HASH, 0))
        return fail(r, "header checksum mismatch (the header is damaged)");
    if (get64(b + H_FILE_SIZE) != len)
        return fail(r, "file is %llu bytes but its header says %llu (truncated or extended)",
                    (unsigned long long)len, (unsigned long long)get64(b + H_FILE_SIZE));
    if (get32(b + H_FLAGS))
        return fail(r, "header flags 0x%x (none are defined)", get32(b + H_FLAGS));
    for (unsigned i = H_TABLE_HASH + 8; i < H_BODY_HASH; i++)
        if (b[i])
            return fail(r, "reserved header byte %u is not zero", i);
    uint32_t ppv = get32(b + H_PROGRAM_VERSION);
    if (ppv != NPU_PROGRAM_VERSION) {
        fail(r, "program version %u; this build runs version %u", ppv, NPU_PROGRAM_VERSION);
        return NPU_ERR_VERSION;
    }
    if (get64(b + H_BODY_HASH) != npu_xxh64(b + NPUB_HEADER_BYTES, len - NPUB_HEADER_BYTES, 0))
        return fail(r, "body checksum mismatch (the file is damaged)");

    uint32_t ns = get32(b + H_N_SECTIONS);
    uint64_t toff = get64(b + H_TABLE_OFFSET);
    if (ns > NPUB_MAX_SECTIONS)
        return fail(r, "%u sections (at most %u)", ns, NPUB_MAX_SECTIONS);
    if (toff != NPUB_HEADER_BYTES || !in_range(toff, (uint64_t)ns * NPUB_SECTION_ENTRY_BYTES, len))
        return fail(r, "section table at %llu (%u entries) outside the file",
                    (unsigned long long)toff, ns);
    const uint8_t *tab = b + toff;
    uint64_t tend = toff + (uint64_t)ns * NPUB_SECTION_ENTRY_BYTES;
    if (get64(b + H_TABLE_HASH) != npu_xxh64(tab, (size_t)ns * NPUB_SECTION_ENTRY_BYTES, 0))
        return fail(r, "section table checksum mismatch");
    for (uint32_t i = 0; i < ns; i++) {
        const uint8_t *e = tab + i * NPUB_SECTION_ENTRY_BYTES;
        uint32_t kind = get32(e + S_KIND), count = get32(e + S_COUNT);
        uint64_t off = get64(e + S_OFFSET), size = get64(e + S_SIZE);
        if (kind < SEC_META || kind >= SEC_KIND_END)
            return fail(r, "section %u: kind %u unknown", i, kind);
        const char *nm = sec_names[kind];
        if (kind == SEC_PROPS && fmt < 2)
            return fail(r, "section PROPS in a format %u artifact (it exists from format 2)", fmt);
        if (kind == SEC_DYNRELOCS && fmt < 3)
            return fail(r, "section DYNRELOCS in a format %u artifact (it exists from format 3)",
                        fmt);
        struct sec *s = &r->s[kind];
        if (s->present)
            return fail(r, "section %s appears twice", nm);
        if (off % NPUB_ALIGN || off < tend || !in_range(off, size, len))
            return fail(r,
                        "section %s: bytes [%llu, +%llu) misplaced (file %llu bytes, table "
                        "ends at %llu, alignment %u)",
                        nm, (unsigned long long)off, (unsigned long long)size,
                        (unsigned long long)len, (unsigned long long)tend, NPUB_ALIGN);
        if (rec_bytes[kind] && (uint64_t)count * rec_bytes[kind] != size)
            return fail(r, "section %s: %u records of %u bytes do not fill its %llu bytes", nm,
                        count, rec_bytes[kind], (unsigned long long)size);
        if (!rec_bytes[kind] && count)
            return fail(r, "section %s: record count %u on a byte section", nm, count);
        if (get64(e + S_HASH) != npu_xxh64(b + off, (size_t)size, 0))
            return fail(r, "section %s: checksum mismatch", nm);
        *s = (struct sec){true, count, off, size, b + off};
    }
    /* sections must not overlap each other */
    for (int i = 1; i < SEC_KIND_END; i++)
        for (int j = i + 1; j < SEC_KIND_END; j++) {
            const struct sec *x = &r->s[i], *y = &r->s[j];
            if (x->present && y->present && x->size && y->size && x->off < y->off + y->size &&
                y->off < x->off + x->size)
                return fail(r, "sections %s and %s overlap", sec_names[i], sec_names[j]);
        }
    static const int required[] = {SEC_META, SEC_STRINGS, SEC_PROGRAM};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(required); i++)
        if (!r->s[required[i]].present)
            return fail(r, "section %s missing", sec_names[required[i]]);
    if (r->s[SEC_PROGRAM].count != 1)
        return fail(r, "section PROGRAM holds %u records (expected 1)", r->s[SEC_PROGRAM].count);
    const struct sec *st = &r->s[SEC_STRINGS];
    if (!st->size || st->p[st->size - 1] != 0)
        return fail(r, "section STRINGS does not end with a NUL byte");
    if (r->s[SEC_META].size > (1u << 20))
        return fail(r, "section META is %llu bytes (at most 1 MiB)",
                    (unsigned long long)r->s[SEC_META].size);
    return NPU_OK;
}

/* ---- layer 3: records ----------------------------------------------------------------- */

static enum npu_status
read_meta(struct rd *r)
{
    struct npu_npub *a = r->a;
    const struct sec *s = &r->s[SEC_META];
    a->meta_text = malloc(s->size + 1);
    if (!a->meta_text)
        return NPU_ERR_NOMEM;
    memcpy(a->meta_text, s->p, s->size);
    a->meta_text[s->size] = 0;
    if (strlen(a->meta_text) != s->size)
        return fail(r, "section META contains a NUL byte");
    a->meta.format_version = get32(a->bytes + H_FORMAT);
    a->meta.compiler_version = get32(a->bytes + H_COMPILER);
    a->meta.model_hash = get64(a->bytes + H_MODEL_HASH);
    a->meta.options_hash = get64(a->bytes + H_OPTIONS_HASH);
    a->meta.compiler = a->meta.options = a->meta.source = "";
    for (char *line = a->meta_text; *line;) {
        char *nl = strchr(line, '\n');
        if (!nl)
            return fail(r, "section META: last line not terminated");
        *nl = 0;
        char *eq = strchr(line, '=');
        if (!eq)
            return fail(r, "section META: line without '='");
        *eq = 0;
        if (!strcmp(line, "compiler"))
            a->meta.compiler = eq + 1;
        else if (!strcmp(line, "options"))
            a->meta.options = eq + 1;
        else if (!strcmp(line, "source"))
            a->meta.source = eq + 1;
        line = nl + 1;
    }
    return NPU_OK;
}

/* Model metadata: PROP records, both strings in the pool, within the bounds
 * of npu-npub.h (npu_npub_props_check: sizes, non-empty unique keys). */
static enum npu_status
read_props(struct rd *r)
{
    struct npu_npub *a = r->a;
    const struct sec *s = &r->s[SEC_PROPS];
    uint32_t n = s->present ? s->count : 0;
    if (n > NPU_NPUB_MAX_PROPS)
        return fail(r, "section PROPS: %u metadata entries (at most %u)", n, NPU_NPUB_MAX_PROPS);
    if (!n)
        return NPU_OK;
    a->props = calloc(n, sizeof(*a->props));
    if (!a->props)
        return NPU_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = s->p + (size_t)i * PROP_BYTES;
        bool ok = true;
        a->props[i].key = str_ref(r, get32(p + PR_KEY), "metadata entry", (int)i, &ok);
        a->props[i].value = str_ref(r, get32(p + PR_VALUE), "metadata entry", (int)i, &ok);
        if (!ok)
            return NPU_ERR_CORRUPT;
    }
    char why[256];
    if (!npu_npub_props_check(a->props, n, why, sizeof(why)))
        return fail(r, "section PROPS: %s", why);
    a->meta.props = a->props;
    a->meta.n_props = n;
    return NPU_OK;
}

static enum npu_status
read_indices(struct rd *r)
{
    const struct sec *s = &r->s[SEC_INDICES];
    r->n_indices = s->present ? s->count : 0;
    r->a->indices = malloc(sizeof(int) * ((size_t)r->n_indices + 1));
    if (!r->a->indices)
        return NPU_ERR_NOMEM;
    for (uint32_t i = 0; i < r->n_indices; i++)
        r->a->indices[i] = (int32_t)get32(s->p + 4 * (size_t)i);
    return NPU_OK;
}

/* An index range [start, start + n) of INDICES. */
static enum npu_status
index_range(struct rd *r, uint32_t start, uint32_t n, const char *what, int idx, const int **out)
{
    if (!in_range(start, n, r->n_indices))
        return fail(r, "%s %d: operand range [%u, +%u) outside the %u indices", what, idx, start, n,
                    r->n_indices);
    *out = r->a->indices + start;
    return NPU_OK;
}

static enum npu_status
read_dims(struct rd *r, const uint8_t *p, uint32_t ndim, int64_t *dims, const char *what, int idx)
{
    if (ndim > NPU_MAX_DIMS)
        return fail(r, "%s %d: rank %u (at most %d)", what, idx, ndim, NPU_MAX_DIMS);
    for (uint32_t d = 0; d < NPU_MAX_DIMS; d++) {
        int64_t v = (int64_t)get64(p + 8 * d);
        if (d < ndim && (v < 0 || v > (1ll << 40)))
            return fail(r, "%s %d: dim %u = %lld", what, idx, d, (long long)v);
        if (d >= ndim && v)
            return fail(r, "%s %d: dim %u set past the rank %u", what, idx, d, ndim);
        dims[d] = d < ndim ? v : 0;
    }
    return NPU_OK;
}

/* A payload range of CONSTS, aligned to `align`. */
static const uint8_t *
payload(struct rd *r, uint64_t off, uint64_t bytes, uint64_t align, const char *what, int idx,
        bool *ok)
{
    const struct sec *c = &r->s[SEC_CONSTS];
    if (!bytes)
        return NULL;
    if (!c->present || !in_range(off, bytes, c->size) || off % align) {
        if (*ok)
            fail(r,
                 "%s %d: payload [%llu, +%llu) outside CONSTS (%llu bytes) or not %llu-byte "
                 "aligned",
                 what, idx, (unsigned long long)off, (unsigned long long)bytes,
                 (unsigned long long)(c->present ? c->size : 0), (unsigned long long)align);
        *ok = false;
        return NULL;
    }
    return c->p + off;
}

static enum npu_status
read_tensors(struct rd *r)
{
    struct npu_npub *a = r->a;
    const struct sec *s = &r->s[SEC_TENSORS];
    uint32_t n = s->present ? s->count : 0;
    a->tensors = calloc((size_t)n + 1, sizeof(*a->tensors));
    if (!a->tensors)
        return NPU_ERR_NOMEM;
    if (n > INT32_MAX / 2)
        return fail(r, "%u tensors", n);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = s->p + (size_t)i * TENSOR_BYTES;
        struct npu_prog_tensor *t = &a->tensors[i];
        bool ok = true;
        t->name = str_ref(r, get32(p + T_NAME), "tensor", (int)i, &ok);
        if (!ok)
            return NPU_ERR_CORRUPT;
        uint32_t dt = get32(p + T_DTYPE), mdt = get32(p + T_MEM_DTYPE), place = get32(p + T_PLACE);
        uint32_t layout = get32(p + T_LAYOUT), flags = get32(p + T_FLAGS);
        if (!dtype_ok(dt))
            return fail(r, "tensor %u: dtype %u unknown", i, dt);
        if (mdt && !dtype_ok(mdt))
            return fail(r, "tensor %u: memory dtype %u unknown", i, mdt);
        if (place > NPU_PLACE_NPU)
            return fail(r, "tensor %u: placement %u unknown", i, place);
        if (layout > NPU_LAYOUT_SMALL_C)
            return fail(r, "tensor %u: layout %u unknown", i, layout);
        if (flags & ~T_FLAG_CONST)
            return fail(r, "tensor %u: flags 0x%x unknown", i, flags);
        t->t.dtype = (enum npu_dtype)dt;
        t->t.ndim = (int)NPU_MIN(get32(p + T_NDIM), 255u);
        enum npu_status st =
            read_dims(r, p + T_DIMS, get32(p + T_NDIM), t->t.dims, "tensor", (int)i);
        if (st)
            return st;
        t->t.qscale = getf32(p + T_QSCALE);
        t->t.qzero = (int32_t)get32(p + T_QZERO);
        t->place = (enum npu_place)place;
        t->offset = get64(p + T_OFFSET);
        t->bytes = get64(p + T_BYTES);
        t->buffer = get32(p + T_BUFFER);
        t->layout = (enum npu_layout)layout;
        t->mem_dtype = (enum npu_dtype)mdt;
        t->npu_c = get32(p + T_NPU_C);
        t->npu_h = get32(p + T_NPU_H);
        t->npu_w = get32(p + T_NPU_W);
        t->npu_order = get32(p + T_ORDER);
        t->io_input = (int32_t)get32(p + T_IO_INPUT);
        t->io_output = (int32_t)get32(p + T_IO_OUTPUT);
        uint64_t doff = get64(p + T_DATA_OFFSET), dsz = get64(p + T_DATA_SIZE);
        if (flags & T_FLAG_CONST) {
            int64_t nb = npu_tensor_nbytes(&t->t);
            if (place != NPU_PLACE_HOST)
                return fail(r, "tensor %u '%s': constant data on an NPU tensor", i, t->name);
            if (nb < 0 || (uint64_t)nb != dsz)
                return fail(r,
                            "tensor %u '%s': %llu bytes of constant data, its dtype and dims "
                            "need %lld",
                            i, t->name ? t->name : "", (unsigned long long)dsz, (long long)nb);
            if (dsz) {
                t->t.data = (void *)payload(r, doff, dsz, NPUB_ALIGN, "tensor", (int)i, &ok);
            } else {
                /* an empty constant still needs a non-NULL pointer to read as one */
                static const uint64_t empty;
                t->t.data = (void *)&empty;
            }
            if (!ok)
                return NPU_ERR_CORRUPT;
        } else if (doff || dsz) {
            return fail(r, "tensor %u: data range set on a non-constant tensor", i);
        }
    }
    a->prog.tensors = a->tensors;
    a->prog.n_tensors = (int)n;
    return NPU_OK;
}

static void *
keep(struct npu_npub *a, size_t bytes)
{
    void **np = realloc(a->payloads, sizeof(*np) * (a->npayloads + 1));
    if (!np)
        return NULL;
    a->payloads = np;
    void *p = malloc(bytes ? bytes : 1);
    if (p)
        a->payloads[a->npayloads++] = p;
    return p;
}

static enum npu_status
read_attrs(struct rd *r)
{
    struct npu_npub *a = r->a;
    const struct sec *s = &r->s[SEC_ATTRS];
    uint32_t n = s->present ? s->count : 0;
    a->attrs = calloc((size_t)n + 1, sizeof(*a->attrs));
    a->attr_tensors = calloc((size_t)n + 1, sizeof(*a->attr_tensors));
    if (!a->attrs || !a->attr_tensors)
        return NPU_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = s->p + (size_t)i * ATTR_BYTES;
        struct npu_attr *x = &a->attrs[i];
        bool ok = true;
        x->name = str_ref(r, get32(p + A_NAME), "attribute", (int)i, &ok);
        if (ok && !x->name)
            return fail(r, "attribute %u: no name", i);
        uint32_t type = get32(p + A_TYPE);
        if (type > NPU_ATTR_TENSOR)
            return fail(r, "attribute %u '%s': type %u unknown", i, x->name ? x->name : "", type);
        x->type = (enum npu_attr_type)type;
        uint64_t off = get64(p + A_PAYLOAD), cnt = get64(p + A_N);
        const uint8_t *pl;
        if (cnt > (1ull << 32))
            return fail(r, "attribute %u: %llu elements", i, (unsigned long long)cnt);
        switch (x->type) {
        case NPU_ATTR_INT: x->i = (int64_t)get64(p + A_I); break;
        case NPU_ATTR_FLOAT: x->f = getf32(p + A_F); break;
        case NPU_ATTR_STRING:
            x->s = str_ref(r, get32(p + A_S), "attribute", (int)i, &ok);
            if (ok && !x->s)
                return fail(r, "attribute %u '%s': string missing", i, x->name);
            break;
        case NPU_ATTR_INTS: {
            pl = payload(r, off, 8 * cnt, 8, "attribute", (int)i, &ok);
            int64_t *v = ok ? keep(a, 8 * cnt) : NULL;
            if (ok && !v)
                return NPU_ERR_NOMEM;
            for (uint64_t k = 0; ok && k < cnt; k++)
                v[k] = (int64_t)get64(pl + 8 * k);
            x->ints = v;
            x->n = cnt;
            break;
        }
        case NPU_ATTR_FLOATS: {
            pl = payload(r, off, 4 * cnt, 4, "attribute", (int)i, &ok);
            float *v = ok ? keep(a, 4 * cnt) : NULL;
            if (ok && !v)
                return NPU_ERR_NOMEM;
            for (uint64_t k = 0; ok && k < cnt; k++)
                v[k] = getf32(pl + 4 * k);
            x->floats = v;
            x->n = cnt;
            break;
        }
        case NPU_ATTR_STRINGS: {
            pl = payload(r, off, 4 * cnt, 4, "attribute", (int)i, &ok);
            const char **v = ok ? keep(a, sizeof(char *) * cnt) : NULL;
            if (ok && !v)
                return NPU_ERR_NOMEM;
            for (uint64_t k = 0; ok && k < cnt; k++) {
                v[k] = str_ref(r, get32(pl + 4 * k), "attribute", (int)i, &ok);
                if (ok && !v[k])
                    return fail(r, "attribute %u '%s': string %llu missing", i, x->name,
                                (unsigned long long)k);
            }
            x->strs = v;
            x->n = cnt;
            break;
        }
        case NPU_ATTR_TENSOR: {
            struct npu_tensor *t = &a->attr_tensors[i];
            uint32_t dt = get32(p + A_T_DTYPE);
            if (!dtype_ok(dt))
                return fail(r, "attribute %u '%s': tensor dtype %u unknown", i,
                            x->name ? x->name : "", dt);
            t->dtype = (enum npu_dtype)dt;
            t->ndim = (int)NPU_MIN(get32(p + A_T_NDIM), 255u);
            enum npu_status st =
                read_dims(r, p + A_T_DIMS, get32(p + A_T_NDIM), t->dims, "attribute", (int)i);
            if (st)
                return st;
            t->qscale = getf32(p + A_T_QSCALE);
            t->qzero = (int32_t)get32(p + A_T_QZERO);
            int64_t nb = npu_tensor_nbytes(t);
            if (nb < 0 || (uint64_t)nb != cnt)
                return fail(r,
                            "attribute %u '%s': %llu bytes of tensor data, dtype and dims "
                            "need %lld",
                            i, x->name ? x->name : "", (unsigned long long)cnt, (long long)nb);
            pl = payload(r, off, cnt, NPUB_ALIGN, "attribute", (int)i, &ok);
            t->data = (void *)pl;
            x->t = t;
            break;
        }
        }
        if (!ok)
            return NPU_ERR_CORRUPT;
    }
    return NPU_OK;
}

static enum npu_status
read_steps(struct rd *r)
{
    struct npu_npub *a = r->a;
    const struct sec *s = &r->s[SEC_STEPS];
    uint32_t n = s->present ? s->count : 0,
             nattrs = r->s[SEC_ATTRS].present ? r->s[SEC_ATTRS].count : 0;
    a->steps = calloc((size_t)n + 1, sizeof(*a->steps));
    if (!a->steps)
        return NPU_ERR_NOMEM;
    if (n > INT32_MAX / 2)
        return fail(r, "%u steps", n);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = s->p + (size_t)i * STEP_BYTES;
        struct npu_prog_step *st = &a->steps[i];
        bool ok = true;
        uint32_t kind = get32(p + ST_KIND);
        if (kind > NPU_STEP_CONVERT)
            return fail(r, "step %u: kind %u unknown", i, kind);
        st->kind = (enum npu_step_kind)kind;
        st->name = str_ref(r, get32(p + ST_NAME), "step", (int)i, &ok);
        const char *op = str_ref(r, get32(p + ST_OP), "step", (int)i, &ok);
        if (!ok)
            return NPU_ERR_CORRUPT;
        if (kind == NPU_STEP_CPU) {
            if (!op)
                return fail(r, "step %u: CPU step without an op name", i);
            st->op = npu_op_from_name(op);
            if (st->op == NPU_OP_NONE)
                return fail(r, "step %u: op '%s' unknown to this build", i, op);
        } else if (op) {
            return fail(r, "step %u: op name on a non-CPU step", i);
        }
        st->job = (int32_t)get32(p + ST_JOB);
        uint32_t nin = get32(p + ST_NIN), nout = get32(p + ST_NOUT);
        enum npu_status e;
        if ((e = index_range(r, get32(p + ST_IN_START), nin, "step", (int)i, &st->in)) ||
            (e = index_range(r, get32(p + ST_OUT_START), nout, "step", (int)i, &st->out)))
            return e;
        st->nin = (int)nin;
        st->nout = (int)nout;
        uint32_t as = get32(p + ST_ATTR_START), na = get32(p + ST_NATTR);
        if (!in_range(as, na, nattrs))
            return fail(r, "step %u: attribute range [%u, +%u) outside the %u attributes", i, as,
                        na, nattrs);
        st->attrs.v = a->attrs + as;
        st->attrs.n = na;
    }
    a->prog.steps = a->steps;
    a->prog.n_steps = (int)n;
    return NPU_OK;
}

static enum npu_status
read_jobs(struct rd *r)
{
    struct npu_npub *a = r->a;
    const struct sec *s = &r->s[SEC_JOBS], *sq = &r->s[SEC_REGCMD], *stk = &r->s[SEC_TASKS],
                     *srl = &r->s[SEC_RELOCS];
    uint32_t n = s->present ? s->count : 0;
    uint64_t nq = sq->present ? sq->size / 8 : 0;
    uint32_t nt = stk->present ? stk->count : 0, nr = srl->present ? srl->count : 0;
    a->jobs = calloc((size_t)n + 1, sizeof(*a->jobs));
    a->regcmd = malloc(8 * (size_t)(nq + 1));
    a->tasks = calloc((size_t)nt + 1, sizeof(*a->tasks));
    a->relocs = calloc((size_t)nr + 1, sizeof(*a->relocs));
    if (!a->jobs || !a->regcmd || !a->tasks || !a->relocs)
        return NPU_ERR_NOMEM;
    for (uint64_t i = 0; i < nq; i++)
        a->regcmd[i] = get64(sq->p + 8 * i);
    for (uint32_t i = 0; i < nt; i++) {
        const uint8_t *p = stk->p + (size_t)i * TASK_BYTES;
        bool ok = true;
        a->tasks[i] = (struct npu_prog_task){get32(p + K_START), get32(p + K_N_BODY),
                                             get32(p + K_ENABLE), get32(p + K_INT_MASK),
                                             str_ref(r, get32(p + K_NAME), "task", (int)i, &ok)};
        if (!ok)
            return NPU_ERR_CORRUPT;
    }
    for (uint32_t i = 0; i < nr; i++) {
        const uint8_t *p = srl->p + (size_t)i * RELOC_BYTES;
        a->relocs[i] =
            (struct npu_prog_reloc){get32(p + R_QWORD), get32(p + R_BUFFER), get32(p + R_OFFSET)};
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = s->p + (size_t)i * JOB_BYTES;
        struct npu_prog_job *j = &a->jobs[i];
        uint64_t q0 = get64(p + J_REGCMD_START);
        uint32_t nqw = get32(p + J_N_QWORDS), t0 = get32(p + J_TASK_START);
        uint32_t ntk = get32(p + J_N_TASKS), r0 = get32(p + J_RELOC_START);
        uint32_t nrl = get32(p + J_N_RELOCS);
        if (!in_range(q0, nqw, nq))
            return fail(r, "job %u: regcmd qwords [%llu, +%u) outside REGCMD (%llu qwords)", i,
                        (unsigned long long)q0, nqw, (unsigned long long)nq);
        if (!in_range(t0, ntk, nt))
            return fail(r, "job %u: tasks [%u, +%u) outside TASKS (%u)", i, t0, ntk, nt);
        if (!in_range(r0, nrl, nr))
            return fail(r, "job %u: relocations [%u, +%u) outside RELOCS (%u)", i, r0, nrl, nr);
        *j = (struct npu_prog_job){a->regcmd + q0, nqw, a->tasks + t0,      ntk,
                                   a->relocs + r0, nrl, get32(p + J_ALIGN), getf64(p + J_MODELED)};
    }
    /* run-time positioned relocations (format 3): records in job order, each job's a run */
    const struct sec *sd = &r->s[SEC_DYNRELOCS];
    uint32_t nd = sd->present ? sd->count : 0;
    if (!(a->dynrelocs = calloc((size_t)nd + 1, sizeof(*a->dynrelocs))))
        return NPU_ERR_NOMEM;
    for (uint32_t i = 0; i < nd; i++) {
        const uint8_t *p = sd->p + (size_t)i * DYNRELOC_BYTES;
        uint32_t job = get32(p + D_JOB);
        if (job >= n)
            return fail(r, "dynreloc %u: job %u (%u jobs)", i, job, n);
        if (i && job < get32(sd->p + (size_t)(i - 1) * DYNRELOC_BYTES + D_JOB))
            return fail(r, "dynreloc %u: job %u after job %u (records must be in job order)", i,
                        job, get32(sd->p + (size_t)(i - 1) * DYNRELOC_BYTES + D_JOB));
        struct npu_prog_job *j = &a->jobs[job];
        if (!j->n_dynrelocs)
            j->dynrelocs = a->dynrelocs + i;
        j->n_dynrelocs++;
        a->dynrelocs[i] =
            (struct npu_prog_dynreloc){get32(p + D_RELOC), get32(p + D_INPUT), get32(p + D_STRIDE),
                                       get32(p + D_LIMIT), get32(p + D_EXTENT)};
    }
    a->prog.jobs = a->jobs;
    a->prog.n_jobs = (int)n;
    return NPU_OK;
}

static enum npu_status
read_program(struct rd *r)
{
    struct npu_npub *a = r->a;
    const uint8_t *p = r->s[SEC_PROGRAM].p;
    struct npu_program *pg = &a->prog;
    bool ok = true;
    enum npu_status st;
    pg->version = get32(a->bytes + H_PROGRAM_VERSION);
    uint32_t ni = get32(p + P_N_INPUTS), no = get32(p + P_N_OUTPUTS);
    if ((st = index_range(r, get32(p + P_INPUTS_START), ni, "program inputs", 0, &pg->inputs)) ||
        (st = index_range(r, get32(p + P_OUTPUTS_START), no, "program outputs", 0, &pg->outputs)))
        return st;
    pg->n_inputs = (int)ni;
    pg->n_outputs = (int)no;
    pg->producer = str_ref(r, get32(p + P_PRODUCER), "program", 0, &ok);
    if (!ok)
        return NPU_ERR_CORRUPT;
    bool fmt3 = get32(a->bytes + H_FORMAT) >= 3;
    for (unsigned i = fmt3 ? P_STATE_BYTES + 8 : P_WEIGHTS_BYTES + 8; i < PROGRAM_BYTES; i++)
        if (p[i])
            return fail(r, "program: reserved byte %u is not zero", i);
    pg->state_bytes = fmt3 ? get64(p + P_STATE_BYTES) : 0;
    pg->act_bytes = get64(p + P_ACT_BYTES);
    pg->host_bytes = get64(p + P_HOST_BYTES);
    pg->weights_bytes = get64(p + P_WEIGHTS_BYTES);
    const struct sec *w = &r->s[SEC_WEIGHTS];
    uint64_t wsize = w->present ? w->size : 0;
    if (pg->weights_bytes != wsize)
        return fail(r, "program: weights_bytes %llu but the WEIGHTS section holds %llu",
                    (unsigned long long)pg->weights_bytes, (unsigned long long)wsize);
    pg->weights = wsize ? w->p : NULL;
    return NPU_OK;
}

/* ---- layer 5: CPU step shapes -------------------------------------------------------- */

static enum npu_status
check_cpu_shapes(struct rd *r)
{
    const struct npu_program *p = &r->a->prog;
    struct npu_graph *g = NULL; /* one scratch graph for every step: values get unique names */
    enum npu_status e = NPU_OK;
    char vn[48];
    for (int s = 0; s < p->n_steps && !e; s++) {
        const struct npu_prog_step *st = &p->steps[s];
        struct npu_value *in[64] = {0};
        if (st->kind != NPU_STEP_CPU)
            continue;
        if (!g && !(g = npu_graph_new("npub-check")))
            return NPU_ERR_NOMEM;
        for (int k = 0; k < st->nin && !e; k++) {
            if (st->in[k] < 0)
                continue;
            const struct npu_prog_tensor *t = &p->tensors[st->in[k]];
            snprintf(vn, sizeof(vn), "s%d.in%d", s, k);
            if (t->t.data && npu_tensor_numel(&t->t) <= INFER_DATA_MAX)
                in[k] = npu_graph_add_const(g, vn, &t->t);
            else
                in[k] = npu_graph_add_input(g, vn, t->t.dtype, t->t.ndim, t->t.dims);
            if (!in[k])
                e = NPU_ERR_NOMEM;
            else
                in[k]->t.qscale = t->t.qscale, in[k]->t.qzero = t->t.qzero;
        }
        struct npu_node *n =
            e ? NULL
              : npu_node_new(g, st->op, st->name ? st->name : "", in, st->nin, st->nout, NULL);
        if (!e && !n)
            e = NPU_ERR_NOMEM;
        for (size_t k = 0; !e && k < st->attrs.n; k++)
            e = npu_node_set_attr(g, n, &st->attrs.v[k]);
        if (e)
            break;
        npu_graph_append(g, n);
        if (npu_infer_node(g, n)) {
            e = fail(r,
                     "step %d '%s': %s with these operands and attributes is not a valid op "
                     "(shape inference refuses it)",
                     s, st->name ? st->name : "", npu_op_name(st->op));
            break;
        }
        for (int k = 0; k < st->nout; k++) {
            const struct npu_tensor *want = &n->out[k]->t, *got = &p->tensors[st->out[k]].t;
            if (want->dtype != got->dtype || want->ndim != got->ndim ||
                memcmp(want->dims, got->dims, sizeof(int64_t) * (size_t)got->ndim)) {
                e = fail(r,
                         "step %d '%s': output %d (%s, rank %d) disagrees with shape "
                         "inference of %s (%s, rank %d, or other dims)",
                         s, st->name ? st->name : "", k, npu_dtype_name(got->dtype), got->ndim,
                         npu_op_name(st->op), npu_dtype_name(want->dtype), want->ndim);
                break;
            }
        }
    }
    npu_graph_free(g);
    return e;
}

/* ---- entry points -------------------------------------------------------------------- */

static enum npu_status
parse(struct npu_npub *a, const char *what, char *err, size_t err_len, bool quiet)
{
    npu_backend_register(); /* the artifact's rk.* nodes are inferred */
    char local[512];
    struct rd r = {.a = a, .err = err ? err : local, .err_len = err ? err_len : sizeof(local)};
    enum npu_status st;
    r.err[0] = 0;
    if ((st = check_container(&r)) || (st = read_meta(&r)) || (st = read_props(&r)) ||
        (st = read_indices(&r)) || (st = read_tensors(&r)) || (st = read_attrs(&r)) ||
        (st = read_steps(&r)) || (st = read_jobs(&r)) || (st = read_program(&r)))
        goto out;
    char msg[512];
    if ((st = npu_program_validate(&a->prog, msg, sizeof(msg)))) {
        fail(&r, "program: %s", msg);
        goto out;
    }
    st = check_cpu_shapes(&r);
out:
    if (st == NPU_ERR_NOMEM && !r.err[0])
        fail(&r, "out of memory");
    if (st && !quiet)
        npu_err(DOM, "%s: %s", what, r.err);
    return st;
}

void
npu_npub_free(struct npu_npub *a)
{
    if (!a)
        return;
    if (a->mapped)
        munmap(a->bytes, a->len);
    else
        free(a->bytes);
    for (size_t i = 0; i < a->npayloads; i++)
        free(a->payloads[i]);
    free(a->payloads);
    free(a->tensors);
    free(a->steps);
    free(a->attrs);
    free(a->attr_tensors);
    free(a->indices);
    free(a->jobs);
    free(a->tasks);
    free(a->relocs);
    free(a->dynrelocs);
    free(a->regcmd);
    free(a->meta_text);
    free(a->props);
    free(a);
}

enum npu_status
npu_npub_decode(const void *data, size_t len, struct npu_npub **out, char *err, size_t err_len)
{
    *out = NULL;
    struct npu_npub *a = calloc(1, sizeof(*a));
    if (!a)
        return NPU_ERR_NOMEM;
    /* an aligned private copy: constants are used in place and must be aligned */
    a->bytes = aligned_alloc(NPUB_ALIGN, NPU_ALIGN(len ? len : 1, NPUB_ALIGN));
    if (!a->bytes) {
        free(a);
        return NPU_ERR_NOMEM;
    }
    if (len)
        memcpy(a->bytes, data, len);
    a->len = len;
    enum npu_status st = parse(a, "artifact", err, err_len, false);
    if (st) {
        npu_npub_free(a);
        return st;
    }
    *out = a;
    return NPU_OK;
}

enum npu_status
npu_npub_load(const char *path, struct npu_npub **out, char *err, size_t err_len)
{
    return npu_npub_load_ex(path, out, err, err_len, 0);
}

enum npu_status
npu_npub_load_ex(const char *path, struct npu_npub **out, char *err, size_t err_len, unsigned flags)
{
    bool quiet = flags & NPU_NPUB_QUIET;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        int e = errno;
        if (err && err_len)
            snprintf(err, err_len, "cannot open: %s", fd < 0 ? strerror(e) : "not a regular file");
        if (!quiet)
            npu_err(DOM, "%s: cannot open: %s", path, fd < 0 ? strerror(e) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return NPU_ERR_IO;
    }
    struct npu_npub *a = calloc(1, sizeof(*a));
    if (!a) {
        close(fd);
        return NPU_ERR_NOMEM;
    }
    a->len = (size_t)sb.st_size;
    if (a->len) {
        void *m = mmap(NULL, a->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            npu_err(DOM, "%s: cannot map: %s", path, strerror(errno));
            close(fd);
            free(a);
            return NPU_ERR_IO;
        }
        a->bytes = m;
        a->mapped = true;
    }
    close(fd);
    enum npu_status st = parse(a, path, err, err_len, quiet);
    if (st) {
        npu_npub_free(a);
        return st;
    }
    /* the checksums read every page: they leave the process again (the page cache keeps
     * them; what is read later faults back in from it), so that a large artifact's weights
     * are not resident twice once uploaded (an LLM program: gigabytes) */
    if (a->mapped)
        (void)madvise(a->bytes, a->len, MADV_DONTNEED);
    *out = a;
    return NPU_OK;
}

const struct npu_program *
npu_npub_program(const struct npu_npub *a)
{
    return a ? &a->prog : NULL;
}

const struct npu_npub_meta *
npu_npub_get_meta(const struct npu_npub *a)
{
    return a ? &a->meta : NULL;
}

size_t
npu_npub_file_bytes(const struct npu_npub *a)
{
    return a ? a->len : 0;
}
