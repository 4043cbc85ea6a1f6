/* SPDX-License-Identifier: MIT */
/*
 * npu-be-pipeline.c: the back end's pass list, one readable function
 * (npu_backend_compile), the counterpart of the front end's npu_compile
 * (passes/npu-pipeline.c): partition, the lowering passes, codegen. It lives
 * in the driver because it is the one place that sees every back-end stage
 * (partition/, backend/, codegen/), which must not call each other in a
 * circle. Each pass runs through run_pass(), which verifies the graph
 * afterwards when asked and prints the IR after the passes named in
 * dump_after (npuc --dump-after), the same way the front end does.
 */
#include <stdio.h>

#include "npu/npu-build.h"
#include "npu/npu-passes.h"

#define DOM "backend"

struct run {
    struct npu_graph *g;
    const struct npu_backend_compile_options *o;
    const struct npu_backend_options *bo;
    bool verify;
};

static enum npu_status
finish_pass(struct run *r, const char *name, enum npu_status st)
{
    if (st) {
        npu_err(DOM, "pass %s failed: %s", name, npu_status_str(st));
        return st;
    }
    if (r->verify && npu_graph_verify(r->g)) {
        npu_err(DOM, "graph is invalid after pass %s (a compiler bug)", name);
        return NPU_ERR_INTERNAL;
    }
    if (r->o && npu_pass_listed(r->o->dump_after, name)) {
        FILE *f = r->o->dump_file ? r->o->dump_file : stderr;
        fprintf(f, "# ---- IR after %s\n", name);
        npu_ir_print(r->g, f, NULL);
    }
    return NPU_OK;
}

/* The passes, each as a function of the run (options differ per pass). */
static enum npu_status
partition(struct run *r)
{
    if (r->o && r->o->partition)
        return npu_partition(r->g, r->o->partition, r->o->report);
    return npu_partition_supported(r->g, r->bo);
}

static enum npu_status
center_streams(struct run *r)
{
    return npu_be_pass_center_streams(r->g, r->bo);
}

static enum npu_status
lower(struct run *r)
{
    return npu_be_pass_lower(r->g, r->bo);
}

static enum npu_status
prune_boundaries(struct run *r)
{
    return npu_be_pass_prune_boundaries(r->g);
}

static enum npu_status
widen_outputs(struct run *r)
{
    return npu_be_pass_widen_outputs(r->g);
}

static enum npu_status
fold_conversions(struct run *r)
{
    return npu_be_pass_fold_conversions(r->g);
}

#define RUN(pass)                                                                                  \
    do {                                                                                           \
        enum npu_status st_ = finish_pass(&r, #pass, pass(&r));                                    \
        if (st_)                                                                                   \
            return st_;                                                                            \
    } while (0)

static enum npu_status
run_passes(struct run r)
{
    npu_backend_register();
    RUN(partition);        /* device=npu | cpu per node: by cost, or every supported node */
    RUN(center_streams);   /* layer-norm centring folded into residual producers */
    RUN(lower);            /* device=npu nodes -> rk.* nodes through the handler table */
    RUN(prune_boundaries); /* rk.ToHost / rk.ToNpu nobody reads */
    RUN(widen_outputs);    /* convs read only by the host as f32 write f32 */
    RUN(fold_conversions); /* int8 Q / DQ and views on the CPU done by the conversions */
    return NPU_OK;
}

const char *const *
npu_backend_pass_names(void)
{
    static const char *const names[] = {
        "partition",     "center_streams",   "lower", "prune_boundaries",
        "widen_outputs", "fold_conversions", NULL};
    return names;
}

static const struct npu_backend_options default_opts;

enum npu_status
npu_backend_compile(struct npu_graph *g, const struct npu_backend_compile_options *o,
                    struct npu_program **out)
{
    *out = NULL;
    const struct npu_backend_options *bo = o && o->backend ? o->backend : &default_opts;
    struct run r = {g, o, bo, o && o->verify > 0};
    enum npu_status st = run_passes(r);
    if (st)
        return st;
    if (o && o->emit_ir && (st = npu_ir_print(g, o->emit_ir, NULL)))
        return st;
    return npu_codegen_ex(g, bo, o && o->release_consts ? NPU_CODEGEN_RELEASE_CONSTS : 0, out);
}

enum npu_status
npu_lower_graph(struct npu_graph *g, const struct npu_backend_options *o)
{
    struct npu_backend_compile_options co = {.backend = o};
    struct run r = {g, &co, o ? o : &default_opts, false};
    return run_passes(r);
}
