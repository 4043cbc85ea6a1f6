/* SPDX-License-Identifier: MIT */
/*
 * npu-build-id.c: the identity of the compiler binary that runs, for compile-cache keys.
 * The project version alone does not change when the lowering does (every build between
 * two releases says the same version), so a cache keyed by it could hand a program
 * compiled by an older build to a newer one. The linker's GNU build ID (a hash of the
 * linked code, NT_GNU_BUILD_ID in a PT_NOTE segment) changes whenever the code does; it is
 * read once from the loaded object (shared library or executable) that holds this
 * function, found with dl_iterate_phdr. Toolchains that write no build ID give 0 and the
 * keys fall back to the version alone, as before.
 */
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "npu/npu-npub.h"

struct find {
    uintptr_t addr; /* an address inside the object we look for */
    uint64_t id;
};

/* FNV-1a of the build ID's bytes: a fixed-size key part, whatever the ID's length */
static uint64_t
fold(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h ? h : 1;
}

/* The GNU build ID note of one PT_NOTE segment, 0 when it has none. Notes are headers of
 * three 32-bit words, then the name and the descriptor, each padded to 4 bytes; the
 * segment's bounds are the loader's, so every read is checked against them. */
static uint64_t
note_id(const unsigned char *p, size_t len)
{
    size_t off = 0;
    while (len - off >= sizeof(ElfW(Nhdr))) {
        ElfW(Nhdr) nh;
        memcpy(&nh, p + off, sizeof(nh));
        off += sizeof(nh);
        size_t name = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
        size_t desc = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
        if (name > len - off || desc > len - off - name)
            return 0;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(p + off, "GNU", 4) &&
            nh.n_descsz)
            return fold(p + off + name, nh.n_descsz);
        off += name + desc;
    }
    return 0;
}

static int
visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct find *f = data;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && f->addr >= lo && f->addr - lo < ph->p_memsz;
    }
    if (!mine)
        return 0;
    for (int i = 0; i < info->dlpi_phnum && !f->id; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE)
            f->id = note_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz);
    }
    return 1; /* found the object: stop */
}

static uint64_t build_id;
static pthread_once_t build_id_once = PTHREAD_ONCE_INIT;

static void
read_build_id(void)
{
    struct find f = {.addr = (uintptr_t)&npu_compiler_build_id};
    dl_iterate_phdr(visit, &f);
    build_id = f.id;
}

uint64_t
npu_compiler_build_id(void)
{
    pthread_once(&build_id_once, read_build_id);
    return build_id;
}
