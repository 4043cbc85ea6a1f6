/* SPDX-License-Identifier: MIT */
/*
 * test-state.c: state tensors (NPU_BUF_STATE) and run-time positioned relocations
 * (npu_prog_dynreloc), the runtime half of a device-resident KV cache, on the simulator
 * with a hand-made program:
 *   inputs  row  [1, C, 1, 1] fp32 (converted to fp16 NC1HWC2 in ACT each run),
 *           pos  [1] int64 on the host,
 *           cache [1, C, T, 1] fp32, held as fp16 NC1HWC2 in STATE (a state input);
 *   step    one NPU job: a DPU copy of row into cache row `pos`, whose destination
 *           address the runtime moves by pos x 16 bytes before the submit;
 *   output  cache.
 * Checked: rows land where the positions say and earlier rows stay (the buffer persists,
 * nothing is converted for a cache given as NULL: the run statistics count one input
 * conversion of the row's bytes and one resident input); a cache given with data is
 * uploaded; positions -1 and T are refused with a message before anything runs and leave
 * the cache as it was; rows written between runs with npu_prog_session_write_state (and
 * its refusals: positions past the axis, a wrong block shape, an input that is not state);
 * the layer split keeps a run-time write before a read of part of the cache that the
 * recorded position missed (one core, in order);
 * the validator's refusals (a limit that runs past the buffer, a
 * stride not a multiple of 16, a position input that is not one integer, a dynamic
 * relocation of the regcmd buffer or repeated); the .npub round trip (format 3, the same
 * state size and dynamic relocations, the same results) and a program without state still
 * written as format 1.
 */
#include <math.h>
#include <unistd.h>

#include "hand-prog.h"
#include "npu-dpu.h"
#include "npu-fp16.h"
#include "npu-task.h"
#include "npu-test.h"
#include "npu/npu-npub.h"
#include "npu/npu-program-exec.h"
#include "npub-format.h"
#include "npub-rehash.h"

enum { C = 24, T = 12, READ_OFF = 1024 };
enum { TS_ROW, TS_POS, TS_CACHE, TS_COUNT };

struct sprog {
    struct npu_program p;
    struct npu_prog_tensor t[TS_COUNT];
    struct npu_prog_step step;
    struct npu_prog_job job;
    struct npu_prog_task *tasks;
    struct npu_prog_reloc *relocs;
    struct npu_prog_dynreloc dyn;
    uint64_t *regcmd;
    int in[3], out[1], step_in[1], step_out[1];
};

static struct npu_prog_tensor
nc1hwc2(const char *name, uint32_t buffer, uint64_t offset, uint32_t h)
{
    struct npu_prog_tensor t;
    memset(&t, 0, sizeof(t));
    t.name = name;
    t.t.dtype = NPU_DTYPE_FP32;
    t.t.ndim = 4;
    t.t.dims[0] = 1;
    t.t.dims[1] = C;
    t.t.dims[2] = h;
    t.t.dims[3] = 1;
    t.place = NPU_PLACE_NPU;
    t.buffer = buffer;
    t.offset = offset;
    t.layout = NPU_LAYOUT_NC1HWC2;
    t.mem_dtype = NPU_DTYPE_FP16;
    t.npu_c = C;
    t.npu_h = h;
    t.npu_w = 1;
    t.io_input = t.io_output = -1;
    t.bytes = npu_prog_tensor_need(&t);
    return t;
}

static void
sprog_free(struct sprog *h)
{
    free(h->tasks);
    free(h->relocs);
    free(h->regcmd);
}

/* reader: a second task in the job copies rows 0 .. 1 of the cache's first 8 channels
 * (its first surface) into ACT, a read of a part of the cache that the recorded position
 * may miss */
