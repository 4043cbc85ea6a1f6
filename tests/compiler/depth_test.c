/* SPDX-License-Identifier: MIT */
/*
 * depth_test.c: deeply nested input must be refused with an error naming the
 * depth, never overflow the stack (issue 17, item 1). Every parse runs on a
 * thread with a 256 KB stack. The ONNX models are written here byte by byte:
 * `If` nodes whose then_branch holds the next `If`, 3,000 deep (113 KB, which
 * crashed protobuf-c's recursive decoder), 32 deep (the limit: must decode)
 * and sequence types nested 3,000 deep in a graph input. The IR text parser
 * and the .npub reader do not recurse; their deep or huge-count inputs are
 * checked the same way.
 */
#include <pthread.h>

#include "npu-test.h"
#include "npu/npu-ir.h"
#include "npu/npu-npub.h"
#include "npu/npu-onnx.h"

/* ---- a protobuf writer that prepends (inner messages first) ---- */

struct pbw {
    uint8_t *buf;
    size_t cap, pos; /* content is buf[pos .. cap) */
};

static void
pre_bytes(struct pbw *w, const void *p, size_t n)
{
    while (w->pos < n) {
        size_t ncap = w->cap * 2, used = w->cap - w->pos;
        uint8_t *nb = malloc(ncap);
        if (!nb)
            abort();
        memcpy(nb + ncap - used, w->buf + w->pos, used);
        free(w->buf);
        w->buf = nb;
        w->pos = ncap - used;
        w->cap = ncap;
    }
    w->pos -= n;
    memcpy(w->buf + w->pos, p, n);
}

static void
pre_varint(struct pbw *w, uint64_t v)
{
    uint8_t t[10];
    int n = 0;
    do {
        t[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            t[n] |= 0x80;
        n++;
    } while (v);
    pre_bytes(w, t, (size_t)n);
}

/* Wraps everything after `mark` (bytes from the end) as field f. */
static void
pre_wrap(struct pbw *w, uint32_t f, size_t mark)
{
    pre_varint(w, (w->cap - w->pos) - mark);
    pre_varint(w, ((uint64_t)f << 3) | 2);
}

static size_t
mark(const struct pbw *w)
{
    return w->cap - w->pos;
}

static void
pre_str(struct pbw *w, uint32_t f, const char *s)
{
    size_t m = mark(w);
    pre_bytes(w, s, strlen(s));
    pre_wrap(w, f, m);
}

static void
pre_int(struct pbw *w, uint32_t f, uint64_t v)
{
    pre_varint(w, v);
    pre_varint(w, (uint64_t)f << 3);
}

/* Finishes a ModelProto around the GraphProto content written so far. */
static uint8_t *
finish_model(struct pbw *w, size_t *len)
{
    pre_wrap(w, 7, 0); /* ModelProto.graph */
    size_t m = mark(w);
    pre_int(w, 2, 13); /* OperatorSetIdProto.version */
    pre_wrap(w, 8, m); /* ModelProto.opset_import */
    pre_int(w, 1, 8);  /* ir_version */
    *len = w->cap - w->pos;
    uint8_t *out = malloc(*len);
    if (!out)
        abort();
    memcpy(out, w->buf + w->pos, *len);
    free(w->buf);
    return out;
}

static uint8_t *
nested_if_model(int levels, size_t *len)
{
    struct pbw w = {.buf = malloc(4096), .cap = 4096, .pos = 4096};
    pre_str(&w, 2, "g_in"); /* innermost graph: a name only */
    for (int i = 0; i < levels - 1; i++) {
        /* graph content so far -> AttributeProto.g */
        pre_wrap(&w, 6, 0);
        pre_int(&w, 20, 5); /* type GRAPH */
        pre_str(&w, 1, "then_branch");
        pre_wrap(&w, 5, 0); /* NodeProto.attribute */
        pre_str(&w, 4, "If");
        pre_str(&w, 2, "y");
        pre_str(&w, 1, "c");
        pre_wrap(&w, 1, 0); /* GraphProto.node */
        pre_str(&w, 2, "g");
    }
    return finish_model(&w, len);
}

static uint8_t *
nested_type_model(int levels, size_t *len)
{
    struct pbw w = {.buf = malloc(4096), .cap = 4096, .pos = 4096};
    pre_int(&w, 1, 1);  /* Tensor.elem_type FLOAT */
    pre_wrap(&w, 1, 0); /* TypeProto.tensor_type */
    for (int i = 0; i < levels; i++) {
        pre_wrap(&w, 1, 0); /* Sequence.elem_type */
        pre_wrap(&w, 4, 0); /* TypeProto.sequence_type */
    }
    pre_wrap(&w, 2, 0); /* ValueInfoProto.type */
    pre_str(&w, 1, "x");
    pre_wrap(&w, 11, 0); /* GraphProto.input */
    pre_str(&w, 2, "g");
    return finish_model(&w, len);
}

/* ---- running on a small stack, with the log captured ---- */

static char last_err[512];

static void
capture(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)domain;
    (void)user;
    if (level == NPU_LOG_ERROR && !last_err[0])
        snprintf(last_err, sizeof(last_err), "%s", msg);
}

struct job {
    int kind; /* 0 ONNX, 1 IR text, 2 .npub */
    const void *data;
    size_t len;
    enum npu_status st;
};

static void *
run_job(void *arg)
{
    struct job *j = arg;
    struct npu_graph *g = NULL;
    if (j->kind == 0) {
        j->st = npu_onnx_import(j->data, j->len, NULL, &g);
    } else if (j->kind == 1) {
        j->st = npu_ir_parse(j->data, j->len, NULL, 0, true, &g);
    } else {
        struct npu_npub *a = NULL;
        char err[256];
        j->st = npu_npub_decode(j->data, j->len, &a, err, sizeof(err));
        if (j->st && !last_err[0])
            snprintf(last_err, sizeof(last_err), "%s", err);
        npu_npub_free(a);
    }
    npu_graph_free(g);
    return NULL;
}

