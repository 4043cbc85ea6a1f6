// SPDX-License-Identifier: MIT
/*
 * shlo-bytecode.c: MLIR bytecode (the form of StableHLO's VHLO portable
 * artifacts, what jaxlib hands a PJRT plugin as format "mlir") decoded into
 * the StableHLO text the reader of npu-stablehlo.c takes, so both forms go
 * through one op mapping. Each vhlo.NAME_vN becomes the generic form of
 * stablehlo.NAME (vhlo.func_v1 / return_v1 / call_v1 become func.func,
 * func.return or stablehlo.return, func.call), VHLO types become tensor<..>,
 * VHLO attributes their textual forms; ops the reader does not know keep
 * their name, so the reader refuses them by name. A table maps each line of
 * the text to the VHLO op it came from, for the reader's messages.
 *
 * Format facts, from MLIR's BytecodeFormat documentation and bytecode
 * reader, StableHLO's VhloBytecode.cpp and VhloOps.td (written from those
 * facts, checked on the stablehlo repository's tests/vhlo/ artifacts):
 * - header: magic "ML\xEFR", PrefixVarInt version, NUL-terminated producer,
 *   then sections: id byte (bit 7: aligned), varint length, with alignment
 *   a varint alignment and 0xCB padding up to it (from the file start).
 * - PrefixVarInt: the count of trailing zero bits of the first byte is the
 *   count of further bytes (0x00: eight more); the little-endian value is
 *   shifted right by that count + 1. Signed: zigzag.
 * - sections: 0 strings (count, lengths reversed, NUL-terminated data at the
 *   end), 1 dialects (count; per dialect name index, from version 1 shifted
 *   over a has-version flag followed by a nested version section; from
 *   version 4 the total op name count; then groups of dialect, count, name
 *   index, from version 5 shifted over a registered flag), 2 attributes and
 *   types (raw), 3 their offsets (attribute count, type count, then groups
 *   of dialect, count, per entry size << 1 | custom-encoding), 4 IR, 5 / 6
 *   resources, 8 properties (from version 5).
 * - IR: a block header (op count << 1 | has-args), then ops: name index,
 *   mask byte (1 attrs, 2 results, 4 operands, 8 successors, 16 regions,
 *   32 use-list orders, 64 properties), location, [attribute dictionary],
 *   [properties index], [result count, type indices], [operand count, value
 *   indices], [successors], [use-list orders, version >= 3], [region count
 *   << 1 | isolated]. Regions: block count, value count, blocks; an isolated
 *   op's regions sit in a nested IR section from version 2 on. Values are
 *   numbered per isolated scope: each region reserves its value count after
 *   those of the regions around it; block arguments from version 4 are
 *   type << 1 | has-location (before: type, location).
 * - builtin attributes (custom-encoded): 0 array, 1 dictionary (count, then
 *   name StringAttr and value), 2 string (string index); VHLO attributes:
 *   a varint code (1 array, 2 bool, 3 comparison direction, 4 comparison
 *   type, 6 dictionary, 8 float, 9 integer, 11 precision, 14 string, 15
 *   tensor (type, blob: size + bytes; i1 packed 8 to a byte, 0xFF a true
 *   splat), 17 type, ...); VHLO types: a varint code (0 i1, 2 bf16, 3 f16,
 *   4 f32, 5 f64, 8 function (inputs, outputs), 9 index, 11-14 i8-i64, 16-19
 *   ui8-ui64, 20 ranked tensor (svarint dims, element type), 21 the same
 *   after an encoding attribute, ...). Integers of <= 8 bits are one byte,
 *   up to 64 bits a signed varint; floats are their bits as such an integer.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "shlo-priv.h"

#define MAX_DEPTH 48         /* nesting of regions and attributes */
#define MAX_COUNT (1u << 24) /* any element count */

struct rd {
    const uint8_t *p, *end;
    bool bad;
};

struct ent {
    const uint8_t *p;
    uint32_t len;
    uint32_t dialect;
    bool custom;
};

struct sb {
    char *s;
    size_t n, cap;
    bool oom;
};

struct slot {
    int32_t id; /* 0: not yet named */
    int16_t sub, nres;
    int64_t type; /* type index, -1 unknown (a forward reference) */
};

struct vscope {
    struct slot *v;
    size_t n, cap;
};

struct bc {
    const uint8_t *base;
    uint64_t version;
    const char *producer;
    int prodlen;
    uint64_t nstr;
    const char **str;
    uint32_t *slen;
    uint64_t ndial;
    uint32_t *dname;
    uint64_t nops;
    uint32_t *opdial, *opname;
    uint8_t *opreg;   /* registered flag (bytecode >= 5) */
    const char **opv; /* vhlo_op() of each op name, looked up once per file */
    struct rd props;  /* the properties section after its count */
    uint64_t nprops;
    const uint8_t **propoff;
    uint64_t nattr, ntype;
    struct ent *attr, *type;
    int vhlo, builtin; /* dialect indices, -1 if absent */
    int32_t next_id;
    int64_t budget; /* attribute/type renderings left: shared entries can nest */
    struct sb out;
    int line;
    int *line_op; /* per line: op name index + 1, 0 none */
    int line_cap;
    char err[256];
};

