/* SPDX-License-Identifier: MIT */
/*
 * npu-npy.c: NumPy .npy reading and writing (API and accepted subset in
 * npu-npy.h). The header is a Python dict literal; we parse exactly the form
 * numpy writes ({'descr': ..., 'fortran_order': ..., 'shape': (...), })
 * with a small hand-written scanner that never reads past the header length
 * and refuses anything it does not understand, since .npy files come from
 * users. Every size derived from the header is overflow-checked and compared
 * with the bytes actually present.
 */
#include "npu/npu-npy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DOM "npy"

/* npu_tensor data is host order; every supported host (x86-64, aarch64) is
 * little-endian, which is what we read and write. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npu-npy.c assumes a little-endian host"
#endif

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* The part of the file before the data, as parsed. */
struct npy_header {
    int major;
    size_t data_off; /* magic + version + length field + header text */
    enum npu_dtype dtype;
    int ndim;
    int64_t dims[NPU_MAX_DIMS];
};

static const struct {
    char kind;
    int size;
    enum npu_dtype dtype;
    const char *descr;
} npy_types[] = {
    {'f', 2, NPU_DTYPE_FP16, "<f2"},   {'f', 4, NPU_DTYPE_FP32, "<f4"},
    {'f', 8, NPU_DTYPE_FP64, "<f8"},   {'i', 1, NPU_DTYPE_INT8, "|i1"},
    {'i', 2, NPU_DTYPE_INT16, "<i2"},  {'i', 4, NPU_DTYPE_INT32, "<i4"},
    {'i', 8, NPU_DTYPE_INT64, "<i8"},  {'u', 1, NPU_DTYPE_UINT8, "|u1"},
    {'u', 2, NPU_DTYPE_UINT16, "<u2"}, {'u', 4, NPU_DTYPE_UINT32, "<u4"},
    {'u', 8, NPU_DTYPE_UINT64, "<u8"}, {'b', 1, NPU_DTYPE_BOOL, "|b1"},
};

const char *
npu_npy_descr(enum npu_dtype t)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(npy_types); i++)
        if (npy_types[i].dtype == t)
            return npy_types[i].descr;
    return NULL;
}

/* ---- header scanner: p..end is the header text, never read beyond end ---- */

struct scan {
    const char *p, *end;
    const char *what;
};

static void
skip_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool
accept(struct scan *s, char c)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes, into buf (at most cap-1 chars). */
static enum npu_status
scan_string(struct scan *s, char *buf, size_t cap, const char *ctx)
{
    skip_ws(s);
    if (s->p >= s->end || (*s->p != '\'' && *s->p != '"')) {
        npu_err(DOM, "%s: header: expected a quoted string for %s", s->what, ctx);
        return NPU_ERR_CORRUPT;
    }
    char q = *s->p++;
    size_t n = 0;
    while (s->p < s->end && *s->p != q) {
        if (*s->p == '\\' || n + 1 >= cap) {
            npu_err(DOM, "%s: header: unsupported or over-long string for %s", s->what, ctx);
            return NPU_ERR_CORRUPT;
        }
        buf[n++] = *s->p++;
    }
    if (s->p >= s->end) {
        npu_err(DOM, "%s: header: unterminated string for %s", s->what, ctx);
        return NPU_ERR_CORRUPT;
    }
    s->p++;
    buf[n] = '\0';
    return NPU_OK;
}

