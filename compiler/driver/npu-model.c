/* SPDX-License-Identifier: MIT */
/*
 * npu-model.c: the model API of npu-model.h.
 *
 * "cpu": loading imports the ONNX file (or an IR text file, .npuir), binds
 * symbolic dims, runs the pass pipeline and plans the CPU execution; a
 * session owns its activation arena and a CPU kernel context.
 *
 * "sim", "rknpu", "rocket", "auto" (the first hardware backend present, else
 * the simulator): the model is compiled through the whole pipeline -
 * front-end passes, partitioning by cost, lowering, codegen - or loaded from
 * a .npub artifact, with the compile cache (npu-build.h: options.cache_dir or
 * $NPU_CACHE_DIR), then handed to the program executor (core/runtime,
 * npu-program-exec.h) on a device opened through npu-device.h. A session is
 * an executor session bound to one core. With "auto", a model the NPU path
 * cannot take (it fails to compile) falls back to the cpu backend with a
 * warning.
 *
 * Metadata (npu_model_prop): from the artifact on the NPU backends (npu-build
 * reads the .onnx's metadata_props on a compile and writes them into every
 * artifact it makes), read from the .onnx itself on the cpu backend.
 *
 * Sessions of one model run concurrently from different threads (the model
 * itself is read-only once loaded).
 */
#include "npu/npu-model.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver-priv.h"
#include "exec-priv.h"
#include "npu/npu-build.h"
#include "npu/npu-exec.h"
#include "npu/npu-npub.h"
#include "npu/npu-onnx.h"
#include "npu/npu-passes.h"
#include "npu/npu-program-exec.h"

#define DOM "model"

struct npu_model {
    struct exec_plan *plan; /* cpu backend */
    struct npu_device *dev; /* NPU backends */
    struct npu_built *built;
    struct npu_prog_model *pm;
    uint32_t core_mask;
    unsigned n_cores;
    char backend_name[16];
    struct npu_io_info *inputs, *outputs;
    int ninputs, noutputs;
    int cpu_threads;
    const char *backend;
    const struct npu_model_prop *props; /* metadata: built's, or owned_props */
    uint32_t n_props;
    struct npu_model_prop *owned_props; /* cpu backend: read from the .onnx */
};

struct npu_session {
    struct npu_model *m;
    void *arena, *scratch;
    struct npu_cpu_ctx *ctx;
    struct npu_prog_session *ps; /* NPU backends */
};

static void
fill_io(struct npu_io_info *io, const struct npu_value *v)
{
    io->name = v->name;
    io->dtype = v->t.dtype;
    io->ndim = v->t.ndim;
    memcpy(io->dims, v->t.dims, sizeof(io->dims));
}

static void
fill_io_prog(struct npu_io_info *io, const struct npu_prog_tensor *t)
{
    io->name = t->name ? t->name : "";
    io->dtype = t->t.dtype;
    io->ndim = t->t.ndim;
    memcpy(io->dims, t->t.dims, sizeof(io->dims));
}