static bool NPU_PRINTF(2, 3) bad(struct bc *b, const char *fmt, ...)
{
    if (!b->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err, sizeof b->err, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* ---- primitives ------------------------------------------------------------ */

static uint64_t
varint(struct rd *r)
{
    if (r->bad || r->p >= r->end) {
        r->bad = true;
        return 0;
    }
    unsigned b = r->p[0];
    unsigned extra = 8;
    if (b) {
        extra = 0;
        while (!(b & (1u << extra)))
            extra++;
    }
    if ((size_t)(r->end - r->p) < extra + 1u) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    if (extra == 8) {
        for (int i = 8; i >= 1; i--)
            v = v << 8 | r->p[i];
    } else {
        for (int i = (int)extra; i >= 0; i--)
            v = v << 8 | r->p[i];
        v >>= extra + 1;
    }
    r->p += extra + 1;
    return v;
}

static int64_t
svarint(struct rd *r)
{
    uint64_t v = varint(r);
    return (int64_t)((v >> 1) ^ (~(v & 1) + 1));
}

static unsigned
byte(struct rd *r)
{
    if (r->bad || r->p >= r->end) {
        r->bad = true;
        return 0;
    }
    return *r->p++;
}

/* A count that cannot exceed what is left (each element takes a byte). */
static uint64_t
count(struct rd *r)
{
    uint64_t n = varint(r);
    if (n > (uint64_t)(r->end - r->p) || n > MAX_COUNT)
        r->bad = true;
    return r->bad ? 0 : n;
}

/* One section: id, data range; alignment counts from the file start. */
static bool
section(const struct bc *b, struct rd *r, unsigned *id, struct rd *data)
{
    unsigned x = byte(r);
    *id = x & 0x7f;
    uint64_t len = varint(r);
    if (r->bad)
        return false;
    if (x & 0x80) {
        uint64_t align = varint(r);
        if (r->bad || align == 0 || align > 4096 || (align & (align - 1)))
            return (r->bad = true), false;
        while (r->p < r->end && (size_t)(r->p - b->base) % align) {
            if (*r->p != 0xCB)
                return (r->bad = true), false;
            r->p++;
        }
    }
    if (len > (uint64_t)(r->end - r->p))
        return (r->bad = true), false;
    data->p = r->p;
    data->end = r->p + len;
    data->bad = false;
    r->p += len;
    return true;
}

/* ---- text output ------------------------------------------------------------ */

static void
put(struct bc *b, const char *s, size_t n)
{
    struct sb *o = &b->out;
    if (o->oom)
        return;
    if (o->n + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->n + n + 1)
            cap *= 2;
        char *p = realloc(o->s, cap);
        if (!p) {
            o->oom = true;
            return;
        }
        o->s = p;
        o->cap = cap;
    }
    memcpy(o->s + o->n, s, n);
    o->n += n;
    o->s[o->n] = 0;
    for (size_t i = 0; i < n; i++)
        b->line += s[i] == '\n';
}

static void NPU_PRINTF(2, 3) out(struct bc *b, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(b, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void
out_str(struct bc *b, const char *s, size_t n) /* a quoted, escaped string */
{
    put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f)
            out(b, "\\%02X", c);
        else
            put(b, (const char *)&c, 1);
    }
    put(b, "\"", 1);
}

static void
mark_line(struct bc *b, uint64_t opidx)
{
    if (b->line >= b->line_cap) {
        int cap = b->line_cap ? 2 * b->line_cap : 256;
        while (cap <= b->line)
            cap *= 2;
        int *p = realloc(b->line_op, (size_t)cap * sizeof *p);
        if (!p) {
            b->out.oom = true;
            return;
        }
        memset(p + b->line_cap, 0, (size_t)(cap - b->line_cap) * sizeof *p);
        b->line_op = p;
        b->line_cap = cap;
    }
    b->line_op[b->line] = (int)opidx + 1;
}

/* ---- types ------------------------------------------------------------------- */

struct vtype {
    int code; /* VHLO type code, -1 other */
    int elem; /* element code of a tensor, or code of a scalar */
    int ndim; /* -1 not a tensor */
    int64_t dims[NPU_MAX_DIMS];
    bool dynamic; /* or too many dims */
};

static const char *
elem_name(int code)
{
    switch (code) {
    case 0: return "i1";
    case 2: return "bf16";
    case 3: return "f16";
    case 4: return "f32";
    case 5: return "f64";
    case 9: return "index";
    case 10: return "i4";
    case 11: return "i8";
    case 12: return "i16";
    case 13: return "i32";
    case 14: return "i64";
    case 15: return "ui4";
    case 16: return "ui8";
    case 17: return "ui16";
    case 18: return "ui32";
    case 19: return "ui64";
    case 6: return "f8E4M3FN"; /* the rest: named for the reader's refusals */
    case 7: return "f8E5M2";
    case 22: return "!stablehlo.token";
    case 24: return "!quant.uniform";
    case 27: return "f8E4M3FNUZ";
    case 28: return "f8E5M2FNUZ";
    case 29: return "f8E4M3B11FNUZ";
    case 30: return "!quant.uniform_per_axis";
    case 31: return "i2";
    case 32: return "ui2";
    case 33: return "none";
    case 34: return "tf32";
    case 35: return "f8E4M3";
    case 36: return "f8E3M4";
    case 37: return "f4E2M1FN";
    case 38: return "f6E2M3FN";
    case 39: return "f6E3M2FN";
    case 40: return "f8E8M0FNU";
    default: return NULL;
    }
}

static int
elem_bits(int code)
{
    switch (code) {
    case 0: return 1;
    case 10:
    case 15: return 4;
    case 11:
    case 16: return 8;
    case 2:
    case 3:
    case 12:
    case 17: return 16;
    case 4:
    case 13:
    case 18: return 32;
    case 5:
    case 9:
    case 14:
    case 19: return 64;
    default: return 0;
    }
}

static bool
entry(struct bc *b, bool is_type, uint64_t idx, struct rd *r, struct ent **e)
{
    if (idx >= (is_type ? b->ntype : b->nattr))
        return bad(b, "%s index %" PRIu64 " out of range", is_type ? "type" : "attribute", idx);
    *e = is_type ? &b->type[idx] : &b->attr[idx];
    r->p = (*e)->p;
    r->end = (*e)->p + (*e)->len;
    r->bad = false;
    return true;
}

static bool
get_type(struct bc *b, uint64_t idx, struct vtype *t)
{
    struct rd r;
    struct ent *e;
    memset(t, 0, sizeof *t);
    t->code = -1;
    t->elem = -1;
    t->ndim = -1;
    if (!entry(b, true, idx, &r, &e))
        return false;
    if (!e->custom || (int)e->dialect != b->vhlo)
        return true; /* text or another dialect: shown as such */
    t->code = (int)varint(&r);
    if (t->code == 20 || t->code == 21) {
        if (t->code == 21)
            (void)varint(&r); /* encoding */
        uint64_t n = count(&r);
        for (uint64_t i = 0; i < n; i++) {
            int64_t d = svarint(&r);
            if (i < NPU_MAX_DIMS && d >= 0)
                t->dims[i] = d;
            else
                t->dynamic = true;
        }
        t->ndim = (int)(n < NPU_MAX_DIMS ? n : NPU_MAX_DIMS);
        uint64_t et = varint(&r);
        struct rd r2;
        struct ent *e2;
        if (r.bad)
            return bad(b, "corrupt tensor type %" PRIu64, idx);
        if (!entry(b, true, et, &r2, &e2))
            return false;
        if (e2->custom && (int)e2->dialect == b->vhlo)
            t->elem = (int)varint(&r2);
    } else {
        t->elem = t->code;
    }
    if (r.bad)
        return bad(b, "corrupt type %" PRIu64, idx);
    return true;
}

/* What out_type and out_attr do first: the nesting and repetition guards, the
 * reader of type (or attribute) idx, and an entry kept as its assembly text
 * (NUL-terminated) written out as it is. -1 on an error, 0 when written, 1 when
 * the caller goes on with the custom encoding in *r / *e. */
static int
out_entry(struct bc *b, bool type, uint64_t idx, int depth, struct rd *r, struct ent **e)
{
    if (depth > MAX_DEPTH) {
        bad(b, "%s nested too deeply", type ? "types" : "attributes");
        return -1;
    }
    if (--b->budget < 0) {
        bad(b, "attributes and types nest or repeat too much");
        return -1;
    }
    if (!entry(b, type, idx, r, e))
        return -1;
    if ((*e)->custom)
        return 1;
    size_t n = strnlen((const char *)r->p, (size_t)(r->end - r->p));
    put(b, (const char *)r->p, n);
    return 0;
}

static bool
out_type(struct bc *b, uint64_t idx, int depth)
{
    struct rd r;
    struct ent *e = NULL;
    int go = out_entry(b, true, idx, depth, &r, &e);
    if (go <= 0)
        return go == 0;
    if ((int)e->dialect != b->vhlo) {
        out(b, "!unsupported_type_of_dialect_%u", e->dialect);
        return true;
    }
    uint64_t code = varint(&r);
    const char *en = elem_name((int)code);
    if (en) {
        out(b, "%s", en);
    } else if (code == 20 || code == 21) {
        if (code == 21)
            (void)varint(&r);
        uint64_t n = count(&r);
        put(b, "tensor<", 7);
        for (uint64_t i = 0; i < n; i++) {
            int64_t d = svarint(&r);
            if (d < 0)
                put(b, "?x", 2);
            else
                out(b, "%" PRId64 "x", d);
        }
        uint64_t et = varint(&r);
        if (r.bad)
            return bad(b, "corrupt tensor type %" PRIu64, idx);
        if (!out_type(b, et, depth + 1))
            return false;
        put(b, ">", 1);
    } else if (code == 8) {
        for (int side = 0; side < 2; side++) {
            uint64_t n = count(&r);
            put(b, side ? " -> (" : "(", side ? 5 : 1);
            for (uint64_t i = 0; i < n && !r.bad; i++) {
                if (i)
                    put(b, ", ", 2);
                if (!out_type(b, varint(&r), depth + 1))
                    return false;
            }
            put(b, ")", 1);
        }
    } else if (code == 1) {
        put(b, "complex<", 8);
        if (!out_type(b, varint(&r), depth + 1))
            return false;
        put(b, ">", 1);
    } else {
        out(b, "!vhlo.type_code_%" PRIu64, code); /* refused by the reader, by name */
    }
    if (r.bad)
        return bad(b, "corrupt type %" PRIu64, idx);
    return true;
}

/* ---- attributes ------------------------------------------------------------ */

static const char *
str_at(struct bc *b, uint64_t i, size_t *len)
{
    if (i >= b->nstr) {
        bad(b, "string index %" PRIu64 " out of range", i);
        return NULL;
    }
    *len = b->slen[i];
    return b->str[i];
}

/* A builtin StringAttr (or VHLO string) attribute's text. */
static const char *
attr_string(struct bc *b, uint64_t idx, size_t *len)
{
    struct rd r;
    struct ent *e;
    if (!entry(b, false, idx, &r, &e))
        return NULL;
    if (!e->custom) {
        bad(b, "attribute %" PRIu64 ": expected a string", idx);
        return NULL;
    }
    uint64_t code = varint(&r);
    if (((int)e->dialect == b->builtin && (code == 2 || code == 3)) ||
        ((int)e->dialect == b->vhlo && code == 14))
        return str_at(b, varint(&r), len);
    bad(b, "attribute %" PRIu64 ": expected a string", idx);
    return NULL;
}

/* An integer attribute (VHLO IntegerV1 or builtin IntegerAttr) as int64. */
static bool
attr_int(struct bc *b, uint64_t idx, int64_t *v)
{
    struct rd r;
    struct ent *e = NULL;
    if (!entry(b, false, idx, &r, &e) || !e->custom)
        return false;
    uint64_t code = varint(&r);
    if (!(((int)e->dialect == b->vhlo && code == 9) ||
          ((int)e->dialect == b->builtin && code == 8)))
        return false;
    struct vtype t;
    if (!get_type(b, varint(&r), &t))
        return false;
    int bits = elem_bits(t.elem);
    if (bits == 0 && (int)e->dialect == b->builtin)
        bits = 64;
    if (bits <= 8) {
        unsigned x = byte(&r);
        *v = bits == 8 && (t.elem == 11) ? (int8_t)x : (int64_t)x;
    } else
        *v = svarint(&r);
    return !r.bad;
}

static const char *const cmp_dir[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
static const char *const cmp_type[] = {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
static const char *const precision[] = {"DEFAULT", "HIGH", "HIGHEST"};

static bool out_attr(struct bc *b, uint64_t idx, int depth, bool hex);

static void
out_hex(struct bc *b, const uint8_t *p, size_t n)
{
    put(b, "\"0x", 3);
    char buf[64];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        static const char hx[] = "0123456789ABCDEF";
        buf[k++] = hx[p[i] >> 4];
        buf[k++] = hx[p[i] & 15];
        if (k == sizeof buf) {
            put(b, buf, k);
            k = 0;
        }
    }
    put(b, buf, k);
    put(b, "\"", 1);
}

/* A TensorV1 attribute: dense<...> : tensor<...>. Integer ones short enough
 * as a flat decimal list (what attribute readers want), the rest as a hex
 * blob of the little-endian elements (i1: one byte per element). */
static bool
out_tensor(struct bc *b, struct rd *r, bool hex)
{
    uint64_t ti = varint(r);
    struct vtype t;
    if (r->bad || !get_type(b, ti, &t))
        return bad(b, "corrupt tensor attribute");
    uint64_t size = varint(r);
    if (r->bad || size > (uint64_t)(r->end - r->p))
        return bad(b, "corrupt tensor attribute data");
    const uint8_t *p = r->p;
    r->p += size;
    int64_t numel = 1;
    for (int i = 0; i < t.ndim; i++)
        numel = t.dims[i] > 0 && numel <= ((int64_t)1 << 40) / t.dims[i] ? numel * t.dims[i] : 0;
    int bits = elem_bits(t.elem);
    put(b, "dense<", 6);
    if (t.ndim < 0 || t.dynamic || bits == 0) {
        out_hex(b, p, (size_t)size);
    } else if (t.elem == 0) { /* i1 */
        if (numel > (int64_t)size * 8)
            numel = (int64_t)size * 8; /* more cannot be in the blob */
        uint8_t *u = malloc(numel > 0 ? (size_t)numel : 1);
        if (!u)
            return (b->out.oom = true), false;
        if (size == 1 && p[0] == 0xFF) {
            u[0] = 1;
            numel = numel ? 1 : 0;
        } else if ((int64_t)size == (numel + 7) / 8 && (int64_t)size != numel) {
            for (int64_t i = 0; i < numel; i++)
                u[i] = (uint8_t)(p[i / 8] >> (i % 8) & 1);
        } else {
            numel = (int64_t)size < numel ? (int64_t)size : numel;
            for (int64_t i = 0; i < numel; i++)
                u[i] = p[i] ? 1 : 0;
        }
        out_hex(b, u, (size_t)numel);
        free(u);
    } else if (!hex && bits >= 8 && t.elem != 2 && t.elem != 3 && t.elem != 4 && t.elem != 5 &&
               size <= 8 * 64 && size % (uint64_t)(bits / 8) == 0) {
        size_t es = (size_t)bits / 8, n = (size_t)size / es;
        bool splat = n == 1 && numel > 1 && numel <= 64;
        if (splat)
            n = (size_t)numel; /* a splat is stored as its one element */
        put(b, "[", 1);
        for (size_t i = 0; i < n; i++) {
            uint64_t u = 0;
            for (size_t k = 0; k < es; k++)
                u |= (uint64_t)p[(splat ? 0 : i) * es + k] << (8 * k);
            bool is_signed = t.elem >= 10 && t.elem <= 14;
            if (is_signed && es < 8 && (u >> (8 * es - 1) & 1))
                u |= ~(uint64_t)0 << (8 * es);
            if (is_signed)
                out(b, i ? ", %" PRId64 : "%" PRId64, (int64_t)u);
            else
                out(b, i ? ", %" PRIu64 : "%" PRIu64, u);
        }
        put(b, "]", 1);
    } else {
        out_hex(b, p, (size_t)size);
    }
    put(b, "> : ", 4);
    return out_type(b, ti, 0);
}

static bool
out_attr(struct bc *b, uint64_t idx, int depth, bool hex)
{
    struct rd r;
    struct ent *e = NULL;
    int go = out_entry(b, false, idx, depth, &r, &e);
    if (go <= 0)
        return go == 0;
    uint64_t code = varint(&r);
    if (r.bad)
        return bad(b, "corrupt attribute %" PRIu64, idx);
    size_t sl;
    const char *s;
    if ((int)e->dialect == b->builtin) {
        switch (code) {
        case 2:
        case 3:
            if (!(s = str_at(b, varint(&r), &sl)))
                return false;
            out_str(b, s, sl);
            return true;
        case 7: put(b, "unit", 4); return true;
        default: out(b, "#builtin.attr_code_%" PRIu64, code); return true;
        }
    }
    if ((int)e->dialect != b->vhlo) {
        out(b, "#unsupported_attr_of_dialect_%u", e->dialect);
        return true;
    }
    switch (code) {
    case 1: { /* array */
        uint64_t n = count(&r);
        bool ints = n > 0, bools = n > 0;
        for (uint64_t i = 0; i < n && !r.bad; i++) {
            struct rd r2;
            struct ent *e2;
            if (!entry(b, false, varint(&r), &r2, &e2))
                return false;
            uint64_t c2 = e2->custom && (int)e2->dialect == b->vhlo ? varint(&r2) : 0;
            ints &= c2 == 9;
            bools &= c2 == 2;
        }
        struct rd rr = {e->p, e->p + e->len, false};
        (void)varint(&rr);
        (void)varint(&rr);
        if (ints || bools || n == 0)
            put(b, bools ? "array<i1" : "array<i64", bools ? 8 : 9);
        else
            put(b, "[", 1);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t ai = varint(&rr);
            if (ints || bools)
                put(b, i ? ", " : ": ", 2);
            else if (i)
                put(b, ", ", 2);
            if (ints) {
                int64_t v;
                if (!attr_int(b, ai, &v))
                    return bad(b, "corrupt integer in attribute %" PRIu64, idx);
                out(b, "%" PRId64, v);
            } else if (!out_attr(b, ai, depth + 1, hex))
                return false;
        }
        put(b, ints || bools || n == 0 ? ">" : "]", 1);
        break;
    }
    case 2: out(b, "%s", varint(&r) ? "true" : "false"); break;
    case 3: {
        uint64_t v = varint(&r);
        if (v >= 6)
            return bad(b, "comparison direction %" PRIu64 " is not defined", v);
        out(b, "#stablehlo<comparison_direction %s>", cmp_dir[v]);
        break;
    }
    case 4: {
        uint64_t v = varint(&r);
        if (v >= 5)
            return bad(b, "comparison type %" PRIu64 " is not defined", v);
        out(b, "#stablehlo<comparison_type %s>", cmp_type[v]);
        break;
    }
    case 6: { /* dictionary */
        uint64_t n = count(&r);
        put(b, "{", 1);
        for (uint64_t i = 0; i < n && !r.bad; i++) {
            uint64_t k = varint(&r), v = varint(&r);
            if (!(s = attr_string(b, k, &sl)))
                return false;
            if (i)
                put(b, ", ", 2);
            out_str(b, s, sl);
            put(b, " = ", 3);
            if (!out_attr(b, v, depth + 1, hex))
                return false;
        }
        put(b, "}", 1);
        break;
    }
    case 8: { /* float: the bits */
        struct vtype t;
        if (!get_type(b, varint(&r), &t))
            return false;
        int bits = elem_bits(t.elem);
        uint64_t u = bits <= 8 ? byte(&r) : (uint64_t)svarint(&r);
        if (t.elem == 4) {
            uint32_t x = (uint32_t)u;
            float f;
            memcpy(&f, &x, 4);
            out(b, "%.9g : f32", (double)f);
        } else if (t.elem == 5) {
            double f;
            memcpy(&f, &u, 8);
            out(b, "%.17g : f64", f);
        } else {
            out(b, "0x%" PRIX64 " : %s", u, elem_name(t.elem) ? elem_name(t.elem) : "?");
        }
        break;
    }
    case 9: {
        int64_t v;
        if (!attr_int(b, idx, &v))
            return bad(b, "corrupt integer attribute %" PRIu64, idx);
        out(b, "%" PRId64 " : i64", v);
        return true;
    }
    case 11: {
        uint64_t v = varint(&r);
        out(b, "#stablehlo<precision %s>", v < 3 ? precision[v] : "?");
        break;
    }
    case 14:
        if (!(s = str_at(b, varint(&r), &sl)))
            return false;
        out_str(b, s, sl);
        break;
    case 15:
        if (!out_tensor(b, &r, hex))
            return false;
        break;
    case 17:
        if (!out_type(b, varint(&r), depth + 1))
            return false;
        break;
    default: out(b, "#vhlo.attr_code_%" PRIu64, code); return true;
    }
    if (r.bad)
        return bad(b, "corrupt attribute %" PRIu64, idx);
    return true;
}

/* ---- operations ---------------------------------------------------------------- */

struct named {
    const char *name;
    size_t len;
    uint64_t value;
};

enum rkind { R_MODULE, R_FUNC, R_BODY };

struct opinfo {
    uint64_t name;
    const char *dn, *on; /* dialect and op name */
    size_t dl, ol;
    const char *vprops; /* vhlo_op(on, ol): NULL unless a VHLO op name (b->opv) */
    struct named at[64];
    int nat;
};

/* The attribute dictionary of an op (builtin DictionaryAttr). */
static int
op_attrs(struct bc *b, uint64_t idx, struct named *a, int max)
{
    struct rd r;
    struct ent *e;
    if (!entry(b, false, idx, &r, &e))
        return -1;
    if (!e->custom || (int)e->dialect != b->builtin || varint(&r) != 1)
        return bad(b, "attribute %" PRIu64 ": expected a dictionary", idx), -1;
    uint64_t n = count(&r);
    if (n > (uint64_t)max)
        return bad(b, "more than %d attributes on an operation", max), -1;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = varint(&r);
        a[i].value = varint(&r);
        if (r.bad || !(a[i].name = attr_string(b, k, &a[i].len)))
            return bad(b, "corrupt attribute dictionary %" PRIu64, idx), -1;
    }
    return (int)n;
}

