/* SPDX-License-Identifier: MIT */
/*
 * npu-hash.c: XXH64, written from its specification (xxhash_spec.md):
 * four accumulators over 32-byte stripes, then the tail in 8-, 4- and 1-byte
 * steps and a final avalanche. Inputs are read little-endian byte by byte
 * (the compiler turns that into plain loads), so the value does not depend
 * on the host's byte order or alignment.
 */
#include "npu-hash.h"

#include <string.h>

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static inline uint64_t
rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t
rd64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

static inline uint32_t
rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t
round1(uint64_t acc, uint64_t in)
{
    acc += in * P2;
    acc = rotl(acc, 31);
    return acc * P1;
}

static inline uint64_t
merge(uint64_t acc, uint64_t v)
{
    acc ^= round1(0, v);
    return acc * P1 + P4;
}

static uint64_t
finish(uint64_t h, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        h ^= round1(0, rd64(p));
        h = rotl(h, 27) * P1 + P4;
        p += 8;
        len -= 8;
    }
    if (len >= 4) {
        h ^= (uint64_t)rd32(p) * P1;
        h = rotl(h, 23) * P2 + P3;
        p += 4;
        len -= 4;
    }
    while (len--) {
        h ^= (uint64_t)(*p++) * P5;
        h = rotl(h, 11) * P1;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

static void
stripes(uint64_t v[4], const uint8_t *p, size_t n)
{
    uint64_t a = v[0], b = v[1], c = v[2], d = v[3];
    for (size_t i = 0; i < n; i++, p += 32) {
        a = round1(a, rd64(p));
        b = round1(b, rd64(p + 8));
        c = round1(c, rd64(p + 16));
        d = round1(d, rd64(p + 24));
    }
    v[0] = a, v[1] = b, v[2] = c, v[3] = d;
}

static uint64_t
converge(const uint64_t v[4])
{
    uint64_t h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
    for (int i = 0; i < 4; i++)
        h = merge(h, v[i]);
    return h;
}

void
npu_xxh64_init(struct npu_xxh64_state *s, uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    s->seed = seed;
    s->v[0] = seed + P1 + P2;
    s->v[1] = seed + P2;
    s->v[2] = seed;
    s->v[3] = seed - P1;
}

void
npu_xxh64_update(struct npu_xxh64_state *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->total += len;
    if (s->nbuf) {
        size_t take = 32 - s->nbuf < len ? 32 - s->nbuf : len;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += (uint32_t)take;
        p += take;
        len -= take;
        if (s->nbuf < 32)
            return;
        stripes(s->v, s->buf, 1);
        s->nbuf = 0;
    }
    stripes(s->v, p, len / 32);
    p += len / 32 * 32;
    len %= 32;
    memcpy(s->buf, p, len);
    s->nbuf = (uint32_t)len;
}

uint64_t
npu_xxh64_digest(const struct npu_xxh64_state *s)
{
    uint64_t h = s->total >= 32 ? converge(s->v) : s->seed + P5;
    h += s->total;
    return finish(h, s->buf, s->nbuf);
}

uint64_t
npu_xxh64(const void *data, size_t len, uint64_t seed)
{
    struct npu_xxh64_state s;
    npu_xxh64_init(&s, seed);
    npu_xxh64_update(&s, data, len);
    return npu_xxh64_digest(&s);
}