static void
sprog_make_ex(struct sprog *h, bool reader)
{
    memset(h, 0, sizeof(*h));
    h->t[TS_ROW] = nc1hwc2("row", NPU_BUF_ACT, 0, 1);
    memset(&h->t[TS_POS], 0, sizeof(h->t[TS_POS]));
    h->t[TS_POS].name = "pos";
    h->t[TS_POS].t.dtype = NPU_DTYPE_INT64;
    h->t[TS_POS].t.ndim = 1;
    h->t[TS_POS].t.dims[0] = 1;
    h->t[TS_POS].place = NPU_PLACE_HOST;
    h->t[TS_POS].bytes = 8;
    h->t[TS_POS].io_input = 1;
    h->t[TS_POS].io_output = -1;
    h->t[TS_CACHE] = nc1hwc2("cache", NPU_BUF_STATE, 0, T);
    h->t[TS_ROW].io_input = 0;
    h->t[TS_CACHE].io_input = 2;
    h->t[TS_CACHE].io_output = 0;

    /* the copy: row (C x 1 x 1) -> cache row 0 (a view of C x T x 1: line 1, surface T) */
    struct npu_dpu_map src =
        npu_dpu_map_packed((struct npu_dpu_ref){NPU_BUF_ACT, 0}, NPU_DPU_FP16, C, 1, 1);
    struct npu_dpu_map cache =
        npu_dpu_map_packed((struct npu_dpu_ref){NPU_BUF_STATE, 0}, NPU_DPU_FP16, C, T, 1);
    struct npu_dpu_map dst = npu_dpu_map_rows(&cache, 0, 1);
    struct npu_dpu_pass pass = {.in = src, .out = dst};
    struct npu_stream s;
    npu_stream_init(&s);
    struct npu_regcmd_image img;
    CHECK_EQ_INT(NPU_OK, npu_dpu_emit_pass(&s, &pass, NULL));
    if (reader) {
        struct npu_dpu_pass rd = {
            .in = npu_dpu_map_channels(&cache, 0, 8),
            .out = npu_dpu_map_packed((struct npu_dpu_ref){NPU_BUF_ACT, READ_OFF}, NPU_DPU_FP16, 8,
                                      2, 1)};
        rd.in = npu_dpu_map_rows(&rd.in, 0, 2);
        CHECK_EQ_INT(NPU_OK, npu_dpu_emit_pass(&s, &rd, NULL));
    }
    CHECK_EQ_INT(NPU_OK, npu_stream_layout(&s, 0, NPU_SEGMENT_ALIGN, &img));
    CHECK_EQ_INT(NPU_OK, npu_image_chain(&img, 0, img.n_tasks, 1));
    npu_stream_fini(&s);
    CHECK_EQ_INT(0, hand_image_copy(&img, "append", &h->regcmd, &h->tasks, &h->relocs));
    int state_reloc = -1;
    uint32_t end0 = img.n_tasks > 1 ? img.tasks[1].start : UINT32_MAX; /* the write's task */
    for (uint32_t i = 0; i < img.n_relocs; i++) {
        if (img.relocs[i].buffer == NPU_BUF_STATE && img.relocs[i].qword < end0) {
            CHECK(state_reloc < 0); /* the copy writes through one address register */
            state_reloc = (int)i;
        }
    }
    CHECK(state_reloc >= 0);
    /* row y of the cache starts y atoms (16 bytes) after row 0 in every surface */
    h->dyn = (struct npu_prog_dynreloc){.reloc = (uint32_t)state_reloc,
                                        .input = 1,
                                        .stride = 16,
                                        .limit = T,
                                        .extent = (uint32_t)npu_dpu_map_extent(&dst)};
    h->job = (struct npu_prog_job){h->regcmd, (uint32_t)img.n_qwords,
                                   h->tasks,  img.n_tasks,
                                   h->relocs, img.n_relocs,
                                   img.align, 0,
                                   &h->dyn,   1};
    npu_image_fini(&img);

    h->step_in[0] = TS_ROW;
    h->step_out[0] = TS_CACHE;
    h->step = (struct npu_prog_step){.kind = NPU_STEP_NPU_JOB,
                                     .in = h->step_in,
                                     .nin = 1,
                                     .out = h->step_out,
                                     .nout = 1,
                                     .job = 0,
                                     .name = "append"};
    h->in[0] = TS_ROW;
    h->in[1] = TS_POS;
    h->in[2] = TS_CACHE;
    h->out[0] = TS_CACHE;
    h->p = (struct npu_program){.version = NPU_PROGRAM_VERSION,
                                .tensors = h->t,
                                .n_tensors = TS_COUNT,
                                .steps = &h->step,
                                .n_steps = 1,
                                .jobs = &h->job,
                                .n_jobs = 1,
                                .inputs = h->in,
                                .n_inputs = 3,
                                .outputs = h->out,
                                .n_outputs = 1,
                                .act_bytes = reader ? READ_OFF + 2 * 16 * ((C + 7) / 8)
                                                    : NPU_ALIGN(h->t[TS_ROW].bytes, 64),
                                .state_bytes = NPU_ALIGN(h->t[TS_CACHE].bytes, 64),
                                .producer = "test-state"};
}

