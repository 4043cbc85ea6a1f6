/* SPDX-License-Identifier: MIT */
/*
 * npu-test-pb.h: protobuf wire format written byte by byte, for the importer tests that
 * need ONNX files with an exact layout (payload offsets, hostile encodings): a growing
 * buffer and one writer per field kind.
 */
#ifndef NPU_TEST_PB_H
#define NPU_TEST_PB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct buf {
    uint8_t *p;
    size_t n, cap;
};

static inline void
put(struct buf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static inline void
varint(struct buf *b, uint64_t v)
{
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        put(b, &c, 1);
    } while (v);
}

static inline void
tag(struct buf *b, int field, int wire)
{
    varint(b, (uint64_t)field << 3 | (unsigned)wire);
}

static inline void
bytes_field(struct buf *b, int field, const void *p, size_t n)
{
    tag(b, field, 2);
    varint(b, n);
    put(b, p, n);
}

static inline void
str_field(struct buf *b, int field, const char *s)
{
    bytes_field(b, field, s, strlen(s));
}

static inline void
msg_field(struct buf *b, int field, struct buf *m)
{
    bytes_field(b, field, m->p, m->n);
    free(m->p);
    *m = (struct buf){0};
}

static inline void
int_field(struct buf *b, int field, uint64_t v)
{
    tag(b, field, 0);
    varint(b, v);
}

#endif /* NPU_TEST_PB_H */
