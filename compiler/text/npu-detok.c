// SPDX-License-Identifier: MIT
/*
 * npu-detok.c: streaming decode (npu-tokenizer.h). Each id's bytes were
 * computed at load through the per-token decoders (ByteLevel's table,
 * ByteFallback's <0xNN>, Replace/Metaspace's "▁" -> " "); here they go
 * through a UTF-8 assembler that lets out only complete characters, so a
 * character split over several tokens (byte-level BPE of an emoji, or
 * SentencePiece byte fallback) comes out once its last byte arrives. Bytes
 * that cannot complete a character come out as U+FFFD, one per maximal
 * invalid sequence, as Rust's String::from_utf8_lossy (which `tokenizers`
 * uses) does.
 */
#include "tok-internal.h"

#include <stdlib.h>
#include <string.h>

struct npu_detok {
    const struct npu_tokenizer *t;
    unsigned flags;
    unsigned char pend[4]; /* bytes of an incomplete character */
    size_t npend, need;
    unsigned char lo, hi; /* allowed range of the second byte */
    int strip;            /* leading spaces still to drop */
    bool first_token;     /* no token has reached the decoder yet */
    char *out;
    size_t nout, cap;
};

static int
out_add(struct npu_detok *d, const void *s, size_t n)
{
    if (d->nout + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 64;
        while (cap < d->nout + n + 1)
            cap *= 2;
        char *p = realloc(d->out, cap);
        if (!p)
            return -1;
        d->out = p;
        d->cap = cap;
    }
    if (n)
        memcpy(d->out + d->nout, s, n);
    d->nout += n;
    d->out[d->nout] = '\0';
    return 0;
}

static int
emit(struct npu_detok *d, const unsigned char *s, size_t n)
{
    while (d->strip > 0 && n && s[0] == ' ') {
        s++;
        n--;
        d->strip--;
    }
    if (n)
        d->strip = 0; /* only leading spaces of the text are stripped */
    return out_add(d, s, n);
}

static int
replacement(struct npu_detok *d)
{
    d->npend = 0;
    d->need = 0;
    return emit(d, (const unsigned char *)"\xEF\xBF\xBD", 3);
}

/* One byte into the assembler. */
static int
feed(struct npu_detok *d, unsigned char c)
{
    if (d->npend) {
        unsigned char lo = d->npend == 1 ? d->lo : 0x80, hi = d->npend == 1 ? d->hi : 0xBF;
        if (c >= lo && c <= hi) {
            d->pend[d->npend++] = c;
            if (d->npend == d->need) {
                int r = emit(d, d->pend, d->npend);
                d->npend = 0;
                return r;
            }
            return 0;
        }
        if (replacement(d)) /* the held bytes are a maximal invalid sequence */
            return -1;
    }
    if (c < 0x80)
        return emit(d, &c, 1);
    d->lo = 0x80;
    d->hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        d->need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        d->need = 3;
        if (c == 0xE0)
            d->lo = 0xA0;
        if (c == 0xED)
            d->hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        d->need = 4;
        if (c == 0xF0)
            d->lo = 0x90;
        if (c == 0xF4)
            d->hi = 0x8F;
    } else {
        return emit(d, (const unsigned char *)"\xEF\xBF\xBD", 3);
    }
    d->pend[0] = c;
    d->npend = 1;
    return 0;
}

static void
reset(struct npu_detok *d)
{
    d->npend = 0;
    d->need = 0;
    d->first_token = true;
    d->strip = (d->flags & NPU_DETOK_CONTINUATION) ? 0 : d->t->dec_strip_first;
}

struct npu_detok *
npu_detok_new(const struct npu_tokenizer *t, unsigned flags)
{
    if (!t) {
        npu_err(TOK_DOM, "npu_detok_new: NULL tokenizer");
        return NULL;
    }
    struct npu_detok *d = calloc(1, sizeof(*d));
    if (!d) {
        npu_err(TOK_DOM, "out of memory");
        return NULL;
    }
    d->t = t;
    d->flags = flags;
    reset(d);
    return d;
}

enum npu_status
npu_detok_push(struct npu_detok *d, int32_t id, const char **out, size_t *len)
{
    if (!d || !out || !len) {
        npu_err(TOK_DOM, "npu_detok_push: NULL argument");
        return NPU_ERR_INVALID;
    }
    const struct npu_tokenizer *t = d->t;
    d->nout = 0;
    if (out_add(d, "", 0))
        return NPU_ERR_NOMEM;
    *out = d->out;
    *len = 0;
    if (id < 0 || (size_t)id >= t->n_ids || !t->tok[id]) {
        npu_err(TOK_DOM, "token id %d is not in the vocabulary (size %zu)", id, t->n_ids);
        return NPU_ERR_INVALID;
    }
    if ((d->flags & NPU_DETOK_SKIP_SPECIAL) && t->is_added[id] == 2)
        return NPU_OK;
    const unsigned char *s = (const unsigned char *)t->dec[id];
    /* the Metaspace decoder drops every replacement character of the first token (as
     * `tokenizers` does; they became spaces here), unless the text continues a prompt */
    bool drop_spaces =
        d->first_token && t->dec_metaspace_first && !(d->flags & NPU_DETOK_CONTINUATION);
    for (size_t i = 0; i < t->dec_len[id]; i++)
        if (!(drop_spaces && s[i] == ' ') && feed(d, s[i]))
            return NPU_ERR_NOMEM;
    d->first_token = false;
    *out = d->out;
    *len = d->nout;
    return NPU_OK;
}

enum npu_status
npu_detok_flush(struct npu_detok *d, const char **out, size_t *len)
{
    if (!d || !out || !len) {
        npu_err(TOK_DOM, "npu_detok_flush: NULL argument");
        return NPU_ERR_INVALID;
    }
    d->nout = 0;
    if (out_add(d, "", 0) || (d->npend && replacement(d)))
        return NPU_ERR_NOMEM;
    *out = d->out;
    *len = d->nout;
    reset(d);
    return NPU_OK;
}

void
npu_detok_free(struct npu_detok *d)
{
    if (!d)
        return;
    free(d->out);
    free(d);
}

enum npu_status
npu_tokenizer_decode(const struct npu_tokenizer *t, const int32_t *ids, size_t n, unsigned flags,
                     char **text, size_t *len)
{
    if (!t || (!ids && n) || !text) {
        npu_err(TOK_DOM, "npu_tokenizer_decode: NULL argument");
        return NPU_ERR_INVALID;
    }
    *text = NULL;
    struct npu_detok *d = npu_detok_new(t, flags);
    if (!d)
        return NPU_ERR_NOMEM;
    char *acc = NULL;
    size_t nacc = 0;
    enum npu_status st = NPU_OK;
    for (size_t i = 0; i <= n && st == NPU_OK; i++) {
        const char *s;
        size_t l;
        st = i < n ? npu_detok_push(d, ids[i], &s, &l) : npu_detok_flush(d, &s, &l);
        if (st)
            break;
        char *na = realloc(acc, nacc + l + 1);
        if (!na) {
            st = NPU_ERR_NOMEM;
            break;
        }
        acc = na;
        memcpy(acc + nacc, s, l);
        nacc += l;
        acc[nacc] = '\0';
    }
    npu_detok_free(d);
    if (st) {
        free(acc);
        return st;
    }
    if (!acc && !(acc = calloc(1, 1)))
        return NPU_ERR_NOMEM;
    *text = acc;
    if (len)
        *len = nacc;
    return NPU_OK;
}