static void
sprog_make(struct sprog *h)
{
    sprog_make_ex(h, false);
}

static float
f16r(float x)
{
    return npu_fp16_to_fp32(npu_fp32_to_fp16(x));
}

/* One run: row r (C values) written at pos; cache NULL (resident) or uploaded. */
static enum npu_status
run(struct npu_prog_session *s, const float *r, int64_t pos, const float *cache_in,
    float *cache_out, struct npu_prog_run_stats *st)
{
    struct npu_tensor in[3] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, 1, 1}, .data = (void *)r},
        {.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}, .data = &pos},
        {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, T, 1}, .data = (void *)cache_in},
    };
    struct npu_tensor out;
    enum npu_status e = npu_prog_session_run(s, in, 3, &out, 1, st);
    if (!e)
        memcpy(cache_out, out.data, sizeof(float) * C * T);
    return e;
}

/* cache[c][y] of want must equal got everywhere. */
static int
mismatches(const float *want, const float *got)
{
    int bad = 0;
    for (int i = 0; i < C * T; i++)
        bad += want[i] != got[i];
    return bad;
}

static void
put_row(float *cache, const float *r, int y)
{
    for (int c = 0; c < C; c++)
        cache[c * T + y] = f16r(r[c]);
}

static void
test_runs(struct npu_device *dev, const struct npu_program *p)
{
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, p, NULL, &m));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s));
    float want[C * T], got[C * T], r1[C], r2[C], r3[C], up[C * T];
    memset(want, 0, sizeof(want));
    for (int c = 0; c < C; c++) {
        r1[c] = 0.25f * (float)c - 2.0f;
        r2[c] = 1.0f + 0.125f * (float)c;
        r3[c] = -3.0f + 0.0625f * (float)(c * c % 17);
    }

    /* resident cache: only the row is converted */
    struct npu_prog_run_stats st;
    memset(&st, 0, sizeof(st));
    CHECK_EQ_INT(NPU_OK, run(s, r1, 3, NULL, got, &st));
    put_row(want, r1, 3);
    CHECK_EQ_INT(0, mismatches(want, got));
    CHECK_EQ_INT(1, (int)st.inputs_converted);
    CHECK_EQ_INT(1, (int)st.inputs_resident);
    CHECK_EQ_INT((int)p->tensors[TS_ROW].bytes, (int)st.input_convert_bytes);
    CHECK_EQ_INT(1, (int)st.submits);

    /* the next position; row 3 stays */
    CHECK_EQ_INT(NPU_OK, run(s, r2, 0, NULL, got, &st));
    put_row(want, r2, 0);
    CHECK_EQ_INT(0, mismatches(want, got));
    CHECK_EQ_INT(NPU_OK, run(s, r3, T - 1, NULL, got, &st));
    put_row(want, r3, T - 1);
    CHECK_EQ_INT(0, mismatches(want, got));

    /* bad positions: refused before anything runs, the cache as it was */
    char *msgs[2] = {"position -1 outside 0..11", "position 12 outside 0..11"};
    int64_t bad[2] = {-1, T};
    for (int k = 0; k < 2; k++) {
        npu_log_set_level(-1);
        CHECK_EQ_INT(NPU_ERR_INVALID, run(s, r1, bad[k], NULL, got, &st));
        npu_log_set_level(NPU_LOG_WARN);
        const char *e = npu_prog_session_error(s);
        if (!strstr(e, msgs[k]))
            fprintf(stderr, "error \"%s\" lacks \"%s\"\n", e, msgs[k]);
        CHECK(strstr(e, msgs[k]) != NULL);
        CHECK(strstr(e, "'pos'") != NULL);
    }
    CHECK_EQ_INT(NPU_OK, run(s, r3, T - 1, NULL, got, &st));
    CHECK_EQ_INT(0, mismatches(want, got));

    /* an uploaded cache replaces the resident one: two conversions */
    for (int i = 0; i < C * T; i++)
        up[i] = f16r(0.01f * (float)i - 1.0f);
    memcpy(want, up, sizeof(want));
    CHECK_EQ_INT(NPU_OK, run(s, r1, 5, up, got, &st));
    put_row(want, r1, 5);
    CHECK_EQ_INT(0, mismatches(want, got));
    CHECK_EQ_INT(2, (int)st.inputs_converted);
    CHECK_EQ_INT(0, (int)st.inputs_resident);
    CHECK_EQ_INT((int)(p->tensors[TS_ROW].bytes + p->tensors[TS_CACHE].bytes),
                 (int)st.input_convert_bytes);
    /* and stays resident after it */
    CHECK_EQ_INT(NPU_OK, run(s, r2, 6, NULL, got, &st));
    put_row(want, r2, 6);
    CHECK_EQ_INT(0, mismatches(want, got));

    /* rows written between runs (npu_prog_session_write_state): two rows at 8..9, then a
     * run appends at 10; the rest as it was */
    float two[2 * C];
    for (int c = 0; c < C; c++) {
        two[c * 2] = r3[c];
        two[c * 2 + 1] = r1[c];
    }
    struct npu_tensor blk = {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, 2, 1}, .data = two};
    CHECK_EQ_INT(NPU_OK, npu_prog_session_write_state(s, 2, &blk, 2, 8));
    CHECK_EQ_INT(NPU_OK, run(s, r2, 10, NULL, got, &st));
    put_row(want, r3, 8);
    put_row(want, r1, 9);
    put_row(want, r2, 10);
    CHECK_EQ_INT(0, mismatches(want, got));
    CHECK_EQ_INT(0, (int)st.input_convert_bytes - (int)p->tensors[TS_ROW].bytes);
    npu_log_set_level(-1);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_prog_session_write_state(s, 2, &blk, 2, T - 1));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_prog_session_write_state(s, 2, &blk, 2, -1));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_prog_session_write_state(s, 2, &blk, 1, 0));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_prog_session_write_state(s, 0, &blk, 2, 0));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_prog_session_write_state(s, 3, &blk, 2, 0));
    npu_log_set_level(NPU_LOG_WARN);
    CHECK_EQ_INT(NPU_OK, run(s, r2, 10, NULL, got, &st));
    CHECK_EQ_INT(0, mismatches(want, got)); /* the refused writes wrote nothing */

    /* a second session has its own state, zeroed */
    struct npu_prog_session *s2 = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s2));
    float want2[C * T];
    memset(want2, 0, sizeof(want2));
    CHECK_EQ_INT(NPU_OK, run(s2, r3, 2, NULL, got, &st));
    put_row(want2, r3, 2);
    CHECK_EQ_INT(0, mismatches(want2, got));
    npu_prog_session_destroy(s2);

    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
}

