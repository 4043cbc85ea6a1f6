/* SPDX-License-Identifier: MIT */
/*
 * npy_test.c: NumPy .npy reading and writing (core/util/npu-npy.c).
 * The reference is NumPy itself: tests/models/npy/ holds files np.save wrote
 * (make-npy-fixtures.py), whose values follow a formula recomputed here, and
 * our writer must reproduce NumPy's version 1.0 files byte for byte.
 * Malformed input: every truncation of a valid file, hand-written bad headers,
 * and a seeded fuzz loop over mutated headers; all must end in a clean error.
 * Usage: npy_test FIXTURE_DIR TMP_DIR
 */
#include <stdint.h>
#include <unistd.h>

#include "npu-test-file.h"
#include "npu-test.h"
#include "npu/npu-npy.h"

static const char *fixdir, *tmpdir;

/* Collects the last logged message so that tests can check it names the problem. */
static char last_msg[512];
static int nmsgs;
static bool quiet;

static void
log_sink(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    snprintf(last_msg, sizeof(last_msg), "%s", msg);
    nmsgs++;
    if (!quiet)
        fprintf(stderr, "  [logged] %s: %s\n", domain, msg);
}

static void
fixture_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", fixdir, name);
}

/* The formula make-npy-fixtures.py used. */
static double
expected_value(enum npu_dtype dt, int64_t k)
{
    if (dt == NPU_DTYPE_BOOL)
        return (double)(k % 2);
    if (dt == NPU_DTYPE_UINT8 || dt == NPU_DTYPE_UINT16 || dt == NPU_DTYPE_UINT32 ||
        dt == NPU_DTYPE_UINT64)
        return (double)((k * 7) % 11);
    return (double)((k * 7) % 11 - 3);
}

static void
check_values(const char *name, const struct npu_tensor *t)
{
    int64_t n = npu_tensor_numel(t);
    int bad = 0;
    for (int64_t k = 0; k < n; k++)
        if (npu_dtype_load_f64(t->dtype, t->data, k) != expected_value(t->dtype, k))
            bad++;
    if (bad)
        fprintf(stderr, "%s: %d wrong values\n", name, bad);
    CHECK_EQ_INT(0, bad);
}

/* Reads a fixture, checks dtype/shape/values, and checks that our encoder
 * writes the same bytes NumPy wrote (only for version 1.0 files). */
