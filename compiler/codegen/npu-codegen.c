/* SPDX-License-Identifier: MIT */
/*
 * npu-codegen.c: a lowered graph -> struct npu_program (npu-program.h): the
 * program's tensors, steps and jobs.
 *
 *  1. Steps. Walking the nodes in order, consecutive rk.* compute nodes form
 *     one NPU job (one submit); a CPU node closes the job. rk.ToNpu becomes a
 *     CONVERT step placed before the job that reads it (its host input always
 *     exists by then: only a CPU node can make a host value, and a CPU node
 *     ends the job), rk.ToHost a CONVERT step after its job.
 *  2. Memory: planned first, by npu-memplan.c.
 *  3. Jobs. Each rk.* node's emitter appends its tasks to the job's stream;
 *     the stream is laid out at address 0 with 64-byte segments and chained
 *     (core/hw npu-task.h); the program keeps the image, the task list and
 *     the relocations (buffer id + offset).
 */
#include <stdlib.h>
#include <string.h>

#include "npu-codegen-priv.h"

/* ---- codegen state ---------------------------------------------------------------- */

static bool
grow(void **p, int *cap, int need, size_t esz)
{
    if (need <= *cap)
        return true;
    int n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, esz * (size_t)n);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

enum npu_status
npu_cg_addr(struct npu_cg *cg, const struct npu_value *v, struct npu_ref_buf *out)
{
    if (!v || v->id >= cg->nvi) {
        npu_err(NPU_BE_DOM, "codegen: no NPU placement for a value");
        return NPU_ERR_INTERNAL;
    }
    const struct vinfo *i = &cg->vi[v->id];
    if (i->npu_const) {
        out->buffer = NPU_BUF_WEIGHTS;
        out->offset = (uint32_t)i->w_off;
    } else if (i->state || i->state_alias) {
        out->buffer = NPU_BUF_STATE;
        out->offset = (uint32_t)i->state_off;
    } else if (i->npu_val) {
        out->buffer = NPU_BUF_ACT;
        out->offset = (uint32_t)i->act_off;
    } else {
        npu_err(NPU_BE_DOM, "codegen: value '%s' is not in NPU memory", v->name);
        return NPU_ERR_INTERNAL;
    }
    return NPU_OK;
}

enum npu_status
npu_cg_dynreloc(struct npu_cg *cg, uint32_t task, struct npu_ref_buf where, const char *pos_input,
                uint32_t stride, uint32_t limit, uint32_t extent)
{
    int k = -1;
    for (int i = 0; pos_input && i < cg->g->ninputs; i++)
        if (cg->g->inputs[i]->name && !strcmp(cg->g->inputs[i]->name, pos_input))
            k = i;
    if (k < 0) {
        npu_err(NPU_BE_DOM, "codegen: run-time write position '%s' is not a graph input",
                pos_input ? pos_input : "");
        return NPU_ERR_INVALID;
    }
    if (!grow((void **)&cg->dyn, &cg->cap_dyn, cg->n_dyn + 1, sizeof(*cg->dyn)))
        return NPU_ERR_NOMEM;
    cg->dyn[cg->n_dyn++] =
        (struct cg_dyn){task, where.buffer, where.offset, {0, (uint32_t)k, stride, limit, extent}};
    return NPU_OK;
}

/* The job's dynamic relocations: each recorded write's relocation is the one address
 * register of its task that points at the written address. */
static enum npu_status
close_dyn(struct npu_cg *cg, const struct npu_regcmd_image *img, struct npu_prog_job *j,
          const char *name)
{
    if (!cg->n_dyn)
        return NPU_OK;
    struct npu_prog_dynreloc *d = npu_program_alloc(cg->p, sizeof(*d) * (size_t)cg->n_dyn);
    if (!d)
        return NPU_ERR_NOMEM;
    for (int k = 0; k < cg->n_dyn; k++) {
        const struct cg_dyn *y = &cg->dyn[k];
        int found = -1, count = 0;
        if (y->task < img->n_tasks) {
            uint32_t q0 = img->tasks[y->task].start, q1 = q0 + img->tasks[y->task].n_body;
            for (uint32_t r = 0; r < img->n_relocs; r++)
                if (img->relocs[r].qword >= q0 && img->relocs[r].qword < q1 &&
                    img->relocs[r].buffer == y->buffer && img->relocs[r].offset == y->offset) {
                    found = (int)r;
                    count++;
                }
        }
        if (count != 1) {
            npu_err(NPU_BE_DOM,
                    "codegen: job '%s': the run-time write of task %u has %d address registers "
                    "at its destination (one expected)",
                    name, y->task, count);
            return NPU_ERR_INTERNAL;
        }
        d[k] = y->d;
        d[k].reloc = (uint32_t)found;
    }
    j->dynrelocs = d;
    j->n_dynrelocs = (uint32_t)cg->n_dyn;
    return NPU_OK;
}