/* A route source for test_busy: x (a state input [1, C, 2, 1], fp16 NC1HWC2) -CONVERT-> y
 * (output 0, host fp32), y routed into another session's cache rows. */
struct rsrc {
    struct npu_prog_tensor t[2];
    struct npu_prog_step step;
    int in[1], out[1], step_in[1], step_out[1];
    struct npu_program p;
};

static void
rsrc_make(struct rsrc *r)
{
    memset(r, 0, sizeof(*r));
    r->t[0] = nc1hwc2("x", NPU_BUF_STATE, 0, 2);
    r->t[0].io_input = 0;
    r->t[1] = r->t[0];
    r->t[1].name = "y";
    r->t[1].place = NPU_PLACE_HOST;
    r->t[1].buffer = 0;
    r->t[1].layout = NPU_LAYOUT_NCHW;
    r->t[1].mem_dtype = NPU_DTYPE_FP32;
    r->t[1].bytes = 4 * C * 2;
    r->t[1].io_input = -1;
    r->t[1].io_output = 0;
    r->in[0] = r->step_in[0] = 0;
    r->out[0] = r->step_out[0] = 1;
    r->step = (struct npu_prog_step){.kind = NPU_STEP_CONVERT,
                                     .in = r->step_in,
                                     .nin = 1,
                                     .out = r->step_out,
                                     .nout = 1,
                                     .name = "x.to_host"};
    r->p = (struct npu_program){.version = NPU_PROGRAM_VERSION,
                                .tensors = r->t,
                                .n_tensors = 2,
                                .steps = &r->step,
                                .n_steps = 1,
                                .inputs = r->in,
                                .n_inputs = 1,
                                .outputs = r->out,
                                .n_outputs = 1,
                                .host_bytes = NPU_ALIGN(r->t[1].bytes, 64),
                                .state_bytes = NPU_ALIGN(r->t[0].bytes, 64),
                                .producer = "test-state"};
}

