/* SPDX-License-Identifier: MIT */
/*
 * test-route.c: npu_prog_session_route_output, an output's fp16 NC1HWC2 bytes copied into
 * another session's state input instead of converted to the host, on the simulator with
 * hand-made programs of CONVERT and CPU steps only:
 *   source: x (a state input [K, S, D], fp16) -CONVERT-> y (output 0); x2 (an ACT input)
 *           -CONVERT-> z (output 1) -Relu-> r (output 2);
 *   dest:   cache [K, T, D] (state, fp16), act (ACT input) and c32 (state held as fp32),
 *           each converted to an output so that a run reads them back.
 * Checked: each refusal (output out of range, an output read by a later step or made by a
 * CPU step, destination input out of range / not a state / another element type, an axis
 * out of range, an element count that is not a block along the axis, start past the end)
 * returns an error whose message names the problem and changes nothing (the earlier route
 * and the destination's state stay as they were); the routed bytes equal the output
 * converted and written with npu_prog_session_write_state, and the host's f16(x) at the
 * positions, for every pair of view orders (NCHW / HWC, channels not a multiple of C2);
 * undoing the route gives the output back. Lifetimes: a route moved to another destination
 * leaves the first one free to go; a destination destroyed under a route makes each later run
 * of the source fail with a message (never write the freed session) until the output is
 * routed again or the route undone; a source destroyed first leaves its destination whole
 * (ASan checks both orders). A micro-benchmark prints the CPU time of one
 * GPT-2 small sized copy ([12, 128, 64] into [12, 256, 64]); nothing asserts on it.
 * npu_prog_session_raw_output on the same source: y left in the NPU layout (data NULL), its
 * argmax read there (npu_prog_session_output_argmax) equal to the scan over f16(x), for both
 * view orders, with the maximum in the last channel group and a tie before it; the refusals
 * (an output read by a later step, out of range, routed; a raw output routed; the argmax of
 * an output not kept raw); undone: y converted again. An int8 output (a w8a8 tensor, which
 * the int8 argmax lets through as one conversion's output) routed into an int8 state of another
 * scale or zero point is refused naming both; of the same ones, its rows are the output's values.
 */
#include <time.h>

#include "npu-fp16.h"
#include "npu-test-log.h"
#include "npu-test.h"
#include "npu/npu-device.h"
#include "npu/npu-program-exec.h"

struct dims {
    int K, S, T, D;
};

/* An fp32 [K, R, D] tensor, neither input nor output (placed by the callers below). */
static struct npu_prog_tensor
tensor3(const char *name, int64_t K, int64_t R, int64_t D)
{
    struct npu_prog_tensor t;
    memset(&t, 0, sizeof(t));
    t.name = name;
    t.t.dtype = NPU_DTYPE_FP32;
    t.t.ndim = 3;
    t.t.dims[0] = K;
    t.t.dims[1] = R;
    t.t.dims[2] = D;
    t.io_input = t.io_output = -1;
    return t;
}

static struct npu_prog_tensor
npu_t(const char *name, uint32_t buffer, uint64_t offset, int64_t K, int64_t R, int64_t D,
      enum npu_dtype md, uint32_t order)
{
    struct npu_prog_tensor t = tensor3(name, K, R, D);
    t.place = NPU_PLACE_NPU;
    t.buffer = buffer;
    t.offset = offset;
    t.layout = NPU_LAYOUT_NC1HWC2;
    t.mem_dtype = md;
    t.npu_order = order;
    if (order == NPU_VIEW_HWC) { /* a matrix [K x R, D] */
        t.npu_c = (uint32_t)D;
        t.npu_h = (uint32_t)(K * R);
        t.npu_w = 1;
    } else { /* a feature map [1, K, R, D] */
        t.npu_c = (uint32_t)K;
        t.npu_h = (uint32_t)R;
        t.npu_w = (uint32_t)D;
    }
    t.bytes = npu_prog_tensor_need(&t);
    return t;
}

static struct npu_prog_tensor
host_t(const char *name, uint64_t offset, int64_t K, int64_t R, int64_t D)
{
    struct npu_prog_tensor t = tensor3(name, K, R, D);
    t.place = NPU_PLACE_HOST;
    t.offset = offset;
    t.layout = NPU_LAYOUT_NCHW;
    t.mem_dtype = NPU_DTYPE_FP32;
    t.bytes = (uint64_t)(K * R * D) * 4;
    return t;
}

static uint64_t
al(uint64_t n)
{
    return (n + 63) & ~(uint64_t)63;
}

/* ---- the programs ---------------------------------------------------------------- */

/* A hand-made program of three single-input, single-output steps (CONVERT, or a CPU step
 * where op is not NPU_OP_NONE) over up to six tensors. */