struct npu_stream *
npu_cg_stream(struct npu_cg *cg)
{
    return &cg->s;
}

const struct npu_backend_options *
npu_cg_options(struct npu_cg *cg)
{
    return cg->o;
}

bool
cg_is_compute(const struct npu_node *n)
{
    return npu_op_is_rk(n->op) && n->op != NPU_OP_RK_TO_NPU && n->op != NPU_OP_RK_TO_HOST;
}

/* ---- tensors ----------------------------------------------------------------------- */

static int
add_tensor(struct npu_cg *cg, const struct npu_value *v, bool npu)
{
    if (!grow((void **)&cg->tensors, &cg->cap_tensors, cg->n_tensors + 1, sizeof(*cg->tensors)))
        return -1;
    struct npu_prog_tensor *t = &cg->tensors[cg->n_tensors];
    struct vinfo *i = &cg->vi[v->id];
    memset(t, 0, sizeof(*t));
    t->name = npu_program_strdup(cg->p, v->name);
    t->t = v->t;
    t->t.data = NULL;
    t->io_input = t->io_output = -1;
    t->mem_dtype = v->t.dtype;
    if (npu) {
        uint32_t view[3];
        t->place = NPU_PLACE_NPU;
        if (!npu_rk_view(v, view) && !npu_rk_canonical_view(&v->t, view))
            return -1;
        t->npu_c = view[0];
        t->npu_h = view[1];
        t->npu_w = view[2];
        t->layout = NPU_LAYOUT_NC1HWC2;
        if (i->npu_const) {
            t->buffer = NPU_BUF_WEIGHTS;
            t->offset = i->w_off;
            t->bytes = (uint64_t)npu_tensor_nbytes(&v->t);
            t->layout = NPU_LAYOUT_NCHW;
        } else {
            if (!npu_rk_packed(v)) {
                /* a reader asked for padded surfaces; CONVERT steps read packed ones */
                npu_err(NPU_BE_DOM, "value '%s' has padded surfaces and cannot be converted",
                        v->name);
                return -1;
            }
            t->buffer = i->state || i->state_alias ? NPU_BUF_STATE : NPU_BUF_ACT;
            t->offset = i->state || i->state_alias ? i->state_off : i->act_off;
            t->bytes = npu_rk_value_bytes(v);
            if (i->state) {
                /* the program's input: the graph input's logical dtype, held as the
                 * conversion's NPU dtype (the runtime converts it when given data) */
                t->io_input = i->state_input;
                t->t.dtype = cg->g->inputs[i->state_input]->t.dtype;
            }
            t->npu_order = npu_rk_view_order(v);
            if (!strcmp(npu_rk_layout(v), "small_c"))
                t->layout = NPU_LAYOUT_SMALL_C;
        }
    } else {
        t->place = NPU_PLACE_HOST;
        t->layout = NPU_LAYOUT_NCHW;
        t->bytes = (uint64_t)npu_tensor_nbytes(&v->t);
        if (v->kind == NPU_VALUE_CONST) {
            void *d = npu_program_alloc(cg->p, (size_t)t->bytes);
            if (!d)
                return -1;
            memcpy(d, v->t.data, (size_t)t->bytes);
            t->t.data = d;
        } else {
            t->offset = i->host_off;
        }
        for (int k = 0; k < cg->g->ninputs; k++)
            if (cg->g->inputs[k] == v)
                t->io_input = k;
        for (int k = 0; k < cg->g->noutputs; k++)
            if (cg->g->outputs[k] == v)
                t->io_output = k;
    }
    if (!t->name)
        return -1;
    if (npu)
        i->npu = cg->n_tensors;
    else
        i->host = cg->n_tensors;
    return cg->n_tensors++;
}

static int
tensor_of(struct npu_cg *cg, const struct npu_value *v, bool npu)
{
    struct vinfo *i = &cg->vi[v->id];
    int t = npu ? i->npu : i->host;
    return t >= 0 ? t : add_tensor(cg, v, npu);
}

/* ---- steps ----------------------------------------------------------------------- */