/* One run of the route source with x's two rows (x[c][y] = xs[c * 2 + y]). */
static enum npu_status
rsrc_run(struct npu_prog_session *s, const float *xs)
{
    struct npu_tensor in = {
        .dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, 2, 1}, .data = (void *)xs};
    struct npu_tensor out;
    return npu_prog_session_run(s, &in, 1, &out, 1, NULL);
}

/* A job that outlived its wait (NPU_SIM_FAULT's wait fault: the simulator's wait answers a
 * timeout, the job stays the session's pending one): until it has finished, nothing writes
 * the session's device buffers. A run, a state write and a routed copy into its state are
 * refused with NPU_ERR_BUSY and a message naming what was refused (the state input by name),
 * and so is a new layer split plan (before the one in use is dropped);
 * once the job is done (the next wait answers), all three work and the state holds exactly
 * what they wrote. Each fresh NPU_SIM_FAULT string counts its waits from 1. */
static void
test_busy(struct npu_device *dev, const struct npu_program *p)
{
    struct npu_prog_model *m = NULL, *rm = NULL;
    struct npu_prog_session *s = NULL, *src = NULL;
    struct rsrc rs;
    rsrc_make(&rs);
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, p, NULL, &m));
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &rs.p, NULL, &rm));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(rm, 0, 1, &src));
    if (!s || !src)
        goto out;
    float want[C * T], got[C * T], r1[C], r2[C], xs[2 * C], row[C];
    memset(want, 0, sizeof(want));
    for (int c = 0; c < C; c++) {
        r1[c] = 0.5f * (float)c - 3.0f;
        r2[c] = 2.0f - 0.25f * (float)c;
        row[c] = 7.0f + (float)c;
        xs[c * 2] = -1.0f - 0.125f * (float)c;
        xs[c * 2 + 1] = 0.375f * (float)c;
    }
    struct npu_prog_run_stats st;
    memset(&st, 0, sizeof(st)); /* no per-step or per-task arrays */
    CHECK_EQ_INT(NPU_OK, run(s, r1, 1, NULL, got, &st));
    put_row(want, r1, 1);
    /* src's y routed into s's cache rows 5 .. 6 */
    CHECK_EQ_INT(NPU_OK, npu_prog_session_route_output(src, 0, s, 2, 2, 5));
    struct npu_tensor blk = {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, 1, 1}, .data = row};

    npu_log_set_level(-1);
    setenv("NPU_SIM_FAULT", "wait:1", 1); /* s's job: its wait times out, the job pending */
    CHECK_EQ_INT(NPU_ERR_TIMEOUT, run(s, r2, 7, NULL, got, &st));
    put_row(want, r2, 7);                   /* the job still writes its row */
    setenv("NPU_SIM_FAULT", "wait:1,a", 1); /* the next poll of it: still running */
    CHECK_EQ_INT(NPU_ERR_BUSY, run(s, r2, 8, NULL, got, &st));
    CHECK(strstr(npu_prog_session_error(s), "run refused") != NULL);
    setenv("NPU_SIM_FAULT", "wait:1,b", 1);
    CHECK_EQ_INT(NPU_ERR_BUSY, npu_prog_session_write_state(s, 2, &blk, 2, 9));
    CHECK(strstr(npu_prog_session_error(s), "state write into input 2 'cache' refused") != NULL);
    /* a new layer split plan: refused before the one in use is dropped */
    int64_t pos = 8;
    struct npu_tensor in[3] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, 1, 1}, .data = r2},
        {.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}, .data = &pos},
        {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, T, 1}, .data = NULL},
    };
    setenv("NPU_SIM_FAULT", "wait:1,s", 1);
    CHECK_EQ_INT(NPU_ERR_BUSY, npu_prog_session_split_layers(s, in, 3, 2, NULL));
    CHECK(strstr(npu_prog_session_error(s), "layer split refused") != NULL);
    setenv("NPU_SIM_FAULT", "wait:1,c", 1);
    CHECK_EQ_INT(NPU_ERR_BUSY, rsrc_run(src, xs));
    CHECK(strstr(npu_prog_session_error(src),
                 "copy of a routed output into state input 2 'cache' refused") != NULL);
    unsetenv("NPU_SIM_FAULT");
    npu_log_set_level(NPU_LOG_WARN);

    /* the job done (the simulator's core may still be on it under load: BUSY until then), the
     * write and the routed copy go through, then s runs */
    enum npu_status e = NPU_ERR_BUSY;
    for (int i = 0;
         i < 1000 && (e = npu_prog_session_write_state(s, 2, &blk, 2, 9)) == NPU_ERR_BUSY; i++)
        usleep(10000);
    CHECK_EQ_INT(NPU_OK, e);
    put_row(want, row, 9);
    CHECK_EQ_INT(NPU_OK, rsrc_run(src, xs));
    for (int c = 0; c < C; c++) {
        want[c * T + 5] = f16r(xs[c * 2]);
        want[c * T + 6] = f16r(xs[c * 2 + 1]);
    }
    CHECK_EQ_INT(NPU_OK, run(s, r1, 2, NULL, got, &st));
    put_row(want, r1, 2);
    CHECK_EQ_INT(0, mismatches(want, got));
