/* SPDX-License-Identifier: MIT */
/*
 * onnx_unaligned_test.c: fp32 initializers borrowed from the model file at any alignment
 * (npu-onnx.c), read by every kind of constant reader. One model is written twice, byte by
 * byte: once with every initializer's payload 4-byte aligned in the file, once with each at
 * offset 1, 2 or 3 mod 4 (a doc_string before raw_data shifts it; nothing else differs). The
 * model: a patch-embedding MatMul + bias plus a position constant starting a residual
 * stream, a layer norm, a MatMul + bias added back, a second layer norm (non-zero beta,
 * folded into the next bias) and a MatMul + bias (the weight packer, the layer-norm
 * centring in place and of a copy, the beta fold); a
 * Conv with weight and bias; a Gather from a constant table and a Mod by a constant (ops
 * only the CPU runs). Checked: the unaligned payloads really are borrowed unaligned; the
 * compiled programs (cost and all-supported partitions) are byte-identical to the aligned
 * model's; the CPU executor's outputs are byte-identical, and the Gather and Mod outputs
 * equal their closed forms. The sanitizer build (-fsanitize=alignment) runs this too.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "npu-test-pb.h"
#include "npu-test.h"
#include "npu/npu-build.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"
#include "npu/npu-npub.h"
#include "npu/npu-onnx.h"

#define D 256 /* model width: biases and layer-norm vectors of 1 KiB, the importer's minimum */
#define T 4   /* tokens */
#define CI 64 /* Conv input channels */
#define NIDX 3

enum { W0, B0, POS, G1, BE1, W1, B1, G2, BE2, W2, B2, CW, CB, TAB, MC, NINIT };

struct init {
    const char *name;
    int ndim;
    int64_t dims[4];
    float *v;
    size_t n;
};

static struct init inits[NINIT] = {
    [W0] = {"w0", 2, {D, D}}, [B0] = {"b0", 1, {D}},          [POS] = {"pos", 3, {1, T, D}},
    [G1] = {"ln1.g", 1, {D}}, [BE1] = {"ln1.b", 1, {D}},      [W1] = {"w1", 2, {D, D}},
    [B1] = {"b1", 1, {D}},    [G2] = {"ln2.g", 1, {D}},       [BE2] = {"ln2.b", 1, {D}},
    [W2] = {"w2", 2, {D, D}}, [B2] = {"b2", 1, {D}},          [CW] = {"cw", 4, {D, CI, 1, 1}},
    [CB] = {"cb", 1, {D}},    [TAB] = {"table", 2, {64, 16}}, [MC] = {"mc", 1, {D}},
};

static uint32_t rng = 12345;

static float
rnd(void) /* [-0.5, 0.5), distinct bit patterns for memmem */
{
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 16777216.0f - 0.5f;
}

static void
make_data(void)
{
    for (int i = 0; i < NINIT; i++) {
        struct init *t = &inits[i];
        t->n = 1;
        for (int k = 0; k < t->ndim; k++)
            t->n *= (size_t)t->dims[k];
        t->v = malloc(t->n * sizeof(float));
        for (size_t k = 0; k < t->n; k++) {
            float r = rnd();
            t->v[k] = i == G1 || i == G2                         ? 1.0f + r * 0.25f
                      : i == MC                                  ? 0.75f + r
                      : i == W0 || i == W1 || i == W2 || i == CW ? r * 0.125f
                                                                 : r;
        }
    }
}

static void
value_info(struct buf *g, int field, const char *name, int elem, int ndim, const int64_t *dims)
{
    struct buf vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (int k = 0; k < ndim; k++) {
        struct buf dim = {0};
        int_field(&dim, 1, (uint64_t)dims[k]);
        msg_field(&sh, 1, &dim);
    }
    int_field(&tt, 1, (uint64_t)elem);
    msg_field(&tt, 2, &sh);
    msg_field(&tp, 1, &tt);
    str_field(&vi, 1, name);
    msg_field(&vi, 2, &tp);
    msg_field(g, field, &vi);
}