static enum npu_status
parse_descr(const char *d, const char *what, enum npu_dtype *out)
{
    char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=') {
        npu_err(DOM, "%s: dtype '%s' has no byte-order mark; not a numpy descr", what, d);
        return NPU_ERR_CORRUPT;
    }
    char kind = d[1];
    switch (kind) {
    case 'O':
        npu_err(DOM, "%s: object arrays (dtype '%s') are not supported", what, d);
        return NPU_ERR_UNSUPPORTED;
    case 'V':
        npu_err(DOM, "%s: structured/void dtype '%s' is not supported", what, d);
        return NPU_ERR_UNSUPPORTED;
    case 'U':
    case 'S':
    case 'a':
        npu_err(DOM, "%s: string dtype '%s' is not supported", what, d);
        return NPU_ERR_UNSUPPORTED;
    case 'c':
        npu_err(DOM, "%s: complex dtype '%s' is not supported", what, d);
        return NPU_ERR_UNSUPPORTED;
    case 'M':
    case 'm':
        npu_err(DOM, "%s: datetime dtype '%s' is not supported", what, d);
        return NPU_ERR_UNSUPPORTED;
    default: break;
    }
    int size = 0;
    const char *q = d + 2;
    if (*q < '1' || *q > '9') {
        npu_err(DOM, "%s: dtype '%s' is not supported", what, d);
        return NPU_ERR_UNSUPPORTED;
    }
    while (*q >= '0' && *q <= '9' && size < 1000)
        size = size * 10 + (*q++ - '0');
    if (*q) {
        npu_err(DOM, "%s: dtype '%s' is not supported", what, d);
        return NPU_ERR_UNSUPPORTED;
    }
    for (size_t i = 0; i < NPU_ARRAY_SIZE(npy_types); i++) {
        if (npy_types[i].kind != kind || npy_types[i].size != size)
            continue;
        /* The byte order only matters for multi-byte elements. */
        if (size > 1 && order == '>') {
            npu_err(DOM,
                    "%s: big-endian dtype '%s' is not supported (save it with "
                    "arr.astype(arr.dtype.newbyteorder('<')))",
                    what, d);
            return NPU_ERR_UNSUPPORTED;
        }
        if (size > 1 && order == '|') {
            npu_err(DOM, "%s: dtype '%s': '|' byte order on a multi-byte type", what, d);
            return NPU_ERR_CORRUPT;
        }
        *out = npy_types[i].dtype;
        return NPU_OK;
    }
    npu_err(DOM,
            "%s: dtype '%s' is not supported (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 "
            "b1)",
            what, d);
    return NPU_ERR_UNSUPPORTED;
}

static enum npu_status
scan_shape(struct scan *s, struct npy_header *h)
{
    if (!accept(s, '(')) {
        npu_err(DOM, "%s: header: 'shape' is not a tuple", s->what);
        return NPU_ERR_CORRUPT;
    }
    h->ndim = 0;
    for (;;) {
        if (accept(s, ')'))
            return NPU_OK;
        skip_ws(s);
        if (s->p >= s->end || *s->p < '0' || *s->p > '9') {
            npu_err(DOM, "%s: header: bad 'shape' entry", s->what);
            return NPU_ERR_CORRUPT;
        }
        int64_t v = 0;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
            int d = *s->p++ - '0';
            if (v > (INT64_MAX - d) / 10) {
                npu_err(DOM, "%s: header: 'shape' entry overflows", s->what);
                return NPU_ERR_CORRUPT;
            }
            v = v * 10 + d;
        }
        if (s->p < s->end && *s->p == 'L') /* written by Python 2 numpy */
            s->p++;
        if (h->ndim >= NPU_MAX_DIMS) {
            npu_err(DOM, "%s: more than %d dims are not supported", s->what, NPU_MAX_DIMS);
            return NPU_ERR_UNSUPPORTED;
        }
        h->dims[h->ndim++] = v;
        if (accept(s, ','))
            continue;
        if (accept(s, ')')) {
            /* "(3)" is an int in Python, not a tuple; numpy never writes it. */
            if (h->ndim == 1) {
                npu_err(DOM, "%s: header: 1-d 'shape' lacks its trailing comma", s->what);
                return NPU_ERR_CORRUPT;
            }
            return NPU_OK;
        }
        npu_err(DOM, "%s: header: bad 'shape' tuple", s->what);
        return NPU_ERR_CORRUPT;
    }
}