struct hprog {
    struct npu_program p;
    struct npu_prog_tensor t[6];
    struct npu_prog_step st[3];
    int in[3], out[3], io[3][2];
};

/* The steps io[i][0] -> io[i][1] named nm[i], and the program over the tensors t[0 .. nt),
 * inputs in[0 .. nin) and outputs out[0 .. nout) (set by the caller; their io_input /
 * io_output set here). */
static void
hprog_finish(struct hprog *h, int nt, const int io[3][2], const char *const nm[3],
             const enum npu_op op[3], int nin, int nout, uint64_t act, uint64_t host,
             uint64_t state)
{
    for (int i = 0; i < nin; i++)
        h->t[h->in[i]].io_input = i;
    for (int i = 0; i < nout; i++)
        h->t[h->out[i]].io_output = i;
    for (int i = 0; i < 3; i++) {
        h->io[i][0] = io[i][0];
        h->io[i][1] = io[i][1];
        h->st[i] =
            (struct npu_prog_step){.kind = op[i] != NPU_OP_NONE ? NPU_STEP_CPU : NPU_STEP_CONVERT,
                                   .op = op[i],
                                   .in = &h->io[i][0],
                                   .nin = 1,
                                   .out = &h->io[i][1],
                                   .nout = 1,
                                   .name = nm[i]};
    }
    h->p = (struct npu_program){.version = NPU_PROGRAM_VERSION,
                                .tensors = h->t,
                                .n_tensors = nt,
                                .steps = h->st,
                                .n_steps = 3,
                                .inputs = h->in,
                                .n_inputs = nin,
                                .outputs = h->out,
                                .n_outputs = nout,
                                .act_bytes = act,
                                .host_bytes = host,
                                .state_bytes = state,
                                .producer = "test-route"};
}

/* The source: x (a state input [K, S, D], fp16) -CONVERT-> y (output 0); x2 (an ACT input)
 * -CONVERT-> z (output 1) -Relu-> r (output 2). */
enum { SX, SY, SX2, SZ, SR, S_COUNT };
enum { X2K = 1, X2R = 2, X2D = 8 };

static void
src_make(struct hprog *h, struct dims d, uint32_t order)
{
    memset(h, 0, sizeof(*h));
    h->t[SX] = npu_t("x", NPU_BUF_STATE, 0, d.K, d.S, d.D, NPU_DTYPE_FP16, order);
    h->t[SX2] = npu_t("x2", NPU_BUF_ACT, 0, X2K, X2R, X2D, NPU_DTYPE_FP16, NPU_VIEW_NCHW);
    uint64_t hb = 0;
    h->t[SY] = host_t("y", hb, d.K, d.S, d.D);
    hb += al(h->t[SY].bytes);
    h->t[SZ] = host_t("z", hb, X2K, X2R, X2D);
    hb += al(h->t[SZ].bytes);
    h->t[SR] = host_t("r", hb, X2K, X2R, X2D);
    hb += al(h->t[SR].bytes);
    h->in[0] = SX;
    h->in[1] = SX2;
    h->out[0] = SY;
    h->out[1] = SZ;
    h->out[2] = SR;
    static const char *const nm[3] = {"x.to_host", "x2.to_host", "relu"};
    static const enum npu_op op[3] = {NPU_OP_NONE, NPU_OP_NONE, NPU_OP_RELU};
    const int io[3][2] = {{SX, SY}, {SX2, SZ}, {SZ, SR}};
    hprog_finish(h, S_COUNT, io, nm, op, 2, 3, al(h->t[SX2].bytes), hb, al(h->t[SX].bytes));
}

/* The destination: cache [K, T, D] (state, fp16), act (ACT input) and c32 (state held as
 * fp32), each converted to an output so that a run reads them back. */
enum { DC, DCO, DA, DAO, D32, D32O, D_COUNT };

static void
dst_make(struct hprog *h, struct dims d, uint32_t order)
{
    memset(h, 0, sizeof(*h));
    h->t[DC] = npu_t("cache", NPU_BUF_STATE, 0, d.K, d.T, d.D, NPU_DTYPE_FP16, order);
    h->t[D32] =
        npu_t("c32", NPU_BUF_STATE, al(h->t[DC].bytes), d.K, d.T, d.D, NPU_DTYPE_FP32, order);
    h->t[DA] = npu_t("act", NPU_BUF_ACT, 0, d.K, d.T, d.D, NPU_DTYPE_FP16, order);
    uint64_t hb = 0;
    const int io[3][2] = {{DC, DCO}, {DA, DAO}, {D32, D32O}};
    static const char *const nm[3] = {"cache.out", "act.out", "c32.out"};
    static const enum npu_op op[3] = {NPU_OP_NONE, NPU_OP_NONE, NPU_OP_NONE};
    for (int i = 0; i < 3; i++) {
        h->t[io[i][1]] = host_t(nm[i], hb, d.K, d.T, d.D);
        hb += al(h->t[io[i][1]].bytes);
        h->in[i] = io[i][0];
        h->out[i] = io[i][1];
    }
    hprog_finish(h, D_COUNT, io, nm, op, 3, 3, al(h->t[DA].bytes), hb,
                 al(h->t[DC].bytes) + al(h->t[D32].bytes));
}