static void
check_ok_fixture(const char *name, enum npu_dtype dt, int ndim, const int64_t *dims,
                 bool byte_identical)
{
    char path[1024];
    fixture_path(path, sizeof(path), name);
    struct npu_tensor t;
    enum npu_status st = npu_npy_read(path, &t);
    if (st != NPU_OK) {
        fprintf(stderr, "%s: read failed: %s\n", name, npu_status_str(st));
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(dt, t.dtype);
    CHECK_EQ_INT(ndim, t.ndim);
    for (int i = 0; i < ndim && i < t.ndim; i++)
        CHECK_EQ_INT(dims[i], t.dims[i]);
    CHECK(((uintptr_t)t.data & 63) == 0);
    check_values(name, &t);

    /* The same bytes through npu_npy_decode. */
    size_t flen = 0;
    void *fbuf = npu_test_slurp(path, &flen);
    CHECK(fbuf != NULL);
    struct npu_tensor m;
    CHECK_EQ_INT(NPU_OK, npu_npy_decode(fbuf, flen, name, &m));
    CHECK_EQ_INT(t.dtype, m.dtype);
    CHECK(npu_tensor_nbytes(&m) == npu_tensor_nbytes(&t));
    if (npu_tensor_nbytes(&t) > 0)
        CHECK(!memcmp(m.data, t.data, (size_t)npu_tensor_nbytes(&t)));
    npu_npy_free(&m);

    if (byte_identical) {
        void *ebuf;
        size_t elen;
        CHECK_EQ_INT(NPU_OK, npu_npy_encode(&t, &ebuf, &elen));
        CHECK_EQ_INT(flen, elen);
        bool same = elen == flen && !memcmp(ebuf, fbuf, flen);
        if (!same)
            fprintf(stderr, "%s: our encoding differs from numpy's\n", name);
        CHECK(same);
        free(ebuf);
    }
    free(fbuf);
    npu_npy_free(&t);
}

static void
check_bad_fixture(const char *name, enum npu_status want, const char *msg_part)
{
    char path[1024];
    fixture_path(path, sizeof(path), name);
    struct npu_tensor t;
    last_msg[0] = '\0';
    enum npu_status st = npu_npy_read(path, &t);
    CHECK_EQ_INT(want, st);
    CHECK(t.data == NULL);
    if (!strstr(last_msg, msg_part)) {
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", name, last_msg, msg_part);
        CHECK(0);
    }
}

/* Builds a version 1.0 image around a header text and data bytes. */
static uint8_t *
make_image(int major, const char *hdr, size_t ndata, size_t *len)
{
    size_t hl = strlen(hdr), pre = major == 1 ? 10 : 12;
    uint8_t *b = calloc(1, pre + hl + ndata + 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)major;
    b[7] = 0;
    b[8] = (uint8_t)hl;
    b[9] = (uint8_t)(hl >> 8);
    memcpy(b + pre, hdr, hl);
    *len = pre + hl + ndata;
    return b;
}

static void
check_header(const char *hdr, size_t ndata, enum npu_status want)
{
    size_t len;
    uint8_t *b = make_image(1, hdr, ndata, &len);
    struct npu_tensor t;
    enum npu_status st = npu_npy_decode(b, len, "hand-made", &t);
    if (st != want)
        fprintf(stderr, "header <%s> + %zu data bytes: got %s, want %s\n", hdr, ndata,
                npu_status_str(st), npu_status_str(want));
    CHECK_EQ_INT(want, st);
    npu_npy_free(&t);
    free(b);
}

static void
test_hand_made_headers(void)
{
    /* Accepted variants numpy (old or new) may write. */
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 24, NPU_OK);
    check_header("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}", 24, NPU_OK);
    check_header("{'shape': (2L, 3L), 'fortran_order': False, 'descr': '<i4'}   \n", 24, NPU_OK);
    check_header("{'descr': '=i2', 'fortran_order': False, 'shape': (3,), }", 6, NPU_OK);
    check_header("{'descr': '>u1', 'fortran_order': False, 'shape': (), }", 1, NPU_OK);
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", 0, NPU_OK);

    /* Refused. */
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 23,
                 NPU_ERR_CORRUPT); /* truncated data */
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 25,
                 NPU_ERR_CORRUPT); /* trailing bytes */
    check_header("{'descr': '<f4', 'fortran_order': False}", 4, NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4', 'shape': (1,)}", 4, NPU_ERR_CORRUPT);
    check_header("{'fortran_order': False, 'shape': (1,)}", 4, NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4,
                 NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4,
                 NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4)}", 16, NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", 4, NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,) junk", 4, NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", 4,
                 NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4', 'fortran_order': false, 'shape': (1,)}", 4, NPU_ERR_CORRUPT);
    check_header("{'descr': 'f4', 'fortran_order': False, 'shape': (1,)}", 4, NPU_ERR_CORRUPT);
    check_header("{'descr': '|f4', 'fortran_order': False, 'shape': (1,)}", 4, NPU_ERR_CORRUPT);
    check_header("{'descr': '<f3', 'fortran_order': False, 'shape': (1,)}", 3, NPU_ERR_UNSUPPORTED);
    check_header("{'descr': '<f', 'fortran_order': False, 'shape': (1,)}", 4, NPU_ERR_UNSUPPORTED);
    check_header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,)}", 4, NPU_ERR_UNSUPPORTED);
    check_header("{'descr': '>i8', 'fortran_order': False, 'shape': (1,)}", 8, NPU_ERR_UNSUPPORTED);
    check_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", 4,
                 NPU_ERR_UNSUPPORTED);
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 4,
                 NPU_ERR_CORRUPT);
    check_header("{'descr': '<f8', 'fortran_order': False, "
                 "'shape': (4294967296, 4294967296)}",
                 8, NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", 4,
                 NPU_ERR_UNSUPPORTED);
    check_header("{'descr': '<f4\\n', 'fortran_order': False, 'shape': (1,)}", 4, NPU_ERR_CORRUPT);
    check_header("{'descr': '<f4", 0, NPU_ERR_CORRUPT);
    check_header("", 0, NPU_ERR_CORRUPT);

    /* Bad prelude: magic, version, header length beyond the buffer. */
    size_t len;
    struct npu_tensor t;
    uint8_t *b = make_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, &len);
    b[1] = 'n';
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_npy_decode(b, len, "magic", &t));
    b[1] = 'N';
    b[6] = 4;
    CHECK_EQ_INT(NPU_ERR_VERSION, npu_npy_decode(b, len, "v4", &t));
    b[6] = 1;
    b[7] = 1;
    CHECK_EQ_INT(NPU_ERR_VERSION, npu_npy_decode(b, len, "v1.1", &t));
    b[7] = 0;
    b[9] = 0xff;
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_npy_decode(b, len, "hlen", &t));
    CHECK(strstr(last_msg, "truncated") != NULL);
    free(b);
    b = make_image(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, &len);
    CHECK_EQ_INT(NPU_OK, npu_npy_decode(b, len, "v2", &t));
    npu_npy_free(&t);
    b[11] = 0x40; /* 1 GiB header: over NPU_NPY_MAX_HEADER */
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_npy_decode(b, len, "huge", &t));
    free(b);
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_npy_decode(NULL, 0, NULL, &t));
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_npy_decode("\x93NUMPY\x01", 7, NULL, &t));
    CHECK(strstr(last_msg, "truncated") != NULL);
}