static const struct named *
find(const struct named *a, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (a[i].len == strlen(key) && !memcmp(a[i].name, key, a[i].len))
            return &a[i];
    return NULL;
}

/* Every VHLO op ("op:a,b,..." with its attribute names, sorted), from
 * VhloOps.td at the commit named in tests/pjrt/vhlo/README.md: an op not
 * listed (a newer version) keeps its VHLO name, which the reader refuses.
 * From bytecode 6 (VHLO 0.15.0) an op's attributes are its properties: their
 * indices in the sorted order of these names. */
static const char *const vhlo_ops[] = {
    "abs_v1:",
    "add_v1:",
    "after_all_v1:",
    "all_gather_v1:all_gather_dim,channel_id,replica_groups,use_global_device_ids",
    "all_gather_v2:all_gather_dim,channel_id,replica_groups,use_global_device_ids",
    "all_reduce_v1:channel_id,replica_groups,use_global_device_ids",
    "all_reduce_v2:channel_id,replica_groups,use_global_device_ids",
    "all_to_all_v1:channel_id,concat_dimension,replica_groups,split_count,split_dimension",
    "all_to_all_v2:channel_id,concat_dimension,replica_groups,split_count,split_dimension",
    "and_v1:",
    "async_start_v1:",
    "async_done_v1:",
    "atan2_v1:",
    "batch_norm_grad_v1:epsilon,feature_index",
    "batch_norm_inference_v1:epsilon,feature_index",
    "batch_norm_training_v1:epsilon,feature_index",
    "bitcast_convert_v1:",
    "broadcast_in_dim_v1:broadcast_dimensions",
    "broadcast_v1:broadcast_sizes",
    "call_v1:callee",
    "case_v1:",
    "cbrt_v1:",
    "cbrt_v2:result_accuracy",
    "ceil_v1:",
    "cholesky_v1:lower",
    "clamp_v1:",
    "count_leading_zeros_v1:",
    "collective_broadcast_v1:channel_id,replica_groups",
    "collective_broadcast_v2:channel_id,has_dynamic_root,replica_groups",
    "collective_reduce_v1:channel_id,has_dynamic_root,replica_groups,use_global_device_ids",
    "collective_permute_v1:channel_id,source_target_pairs",
    "compare_v1:compare_type,comparison_direction",
    "complex_v1:",
    "composite_v1:composite_attributes,decomposition,name,version",
    "composite_v2:composite_attributes,decomposition,name,version",
    "concatenate_v1:dimension",
    "constant_v1:value",
    "convert_v1:",
    "convolution_v1:batch_group_count,feature_group_count,input_batch_dimension,input_feature_"
    "dimension,input_spatial_dimensions,kernel_input_feature_dimension,kernel_output_feature_"
    "dimension,kernel_spatial_dimensions,lhs_dilation,output_batch_dimension,output_feature_"
    "dimension,output_spatial_dimensions,padding,precision_config,rhs_dilation,window_reversal,"
    "window_strides",
    "cosine_v1:",
    "cosine_v2:result_accuracy",
    "create_token_v1:",
    "cross-replica-sum_v1:replica_groups",
    "custom_call_v1:api_version,backend_config,call_target_name,called_computations,has_side_"
    "effect,operand_layouts,output_operand_aliases,result_layouts",
    "custom_call_v2:api_version,backend_config,call_target_name,called_computations,has_side_"
    "effect,operand_layouts,output_operand_aliases,result_layouts,result_tilings",
    "divide_v1:",
    "dot_general_v1:lhs_batching_dimensions,lhs_contracting_dimensions,precision_config,rhs_"
    "batching_dimensions,rhs_contracting_dimensions",
    "dot_general_v2:accumulation_type,allow_imprecise_accumulation,lhs_batching_dimensions,lhs_"
    "component_count,lhs_contracting_dimensions,lhs_precision_type,num_primitive_operations,"
    "precision_config,rhs_batching_dimensions,rhs_component_count,rhs_contracting_dimensions,rhs_"
    "precision_type",
    "dot_v1:precision_config",
    "dynamic_broadcast_in_dim_v1:broadcast_dimensions,known_expanding_dimensions,known_"
    "nonexpanding_dimensions",
    "dynamic_conv_v1:batch_group_count,feature_group_count,input_batch_dimension,input_feature_"
    "dimension,input_spatial_dimensions,kernel_input_feature_dimension,kernel_output_feature_"
    "dimension,kernel_spatial_dimensions,lhs_dilation,output_batch_dimension,output_feature_"
    "dimension,output_spatial_dimensions,padding,precision_config,rhs_dilation,window_reversal,"
    "window_strides",
    "dynamic_conv_v2:batch_group_count,feature_group_count,input_batch_dimension,input_feature_"
    "dimension,input_spatial_dimensions,kernel_input_feature_dimension,kernel_output_feature_"
    "dimension,kernel_spatial_dimensions,lhs_dilation,output_batch_dimension,output_feature_"
    "dimension,output_spatial_dimensions,precision_config,rhs_dilation,window_reversal,window_"
    "strides",
    "dynamic_gather_v1:collapsed_slice_dims,index_vector_dim,indices_are_sorted,offset_dims,start_"
    "index_map",
    "dynamic_gather_v2:collapsed_slice_dims,index_vector_dim,indices_are_sorted,offset_dims,"
    "operand_batching_dims,start_index_map,start_indices_batching_dims",
    "dynamic_iota_v1:iota_dimension",
    "dynamic_pad_v1:",
    "dynamic_reshape_v1:",
    "dynamic_slice_v1:slice_sizes",
    "dynamic_update_slice_v1:",
    "einsum_v1:einsum_config",
    "exponential_minus_one_v1:",
    "exponential_minus_one_v2:result_accuracy",
    "exponential_v1:",
    "exponential_v2:result_accuracy",
    "fft_v1:fft_length,fft_type",
    "floor_v1:",
    "func_v1:arg_attrs,function_type,res_attrs,sym_name,sym_visibility",
    "gather_v1:collapsed_slice_dims,index_vector_dim,indices_are_sorted,offset_dims,slice_sizes,"
    "start_index_map",
    "gather_v2:collapsed_slice_dims,index_vector_dim,indices_are_sorted,offset_dims,operand_"
    "batching_dims,slice_sizes,start_index_map,start_indices_batching_dims",
    "get_dimension_size_v1:dimension",
    "get_tuple_element_v1:index",
    "if_v1:",
    "imag_v1:",
    "infeed_v1:infeed_config,layout",
    "iota_v1:iota_dimension",
    "is_finite_v1:",
    "log_plus_one_v1:",
    "log_plus_one_v2:result_accuracy",
    "logistic_v1:",
    "logistic_v2:result_accuracy",
    "log_v1:",
    "log_v2:result_accuracy",
    "map_v1:dimensions",
    "maximum_v1:",
    "minimum_v1:",
    "multiply_v1:",
    "negate_v1:",
    "not_v1:",
    "optimization_barrier_v1:",
    "or_v1:",
    "outfeed_v1:outfeed_config",
    "pad_v1:edge_padding_high,edge_padding_low,interior_padding",
    "partition_id_v1:",
    "popcnt_v1:",
    "power_v1:",
    "real_dynamic_slice_v1:",
    "real_v1:",
    "recv_v1:channel_id,channel_type,is_host_transfer",
    "recv_v2:channel_id,channel_type,is_host_transfer,source_target_pairs",
    "reduce_v1:dimensions",
    "reduce_precision_v1:exponent_bits,mantissa_bits",
    "reduce_scatter_v1:channel_id,replica_groups,scatter_dimension,use_global_device_ids",
    "reduce_window_v1:base_dilations,padding,window_dilations,window_dimensions,window_strides",
    "remainder_v1:",
    "replica_id_v1:",
    "reshape_v1:",
    "return_v1:",
    "reverse_v1:dimensions",
    "rng_bit_generator_v1:rng_algorithm",
    "rng_v1:rng_distribution",
    "round_nearest_even_v1:",
    "round_nearest_afz_v1:",
    "rsqrt_v1:",
    "rsqrt_v2:result_accuracy",
    "scatter_v1:index_vector_dim,indices_are_sorted,inserted_window_dims,scatter_dims_to_operand_"
    "dims,unique_indices,update_window_dims",
    "scatter_v2:index_vector_dim,indices_are_sorted,input_batching_dims,inserted_window_dims,"
    "scatter_dims_to_operand_dims,scatter_indices_batching_dims,unique_indices,update_window_dims",
    "select_and_scatter_v1:padding,window_dimensions,window_strides",
    "select_v1:",
    "send_v1:channel_id,channel_type,is_host_transfer",
    "send_v2:channel_id,channel_type,is_host_transfer,source_target_pairs",
    "set_dimension_size_v1:dimension",
    "shift_left_v1:",
    "shift_right_arithmetic_v1:",
    "shift_right_logical_v1:",
    "sign_v1:",
    "sine_v1:",
    "sine_v2:result_accuracy",
    "slice_v1:limit_indices,start_indices,strides",
    "sort_v1:dimension,is_stable",
    "sqrt_v1:",
    "sqrt_v2:result_accuracy",
    "subtract_v1:",
    "tan_v1:",
    "tan_v2:result_accuracy",
    "tanh_v1:",
    "tanh_v2:result_accuracy",
    "torch_index_select_v1:batch_dims,dim",
    "transpose_v1:permutation",
    "triangular_solve_v1:left_side,lower,transpose_a,unit_diagonal",
    "tuple_v1:",
    "unary_einsum_v1:einsum_config",
    "uniform_dequantize_v1:",
    "uniform_quantize_v1:",
    "while_v1:",
    "xor_v1:",
};