/* The two programs' models on dev (the source's changed by `edit` first when given). */
struct pair {
    struct hprog sp, dp;
    struct npu_prog_model *sm, *dm;
};

static void
pair_open(struct pair *pr, struct npu_device *dev, struct dims d, uint32_t so, uint32_t dorder,
          void (*edit)(struct hprog *))
{
    src_make(&pr->sp, d, so);
    dst_make(&pr->dp, d, dorder);
    if (edit)
        edit(&pr->sp);
    char msg[256] = "";
    if (npu_program_validate(&pr->sp.p, msg, sizeof(msg)) ||
        npu_program_validate(&pr->dp.p, msg, sizeof(msg)))
        fprintf(stderr, "validate: %s\n", msg);
    CHECK_EQ_INT(NPU_OK, npu_program_validate(&pr->sp.p, msg, sizeof(msg)));
    CHECK_EQ_INT(NPU_OK, npu_program_validate(&pr->dp.p, msg, sizeof(msg)));
    pr->sm = pr->dm = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &pr->sp.p, NULL, &pr->sm));
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &pr->dp.p, NULL, &pr->dm));
}

static void
pair_close(struct pair *pr)
{
    npu_prog_model_destroy(pr->dm);
    npu_prog_model_destroy(pr->sm);
}

/* A session of m (checked). */
static struct npu_prog_session *
session(struct npu_prog_model *m)
{
    struct npu_prog_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s));
    return s;
}

/* ---- runs ------------------------------------------------------------------------- */

/* A run of the source: x uploaded when given (else resident), x2 zeros; y (NULL when
 * routed) copied into y_out when both are there. */
static enum npu_status
src_run(struct npu_prog_session *s, struct dims d, const float *x, float *y_out, bool *routed)
{
    float x2[X2K * X2R * X2D];
    for (int i = 0; i < X2K * X2R * X2D; i++)
        x2[i] = (float)(i % 5) - 2.0f;
    struct npu_tensor in[2] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {d.K, d.S, d.D}, .data = (void *)x},
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {X2K, X2R, X2D}, .data = x2},
    };
    struct npu_tensor out[3];
    enum npu_status st = npu_prog_session_run(s, in, 2, out, 3, NULL);
    if (st)
        return st;
    if (routed)
        *routed = out[0].data == NULL;
    if (y_out && out[0].data)
        memcpy(y_out, out[0].data, sizeof(float) * (size_t)(d.K * d.S * d.D));
    return NPU_OK;
}

/* The destination's resident cache, read back through its conversion. */
static void
dst_read(struct npu_prog_session *s, struct dims d, float *cache)
{
    const size_t n = (size_t)d.K * (size_t)d.T * (size_t)d.D;
    float *act = calloc(n, sizeof(float));
    CHECK(act != NULL);
    struct npu_tensor in[3] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {d.K, d.T, d.D}},
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {d.K, d.T, d.D}, .data = act},
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {d.K, d.T, d.D}},
    };
    struct npu_tensor out[3];
    CHECK_EQ_INT(NPU_OK, npu_prog_session_run(s, in, 3, out, 3, NULL));
    memcpy(cache, out[0].data, n * sizeof(float));
    /* c32 is never written (a refused route must not touch it either) */
    const float *c32 = out[2].data;
    int nz = 0;
    for (size_t i = 0; i < n; i++)
        nz += c32[i] != 0.0f;
    CHECK_EQ_INT(0, nz);
    free(act);
}

static float
f16r(float x)
{
    return npu_fp16_to_fp32(npu_fp32_to_fp16(x));
}