/* Every proper prefix of a valid file must fail cleanly. */
static void
test_truncations(const char *name)
{
    char path[1024];
    fixture_path(path, sizeof(path), name);
    size_t len;
    uint8_t *full = (uint8_t *)npu_test_slurp(path, &len);
    CHECK(full != NULL);
    if (!full)
        return;
    int bad = 0;
    for (size_t n = 0; n < len; n++) {
        uint8_t *b = malloc(n ? n : 1); /* exact size, so ASan sees over-reads */
        memcpy(b, full, n);
        struct npu_tensor t;
        if (npu_npy_decode(b, n, "prefix", &t) == NPU_OK) {
            bad++;
            npu_npy_free(&t);
        }
        free(b);
        /* The same through a file. */
        char tp[1024];
        snprintf(tp, sizeof(tp), "%s/trunc.npy", tmpdir);
        FILE *f = fopen(tp, "wb");
        fwrite(full, 1, n, f);
        fclose(f);
        if (npu_npy_read(tp, &t) == NPU_OK) {
            bad++;
            npu_npy_free(&t);
        }
    }
    CHECK_EQ_INT(0, bad);
    free(full);
}

/* Seeded mutations of a valid header: random bytes changed, inserted
 * characters from the header alphabet, lengths perturbed. Must never crash
 * (ASan/UBSan builds watch), and a success must be self-consistent. */
static void
test_fuzz(void)
{
    static const char alphabet[] = "{}()[],:' \"<>|=fiub0123456789LTrueFalse\n\\";
    char path[1024];
    fixture_path(path, sizeof(path), "ok-f4-2x3.npy");
    size_t len;
    uint8_t *seed = (uint8_t *)npu_test_slurp(path, &len);
    CHECK(seed != NULL);
    if (!seed)
        return;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int ok = 0, err = 0, inconsistent = 0;
    for (int it = 0; it < 20000; it++) {
        uint8_t *b = malloc(len);
        memcpy(b, seed, len);
        int nmut = 1 + (int)(x % 4);
        for (int m = 0; m < nmut; m++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t pos = (size_t)(x >> 8) % len;
            if (pos < 10 && (x & 0xf0)) /* mostly keep the prelude */
                pos = 10 + pos * 7 % (len - 10);
            if (x & 1)
                b[pos] = (uint8_t)(x >> 40);
            else
                b[pos] = (uint8_t)alphabet[(x >> 40) % (sizeof(alphabet) - 1)];
        }
        size_t n = len;
        if ((x & 0x700) == 0x700)
            n = (size_t)(x >> 20) % len;
        struct npu_tensor t;
        if (npu_npy_decode(b, n, "fuzz", &t) == NPU_OK) {
            ok++;
            int64_t nb = npu_tensor_nbytes(&t);
            if (nb < 0 || nb > (int64_t)n || !t.data)
                inconsistent++;
            npu_npy_free(&t);
        } else {
            err++;
            if (t.data || t.ndim)
                inconsistent++;
        }
        free(b);
    }
    printf("fuzz: 20000 mutated headers: %d decoded, %d refused\n", ok, err);
    CHECK_EQ_INT(0, inconsistent);
    CHECK(err > 0);
    free(seed);
}