static const char *
vhlo_op(const char *on, size_t ol)
{
    for (size_t k = 0; k < sizeof vhlo_ops / sizeof vhlo_ops[0]; k++)
        if (!strncmp(vhlo_ops[k], on, ol) && vhlo_ops[k][ol] == ':')
            return vhlo_ops[k] + ol + 1;
    return NULL;
}

static bool is(const struct opinfo *o, const char *name);

/* An op's properties: the attributes it would have had in its dictionary. */
static bool
op_props(struct bc *b, struct opinfo *o, uint64_t prop)
{
    if (!b->opreg[o->name]) { /* an unregistered op: a dictionary attribute */
        struct named at[64];
        int n = op_attrs(b, prop, at, 64 - o->nat);
        if (n < 0)
            return false;
        memcpy(o->at + o->nat, at, (size_t)n * sizeof at[0]);
        o->nat += n;
        return true;
    }
    if (prop >= b->nprops)
        return bad(b, "properties index %" PRIu64 " out of range", prop);
    struct rd r = {b->propoff[prop], b->props.end, false};
    uint64_t n = varint(&r);
    r.end = r.p + n;
    const char *names = o->vprops;
    while (names && *names && r.p < r.end) {
        const char *e = strchr(names, ',');
        size_t l = e ? (size_t)(e - names) : strlen(names);
        if (o->nat >= 64)
            return bad(b, "too many attributes");
        o->at[o->nat].name = names;
        o->at[o->nat].len = l;
        o->at[o->nat].value = varint(&r);
        if (r.bad)
            return bad(b, "corrupt properties of %.*s", (int)o->ol, o->on);
        o->nat++;
        names = e ? e + 1 : NULL;
    }
    return true;
}