static struct npu_prog_step *
new_step(struct npu_cg *cg, enum npu_step_kind kind, const char *name)
{
    if (!grow((void **)&cg->steps, &cg->cap_steps, cg->n_steps + 1, sizeof(*cg->steps)))
        return NULL;
    struct npu_prog_step *s = &cg->steps[cg->n_steps++];
    memset(s, 0, sizeof(*s));
    s->kind = kind;
    s->job = -1;
    s->name = npu_program_strdup(cg->p, name ? name : "");
    return s;
}

static enum npu_status
convert_step(struct npu_cg *cg, const struct npu_node *n)
{
    bool to_npu = n->op == NPU_OP_RK_TO_NPU;
    int a = tensor_of(cg, n->in[0], !to_npu), b = tensor_of(cg, n->out[0], to_npu);
    struct npu_prog_step *s = new_step(cg, NPU_STEP_CONVERT, n->name);
    int *io = npu_program_alloc(cg->p, 2 * sizeof(int));
    if (a < 0 || b < 0 || !s || !io)
        return NPU_ERR_NOMEM;
    io[0] = a;
    io[1] = b;
    /* uint8 on the host, int8 on the NPU: value - 128 */
    struct npu_prog_tensor *ht = &cg->tensors[to_npu ? a : b], *nt = &cg->tensors[to_npu ? b : a];
    if (ht->t.dtype == NPU_DTYPE_UINT8 && nt->mem_dtype == NPU_DTYPE_INT8)
        nt->npu_offset = -128;
    s->in = io;
    s->nin = 1;
    s->out = io + 1;
    s->nout = 1;
    return NPU_OK;
}

static enum npu_status
copy_attrs(struct npu_cg *cg, const struct npu_node *n, struct npu_attrs *out)
{
    struct npu_attr *a = npu_program_alloc(cg->p, sizeof(*a) * (size_t)(n->nattr ? n->nattr : 1));
    if (!a)
        return NPU_ERR_NOMEM;
    for (int i = 0; i < n->nattr; i++) {
        const struct npu_attr *s = &n->attr[i];
        a[i] = *s;
        a[i].name = npu_program_strdup(cg->p, s->name);
        switch (s->type) {
        case NPU_ATTR_STRING: a[i].s = npu_program_strdup(cg->p, s->s); break;
        case NPU_ATTR_INTS: {
            int64_t *v = npu_program_alloc(cg->p, sizeof(int64_t) * (s->n ? s->n : 1));
            if (!v)
                return NPU_ERR_NOMEM;
            memcpy(v, s->ints, sizeof(int64_t) * s->n);
            a[i].ints = v;
            break;
        }
        case NPU_ATTR_FLOATS: {
            float *v = npu_program_alloc(cg->p, sizeof(float) * (s->n ? s->n : 1));
            if (!v)
                return NPU_ERR_NOMEM;
            memcpy(v, s->floats, sizeof(float) * s->n);
            a[i].floats = v;
            break;
        }
        case NPU_ATTR_STRINGS: {
            const char **v = npu_program_alloc(cg->p, sizeof(char *) * (s->n ? s->n : 1));
            if (!v)
                return NPU_ERR_NOMEM;
            for (size_t k = 0; k < s->n; k++)
                v[k] = npu_program_strdup(cg->p, s->strs[k]);
            a[i].strs = v;
            break;
        }
        case NPU_ATTR_TENSOR: {
            struct npu_tensor *t = npu_program_alloc(cg->p, sizeof(*t));
            if (!t)
                return NPU_ERR_NOMEM;
            *t = *s->t;
            int64_t nb = npu_tensor_nbytes(s->t);
            if (s->t->data && nb > 0) {
                t->data = npu_program_alloc(cg->p, (size_t)nb);
                if (!t->data)
                    return NPU_ERR_NOMEM;
                memcpy(t->data, s->t->data, (size_t)nb);
            }
            a[i].t = t;
            break;
        }
        default: break;
        }
    }
    out->v = a;
    out->n = (size_t)n->nattr;
    return NPU_OK;
}

