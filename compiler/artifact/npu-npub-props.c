/* SPDX-License-Identifier: MIT */
/*
 * npu-npub-props.c: model metadata (ONNX metadata_props) for artifacts and
 * the model API: the bounds every list must keep (shared by the writer, the
 * loader and the ONNX reader, so a list read from a model can always be
 * written and loaded again), and the reader of an ONNX file's metadata_props.
 *
 * The reader walks only the top level of the ModelProto: each field is a
 * protobuf key (varint: field number << 3 | wire type) and its payload, and
 * every field except 14 (metadata_props, a StringStringEntryProto with key =
 * 1 and value = 2, both strings) is skipped by its length. The graph (field
 * 7), which holds the weights, is never parsed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-pbscan.h"
#include "npu/npu-npub.h"

#define DOM "npub"

bool
npu_npub_props_check(const struct npu_model_prop *v, uint32_t n, char *err, size_t err_len)
{
    char local[8];
    if (!err || !err_len) {
        err = local;
        err_len = sizeof(local);
    }
    if (n && !v) {
        snprintf(err, err_len, "%u metadata entries without an array", n);
        return false;
    }
    if (n > NPU_NPUB_MAX_PROPS) {
        snprintf(err, err_len, "%u metadata entries (at most %u)", n, NPU_NPUB_MAX_PROPS);
        return false;
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!v[i].key || !v[i].value) {
            snprintf(err, err_len, "metadata entry %u: no %s", i, v[i].key ? "value" : "key");
            return false;
        }
        size_t kl = strlen(v[i].key), vl = strlen(v[i].value);
        if (!kl || kl > NPU_NPUB_MAX_PROP_KEY) {
            snprintf(err, err_len, "metadata entry %u: key of %zu bytes (1 to %u)", i, kl,
                     NPU_NPUB_MAX_PROP_KEY);
            return false;
        }
        if (vl > NPU_NPUB_MAX_PROP_VALUE) {
            snprintf(err, err_len, "metadata entry %u '%s': value of %zu bytes (at most %u)", i,
                     v[i].key, vl, NPU_NPUB_MAX_PROP_VALUE);
            return false;
        }
        total += kl + vl;
        if (total > NPU_NPUB_MAX_PROPS_BYTES) {
            snprintf(err, err_len, "metadata entries 0..%u hold over %u bytes", i,
                     NPU_NPUB_MAX_PROPS_BYTES);
            return false;
        }
        /* n <= 256: quadratic is at most 32640 comparisons */
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(v[j].key, v[i].key)) {
                snprintf(err, err_len, "metadata entries %u and %u have the same key '%s'", j, i,
                         v[i].key);
                return false;
            }
    }
    return true;
}

/* ---- ONNX metadata_props ----------------------------------------------------------- */

struct raw {
    const uint8_t *k, *v;
    size_t kl, vl;
};

/* Whether a raw entry keeps the bounds; warns (naming the key) when not. */
static bool
raw_ok(const struct raw *r, const struct raw *kept, uint32_t nkept, uint64_t total)
{
    int shown = (int)NPU_MIN(r->kl, 64);
    if (!r->kl) {
        npu_warn(DOM, "model metadata: an entry with an empty key left out");
        return false;
    }
    if (memchr(r->k, 0, r->kl) || memchr(r->v, 0, r->vl)) {
        npu_warn(DOM, "model metadata '%.*s': a NUL byte in the key or value; left out", shown,
                 (const char *)r->k);
        return false;
    }
    if (r->kl > NPU_NPUB_MAX_PROP_KEY || r->vl > NPU_NPUB_MAX_PROP_VALUE) {
        npu_warn(DOM,
                 "model metadata '%.*s%s': %zu-byte key, %zu-byte value (at most %u and "
                 "%u); left out",
                 shown, (const char *)r->k, r->kl > 64 ? "..." : "", r->kl, r->vl,
                 NPU_NPUB_MAX_PROP_KEY, NPU_NPUB_MAX_PROP_VALUE);
        return false;
    }
    if (total + r->kl + r->vl > NPU_NPUB_MAX_PROPS_BYTES) {
        npu_warn(DOM, "model metadata '%.*s': over %u bytes of metadata in all; left out", shown,
                 (const char *)r->k, NPU_NPUB_MAX_PROPS_BYTES);
        return false;
    }
    for (uint32_t j = 0; j < nkept; j++)
        if (kept[j].kl == r->kl && !memcmp(kept[j].k, r->k, r->kl)) {
            npu_warn(DOM, "model metadata '%.*s': key repeated; the first value is kept", shown,
                     (const char *)r->k);
            return false;
        }
    if (nkept == NPU_NPUB_MAX_PROPS) {
        npu_warn(DOM, "model metadata '%.*s': more than %u entries; left out", shown,
                 (const char *)r->k, NPU_NPUB_MAX_PROPS);
        return false;
    }
    return true;
}

