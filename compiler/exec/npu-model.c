/* SPDX-License-Identifier: MIT */
/*
 * npu-model.c: the model API of npu-model.h for the "cpu" backend (and
 * "auto", which resolves to it until the NPU back end exists). Loading
 * imports the ONNX file (or an IR text file, .npuir), binds symbolic dims,
 * runs the pass pipeline and plans the CPU execution; a session owns its
 * activation arena and a CPU kernel context, so sessions of one model run
 * concurrently from different threads (the model itself is read-only once
 * loaded).
 */
#include "npu/npu-model.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec-priv.h"
#include "npu/npu-onnx.h"
#include "npu/npu-exec.h"
#include "npu/npu-passes.h"

#define DOM "model"

struct npu_model {
    struct exec_plan *plan;
    struct npu_io_info *inputs, *outputs;
    int ninputs, noutputs;
    int cpu_threads;
    const char *backend;
};

struct npu_session {
    struct npu_model *m;
    void *arena, *scratch;
    struct npu_cpu_ctx *ctx;
};

static bool
ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static void
fill_io(struct npu_io_info *io, const struct npu_value *v)
{
    io->name = v->name;
    io->dtype = v->t.dtype;
    io->ndim = v->t.ndim;
    memcpy(io->dims, v->t.dims, sizeof(io->dims));
}

enum npu_status
npu_model_load(const char *path, const struct npu_model_options *opts, struct npu_model **out)
{
    struct npu_model_options o = opts ? *opts : (struct npu_model_options){0};
    *out = NULL;
    if (!path) {
        npu_err(DOM, "no model path given");
        return NPU_ERR_INVALID;
    }
    const char *be = o.backend ? o.backend : "auto";
    if (strcmp(be, "auto") && strcmp(be, "cpu")) {
        if (!strcmp(be, "sim") || !strcmp(be, "rknpu") || !strcmp(be, "rocket")) {
            npu_err(DOM, "backend '%s' is not available yet: the NPU back end (partitioning, "
                    "codegen) is not built; use backend 'cpu'", be);
            return NPU_ERR_UNSUPPORTED;
        }
        npu_err(DOM, "unknown backend '%s' (cpu, sim, rknpu, rocket, auto)", be);
        return NPU_ERR_INVALID;
    }
    if (ends_with(path, ".npub")) {
        npu_err(DOM, "%s: compiled .npub artifacts are not supported by the cpu backend yet",
                path);
        return NPU_ERR_UNSUPPORTED;
    }
    struct npu_graph *g = NULL;
    enum npu_status st;
    if (ends_with(path, ".npuir")) {
        st = npu_ir_load(path, &g);
    } else {
        struct npu_onnx_options oo = {.dim_values = o.dim_values};
        st = npu_onnx_load(path, &oo, &g);
    }
    if (st)
        return st;
    st = npu_model_from_graph(g, &o, 0, out);
    if (!st)
        npu_info(DOM, "%s: %d nodes on the cpu backend, %zu bytes of activations (peak)", path,
                 npu_model_graph(*out)->nnodes, (*out)->plan->arena_bytes);
    return st;
}

enum npu_status
npu_model_from_graph(struct npu_graph *g, const struct npu_model_options *opts, unsigned flags,
                     struct npu_model **out)
{
    struct npu_model_options o = opts ? *opts : (struct npu_model_options){0};
    enum npu_status st;
    *out = NULL;
    if (!(flags & NPU_EXEC_NO_PASSES) && (st = npu_compile(g, NULL))) {
        npu_graph_free(g);
        return st;
    }
    struct npu_model *m = calloc(1, sizeof(*m));
    if (!m) {
        npu_graph_free(g);
        return NPU_ERR_NOMEM;
    }
    if ((st = exec_plan_build(g, flags, &m->plan))) {
        npu_graph_free(g);
        free(m);
        return st;
    }
    m->backend = "cpu";
    m->cpu_threads = o.cpu_threads;
    m->ninputs = g->ninputs;
    m->noutputs = g->noutputs;
    m->inputs = calloc((size_t)g->ninputs + 1, sizeof(*m->inputs));
    m->outputs = calloc((size_t)g->noutputs + 1, sizeof(*m->outputs));
    if (!m->inputs || !m->outputs) {
        npu_model_free(m);
        return NPU_ERR_NOMEM;
    }
    for (int i = 0; i < g->ninputs; i++)
        fill_io(&m->inputs[i], g->inputs[i]);
    for (int i = 0; i < g->noutputs; i++)
        fill_io(&m->outputs[i], g->outputs[i]);
    *out = m;
    return NPU_OK;
}