/* Expects `call` to fail with `want` and a logged message containing `msg`. */
#define REFUSED(want, msg, call)                                                                   \
    do {                                                                                           \
        npu_test_log[0] = 0;                                                                       \
        enum npu_status got_ = (call);                                                             \
        CHECK_EQ_INT((int)(want), (int)got_);                                                      \
        if (!strstr(npu_test_log, (msg)))                                                          \
            fprintf(stderr, "%s: log \"%s\" lacks \"%s\"\n", #call, npu_test_log, (msg));          \
        CHECK(strstr(npu_test_log, (msg)) != NULL);                                                \
    } while (0)

static void
test_refusals(struct npu_device *dev)
{
    const struct dims d = {3, 5, 9, 20};
    struct pair pr;
    pair_open(&pr, dev, d, NPU_VIEW_HWC, NPU_VIEW_HWC, NULL);
    struct npu_prog_session *ss = session(pr.sm), *ds = session(pr.dm);

    const int nx = d.K * d.S * d.D, nc = d.K * d.T * d.D;
    float *x = malloc(sizeof(float) * (size_t)nx), *want = calloc((size_t)nc, sizeof(float)),
          *got = malloc(sizeof(float) * (size_t)nc);
    CHECK(x && want && got);
    for (int i = 0; i < nx; i++)
        x[i] = 0.125f * (float)(i % 97) - 5.0f + 1e-3f * (float)i;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, x, NULL, NULL)); /* x resident from here on */

    npu_log_set_handler(npu_test_log_capture, NULL);
    /* a route at positions 2 .. 6 that each refusal below must leave in place */
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, ds, 0, 1, 2));

    REFUSED(NPU_ERR_INVALID, "output -1 (the program has 3)",
            npu_prog_session_route_output(ss, -1, ds, 0, 1, 0));
    REFUSED(NPU_ERR_INVALID, "output 3 (the program has 3)",
            npu_prog_session_route_output(ss, 3, ds, 0, 1, 0));
    /* z: made by a conversion but read by the Relu; r: made by a CPU step */
    REFUSED(NPU_ERR_UNSUPPORTED, "output 1 'z' is not made by one conversion",
            npu_prog_session_route_output(ss, 1, ds, 0, 1, 0));
    REFUSED(NPU_ERR_UNSUPPORTED, "output 2 'r' is not made by one conversion",
            npu_prog_session_route_output(ss, 2, ds, 0, 1, 0));
    REFUSED(NPU_ERR_UNSUPPORTED, "output 1 'z' is not made by one conversion",
            npu_prog_session_route_output(ss, 1, NULL, 0, 0, 0));
    REFUSED(NPU_ERR_INVALID, "output 0 routed into its own session's state",
            npu_prog_session_route_output(ss, 0, ss, 0, 1, 0));
    REFUSED(NPU_ERR_INVALID, "input -1 (the program has 3)",
            npu_prog_session_route_output(ss, 0, ds, -1, 1, 0));
    REFUSED(NPU_ERR_INVALID, "input 3 (the program has 3)",
            npu_prog_session_route_output(ss, 0, ds, 3, 1, 0));
    REFUSED(NPU_ERR_UNSUPPORTED, "input 1 'act' is not a state input",
            npu_prog_session_route_output(ss, 0, ds, 1, 1, 0));
    REFUSED(NPU_ERR_UNSUPPORTED,
            "input 2 'c32' is not a state input held as the source's f16 NC1HWC2",
            npu_prog_session_route_output(ss, 0, ds, 2, 1, 0));
    REFUSED(NPU_ERR_INVALID, "axis 3 of input 0 'cache' (rank 3)",
            npu_prog_session_route_output(ss, 0, ds, 0, 3, 0));
    REFUSED(NPU_ERR_INVALID, "axis -1 of input 0 'cache' (rank 3)",
            npu_prog_session_route_output(ss, 0, ds, 0, -1, 0));
    /* 300 elements: not whole [.., 1 .. 9, 20] rows along axis 0 (180 per entry) nor
     * [3, 9, ..] along axis 2 (27 per entry) */
    REFUSED(NPU_ERR_INVALID,
            "300 elements are not a block of input 0 'cache' at position 0 of "
            "axis 0",
            npu_prog_session_route_output(ss, 0, ds, 0, 0, 0));
    REFUSED(NPU_ERR_INVALID,
            "300 elements are not a block of input 0 'cache' at position 0 of "
            "axis 2",
            npu_prog_session_route_output(ss, 0, ds, 0, 2, 0));
    /* 5 rows: 0 .. 4 is the last start of the 9 */
    REFUSED(NPU_ERR_INVALID, "at position 5 of axis 1",
            npu_prog_session_route_output(ss, 0, ds, 0, 1, d.T - d.S + 1));
    REFUSED(NPU_ERR_INVALID, "at position 10 of axis 1",
            npu_prog_session_route_output(ss, 0, ds, 0, 1, d.T + 1));
    REFUSED(NPU_ERR_INVALID, "at position -1 of axis 1",
            npu_prog_session_route_output(ss, 0, ds, 0, 1, -1));
    npu_log_set_handler(NULL, NULL);

    /* nothing changed: the destination's state is still zero, and a run copies into
     * positions 2 .. 6 as first routed */
    dst_read(ds, d, got);
    int bad = 0;
    for (int i = 0; i < nc; i++)
        bad += got[i] != 0.0f;
    CHECK_EQ_INT(0, bad);
    bool routed = false;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, NULL, NULL, &routed));
    CHECK(routed);
    for (int k = 0; k < d.K; k++)
        for (int r = 0; r < d.S; r++)
            for (int c = 0; c < d.D; c++)
                want[(k * d.T + r + 2) * d.D + c] = f16r(x[(k * d.S + r) * d.D + c]);
    dst_read(ds, d, got);
    bad = 0;
    for (int i = 0; i < nc; i++)
        bad += got[i] != want[i];
    CHECK_EQ_INT(0, bad);
    /* undone: the output comes back converted */
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, NULL, 0, 0, 0));
    float *y = malloc(sizeof(float) * (size_t)nx);
    CHECK(y != NULL);
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, NULL, y, &routed));
    CHECK(!routed);
    bad = 0;
    for (int i = 0; i < nx; i++)
        bad += y[i] != f16r(x[i]);
    CHECK_EQ_INT(0, bad);
    free(y);
    free(x);
    free(want);
    free(got);
    npu_prog_session_destroy(ds);
    npu_prog_session_destroy(ss);
    pair_close(&pr);
}

