/* SPDX-License-Identifier: MIT */
/*
 * npu-onnx.c: ONNX protobuf -> IR. The protobuf is decoded by protobuf-c code
 * generated at build time from the system's onnx.proto; everything after that
 * treats the decoded message as untrusted: names are checked for duplicates
 * and dangling references, nodes are put in topological order (cycles are
 * refused), tensor payloads are checked against their shapes, external data
 * must stay inside the model's folder, and every op is upgraded to its newest
 * ONNX form (npu-onnx-upgrade.c) and type-checked by inference as it is added.
 */
#include "npu/npu-onnx.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx-priv.h"

#define DOM "onnx"
/* A single tensor above this is not a model we could run; refuse it before
 * allocating (the protobuf may claim anything). */
#define MAX_TENSOR_BYTES ((int64_t)1 << 34)
/* An unaligned fp32 payload at least this big is borrowed from the mapped file in place;
 * a smaller one is copied (npu_onnx_load). */
#define BORROW_UNALIGNED_BYTES 1024

/* ---- tensors -------------------------------------------------------------------- */

static const char *
onnx_type_name(int32_t code)
{
    static const char *const names[] = {
        "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
        "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
        "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
        "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4"};
    return code >= 0 && (size_t)code < NPU_ARRAY_SIZE(names) ? names[code] : "unknown";
}

static bool
parse_u64_str(const char *s, uint64_t *v)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    char *e;
    errno = 0;
    unsigned long long x = strtoull(s, &e, 10);
    if (*e || errno)
        return false;
    *v = x;
    return true;
}

/* The Hugging Face hub cache keeps a download as
 *   models--org--name/snapshots/<revision>/<files>  (symbolic links)
 *   models--org--name/blobs/<hash>                  (their targets)
 * so a model's external data resolves outside the model's folder. real is
 * accepted when base (the model's real folder) lies in such a snapshot tree
 * and real is a file directly in the blobs folder of the same tree. */
static bool
in_same_hub_tree(const char *base, const char *real)
{
    /* find ".../snapshots/<revision>" in base: the last "/snapshots/" */
    const char *snap = NULL;
    for (const char *p = strstr(base, "/snapshots/"); p; p = strstr(p + 1, "/snapshots/"))
        snap = p;
    if (!snap || snap == base || !snap[11] || snap[11] == '/')
        return false;
    size_t root = (size_t)(snap - base); /* ".../models--org--name" */
    if (strncmp(real, base, root) || strncmp(real + root, "/blobs/", 7))
        return false;
    const char *blob = real + root + 7;
    return *blob && !strchr(blob, '/');
}

/* Resolves an external-data location inside base_dir: relative, no "..", and
 * (after symlinks) still inside the folder, or a blob of the same Hugging Face
 * hub snapshot tree (in_same_hub_tree). Returns a malloc'd real path. */
static char *
resolve_external(const char *base_dir, const char *loc, const char *what)
{
    if (!base_dir) {
        npu_err(DOM, "%s: has external data, but the model was not loaded from a file", what);
        return NULL;
    }
    if (!loc || !*loc || loc[0] == '/') {
        npu_err(DOM, "%s: external data location '%s' must be a relative path", what,
                loc ? loc : "");
        return NULL;
    }
    for (const char *p = loc; *p;) {
        const char *q = strchr(p, '/');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            npu_err(DOM, "%s: external data location '%s' leaves the model's folder", what, loc);
            return NULL;
        }
        p += n + (q ? 1 : 0);
    }
    char *base = realpath(base_dir, NULL);
    if (!base) {
        npu_err(DOM, "%s: model folder '%s': %s", what, base_dir, strerror(errno));
        return NULL;
    }
    size_t bl = strlen(base), ll = strlen(loc);
    char *joined = malloc(bl + ll + 2);
    char *real = NULL;
    if (joined) {
        snprintf(joined, bl + ll + 2, "%s/%s", base, loc);
        real = realpath(joined, NULL);
        if (!real)
            npu_err(DOM, "%s: external data file '%s': %s", what, loc, strerror(errno));
        else if ((strncmp(real, base, bl) || (real[bl] != '/' && strcmp(base, "/"))) &&
                 !in_same_hub_tree(base, real)) {
            npu_err(DOM, "%s: external data file '%s' resolves outside the model's folder", what,
                    loc);
            free(real);
            real = NULL;
        }
    }
    free(joined);
    free(base);
    return real;
}