void
npu_model_free(struct npu_model *m)
{
    if (!m)
        return;
    exec_plan_free(m->plan);
    free(m->inputs);
    free(m->outputs);
    free(m);
}

int
npu_model_num_inputs(const struct npu_model *m)
{
    return m ? m->ninputs : 0;
}

int
npu_model_num_outputs(const struct npu_model *m)
{
    return m ? m->noutputs : 0;
}

const struct npu_io_info *
npu_model_input(const struct npu_model *m, int i)
{
    return m && i >= 0 && i < m->ninputs ? &m->inputs[i] : NULL;
}

const struct npu_io_info *
npu_model_output(const struct npu_model *m, int i)
{
    return m && i >= 0 && i < m->noutputs ? &m->outputs[i] : NULL;
}

const char *
npu_model_backend(const struct npu_model *m)
{
    return m ? m->backend : "none";
}

size_t
npu_model_activation_bytes(const struct npu_model *m)
{
    return m ? m->plan->arena_bytes : 0;
}

const struct npu_graph *
npu_model_graph(const struct npu_model *m)
{
    return m ? m->plan->g : NULL;
}

enum npu_status
npu_session_create(struct npu_model *m, int core, struct npu_session **out)
{
    *out = NULL;
    if (!m)
        return NPU_ERR_INVALID;
    struct npu_session *s = calloc(1, sizeof(*s));
    if (!s)
        return NPU_ERR_NOMEM;
    s->m = m;
    size_t ab = NPU_ALIGN(m->plan->arena_bytes ? m->plan->arena_bytes : 64, 64);
    size_t sb = NPU_ALIGN(m->plan->scratch_bytes ? m->plan->scratch_bytes : 64, 64);
    s->arena = aligned_alloc(64, ab);
    s->scratch = aligned_alloc(64, sb);
    s->ctx = npu_cpu_ctx_create(m->cpu_threads);
    if (!s->arena || !s->scratch || !s->ctx) {
        npu_err(DOM, "cannot allocate a session (%zu bytes of activations)", ab);
        npu_session_destroy(s);
        return NPU_ERR_NOMEM;
    }
    *out = s;
    return NPU_OK;
}

void
npu_session_destroy(struct npu_session *s)
{
    if (!s)
        return;
    npu_cpu_ctx_destroy(s->ctx);
    free(s->arena);
    free(s->scratch);
    free(s);
}

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum npu_status
npu_session_run(struct npu_session *s, const struct npu_tensor *inputs, int nin,
                struct npu_tensor *outputs, int nout, struct npu_run_stats *stats)
{
    if (!s || (nin && !inputs) || (nout && !outputs))
        return NPU_ERR_INVALID;
    const struct npu_model *m = s->m;
    if (nin != m->ninputs || nout != m->noutputs) {
        npu_err(DOM, "run: model has %d inputs and %d outputs, %d and %d given", m->ninputs,
                m->noutputs, nin, nout);
        return NPU_ERR_INVALID;
    }
    for (int i = 0; i < nin; i++) {
        const struct npu_io_info *io = &m->inputs[i];
        const struct npu_tensor *t = &inputs[i];
        bool ok = t->dtype == io->dtype && t->ndim == io->ndim &&
                  !memcmp(t->dims, io->dims, sizeof(int64_t) * (size_t)io->ndim) &&
                  (t->data || npu_tensor_numel(t) == 0);
        if (!ok) {
            npu_err(DOM, "run: input %d ('%s') must be %s of rank %d with the model's dims", i,
                    io->name, npu_dtype_name(io->dtype), io->ndim);
            return NPU_ERR_INVALID;
        }
    }
    double t0 = now(), cpu = 0;
    enum npu_status st = exec_run(m->plan, s->ctx, s->arena, s->scratch, inputs, &cpu);
    if (st)
        return st;
    for (int i = 0; i < nout; i++) {
        const struct exec_slot *sl = &m->plan->slots[m->plan->output_slot[i]];
        struct npu_tensor *o = &outputs[i];
        *o = sl->t;
        if (m->plan->output_copy[i] >= 0)
            o->data = (char *)s->arena + m->plan->output_copy[i];
        else
            o->data = (char *)s->arena + sl->offset;
    }
    if (stats) {
        memset(stats, 0, sizeof(*stats));
        stats->wall_s = now() - t0;
        stats->cpu_s = cpu;
    }
    return NPU_OK;
}