static enum npu_status
cpu_step(struct npu_cg *cg, const struct npu_node *n)
{
    struct npu_prog_step *s = new_step(cg, NPU_STEP_CPU, n->name);
    int *in = npu_program_alloc(cg->p, sizeof(int) * (size_t)(n->nin + 1));
    int *out = npu_program_alloc(cg->p, sizeof(int) * (size_t)(n->nout + 1));
    if (!s || !in || !out)
        return NPU_ERR_NOMEM;
    s->op = n->op;
    for (int i = 0; i < n->nin; i++) {
        /* an NPU value read by a CPU node where it is: npu.Attention's K / V over a resident
         * cache (npu-lower.c attn_reads_state; the runtime's validator checks the form) */
        const struct npu_node *pr = n->in[i] ? n->in[i]->producer : NULL;
        bool npu = pr && npu_op_is_rk(pr->op) && pr->op != NPU_OP_RK_TO_HOST;
        in[i] = n->in[i] ? tensor_of(cg, n->in[i], npu) : -1;
        /* its logical dtype the host side's (as a state input's is), held as fp16: the CPU
         * op's shape inference at load sees the fp32 operands it was compiled with */
        if (npu && in[i] >= 0 && cg->tensors[in[i]].mem_dtype == NPU_DTYPE_FP16)
            cg->tensors[in[i]].t.dtype = NPU_DTYPE_FP32;
        if (n->in[i] && in[i] < 0)
            return NPU_ERR_NOMEM;
    }
    for (int i = 0; i < n->nout; i++)
        if ((out[i] = tensor_of(cg, n->out[i], false)) < 0)
            return NPU_ERR_NOMEM;
    s->in = in;
    s->nin = n->nin;
    s->out = out;
    s->nout = n->nout;
    return copy_attrs(cg, n, &s->attrs);
}

/* Closes the open job: layout, chain, copy into the program. */
static enum npu_status
close_job(struct npu_cg *cg, const char *name)
{
    if (!cg->s.n_tasks)
        return NPU_OK;
    struct npu_regcmd_image img;
    enum npu_status st = npu_stream_layout(&cg->s, 0, NPU_SEGMENT_ALIGN, &img);
    if (st) {
        npu_err(NPU_BE_DOM, "codegen: job layout: %s", npu_stream_error(&cg->s));
        return st;
    }
    if ((st = npu_image_chain(&img, 0, img.n_tasks, 1)))
        goto out;
    st = NPU_ERR_NOMEM;
    if (!grow((void **)&cg->jobs, &cg->cap_jobs, cg->n_jobs + 1, sizeof(*cg->jobs)))
        goto out;
    struct npu_prog_job *j = &cg->jobs[cg->n_jobs];
    memset(j, 0, sizeof(*j));
    uint64_t *q = npu_program_alloc(cg->p, img.n_qwords * 8);
    struct npu_prog_task *t = npu_program_alloc(cg->p, sizeof(*t) * img.n_tasks);
    struct npu_prog_reloc *r = npu_program_alloc(cg->p, sizeof(*r) * (img.n_relocs + 1));
    if (!q || !t || !r)
        goto out;
    memcpy(q, img.qwords, img.n_qwords * 8);
    if ((int)img.n_tasks != cg->n_task_node) {
        npu_err(NPU_BE_DOM, "codegen: job '%s' lays out %u tasks, its nodes emitted %d", name,
                img.n_tasks, cg->n_task_node);
        st = NPU_ERR_INTERNAL;
        goto out;
    }
    for (uint32_t i = 0; i < img.n_tasks; i++) {
        /* each task named after the node that emitted it: npu-bench attributes the
         * simulator's per-task figures by it (one copy per distinct name) */
        if (!i || strcmp(cg->task_node[i], cg->task_node[i - 1]))
            t[i].name = npu_program_strdup(cg->p, cg->task_node[i]);
        else
            t[i].name = t[i - 1].name;
        if (!t[i].name)
            goto out;
        t[i].start = img.tasks[i].start;
        t[i].n_body = img.tasks[i].n_body;
        t[i].enable_mask = img.tasks[i].enable_mask;
        t[i].int_mask = img.tasks[i].int_mask;
    }
    for (uint32_t i = 0; i < img.n_relocs; i++) {
        r[i].qword = img.relocs[i].qword;
        r[i].buffer = img.relocs[i].buffer;
        r[i].offset = img.relocs[i].offset;
    }
    j->regcmd = q;
    j->n_qwords = (uint32_t)img.n_qwords;
    j->tasks = t;
    j->n_tasks = img.n_tasks;
    j->relocs = r;
    j->n_relocs = img.n_relocs;
    j->segment_align = img.align;
    j->modeled_s = cg->job_s + npu_timing_model()->submit_overhead_s;
    if ((st = close_dyn(cg, &img, j, name)))
        goto out;
    st = NPU_ERR_NOMEM;
    struct npu_prog_step *s = new_step(cg, NPU_STEP_NPU_JOB, name);
    if (!s)
        goto out;
    s->job = cg->n_jobs++;
    st = NPU_OK;
out:
    npu_image_fini(&img);
    npu_stream_fini(&cg->s);
    npu_stream_init(&cg->s);
    cg->job_s = 0;
    cg->n_task_node = 0;
    cg->n_dyn = 0;
    return st;
}