static bool
slot_new(struct bc *b, struct vscope *sc, size_t i, int16_t sub, int16_t nres, int64_t type)
{
    if (i >= sc->n)
        return bad(b, "value index %zu out of range", i);
    if (!sc->v[i].id) {
        if (b->next_id >= INT32_MAX - 1)
            return bad(b, "too many values");
        sc->v[i].id = ++b->next_id;
    }
    if (type >= 0 || !sc->v[i].nres) { /* a definition, or the first forward use */
        sc->v[i].sub = sub;
        sc->v[i].nres = nres;
        sc->v[i].type = type;
    }
    return true;
}

static void
out_ref(struct bc *b, const struct slot *s)
{
    if (s->nres > 1)
        out(b, "%%v%d#%d", s->id, s->sub);
    else
        out(b, "%%v%d", s->id);
}

static bool read_regions(struct bc *b, struct rd *r, struct vscope *sc, uint64_t nreg,
                         enum rkind kind, const struct opinfo *op, bool mute, int depth);

static bool
use_list(struct rd *r, uint64_t nvals)
{
    uint64_t n = 1;
    if (nvals > 1)
        n = count(r);
    for (uint64_t i = 0; i < n && !r->bad; i++) {
        if (nvals > 1)
            (void)varint(r);
        uint64_t k = varint(r) >> 1;
        if (k > (uint64_t)(r->end - r->p))
            r->bad = true;
        for (uint64_t j = 0; j < k && !r->bad; j++)
            (void)varint(r);
    }
    return !r->bad;
}

/* The StableHLO name of a VHLO op: NAME of vhlo.NAME_vN. */
static size_t
base_len(const char *on, size_t ol)
{
    size_t l = ol;
    while (l > 0 && on[l - 1] >= '0' && on[l - 1] <= '9')
        l--;
    if (l < ol && l >= 2 && on[l - 1] == 'v' && on[l - 2] == '_')
        return l - 2;
    return ol;
}

static bool
is(const struct opinfo *o, const char *name)
{
    size_t l = base_len(o->on, o->ol);
    if (!o->vprops)
        return false;
    return l == strlen(name) && !memcmp(o->on, name, l);
}

/* Convolution dimension numbers as the pretty `[b, 0, f]x[o, i, 0]->[...]`. */
static bool
out_conv_dims(struct bc *b, const struct opinfo *o)
{
    static const char *const keys[3][3] = {
        {"input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions"},
        {"kernel_output_feature_dimension", "kernel_input_feature_dimension",
         "kernel_spatial_dimensions"},
        {"output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions"}};
    static const char letters[3][2] = {{'b', 'f'}, {'o', 'i'}, {'b', 'f'}};
    put(b, ", dim_numbers = ", 16);
    for (int g = 0; g < 3; g++) {
        const struct named *x = find(o->at, o->nat, keys[g][0]);
        const struct named *y = find(o->at, o->nat, keys[g][1]);
        const struct named *z = find(o->at, o->nat, keys[g][2]);
        int64_t a, f, sp[NPU_MAX_DIMS];
        char lay[NPU_MAX_DIMS + 2];
        if (!x || !y || !z || !attr_int(b, x->value, &a) || !attr_int(b, y->value, &f))
            return bad(b, "convolution: missing dimension numbers");
        /* spatial dims: an array of integers, or an i64 tensor */
        struct rd r;
        struct ent *e;
        if (!entry(b, false, z->value, &r, &e) || !e->custom || (int)e->dialect != b->vhlo)
            return bad(b, "convolution: bad spatial dimensions");
        uint64_t code = varint(&r);
        int ns = 0;
        if (code == 1) {
            uint64_t n = count(&r);
            if (n > NPU_MAX_DIMS - 2)
                return bad(b, "convolution: too many spatial dimensions");
            for (uint64_t i = 0; i < n; i++)
                if (!attr_int(b, varint(&r), &sp[ns++]))
                    return bad(b, "convolution: bad spatial dimensions");
        } else if (code == 15) {
            struct vtype t;
            if (!get_type(b, varint(&r), &t) || t.elem != 14 || t.ndim != 1 ||
                t.dims[0] > NPU_MAX_DIMS - 2)
                return bad(b, "convolution: bad spatial dimensions");
            uint64_t size = varint(&r);
            if (r.bad || size != (uint64_t)t.dims[0] * 8 || size > (uint64_t)(r.end - r.p))
                return bad(b, "convolution: bad spatial dimensions");
            for (int i = 0; i < (int)t.dims[0]; i++) {
                uint64_t u = 0;
                for (int k = 0; k < 8; k++)
                    u |= (uint64_t)r.p[8 * i + k] << (8 * k);
                sp[ns++] = (int64_t)u;
            }
        } else
            return bad(b, "convolution: bad spatial dimensions");
        int rank = ns + 2;
        memset(lay, 0, sizeof lay);
        if (a < 0 || a >= rank || f < 0 || f >= rank || a == f)
            return bad(b, "convolution: bad dimension numbers");
        lay[a] = letters[g][0];
        lay[f] = letters[g][1];
        for (int i = 0; i < ns; i++) {
            if (sp[i] < 0 || sp[i] >= rank || lay[sp[i]] || i > 9)
                return bad(b, "convolution: bad dimension numbers");
            lay[sp[i]] = (char)('0' + i);
        }
        put(b, g ? (g == 1 ? "x[" : "->[") : "[", g ? (g == 1 ? 2 : 3) : 1);
        for (int i = 0; i < rank; i++)
            out(b, i ? ", %c" : "%c", lay[i]);
        put(b, "]", 1);
    }
    return true;
}

