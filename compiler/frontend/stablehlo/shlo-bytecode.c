// SPDX-License-Identifier: MIT
/*
 * shlo-bytecode.c: the container of MLIR bytecode (the form of VHLO portable
 * artifacts), read far enough to say what a module is: the bytecode version,
 * the producer (StableHLO's serializer writes "StableHLO_vX.Y.Z"), and the
 * operations it uses (from the string and dialect sections). The IR section
 * itself, and VHLO's own encodings of its types and attributes, are not
 * decoded: the reader refuses the module with a message naming all of that.
 *
 * Format facts (MLIR's BytecodeFormat documentation, checked against the
 * stablehlo repository's tests/vhlo/ artifacts): magic "ML\xEFR"; a PrefixVarInt
 * version (the count of trailing zero bits of the first byte is the count of
 * further bytes, a first byte of 0 means eight more, the value is the whole
 * little-endian number shifted right by that count plus one); the producer,
 * NUL-terminated; then sections: an id byte (bit 7: aligned), a varint
 * length, with alignment a varint alignment and 0xCB padding, then the data.
 * String section (id 0): count, the lengths in reverse order (each counting
 * the NUL), the NUL-terminated strings. Dialect section (id 1): count, per
 * dialect (string index << 1 | has-version, from bytecode 1 on) followed,
 * with a version, by a nested section; from bytecode 3 on the total count of
 * operation names; then groups of dialect index, count, and per name its
 * string index (shifted left over a registered flag in the version 6 files
 * we have; version 0 files have no flag; 1 to 4 are untested).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shlo-priv.h"

struct rd {
    const uint8_t *p, *end;
    bool bad;
};

static uint64_t
varint(struct rd *r)
{
    if (r->p >= r->end) {
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

/* One section: id, data range. Returns false at the end or on damage. */
static bool
section(struct rd *r, unsigned *id, struct rd *data)
{
    if (r->p >= r->end || r->bad)
        return false;
    unsigned b = *r->p++;
    *id = b & 0x7f;
    uint64_t len = varint(r);
    if (b & 0x80) {
        uint64_t align = varint(r);
        if (align == 0 || align > 4096 || (align & (align - 1))) {
            r->bad = true;
            return false;
        }
        while (r->p < r->end && *r->p == 0xCB)
            r->p++;
    }
    if (r->bad || len > (uint64_t)(r->end - r->p)) {
        r->bad = true;
        return false;
    }
    data->p = r->p;
    data->end = r->p + len;
    data->bad = false;
    r->p += len;
    return true;
}

#define MAX_STRINGS 65536