static enum npu_status
read_external(const Onnx__TensorProto *tp, const char *base_dir, const char *what, void *dst,
              int64_t nbytes)
{
    const char *loc = NULL;
    uint64_t off = 0, len = (uint64_t)nbytes;
    bool have_len = false;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e || !e->key)
            continue;
        if (!strcmp(e->key, "location")) {
            loc = e->value;
        } else if (!strcmp(e->key, "offset")) {
            if (!parse_u64_str(e->value, &off)) {
                npu_err(DOM, "%s: bad external data offset '%s'", what, e->value ? e->value : "");
                return NPU_ERR_CORRUPT;
            }
        } else if (!strcmp(e->key, "length")) {
            if (!parse_u64_str(e->value, &len)) {
                npu_err(DOM, "%s: bad external data length '%s'", what, e->value ? e->value : "");
                return NPU_ERR_CORRUPT;
            }
            have_len = true;
        }
    }
    if (have_len && len != (uint64_t)nbytes) {
        npu_err(DOM, "%s: external data length %llu, but the shape needs %lld bytes", what,
                (unsigned long long)len, (long long)nbytes);
        return NPU_ERR_CORRUPT;
    }
    char *path = resolve_external(base_dir, loc, what);
    if (!path)
        return NPU_ERR_INVALID;
    enum npu_status st = NPU_ERR_IO;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb)) {
        npu_err(DOM, "%s: cannot open external data '%s': %s", what, loc, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        npu_err(DOM, "%s: external data '%s' is not a regular file", what, loc);
        st = NPU_ERR_INVALID;
        goto out;
    }
    if (off > (uint64_t)sb.st_size || len > (uint64_t)sb.st_size - off) {
        npu_err(DOM, "%s: external data [%llu, +%llu) lies beyond the end of '%s' (%lld bytes)",
                what, (unsigned long long)off, (unsigned long long)len, loc, (long long)sb.st_size);
        st = NPU_ERR_CORRUPT;
        goto out;
    }
    for (uint64_t done = 0; done < len;) {
        ssize_t r = pread(fd, (char *)dst + done, (size_t)NPU_MIN(len - done, (uint64_t)1 << 30),
                          (off_t)(off + done));
        if (r <= 0) {
            npu_err(DOM, "%s: reading external data '%s' failed", what, loc);
            goto out;
        }
        done += (uint64_t)r;
    }
    st = NPU_OK;
out:
    if (fd >= 0)
        close(fd);
    free(path);
    return st;
}

/* INT4 / UINT4 (opset 21, IR 10): two elements a byte, the first in the low
 * nibble, in raw_data (ceil(n/2) bytes), external data (the same bytes) or
 * int32_data (one packed byte per entry). The IR has no 4-bit type: the
 * values are widened to int8 (sign-extended) / uint8, one a byte, which every
 * consumer (DequantizeLinear, Cast, MatMulInteger) computes with exactly. */
