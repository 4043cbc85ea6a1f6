// SPDX-License-Identifier: MIT
/*
 * fuzz-llm.c: libFuzzer target for the LLM checkpoint loader
 * (compiler/llm/llm-checkpoint.c, llm-weights.c): one input is unpacked into
 * the files of a checkpoint folder under a temporary directory, which is then
 * opened (config.json, the safetensors headers and data bounds, the shard
 * index, the hub cache's refs/main -> snapshots/ -> blobs/ links), checked
 * against the architecture and, when its tensors are small, converted to
 * fp32. Nothing is compiled. Replayed over tests/fuzz/corpus-llm by the normal
 * suite (fuzz-llm-corpus); tests/fuzz/gen-llm-seeds.py writes the seeds.
 *
 * Input: records separated by the 3 bytes "@@@". The first record is options:
 * 'H' makes a hub cache (models--t--m/refs/main holds the rest of the record
 * after 'H', up to a newline, as the revision; the files go to blobs/ and the
 * snapshot links to them). Every other record starts with a byte naming its
 * file; the rest is the content:
 *   c config.json    i model.safetensors.index.json    g generation_config.json
 *   s model.safetensors, a/b model-0000{1,2}-of-00002.safetensors (as given)
 *   S, A, B the same, the content being the JSON header, one NUL, then the
 *           data: the 8-byte header length is written in front
 *   l a symbolic link: "NAME\nTARGET" (relative, at most two ".." deep)
 *   d an empty folder NAME    p a FIFO named NAME (nobody writes to it)
 *   f a file NAME\nCONTENT (any name of the folder)
 * NAMEs are single path components made of [A-Za-z0-9._-] (others dropped).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz-target.h"
#include "llm-priv.h"

static char base[256];

static int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(p);
    else
        unlink(p);
    return 0;
}

static void
rm_tree(const char *p)
{
    nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
cleanup(void)
{
    if (base[0])
        rm_tree(base);
}

/* A new file at path: whatever was there (a link, a FIFO made by an earlier record) is
 * removed first and never followed or opened, so the fuzzer neither blocks on a FIFO nor
 * writes through a link out of its folder. */
static void
write_file(const char *path, const uint8_t *d, size_t n, bool with_len)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    if (with_len) {
        const uint8_t *z = memchr(d, 0, n);
        uint64_t hl = z ? (uint64_t)(z - d) : n;
        uint8_t le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (uint8_t)(hl >> (8 * i));
        fwrite(le, 1, 8, f);
        fwrite(d, 1, (size_t)hl, f);
        if (z)
            fwrite(z + 1, 1, n - (size_t)hl - 1, f);
    } else {
        fwrite(d, 1, n, f);
    }
    fclose(f);
}

/* a single safe path component from d[0..n) (up to a newline); *used: bytes consumed */
static void
component(const uint8_t *d, size_t n, char *out, size_t cap, size_t *used)
{
    size_t k = 0, i = 0;
    for (; i < n && d[i] != '\n'; i++)
        if (k + 1 < cap &&
            ((d[i] >= 'a' && d[i] <= 'z') || (d[i] >= 'A' && d[i] <= 'Z') ||
             (d[i] >= '0' && d[i] <= '9') || d[i] == '.' || d[i] == '_' || d[i] == '-'))
            out[k++] = (char)d[i];
    out[k] = 0;
    if (!strcmp(out, ".") || !strcmp(out, "..") || !k)
        snprintf(out, cap, "x");
    *used = i < n ? i + 1 : n;
}