static bool
read_op(struct bc *b, struct rd *r, struct vscope *sc, size_t *next, size_t end, enum rkind kind,
        bool mute, int depth)
{
    struct opinfo *o = calloc(1, sizeof *o);
    uint64_t *res = NULL;
    size_t *opnd = NULL;
    bool ok = false;
    if (!o)
        return (b->out.oom = true), false;
    o->name = varint(r);
    if (r->bad || o->name >= b->nops) {
        bad(b, "operation name index out of range");
        goto out;
    }
    o->dn = b->str[b->dname[b->opdial[o->name]]];
    o->dl = b->slen[b->dname[b->opdial[o->name]]];
    o->on = b->str[b->opname[o->name]];
    o->ol = b->slen[b->opname[o->name]];
    o->vprops = b->opv[o->name];
    unsigned mask = byte(r);
    (void)varint(r); /* location */
    uint64_t dict = 0;
    bool has_dict = mask & 1;
    if (has_dict)
        dict = varint(r);
    uint64_t prop = 0;
    bool has_prop = (mask & 0x40) && b->version >= 5;
    if (has_prop)
        prop = varint(r);
    uint64_t nres = 0, nopnd = 0;
    if (mask & 2) {
        nres = count(r);
        res = malloc((nres ? nres : 1) * sizeof *res);
        if (!res)
            goto oom;
        for (uint64_t i = 0; i < nres; i++)
            res[i] = varint(r);
    }
    if (mask & 4) {
        nopnd = count(r);
        opnd = malloc((nopnd ? nopnd : 1) * sizeof *opnd);
        if (!opnd)
            goto oom;
        for (uint64_t i = 0; i < nopnd; i++) {
            opnd[i] = (size_t)varint(r);
            if (!r->bad && !slot_new(b, sc, opnd[i], 0, 1, -1))
                goto out;
        }
    }
    if (mask & 8) {
        uint64_t n = count(r);
        for (uint64_t i = 0; i < n; i++)
            (void)varint(r);
        mute = true; /* branches: not StableHLO */
    }
    if ((mask & 0x20) && b->version >= 3 && !use_list(r, nres))
        goto corrupt;
    uint64_t nreg = 0;
    bool isolated = false;
    if (mask & 0x10) {
        uint64_t v = varint(r);
        nreg = v >> 1;
        isolated = v & 1;
        if (nreg > 64)
            goto corrupt;
    }
    if (r->bad)
        goto corrupt;
    if (nres > 32767 || *next + nres > end) {
        bad(b, "operation results overrun their region's values");
        goto out;
    }
    for (uint64_t i = 0; i < nres; i++) {
        if (!slot_new(b, sc, *next + i, (int16_t)i, (int16_t)nres, (int64_t)res[i]))
            goto out;
        sc->v[*next + i].id = sc->v[*next].id; /* %vN#i */
    }
    size_t first = *next;
    *next += nres;
    o->nat = 0;
    if (has_dict && (o->nat = op_attrs(b, dict, o->at, 64)) < 0)
        goto out;
    if (has_prop && !op_props(b, o, prop))
        goto out;

    bool vhlo = (int)b->opdial[o->name] == b->vhlo;
    bool is_module =
        o->dl == 7 && !memcmp(o->dn, "builtin", 7) && o->ol == 6 && !memcmp(o->on, "module", 6);
    bool is_func = vhlo && is(o, "func");
    enum rkind sub = is_module ? R_MODULE : is_func ? R_FUNC : R_BODY;
    if (!mute && !is_func) {
        out(b, "%*s", 2 * (depth > 0 ? depth : 0), "");
        mark_line(b, o->name);
        if (is_module) {
            put(b, "module {\n", 9);
        } else {
            if (nres) {
                out(b, "%%v%d", sc->v[first].id);
                if (nres > 1)
                    out(b, ":%" PRIu64, nres);
                put(b, " = ", 3);
            }
            if (vhlo && is(o, "return"))
                out(b, "\"%s\"(", kind == R_FUNC ? "func.return" : "stablehlo.return");
            else if (vhlo && is(o, "call"))
                out(b, "\"func.call\"(");
            else if (vhlo && o->vprops)
                out(b, "\"stablehlo.%.*s\"(", (int)base_len(o->on, o->ol), o->on);
            else
                out(b, "\"%.*s.%.*s\"(", (int)o->dl, o->dn, (int)o->ol, o->on);
            for (uint64_t i = 0; i < nopnd; i++) {
                if (i)
                    put(b, ", ", 2);
                out_ref(b, &sc->v[opnd[i]]);
            }
            put(b, ")", 1);
            if (nreg)
                put(b, " (", 2);
        }
    }
    /* regions: isolated ones in their own section and value scope */
    if (nreg) {
        struct rd sec = *r, *rr = r;
        struct vscope iso = {0}, *s2 = sc;
        if (isolated) {
            s2 = &iso;
            if (b->version >= 2) {
                unsigned id;
                if (!section(b, r, &id, &sec) || id != 4) {
                    bad(b, "expected an IR section for an isolated region");
                    goto out;
                }
                rr = &sec;
            }
        }
        bool rok = read_regions(b, rr, s2, nreg, sub, o, mute || (!is_module && !is_func && !vhlo),
                                depth + 1);
        free(iso.v);
        if (!rok)
            goto out;
    }
    if (!mute && is_module) {
        put(b, "}\n", 2);
    } else if (!mute && !is_func) {
        if (nreg)
            put(b, ")", 1);
        /* attributes */
        int shown = 0;
        for (int i = 0; i < o->nat; i++) {
            const struct named *a = &o->at[i];
            if (a->len == 6 && !memcmp(a->name, "callee", 6) && vhlo && is(o, "call")) {
                size_t sl;
                const char *s = attr_string(b, a->value, &sl);
                if (!s)
                    goto out;
                out(b, "%scallee = @", shown++ ? ", " : " {");
                out_str(b, s, sl);
                continue;
            }
            out(b, "%s%.*s = ", shown++ ? ", " : " {", (int)a->len, a->name);
            if (!out_attr(b, a->value, 0, vhlo && is(o, "constant")))
                goto out;
        }
        if (vhlo && is(o, "convolution")) {
            if (!shown++)
                put(b, " {", 2);
            if (!out_conv_dims(b, o))
                goto out;
        }
        if (shown)
            put(b, "}", 1);
        put(b, " : (", 4);
        for (uint64_t i = 0; i < nopnd; i++) {
            if (i)
                put(b, ", ", 2);
            if (sc->v[opnd[i]].type < 0)
                put(b, "none", 4);
            else if (!out_type(b, (uint64_t)sc->v[opnd[i]].type, 0))
                goto out;
        }
        put(b, ") -> ", 5);
        if (nres != 1)
            put(b, "(", 1);
        for (uint64_t i = 0; i < nres; i++) {
            if (i)
                put(b, ", ", 2);
            if (!out_type(b, res[i], 0))
                goto out;
        }
        put(b, nres != 1 ? ")\n" : "\n", nres != 1 ? 2 : 1);
    }
    ok = true;
    goto out;
corrupt:
    bad(b, "corrupt operation");
    goto out;
oom:
    b->out.oom = true;
out:
    free(res);
    free(opnd);
    free(o);
    return ok;
}

