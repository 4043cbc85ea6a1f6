/* SPDX-License-Identifier: MIT */
/*
 * npub-rehash.h: recomputes the checksums of a (possibly damaged) .npub image
 * in place, so that tests and the fuzz target can reach the loader's deeper
 * checks: a random edit of a record would otherwise always be caught by the
 * section hash first. Every read is bounds-checked (the input is arbitrary).
 * Layout: compiler/artifact/npub-format.h.
 */
#ifndef NPUB_REHASH_H
#define NPUB_REHASH_H

#include <stddef.h>
#include <stdint.h>

#include "npu-hash.h"
#include "npub-format.h"

/* fix_size: also set the header's file size to len. */
static inline void
npub_rehash(uint8_t *b, size_t len, int fix_size)
{
    if (len < NPUB_HEADER_BYTES)
        return;
    if (fix_size)
        put64(b + H_FILE_SIZE, len);
    uint32_t ns = get32(b + H_N_SECTIONS);
    uint64_t toff = get64(b + H_TABLE_OFFSET);
    if (ns <= NPUB_MAX_SECTIONS && toff <= len &&
        ns * (uint64_t)NPUB_SECTION_ENTRY_BYTES <= len - toff) {
        for (uint32_t i = 0; i < ns; i++) {
            uint8_t *e = b + toff + (size_t)i * NPUB_SECTION_ENTRY_BYTES;
            uint64_t off = get64(e + S_OFFSET), size = get64(e + S_SIZE);
            if (off <= len && size <= len - off)
                put64(e + S_HASH, npu_xxh64(b + off, (size_t)size, 0));
        }
        put64(b + H_TABLE_HASH, npu_xxh64(b + toff, (size_t)ns * NPUB_SECTION_ENTRY_BYTES, 0));
    }
    put64(b + H_BODY_HASH, npu_xxh64(b + NPUB_HEADER_BYTES, len - NPUB_HEADER_BYTES, 0));
    put64(b + H_HEADER_HASH, npu_xxh64(b, H_HEADER_HASH, 0));
}

/* Offset of section `kind`'s bytes, or 0 if absent / out of range. */
static inline uint64_t
npub_section(const uint8_t *b, size_t len, uint32_t kind, uint64_t *size)
{
    if (len < NPUB_HEADER_BYTES)
        return 0;
    uint32_t ns = get32(b + H_N_SECTIONS);
    uint64_t toff = get64(b + H_TABLE_OFFSET);
    for (uint32_t i = 0; i < ns && i < NPUB_MAX_SECTIONS; i++) {
        const uint8_t *e = b + toff + (size_t)i * NPUB_SECTION_ENTRY_BYTES;
        if (toff + (uint64_t)(i + 1) * NPUB_SECTION_ENTRY_BYTES > len)
            return 0;
        if (get32(e + S_KIND) == kind) {
            if (size)
                *size = get64(e + S_SIZE);
            return get64(e + S_OFFSET);
        }
    }
    return 0;
}

#endif /* NPUB_REHASH_H */