static const char *
file_name(uint8_t sel)
{
    switch (sel) {
    case 'c': return "config.json";
    case 'i': return "model.safetensors.index.json";
    case 'g': return "generation_config.json";
    case 's':
    case 'S': return "model.safetensors";
    case 'a':
    case 'A': return "model-00001-of-00002.safetensors";
    case 'b':
    case 'B': return "model-00002-of-00002.safetensors";
    default: return NULL;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet_log();
    if (!base[0]) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp)
            tmp = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
        snprintf(base, sizeof(base), "%s/fuzz-llm-XXXXXX", tmp);
        if (!mkdtemp(base))
            abort();
        atexit(cleanup);
    }
    char root[300], dir[700], blobs[400], p[1200], q[1200];
    snprintf(root, sizeof(root), "%s/models--t--m", base);
    rm_tree(root);
    mkdir(root, 0755);

    /* records */
    const uint8_t *rec[64];
    size_t len[64];
    int nrec = 0;
    size_t s = 0;
    for (size_t i = 0; nrec < 64; i++) {
        if (i + 3 <= size && !memcmp(data + i, "@@@", 3)) {
            rec[nrec] = data + s;
            len[nrec++] = i - s;
            s = i + 3;
            i += 2;
        } else if (i >= size) {
            rec[nrec] = data + s;
            len[nrec++] = size - s;
            break;
        }
    }
    bool hub = nrec && len[0] && rec[0][0] == 'H';
    snprintf(dir, sizeof(dir), "%s", root);
    snprintf(blobs, sizeof(blobs), "%s/blobs", root);
    if (hub) {
        char ref[128];
        size_t used;
        snprintf(p, sizeof(p), "%s/refs", root);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/refs/main", root);
        /* the revision as given (it may name anything), the snapshot under its safe form */
        write_file(p, rec[0] + 1, len[0] - 1, false);
        component(rec[0] + 1, len[0] - 1, ref, sizeof(ref), &used);
        snprintf(p, sizeof(p), "%s/snapshots", root);
        mkdir(p, 0755);
        snprintf(dir, sizeof(dir), "%s/snapshots/%s", root, ref);
        mkdir(dir, 0755);
        mkdir(blobs, 0755);
    }
    for (int r = 1; r < nrec; r++) {
        if (!len[r])
            continue;
        uint8_t sel = rec[r][0];
        const uint8_t *d = rec[r] + 1;
        size_t n = len[r] - 1, used;
        char name[128], target[256];
        const char *fn = file_name(sel);
        if (fn || sel == 'f') {
            if (sel == 'f') {
                component(d, n, name, sizeof(name), &used);
                d += used;
                n -= used;
                fn = name;
            }
            bool with_len = sel == 'S' || sel == 'A' || sel == 'B';
            if (hub) {
                /* the content in blobs/<record>, linked from the snapshot as the hub does */
                snprintf(q, sizeof(q), "%s/%d", blobs, r);
                write_file(q, d, n, with_len);
                snprintf(p, sizeof(p), "%s/%s", dir, fn);
                snprintf(q, sizeof(q), "../../blobs/%d", r);
                unlink(p);
                if (symlink(q, p)) {
                }
            } else {
                snprintf(p, sizeof(p), "%s/%s", dir, fn);
                write_file(p, d, n, with_len);
            }
        } else if (sel == 'l') {
            component(d, n, name, sizeof(name), &used);
            size_t t = n - used < sizeof(target) - 1 ? n - used : sizeof(target) - 1;
            memcpy(target, d + used, t);
            target[t] = 0;
            target[strcspn(target, "\n")] = 0;
            /* at most two levels up: the target stays inside the fuzzer's own folder */
            int up = 0;
            for (const char *u = target; (u = strstr(u, "..")); u += 2)
                up++;
            if (target[0] == '/' || up > 2)
                continue;
            snprintf(p, sizeof(p), "%s/%s", dir, name);
            unlink(p);
            if (symlink(target, p)) {
            }
        } else if (sel == 'p') {
            component(d, n, name, sizeof(name), &used);
            snprintf(p, sizeof(p), "%s/%s", dir, name);
            mkfifo(p, 0644);
        } else if (sel == 'd') {
            component(d, n, name, sizeof(name), &used);
            snprintf(p, sizeof(p), "%s/%s", dir, name);
            mkdir(p, 0755);
        }
    }

    struct llm_checkpoint ck;
    if (llm_checkpoint_open(root, &ck) == NPU_OK) {
        if (llm_weights_check(&ck) == NPU_OK && ck.bytes <= (8u << 20)) {
            struct llm_weights w;
            if (llm_weights_load(&ck, &w) == NPU_OK)
                llm_weights_free(&ck.cfg, &w);
        }
        llm_checkpoint_close(&ck);
    }
    rm_tree(root);
    return 0;
}