static void
list_y_twice(struct hprog *h)
{
    h->out[1] = SY;
}

/* y listed as outputs 0 and 1: routing either would leave the other's host data unfilled */
static void
test_twice_listed(struct npu_device *dev)
{
    const struct dims d = {3, 5, 9, 20};
    struct pair pr;
    pair_open(&pr, dev, d, NPU_VIEW_HWC, NPU_VIEW_HWC, list_y_twice);
    struct npu_prog_session *ss = session(pr.sm), *ds = session(pr.dm);
    npu_log_set_handler(npu_test_log_capture, NULL);
    REFUSED(NPU_ERR_UNSUPPORTED, "output 0 'y' is not made by one conversion",
            npu_prog_session_route_output(ss, 0, ds, 0, 1, 0));
    REFUSED(NPU_ERR_UNSUPPORTED, "output 1 'y' is not made by one conversion",
            npu_prog_session_route_output(ss, 1, ds, 0, 1, 0));
    npu_log_set_handler(NULL, NULL);
    npu_prog_session_destroy(ds);
    npu_prog_session_destroy(ss);
    pair_close(&pr);
}

/* Routed (into ds1) against converted and written with npu_prog_session_write_state (into
 * ds2) for one pair of view orders; both against the host's f16(x). Returns the CPU
 * seconds of one routed run (x resident: the run is the copy) when bench. */
static double
test_equal(struct npu_device *dev, struct dims d, uint32_t so, uint32_t dorder, int64_t start,
           int reps)
{
    struct pair pr;
    pair_open(&pr, dev, d, so, dorder, NULL);
    struct npu_prog_session *s1 = session(pr.sm), *s2 = session(pr.sm), *ds1 = session(pr.dm),
                            *ds2 = session(pr.dm);
    const size_t nx = (size_t)d.K * d.S * d.D, nc = (size_t)d.K * d.T * d.D;
    float *x = malloc(sizeof(float) * nx), *y = malloc(sizeof(float) * nx),
          *g1 = malloc(sizeof(float) * nc), *g2 = malloc(sizeof(float) * nc),
          *want = calloc(nc, sizeof(float));
    CHECK(x && y && g1 && g2 && want);
    for (size_t i = 0; i < nx; i++)
        x[i] = 0.01f * (float)(i % 1013) - 4.0f;
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(s1, 0, ds1, 0, 1, start));
    bool routed = false;
    CHECK_EQ_INT(NPU_OK, src_run(s1, d, x, NULL, &routed));
    CHECK(routed);
    CHECK_EQ_INT(NPU_OK, src_run(s2, d, x, y, &routed));
    CHECK(!routed);
    struct npu_tensor blk = {
        .dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {d.K, d.S, d.D}, .data = y};
    CHECK_EQ_INT(NPU_OK, npu_prog_session_write_state(ds2, 0, &blk, 1, start));
    dst_read(ds1, d, g1);
    dst_read(ds2, d, g2);
    for (int k = 0; k < d.K; k++)
        for (int r = 0; r < d.S; r++)
            for (int c = 0; c < d.D; c++)
                want[((size_t)k * d.T + r + start) * d.D + c] =
                    f16r(x[((size_t)k * d.S + r) * d.D + c]);
    int bad1 = 0, bad2 = 0;
    for (size_t i = 0; i < nc; i++) {
        bad1 += g1[i] != g2[i];
        bad2 += g1[i] != want[i];
    }
    if (bad1 || bad2)
        fprintf(stderr,
                "orders %u -> %u, [%d, %d, %d] at %lld: %d differ from write_state, %d "
                "from the host\n",
                so, dorder, d.K, d.S, d.D, (long long)start, bad1, bad2);
    CHECK_EQ_INT(0, bad1);
    CHECK_EQ_INT(0, bad2);
    double cpu = 0;
    if (reps > 0) {
        struct timespec a, b;
        CHECK_EQ_INT(NPU_OK, src_run(s1, d, NULL, NULL, NULL)); /* warm */
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        for (int i = 0; i < reps; i++)
            CHECK_EQ_INT(NPU_OK, src_run(s1, d, NULL, NULL, NULL));
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        cpu = ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9) / reps;
    }
    free(x);
    free(y);
    free(g1);
    free(g2);
    free(want);
    npu_prog_session_destroy(ds2);
    npu_prog_session_destroy(ds1);
    npu_prog_session_destroy(s2);
    npu_prog_session_destroy(s1);
    pair_close(&pr);
    return cpu;
}

