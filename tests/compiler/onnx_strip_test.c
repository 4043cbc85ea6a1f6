/* SPDX-License-Identifier: MIT */
/*
 * onnx_strip_test.c: the importer's copy-free initializers (npu-onnx-strip.c, the mapped
 * file kept by the graph). Models are written here byte by byte: one Add of an input and
 * an initializer `w`. Checked: the constant's values whether its payload is stripped and
 * put back, borrowed from the mapped file (a large fp32 payload at any alignment: the
 * graph's arena does not grow by its size) or copied (a small unaligned one); a payload
 * given twice (the last wins), a padded length (left to protobuf-c), the graph field twice,
 * float_data instead of raw_data; and
 * every truncation and many single-byte corruptions of the model: an error or a graph,
 * never a crash (the sanitizer build runs this too).
 */
#include <stdint.h>
#include <unistd.h>

#include "npu-test-pb.h"
#include "npu-test.h"
#include "npu/npu-ir.h"
#include "npu/npu-onnx.h"

/* ValueInfoProto: name, float tensor of shape [n] */
static void
value_info(struct buf *g, int field, const char *name, int n)
{
    struct buf vi = {0}, tp = {0}, tt = {0}, sh = {0}, dim = {0};
    int_field(&dim, 1, (uint64_t)n);
    msg_field(&sh, 1, &dim);
    int_field(&tt, 1, 1);
    msg_field(&tt, 2, &sh);
    msg_field(&tp, 1, &tt);
    str_field(&vi, 1, name);
    msg_field(&vi, 2, &tp);
    msg_field(g, field, &vi);
}

enum form { RAW, RAW_TWICE, FLOAT_DATA, RAW_PADDED_LEN, GRAPH_TWICE };

/* Model: y = a + w, w = [n] floats (w[i] = i * 0.5 + 1); the graph's name (before the
 * initializer) padded by `pad` bytes so that the payload lands at every alignment. */
static struct buf
make_model(int n, int pad, enum form f)
{
    struct buf m = {0}, g = {0}, node = {0}, init = {0}, os = {0};
    float *w = malloc((size_t)n * sizeof(float));
    for (int i = 0; i < n; i++)
        w[i] = (float)i * 0.5f + 1.0f;
    const char *name = "w";
    char gname[64] = "g";
    for (int i = 0; i < pad && i < 40; i++)
        strcat(gname, "_");
    str_field(&node, 1, "a");
    str_field(&node, 1, name);
    str_field(&node, 2, "y");
    str_field(&node, 4, "Add");
    msg_field(&g, 1, &node);
    str_field(&g, 2, gname);
    int_field(&init, 1, (uint64_t)n); /* dims */
    int_field(&init, 2, 1);           /* FLOAT */
    str_field(&init, 8, name);
    if (f == FLOAT_DATA) {
        tag(&init, 4, 2);
        varint(&init, (uint64_t)n * 4);
        put(&init, w, (size_t)n * 4);
    } else if (f == RAW_PADDED_LEN) {
        tag(&init, 9, 2);
        uint64_t len = (uint64_t)n * 4;
        uint8_t pl[10];
        int k = 0;
        for (; k < 9; k++) /* the length in 10 bytes, all but the last with the high bit */
            pl[k] = (uint8_t)(((len >> (7 * k)) & 0x7f) | 0x80);
        pl[9] = (uint8_t)((len >> 63) & 1);
        put(&init, pl, 10);
        put(&init, w, (size_t)n * 4);
    } else {
        if (f == RAW_TWICE) { /* a first payload of zeros: protobuf keeps the last */
            float *z = calloc((size_t)n, sizeof(float));
            bytes_field(&init, 9, z, (size_t)n * 4);
            free(z);
        }
        bytes_field(&init, 9, w, (size_t)n * 4);
    }
    msg_field(&g, 5, &init);
    value_info(&g, 11, "a", n);
    value_info(&g, 12, "y", n);
    int_field(&m, 1, 8); /* ir_version */
    int_field(&os, 2, 13);
    msg_field(&m, 8, &os);
    if (f == GRAPH_TWICE) { /* the graph field twice: protobuf merges the two */
        struct buf g2 = {0};
        str_field(&g2, 2, "g");
        msg_field(&m, 7, &g2);
    }
    msg_field(&m, 7, &g);
    free(w);
    return m;
}