static void
attr_int(struct buf *node, const char *name, int64_t v)
{
    struct buf a = {0};
    str_field(&a, 1, name);
    int_field(&a, 3, (uint64_t)v);
    int_field(&a, 20, 2); /* INT */
    msg_field(node, 5, &a);
}

static void
attr_float(struct buf *node, const char *name, float v)
{
    struct buf a = {0};
    str_field(&a, 1, name);
    tag(&a, 2, 5);
    put(&a, &v, 4);
    int_field(&a, 20, 1); /* FLOAT */
    msg_field(node, 5, &a);
}

/* A node of op with up to three inputs and one output; attributes by the caller's hook. */
static void
node(struct buf *g, const char *op, const char *a, const char *b, const char *c, const char *y,
     void (*attrs)(struct buf *))
{
    struct buf n = {0};
    str_field(&n, 1, a);
    if (b)
        str_field(&n, 1, b);
    if (c)
        str_field(&n, 1, c);
    str_field(&n, 2, y);
    str_field(&n, 3, y);
    str_field(&n, 4, op);
    if (attrs)
        attrs(&n);
    msg_field(g, 1, &n);
}

static void
ln_attrs(struct buf *n)
{
    attr_int(n, "axis", -1);
    attr_float(n, "epsilon", 1e-5f);
}

static void
gather_attrs(struct buf *n)
{
    attr_int(n, "axis", 0);
}

static void
mod_attrs(struct buf *n)
{
    attr_int(n, "fmod", 1);
}

/* The model with initializer i preceded by a doc_string of pad[i] - 2 bytes (pad[i] 0: none),
 * which moves its payload and every later one by pad[i] bytes. */
static struct buf
make_model(const int *pad)
{
    struct buf m = {0}, g = {0}, os = {0};
    node(&g, "MatMul", "x", "w0", NULL, "p0", NULL);
    node(&g, "Add", "p0", "b0", NULL, "q0", NULL);
    node(&g, "Add", "q0", "pos", NULL, "r0", NULL);
    node(&g, "LayerNormalization", "r0", "ln1.g", "ln1.b", "h1", ln_attrs);
    node(&g, "MatMul", "h1", "w1", NULL, "p1", NULL);
    node(&g, "Add", "p1", "b1", NULL, "m1", NULL);
    node(&g, "Add", "r0", "m1", NULL, "r1", NULL);
    node(&g, "LayerNormalization", "r1", "ln2.g", "ln2.b", "h2", ln_attrs);
    node(&g, "MatMul", "h2", "w2", NULL, "p2", NULL);
    node(&g, "Add", "p2", "b2", NULL, "y1", NULL);
    node(&g, "Conv", "c", "cw", "cb", "y2", NULL);
    node(&g, "Gather", "table", "idx", NULL, "y3", gather_attrs);
    node(&g, "Mod", "x", "mc", NULL, "y4", mod_attrs);
    str_field(&g, 2, "unaligned");
    for (int i = 0; i < NINIT; i++) {
        struct buf t = {0};
        for (int k = 0; k < inits[i].ndim; k++)
            int_field(&t, 1, (uint64_t)inits[i].dims[k]);
        int_field(&t, 2, 1); /* FLOAT */
        str_field(&t, 8, inits[i].name);
        if (pad[i]) {
            char doc[8] = "xxxxxxx";
            bytes_field(&t, 12, doc, (size_t)pad[i] - 2);
        }
        bytes_field(&t, 9, inits[i].v, inits[i].n * sizeof(float));
        msg_field(&g, 5, &t);
    }
    const int64_t xd[3] = {1, T, D}, cd[4] = {1, CI, 2, 2}, id[1] = {NIDX};
    const int64_t y1d[3] = {1, T, D}, y2d[4] = {1, D, 2, 2}, y3d[2] = {NIDX, 16};
    value_info(&g, 11, "x", 1, 3, xd);
    value_info(&g, 11, "c", 1, 4, cd);
    value_info(&g, 11, "idx", 7, 1, id);
    value_info(&g, 12, "y1", 1, 3, y1d);
    value_info(&g, 12, "y2", 1, 4, y2d);
    value_info(&g, 12, "y3", 1, 2, y3d);
    value_info(&g, 12, "y4", 1, 3, xd);
    int_field(&m, 1, 8); /* ir_version */
    int_field(&os, 2, 17);
    msg_field(&m, 8, &os);
    msg_field(&m, 7, &g);
    return m;
}