/* Conversions met while a job was open: to the NPU (run before it) and to the host (after). */
struct node_list {
    const struct npu_node **v;
    int n, cap;
};

/* Closes the open job with the conversions met while it was open around it, and empties
 * both lists. */
static enum npu_status
close_job_between(struct npu_cg *cg, struct node_list *pre, struct node_list *post,
                  const char *name)
{
    enum npu_status st = NPU_OK;
    for (int k = 0; !st && k < pre->n; k++)
        st = convert_step(cg, pre->v[k]);
    if (!st)
        st = close_job(cg, name);
    for (int k = 0; !st && k < post->n; k++)
        st = convert_step(cg, post->v[k]);
    pre->n = post->n = 0;
    return st;
}

/* ---- driver ---------------------------------------------------------------------- */

enum npu_status
npu_codegen(const struct npu_graph *g, const struct npu_backend_options *o,
            struct npu_program **out)
{
    return npu_codegen_ex(g, o, 0, out);
}

enum npu_status
npu_codegen_ex(const struct npu_graph *g, const struct npu_backend_options *o, unsigned flags,
               struct npu_program **out)
{
    static const struct npu_backend_options defaults;
    struct npu_cg cg = {
        .g = g, .o = o ? o : &defaults, .release_consts = flags & NPU_CODEGEN_RELEASE_CONSTS};
    enum npu_status st = NPU_ERR_NOMEM;
    int *job_of = NULL;
    *out = NULL;
    npu_stream_init(&cg.s);
    if (npu_graph_update_uses((struct npu_graph *)g))
        return NPU_ERR_NOMEM;
    int maxid = 0;
    for (int k = 0; k < g->nvalues; k++)
        if (g->values[k]->id + 1 > maxid)
            maxid = g->values[k]->id + 1;
    cg.nvi = maxid;
    cg.vi = calloc((size_t)maxid + 1, sizeof(*cg.vi));
    cg.p = npu_program_new();
    if (!cg.vi || !cg.p)
        goto fail;
    if ((st = cg_analyse(&cg, &job_of)) || (st = cg_plan_memory(&cg)))
        goto fail;

    /* steps */
    struct node_list pre = {0}, post = {0};
    bool open = false; /* a job open */
    const char *job_name = NULL;
    st = NPU_OK;
    npu_graph_for_each_node (g, n) {
        if (n->op == NPU_OP_RK_TO_NPU && cg.vi[n->out[0]->id].state) {
            continue; /* a state input: the program's input itself (below) */
        } else if (n->op == NPU_OP_RK_TO_NPU) {
            if (!open) {
                st = convert_step(&cg, n);
            } else if (grow((void **)&pre.v, &pre.cap, pre.n + 1, sizeof(*pre.v))) {
                pre.v[pre.n++] = n;
            } else {
                st = NPU_ERR_NOMEM;
            }
        } else if (n->op == NPU_OP_RK_TO_HOST) {
            if (!open)
                st = convert_step(&cg, n);
            else if (grow((void **)&post.v, &post.cap, post.n + 1, sizeof(*post.v)))
                post.v[post.n++] = n;
            else
                st = NPU_ERR_NOMEM;
        } else if (cg_is_compute(n)) {
            enum npu_status (*emit)(struct npu_cg *, const struct npu_node *) =
                npu_rk_emitter(n->op);
            if (!emit) {
                npu_err(NPU_BE_DOM, "codegen: no emitter for %s", npu_op_name(n->op));
                st = NPU_ERR_UNSUPPORTED;
                break;
            }
            /* A job holds at most NPU_PROG_MAX_JOB_TASKS tasks (one launch): a node that
             * would pass it starts the next job. The conversions met so far belong to
             * nodes already in the job (into it before, out of it after). */
            int next_tasks = npu_backend_node_tasks(n);
            /* Run-time positioned writes (rk.Dpu "dyn") stay in the job around them: the
             * layer split orders the write against every byte it can reach at any
             * position (npu-program-exec.c dyn_widen), so it costs no submit of its own. */
            if (open && next_tasks > 0 &&
                npu_cg_stream(&cg)->n_tasks + (uint32_t)next_tasks > NPU_PROG_MAX_JOB_TASKS) {
                st = close_job_between(&cg, &pre, &post, job_name);
                open = false;
                if (st)
                    break;
            }
            if (!open) {
                open = true;
                job_name = n->name;
            }
            uint32_t before = npu_cg_stream(&cg)->n_tasks;
            st = emit(&cg, n);
            cg.job_s += npu_node_float(n, "modeled_us", 0.0f) * 1e-6;
            uint32_t made = npu_cg_stream(&cg)->n_tasks - before;
            if (!st && !grow((void **)&cg.task_node, &cg.cap_task_node, cg.n_task_node + (int)made,
                             sizeof(*cg.task_node)))
                st = NPU_ERR_NOMEM;
            for (uint32_t k = 0; !st && k < made; k++)
                cg.task_node[cg.n_task_node++] = n->name ? n->name : "";
            /* the count that tools attribute a job's tasks by (npu_backend_node_tasks) */
            int want = npu_backend_node_tasks(n);
            if (!st && want >= 0 && npu_cg_stream(&cg)->n_tasks - before != (uint32_t)want) {
                npu_err(NPU_BE_DOM, "codegen: node '%s' emitted %u tasks but lists %d", n->name,
                        npu_cg_stream(&cg)->n_tasks - before, want);
                st = NPU_ERR_INVALID;
            }
        } else {
            if (open) {
                /* conversions into this job go before it, out of it after */
                st = close_job_between(&cg, &pre, &post, job_name);
                open = false;
            }
            if (!st)
                st = cpu_step(&cg, n);
        }
        if (st)
            break;
    }
    if (!st && open)
        st = close_job_between(&cg, &pre, &post, job_name);
    free(pre.v);
    free(post.v);
    if (st)
        goto fail;