static enum npu_status
int4_to_npu(const Onnx__TensorProto *tp, const char *base_dir, const char *what,
            struct npu_graph *g, struct npu_tensor *out)
{
    bool sgn = tp->data_type == ONNX_INT4;
    if (tp->n_dims > NPU_MAX_DIMS) {
        npu_err(DOM, "%s: rank %zu exceeds the supported %d", what, tp->n_dims, NPU_MAX_DIMS);
        return NPU_ERR_UNSUPPORTED;
    }
    if (tp->segment) {
        npu_err(DOM, "%s: segmented tensors are not supported", what);
        return NPU_ERR_UNSUPPORTED;
    }
    out->dtype = sgn ? NPU_DTYPE_INT8 : NPU_DTYPE_UINT8;
    out->ndim = (int)tp->n_dims;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0) {
            npu_err(DOM, "%s: negative dim %lld", what, (long long)tp->dims[i]);
            return NPU_ERR_CORRUPT;
        }
        out->dims[i] = tp->dims[i];
    }
    int64_t n = npu_tensor_numel(out);
    if (n < 0 || n > MAX_TENSOR_BYTES) {
        npu_err(DOM, "%s: absurd size (shape overflows or exceeds %lld elements)", what,
                (long long)MAX_TENSOR_BYTES);
        return NPU_ERR_CORRUPT;
    }
    int64_t packed = (n + 1) / 2;
    bool external =
        tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (external           ? (tp->has_raw_data || tp->n_int32_data)
        : tp->has_raw_data ? tp->raw_data.len != (size_t)packed
                           : tp->n_int32_data != (size_t)packed) {
        npu_err(DOM, "%s: %s 4-bit data has %zu bytes, the shape needs %lld (two a byte)", what,
                onnx_type_name(tp->data_type),
                external           ? (size_t)0
                : tp->has_raw_data ? tp->raw_data.len
                                   : tp->n_int32_data,
                (long long)packed);
        return NPU_ERR_CORRUPT;
    }
    unsigned char *src = malloc((size_t)packed + 1);
    void *d = g ? npu_graph_alloc(g, (size_t)(n ? n : 1)) : calloc(1, (size_t)(n ? n : 1));
    enum npu_status st = NPU_OK;
    if (!src || !d) {
        npu_err(DOM, "%s: out of memory for %lld elements", what, (long long)n);
        st = NPU_ERR_NOMEM;
        goto out;
    }
    if (external)
        st = read_external(tp, base_dir, what, src, packed);
    else if (tp->has_raw_data)
        memcpy(src, tp->raw_data.data, (size_t)packed);
    else
        for (int64_t i = 0; i < packed; i++)
            src[i] = (unsigned char)tp->int32_data[i];
    for (int64_t i = 0; !st && i < n; i++) {
        unsigned v = (src[i / 2] >> (4 * (i & 1))) & 15u;
        if (sgn)
            ((int8_t *)d)[i] = (int8_t)(v >= 8 ? (int)v - 16 : (int)v);
        else
            ((uint8_t *)d)[i] = (uint8_t)v;
    }
out:
    free(src);
    if (st && !g)
        free(d);
    out->data = st ? NULL : d;
    return st;
}

enum npu_status
onnx_tensor_to_npu(const Onnx__TensorProto *tp, const char *base_dir, const char *what,
                   struct npu_graph *g, struct npu_tensor *out)
{
    return onnx_tensor_to_npu_borrow(tp, base_dir, what, g, out, NULL);
}