/* The cache rows of ds (positions 0 .. S - 1) against f16(x), the rest zero: how many
 * differ. */
static int
dst_misses(struct npu_prog_session *ds, struct dims d, const float *x)
{
    const size_t nc = (size_t)d.K * d.T * d.D;
    float *got = malloc(sizeof(float) * nc);
    CHECK(got != NULL);
    if (!got)
        return 1;
    dst_read(ds, d, got);
    int bad = 0;
    for (int k = 0; k < d.K; k++)
        for (int r = 0; r < d.T; r++)
            for (int c = 0; c < d.D; c++) {
                const size_t i = ((size_t)k * d.T + r) * d.D + c;
                bad += got[i] != (r < d.S ? f16r(x[((size_t)k * d.S + r) * d.D + c]) : 0.0f);
            }
    free(got);
    return bad;
}

/* The route's tie between the two sessions, each order of destruction */
static void
test_lifetime(struct npu_device *dev)
{
    const struct dims d = {2, 3, 5, 16};
    struct pair pr;
    pair_open(&pr, dev, d, NPU_VIEW_HWC, NPU_VIEW_HWC, NULL);
    struct npu_prog_session *ss = session(pr.sm), *ds1 = session(pr.dm), *ds2 = session(pr.dm),
                            *ds3 = session(pr.dm), *ds4 = session(pr.dm);
    const size_t nx = (size_t)d.K * d.S * d.D;
    float *x = malloc(sizeof(float) * nx), *y = malloc(sizeof(float) * nx);
    CHECK(x && y);
    for (size_t i = 0; i < nx; i++)
        x[i] = 0.25f * (float)(i % 37) - 3.0f;
    bool routed = true;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, x, NULL, &routed)); /* x resident from here on */
    CHECK(!routed);

    /* moved from ds1 to ds2: ds1 may go, the copies land in ds2 */
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, ds1, 0, 1, 0));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, ds2, 0, 1, 0));
    npu_prog_session_destroy(ds1);
    routed = false;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, NULL, NULL, &routed));
    CHECK(routed);
    CHECK_EQ_INT(0, dst_misses(ds2, d, x));

    /* ds2 destroyed under the route: every later run fails, naming the output */
    npu_prog_session_destroy(ds2);
    npu_log_set_handler(npu_test_log_capture, NULL);
    for (int k = 0; k < 2; k++)
        REFUSED(NPU_ERR_INVALID, "output 0 was routed into a session since destroyed",
                src_run(ss, d, NULL, NULL, NULL));
    npu_log_set_handler(NULL, NULL);
    CHECK(strstr(npu_prog_session_error(ss), "output 0 was routed") != NULL);

    /* routed again (into ds3): runs again */
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, ds3, 0, 1, 0));
    routed = false;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, NULL, NULL, &routed));
    CHECK(routed);
    CHECK_EQ_INT(0, dst_misses(ds3, d, x));

    /* ds3 destroyed, then the route undone: the output converted again */
    npu_prog_session_destroy(ds3);
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, NULL, 0, 0, 0));
    routed = true;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, NULL, y, &routed));
    CHECK(!routed);
    int bad = 0;
    for (size_t i = 0; i < nx; i++)
        bad += y[i] != f16r(x[i]);
    CHECK_EQ_INT(0, bad);

    /* the source destroyed first: its destination still runs and goes cleanly */
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, ds4, 0, 1, 0));
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, NULL, NULL, NULL));
    npu_prog_session_destroy(ss);
    CHECK_EQ_INT(0, dst_misses(ds4, d, x));
    npu_prog_session_destroy(ds4);
    free(x);
    free(y);
    pair_close(&pr);
}