/* The constant `w` of g holds w[i] = i * 0.5 + 1. */
static void
check_w(struct npu_graph *g, int n)
{
    struct npu_value *v = npu_graph_find_value(g, "w");
    CHECK(v && v->kind == NPU_VALUE_CONST && v->t.dtype == NPU_DTYPE_FP32 &&
          npu_value_numel(v) == n);
    if (!v || npu_value_numel(v) != n)
        return;
    const void *d = npu_value_data(v); /* may be unaligned (borrowed) */
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += npu_f32_at(d, i) != (float)i * 0.5f + 1.0f;
    CHECK_EQ_INT(0, bad);
}

static void
test_forms(void)
{
    static const enum form forms[] = {RAW, RAW_TWICE, FLOAT_DATA, RAW_PADDED_LEN, GRAPH_TWICE};
    for (size_t f = 0; f < NPU_ARRAY_SIZE(forms); f++) {
        struct buf m = make_model(64, 0, forms[f]);
        struct npu_graph *g = NULL;
        CHECK_EQ_INT(NPU_OK, npu_onnx_import(m.p, m.n, NULL, &g));
        if (g)
            check_w(g, 64);
        npu_graph_free(g);
        free(m.p);
    }
}

/* From a file: every alignment of the payload. A large one stays in the mapping at any
 * alignment; a small one (under the importer's 1 KiB) only when aligned, else it is copied. */
static void
test_file(const char *dir, int N)
{
    int borrowed = 0, copied = 0, unaligned = 0;
    for (int pad = 0; pad < 4; pad++) {
        struct buf m = make_model(N, pad, RAW);
        char path[4096];
        snprintf(path, sizeof(path), "%s/strip_%d.onnx", dir, pad);
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(m.p, 1, m.n, f) == m.n);
        if (f)
            fclose(f);
        struct npu_graph *g = NULL;
        CHECK_EQ_INT(NPU_OK, npu_onnx_load(path, NULL, &g));
        if (g) {
            check_w(g, N);
            struct npu_value *w = npu_graph_find_value(g, "w");
            unaligned += w && !npu_value_data_aligned(w);
            /* the graph's own memory: a copied payload is in it, a borrowed one is not */
            if (N >= 4096 && npu_graph_arena_bytes(g) < (size_t)N * 4)
                borrowed++;
            else
                copied++;
            /* the aligned copy a CPU kernel asks for: same values, aligned, kept */
            if (w && !npu_value_data_aligned(w)) {
                const void *a = npu_value_aligned_data(g, w);
                CHECK(a && npu_value_data_aligned(w) && a == npu_value_data(w));
                check_w(g, N);
            }
        }
        npu_graph_free(g);
        unlink(path);
        free(m.p);
    }
    /* of four consecutive offsets exactly one is 4-byte aligned */
    if (N >= 4096) { /* 16 KB and more: always borrowed, three of the four unaligned */
        CHECK_EQ_INT(4, borrowed);
        CHECK_EQ_INT(0, copied);
        CHECK_EQ_INT(3, unaligned);
    } else { /* small: the three unaligned ones copied */
        CHECK_EQ_INT(0, unaligned);
    }
}

static int nerrors;

static void
count_errors(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)domain;
    (void)msg;
    (void)user;
    nerrors += level == NPU_LOG_ERROR;
}

/* One import of a hostile model: a graph, or an error with a logged reason. */
static void
import_one(const void *p, size_t n, int *ok, int *refused)
{
    struct npu_graph *g = NULL;
    nerrors = 0;
    if (npu_onnx_import(p, n, NULL, &g) == NPU_OK) {
        (*ok)++;
        CHECK(g != NULL);
    } else {
        (*refused)++;
        CHECK(g == NULL && nerrors > 0);
    }
    npu_graph_free(g);
}

/* Every truncation and single-byte corruptions: a graph or an error, never a crash. */
static void
test_hostile(void)
{
    struct buf m = make_model(16, 1, RAW);
    uint8_t *c = malloc(m.n);
    int ok = 0, refused = 0;
    npu_log_set_handler(count_errors, NULL);
    for (size_t len = 0; len < m.n; len++)
        import_one(m.p, len, &ok, &refused);
    static const uint8_t vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
    for (size_t i = 0; i < m.n; i++)
        for (size_t k = 0; k < NPU_ARRAY_SIZE(vals); k++) {
            memcpy(c, m.p, m.n);
            c[i] = vals[k];
            import_one(c, m.n, &ok, &refused);
        }
    npu_log_set_handler(NULL, NULL);
    CHECK(refused > 0 && ok > 0);
    free(c);
    free(m.p);
}

int
main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    test_forms();
    test_file(dir, 1 << 18); /* 1 MB of weights */
    test_file(dir, 64);
    test_hostile();
    return npu_test_done("onnx_strip_test");
}