enum npu_status
onnx_tensor_to_npu_borrow(const Onnx__TensorProto *tp, const char *base_dir, const char *what,
                          struct npu_graph *g, struct npu_tensor *out, struct onnx_borrow *borrow)
{
    memset(out, 0, sizeof(*out));
    int32_t code = tp->has_data_type ? tp->data_type : 0;
    if (code == ONNX_INT4 || code == ONNX_UINT4)
        return int4_to_npu(tp, base_dir, what, g, out);
    enum npu_dtype dt = npu_dtype_from_onnx(code);
    if (!dt) {
        npu_err(DOM, "%s: element type %s (%d) is not supported", what, onnx_type_name(code), code);
        return NPU_ERR_UNSUPPORTED;
    }
    if (tp->n_dims > NPU_MAX_DIMS) {
        npu_err(DOM, "%s: rank %zu exceeds the supported %d", what, tp->n_dims, NPU_MAX_DIMS);
        return NPU_ERR_UNSUPPORTED;
    }
    if (tp->segment) {
        npu_err(DOM, "%s: segmented tensors are not supported", what);
        return NPU_ERR_UNSUPPORTED;
    }
    out->dtype = dt;
    out->ndim = (int)tp->n_dims;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0) {
            npu_err(DOM, "%s: negative dim %lld", what, (long long)tp->dims[i]);
            return NPU_ERR_CORRUPT;
        }
        out->dims[i] = tp->dims[i];
    }
    int64_t n = npu_tensor_numel(out), nb = npu_tensor_nbytes(out);
    if (n < 0 || nb < 0 || nb > MAX_TENSOR_BYTES) {
        npu_err(DOM, "%s: absurd size (shape overflows or exceeds %lld bytes)", what,
                (long long)MAX_TENSOR_BYTES);
        return NPU_ERR_CORRUPT;
    }
    bool external =
        tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    /* Check the payload's size before allocating, so that a tiny file cannot
     * make us allocate gigabytes. */
    size_t typed = 0;
    const char *field = NULL;
    switch (dt) {
    case NPU_DTYPE_FP32:
        typed = tp->n_float_data;
        field = "float_data";
        break;
    case NPU_DTYPE_INT64:
        typed = tp->n_int64_data;
        field = "int64_data";
        break;
    case NPU_DTYPE_FP64:
        typed = tp->n_double_data;
        field = "double_data";
        break;
    case NPU_DTYPE_UINT32:
    case NPU_DTYPE_UINT64:
        typed = tp->n_uint64_data;
        field = "uint64_data";
        break;
    default:
        typed = tp->n_int32_data;
        field = "int32_data";
        break;
    }
    if (external) {
        if (tp->has_raw_data || typed) {
            npu_err(DOM, "%s: has both external and embedded data", what);
            return NPU_ERR_CORRUPT;
        }
    } else if (tp->has_raw_data) {
        if (tp->raw_data.len != (size_t)nb) {
            npu_err(DOM, "%s: raw_data has %zu bytes, the shape needs %lld", what, tp->raw_data.len,
                    (long long)nb);
            return NPU_ERR_CORRUPT;
        }
    } else if (typed != (size_t)n) {
        npu_err(DOM, "%s: %s has %zu elements, the shape needs %lld%s", what, field, typed,
                (long long)n, typed < (size_t)n ? " (data shorter than the shape)" : "");
        return NPU_ERR_CORRUPT;
    }
    /* the payload as it lies in the mapped file, when the graph may keep pointing there:
     * little-endian already (the hosts we build for), not one the loop below rewrites
     * (bools), and aligned for the element type, or fp32 of at least
     * BORROW_UNALIGNED_BYTES (protobuf does not align payloads: most of a model's weights
     * lie at offsets 1-3 mod 4). Readers of such constants load with memcpy or ask for an
     * aligned copy (npu_value_aligned_data, npu-ir.h); small ones are copied, so that the
     * scalars and short vectors many passes read stay aligned. */
    if (g && borrow && !external && tp->has_raw_data && nb && dt != NPU_DTYPE_BOOL &&
        tp->raw_data.data >= borrow->lo && tp->raw_data.data < borrow->hi &&
        (size_t)(borrow->hi - tp->raw_data.data) >= (size_t)nb &&
        ((uintptr_t)tp->raw_data.data % npu_dtype_size(dt) == 0 ||
         (dt == NPU_DTYPE_FP32 && nb >= BORROW_UNALIGNED_BYTES))) {
        if (borrow->n_spans == borrow->cap_spans) {
            size_t nc = borrow->cap_spans ? 2 * borrow->cap_spans : 64;
            struct onnx_span *ns = realloc(borrow->spans, nc * sizeof(*ns));
            if (!ns) {
                npu_err(DOM, "%s: out of memory", what);
                return NPU_ERR_NOMEM;
            }
            borrow->spans = ns;
            borrow->cap_spans = nc;
        }
        borrow->spans[borrow->n_spans++] =
            (struct onnx_span){tp->raw_data.data, tp->raw_data.data + nb};
        out->data = tp->raw_data.data;
        borrow->used = true;
        return NPU_OK;
    }
    void *d = g ? npu_graph_alloc(g, (size_t)nb) : calloc(1, nb ? (size_t)nb : 1);
    if (!d) {
        npu_err(DOM, "%s: out of memory for %lld bytes", what, (long long)nb);
        return NPU_ERR_NOMEM;
    }
    out->data = d;
    enum npu_status st = NPU_OK;
    if (external) {
        st = read_external(tp, base_dir, what, d, nb);
    } else if (tp->has_raw_data) {
        size_t done = 0;
        if (borrow && borrow->fd >= 0 && tp->raw_data.data >= borrow->lo &&
            tp->raw_data.data < borrow->hi &&
            (size_t)(borrow->hi - tp->raw_data.data) >= (size_t)nb) {
            /* the same bytes through the page cache, without mapping the file's pages */
            const off_t at = (off_t)(tp->raw_data.data - borrow->lo);
            while (done < (size_t)nb) {
                ssize_t r = pread(borrow->fd, (char *)d + done,
                                  NPU_MIN((size_t)nb - done, (size_t)1 << 30), at + (off_t)done);
                if (r <= 0)
                    break; /* the mapping has the bytes too */
                done += (size_t)r;
            }
        }
        if (nb && done < (size_t)nb)
            memcpy((char *)d + done, tp->raw_data.data + done, (size_t)nb - done);
    } else {
        for (int64_t i = 0; i < n; i++) {
            switch (dt) {
            case NPU_DTYPE_FP32: ((float *)d)[i] = tp->float_data[i]; break;
            case NPU_DTYPE_INT64: ((int64_t *)d)[i] = tp->int64_data[i]; break;
            case NPU_DTYPE_FP64: ((double *)d)[i] = tp->double_data[i]; break;
            case NPU_DTYPE_UINT32: ((uint32_t *)d)[i] = (uint32_t)tp->uint64_data[i]; break;
            case NPU_DTYPE_UINT64: ((uint64_t *)d)[i] = tp->uint64_data[i]; break;
            case NPU_DTYPE_FP16:
            case NPU_DTYPE_UINT16:
                /* float16 travels as its bit pattern in int32_data */
                ((uint16_t *)d)[i] = (uint16_t)tp->int32_data[i];
                break;
            case NPU_DTYPE_INT16: ((int16_t *)d)[i] = (int16_t)tp->int32_data[i]; break;
            case NPU_DTYPE_INT32: ((int32_t *)d)[i] = tp->int32_data[i]; break;
            case NPU_DTYPE_INT8: ((int8_t *)d)[i] = (int8_t)tp->int32_data[i]; break;
            case NPU_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)tp->int32_data[i]; break;
            case NPU_DTYPE_BOOL: ((uint8_t *)d)[i] = tp->int32_data[i] != 0; break;
            default: break;
            }
        }
    }
    if (dt == NPU_DTYPE_BOOL && st == NPU_OK) /* raw bools must be 0/1 for the kernels */
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)d)[i] = ((uint8_t *)d)[i] != 0;
    if (st && !g) {
        free(d);
        out->data = NULL;
    }
    return st;
}

