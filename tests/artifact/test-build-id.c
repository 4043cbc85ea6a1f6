/* SPDX-License-Identifier: MIT */
/*
 * test-build-id.c: npu_compiler_build_id (compiler/artifact/npu-build-id.c), the compiler
 * identity in compile-cache keys. The library reads the GNU build ID from the loaded
 * object's PT_NOTE segments; this test reads the same object's file on disk (found with
 * dladdr) through its section headers instead, a second path to the same note, and checks
 * that both give the same FNV-1a of the ID's bytes. A toolchain that writes no build ID must
 * give 0 on both sides. Also: the value is the same on every call.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-test.h"
#include "npu/npu-npub.h"

static unsigned char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *b = NULL;
    if (!fseek(f, 0, SEEK_END)) {
        long n = ftell(f);
        if (n > 0 && !fseek(f, 0, SEEK_SET) && (b = malloc((size_t)n)) &&
            fread(b, 1, (size_t)n, f) != (size_t)n) {
            free(b);
            b = NULL;
        }
        *len = n > 0 ? (size_t)n : 0;
    }
    fclose(f);
    return b;
}

/* FNV-1a of the descriptor of the first NT_GNU_BUILD_ID note in a SHT_NOTE section; 0 if
 * none. The library folds a zero hash to 1, and so does this. */
static uint64_t
file_build_id(const unsigned char *b, size_t len)
{
    ElfW(Ehdr) eh;
    if (len < sizeof(eh))
        return 0;
    memcpy(&eh, b, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_shentsize != sizeof(ElfW(Shdr)))
        return 0;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        ElfW(Shdr) sh;
        size_t at = eh.e_shoff + (size_t)i * sizeof(sh);
        if (at > len || len - at < sizeof(sh))
            return 0;
        memcpy(&sh, b + at, sizeof(sh));
        if (sh.sh_type != SHT_NOTE || sh.sh_offset > len || len - sh.sh_offset < sh.sh_size)
            continue;
        const unsigned char *p = b + sh.sh_offset;
        size_t off = 0;
        while (sh.sh_size - off >= sizeof(ElfW(Nhdr))) {
            ElfW(Nhdr) nh;
            memcpy(&nh, p + off, sizeof(nh));
            off += sizeof(nh);
            size_t name = (nh.n_namesz + 3u) & ~3u, desc = (nh.n_descsz + 3u) & ~3u;
            if (name + desc > sh.sh_size - off)
                break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(p + off, "GNU", 4)) {
                uint64_t h = 0xcbf29ce484222325ull;
                for (size_t k = 0; k < nh.n_descsz; k++)
                    h = (h ^ p[off + name + k]) * 0x100000001b3ull;
                return h ? h : 1;
            }
            off += name + desc;
        }
    }
    return 0;
}

int
main(void)
{
    uint64_t id = npu_compiler_build_id();
    CHECK(id == npu_compiler_build_id());

    Dl_info di;
    CHECK(dladdr((void *)&npu_compiler_build_id, &di) && di.dli_fname);
    const char *path = di.dli_fname && di.dli_fname[0] ? di.dli_fname : "/proc/self/exe";
    size_t len = 0;
    unsigned char *file = slurp(path, &len);
    CHECK(file != NULL);
    if (file) {
        uint64_t want = file_build_id(file, len);
        printf("build id of %s: %016llx (file: %016llx)\n", path, (unsigned long long)id,
               (unsigned long long)want);
        CHECK_EQ_HEX(want, id);
        free(file);
    }
    return npu_test_done("artifact-build-id");
}