out:
    npu_prog_session_destroy(src);
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(rm);
    npu_prog_model_destroy(m);
}

/* The layer split leaves a job with dynamic relocations whole (simulator). */
static void
test_split(struct npu_device *dev, const struct npu_program *p)
{
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, p, NULL, &m));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s));
    float r[C], got[C * T], want[C * T];
    for (int c = 0; c < C; c++)
        r[c] = (float)c - 7.5f;
    int64_t pos = 4;
    struct npu_tensor in[3] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, 1, 1}, .data = r},
        {.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}, .data = &pos},
        {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, T, 1}, .data = NULL},
    };
    struct npu_prog_split_info info;
    CHECK_EQ_INT(NPU_OK, npu_prog_session_split_layers(s, in, 3, 3, &info));
    CHECK_EQ_INT(0, (int)info.jobs_split);
    CHECK_EQ_INT(1, (int)info.submits);
    struct npu_prog_run_stats st;
    memset(&st, 0, sizeof(st));
    memset(want, 0, sizeof(want));
    CHECK_EQ_INT(NPU_OK, run(s, r, 9, NULL, got, &st));
    put_row(want, r, 4); /* the recording run wrote row 4 */
    put_row(want, r, 9);
    CHECK_EQ_INT(0, mismatches(want, got));
    CHECK_EQ_INT(0, (int)st.order_violations);
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
}

/* A job whose run-time write shares it with a read of part of the cache: recorded at a
 * position the read misses, the split still orders the read after the write on one core
 * (the write's task counts every position's bytes), even when every independent run is
 * split (NPU_SPLIT_FORCE=1); later runs at positions the read covers are in order. */