static void
test_roundtrip(void)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/roundtrip.npy", tmpdir);
    int64_t v[24];
    for (int i = 0; i < 24; i++)
        v[i] = (int64_t)i * 1000000007 - 5;
    struct npu_tensor t = {.dtype = NPU_DTYPE_INT64, .ndim = 3, .dims = {2, 3, 4}, .data = v};
    CHECK_EQ_INT(NPU_OK, npu_npy_write(path, &t));
    struct npu_tensor r;
    CHECK_EQ_INT(NPU_OK, npu_npy_read(path, &r));
    CHECK_EQ_INT(NPU_DTYPE_INT64, r.dtype);
    CHECK_EQ_INT(3, r.ndim);
    CHECK_EQ_INT(4, r.dims[2]);
    CHECK(r.data && !memcmp(r.data, v, sizeof(v)));
    npu_npy_free(&r);

    /* Scalar, empty and 8-d shapes, each dtype. */
    for (int dt = 1; dt < NPU_DTYPE_COUNT; dt++) {
        struct npu_tensor s = {.dtype = (enum npu_dtype)dt, .ndim = 0};
        uint8_t raw[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        s.data = raw;
        if (dt == NPU_DTYPE_BOOL)
            raw[0] = 1;
        CHECK_EQ_INT(NPU_OK, npu_npy_write(path, &s));
        CHECK_EQ_INT(NPU_OK, npu_npy_read(path, &r));
        CHECK_EQ_INT(dt, r.dtype);
        CHECK_EQ_INT(0, r.ndim);
        CHECK(!memcmp(r.data, raw, npu_dtype_size((enum npu_dtype)dt)));
        npu_npy_free(&r);
    }
    struct npu_tensor e = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {3, 0}};
    CHECK_EQ_INT(NPU_OK, npu_npy_write(path, &e));
    CHECK_EQ_INT(NPU_OK, npu_npy_read(path, &r));
    CHECK_EQ_INT(0, r.dims[1]);
    CHECK(r.data != NULL);
    npu_npy_free(&r);

    /* Refused on write. */
    struct npu_tensor u = {.dtype = NPU_DTYPE_UNDEFINED, .ndim = 1, .dims = {1}, .data = v};
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_npy_write(path, &u));
    struct npu_tensor nd = {.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {4}, .data = NULL};
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_npy_write(path, &nd));
    struct npu_tensor neg = {.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {-4}, .data = v};
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_npy_write(path, &neg));
    CHECK_EQ_INT(NPU_ERR_IO, npu_npy_write("/nonexistent-dir/x.npy", &t));
    CHECK_EQ_INT(NPU_ERR_IO, npu_npy_read("/nonexistent-dir/x.npy", &r));
    CHECK_EQ_INT(NPU_ERR_IO, npu_npy_read(tmpdir, &r)); /* a directory */
    unlink(path);
}

int
main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s FIXTURE_DIR TMP_DIR\n", argv[0]);
        return 2;
    }
    fixdir = argv[1];
    tmpdir = argv[2];
    npu_log_set_handler(log_sink, NULL);

    static const struct {
        const char *name;
        enum npu_dtype dt;
    } types[] = {
        {"ok-f2-2x3.npy", NPU_DTYPE_FP16},   {"ok-f4-2x3.npy", NPU_DTYPE_FP32},
        {"ok-f8-2x3.npy", NPU_DTYPE_FP64},   {"ok-i1-2x3.npy", NPU_DTYPE_INT8},
        {"ok-i2-2x3.npy", NPU_DTYPE_INT16},  {"ok-i4-2x3.npy", NPU_DTYPE_INT32},
        {"ok-i8-2x3.npy", NPU_DTYPE_INT64},  {"ok-u1-2x3.npy", NPU_DTYPE_UINT8},
        {"ok-u2-2x3.npy", NPU_DTYPE_UINT16}, {"ok-u4-2x3.npy", NPU_DTYPE_UINT32},
        {"ok-u8-2x3.npy", NPU_DTYPE_UINT64}, {"ok-b1-2x3.npy", NPU_DTYPE_BOOL},
    };
    const int64_t d23[] = {2, 3}, d5[] = {5}, d03[] = {0, 3};
    const int64_t d8[] = {2, 2, 2, 2, 2, 2, 2, 2};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(types); i++)
        check_ok_fixture(types[i].name, types[i].dt, 2, d23, true);
    check_ok_fixture("ok-v2-f4-2x3.npy", NPU_DTYPE_FP32, 2, d23, false);
    check_ok_fixture("ok-v3-f4-2x3.npy", NPU_DTYPE_FP32, 2, d23, false);
    check_ok_fixture("ok-scalar-i8.npy", NPU_DTYPE_INT64, 0, NULL, true);
    check_ok_fixture("ok-1d-f4-5.npy", NPU_DTYPE_FP32, 1, d5, true);
    check_ok_fixture("ok-empty-f4-0x3.npy", NPU_DTYPE_FP32, 2, d03, true);
    check_ok_fixture("ok-8d-u1.npy", NPU_DTYPE_UINT8, 8, d8, true);

    quiet = true;
    check_bad_fixture("bad-fortran.npy", NPU_ERR_UNSUPPORTED, "Fortran");
    check_bad_fixture("bad-bigendian.npy", NPU_ERR_UNSUPPORTED, "big-endian");
    check_bad_fixture("bad-object.npy", NPU_ERR_UNSUPPORTED, "object");
    check_bad_fixture("bad-structured.npy", NPU_ERR_UNSUPPORTED, "structured");
    check_bad_fixture("bad-unicode.npy", NPU_ERR_UNSUPPORTED, "string");
    check_bad_fixture("bad-complex.npy", NPU_ERR_UNSUPPORTED, "complex");
    check_bad_fixture("bad-9d.npy", NPU_ERR_UNSUPPORTED, "dims");

    test_hand_made_headers();
    test_truncations("ok-f4-2x3.npy");
    test_truncations("ok-v3-f4-2x3.npy");
    test_truncations("ok-scalar-i8.npy");
    test_fuzz();
    test_roundtrip();
    return npu_test_done("npy_test");
}