static bool
push(struct bc *b, struct vscope *sc, uint64_t n, size_t *base)
{
    if (n > MAX_COUNT || sc->n + n > MAX_COUNT)
        return bad(b, "too many values in a region");
    if (sc->n + n > sc->cap) {
        size_t cap = sc->cap ? sc->cap : 64;
        while (cap < sc->n + n)
            cap *= 2;
        struct slot *v = realloc(sc->v, cap * sizeof *v);
        if (!v)
            return (b->out.oom = true), false;
        sc->v = v;
        sc->cap = cap;
    }
    *base = sc->n;
    if (n)
        memset(sc->v + sc->n, 0, (size_t)n * sizeof *sc->v);
    sc->n += (size_t)n;
    return true;
}

/* The function header of a vhlo.func_v1 once its arguments are known. */
static bool
func_header(struct bc *b, const struct opinfo *o, const struct vscope *sc, size_t first,
            uint64_t nargs)
{
    const struct named *nm = find(o->at, o->nat, "sym_name");
    const struct named *vis = find(o->at, o->nat, "sym_visibility");
    const struct named *ft = find(o->at, o->nat, "function_type");
    size_t nl = 0, vl = 0;
    const char *name = nm ? attr_string(b, nm->value, &nl) : NULL;
    const char *v = vis ? attr_string(b, vis->value, &vl) : NULL;
    if (!name)
        return bad(b, "a function without a name");
    if (vis && !v)
        b->err[0] = 0; /* not a string: public */
    mark_line(b, o->name);
    out(b, "func.func %s @", v && vl == 7 && !memcmp(v, "private", 7) ? "private" : "public");
    out_str(b, name, nl);
    put(b, "(", 1);
    for (uint64_t i = 0; i < nargs; i++) {
        const struct slot *s = &sc->v[first + i];
        out(b, i ? ", %%v%d: " : "%%v%d: ", s->id);
        if (!out_type(b, (uint64_t)s->type, 0))
            return false;
    }
    put(b, ")", 1);
    /* results from the function type: TypeV1(FunctionV1(inputs, outputs)) */
    struct rd r;
    struct ent *e;
    if (ft && entry(b, false, ft->value, &r, &e) && e->custom && (int)e->dialect == b->vhlo &&
        varint(&r) == 17) {
        struct rd r2;
        struct ent *e2;
        uint64_t ti = varint(&r);
        if (!r.bad && entry(b, true, ti, &r2, &e2) && e2->custom && (int)e2->dialect == b->vhlo &&
            varint(&r2) == 8) {
            uint64_t n = count(&r2);
            for (uint64_t i = 0; i < n; i++)
                (void)varint(&r2);
            n = count(&r2);
            put(b, " -> (", 5);
            for (uint64_t i = 0; i < n && !r2.bad; i++) {
                if (i)
                    put(b, ", ", 2);
                if (!out_type(b, varint(&r2), 0))
                    return false;
            }
            put(b, ")", 1);
            if (r2.bad)
                return bad(b, "corrupt function type");
        }
    }
    put(b, " {\n", 3);
    return !b->err[0];
}

static bool
read_regions(struct bc *b, struct rd *r, struct vscope *sc, uint64_t nreg, enum rkind kind,
             const struct opinfo *op, bool mute, int depth)
{
    if (depth > MAX_DEPTH)
        return bad(b, "regions nested too deeply");
    for (uint64_t ri = 0; ri < nreg; ri++) {
        uint64_t nblocks = varint(r);
        if (r->bad)
            return bad(b, "corrupt region");
        if (kind == R_BODY && !mute)
            put(b, ri ? ", {" : "{", ri ? 3 : 1);
        if (nblocks == 0) {
            if (kind == R_BODY && !mute)
                put(b, "}", 1);
            continue;
        }
        uint64_t nvals = varint(r);
        size_t base;
        if (r->bad || nblocks > MAX_COUNT || !push(b, sc, nvals, &base))
            return bad(b, "corrupt region");
        size_t next = base, end = base + (size_t)nvals;
        if (nblocks > 1)
            mute = true; /* control flow between blocks: not StableHLO */
        for (uint64_t bi = 0; bi < nblocks; bi++) {
            uint64_t hdr = varint(r);
            uint64_t nops = hdr >> 1, nargs = 0;
            size_t first = next;
            if (hdr & 1) {
                nargs = count(r);
                if (next + nargs > end)
                    return bad(b, "block arguments overrun their region's values");
                for (uint64_t i = 0; i < nargs; i++) {
                    uint64_t t;
                    if (b->version >= 4) {
                        uint64_t v = varint(r);
                        t = v >> 1;
                        if (v & 1)
                            (void)varint(r);
                    } else {
                        t = varint(r);
                        (void)varint(r);
                    }
                    if (r->bad || t >= b->ntype)
                        return bad(b, "corrupt block argument");
                    if (!slot_new(b, sc, next++, 0, 1, (int64_t)t))
                        return false;
                }
                if (b->version >= 3 && byte(r) && !use_list(r, nargs))
                    return bad(b, "corrupt block use-list order");
            }
            if (r->bad)
                return bad(b, "corrupt block");
            if (!mute && kind == R_FUNC && bi == 0) {
                if (!func_header(b, op, sc, first, nargs))
                    return false;
            } else if (!mute && kind == R_BODY) {
                out(b, "\n%*s^bb%" PRIu64, 2 * depth, "", bi);
                if (nargs) {
                    put(b, "(", 1);
                    for (uint64_t i = 0; i < nargs; i++) {
                        out(b, i ? ", %%v%d: " : "%%v%d: ", sc->v[first + i].id);
                        if (!out_type(b, (uint64_t)sc->v[first + i].type, 0))
                            return false;
                    }
                    put(b, ")", 1);
                }
                put(b, ":\n", 2);
            }
            if (nops > (uint64_t)(r->end - r->p))
                return bad(b, "more operations than bytes left");
            for (uint64_t k = 0; k < nops; k++)
                if (!read_op(b, r, sc, &next, end, kind, mute, kind == R_MODULE ? depth : depth))
                    return false;
        }
        if (!mute && kind == R_FUNC)
            put(b, "}\n", 2);
        else if (!mute && kind == R_BODY)
            out(b, "%*s}", 2 * (depth > 1 ? depth - 1 : 0), "");
        sc->n = base; /* pop */
    }
    return true;
}

void
shlo_decoded_free(struct shlo_decoded *d)
{
    if (!d)
        return;
    free(d->text);
    free(d->line_op);
    if (d->op_names)
        for (int i = 0; i < d->nop_names; i++)
            free(d->op_names[i]);
    free(d->op_names);
    memset(d, 0, sizeof *d);
}

