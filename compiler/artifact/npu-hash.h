/* SPDX-License-Identifier: MIT */
/*
 * npu-hash.h: XXH64 (Yann Collet's 64-bit xxHash, as its specification
 * describes it), the checksum of .npub artifacts and the content hash of
 * compile-cache keys. Chosen over CRC32 for speed: a SigLIP-B/16 artifact
 * carries ~190 MB of weights, hashed at load. Values match the reference
 * xxhsum tool (tests/artifact/test-npub.c checks known vectors).
 */
#ifndef NPU_HASH_H
#define NPU_HASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint64_t npu_xxh64(const void *data, size_t len, uint64_t seed);

/* Streaming form: init, update any number of times, digest (the state may be
 * updated further after a digest). */
struct npu_xxh64_state {
    uint64_t v[4];
    uint64_t total;
    uint8_t buf[32];
    uint32_t nbuf;
    uint64_t seed;
};
void npu_xxh64_init(struct npu_xxh64_state *s, uint64_t seed);
void npu_xxh64_update(struct npu_xxh64_state *s, const void *data, size_t len);
uint64_t npu_xxh64_digest(const struct npu_xxh64_state *s);

#ifdef __cplusplus
}
#endif

#endif /* NPU_HASH_H */