enum npu_status
npu_onnx_parse_tensor(const void *data, size_t len, struct npu_tensor *out, char **name)
{
    memset(out, 0, sizeof(*out));
    if (name)
        *name = NULL;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, data);
    if (!tp) {
        npu_err(DOM, "not a valid TensorProto (truncated or corrupt protobuf)");
        return NPU_ERR_CORRUPT;
    }
    enum npu_status st =
        onnx_tensor_to_npu(tp, NULL, tp->name && *tp->name ? tp->name : "tensor", NULL, out);
    if (!st && name) {
        *name = strdup(tp->name ? tp->name : "");
        if (!*name) {
            free(out->data);
            out->data = NULL;
            st = NPU_ERR_NOMEM;
        }
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return st;
}

enum npu_status
onnx_read_file(const char *path, unsigned char **buf, size_t *len)
{
    *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb)) {
        npu_err(DOM, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NPU_ERR_IO;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size > ((off_t)1 << 36)) {
        npu_err(DOM, "%s: not a regular file of a plausible size", path);
        close(fd);
        return NPU_ERR_IO;
    }
    *len = (size_t)sb.st_size;
    *buf = malloc(*len ? *len : 1);
    if (!*buf) {
        close(fd);
        return NPU_ERR_NOMEM;
    }
    for (size_t done = 0; done < *len;) {
        ssize_t r = read(fd, *buf + done, *len - done);
        if (r <= 0) {
            npu_err(DOM, "%s: read failed", path);
            free(*buf);
            *buf = NULL;
            close(fd);
            return NPU_ERR_IO;
        }
        done += (size_t)r;
    }
    close(fd);
    return NPU_OK;
}

enum npu_status
npu_onnx_read_tensor(const char *path, struct npu_tensor *out, char **name)
{
    unsigned char *buf;
    size_t len;
    memset(out, 0, sizeof(*out));
    enum npu_status st = onnx_read_file(path, &buf, &len);
    if (st)
        return st;
    st = npu_onnx_parse_tensor(buf, len, out, name);
    if (st)
        npu_err(DOM, "%s: cannot read the tensor", path);
    free(buf);
    return st;
}

/* The model file for reading once: mapped (the page cache's pages, no private copy to
 * allocate, clear and fill), or read into memory where it cannot be mapped. *mapped says
 * which, for onnx_release_file. A mapped file stays open (*fd_out, else -1): the payloads
 * the importer copies are read with pread, and only the pages it reads in place (the
 * protobuf fields, the payloads it borrows) are ever mapped, by fault-around as they are
 * read (keep_borrowed_pages populates the borrowed ones). */