    /* graph inputs and outputs (host tensors) */
    int *ins = npu_program_alloc(cg.p, sizeof(int) * (size_t)(g->ninputs + 1));
    int *outs = npu_program_alloc(cg.p, sizeof(int) * (size_t)(g->noutputs + 1));
    st = NPU_ERR_NOMEM;
    if (!ins || !outs)
        goto fail;
    for (int k = 0; k < g->ninputs; k++) {
        const struct npu_value *in = g->inputs[k];
        bool state = in->nusers == 1 && in->users[0]->op == NPU_OP_RK_TO_NPU &&
                     cg.vi[in->users[0]->out[0]->id].state;
        if ((ins[k] = tensor_of(&cg, state ? in->users[0]->out[0] : in, state)) < 0)
            goto fail;
    }
    for (int k = 0; k < g->noutputs; k++)
        if ((outs[k] = tensor_of(&cg, g->outputs[k], false)) < 0)
            goto fail;
    /* copy the lists into the program arena */
    struct npu_prog_tensor *t = npu_program_alloc(cg.p, sizeof(*t) * (size_t)(cg.n_tensors + 1));
    struct npu_prog_step *s = npu_program_alloc(cg.p, sizeof(*s) * (size_t)(cg.n_steps + 1));
    struct npu_prog_job *j = npu_program_alloc(cg.p, sizeof(*j) * (size_t)(cg.n_jobs + 1));
    if (!t || !s || !j)
        goto fail;
    if (cg.n_tensors)
        memcpy(t, cg.tensors, sizeof(*t) * (size_t)cg.n_tensors);
    if (cg.n_steps)
        memcpy(s, cg.steps, sizeof(*s) * (size_t)cg.n_steps);
    if (cg.n_jobs)
        memcpy(j, cg.jobs, sizeof(*j) * (size_t)cg.n_jobs);
    cg.p->tensors = t;
    cg.p->n_tensors = cg.n_tensors;
    cg.p->steps = s;
    cg.p->n_steps = cg.n_steps;
    cg.p->jobs = j;
    cg.p->n_jobs = cg.n_jobs;
    cg.p->inputs = ins;
    cg.p->n_inputs = g->ninputs;
    cg.p->outputs = outs;
    cg.p->n_outputs = g->noutputs;
    cg.p->producer = npu_program_strdup(cg.p, "opennpu " NPU_PROJECT_VERSION " codegen");
    *out = cg.p;
    cg.p = NULL;
    st = NPU_OK;
fail:
    npu_program_free(cg.p);
    npu_stream_fini(&cg.s);
    free(cg.vi);
    free(cg.tensors);
    free(cg.steps);
    free(cg.jobs);
    free(cg.task_node);
    free(cg.dyn);
    free(job_of);
    return st;
}