static long
payload_offset(const struct buf *m, int i)
{
    const void *p = memmem(m->p, m->n, inits[i].v, inits[i].n * sizeof(float));
    return p ? (long)((const uint8_t *)p - m->p) : -1;
}

/* Writes the model with every payload at offset want(i) mod 4 into path. */
static bool
write_model(const char *path, bool misaligned)
{
    static const int shift_of[4] = {0, 5, 2, 3}; /* doc_string sizes moving by 0..3 mod 4 */
    int pad[NINIT] = {0}, s[NINIT] = {0};
    struct buf m = {0};
    bool ok = false;
    for (int iter = 0; iter < 64 && !ok; iter++) {
        free(m.p);
        for (int i = 0; i < NINIT; i++)
            pad[i] = shift_of[s[i] & 3];
        m = make_model(pad);
        ok = true;
        for (int i = 0; i < NINIT && ok; i++) {
            long off = payload_offset(&m, i), want = misaligned ? 1 + i % 3 : 0;
            if (off < 0)
                break;
            if (off % 4 != want) {
                s[i] += (int)((want - off % 4 + 4) % 4); /* moves this one and the later ones */
                ok = false;
            }
        }
    }
    FILE *f = fopen(path, "wb");
    bool w = f && fwrite(m.p, 1, m.n, f) == m.n;
    if (f)
        fclose(f);
    free(m.p);
    CHECK(ok && w);
    return ok && w;
}

/* Every initializer of the imported model: its bytes, its alignment, and no copy made. */
static void
check_import(const char *path, bool misaligned)
{
    struct npu_graph *g = NULL;
    CHECK_EQ_INT(NPU_OK, npu_onnx_load(path, NULL, &g));
    if (!g)
        return;
    size_t total = 0;
    int unaligned = 0;
    for (int i = 0; i < NINIT; i++) {
        struct npu_value *v = npu_graph_find_value(g, inits[i].name);
        CHECK(v && v->kind == NPU_VALUE_CONST && (size_t)npu_value_numel(v) == inits[i].n);
        if (!v)
            continue;
        CHECK(!memcmp(npu_value_data(v), inits[i].v, inits[i].n * sizeof(float)));
        unaligned += !npu_value_data_aligned(v);
        total += inits[i].n * sizeof(float);
    }
    CHECK_EQ_INT(misaligned ? NINIT : 0, unaligned);
    /* borrowed from the mapping: the graph's own memory holds none of the payloads */
    CHECK(npu_graph_arena_bytes(g) < total / 2);
    npu_graph_free(g);
}

static void
compile_bytes(const char *path, enum npu_partition_mode mode, void **buf, size_t *len)
{
    struct npu_build_options o = {.no_cache = true, .partition = mode, .cpu_threads = 1};
    struct npu_built *b = NULL;
    *buf = NULL;
    *len = 0;
    CHECK_EQ_INT(NPU_OK, npu_build(path, &o, &b));
    if (b)
        CHECK_EQ_INT(NPU_OK, npu_npub_encode(b->prog, NULL, buf, len));
    npu_built_free(b);
}