static void
test_split_reader(struct npu_device *dev)
{
    struct sprog h;
    sprog_make_ex(&h, true);
    char msg[256];
    CHECK_EQ_INT(NPU_OK, npu_program_validate(&h.p, msg, sizeof(msg)));
    CHECK_EQ_INT(2, (int)h.job.n_tasks);
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &h.p, NULL, &m));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s));
    float r[C], got[C * T], want[C * T];
    for (int c = 0; c < C; c++)
        r[c] = (float)c * 0.25f - 3.0f;
    int64_t pos = 6;
    float zero[C * T];
    memset(zero, 0, sizeof(zero));
    struct npu_tensor in[3] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, 1, 1}, .data = r},
        {.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}, .data = &pos},
        {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, T, 1}, .data = zero},
    };
    const char *old = getenv("NPU_SPLIT_FORCE");
    setenv("NPU_SPLIT_FORCE", "1", 1);
    struct npu_prog_split_info info;
    CHECK_EQ_INT(NPU_OK, npu_prog_session_split_layers(s, in, 3, 3, &info));
    if (old)
        setenv("NPU_SPLIT_FORCE", old, 1);
    else
        unsetenv("NPU_SPLIT_FORCE");
    CHECK_EQ_INT(2, (int)info.tasks);
    CHECK_EQ_INT(0, (int)info.parallel_segs); /* a chain on one core */
    CHECK_EQ_INT(1, (int)info.submits);
    struct npu_prog_run_stats st;
    memset(&st, 0, sizeof(st));
    memset(want, 0, sizeof(want));
    put_row(want, r, 6);
    CHECK_EQ_INT(NPU_OK, run(s, r, 1, NULL, got, &st));
    put_row(want, r, 1);
    CHECK_EQ_INT(0, mismatches(want, got));
    CHECK_EQ_INT(1, (int)st.submits);
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
    sprog_free(&h);
}

static void
expect_invalid(const struct npu_program *p, const char *words)
{
    char msg[512];
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_program_validate(p, msg, sizeof(msg)));
    if (!strstr(msg, words))
        fprintf(stderr, "validation message \"%s\" lacks \"%s\"\n", msg, words);
    CHECK(strstr(msg, words) != NULL);
}

static void
test_validate(const struct sprog *h)
{
    char msg[512];
    CHECK_EQ_INT(NPU_OK, npu_program_validate(&h->p, msg, sizeof(msg)));
    struct npu_program p = h->p;
    struct npu_prog_job j = h->job;
    struct npu_prog_dynreloc d[2] = {h->dyn, h->dyn};
    p.jobs = &j;
    j.dynrelocs = d;

    d[0].limit = T + 1; /* row T is past the cache */
    expect_invalid(&p, "position 12 at offset 192 + ");
    expect_invalid(&p, "runs past the STATE buffer");
    d[0] = h->dyn;
    d[0].stride = 8;
    expect_invalid(&p, "stride 8");
    d[0] = h->dyn;
    d[0].input = 0; /* the row: fp32 on the NPU */
    expect_invalid(&p, "position input 0 'row' must be one int32 or int64 on the host");
    d[0] = h->dyn;
    d[0].input = 3;
    expect_invalid(&p, "position input 3 (3 inputs)");
    d[0] = h->dyn;
    d[0].reloc = h->job.n_relocs;
    expect_invalid(&p, "dynreloc 0: relocation");
    d[0] = h->dyn;
    j.n_dynrelocs = 2;
    expect_invalid(&p, "relocation 0 is already dynamic");
    j.n_dynrelocs = 1;

    p = h->p;
    p.state_bytes = 64; /* smaller than the cache tensor */
    expect_invalid(&p, "outside the STATE buffer");
    /* a state input a CPU step could not write; a non-state input stays unwritable */
    struct npu_prog_tensor t[TS_COUNT];
    memcpy(t, h->t, sizeof(t));
    p = h->p;
    p.tensors = t;
    t[TS_CACHE].buffer = NPU_BUF_ACT;
    p.act_bytes = 1 << 16;
    expect_invalid(&p, "writes tensor 2 'cache', which is a graph input");
}