static void
test_raw(struct npu_device *dev, uint32_t order)
{
    const struct dims d = {3, 5, 9, 20};
    struct pair pr;
    pair_open(&pr, dev, d, order, NPU_VIEW_NCHW, NULL);
    struct npu_prog_session *ss = session(pr.sm), *ds = session(pr.dm);
    const size_t nx = (size_t)d.K * d.S * d.D;
    float *x = malloc(nx * sizeof(float)), *y = malloc(nx * sizeof(float));
    CHECK(x && y);
    uint32_t seed = 99 + order;
    for (size_t i = 0; i < nx; i++)
        x[i] = (float)((int)((seed = seed * 1103515245u + 12345u) >> 16) % 1000) / 500.0f - 1.0f;
    /* the maximum twice (fp16 ties): the first one in the middle, then once in the last
     * channel group of the last row (20 channels: groups of 8, 8 and a padded 4) */
    x[nx / 3] = x[nx - 2] = 3.0f;
    x[nx / 3 + 1] = 3.0004f; /* the same fp16 as 3.0: a tie, not a larger value */
    npu_log_set_handler(npu_test_log_capture, NULL);
    REFUSED(NPU_ERR_UNSUPPORTED, "not made by one conversion",
            npu_prog_session_raw_output(ss, 1, true));
    REFUSED(NPU_ERR_INVALID, "output 3", npu_prog_session_raw_output(ss, 3, true));
    struct npu_prog_argmax acc = {.index = -1};
    REFUSED(NPU_ERR_INVALID, "not kept in the NPU layout",
            npu_prog_session_output_argmax(ss, 0, 0, &acc));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, ds, 0, 1, 0));
    REFUSED(NPU_ERR_INVALID, "routed", npu_prog_session_raw_output(ss, 0, true));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, NULL, 0, 0, 0));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_raw_output(ss, 0, true));
    REFUSED(NPU_ERR_INVALID, "kept in the NPU layout",
            npu_prog_session_route_output(ss, 0, ds, 0, 1, 0));
    npu_log_set_handler(NULL, NULL);
    bool raw = false;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, x, NULL, &raw));
    CHECK(raw); /* data NULL: not converted */
    int64_t want = 0;
    for (size_t i = 1; i < nx; i++)
        if (f16r(x[i]) > f16r(x[want]))
            want = (int64_t)i;
    CHECK_EQ_INT((int64_t)(nx / 3), want);
    CHECK_EQ_INT(NPU_OK, npu_prog_session_output_argmax(ss, 0, 7, &acc));
    CHECK_EQ_INT(want + 7, acc.index);
    CHECK(acc.value == 3.0f);
    const struct npu_prog_tensor *lt = NULL;
    const void *lb = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_session_output_raw(ss, 0, &lt, &lb));
    CHECK(lt && lb && npu_prog_mem_dtype(lt) == NPU_DTYPE_FP16 && lt->npu_order == order);
    /* the last element alone the largest: found in the padded last group */
    x[nx - 1] = 4.0f;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, x, NULL, NULL));
    acc.index = -1;
    CHECK_EQ_INT(NPU_OK, npu_prog_session_output_argmax(ss, 0, 0, &acc));
    CHECK_EQ_INT((int64_t)nx - 1, acc.index);
    /* undone: converted again */
    CHECK_EQ_INT(NPU_OK, npu_prog_session_raw_output(ss, 0, false));
    raw = true;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, x, y, &raw));
    CHECK(!raw);
    int bad = 0;
    for (size_t i = 0; i < nx; i++)
        bad += y[i] != f16r(x[i]);
    CHECK_EQ_INT(0, bad);
    npu_prog_session_destroy(ds);
    npu_prog_session_destroy(ss);
    free(x);
    free(y);
    pair_close(&pr);
}

/* Tensor ti of h held as int8 of the given scale and zero point (a w8a8 tensor), the
 * program's buffer sizes kept (int8 needs fewer bytes than fp16). */
static void
as_int8(struct hprog *h, int ti, float scale, int32_t zero)
{
    struct npu_prog_tensor *t = &h->t[ti];
    const int io_in = t->io_input, io_out = t->io_output;
    *t = npu_t(t->name, t->buffer, t->offset, t->t.dims[0], t->t.dims[1], t->t.dims[2],
               NPU_DTYPE_INT8, t->npu_order);
    t->io_input = io_in;
    t->io_output = io_out;
    t->t.qscale = scale;
    t->t.qzero = zero;
}

/* An int8 output (which output_convert_step takes since the int8 argmax of a w8a8 head) routed
 * into an int8 state: refused where the state's scale or zero point differs from the source's
 * (the bytes, copied as they are, would be other values there); with the same ones the routed
 * rows are the values the output's conversion gives. */