enum npu_status
shlo_bytecode_decode(const void *buf, size_t len, struct shlo_decoded *d)
{
    memset(d, 0, sizeof *d);
    if (!buf || len < 4 || memcmp(buf, "ML\xefR", 4)) {
        snprintf(d->origin, sizeof d->origin, "MLIR bytecode");
        snprintf(d->error, sizeof d->error, "not MLIR bytecode (no magic)");
        return NPU_ERR_INVALID;
    }
    struct bc *b = calloc(1, sizeof *b);
    if (!b)
        return NPU_ERR_NOMEM;
    enum npu_status st = NPU_ERR_INVALID;
    b->base = buf;
    b->vhlo = b->builtin = -1;
    b->line = 1;
    b->budget = 64 * (int64_t)len + 100000;
    struct rd r = {b->base + 4, b->base + len, false};
    b->version = varint(&r);
    b->producer = (const char *)r.p;
    while (r.p < r.end && *r.p)
        r.p++;
    b->prodlen = (int)((const char *)r.p - b->producer);
    if (b->prodlen > 64)
        b->prodlen = 64;
    snprintf(d->origin, sizeof d->origin, "MLIR bytecode (version %" PRIu64 ", producer '%.*s')",
             b->version, r.bad || r.p >= r.end ? 0 : b->prodlen, r.bad ? "" : b->producer);
    if (r.bad || r.p >= r.end) {
        bad(b, "truncated header");
        goto done;
    }
    if (b->version > 6) {
        bad(b, "bytecode version %" PRIu64 " is newer than the newest this reader knows (6)",
            b->version);
        st = NPU_ERR_UNSUPPORTED;
        goto done;
    }
    r.p++;
    struct rd sec[9];
    bool have[9] = {0};
    while (r.p < r.end) {
        unsigned id;
        struct rd dd;
        if (!section(b, &r, &id, &dd)) {
            bad(b, "a section overruns the file");
            goto done;
        }
        if (id > 8 || have[id]) {
            bad(b, "section %u is unknown or repeated", id);
            goto done;
        }
        sec[id] = dd;
        have[id] = true;
    }
    for (int i = 0; i <= 4; i++)
        if (!have[i]) {
            bad(b, "section %d is missing", i);
            goto done;
        }
    /* strings */
    struct rd *s = &sec[0];
    const uint8_t *s0 = s->p;
    b->nstr = count(s);
    b->str = calloc(b->nstr + 1, sizeof *b->str);
    b->slen = calloc(b->nstr + 1, sizeof *b->slen);
    if (!b->str || !b->slen)
        goto oom;
    /* lengths in reverse order; the data, back to back, ends the section */
    size_t dend = (size_t)(s->end - s0);
    for (uint64_t i = 0; i < b->nstr; i++) {
        uint64_t l = varint(s);
        if (s->bad || l == 0 || l > dend) {
            bad(b, "corrupt string section");
            goto done;
        }
        dend -= (size_t)l;
        uint64_t k = b->nstr - 1 - i;
        b->str[k] = (const char *)s0 + dend;
        b->slen[k] = (uint32_t)(l - 1);
    }
    if (dend != (size_t)(s->p - s0)) {
        bad(b, "corrupt string section (lengths and data disagree)");
        goto done;
    }
    for (uint64_t i = 0; i < b->nstr; i++)
        if (b->str[i][b->slen[i]] != 0) {
            bad(b, "corrupt string section (a string without its NUL)");
            goto done;
        }
    /* dialects and operation names */
    struct rd *dl = &sec[1];
    b->ndial = count(dl);
    b->dname = calloc(b->ndial + 1, sizeof *b->dname);
    if (!b->dname)
        goto oom;
    for (uint64_t i = 0; i < b->ndial; i++) {
        uint64_t v = varint(dl);
        uint64_t si = b->version >= 1 ? v >> 1 : v;
        if (dl->bad || si >= b->nstr) {
            bad(b, "corrupt dialect section");
            goto done;
        }
        b->dname[i] = (uint32_t)si;
        if (b->slen[si] == 4 && !memcmp(b->str[si], "vhlo", 4))
            b->vhlo = (int)i;
        if (b->slen[si] == 7 && !memcmp(b->str[si], "builtin", 7))
            b->builtin = (int)i;
        if (b->version >= 1 && (v & 1)) {
            unsigned id;
            struct rd vd;
            if (!section(b, dl, &id, &vd) || id != 7) {
                bad(b, "corrupt dialect version");
                goto done;
            }
        }
    }
    if (b->version >= 4)
        (void)varint(dl);
    size_t cap = 0;
    while (dl->p < dl->end && !dl->bad) {
        uint64_t di = varint(dl), n = count(dl);
        if (dl->bad || di >= b->ndial) {
            bad(b, "corrupt operation names");
            goto done;
        }
        for (uint64_t k = 0; k < n; k++) {
            uint64_t v = varint(dl);
            uint64_t si = b->version >= 5 ? v >> 1 : v;
            if (dl->bad || si >= b->nstr) {
                bad(b, "corrupt operation names");
                goto done;
            }
            if (b->nops == cap) {
                cap = cap ? 2 * cap : 64;
                uint32_t *a = realloc(b->opdial, cap * sizeof *a);
                if (!a)
                    goto oom;
                b->opdial = a;
                a = realloc(b->opname, cap * sizeof *a);
                if (!a)
                    goto oom;
                b->opname = a;
                uint8_t *g = realloc(b->opreg, cap);
                if (!g)
                    goto oom;
                b->opreg = g;
                const char **pv = realloc(b->opv, cap * sizeof *pv);
                if (!pv)
                    goto oom;
                b->opv = pv;
            }
            b->opv[b->nops] = vhlo_op(b->str[si], b->slen[si]);
            b->opreg[b->nops] = b->version >= 5 ? (v & 1) : 0;
            b->opdial[b->nops] = (uint32_t)di;
            b->opname[b->nops++] = (uint32_t)si;
        }
    }
    if (dl->bad) {
        bad(b, "corrupt operation names");
        goto done;
    }
    if (b->vhlo < 0) {
        bad(b, "no vhlo dialect: not a StableHLO portable artifact");
        st = NPU_ERR_UNSUPPORTED;
        goto done;
    }
    /* properties: count, then per entry a size and its bytes */
    if (have[8] && sec[8].p < sec[8].end) {
        b->props = sec[8];
        b->nprops = count(&b->props);
        b->propoff = calloc(b->nprops + 1, sizeof *b->propoff);
        if (!b->propoff)
            goto oom;
        struct rd w = b->props;
        for (uint64_t i = 0; i < b->nprops; i++) {
            b->propoff[i] = w.p;
            uint64_t n = varint(&w);
            if (w.bad || n > (uint64_t)(w.end - w.p)) {
                bad(b, "corrupt properties section");
                goto done;
            }
            w.p += n;
        }
    }
    /* attribute and type offsets */
    struct rd *ot = &sec[3];
    b->nattr = count(ot);
    b->ntype = count(ot);
    if (ot->bad || b->nattr + b->ntype > (uint64_t)(sec[2].end - sec[2].p) + 1) {
        bad(b, "corrupt attribute/type offsets");
        goto done;
    }
    b->attr = calloc(b->nattr + 1, sizeof *b->attr);
    b->type = calloc(b->ntype + 1, sizeof *b->type);
    if (!b->attr || !b->type)
        goto oom;
    size_t off = 0, total = (size_t)(sec[2].end - sec[2].p);
    for (int kind = 0; kind < 2; kind++) {
        struct ent *tab = kind ? b->type : b->attr;
        uint64_t n = kind ? b->ntype : b->nattr, i = 0;
        while (i < n) {
            uint64_t di = varint(ot), k = varint(ot);
            if (ot->bad || di >= b->ndial || k > n - i) {
                bad(b, "corrupt attribute/type offsets");
                goto done;
            }
            for (uint64_t j = 0; j < k; j++, i++) {
                uint64_t v = varint(ot);
                uint64_t size = v >> 1;
                if (ot->bad || size > total - off) {
                    bad(b, "an attribute or type overruns its section");
                    goto done;
                }
                tab[i].p = sec[2].p + off;
                tab[i].len = (uint32_t)size;
                tab[i].dialect = (uint32_t)di;
                tab[i].custom = v & 1;
                off += (size_t)size;
            }
        }
    }
    /* the IR: one block holding builtin.module */
    struct rd *ir = &sec[4];
    struct vscope top = {0};
    size_t base = 0;
    uint64_t hdr = varint(ir);
    bool ok = !ir->bad && !(hdr & 1) && push(b, &top, 0, &base);
    size_t next = 0;
    for (uint64_t k = 0; ok && k < (hdr >> 1); k++)
        ok = read_op(b, ir, &top, &next, 0, R_MODULE, false, 0);
    free(top.v);
    if (ok && ir->p != ir->end)
        ok = bad(b, "trailing bytes after the IR");
    if (!ok || b->err[0] || b->out.oom) {
        if (b->out.oom)
            goto oom;
        if (!b->err[0])
            bad(b, "corrupt IR section");
        goto done;
    }
    /* the result */
    d->text = b->out.s;
    d->len = b->out.n;
    b->out.s = NULL;
    d->line_op = b->line_op;
    d->nlines = b->line_cap < b->line ? b->line_cap : b->line;
    b->line_op = NULL;
    d->op_names = calloc(b->nops + 1, sizeof *d->op_names);
    if (!d->op_names)
        goto oom;
    d->nop_names = (int)b->nops;
    for (uint64_t i = 0; i < b->nops; i++) {
        size_t l1 = b->slen[b->dname[b->opdial[i]]], l2 = b->slen[b->opname[i]];
        d->op_names[i] = malloc(l1 + l2 + 2);
        if (!d->op_names[i])
            goto oom;
        snprintf(d->op_names[i], l1 + l2 + 2, "%.*s.%.*s", (int)l1, b->str[b->dname[b->opdial[i]]],
                 (int)l2, b->str[b->opname[i]]);
    }
    st = NPU_OK;
    goto done;
oom:
    st = NPU_ERR_NOMEM;
    snprintf(b->err, sizeof b->err, "out of memory");
done:
    if (st != NPU_OK) {
        snprintf(d->error, sizeof d->error, "%s", b->err[0] ? b->err : "corrupt");
        free(d->text);
        free(d->line_op);
        if (d->op_names)
            for (int i = 0; i < d->nop_names; i++)
                free(d->op_names[i]);
        free(d->op_names);
        d->text = NULL;
        d->line_op = NULL;
        d->op_names = NULL;
        d->len = 0;
        d->nlines = d->nop_names = 0;
    }
    free(b->out.s);
    free(b->line_op);
    free(b->str);
    free(b->slen);
    free(b->dname);
    free(b->opdial);
    free(b->opname);
    free(b->opreg);
    free(b->opv);
    free(b->propoff);
    free(b->attr);
    free(b->type);
    free(b);
    return st;
}