static enum npu_status
scan_dict(struct scan *s, struct npy_header *h)
{
    enum npu_status st;
    bool have_descr = false, have_fortran = false, have_shape = false;

    if (!accept(s, '{')) {
        npu_err(DOM, "%s: header is not a dict", s->what);
        return NPU_ERR_CORRUPT;
    }
    for (;;) {
        if (accept(s, '}'))
            break;
        char key[32];
        if ((st = scan_string(s, key, sizeof(key), "a key")))
            return st;
        if (!accept(s, ':')) {
            npu_err(DOM, "%s: header: expected ':' after '%s'", s->what, key);
            return NPU_ERR_CORRUPT;
        }
        if (!strcmp(key, "descr") && !have_descr) {
            skip_ws(s);
            if (s->p < s->end && (*s->p == '[' || *s->p == '{')) {
                npu_err(DOM, "%s: structured dtypes are not supported", s->what);
                return NPU_ERR_UNSUPPORTED;
            }
            char d[32];
            if ((st = scan_string(s, d, sizeof(d), "'descr'")))
                return st;
            if ((st = parse_descr(d, s->what, &h->dtype)))
                return st;
            have_descr = true;
        } else if (!strcmp(key, "fortran_order") && !have_fortran) {
            skip_ws(s);
            if ((size_t)(s->end - s->p) >= 4 && !memcmp(s->p, "True", 4)) {
                npu_err(DOM,
                        "%s: Fortran-order arrays are not supported (save with "
                        "np.ascontiguousarray)",
                        s->what);
                return NPU_ERR_UNSUPPORTED;
            }
            if ((size_t)(s->end - s->p) < 5 || memcmp(s->p, "False", 5)) {
                npu_err(DOM, "%s: header: 'fortran_order' is not True or False", s->what);
                return NPU_ERR_CORRUPT;
            }
            s->p += 5;
            have_fortran = true;
        } else if (!strcmp(key, "shape") && !have_shape) {
            if ((st = scan_shape(s, h)))
                return st;
            have_shape = true;
        } else {
            npu_err(DOM, "%s: header: unexpected or repeated key '%s'", s->what, key);
            return NPU_ERR_CORRUPT;
        }
        if (accept(s, ','))
            continue;
        if (accept(s, '}'))
            break;
        npu_err(DOM, "%s: header: expected ',' or '}' after '%s'", s->what, key);
        return NPU_ERR_CORRUPT;
    }
    skip_ws(s);
    if (s->p != s->end) {
        npu_err(DOM, "%s: header: unexpected text after the dict", s->what);
        return NPU_ERR_CORRUPT;
    }
    if (!have_descr || !have_fortran || !have_shape) {
        npu_err(DOM, "%s: header lacks %s", s->what,
                !have_descr     ? "'descr'"
                : !have_fortran ? "'fortran_order'"
                                : "'shape'");
        return NPU_ERR_CORRUPT;
    }
    return NPU_OK;
}

/* Parses the magic, version and header from the first avail bytes. */
static enum npu_status
parse_header(const uint8_t *b, size_t avail, const char *what, struct npy_header *h)
{
    memset(h, 0, sizeof(*h));
    if (avail >= sizeof(npy_magic) && avail < 10 && !memcmp(b, npy_magic, sizeof(npy_magic))) {
        npu_err(DOM, "%s: truncated .npy header", what);
        return NPU_ERR_CORRUPT;
    }
    if (avail < 10 || memcmp(b, npy_magic, sizeof(npy_magic))) {
        npu_err(DOM, "%s: not a NumPy .npy file (bad magic)", what);
        return NPU_ERR_CORRUPT;
    }
    h->major = b[6];
    size_t hlen, pre;
    if (h->major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        pre = 10;
    } else if (h->major == 2 || h->major == 3) {
        if (avail < 12) {
            npu_err(DOM, "%s: truncated .npy header", what);
            return NPU_ERR_CORRUPT;
        }
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        pre = 12;
    } else {
        npu_err(DOM, "%s: .npy format version %d.%d is not supported (1.0, 2.0, 3.0 are)", what,
                b[6], b[7]);
        return NPU_ERR_VERSION;
    }
    if (b[7] != 0) {
        npu_err(DOM, "%s: .npy format version %d.%d is not supported (1.0, 2.0, 3.0 are)", what,
                b[6], b[7]);
        return NPU_ERR_VERSION;
    }
    if (hlen > NPU_NPY_MAX_HEADER) {
        npu_err(DOM, "%s: .npy header of %zu bytes is larger than the %u we accept", what, hlen,
                NPU_NPY_MAX_HEADER);
        return NPU_ERR_CORRUPT;
    }
    if (hlen > avail - pre) {
        npu_err(DOM, "%s: truncated .npy header (%zu bytes announced, %zu present)", what, hlen,
                avail - pre);
        return NPU_ERR_CORRUPT;
    }
    /* Versions 1 and 2 are latin-1, 3 is UTF-8; the keys and values we accept
     * are ASCII in either, so any other byte just fails the scan. */
    struct scan s = {(const char *)b + pre, (const char *)b + pre + hlen, what};
    enum npu_status st = scan_dict(&s, h);
    if (st)
        return st;
    h->data_off = pre + hlen;
    return NPU_OK;
}