static void
test_int8(struct npu_device *dev)
{
    const struct dims d = {2, 3, 7, 20};
    const float scales[3] = {0.25f, 0.5f, 0.5f};
    const int32_t zeros[3] = {-3, 4, -3}; /* the source's: the last */
    struct hprog sp, dp[2];
    struct npu_prog_model *sm = NULL, *dm[2] = {NULL, NULL};
    char msg[256] = "";
    src_make(&sp, d, NPU_VIEW_HWC);
    as_int8(&sp, SX, scales[2], zeros[2]);
    CHECK_EQ_INT(NPU_OK, npu_program_validate(&sp.p, msg, sizeof(msg)));
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &sp.p, NULL, &sm));
    for (int k = 0; k < 2; k++) {
        dst_make(&dp[k], d, NPU_VIEW_HWC);
        as_int8(&dp[k], DC, scales[k + (k ? 1 : 0)], zeros[k + (k ? 1 : 0)]);
        CHECK_EQ_INT(NPU_OK, npu_program_validate(&dp[k].p, msg, sizeof(msg)));
        CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &dp[k].p, NULL, &dm[k]));
    }
    if (!sm || !dm[0] || !dm[1]) {
        fprintf(stderr, "int8 programs: %s\n", msg);
        goto out;
    }
    struct npu_prog_session *ss = session(sm), *bad_s = session(dm[0]), *ds = session(dm[1]);
    const int nx = d.K * d.S * d.D, nc = d.K * d.T * d.D;
    float *x = malloc(sizeof(float) * (size_t)nx), *y = malloc(sizeof(float) * (size_t)nx),
          *got = malloc(sizeof(float) * (size_t)nc);
    CHECK(x && y && got);
    for (int i = 0; i < nx; i++)
        x[i] = 0.5f * (float)(i % 41) - 9.0f;
    /* unrouted: y is x quantised and dequantised by the program's conversions */
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, x, y, NULL));
    int off = 0;
    for (int i = 0; i < nx; i++)
        off += y[i] != x[i]; /* x's values are on the grid of scale 0.5 inside int8's range */
    CHECK_EQ_INT(0, off);
    npu_log_set_handler(npu_test_log_capture, NULL);
    REFUSED(NPU_ERR_UNSUPPORTED,
            "input 0 'cache' is held as i8 with scale 0.25 and zero point -3, the source 'x' "
            "with 0.5 and -3",
            npu_prog_session_route_output(ss, 0, bad_s, 0, 1, 2));
    npu_log_set_handler(NULL, NULL);
    /* the same scale and zero point: routed, rows 2 .. 4 are y's */
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(ss, 0, ds, 0, 1, 2));
    bool routed = false;
    CHECK_EQ_INT(NPU_OK, src_run(ss, d, NULL, NULL, &routed));
    CHECK(routed);
    dst_read(ds, d, got);
    int bad = 0;
    for (int k = 0; k < d.K; k++)
        for (int r = 0; r < d.T; r++)
            for (int c = 0; c < d.D; c++) {
                /* elsewhere the state's zero bytes: (0 - zero) x scale */
                const float want = r >= 2 && r < 2 + d.S ? y[(k * d.S + r - 2) * d.D + c]
                                                         : (float)-zeros[2] * scales[2];
                bad += got[(k * d.T + r) * d.D + c] != want;
            }
    CHECK_EQ_INT(0, bad);
    free(x);
    free(y);
    free(got);
    npu_prog_session_destroy(ds);
    npu_prog_session_destroy(bad_s);
    npu_prog_session_destroy(ss);
out:
    npu_prog_model_destroy(dm[1]);
    npu_prog_model_destroy(dm[0]);
    npu_prog_model_destroy(sm);
}

int
main(void)
{
    struct npu_device *dev = NULL;
    CHECK_EQ_INT(NPU_OK, npu_device_open("sim", &dev));
    if (!dev)
        return npu_test_done("test-route");
    test_refusals(dev);
    test_twice_listed(dev);
    test_lifetime(dev);
    test_raw(dev, NPU_VIEW_NCHW);
    test_raw(dev, NPU_VIEW_HWC);
    test_int8(dev);
    const uint32_t orders[2] = {NPU_VIEW_NCHW, NPU_VIEW_HWC};
    const struct dims small[3] = {{3, 5, 9, 20}, {2, 7, 7, 16}, {1, 1, 4, 3}};
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
                for (int64_t st = 0; st <= small[k].T - small[k].S; st += 2)
                    test_equal(dev, small[k], orders[a], orders[b], st, 0);
    /* GPT-2 small's k rows of one layer: 12 heads x 128 tokens x 64 into 256 slots */
    const struct dims g = {12, 128, 256, 64};
    double hwc = test_equal(dev, g, NPU_VIEW_HWC, NPU_VIEW_HWC, 0, 20);
    double nchw = test_equal(dev, g, NPU_VIEW_NCHW, NPU_VIEW_NCHW, 0, 5);
    printf("routed copy of [12, 128, 64] fp16 into [12, 256, 64]: %.1f us CPU (HWC views), "
           "%.1f us (NCHW views), per run\n",
           hwc * 1e6, nchw * 1e6);
    npu_device_close(dev);
    return npu_test_done("test-route");
}