enum npu_status
npu_npub_props_from_onnx(const void *data, size_t len, struct npu_model_prop **out, uint32_t *n)
{
    static const uint8_t empty;
    struct raw *kept = NULL;
    uint32_t nkept = 0, cap = 0;
    uint64_t total = 0;
    struct npu_pb m = {data, (const uint8_t *)data + len}, e, sub;
    uint32_t f;
    bool bad;
    *out = NULL;
    *n = 0;
    if (!data)
        m.p = m.end = &empty;
    while (npu_pb_next(&m, &f, &e, &bad)) {
        if (f != 14 || !e.p) /* ModelProto.metadata_props */
            continue;
        struct raw r = {&empty, &empty, 0, 0};
        while (npu_pb_next(&e, &f, &sub, &bad)) {
            if (f == 1 && sub.p)
                r.k = sub.p, r.kl = (size_t)(sub.end - sub.p);
            else if (f == 2 && sub.p)
                r.v = sub.p, r.vl = (size_t)(sub.end - sub.p);
        }
        if (bad)
            break;
        if (!raw_ok(&r, kept, nkept, total))
            continue;
        if (nkept == cap) {
            cap = cap ? cap * 2 : 8;
            struct raw *nk = realloc(kept, sizeof(*nk) * cap);
            if (!nk) {
                free(kept);
                return NPU_ERR_NOMEM;
            }
            kept = nk;
        }
        kept[nkept++] = r;
        total += r.kl + r.vl;
    }
    if (bad) {
        npu_err(DOM, "model metadata: malformed protobuf at byte %zu (not an ONNX model)",
                (size_t)(m.p - (const uint8_t *)data));
        free(kept);
        return NPU_ERR_CORRUPT;
    }
    if (!nkept) {
        free(kept);
        return NPU_OK;
    }
    /* one block: the array, then the strings */
    size_t bytes = sizeof(struct npu_model_prop) * nkept + total + 2 * (size_t)nkept;
    struct npu_model_prop *v = malloc(bytes);
    if (!v) {
        free(kept);
        return NPU_ERR_NOMEM;
    }
    char *s = (char *)(v + nkept);
    for (uint32_t i = 0; i < nkept; i++) {
        memcpy(s, kept[i].k, kept[i].kl);
        s[kept[i].kl] = 0;
        v[i].key = s;
        s += kept[i].kl + 1;
        memcpy(s, kept[i].v, kept[i].vl);
        s[kept[i].vl] = 0;
        v[i].value = s;
        s += kept[i].vl + 1;
    }
    free(kept);
    *out = v;
    *n = nkept;
    return NPU_OK;
}

enum npu_status
npu_npub_props_from_onnx_file(const char *path, struct npu_model_prop **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        npu_err(DOM, "%s: cannot read: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return NPU_ERR_IO;
    }
    size_t len = (size_t)sb.st_size;
    void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (map == MAP_FAILED) {
        npu_err(DOM, "%s: cannot map: %s", path, strerror(errno));
        return NPU_ERR_IO;
    }
    enum npu_status st = npu_npub_props_from_onnx(map, len, out, n);
    if (map)
        munmap(map, len);
    return st;
}