static void
check_programs(const char *aligned, const char *misaligned)
{
    static const enum npu_partition_mode modes[] = {NPU_PARTITION_COST, NPU_PARTITION_SUPPORTED};
    for (size_t k = 0; k < NPU_ARRAY_SIZE(modes); k++) {
        void *a, *b;
        size_t na, nb;
        compile_bytes(aligned, modes[k], &a, &na);
        compile_bytes(misaligned, modes[k], &b, &nb);
        CHECK(na > 0 && na == nb && !memcmp(a, b, na));
        free(a);
        free(b);
    }
}

#define NOUT 4

/* The CPU executor's outputs for fixed inputs, copied into out[] (malloc'd). */
static void
run_cpu(const char *path, void *out[NOUT], size_t nbytes[NOUT])
{
    static float x[T * D], c[CI * 4];
    static int64_t idx[NIDX] = {5, 0, 63};
    for (int i = 0; i < T * D; i++)
        x[i] = 4.0f * sinf((float)i * 0.37f);
    for (int i = 0; i < CI * 4; i++)
        c[i] = cosf((float)i * 0.11f);
    struct npu_tensor in[3] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {1, T, D}, .data = x},
        {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, CI, 2, 2}, .data = c},
        {.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {NIDX}, .data = idx},
    };
    struct npu_model_options mo = {.backend = "cpu", .cpu_threads = 1};
    struct npu_model *m = NULL;
    struct npu_session *s = NULL;
    struct npu_tensor o[NOUT];
    for (int i = 0; i < NOUT; i++) {
        out[i] = NULL;
        nbytes[i] = 0;
    }
    CHECK_EQ_INT(NPU_OK, npu_model_load(path, &mo, &m));
    if (m)
        CHECK_EQ_INT(NPU_OK, npu_session_create(m, 0, &s));
    if (s && npu_session_run(s, in, 3, o, NOUT, NULL) == NPU_OK) {
        for (int i = 0; i < NOUT; i++) {
            nbytes[i] = (size_t)npu_tensor_nbytes(&o[i]);
            out[i] = malloc(nbytes[i]);
            memcpy(out[i], o[i].data, nbytes[i]);
        }
        /* the ops only the CPU runs, by their closed forms: rows of the table, fmod */
        int bad = 0;
        for (int r = 0; r < NIDX; r++)
            bad += memcmp((const float *)out[2] + r * 16, inits[TAB].v + idx[r] * 16, 64) != 0;
        for (int i = 0; i < T * D; i++)
            bad += ((const float *)out[3])[i] != fmodf(x[i], inits[MC].v[i % D]);
        CHECK_EQ_INT(0, bad);
    } else {
        CHECK(!"the CPU executor ran the model");
    }
    npu_session_destroy(s);
    npu_model_free(m);
}

static void
check_cpu(const char *aligned, const char *misaligned)
{
    void *a[NOUT], *b[NOUT];
    size_t na[NOUT], nb[NOUT];
    run_cpu(aligned, a, na);
    run_cpu(misaligned, b, nb);
    for (int i = 0; i < NOUT; i++) {
        CHECK(a[i] && b[i] && na[i] == nb[i] && !memcmp(a[i], b[i], na[i]));
        free(a[i]);
        free(b[i]);
    }
}

int
main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char aligned[4096], misaligned[4096];
    snprintf(aligned, sizeof(aligned), "%s/unaligned_test_a.onnx", dir);
    snprintf(misaligned, sizeof(misaligned), "%s/unaligned_test_u.onnx", dir);
    make_data();
    if (write_model(aligned, false) && write_model(misaligned, true)) {
        check_import(aligned, false);
        check_import(misaligned, true);
        check_programs(aligned, misaligned);
        check_cpu(aligned, misaligned);
    }
    unlink(aligned);
    unlink(misaligned);
    for (int i = 0; i < NINIT; i++)
        free(inits[i].v);
    return npu_test_done("onnx_unaligned_test");
}