static void
test_npub(struct npu_device *dev, const struct sprog *h)
{
    void *buf = NULL;
    size_t len = 0;
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(&h->p, NULL, &buf, &len));
    struct npu_npub *a = NULL;
    char err[256] = "";
    CHECK_EQ_INT(NPU_OK, npu_npub_decode(buf, len, &a, err, sizeof(err)));
    CHECK_EQ_INT(3, (int)npu_npub_get_meta(a)->format_version);
    const struct npu_program *q = npu_npub_program(a);
    CHECK(q->state_bytes == h->p.state_bytes);
    CHECK_EQ_INT(1, (int)q->jobs[0].n_dynrelocs);
    CHECK(!memcmp(q->jobs[0].dynrelocs, &h->dyn, sizeof(h->dyn)));
    CHECK(q->tensors[TS_CACHE].buffer == NPU_BUF_STATE);
    /* it runs the same */
    test_runs(dev, q);
    /* the same bytes when saved again */
    void *buf2 = NULL;
    size_t len2 = 0;
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(q, NULL, &buf2, &len2));
    CHECK(len2 == len && !memcmp(buf, buf2, len));
    free(buf2);
    npu_npub_free(a);

    /* damage, checksums recomputed so that the checks behind them fire */
    uint8_t *b = malloc(len);
    uint64_t dsize = 0, doff = npub_section(buf, len, SEC_DYNRELOCS, &dsize);
    CHECK(doff != 0 && dsize == DYNRELOC_BYTES);
    struct {
        unsigned at; /* byte offset; below NPUB_HEADER_BYTES: in the header, else in DYNRELOCS */
        uint32_t value;
        const char *words;
    } dmg[] = {
        {H_FORMAT, 2, "section DYNRELOCS in a format 2 artifact"},
        {NPUB_HEADER_BYTES + D_JOB, 5, "dynreloc 0: job 5 (1 jobs)"},
        {NPUB_HEADER_BYTES + D_LIMIT, T + 1, "runs past the STATE buffer"},
        {NPUB_HEADER_BYTES + D_INPUT, 0, "must be one int32 or int64 on the host"},
        {NPUB_HEADER_BYTES + D_STRIDE, 0, "stride 0"},
    };
    for (size_t k = 0; k < sizeof(dmg) / sizeof(dmg[0]); k++) {
        memcpy(b, buf, len);
        if (dmg[k].at < NPUB_HEADER_BYTES)
            put32(b + dmg[k].at, dmg[k].value);
        else
            put32(b + doff + dmg[k].at - NPUB_HEADER_BYTES, dmg[k].value);
        npub_rehash(b, len, 0);
        err[0] = 0;
        npu_log_set_level(-1);
        CHECK(npu_npub_decode(b, len, &a, err, sizeof(err)) != NPU_OK);
        npu_log_set_level(NPU_LOG_WARN);
        if (!strstr(err, dmg[k].words))
            fprintf(stderr, "load error \"%s\" lacks \"%s\"\n", err, dmg[k].words);
        CHECK(strstr(err, dmg[k].words) != NULL);
    }
    free(b);
    free(buf);

    /* without state and dynamic relocations: format 1 as before (a copy into ACT) */
    struct sprog h1;
    sprog_make(&h1);
    h1.job.n_dynrelocs = 0;
    h1.job.dynrelocs = NULL;
    h1.t[TS_CACHE].buffer = NPU_BUF_ACT;
    h1.t[TS_CACHE].offset = 1024;
    h1.relocs[h1.dyn.reloc].buffer = NPU_BUF_ACT;
    h1.relocs[h1.dyn.reloc].offset = 1024;
    h1.p.state_bytes = 0;
    h1.p.act_bytes = 4096;
    h1.step.nout = 0; /* the cache is an input: not written by the job in this program */
    CHECK_EQ_INT(NPU_OK, npu_program_validate(&h1.p, err, sizeof(err)));
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(&h1.p, NULL, &buf, &len));
    CHECK_EQ_INT(NPU_OK, npu_npub_decode(buf, len, &a, err, sizeof(err)));
    CHECK_EQ_INT(1, (int)npu_npub_get_meta(a)->format_version);
    CHECK_EQ_INT(0, (int)npu_npub_program(a)->jobs[0].n_dynrelocs);
    npu_npub_free(a);
    free(buf);
    sprog_free(&h1);
}

int
main(void)
{
    /* the simulator, and whatever "auto" opens: the simulator again, or with the kernel
     * double preloaded (scripts/test.sh) the rknpu or rocket backend */
    static const char *const devs[] = {"sim", "auto"};
    for (int d = 0; d < 2; d++) {
        struct npu_device *dev = NULL;
        CHECK_EQ_INT(NPU_OK, npu_device_open(devs[d], &dev));
        if (!dev)
            return npu_test_done("test-state");
        struct sprog h;
        sprog_make(&h);
        test_runs(dev, &h.p);
        if (!d) {
            test_validate(&h);
            test_split(dev, &h.p);
            test_split_reader(dev);
            test_busy(dev, &h.p);
        }
        test_npub(dev, &h);
        sprog_free(&h);
        npu_device_close(dev);
    }
    return npu_test_done("test-state");
}