static void *
alloc_data(int64_t nbytes)
{
    size_t n = nbytes > 0 ? (size_t)nbytes : 1;
    n = NPU_ALIGN(n, (size_t)64);
    return aligned_alloc(64, n);
}

/* Checks the data size against what the header says; fills *out's shape. */
static enum npu_status
check_size(const struct npy_header *h, uint64_t data_avail, const char *what,
           struct npu_tensor *out, int64_t *nbytes)
{
    memset(out, 0, sizeof(*out));
    out->dtype = h->dtype;
    out->ndim = h->ndim;
    memcpy(out->dims, h->dims, sizeof(h->dims));
    int64_t n = npu_tensor_nbytes(out);
    if (n < 0 || (uint64_t)n > SIZE_MAX / 2) {
        npu_err(DOM, "%s: array size overflows", what);
        memset(out, 0, sizeof(*out));
        return NPU_ERR_CORRUPT;
    }
    if ((uint64_t)n != data_avail) {
        npu_err(DOM, "%s: %s: header announces %" PRId64 " data bytes, file has %" PRIu64, what,
                (uint64_t)n > data_avail ? "truncated data" : "trailing bytes after the data", n,
                data_avail);
        memset(out, 0, sizeof(*out));
        return NPU_ERR_CORRUPT;
    }
    *nbytes = n;
    return NPU_OK;
}

enum npu_status
npu_npy_decode(const void *buf, size_t len, const char *what, struct npu_tensor *out)
{
    struct npy_header h;
    enum npu_status st;
    int64_t nbytes;

    if (!what)
        what = "(memory)";
    if (!out)
        return NPU_ERR_INVALID;
    memset(out, 0, sizeof(*out));
    if (!buf && len) {
        npu_err(DOM, "%s: NULL buffer", what);
        return NPU_ERR_INVALID;
    }
    if ((st = parse_header(buf, len, what, &h)))
        return st;
    if ((st = check_size(&h, len - h.data_off, what, out, &nbytes)))
        return st;
    out->data = alloc_data(nbytes);
    if (!out->data) {
        npu_err(DOM, "%s: out of memory for %" PRId64 " bytes", what, nbytes);
        memset(out, 0, sizeof(*out));
        return NPU_ERR_NOMEM;
    }
    if (nbytes)
        memcpy(out->data, (const uint8_t *)buf + h.data_off, (size_t)nbytes);
    return NPU_OK;
}

/* Reads exactly n bytes at offset off; false on a short read or error. */
static bool
read_at(int fd, void *dst, size_t n, off_t off)
{
    uint8_t *p = dst;
    while (n) {
        ssize_t r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return true;
}

enum npu_status
npu_npy_read(const char *path, struct npu_tensor *out)
{
    enum npu_status st;
    struct npy_header h;
    struct stat sb;
    uint8_t *head = NULL;
    int64_t nbytes;

    if (!out || !path)
        return NPU_ERR_INVALID;
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        npu_err(DOM, "%s: cannot open: %s", path, strerror(errno));
        return NPU_ERR_IO;
    }
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        npu_err(DOM, "%s: not a regular file", path);
        st = NPU_ERR_IO;
        goto out_close;
    }
    size_t size = (size_t)sb.st_size;
    size_t want = NPU_MIN(size, (size_t)12 + NPU_NPY_MAX_HEADER);
    head = malloc(want ? want : 1);
    if (!head) {
        st = NPU_ERR_NOMEM;
        goto out_close;
    }
    if (!read_at(fd, head, want, 0)) {
        npu_err(DOM, "%s: read error", path);
        st = NPU_ERR_IO;
        goto out_free;
    }
    if ((st = parse_header(head, want, path, &h)))
        goto out_free;
    if ((st = check_size(&h, size - h.data_off, path, out, &nbytes)))
        goto out_free;
    out->data = alloc_data(nbytes);
    if (!out->data) {
        npu_err(DOM, "%s: out of memory for %" PRId64 " bytes", path, nbytes);
        st = NPU_ERR_NOMEM;
        goto out_free;
    }
    if (nbytes && !read_at(fd, out->data, (size_t)nbytes, (off_t)h.data_off)) {
        npu_err(DOM, "%s: read error (file changed while reading?)", path);
        st = NPU_ERR_IO;
        goto out_free;
    }
    st = NPU_OK;