enum npu_status
shlo_bytecode_describe(const void *buf, size_t len, char *msg, size_t mlen)
{
    struct rd r = {(const uint8_t *)buf + 4, (const uint8_t *)buf + len, false};
    if (len < 4 || memcmp(buf, "ML\xefR", 4)) {
        snprintf(msg, mlen, "not MLIR bytecode (no magic)");
        return NPU_ERR_INVALID;
    }
    uint64_t version = varint(&r);
    const uint8_t *prod = r.p;
    while (r.p < r.end && *r.p)
        r.p++;
    if (r.bad || r.p >= r.end) {
        snprintf(msg, mlen, "corrupt MLIR bytecode: truncated header");
        return NPU_ERR_INVALID;
    }
    int prod_len = (int)(r.p - prod);
    r.p++;
    struct rd strs = {0}, dial = {0};
    bool have_strs = false, have_dial = false;
    unsigned id;
    struct rd d;
    while (section(&r, &id, &d)) {
        if (id == 0)
            strs = d, have_strs = true;
        else if (id == 1)
            dial = d, have_dial = true;
    }
    if (r.bad || !have_strs || !have_dial) {
        snprintf(msg, mlen, "corrupt MLIR bytecode (version %llu, producer '%.*s'): %s",
                 (unsigned long long)version, prod_len > 64 ? 64 : prod_len, (const char *)prod,
                 r.bad ? "a section overruns the file" : "no string or dialect section");
        return NPU_ERR_INVALID;
    }
    /* strings: count, reversed lengths, data */
    uint64_t ns = varint(&strs);
    if (strs.bad || ns > MAX_STRINGS) {
        snprintf(msg, mlen, "corrupt MLIR bytecode: string section");
        return NPU_ERR_INVALID;
    }
    uint32_t *off = malloc((size_t)(ns ? ns : 1) * 2 * sizeof *off), *slen = off ? off + ns : NULL;
    enum npu_status st = NPU_ERR_INVALID;
    if (!off)
        return NPU_ERR_NOMEM;
    uint64_t total = 0;
    for (uint64_t i = 0; i < ns; i++) {
        uint64_t l = varint(&strs);
        slen[ns - 1 - i] = (uint32_t)l;
        total += l;
        if (strs.bad || l > (1u << 30)) {
            snprintf(msg, mlen, "corrupt MLIR bytecode: string lengths");
            goto out;
        }
    }
    if (total > (uint64_t)(strs.end - strs.p)) {
        snprintf(msg, mlen, "corrupt MLIR bytecode: strings overrun their section");
        goto out;
    }
    uint64_t o = (uint64_t)(strs.end - strs.p) - total; /* the data ends the section */
    for (uint64_t i = 0; i < ns; i++) {
        off[i] = (uint32_t)o;
        o += slen[i];
    }
#define STR(i) ((const char *)strs.p + off[i])
#define STRLEN(i) ((int)(slen[i] && STR(i)[slen[i] - 1] == 0 ? slen[i] - 1 : slen[i]))
    /* dialects */
    uint64_t nd = varint(&dial);
    uint64_t dname[64];
    if (dial.bad || nd > 64)
        goto bad_dialects;
    for (uint64_t i = 0; i < nd; i++) {
        uint64_t v = varint(&dial);
        dname[i] = version >= 1 ? v >> 1 : v; /* the version flag came with bytecode 1 */
        if (dial.bad || dname[i] >= ns)
            goto bad_dialects;
        if (version >= 1 && (v & 1)) { /* a nested section with the dialect's version */
            unsigned vid;
            struct rd vd;
            if (!section(&dial, &vid, &vd))
                goto bad_dialects;
        }
    }
    size_t n = (size_t)snprintf(msg, mlen,
                                "MLIR bytecode (version %llu, producer '%.*s') is not supported "
                                "yet: the reader takes StableHLO text (jax: "
                                "lower(...).as_text()); the module's operations:",
                                (unsigned long long)version, prod_len > 64 ? 64 : prod_len,
                                (const char *)prod);
    if (version >= 3 && dial.p < dial.end)
        (void)varint(&dial); /* total count of op names, from bytecode 3 on */
    int shown = 0;
    while (dial.p < dial.end && !dial.bad) {
        uint64_t di = varint(&dial), cnt = varint(&dial);
        if (dial.bad || di >= nd || cnt > ns)
            goto bad_dialects;
        for (uint64_t k = 0; k < cnt; k++) {
            uint64_t v = varint(&dial);
            uint64_t si = version >= 5 ? v >> 1 : v;
            if (dial.bad || si >= ns)
                goto bad_dialects;
            if (n < mlen && shown < 40)
                n += (size_t)snprintf(msg + n, mlen - n, " %.*s.%.*s", STRLEN(dname[di]),
                                      STR(dname[di]), STRLEN(si), STR(si));
            shown++;
        }
    }
    if (n < mlen && shown > 40)
        snprintf(msg + n, mlen - n, " ... (%d in all)", shown);
    st = NPU_ERR_UNSUPPORTED;
    goto out;
bad_dialects:
    snprintf(msg, mlen, "corrupt MLIR bytecode (version %llu, producer '%.*s'): dialect section",
             (unsigned long long)version, prod_len > 64 ? 64 : prod_len, (const char *)prod);
out:
    free(off);
    return st;
}