static enum npu_status
onnx_map_file(const char *path, unsigned char **buf, size_t *len, bool *mapped, int *fd_out)
{
    *buf = NULL;
    *mapped = false;
    *fd_out = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd >= 0 && !fstat(fd, &sb) && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        sb.st_size <= ((off_t)1 << 36)) {
        /* writable from the start (private: a write copies the page, the file never
         * changes), so that keeping the borrowed pages needs no mprotect walk over them */
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            *fd_out = fd;
            *buf = m;
            *len = (size_t)sb.st_size;
            *mapped = true;
            return NPU_OK;
        }
    }
    if (fd >= 0)
        close(fd);
    return onnx_read_file(path, buf, len); /* reports what is wrong with the file */
}

static int
span_cmp(const void *a, const void *b)
{
    const struct onnx_span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Hands g the pages of the mapping [buf, buf + len) that hold borrowed payloads, and
 * unmaps the rest (the graph has copies of everything else: the file's other pages need
 * not stay resident for the whole compile). */
static enum npu_status
keep_borrowed_pages(struct npu_graph *g, unsigned char *buf, size_t len, struct onnx_borrow *b)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    qsort(b->spans, b->n_spans, sizeof(*b->spans), span_cmp);
    size_t done = 0; /* buf[0, done) is handled */
    for (size_t i = 0; i < b->n_spans;) {
        size_t lo = (size_t)(b->spans[i].lo - buf) / pg * pg;
        size_t hi = NPU_MIN(len, ((size_t)(b->spans[i].hi - buf) + pg - 1) / pg * pg);
        for (i++; i < b->n_spans && (size_t)(b->spans[i].lo - buf) < hi + pg; i++)
            hi = NPU_MAX(hi, NPU_MIN(len, ((size_t)(b->spans[i].hi - buf) + pg - 1) / pg * pg));
        lo = NPU_MAX(lo, done);
        if (lo > done)
            munmap(buf + done, lo - done);
        if (hi > lo) {
#ifdef MADV_POPULATE_READ
            /* the borrowed payloads' pages at once, not one fault-around at a time */
            (void)madvise(buf + lo, hi - lo, MADV_POPULATE_READ);
#endif
            enum npu_status st = npu_graph_adopt_mapping(g, buf + lo, hi - lo);
            if (st) {
                munmap(buf + lo, len - lo);
                return st;
            }
        }
        done = NPU_MAX(done, hi);
    }
    if (done < len)
        munmap(buf + done, len - done);
    return NPU_OK;
}

static void
onnx_release_file(unsigned char *buf, size_t len, bool mapped)
{
    if (mapped)
        munmap(buf, len);
    else
        free(buf);
}

enum npu_status
npu_onnx_load(const char *path, const struct npu_onnx_options *opts, struct npu_graph **out)
{
    unsigned char *buf;
    size_t len;
    bool mapped;
    int fd;
    *out = NULL;
    enum npu_status st = onnx_map_file(path, &buf, &len, &mapped, &fd);
    if (st)
        return st;
    struct npu_onnx_options o = opts ? *opts : (struct npu_onnx_options){0};
    char *dir = NULL;
    if (!o.base_dir) {
        const char *slash = strrchr(path, '/');
        dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
        if (!dir) {
            onnx_release_file(buf, len, mapped);
            if (fd >= 0)
                close(fd);
            return NPU_ERR_NOMEM;
        }
        o.base_dir = dir;
    }
    /* From a mapped file the graph's constants may point into the mapping (no copy of the
     * weights at all); the graph then keeps it. Writable (copy on write, the file is never
     * changed) so that a pass rewriting a constant in place still works. */
    struct onnx_borrow borrow = {.lo = buf, .hi = buf + len, .fd = fd};
    st = onnx_import_borrow(buf, len, &o, out, mapped ? &borrow : NULL);
    if (fd >= 0)
        close(fd);
    if (st)
        npu_err(DOM, "%s: import failed (%s)", path, npu_status_str(st));
    if (!st && borrow.used) {
        st = keep_borrowed_pages(*out, buf, len, &borrow);
        buf = NULL; /* the graph's now, or unmapped */
    }
    free(borrow.spans);
    if (st && *out) {
        npu_graph_free(*out);
        *out = NULL;
    }
    if (buf)
        onnx_release_file(buf, len, mapped);
    free(dir);
    return st;
}