static enum npu_status
run_small_stack(int kind, const void *data, size_t len)
{
    struct job j = {.kind = kind, .data = data, .len = len};
    pthread_attr_t at;
    pthread_t t;
    last_err[0] = 0;
    pthread_attr_init(&at);
    CHECK(pthread_attr_setstacksize(&at, 256 * 1024) == 0);
    CHECK(pthread_create(&t, &at, run_job, &j) == 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&at);
    return j.st;
}

/* depth_test --write-seeds DIR: the deep models as fuzzer seeds. */
static int
write_seed(const char *dir, const char *name, uint8_t *m, size_t len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int bad = !f || fwrite(m, 1, len, f) != len;
    if (f && fclose(f))
        bad = 1;
    free(m);
    return bad;
}

int
main(int argc, char **argv)
{
    size_t len;
    if (argc == 3 && !strcmp(argv[1], "--write-seeds")) {
        int bad = 0;
        uint8_t *m = nested_if_model(3000, &len);
        bad |= write_seed(argv[2], "deep_if_3000.onnx", m, len);
        m = nested_if_model(NPU_ONNX_MAX_GRAPH_DEPTH, &len);
        bad |= write_seed(argv[2], "deep_if_32.onnx", m, len);
        m = nested_if_model(NPU_ONNX_MAX_GRAPH_DEPTH + 1, &len);
        bad |= write_seed(argv[2], "deep_if_33.onnx", m, len);
        m = nested_type_model(3000, &len);
        bad |= write_seed(argv[2], "deep_seq_type_3000.onnx", m, len);
        m = nested_type_model(200, &len);
        bad |= write_seed(argv[2], "deep_seq_type_200.onnx", m, len);
        return bad;
    }
    npu_log_set_handler(capture, NULL);

    /* 3,000 levels of If: refused before decoding, naming the depth. */
    uint8_t *m = nested_if_model(3000, &len);
    CHECK(len > 100000);
    CHECK_EQ_INT(NPU_ERR_UNSUPPORTED, run_small_stack(0, m, len));
    CHECK(strstr(last_err, "subgraphs 3000 deep") != NULL);
    CHECK(strstr(last_err, "limit is 32") != NULL);
    free(m);

    /* One over the limit is refused; at the limit the model decodes (and is
     * refused later for its 8-deep If limit, without crashing). */
    m = nested_if_model(NPU_ONNX_MAX_GRAPH_DEPTH + 1, &len);
    CHECK_EQ_INT(NPU_ERR_UNSUPPORTED, run_small_stack(0, m, len));
    CHECK(strstr(last_err, "subgraphs 33 deep") != NULL);
    free(m);
    m = nested_if_model(NPU_ONNX_MAX_GRAPH_DEPTH, &len);
    CHECK(run_small_stack(0, m, len) != NPU_OK);
    CHECK(strstr(last_err, "subgraphs") == NULL);
    free(m);

    /* Types nested 3,000 deep in a graph input. */
    m = nested_type_model(3000, &len);
    CHECK_EQ_INT(NPU_ERR_UNSUPPORTED, run_small_stack(0, m, len));
    CHECK(strstr(last_err, "protobuf messages") != NULL);
    free(m);

    /* Just under the message limit (graph 1, value info 2, type 3, then two
     * messages per sequence level, the tensor type last): decodes on the
     * small stack; one level more is refused. */
    int lv = (NPU_ONNX_MAX_MESSAGE_DEPTH - 4) / 2;
    m = nested_type_model(lv, &len);
    run_small_stack(0, m, len);
    CHECK(strstr(last_err, "protobuf messages") == NULL);
    free(m);
    m = nested_type_model(lv + 1, &len);
    CHECK_EQ_INT(NPU_ERR_UNSUPPORTED, run_small_stack(0, m, len));
    CHECK(strstr(last_err, "protobuf messages") != NULL);
    free(m);

    /* A truncated deep model: the scan stops quietly, the decoder reports it. */
    m = nested_if_model(3000, &len);
    CHECK(run_small_stack(0, m, len / 2) != NPU_OK);
    free(m);

    /* IR text: 100,000 opening braces and a 100,000-entry attribute list are
     * parse errors, not crashes (the parser is iterative). */
    size_t n = 100000;
    char *t = malloc(n + 256);
    int k = snprintf(t, 256, "graph \"g\" opset=17 {\n  %%y: f32[1] = Relu(%%x) ");
    memset(t + k, '{', n);
    memcpy(t + k + n, "\n}\n", 4);
    CHECK(run_small_stack(1, t, strlen(t)) != NPU_OK);
    free(t);
    t = malloc(n * 4 + 256);
    k = snprintf(t, 256,
                 "graph \"g\" opset=17 {\n  %%x: input f32[1]\n  %%y: f32[1] = Relu(%%x) {a=[");
    for (size_t i = 0; i < n; i++)
        memcpy(t + k + 2 * i, "1,", 2);
    memcpy(t + k + 2 * n - 1, "]}\n}\n", 6);
    CHECK(run_small_stack(1, t, strlen(t)) != NPU_OK);
    free(t);

    /* .npub: a header that claims huge counts, and garbage. */
    uint8_t hdr[4096] = {'N', 'P', 'U', 'B'};
    memset(hdr + 4, 0xff, sizeof(hdr) - 4);
    CHECK(run_small_stack(2, hdr, sizeof(hdr)) != NPU_OK);
    CHECK(last_err[0] != 0);

    return npu_test_done("depth");
}