out_free:
    free(head);
    if (st)
        npu_npy_free(out);
out_close:
    close(fd);
    return st;
}

enum npu_status
npu_npy_encode(const struct npu_tensor *t, void **buf, size_t *len)
{
    if (!t || !buf || !len)
        return NPU_ERR_INVALID;
    *buf = NULL;
    *len = 0;
    const char *descr = npu_npy_descr(t->dtype);
    if (!descr) {
        npu_err(DOM, "cannot write dtype %s as .npy", npu_dtype_name(t->dtype));
        return NPU_ERR_INVALID;
    }
    int64_t nbytes = npu_tensor_nbytes(t);
    if (nbytes < 0 || (uint64_t)nbytes > SIZE_MAX / 2) {
        npu_err(DOM, "cannot write a tensor with invalid shape (ndim %d)", t->ndim);
        return NPU_ERR_INVALID;
    }
    if (nbytes && !t->data) {
        npu_err(DOM, "cannot write a tensor without data");
        return NPU_ERR_INVALID;
    }

    /* At most 8 dims of 19 digits plus separators: well under 512 bytes. */
    char dict[512];
    int n =
        snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->ndim; i++)
        n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%s%" PRId64, i ? ", " : "", t->dims[i]);
    n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%s), }", t->ndim == 1 ? "," : "");

    /* Pad with spaces and a final '\n' so that the data starts 64-byte aligned
     * (numpy's own rule); 2.0 only if 1.0's 16-bit length cannot hold it. */
    size_t pre = 10;
    size_t total = NPU_ALIGN(pre + (size_t)n + 1, (size_t)64);
    int major = 1;
    if (total - pre > 0xffff) {
        pre = 12;
        total = NPU_ALIGN(pre + (size_t)n + 1, (size_t)64);
        major = 2;
    }
    size_t hlen = total - pre;
    uint8_t *b = malloc(total + (size_t)nbytes);
    if (!b)
        return NPU_ERR_NOMEM;
    memcpy(b, npy_magic, sizeof(npy_magic));
    b[6] = (uint8_t)major;
    b[7] = 0;
    b[8] = (uint8_t)hlen;
    b[9] = (uint8_t)(hlen >> 8);
    if (major == 2) {
        b[10] = (uint8_t)(hlen >> 16);
        b[11] = (uint8_t)(hlen >> 24);
    }
    memcpy(b + pre, dict, (size_t)n);
    memset(b + pre + n, ' ', hlen - (size_t)n - 1);
    b[total - 1] = '\n';
    if (nbytes)
        memcpy(b + total, t->data, (size_t)nbytes);
    *buf = b;
    *len = total + (size_t)nbytes;
    return NPU_OK;
}

enum npu_status
npu_npy_write(const char *path, const struct npu_tensor *t)
{
    void *buf;
    size_t len;
    enum npu_status st = npu_npy_encode(t, &buf, &len);
    if (st)
        return st;
    FILE *f = fopen(path, "wb");
    if (!f) {
        npu_err(DOM, "%s: cannot create: %s", path, strerror(errno));
        free(buf);
        return NPU_ERR_IO;
    }
    errno = 0;
    bool ok = fwrite(buf, 1, len, f) == len;
    ok = (fflush(f) == 0) && ok;
    int err = errno;
    ok = (fclose(f) == 0) && ok;
    if (!ok && !err)
        err = errno;
    free(buf);
    if (!ok) {
        /* a full disk: leave no truncated (often 0-byte) file that looks like
         * an output */
        unlink(path);
        npu_err(DOM, "%s: write error (%s); removed the incomplete file", path, strerror(err));
        return NPU_ERR_IO;
    }
    return NPU_OK;
}

void
npu_npy_free(struct npu_tensor *t)
{
    if (!t)
        return;
    free(t->data);
    memset(t, 0, sizeof(*t));
}