/* The NPU backends: compile or load the program, open the device, upload. */
static enum npu_status
load_npu(const char *path, struct npu_graph *g, const struct npu_model_options *o, const char *be,
         struct npu_model **out)
{
    struct npu_model *m = calloc(1, sizeof(*m));
    enum npu_status st;
    if (!m) {
        npu_graph_free(g);
        return NPU_ERR_NOMEM;
    }
    if ((st = npu_device_open(be, &m->dev))) {
        npu_graph_free(g);
        npu_err(DOM, "%s: backend '%s' has no device", path, be);
        goto err;
    }
    struct npu_device_info info;
    if ((st = npu_device_get_info(m->dev, &info))) {
        npu_graph_free(g);
        goto err;
    }
    snprintf(m->backend_name, sizeof(m->backend_name), "%s", info.backend);
    m->backend = m->backend_name;
    m->n_cores = info.n_cores ? info.n_cores : 1;
    m->core_mask = o->core_mask ? o->core_mask : (1u << m->n_cores) - 1;
    if (!(m->core_mask & ((1u << m->n_cores) - 1))) {
        npu_err(DOM, "%s: core mask 0x%x names none of the device's %u cores", path, o->core_mask,
                m->n_cores);
        npu_graph_free(g);
        st = NPU_ERR_INVALID;
        goto err;
    }
    /* next to a real NPU this host is the board's CPU: the CPU cost model's
     * auto rule measures it (npu-partition.h) */
    struct npu_build_options bo = {.dim_values = o->dim_values,
                                   .strict_dims = o->strict_dims,
                                   .cache_dir = o->cache_dir,
                                   .cpu_threads = o->cpu_threads,
                                   .on_device = !strcmp(info.backend, "rknpu") ||
                                                !strcmp(info.backend, "rocket")};
    bo.backend.hw_profile = o->hw_profile;
    bo.backend.layer_split = o->layer_split;
    if ((st = g ? npu_build_graph(g, path, &bo, &m->built) : npu_build(path, &bo, &m->built)))
        goto err;
    /* one copy of the weights: the program's host copy (codegen's anonymous mapping, or the
     * artifact's read-only file mapping) leaves the process as it is uploaded, and a program
     * compiled here reads its weights from the BO's mapping afterwards (a later
     * npu_npub_save writes them from there) */
    struct npu_prog_options po = {.release_host_weights = m->built->owned || m->built->art};
    if ((st = npu_prog_model_create(m->dev, m->built->prog, &po, &m->pm)))
        goto err;
    if (m->built->owned && m->built->owned->weights_bytes >= (1u << 20))
        m->built->owned->weights = npu_prog_model_weights(m->pm);
    const struct npu_program *p = m->built->prog;
    m->cpu_threads = o->cpu_threads;
    m->ninputs = p->n_inputs;
    m->noutputs = p->n_outputs;
    m->inputs = calloc((size_t)p->n_inputs + 1, sizeof(*m->inputs));
    m->outputs = calloc((size_t)p->n_outputs + 1, sizeof(*m->outputs));
    if (!m->inputs || !m->outputs) {
        st = NPU_ERR_NOMEM;
        goto err;
    }
    for (int i = 0; i < p->n_inputs; i++)
        fill_io_prog(&m->inputs[i], &p->tensors[p->inputs[i]]);
    for (int i = 0; i < p->n_outputs; i++)
        fill_io_prog(&m->outputs[i], &p->tensors[p->outputs[i]]);
    m->props = m->built->props;
    m->n_props = m->built->n_props;
    npu_info(DOM, "%s: backend %s, %d steps, %d NPU job(s)%s", path, m->backend, p->n_steps,
             p->n_jobs,
             m->built->from_cache  ? " (compile cache hit)"
             : m->built->from_npub ? " (artifact)"
                                   : "");
    *out = m;
    return NPU_OK;
err:
    npu_model_free(m);
    return st;
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
    if (npu_driver_check_nonempty(path))
        return NPU_ERR_CORRUPT;
    const char *be = o.backend ? o.backend : "auto";
    if (strcmp(be, "auto") && strcmp(be, "cpu") && strcmp(be, "sim") && strcmp(be, "rknpu") &&
        strcmp(be, "rocket")) {
        npu_err(DOM, "unknown backend '%s' (cpu, sim, rknpu, rocket, auto)", be);
        return NPU_ERR_INVALID;
    }
    if (strcmp(be, "cpu")) {
        enum npu_status st = load_npu(path, NULL, &o, be, out);
        if (st == NPU_OK || strcmp(be, "auto") || st == NPU_ERR_IO || st == NPU_ERR_CORRUPT ||
            st == NPU_ERR_VERSION || npu_driver_model_is(path, ".npub"))
            return st;
        npu_warn(DOM, "%s: the NPU path failed (%s); running on the cpu backend", path,
                 npu_status_str(st));
    }
    if (npu_driver_model_is(path, ".npub")) {
        npu_err(DOM,
                "%s: a compiled .npub artifact runs on the NPU backends (sim, rknpu, "
                "rocket, auto), not on cpu",
                path);
        return NPU_ERR_UNSUPPORTED;
    }
    struct npu_graph *g = NULL;
    enum npu_status st;
    if (npu_driver_model_is(path, ".npuir")) {
        st = npu_ir_load(path, &g);
    } else {
        struct npu_onnx_options oo = {.dim_values = o.dim_values, .strict_dims = o.strict_dims};
        st = npu_onnx_load(path, &oo, &g);
    }
    if (st)
        return st;
    if ((st = npu_model_from_graph(g, &o, 0, out)))
        return st;
    /* the same metadata the NPU backends take from their artifact (the
     * importer accepted the file, so this only fails without memory) */
    if (!npu_driver_model_is(path, ".npuir") &&
        (st = npu_npub_props_from_onnx_file(path, &(*out)->owned_props, &(*out)->n_props))) {
        npu_model_free(*out);
        *out = NULL;
        return st;
    }
    (*out)->props = (*out)->owned_props;
    npu_info(DOM, "%s: %d nodes on the cpu backend, %zu bytes of activations (peak)", path,
             npu_model_graph(*out)->nnodes, (*out)->plan->arena_bytes);
    return NPU_OK;
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

enum npu_status
npu_model_load_graph(struct npu_graph *g, const char *name, const struct npu_model_options *opts,
                     struct npu_model **out)
{
    struct npu_model_options o = opts ? *opts : (struct npu_model_options){0};
    const char *be = o.backend ? o.backend : "auto";
    *out = NULL;
    if (!g)
        return NPU_ERR_INVALID;
    if (!strcmp(be, "cpu"))
        return npu_model_from_graph(g, &o, 0, out);
    if (strcmp(be, "auto") && strcmp(be, "sim") && strcmp(be, "rknpu") && strcmp(be, "rocket")) {
        npu_err(DOM, "unknown backend '%s' (cpu, sim, rknpu, rocket, auto)", be);
        npu_graph_free(g);
        return NPU_ERR_INVALID;
    }
    return load_npu(name ? name : g->name, g, &o, be, out);
}

void
npu_model_free(struct npu_model *m)
{
    if (!m)
        return;
    exec_plan_free(m->plan);
    npu_prog_model_destroy(m->pm);
    npu_built_free(m->built);
    npu_device_close(m->dev);
    free(m->inputs);
    free(m->outputs);
    free(m->owned_props);
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

int
npu_model_num_props(const struct npu_model *m)
{
    return m ? (int)m->n_props : 0;
}

const struct npu_model_prop *
npu_model_prop(const struct npu_model *m, int i)
{
    return m && i >= 0 && (uint32_t)i < m->n_props ? &m->props[i] : NULL;
}

const char *
npu_model_prop_value(const struct npu_model *m, const char *key)
{
    for (uint32_t i = 0; m && key && i < m->n_props; i++)
        if (!strcmp(m->props[i].key, key))
            return m->props[i].value;
    return NULL;
}

const char *
npu_model_backend(const struct npu_model *m)
{
    return m ? m->backend : "none";
}

size_t
npu_model_activation_bytes(const struct npu_model *m)
{
    if (m && m->plan)
        return m->plan->arena_bytes;
    if (m && m->built)
        return (size_t)(m->built->prog->act_bytes + m->built->prog->host_bytes);
    return 0;
}

const struct npu_graph *
npu_model_graph(const struct npu_model *m)
{
    return m && m->plan ? m->plan->g : NULL;
}

const struct npu_program *
npu_model_program(const struct npu_model *m)
{
    return m && m->built ? m->built->prog : NULL;
}

bool
npu_model_from_cache(const struct npu_model *m)
{
    return m && m->built && m->built->from_cache;
}

double
npu_model_compile_seconds(const struct npu_model *m)
{
    return m && m->built ? m->built->compile_s : 0;
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
    if (m->pm) {
        if (core < 0 || (unsigned)core >= m->n_cores || !(m->core_mask & (1u << core))) {
            npu_err(DOM, "session: core %d is not one of the model's cores (mask 0x%x)", core,
                    m->core_mask);
            free(s);
            return NPU_ERR_INVALID;
        }
        enum npu_status st = npu_prog_session_create(m->pm, core, m->cpu_threads, &s->ps);
        if (st) {
            free(s);
            return st;
        }
        *out = s;
        return NPU_OK;
    }
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
    npu_prog_session_destroy(s->ps);
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
    if (s->ps) {
        struct npu_prog_run_stats rs = {0};
        enum npu_status st = npu_prog_session_run(s->ps, inputs, nin, outputs, nout, &rs);
        if (st)
            return st;
        if (stats) {
            memset(stats, 0, sizeof(*stats));
            stats->wall_s = rs.wall_s;
            stats->cpu_s = rs.cpu_s + rs.convert_s;
            stats->npu_modeled_s = rs.timing_valid ? rs.npu_modeled_s : 0;
            stats->submits = rs.submits;
            stats->tasks = rs.tasks;
            stats->dma_bytes = rs.dma_bytes;
            stats->mac_utilisation = rs.timing_valid ? rs.mac_utilisation : 0;
        }
        return NPU_OK;
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

enum npu_status
npu_session_run_detailed(struct npu_session *s, const struct npu_tensor *inputs, int nin,
                         struct npu_tensor *outputs, int nout, struct npu_prog_run_stats *rs)
{
    if (!s || !s->ps) {
        npu_err(DOM, "detailed run statistics exist on the NPU backends only");
        return NPU_ERR_UNSUPPORTED;
    }
    return npu_prog_session_run(s->ps, inputs, nin, outputs, nout, rs);
}

enum npu_status
npu_session_write_state(struct npu_session *s, int input, const struct npu_tensor *block, int axis,
                        int64_t start)
{
    if (!s || !s->ps) {
        npu_err(DOM, "state inputs exist on the NPU backends only");
        return NPU_ERR_UNSUPPORTED;
    }
    return npu_prog_session_write_state(s->ps, input, block, axis, start);
}

enum npu_status
npu_session_route_output(struct npu_session *s, int output, struct npu_session *dst, int input,
                         int axis, int64_t start)
{
    if (!s || !s->ps || (dst && !dst->ps)) {
        npu_err(DOM, "state inputs exist on the NPU backends only");
        return NPU_ERR_UNSUPPORTED;
    }
    return npu_prog_session_route_output(s->ps, output, dst ? dst->ps : NULL, input, axis, start);
}

enum npu_status
npu_session_raw_output(struct npu_session *s, int output, bool raw)
{
    if (!s || !s->ps) {
        npu_err(DOM, "outputs in the NPU layout exist on the NPU backends only");
        return NPU_ERR_UNSUPPORTED;
    }
    return npu_prog_session_raw_output(s->ps, output, raw);
}

enum npu_status
npu_session_output_argmax(struct npu_session *s, int output, int64_t base,
                          struct npu_prog_argmax *acc)
{
    if (!s || !s->ps) {
        npu_err(DOM, "outputs in the NPU layout exist on the NPU backends only");
        return NPU_ERR_UNSUPPORTED;
    }
    return npu_prog_session_output_argmax(s->ps, output, base, acc);
}

enum npu_status
npu_session_split_layers(struct npu_session *s, const struct npu_tensor *inputs, int nin,
                         unsigned cores, struct npu_prog_split_info *info)
{
    if (!s || !s->ps) {
        npu_err(DOM, "a layer split exists on the NPU backends only");
        return NPU_ERR_UNSUPPORTED;
    }
    return npu_prog_session_split_layers(s->ps, inputs, nin, cores, info);
}
