/* SPDX-License-Identifier: MIT */
/*
 * npu-program-exec.c: runs a compiled program (npu-program.h) on a device.
 *
 * Loading validates the program and uploads the weights into one BO shared
 * by every session. A session allocates its activation BO, host arena and,
 * per job, a regcmd BO holding the job's image relocated to this session's
 * BO addresses (npu_image_relocate: WEIGHTS, ACT, and the regcmd BO itself
 * for the PC chain) and a task BO of vendor descriptors
 * (npu_image_fill_rknpu_tasks). All of that is done once; a run then binds
 * the inputs, walks the steps in order (CPU kernels on host tensors, CONVERT
 * steps, one submit + wait per NPU job) and hands back views of the outputs.
 *
 * Submits (facts §4.1): flags PC | PINGPONG as the vendor runtime sends them,
 * the session's core as a one-bit core mask (or 0 = the driver's choice),
 * every subcore_task slot naming the job's whole task range (with a one-bit
 * mask the core reads the slot of its own index; with mask 0 the chosen
 * core's slot, which is why the vendor runtime fills them all).
 *
 * State and run-time positions: NPU_BUF_STATE is a per-session BO that no run
 * clears (a KV cache); a state input given with data NULL is left as it is.
 * Dynamic relocations (npu_prog_dynreloc) are patched in the session's regcmd
 * image at the start of each run, after every position has been checked
 * against its limit (dyn_patch), so a bad position is an error
 * before any step runs, never a write outside the buffer.
 *
 * Cache maintenance: NPU tensors the host writes are synced to the device
 * right after the write, and ones it reads are synced from the device right
 * before, range by range (npu_bo_sync); the simulator ignores it, hardware
 * backends with cached mappings need it.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "npu-program-priv.h"
#include "npu-regcmd.h"
#include "npu-task.h"
#include "npu/npu-timing.h"

#define HOST_ALIGN 64

struct npu_prog_model {
    struct npu_device *dev;
    const struct npu_program *p;
    struct npu_bo *weights;
    unsigned n_cores;
    int job_timeout_ms;
    uint32_t submit_timeout_ms;
    size_t scratch_bytes; /* largest conversion scratch */
    size_t out_bytes;     /* host copies of outputs that are not arena views */
    uint64_t *out_off;    /* per output: offset in the output buffer, UINT64_MAX = view */
};

/* A task's figures from the simulator (layer split planning and the order check). */
struct task_rec {
    struct npu_task_timing t;
    double t0, t1; /* modeled, on the device's timeline */
    bool valid;
};

/* One submit of a split job: tasks first .. first + n - 1; cores > 1 runs core c's
 * share cut[c] .. cut[c + 1] - 1 (cut[0] = first, cut[cores] = first + n). */
struct split_seg {
    uint32_t first, n;
    unsigned cores;
    uint32_t cut[NPU_MAX_CORES + 1];
};

struct sjob {
    struct npu_bo *regcmd, *tasks;
    uint64_t *image;        /* the regcmd BO's mapping (dynamic relocations patch it) */
    int64_t *dyn_pos;       /* per dynamic relocation: the position its qword holds now */
    struct split_seg *segs; /* NULL: the whole job in one submit on the session's core */
    uint32_t n_segs;
    struct task_rec *rec; /* per task, while recording */
};

/* A CONVERT step whose NPU tensor is copied into another session's state input instead
 * (npu_prog_session_route_output); dst NULL: converted as usual. A route is linked into its
 * destination's list (routed_in) so that destroying the destination can find it: it then
 * becomes lost (dst NULL, lost set) and the source's runs fail until the route is set again
 * or undone (each run looks for a lost route: a counter of them would be derived state). */
struct route {
    struct npu_prog_session *dst;
    struct route *next, **prevp; /* in dst->routed_in; prevp NULL: in no list */
    int output, input, axis;
    int64_t start;
    bool lost;
};

struct npu_prog_session {
    struct npu_prog_model *m;
    int core;
    struct npu_bo *act, *state;
    uint8_t *act_map, *state_map;
    uint8_t *host, *scratch, *outbuf;
    struct npu_cpu_ctx *ctx;
    struct sjob *jobs;
    struct npu_tensor *views;    /* per tensor: host data or NPU mapping */
    struct npu_cpu_prep **preps; /* per step: CPU load-time work (prog_cpu_prepare) or NULL */
    struct npu_job *pending;     /* a job that outlived its wait */
    struct route *route;         /* per step: a CONVERT routed (npu_prog_session_route_output) */
    bool *kept;                  /* per output: routed, no host data */
    struct route *routed_in;     /* routes of other sessions into this one's state */
    /* per output: 1 + the CONVERT step left undone, the output kept in the NPU layout
     * (npu_prog_session_raw_output); 0: converted. raw_step: per step, undone. raw_buf: per
     * output, its NPU bytes copied at that step (later steps may reuse the memory) */
    int *raw_of;
    bool *raw_step;
    uint8_t **raw_buf;
    bool rec_on; /* record every task's figures (simulator) */
    char err[640];
};

static enum npu_status route_step(struct npu_prog_session *s, int step);
static enum npu_status raw_step(struct npu_prog_session *s, int step);
static void route_unlink(struct route *r);

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *
host_alloc(size_t n)
{
    void *p = aligned_alloc(HOST_ALIGN, NPU_ALIGN(n ? n : 1, HOST_ALIGN));
    if (p)
        memset(p, 0, NPU_ALIGN(n ? n : 1, HOST_ALIGN));
    return p;
}

static bool
uses_npu(const struct npu_program *p)
{
    if (p->n_jobs)
        return true;
    for (int i = 0; i < p->n_tensors; i++)
        if (p->tensors[i].place == NPU_PLACE_NPU)
            return true;
    return false;
}

/* The host view of a tensor the user gives or gets: row-major, logical dtype. */
static struct npu_prog_tensor
user_view(const struct npu_prog_tensor *t)
{
    struct npu_prog_tensor u = *t;
    u.place = NPU_PLACE_HOST;
    u.layout = NPU_LAYOUT_NCHW;
    u.mem_dtype = t->t.dtype;
    u.bytes = (uint64_t)npu_tensor_nbytes(&t->t);
    return u;
}

enum npu_status
npu_prog_model_create(struct npu_device *dev, const struct npu_program *p,
                      const struct npu_prog_options *opts, struct npu_prog_model **out)
{
    char msg[512];
    enum npu_status st;
    *out = NULL;
    if ((st = npu_program_validate(p, msg, sizeof(msg)))) {
        npu_err(PROG_DOM, "invalid program: %s", msg);
        return st;
    }
    if (!dev && uses_npu(p)) {
        npu_err(PROG_DOM, "the program has NPU jobs or NPU tensors but no device was given");
        return NPU_ERR_INVALID;
    }
    struct npu_prog_model *m = calloc(1, sizeof(*m));
    if (!m)
        return NPU_ERR_NOMEM;
    m->dev = dev;
    m->p = p;
    bool simulated = true;
    m->n_cores = 1;
    if (dev) {
        struct npu_device_info info;
        if ((st = npu_device_get_info(dev, &info)))
            goto err;
        m->n_cores = info.n_cores ? info.n_cores : 1;
        simulated = (info.flags & NPU_DEVICE_SIMULATED) != 0;
    }
    m->job_timeout_ms = opts && opts->job_timeout_ms ? opts->job_timeout_ms
                        : simulated                  ? 600000
                                                     : 10000;
    m->submit_timeout_ms = opts ? opts->submit_timeout_ms : 0;

    /* Scratch for conversions: CONVERT steps and the I/O of NPU tensors. */
    for (int s = 0; s < p->n_steps; s++) {
        const struct npu_prog_step *stp = &p->steps[s];
        if (stp->kind == NPU_STEP_CONVERT)
            m->scratch_bytes =
                NPU_MAX(m->scratch_bytes, npu_prog_convert_scratch(&p->tensors[stp->in[0]],
                                                                   &p->tensors[stp->out[0]]));
    }
    for (int i = 0; i < p->n_inputs; i++) {
        const struct npu_prog_tensor *t = &p->tensors[p->inputs[i]];
        struct npu_prog_tensor u = user_view(t);
        if (t->place == NPU_PLACE_NPU) {
            const char *why;
            if (!npu_prog_convert_ok(&u, t, &why)) {
                npu_err(PROG_DOM, "input %d '%s' cannot be converted to its NPU layout: %s", i,
                        t->name ? t->name : "", why);
                st = NPU_ERR_CORRUPT;
                goto err;
            }
            m->scratch_bytes = NPU_MAX(m->scratch_bytes, npu_prog_convert_scratch(&u, t));
        }
    }
    m->out_off = calloc((size_t)p->n_outputs, sizeof(*m->out_off));
    if (!m->out_off) {
        st = NPU_ERR_NOMEM;
        goto err;
    }
    for (int i = 0; i < p->n_outputs; i++) {
        const struct npu_prog_tensor *t = &p->tensors[p->outputs[i]];
        bool is_input = false;
        for (int k = 0; k < p->n_inputs; k++)
            is_input |= p->inputs[k] == p->outputs[i];
        if (t->place == NPU_PLACE_HOST && (t->t.data || !is_input)) {
            m->out_off[i] = UINT64_MAX; /* a view of the arena or of the constant */
            continue;
        }
        struct npu_prog_tensor u = user_view(t);
        if (t->place == NPU_PLACE_NPU) {
            const char *why;
            if (!npu_prog_convert_ok(t, &u, &why)) {
                npu_err(PROG_DOM, "output %d '%s' cannot be converted from its NPU layout: %s", i,
                        t->name ? t->name : "", why);
                st = NPU_ERR_CORRUPT;
                goto err;
            }
            m->scratch_bytes = NPU_MAX(m->scratch_bytes, npu_prog_convert_scratch(t, &u));
        }
        m->out_off[i] = m->out_bytes;
        m->out_bytes += NPU_ALIGN(u.bytes ? u.bytes : 1, HOST_ALIGN);
    }

    if (p->weights_bytes) {
        if ((st = npu_bo_create(dev, p->weights_bytes, 0, &m->weights)))
            goto err;
        void *w = npu_bo_map(m->weights);
        if (!w) {
            st = NPU_ERR_NOMEM;
            goto err;
        }
        /* in pieces: with release_host_weights each piece's whole pages go as soon as they
         * are copied, so the process holds one copy plus a piece at any time */
        const bool rel = opts && opts->release_host_weights && p->weights_bytes >= (1u << 20);
        const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE) > 0 ? (uintptr_t)sysconf(_SC_PAGESIZE)
                                                                  : 4096,
                        base = (uintptr_t)p->weights;
        uintptr_t dropped = (base + pg - 1) / pg * pg;
        for (uint64_t off = 0; off < p->weights_bytes;) {
            uint64_t n =
                p->weights_bytes - off < (64u << 20) ? p->weights_bytes - off : (64u << 20);
            memcpy((uint8_t *)w + off, p->weights + off, (size_t)n);
            off += n;
            uintptr_t end = (base + (uintptr_t)off) / pg * pg;
            if (rel && end > dropped) {
                (void)madvise((void *)dropped, end - dropped, MADV_DONTNEED);
                dropped = end;
            }
        }
        if ((st = npu_bo_sync(m->weights, NPU_SYNC_TO_DEVICE, 0, 0)))
            goto err;
    }
    *out = m;
    return NPU_OK;
err:
    npu_prog_model_destroy(m);
    return st;
}

void
npu_prog_model_destroy(struct npu_prog_model *m)
{
    if (!m)
        return;
    npu_bo_destroy(m->weights);
    free(m->out_off);
    free(m);
}

const struct npu_program *
npu_prog_model_program(const struct npu_prog_model *m)
{
    return m ? m->p : NULL;
}

const void *
npu_prog_model_weights(struct npu_prog_model *m)
{
    return m && m->weights ? npu_bo_map(m->weights) : NULL;
}

/* Places job j's image in its regcmd BO at this session's addresses and
 * writes the task descriptors. */
static enum npu_status
session_job(struct npu_prog_session *s, int j)
{
    const struct npu_prog_model *m = s->m;
    const struct npu_prog_job *jb = &m->p->jobs[j];
    struct sjob *sj = &s->jobs[j];
    enum npu_status st;
    size_t bytes = (size_t)jb->n_qwords * 8;
    if ((st = npu_bo_create(m->dev, bytes, 0, &sj->regcmd)) ||
        (st = npu_bo_create(m->dev, sizeof(struct npu_rknpu_task) * jb->n_tasks, NPU_BO_TASKS,
                            &sj->tasks)))
        return st;
    uint64_t *q = npu_bo_map(sj->regcmd);
    struct npu_rknpu_task *desc = npu_bo_map(sj->tasks);
    if (!q || !desc)
        return NPU_ERR_NOMEM;
    memcpy(q, jb->regcmd, bytes);
    struct npu_regcmd_image img = {
        .qwords = q,
        .n_qwords = jb->n_qwords,
        .iova = npu_bo_iova(sj->regcmd),
        .align = jb->segment_align,
        .n_tasks = jb->n_tasks,
        .n_relocs = jb->n_relocs,
        .cap_relocs = jb->n_relocs,
    };
    img.tasks = calloc(jb->n_tasks, sizeof(*img.tasks));
    img.relocs = calloc(jb->n_relocs + 1, sizeof(*img.relocs));
    if (!img.tasks || !img.relocs) {
        free(img.tasks);
        free(img.relocs);
        return NPU_ERR_NOMEM;
    }
    for (uint32_t t = 0; t < jb->n_tasks; t++)
        img.tasks[t] = (struct npu_image_task){jb->tasks[t].start, jb->tasks[t].n_body,
                                               jb->tasks[t].enable_mask, jb->tasks[t].int_mask, t};
    for (uint32_t r = 0; r < jb->n_relocs; r++)
        img.relocs[r] =
            (struct npu_reloc){jb->relocs[r].qword, jb->relocs[r].buffer, jb->relocs[r].offset};
    uint32_t iova[NPU_BUF_COUNT] = {
        [NPU_BUF_WEIGHTS] = m->weights ? npu_bo_iova(m->weights) : 0,
        [NPU_BUF_ACT] = s->act ? npu_bo_iova(s->act) : 0,
        [NPU_BUF_STATE] = s->state ? npu_bo_iova(s->state) : 0,
    };
    st = npu_image_relocate(&img, iova, NPU_BUF_COUNT);
    if (!st)
        st = npu_image_fill_rknpu_tasks(&img, desc, jb->n_tasks);
    free(img.tasks);
    free(img.relocs);
    if (st) {
        npu_err(PROG_DOM, "job %d: relocation failed", j);
        return st;
    }
    if ((st = npu_bo_sync(sj->regcmd, NPU_SYNC_TO_DEVICE, 0, 0)) ||
        (st = npu_bo_sync(sj->tasks, NPU_SYNC_TO_DEVICE, 0, 0)))
        return st;
    sj->image = q;
    if (jb->n_dynrelocs) {
        if (!(sj->dyn_pos = malloc(sizeof(*sj->dyn_pos) * jb->n_dynrelocs)))
            return NPU_ERR_NOMEM;
        for (uint32_t d = 0; d < jb->n_dynrelocs; d++)
            sj->dyn_pos[d] = 0; /* npu_image_relocate wrote offset + 0 * stride */
    }
    return NPU_OK;
}

/* The CPU steps' load-time work (packed Conv weights), once per session. */
static enum npu_status
session_prepare_cpu(struct npu_prog_session *s)
{
    const struct npu_program *p = s->m->p;
    s->preps = calloc((size_t)p->n_steps + 1, sizeof(*s->preps));
    if (!s->preps)
        return NPU_ERR_NOMEM;
    for (int i = 0; i < p->n_steps; i++) {
        enum npu_status st = prog_cpu_prepare(p, &p->steps[i], s->views, &s->preps[i]);
        if (st) {
            npu_err(PROG_DOM, "step %d '%s': preparing the CPU kernel failed: %s", i,
                    p->steps[i].name ? p->steps[i].name : "", npu_status_str(st));
            return st;
        }
    }
    return NPU_OK;
}

enum npu_status
npu_prog_session_create(struct npu_prog_model *m, int core, int cpu_threads,
                        struct npu_prog_session **out)
{
    *out = NULL;
    if (!m)
        return NPU_ERR_INVALID;
    const struct npu_program *p = m->p;
    if (core < -1 || (core >= 0 && (unsigned)core >= m->n_cores)) {
        npu_err(PROG_DOM, "core %d: the device has cores 0..%u (or -1 for any)", core,
                m->n_cores - 1);
        return NPU_ERR_INVALID;
    }
    struct npu_prog_session *s = calloc(1, sizeof(*s));
    enum npu_status st = NPU_ERR_NOMEM;
    if (!s)
        return NPU_ERR_NOMEM;
    s->m = m;
    s->core = core;
    s->host = host_alloc(p->host_bytes);
    s->scratch = host_alloc(m->scratch_bytes);
    s->outbuf = host_alloc(m->out_bytes);
    s->views = calloc((size_t)p->n_tensors + 1, sizeof(*s->views));
    s->jobs = calloc((size_t)p->n_jobs + 1, sizeof(*s->jobs));
    s->ctx = npu_cpu_ctx_create(cpu_threads);
    if (!s->host || !s->scratch || !s->outbuf || !s->views || !s->jobs || !s->ctx) {
        npu_err(PROG_DOM, "cannot allocate a session (%llu bytes of host arena)",
                (unsigned long long)p->host_bytes);
        goto err;
    }
    if (p->act_bytes) {
        if ((st = npu_bo_create(m->dev, p->act_bytes, NPU_BO_CACHEABLE, &s->act)))
            goto err;
        if (!(s->act_map = npu_bo_map(s->act))) {
            st = NPU_ERR_NOMEM;
            goto err;
        }
    }
    if (p->state_bytes) {
        /* zeroed at creation (npu_bo_create); no run clears it */
        if ((st = npu_bo_create(m->dev, p->state_bytes, NPU_BO_CACHEABLE, &s->state)))
            goto err;
        if (!(s->state_map = npu_bo_map(s->state))) {
            st = NPU_ERR_NOMEM;
            goto err;
        }
    }
    uint8_t *wmap = m->weights ? npu_bo_map(m->weights) : NULL;
    for (int i = 0; i < p->n_tensors; i++) {
        const struct npu_prog_tensor *t = &p->tensors[i];
        s->views[i] = t->t;
        if (t->place == NPU_PLACE_HOST)
            s->views[i].data = t->t.data ? t->t.data : s->host + t->offset;
        else
            s->views[i].data = (t->buffer == NPU_BUF_ACT     ? s->act_map
                                : t->buffer == NPU_BUF_STATE ? s->state_map
                                                             : wmap) +
                               t->offset;
    }
    for (int j = 0; j < p->n_jobs; j++)
        if ((st = session_job(s, j)))
            goto err;
    if ((st = session_prepare_cpu(s)))
        goto err;
    *out = s;
    return NPU_OK;
err:
    npu_prog_session_destroy(s);
    return st;
}

void
npu_prog_session_destroy(struct npu_prog_session *s)
{
    if (!s)
        return;
    /* its routes out of the list of their destinations; the routes into it lost */
    for (int i = 0; s->route && i < s->m->p->n_steps; i++)
        route_unlink(&s->route[i]);
    while (s->routed_in) {
        struct route *r = s->routed_in;
        route_unlink(r);
        r->dst = NULL;
        r->lost = true;
    }
    npu_job_destroy(s->pending); /* waits for it: its BOs must outlive it */
    for (int j = 0; s->jobs && j < s->m->p->n_jobs; j++) {
        npu_bo_destroy(s->jobs[j].regcmd);
        npu_bo_destroy(s->jobs[j].tasks);
        free(s->jobs[j].segs);
        free(s->jobs[j].rec);
        free(s->jobs[j].dyn_pos);
    }
    for (int i = 0; s->preps && i < s->m->p->n_steps; i++)
        npu_cpu_prep_free(s->preps[i]);
    free(s->preps);
    free(s->route);
    free(s->kept);
    for (int i = 0; s->raw_buf && i < s->m->p->n_outputs; i++)
        free(s->raw_buf[i]);
    free(s->raw_buf);
    free(s->raw_of);
    free(s->raw_step);
    npu_bo_destroy(s->state);
    npu_bo_destroy(s->act);
    npu_cpu_ctx_destroy(s->ctx);
    free(s->jobs);
    free(s->views);
    free(s->host);
    free(s->scratch);
    free(s->outbuf);
    free(s);
}

const char *
npu_prog_session_error(const struct npu_prog_session *s)
{
    return s ? s->err : "";
}

static enum npu_status NPU_PRINTF(3, 4)
    run_fail(struct npu_prog_session *s, enum npu_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof(s->err), fmt, ap);
    va_end(ap);
    npu_err(PROG_DOM, "%s", s->err);
    return st;
}

/* Whether a job of an earlier run of s may still be running on its core (s->pending: it
 * outlived its wait): polled without waiting, and forgotten once it has finished. While it
 * runs, nothing may write s's device buffers (its inputs, its state: the job reads and writes
 * them) and its outputs are not yet made: NPU_ERR_BUSY, with s's error (and the log) saying
 * `what` was refused. */
static enum npu_status
session_busy(struct npu_prog_session *s, const char *what)
{
    if (!s->pending)
        return NPU_OK;
    struct npu_job_result r;
    memset(&r, 0, sizeof(r)); /* a backend may answer a timeout without filling it */
    if (npu_job_wait(s->pending, 0, &r) == NPU_ERR_TIMEOUT && r.status != NPU_ERR_TIMEOUT)
        return run_fail(s, NPU_ERR_BUSY,
                        "%s refused: a job of an earlier run of this session is still running "
                        "on core %d",
                        what, s->core);
    npu_job_destroy(s->pending);
    s->pending = NULL;
    return NPU_OK;
}

static struct npu_bo *
bo_of(const struct npu_prog_session *s, const struct npu_prog_tensor *t)
{
    return t->buffer == NPU_BUF_ACT     ? s->act
           : t->buffer == NPU_BUF_STATE ? s->state
                                        : s->m->weights;
}

/* The position of dynamic relocation d: the value of its host input for this run. */
static int64_t
dyn_position(const struct npu_tensor *inputs, const struct npu_prog_dynreloc *d)
{
    const struct npu_tensor *u = &inputs[d->input];
    if (u->dtype == NPU_DTYPE_INT32)
        return *(const int32_t *)u->data;
    return *(const int64_t *)u->data;
}

/* Checks every dynamic relocation's position against its limit, then writes the moved
 * addresses into this session's regcmd images (only those whose position changed). */
static enum npu_status
dyn_patch(struct npu_prog_session *s, const struct npu_tensor *inputs)
{
    const struct npu_program *p = s->m->p;
    for (int j = 0; j < p->n_jobs; j++) {
        const struct npu_prog_job *jb = &p->jobs[j];
        for (uint32_t d = 0; d < jb->n_dynrelocs; d++) {
            const struct npu_prog_dynreloc *dr = &jb->dynrelocs[d];
            int64_t pos = dyn_position(inputs, dr);
            if (pos < 0 || pos >= (int64_t)dr->limit) {
                const struct npu_prog_tensor *t = &p->tensors[p->inputs[dr->input]];
                return run_fail(s, NPU_ERR_INVALID,
                                "input %u ('%s'): position %lld outside 0..%u of job %d's "
                                "run-time write",
                                dr->input, t->name ? t->name : "", (long long)pos, dr->limit - 1,
                                j);
            }
        }
    }
    for (int j = 0; j < p->n_jobs; j++) {
        const struct npu_prog_job *jb = &p->jobs[j];
        struct sjob *sj = &s->jobs[j];
        for (uint32_t d = 0; d < jb->n_dynrelocs; d++) {
            const struct npu_prog_dynreloc *dr = &jb->dynrelocs[d];
            int64_t pos = dyn_position(inputs, dr);
            if (pos == sj->dyn_pos[d])
                continue;
            const struct npu_prog_reloc *rl = &jb->relocs[dr->reloc];
            struct npu_bo *bo = rl->buffer == NPU_BUF_ACT     ? s->act
                                : rl->buffer == NPU_BUF_STATE ? s->state
                                                              : s->m->weights;
            uint64_t addr =
                (uint64_t)npu_bo_iova(bo) + rl->offset + (uint64_t)pos * (uint64_t)dr->stride;
            if (addr > UINT32_MAX)
                return run_fail(s, NPU_ERR_INVALID, "job %d: run-time address 0x%llx is past 4 GiB",
                                j, (unsigned long long)addr);
            uint64_t q = sj->image[rl->qword];
            sj->image[rl->qword] =
                npu_regcmd_pack(npu_regcmd_target(q), npu_regcmd_offset(q), (uint32_t)addr);
            enum npu_status st =
                npu_bo_sync(sj->regcmd, NPU_SYNC_TO_DEVICE, (uint64_t)rl->qword * 8, 8);
            if (st)
                return run_fail(s, st, "job %d: cannot sync its patched regcmd", j);
            sj->dyn_pos[d] = pos;
        }
    }
    return NPU_OK;
}

static enum npu_status
sync_tensor(struct npu_prog_session *s, const struct npu_prog_tensor *t, unsigned dir)
{
    if (t->place != NPU_PLACE_NPU || !t->bytes)
        return NPU_OK;
    return npu_bo_sync(bo_of(s, t), dir, t->offset, t->bytes);
}

/* ---- layer split (npu_prog_session_split_layers) ---------------------------- */

static bool
access_conflict(const struct npu_task_timing *a, const struct npu_task_timing *b)
{
    for (uint32_t i = 0; i < a->n_access; i++)
        for (uint32_t k = 0; k < b->n_access; k++) {
            const struct npu_task_access *x = &a->access[i], *y = &b->access[k];
            if ((x->write || y->write) && x->lo < y->hi && y->lo < x->hi)
                return true;
        }
    return false;
}

/* Task pairs of job j, in program order, that touch the same bytes (one of them writing)
 * while the later one started on the modeled timeline before the earlier one ended. */
static uint32_t
order_check(const struct npu_prog_session *s, int j)
{
    const struct sjob *sj = &s->jobs[j];
    uint32_t n = s->m->p->jobs[j].n_tasks, bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct task_rec *b = &sj->rec[i];
        if (!b->valid) {
            bad++;
            continue;
        }
        for (uint32_t k = 0; k < i; k++) {
            const struct task_rec *a = &sj->rec[k];
            if (a->valid && a->t1 > b->t0 + 1e-12 && access_conflict(&a->t, &b->t))
                bad++;
        }
    }
    return bad;
}

/* Adds access (lo, hi, write) to a task's record; when the record is full, the access
 * nearest to it is widened to cover both (a superset: more conflicts, never fewer). */
static void
access_add(struct npu_task_timing *t, uint32_t lo, uint32_t hi, uint32_t write)
{
    if (t->n_access < NPU_TASK_ACCESS_MAX) {
        t->access[t->n_access++] = (struct npu_task_access){lo, hi, write};
        return;
    }
    uint32_t best = 0;
    uint64_t gap = UINT64_MAX;
    for (uint32_t i = 0; i < t->n_access; i++) {
        const struct npu_task_access *a = &t->access[i];
        uint64_t g = a->hi < lo ? lo - a->hi : hi < a->lo ? a->lo - hi : 0;
        if (g < gap) {
            gap = g;
            best = i;
        }
    }
    struct npu_task_access *a = &t->access[best];
    a->lo = NPU_MIN(a->lo, lo);
    a->hi = NPU_MAX(a->hi, hi);
    a->write |= write;
}

/* A job with run-time positioned relocations (a KV cache's new row written at the
 * current length): the recorded run saw one position, the others move the address. The
 * task that holds each such relocation gets, as a write, every byte the register can
 * reach at any position (offset .. offset + (limit - 1) x stride + extent in its buffer),
 * so the plan orders it against everything that reads or writes any of them: the write
 * stays after the tasks that made its row and before the ones that read the cache, on
 * one core, while the independent products around it still split. */
static void
dyn_widen(struct npu_prog_session *s, int j)
{
    const struct npu_prog_job *jb = &s->m->p->jobs[j];
    struct task_rec *rec = s->jobs[j].rec;
    for (uint32_t d = 0; d < jb->n_dynrelocs; d++) {
        const struct npu_prog_dynreloc *dr = &jb->dynrelocs[d];
        const struct npu_prog_reloc *rl = &jb->relocs[dr->reloc];
        const struct npu_bo *bo = rl->buffer == NPU_BUF_ACT     ? s->act
                                  : rl->buffer == NPU_BUF_STATE ? s->state
                                                                : s->m->weights;
        /* the task whose segment holds the register: the last one starting at or before
         * it (segments are laid out in task order; validated at load) */
        uint32_t t = 0;
        for (uint32_t k = 0; k < jb->n_tasks; k++)
            if (jb->tasks[k].start <= rl->qword)
                t = k;
        uint64_t lo = (bo ? (uint64_t)npu_bo_iova(bo) : 0) + rl->offset;
        uint64_t hi = lo + (uint64_t)(dr->limit - 1) * dr->stride + dr->extent;
        access_add(&rec[t].t, (uint32_t)lo, (uint32_t)NPU_MIN(hi, (uint64_t)UINT32_MAX), 1);
    }
}

/* Plans job j from its recorded tasks. A unit is a task and the tasks glued to it (CBUF
 * reuse; a LUT read with the upload before it in the job). A run is a sequence of groups of
 * consecutive units: a unit that touches no earlier group's bytes (none writes what the
 * other reads or writes) starts a new group, one that touches only the last group joins it
 * (a chain: it runs after it on the same core), one that touches exactly the last two
 * groups merges them into one chain when the older is short (SwiGLU's Mul of one column
 * block's gate and up products: each block then runs on a core of its own); a unit that
 * touches an earlier group, or a LUT read whose upload is not in the job, ends the run. A run of
 * two or more groups becomes a submit over `cores` cores, each core a contiguous share of whole
 * groups balanced by the tasks' modeled times, when that saves more than one submit's overhead;
 * everything else runs in order on core 0, consecutive such tasks in one submit. The LUT is per
 * core: a group that reads it also uploads it first, on its own core. */
#define SPLIT_SOLO_UNITS 8
/* a unit that touches exactly the last two groups merges them (into one chain) when the
 * older of the two holds at most this many tasks (a product and its LUT upload) */
#define SPLIT_MERGE_TASKS 64
static enum npu_status
plan_job(struct npu_prog_session *s, int j, unsigned cores, struct npu_prog_split_info *info)
{
    struct sjob *sj = &s->jobs[j];
    uint32_t n = s->m->p->jobs[j].n_tasks;
    const struct task_rec *rec = sj->rec;
    for (uint32_t t = 0; t < n; t++)
        if (!rec[t].valid || !rec[t].t.n_access) {
            npu_err(PROG_DOM,
                    "layer split: job %d task %u has no DRAM access record (it needs the "
                    "simulator backend)",
                    j, t);
            return NPU_ERR_UNSUPPORTED;
        }
    if (s->m->p->jobs[j].n_dynrelocs)
        dyn_widen(s, j);
    struct split_seg *segs = calloc(n + 1, sizeof(*segs));
    /* glued[t]: task t must follow task t - 1 on the same core; pinned[t]: task t stays on
     * core 0 (it reads a LUT uploaded outside this job); gbeg[t]: t starts a group */
    bool *glued = calloc(n + 1, sizeof(*glued));
    bool *pinned = calloc(n + 1, sizeof(*pinned));
    bool *gbeg = calloc(n + 1, sizeof(*gbeg));
    uint32_t *gfirst = calloc(n + 1, sizeof(*gfirst));
    if (!segs || !glued || !pinned || !gbeg || !gfirst) {
        free(segs);
        free(glued);
        free(pinned);
        free(gbeg);
        free(gfirst);
        return NPU_ERR_NOMEM;
    }
    double ovh = npu_timing_model()->submit_overhead_s;
    /* test knob: plan as if no two tasks conflicted, so that the tests can show the order
     * check and the output comparison catching a wrong split */
    const char *unsafe = getenv("NPU_SPLIT_UNSAFE");
    bool ignore_deps = unsafe && !strcmp(unsafe, "1");
    /* test knob: split every independent run of two or more tasks, gain or not (small
     * models' tasks are shorter than a submit) */
    const char *force = getenv("NPU_SPLIT_FORCE");
    if (force && !strcmp(force, "1"))
        ovh = -1.0;
    uint32_t ns = 0;
    bool split = false;
    /* CBUF contents (DATA_REUSE / WEIGHT_REUSE) loaded by an earlier task */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t from = rec[i].t.cbuf_from;
        if (from == UINT32_MAX)
            continue;
        if (from >= i) /* loaded outside this job's earlier tasks: keep all in order */
            from = 0;
        for (uint32_t t = from + 1; t <= i; t++)
            glued[t] = true;
    }
    /* a LUT read runs on the core that uploaded the table: glued back to the upload */
    uint32_t upload = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t l = rec[i].t.uses_lut;
        if (l & NPU_TASK_LUT_UPLOAD) {
            upload = i;
        } else if (l) {
            if (upload == UINT32_MAX || !(l & NPU_TASK_LUT_READ))
                pinned[i] = true; /* the table came from outside the job (or unknown use) */
            else
                for (uint32_t t = upload + 1; t <= i; t++)
                    glued[t] = true;
        }
    }
    for (uint32_t i = 0; i < n;) {
        /* the unit at i: i .. e - 1 */
        uint32_t e = i + 1;
        bool pin = pinned[i];
        for (; e < n && glued[e]; e++)
            pin |= pinned[e];
        uint32_t ng = 1, e1 = e, solo = 0;
        gfirst[0] = i;
        gbeg[i] = true;
        while (!pin && e < n) {
            uint32_t f = e + 1;
            bool ok = !pinned[e];
            for (; f < n && glued[f]; f++)
                ok &= !pinned[f];
            if (!ok)
                break;
            /* the groups the unit e .. f - 1 touches */
            int hit = -1, hit2 = -1;
            bool multi = false;
            for (uint32_t g = 0; g < ng && !ignore_deps && !multi; g++) {
                uint32_t g1 = g + 1 < ng ? gfirst[g + 1] : e;
                bool touch = false;
                for (uint32_t u = e; u < f && !touch; u++)
                    for (uint32_t k = gfirst[g]; k < g1 && !touch; k++)
                        touch = access_conflict(&rec[k].t, &rec[u].t);
                if (touch) {
                    if (hit2 >= 0)
                        multi = true;
                    hit2 = hit;
                    hit = (int)g;
                }
            }
            /* a join of the last two groups (SwiGLU's Mul of one block's gate and up
             * products): they become one chain, the unit its next link */
            if (!multi && hit2 >= 0 && ng >= 2 && (uint32_t)hit2 == ng - 2 &&
                (uint32_t)hit == ng - 1 && gfirst[ng - 1] - gfirst[ng - 2] <= SPLIT_MERGE_TASKS) {
                gbeg[gfirst[ng - 1]] = false;
                ng--;
                hit = (int)ng - 1;
                hit2 = -1;
            }
            if (multi || hit2 >= 0 || (hit >= 0 && (uint32_t)hit != ng - 1))
                break;
            /* a chain before any second group: a few units at most (a long chain is no run) */
            if (hit >= 0 && ng == 1 && ++solo > SPLIT_SOLO_UNITS)
                break;
            if (hit < 0) {
                gfirst[ng++] = e;
                gbeg[e] = true;
            }
            e = f;
        }
        if (ng == 1) /* no second group: the unit alone, the next one starts a run of its own */
            e = e1;
        double sum = 0;
        for (uint32_t t = i; t < e; t++)
            sum += rec[t].t.task_s;
        struct split_seg g = {.first = i, .n = e - i, .cores = NPU_MIN(cores, ng)};
        unsigned k = 1;
        g.cut[0] = i;
        double acc = 0, chunk = 0, longest = 0;
        for (uint32_t t = i; t < e; t++) {
            acc += rec[t].t.task_s;
            chunk += rec[t].t.task_s;
            /* a cut at the group boundary nearest each core's share */
            double nx = 0, want = sum * k / g.cores;
            bool at = k < g.cores && t + 1 < e && gbeg[t + 1];
            for (uint32_t u = t + 1; at && acc < want && u < e && (u == t + 1 || !gbeg[u]); u++)
                nx += rec[u].t.task_s;
            if (at && (acc >= want || want - acc < acc + nx - want)) {
                g.cut[k++] = t + 1;
                longest = fmax(longest, chunk);
                chunk = 0;
            }
        }
        longest = fmax(longest, chunk);
        g.cores = k;
        g.cut[k] = e;
        if (g.cores >= 2 && sum - longest > ovh) {
            segs[ns++] = g;
            split = true;
            info->parallel_segs++;
            info->parallel_tasks += g.n;
        } else if (ns && segs[ns - 1].cores == 1) {
            segs[ns - 1].n += e - i;
            segs[ns - 1].cut[1] = e;
        } else {
            segs[ns++] = (struct split_seg){.first = i, .n = e - i, .cores = 1, .cut = {i, e}};
        }
        i = e;
    }
    free(glued);
    free(pinned);
    free(gbeg);
    free(gfirst);
    info->tasks += n;
    if (!split) {
        free(segs);
        info->submits++;
        return NPU_OK;
    }
    sj->segs = segs;
    sj->n_segs = ns;
    info->jobs_split++;
    info->submits += ns;
    return NPU_OK;
}

static void
split_clear(struct npu_prog_session *s)
{
    for (int j = 0; j < s->m->p->n_jobs; j++) {
        free(s->jobs[j].segs);
        s->jobs[j].segs = NULL;
        s->jobs[j].n_segs = 0;
        free(s->jobs[j].rec);
        s->jobs[j].rec = NULL;
    }
    s->rec_on = false;
}

static enum npu_status
run_submit(struct npu_prog_session *s, int step, uint32_t first, uint32_t n, unsigned cores,
           const uint32_t *cut, struct npu_prog_run_stats *rs)
{
    const struct npu_prog_model *m = s->m;
    const struct npu_prog_step *stp = &m->p->steps[step];
    const struct npu_prog_job *jb = &m->p->jobs[stp->job];
    struct npu_submit sub;
    memset(&sub, 0, sizeof(sub));
    sub.task_bo = s->jobs[stp->job].tasks;
    sub.task_start = first;
    sub.task_number = n;
    sub.core_mask = s->core < 0 ? 0 : 1u << s->core;
    for (unsigned i = 0; i < NPU_SUBCORE_SLOTS; i++)
        sub.subcore_task[i] = (struct npu_subcore_range){first, n};
    if (cores > 1) {
        /* a layer split's parallel segment: core c runs tasks cut[c] .. cut[c + 1] - 1 as a
         * chain of its own (facts §4.1: two cores read slots 0-1, three read 2-4) */
        sub.core_mask = (1u << cores) - 1;
        unsigned base = cores == 3 ? 2 : 0;
        memset(sub.subcore_task, 0, sizeof(sub.subcore_task));
        for (unsigned c = 0; c < cores; c++)
            sub.subcore_task[base + c] = (struct npu_subcore_range){cut[c], cut[c + 1] - cut[c]};
    }
    sub.flags = NPU_JOB_PC | NPU_JOB_PINGPONG;
    sub.timeout_ms = m->submit_timeout_ms;
    const char *nm = stp->name ? stp->name : "";

    struct npu_job *job = NULL;
    enum npu_status st = npu_job_submit(m->dev, &sub, &job);
    if (st)
        return run_fail(s, st, "step %d '%s': job %d (%u tasks) refused at submit: %s", step, nm,
                        stp->job, n, npu_status_str(st));
    struct npu_job_result r;
    memset(&r, 0, sizeof(r));
    st = npu_job_wait(job, m->job_timeout_ms, &r);
    if (st == NPU_ERR_TIMEOUT && r.status != NPU_ERR_TIMEOUT) {
        /* Still running: keep the job (its BOs stay alive with the session). */
        s->pending = job;
        return run_fail(s, st, "step %d '%s': job %d on core %d did not finish within %d ms", step,
                        nm, stp->job, s->core, m->job_timeout_ms);
    }
    if (st) {
        run_fail(s, st, "step %d '%s': job %d (%u tasks) on core %d failed: %s: %s", step, nm,
                 stp->job, n, s->core, npu_status_str(st),
                 r.message[0] ? r.message : "(no message)");
        npu_job_destroy(job);
        return st;
    }
    if (s->rec_on && r.timing_valid)
        for (uint32_t i = 0; i < r.n_tasks; i++)
            if (r.tasks[i].task < jb->n_tasks) {
                struct task_rec *tr = &s->jobs[stp->job].rec[r.tasks[i].task];
                tr->t = r.tasks[i];
                tr->t0 = r.modeled_start_s + r.tasks[i].start_s;
                tr->t1 = tr->t0 + r.tasks[i].task_s;
                tr->valid = true;
            }
    rs->submits++;
    rs->tasks += n;
    rs->core_mask |= r.core_mask;
    if (rs->steps)
        rs->steps[step].tasks += n;
    if (r.timing_valid) {
        if (rs->submits == 1 || r.modeled_start_s < rs->npu_modeled_start_s)
            rs->npu_modeled_start_s = r.modeled_start_s;
        if (r.modeled_end_s > rs->npu_modeled_end_s)
            rs->npu_modeled_end_s = r.modeled_end_s;
        rs->npu_modeled_s += r.modeled_s;
        rs->dma_bytes += r.dma_bytes;
        rs->macs += r.macs;
        rs->mac_utilisation += r.mac_utilisation * r.modeled_s; /* normalised at the end */
        if (rs->steps) {
            struct npu_prog_step_stats *ss = &rs->steps[step];
            ss->mac_utilisation =
                (ss->mac_utilisation * ss->modeled_s + r.mac_utilisation * r.modeled_s) /
                (ss->modeled_s + r.modeled_s > 0 ? ss->modeled_s + r.modeled_s : 1.0);
            ss->modeled_s += r.modeled_s;
            ss->dma_bytes += r.dma_bytes;
            ss->macs += r.macs;
        }
        for (uint32_t i = 0; rs->task_stats && i < r.n_tasks; i++) {
            const struct npu_task_timing *tt = &r.tasks[i];
            if (rs->n_task_stats >= rs->task_cap)
                break;
            const char *tn = tt->task < jb->n_tasks ? jb->tasks[tt->task].name : NULL;
            rs->task_stats[rs->n_task_stats++] =
                (struct npu_prog_task_stats){.step = step,
                                             .task = tt->task,
                                             .name = tn ? tn : nm,
                                             .modeled_s = tt->task_s,
                                             .dma_bytes = tt->dma_bytes,
                                             .macs = tt->macs,
                                             .mac_utilisation = tt->mac_utilisation,
                                             .submit = rs->submits - 1,
                                             .submit_s = r.modeled_s,
                                             .core = tt->core,
                                             .start_s = tt->start_s,
                                             .weight_bytes = tt->weight_bytes};
        }
    } else {
        rs->timing_valid = false;
    }
    npu_job_destroy(job);
    return NPU_OK;
}

static enum npu_status
run_job(struct npu_prog_session *s, int step, struct npu_prog_run_stats *rs)
{
    const struct npu_prog_step *stp = &s->m->p->steps[step];
    const struct npu_prog_job *jb = &s->m->p->jobs[stp->job];
    const struct sjob *sj = &s->jobs[stp->job];
    enum npu_status st;
    if (!sj->n_segs)
        return run_submit(s, step, 0, jb->n_tasks, 1, NULL, rs);
    for (uint32_t g = 0; g < sj->n_segs; g++) {
        const struct split_seg *sg = &sj->segs[g];
        if ((st = run_submit(s, step, sg->first, sg->n, sg->cores, sg->cut, rs)))
            return st;
    }
    if (s->rec_on)
        rs->order_violations += order_check(s, stp->job);
    return NPU_OK;
}

static enum npu_status
run_convert(struct npu_prog_session *s, int step)
{
    const struct npu_program *p = s->m->p;
    const struct npu_prog_step *stp = &p->steps[step];
    const struct npu_prog_tensor *a = &p->tensors[stp->in[0]], *b = &p->tensors[stp->out[0]];
    enum npu_status st;
    if ((st = sync_tensor(s, a, NPU_SYNC_FROM_DEVICE)) ||
        (st = npu_prog_convert(a, s->views[stp->in[0]].data, b, s->views[stp->out[0]].data,
                               s->scratch)) ||
        (st = sync_tensor(s, b, NPU_SYNC_TO_DEVICE)))
        return run_fail(s, st, "step %d '%s': conversion failed: %s", step,
                        stp->name ? stp->name : "", npu_status_str(st));
    return NPU_OK;
}

static enum npu_status
run_cpu(struct npu_prog_session *s, int step, struct npu_prog_run_stats *rs)
{
    const struct npu_prog_step *stp = &s->m->p->steps[step];
    const struct npu_tensor *in[64];
    struct npu_tensor *out[64];
    for (int k = 0; k < stp->nin; k++)
        in[k] = stp->in[k] >= 0 ? &s->views[stp->in[k]] : NULL;
    for (int k = 0; k < stp->nout; k++)
        out[k] = &s->views[stp->out[k]];
    enum npu_status st;
    if (prog_cpu_reads_npu(s->m->p, stp)) {
        /* npu.Attention over a cache the NPU holds (validated at load): its K and V synced
         * from the device (rknpu MEM_SYNC of their range, rocket PREP_BO), then read in
         * place, nothing converted */
        for (int k = 0; k < stp->nin; k++)
            if (stp->in[k] >= 0 &&
                (st = sync_tensor(s, &s->m->p->tensors[stp->in[k]], NPU_SYNC_FROM_DEVICE)))
                return run_fail(s, st, "step %d '%s': sync of input %d from the device failed",
                                step, stp->name ? stp->name : "", k);
        int64_t slots = 0;
        st = prog_cpu_attn_in_place(s->m->p, stp, in, out, &slots);
        rs->cpu_attn_steps += !st;
        rs->cpu_attn_slots = NPU_MAX(rs->cpu_attn_slots, slots);
    } else {
        st = prog_cpu_step(s->ctx, stp, s->preps ? s->preps[step] : NULL, in, out);
    }
    if (st)
        return run_fail(s, st, "step %d '%s': CPU kernel %s failed: %s", step,
                        stp->name ? stp->name : "", npu_op_name(stp->op), npu_status_str(st));
    return NPU_OK;
}

enum npu_status
npu_prog_session_run(struct npu_prog_session *s, const struct npu_tensor *inputs, int nin,
                     struct npu_tensor *outputs, int nout, struct npu_prog_run_stats *stats)
{
    struct npu_prog_run_stats local = {0}, *rs = stats ? stats : &local;
    if (!s || (nin && !inputs) || (nout && !outputs))
        return NPU_ERR_INVALID;
    const struct npu_program *p = s->m->p;
    struct npu_prog_step_stats *steps = rs->steps;
    struct npu_prog_task_stats *tstats = rs->task_stats;
    size_t tcap = rs->task_cap;
    memset(rs, 0, sizeof(*rs));
    rs->steps = steps;
    rs->task_stats = tstats;
    rs->task_cap = tstats ? tcap : 0;
    rs->timing_valid = true;
    if (steps)
        memset(steps, 0, sizeof(*steps) * (size_t)p->n_steps);
    s->err[0] = 0;
    double t0 = now();
    enum npu_status st;

    if ((st = session_busy(s, "run")))
        return st;
    if (nin != p->n_inputs || nout != p->n_outputs)
        return run_fail(s, NPU_ERR_INVALID,
                        "the program has %d inputs and %d outputs, %d and %d "
                        "given",
                        p->n_inputs, p->n_outputs, nin, nout);
    for (int i = 0; s->route && i < p->n_steps; i++)
        if (s->route[i].lost)
            return run_fail(s, NPU_ERR_INVALID,
                            "output %d was routed into a session since destroyed: route it "
                            "again or undo the route",
                            s->route[i].output);
    for (int i = 0; i < nin; i++) {
        int ti = p->inputs[i];
        const struct npu_prog_tensor *t = &p->tensors[ti];
        const struct npu_tensor *u = &inputs[i];
        bool state = t->place == NPU_PLACE_NPU && t->buffer == NPU_BUF_STATE;
        if (u->dtype != t->t.dtype || u->ndim != t->t.ndim ||
            memcmp(u->dims, t->t.dims, sizeof(int64_t) * (size_t)u->ndim) ||
            (!u->data && !state && npu_tensor_numel(u) > 0))
            return run_fail(s, NPU_ERR_INVALID,
                            "input %d ('%s') must be %s of rank %d with the "
                            "program's dims",
                            i, t->name ? t->name : "", npu_dtype_name(t->t.dtype), t->t.ndim);
        if (t->place == NPU_PLACE_HOST) {
            s->views[ti].data = (void *)u->data; /* read in place: no step writes an input */
            continue;
        }
        if (state && !u->data) {
            rs->inputs_resident++; /* left as earlier runs left it */
            continue;
        }
        double c0 = now();
        struct npu_prog_tensor uv = user_view(t);
        if ((st = npu_prog_convert(&uv, u->data, t, s->views[ti].data, s->scratch)) ||
            (st = sync_tensor(s, t, NPU_SYNC_TO_DEVICE)))
            return run_fail(s, st, "input %d ('%s'): conversion to the NPU layout failed", i,
                            t->name ? t->name : "");
        rs->convert_s += now() - c0;
        rs->inputs_converted++;
        rs->input_convert_bytes += t->bytes;
    }
    if ((st = dyn_patch(s, inputs)))
        return st;

    for (int i = 0; i < p->n_steps; i++) {
        const struct npu_prog_step *stp = &p->steps[i];
        double a = now();
        switch (stp->kind) {
        case NPU_STEP_CPU:
            st = run_cpu(s, i, rs);
            rs->cpu_s += now() - a;
            break;
        case NPU_STEP_CONVERT:
            if (s->raw_step && s->raw_step[i]) {
                /* kept in the NPU layout (npu_prog_session_raw_output): its bytes copied as
                 * they are now, before a later step reuses the memory */
                st = raw_step(s, i);
                rs->convert_s += now() - a;
                break;
            }
            if (s->route && s->route[i].dst) {
                /* its output routed into another session's state: bytes, no conversion */
                st = route_step(s, i);
                rs->convert_s += now() - a;
                break;
            }
            st = run_convert(s, i);
            rs->convert_s += now() - a;
            rs->convert_steps++;
            rs->convert_step_bytes += p->tensors[stp->out[0]].bytes;
            break;
        case NPU_STEP_NPU_JOB:
            st = run_job(s, i, rs);
            rs->npu_wait_s += now() - a;
            break;
        default:
            st = NPU_ERR_INTERNAL; /* validated at load */
            break;
        }
        if (steps)
            steps[i].host_s = now() - a;
        if (st)
            return st;
    }

    for (int i = 0; i < nout; i++) {
        int ti = p->outputs[i];
        const struct npu_prog_tensor *t = &p->tensors[ti];
        struct npu_tensor *o = &outputs[i];
        *o = t->t;
        if ((s->kept && s->kept[i]) || (s->raw_of && s->raw_of[i])) {
            o->data = NULL; /* routed into a state, or left in the NPU layout */
            continue;
        }
        if (s->m->out_off[i] == UINT64_MAX) {
            o->data = s->views[ti].data;
            continue;
        }
        o->data = s->outbuf + s->m->out_off[i];
        struct npu_prog_tensor uv = user_view(t);
        double c0 = now();
        if (t->place == NPU_PLACE_NPU) {
            if ((st = sync_tensor(s, t, NPU_SYNC_FROM_DEVICE)) ||
                (st = npu_prog_convert(t, s->views[ti].data, &uv, o->data, s->scratch)))
                return run_fail(s, st, "output %d ('%s'): conversion from the NPU layout failed", i,
                                t->name ? t->name : "");
        } else {
            memcpy(o->data, s->views[ti].data, (size_t)uv.bytes);
        }
        rs->convert_s += now() - c0;
    }
    if (rs->npu_modeled_s > 0)
        rs->mac_utilisation /= rs->npu_modeled_s;
    rs->wall_s = now() - t0;
    return NPU_OK;
}

enum npu_status
npu_prog_session_split_layers(struct npu_prog_session *s, const struct npu_tensor *inputs, int nin,
                              unsigned cores, struct npu_prog_split_info *info)
{
    struct npu_prog_split_info local, *inf = info ? info : &local;
    memset(inf, 0, sizeof(*inf));
    if (!s)
        return NPU_ERR_INVALID;
    const struct npu_program *p = s->m->p;
    if (cores < 1 || cores > s->m->n_cores || cores > NPU_MAX_CORES) {
        npu_err(PROG_DOM, "layer split over %u cores: the device has %u", cores, s->m->n_cores);
        return NPU_ERR_INVALID;
    }
    if (s->core != 0) {
        npu_err(PROG_DOM, "layer split: the session must be on core 0 (it is on %d)", s->core);
        return NPU_ERR_INVALID;
    }
    /* before the plan in use goes: its run would be refused anyway */
    enum npu_status st = session_busy(s, "layer split");
    if (st)
        return st;
    split_clear(s);
    inf->cores = cores;
    if (cores == 1)
        return NPU_OK;
    st = NPU_ERR_NOMEM;
    struct npu_tensor *outs = calloc((size_t)p->n_outputs + 1, sizeof(*outs));
    if (!outs)
        goto out;
    for (int j = 0; j < p->n_jobs; j++)
        if (!(s->jobs[j].rec = calloc((size_t)p->jobs[j].n_tasks + 1, sizeof(struct task_rec))))
            goto out;
    s->rec_on = true;
    if ((st = npu_prog_session_run(s, inputs, nin, outs, p->n_outputs, NULL)))
        goto out;
    for (int j = 0; j < p->n_jobs && !st; j++)
        st = plan_job(s, j, cores, inf);
out:
    free(outs);
    if (st) {
        split_clear(s);
        memset(inf, 0, sizeof(*inf));
    }
    return st;
}

/* ---- state writes (npu_prog_session_write_state) ------------------------------------ */

/* Byte offset of logical element i of an NC1HWC2 tensor in its buffer (its view as
 * npu-program.h defines it: NCHW images back to back, or [pixels][C] rows), or
 * UINT64_MAX if i is outside the view. */
static uint64_t
nc1hwc2_offset(const struct npu_prog_tensor *t, uint64_t i, size_t es)
{
    const uint64_t C = t->npu_c, H = t->npu_h, W = t->npu_w, c2 = 16 / es;
    uint64_t chw = C * H * W, n = 0, c, h, w;
    if (!chw)
        return UINT64_MAX;
    if (t->npu_order == NPU_VIEW_HWC) {
        if (i >= chw)
            return UINT64_MAX;
        c = i % C;
        w = (i / C) % W;
        h = i / (C * W);
    } else {
        n = i / chw;
        uint64_t r = i % chw;
        w = r % W;
        h = (r / W) % H;
        c = r / (W * H);
    }
    uint64_t c1 = (C + c2 - 1) / c2;
    return t->offset + ((n * c1 + c / c2) * H * W + h * W + w) * 16 + (c % c2) * es;
}

enum npu_status
npu_prog_session_write_state(struct npu_prog_session *s, int input, const struct npu_tensor *block,
                             int axis, int64_t start)
{
    if (!s || !block)
        return NPU_ERR_INVALID;
    const struct npu_program *p = s->m->p;
    if (input < 0 || input >= p->n_inputs) {
        npu_err(PROG_DOM, "state write: input %d (the program has %d)", input, p->n_inputs);
        return NPU_ERR_INVALID;
    }
    const struct npu_prog_tensor *t = &p->tensors[p->inputs[input]];
    const char *nm = t->name ? t->name : "";
    if (t->place != NPU_PLACE_NPU || t->buffer != NPU_BUF_STATE) {
        npu_err(PROG_DOM, "state write: input %d '%s' is not a state input", input, nm);
        return NPU_ERR_INVALID;
    }
    enum npu_dtype md = npu_prog_mem_dtype(t);
    if (t->layout != NPU_LAYOUT_NC1HWC2 || t->t.dtype != NPU_DTYPE_FP32 ||
        (md != NPU_DTYPE_FP16 && md != NPU_DTYPE_FP32) || t->npu_offset) {
        npu_err(PROG_DOM,
                "state write: input %d '%s' is %s held as %s; writes take fp32 held as fp16 or "
                "fp32 NC1HWC2",
                input, nm, npu_dtype_name(t->t.dtype), npu_dtype_name(md));
        return NPU_ERR_UNSUPPORTED;
    }
    int nd = t->t.ndim;
    bool shape_ok = block->dtype == t->t.dtype && block->ndim == nd && axis >= 0 && axis < nd &&
                    (block->data || npu_tensor_numel(block) == 0);
    for (int d = 0; shape_ok && d < nd; d++)
        shape_ok = d == axis ? block->dims[d] >= 0 : block->dims[d] == t->t.dims[d];
    if (!shape_ok) {
        npu_err(PROG_DOM,
                "state write: the block for input %d '%s' must be %s of rank %d with its dims "
                "except along axis %d (0..%d)",
                input, nm, npu_dtype_name(t->t.dtype), nd, axis, nd - 1);
        return NPU_ERR_INVALID;
    }
    int64_t n = block->dims[axis], dim = t->t.dims[axis];
    if (start < 0 || start > dim || n > dim - start) {
        npu_err(PROG_DOM,
                "state write: positions %lld .. %lld of axis %d of input %d '%s' (it has %lld)",
                (long long)start, (long long)(start + n - 1), axis, input, nm, (long long)dim);
        return NPU_ERR_INVALID;
    }
    /* logical element (outer, a, inner) of the block is (outer, start + a, inner) of the
     * tensor */
    uint64_t inner = 1, outer = 1;
    for (int d = axis + 1; d < nd; d++)
        inner *= (uint64_t)t->t.dims[d];
    for (int d = 0; d < axis; d++)
        outer *= (uint64_t)t->t.dims[d];
    char what[128];
    snprintf(what, sizeof(what), "state write into input %d '%s'", input, nm);
    enum npu_status st = session_busy(s, what);
    if (st)
        return st;
    size_t es = npu_dtype_size(md);
    const float *src = block->data;
    uint8_t *base = s->state_map;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t o = 0; o < outer; o++)
        for (int64_t a = 0; a < n; a++)
            for (uint64_t k = 0; k < inner; k++) {
                uint64_t li = (o * (uint64_t)dim + (uint64_t)(start + a)) * inner + k;
                uint64_t off = nc1hwc2_offset(t, li, es);
                if (off == UINT64_MAX || off + es > t->offset + t->bytes) {
                    npu_err(PROG_DOM, "state write: input %d '%s': element %llu outside its view",
                            input, nm, (unsigned long long)li);
                    return NPU_ERR_CORRUPT;
                }
                float x = src[(o * (uint64_t)n + (uint64_t)a) * inner + k];
                if (md == NPU_DTYPE_FP16) {
                    uint16_t h = npu_fp32_to_fp16(x);
                    memcpy(base + off, &h, 2);
                } else {
                    memcpy(base + off, &x, 4);
                }
                lo = NPU_MIN(lo, off);
                hi = NPU_MAX(hi, off + es);
            }
    if (hi > lo)
        return npu_bo_sync(s->state, NPU_SYNC_TO_DEVICE, lo, hi - lo);
    return NPU_OK;
}

/* ---- outputs routed into another session's state (npu_prog_session_route_output) ----- */

/* The CONVERT step that makes graph output `output` from an NPU tensor, when it is the only
 * step that writes the output's host tensor, nothing else reads that tensor and the NPU
 * tensor is held as fp16 / fp32 NC1HWC2 with the output's element count; -1 otherwise. */
static int
output_convert_step(const struct npu_program *p, int output)
{
    if (output < 0 || output >= p->n_outputs)
        return -1;
    const int ti = p->outputs[output];
    int step = -1;
    for (int i = 0; i < p->n_steps; i++) {
        const struct npu_prog_step *stp = &p->steps[i];
        for (int k = 0; k < stp->nin; k++)
            if (stp->in[k] == ti)
                return -1; /* read by a later step */
        for (int k = 0; k < stp->nout; k++)
            if (stp->out[k] == ti) {
                if (step >= 0 || stp->kind != NPU_STEP_CONVERT || k)
                    return -1;
                step = i;
            }
    }
    for (int k = 0; k < p->n_inputs; k++)
        if (p->inputs[k] == ti)
            return -1;
    /* listed as another output too: that one's host data would be left unfilled */
    for (int k = 0; k < p->n_outputs; k++)
        if (k != output && p->outputs[k] == ti)
            return -1;
    if (step < 0)
        return -1;
    const struct npu_prog_tensor *a = &p->tensors[p->steps[step].in[0]], *b = &p->tensors[ti];
    enum npu_dtype md = npu_prog_mem_dtype(a);
    /* int8 (a w8a8 head's logits): the argmax reads the values the conversion dequantises
     * them to, so the host side must be fp32 */
    if (a->place != NPU_PLACE_NPU || a->layout != NPU_LAYOUT_NC1HWC2 || a->npu_offset ||
        !npu_prog_argmax_dtype_ok(a) ||
        (md == NPU_DTYPE_INT8 && npu_prog_mem_dtype(b) != NPU_DTYPE_FP32) ||
        npu_tensor_numel(&a->t) != npu_tensor_numel(&b->t))
        return -1;
    return step;
}

/* A walk over the logical (row-major) elements of an NC1HWC2 view (as nc1hwc2_offset reads
 * it), by runs of elements that lie next to each other in memory: the rest of a C2 group
 * where the channels are the fastest axis (NPU_VIEW_HWC), one element otherwise. out: the
 * walk left the view (an HWC view has one image) or the view is empty. */
struct nc_walk {
    uint64_t C, H, W, C1, base, es, sh; /* sh: log2 C2 */
    uint64_t n, c, h, w;
    bool hwc, out;
};

static void
walk_seek(struct nc_walk *k, const struct npu_prog_tensor *t, size_t es, uint64_t i)
{
    const uint64_t c2 = 16 / es;
    uint64_t sh = 0;
    while (((uint64_t)1 << sh) < c2)
        sh++;
    *k = (struct nc_walk){.C = t->npu_c,
                          .H = t->npu_h,
                          .W = t->npu_w,
                          .C1 = (t->npu_c + c2 - 1) / c2,
                          .base = t->offset,
                          .es = es,
                          .sh = sh,
                          .hwc = t->npu_order == NPU_VIEW_HWC};
    const uint64_t chw = k->C * k->H * k->W;
    if (!chw || (k->hwc && i >= chw)) {
        k->out = true;
        return;
    }
    if (k->hwc) {
        k->c = i % k->C;
        k->w = (i / k->C) % k->W;
        k->h = i / (k->C * k->W);
    } else {
        k->n = i / chw;
        const uint64_t r = i % chw;
        k->w = r % k->W;
        k->h = (r / k->W) % k->H;
        k->c = r / (k->W * k->H);
    }
}

static inline uint64_t
walk_off(const struct nc_walk *k)
{
    return k->base + ((k->n * k->C1 + (k->c >> k->sh)) * k->H * k->W + k->h * k->W + k->w) * 16 +
           (k->c & ((1u << k->sh) - 1)) * k->es;
}

/* elements from here on that are contiguous in memory (at least 1) */
static inline uint64_t
walk_span(const struct nc_walk *k)
{
    if (!k->hwc)
        return 1;
    const uint64_t c2 = (uint64_t)1 << k->sh;
    return NPU_MIN(c2 - (k->c & (c2 - 1)), k->C - k->c);
}

/* m <= walk_span(k) elements on */
static inline void
walk_next(struct nc_walk *k, uint64_t m)
{
    if (k->hwc) {
        k->c += m;
        if (k->c < k->C)
            return;
        k->c = 0;
        if (++k->w < k->W)
            return;
        k->w = 0;
        if (++k->h == k->H)
            k->out = true;
        return;
    }
    if (++k->w < k->W)
        return;
    k->w = 0;
    if (++k->h < k->H)
        return;
    k->h = 0;
    if (++k->c < k->C)
        return;
    k->c = 0;
    k->n++;
}

/* Copies NPU tensor ai of src (held as fp16 / fp32 NC1HWC2, or int8 of the state's scale and
 * zero point) into state input `input` of dst,
 * its elements (row-major) being the state's dims with n entries along axis at start ..;
 * check_only: validate, write nothing. */
static enum npu_status
copy_into_state(struct npu_prog_session *dst, int input, int axis, int64_t start,
                struct npu_prog_session *src, int ai, bool check_only, uint64_t *bytes)
{
    const struct npu_program *dp = dst->m->p, *sp = src->m->p;
    if (input < 0 || input >= dp->n_inputs) {
        npu_err(PROG_DOM, "state copy: input %d (the program has %d)", input, dp->n_inputs);
        return NPU_ERR_INVALID;
    }
    const struct npu_prog_tensor *t = &dp->tensors[dp->inputs[input]], *a = &sp->tensors[ai];
    const char *nm = t->name ? t->name : "";
    const enum npu_dtype md = npu_prog_mem_dtype(t);
    if (t->place != NPU_PLACE_NPU || t->buffer != NPU_BUF_STATE ||
        t->layout != NPU_LAYOUT_NC1HWC2 || t->npu_offset || md != npu_prog_mem_dtype(a)) {
        npu_err(PROG_DOM,
                "state copy: input %d '%s' is not a state input held as the source's %s "
                "NC1HWC2",
                input, nm, npu_dtype_name(npu_prog_mem_dtype(a)));
        return NPU_ERR_UNSUPPORTED;
    }
    /* integers (a w8a8 tensor's int8, which output_convert_step takes since the int8
     * argmax): the bytes are copied as they are, so they must mean the same values on both
     * sides (the conversions of each dequantise with its own scale and zero point) */
    if (npu_dtype_is_int(md) && (t->t.qscale != a->t.qscale || t->t.qzero != a->t.qzero)) {
        npu_err(PROG_DOM,
                "state copy: input %d '%s' is held as %s with scale %g and zero point %d, the "
                "source '%s' with %g and %d: its bytes would be other values there",
                input, nm, npu_dtype_name(md), (double)t->t.qscale, (int)t->t.qzero,
                a->name ? a->name : "", (double)a->t.qscale, (int)a->t.qzero);
        return NPU_ERR_UNSUPPORTED;
    }
    const int nd = t->t.ndim;
    uint64_t inner = 1, outer = 1;
    if (axis < 0 || axis >= nd) {
        npu_err(PROG_DOM, "state copy: axis %d of input %d '%s' (rank %d)", axis, input, nm, nd);
        return NPU_ERR_INVALID;
    }
    for (int d = axis + 1; d < nd; d++)
        inner *= (uint64_t)t->t.dims[d];
    for (int d = 0; d < axis; d++)
        outer *= (uint64_t)t->t.dims[d];
    const uint64_t e = (uint64_t)npu_tensor_numel(&a->t), dim = (uint64_t)t->t.dims[axis];
    const uint64_t n = outer * inner > 0 ? e / (outer * inner) : 0;
    if (!n || n * outer * inner != e || start < 0 || (uint64_t)start > dim ||
        n > dim - (uint64_t)start) {
        npu_err(PROG_DOM,
                "state copy: %llu elements are not a block of input %d '%s' at position %lld "
                "of axis %d",
                (unsigned long long)e, input, nm, (long long)start, axis);
        return NPU_ERR_INVALID;
    }
    if (check_only)
        return NPU_OK;
    /* dst's state is its job's to read and write while that job runs */
    char what[128];
    snprintf(what, sizeof(what), "copy of a routed output into state input %d '%s'", input, nm);
    enum npu_status st = session_busy(dst, what);
    if (st)
        return st;
    if ((st = sync_tensor(src, a, NPU_SYNC_FROM_DEVICE)))
        return st;
    const size_t es = npu_dtype_size(md);
    const uint8_t *sb = src->views[ai].data;
    uint8_t *db = dst->state_map;
    uint64_t lo = UINT64_MAX, hi = 0, si = 0;
    struct nc_walk ws, wd;
    /* the elements of one outer index are consecutive on both sides: copied by the runs
     * that are contiguous in both layouts (a C2 group of 16 bytes where the channels are
     * the fastest axis), each checked inside its view */
    for (uint64_t o = 0; o < outer; o++) {
        walk_seek(&ws, a, es, o * n * inner);
        walk_seek(&wd, t, es, (o * dim + (uint64_t)start) * inner);
        for (uint64_t rem = n * inner; rem;) {
            const uint64_t m = NPU_MIN(rem, NPU_MIN(walk_span(&ws), walk_span(&wd)));
            const uint64_t so = walk_off(&ws), off = walk_off(&wd), len = m * es;
            /* the source's offsets are relative to its view (its data pointer) */
            if (ws.out || wd.out || so - a->offset + len > a->bytes ||
                off + len > t->offset + t->bytes) {
                npu_err(PROG_DOM, "state copy: element %llu outside its view",
                        (unsigned long long)si);
                return NPU_ERR_CORRUPT;
            }
            memcpy(db + off, sb + (so - a->offset), len);
            lo = NPU_MIN(lo, off);
            hi = NPU_MAX(hi, off + len);
            walk_next(&ws, m);
            walk_next(&wd, m);
            rem -= m;
            si += m;
        }
    }
    if (bytes)
        *bytes = e * es;
    if (hi > lo)
        return npu_bo_sync(dst->state, NPU_SYNC_TO_DEVICE, lo, hi - lo);
    return NPU_OK;
}

static void
route_unlink(struct route *r)
{
    if (!r->prevp)
        return;
    *r->prevp = r->next;
    if (r->next)
        r->next->prevp = r->prevp;
    r->next = NULL;
    r->prevp = NULL;
}

static enum npu_status
route_step(struct npu_prog_session *s, int step)
{
    const struct route *r = &s->route[step];
    const struct npu_prog_step *stp = &s->m->p->steps[step];
    enum npu_status st =
        copy_into_state(r->dst, r->input, r->axis, r->start, s, stp->in[0], false, NULL);
    if (st)
        return run_fail(s, st, "step %d '%s': copy into the state of another session failed: %s",
                        step, stp->name ? stp->name : "",
                        st == NPU_ERR_BUSY ? r->dst->err : npu_status_str(st));
    return NPU_OK;
}

/* s's program when output is one of its outputs; else NULL, logged as `what`'s refusal */
static const struct npu_program *
session_output(const struct npu_prog_session *s, int output, const char *what)
{
    if (!s)
        return NULL;
    const struct npu_program *p = s->m->p;
    if (output < 0 || output >= p->n_outputs) {
        npu_err(PROG_DOM, "%s: output %d (the program has %d)", what, output, p->n_outputs);
        return NULL;
    }
    return p;
}

enum npu_status
npu_prog_session_route_output(struct npu_prog_session *s, int output, struct npu_prog_session *dst,
                              int input, int axis, int64_t start)
{
    const struct npu_program *p = session_output(s, output, "route output");
    if (!p)
        return NPU_ERR_INVALID;
    int step = output_convert_step(p, output);
    if (step < 0) {
        npu_err(PROG_DOM,
                "route output: output %d '%s' is not made by one conversion from an NC1HWC2 "
                "tensor that nothing else reads",
                output,
                p->tensors[p->outputs[output]].name ? p->tensors[p->outputs[output]].name : "");
        return NPU_ERR_UNSUPPORTED;
    }
    if (dst && s->raw_of && s->raw_of[output]) {
        npu_err(PROG_DOM, "route output: output %d is kept in the NPU layout (raw output)", output);
        return NPU_ERR_INVALID;
    }
    /* the copy runs in the middle of s's own run, while s's state may still be read */
    if (dst == s) {
        npu_err(PROG_DOM, "route output: output %d routed into its own session's state", output);
        return NPU_ERR_INVALID;
    }
    enum npu_status st;
    if (dst && (st = copy_into_state(dst, input, axis, start, s, p->steps[step].in[0], true, NULL)))
        return st;
    if (!s->route && !(s->route = calloc((size_t)p->n_steps + 1, sizeof(*s->route))))
        return NPU_ERR_NOMEM;
    if (!s->kept && !(s->kept = calloc((size_t)p->n_outputs + 1, sizeof(bool))))
        return NPU_ERR_NOMEM;
    struct route *r = &s->route[step];
    route_unlink(r);
    *r = (struct route){.dst = dst, .output = output, .input = input, .axis = axis, .start = start};
    if (dst) {
        r->next = dst->routed_in;
        if (r->next)
            r->next->prevp = &r->next;
        r->prevp = &dst->routed_in;
        dst->routed_in = r;
    }
    s->kept[output] = dst != NULL;
    return NPU_OK;
}

/* ---- outputs left in the NPU layout (npu_prog_session_raw_output) ----------------- */

enum npu_status
npu_prog_session_raw_output(struct npu_prog_session *s, int output, bool raw)
{
    const struct npu_program *p = session_output(s, output, "raw output");
    if (!p)
        return NPU_ERR_INVALID;
    if (!raw) {
        if (s->raw_of && s->raw_of[output]) {
            s->raw_step[s->raw_of[output] - 1] = false;
            s->raw_of[output] = 0;
            free(s->raw_buf[output]);
            s->raw_buf[output] = NULL;
        }
        return NPU_OK;
    }
    const int step = output_convert_step(p, output);
    const char *name = p->tensors[p->outputs[output]].name;
    if (step < 0) {
        npu_err(
            PROG_DOM,
            "raw output: output %d '%s' is not made by one conversion from an fp16 / fp32 / int8 "
            "NC1HWC2 tensor that nothing else reads",
            output, name ? name : "");
        return NPU_ERR_UNSUPPORTED;
    }
    if ((s->kept && s->kept[output]) || (s->route && s->route[step].dst)) {
        npu_err(PROG_DOM, "raw output: output %d '%s' is routed into another session", output,
                name ? name : "");
        return NPU_ERR_INVALID;
    }
    if (!s->raw_of && !(s->raw_of = calloc((size_t)p->n_outputs + 1, sizeof(int))))
        return NPU_ERR_NOMEM;
    if (!s->raw_step && !(s->raw_step = calloc((size_t)p->n_steps + 1, sizeof(bool))))
        return NPU_ERR_NOMEM;
    if (!s->raw_buf && !(s->raw_buf = calloc((size_t)p->n_outputs + 1, sizeof(uint8_t *))))
        return NPU_ERR_NOMEM;
    const struct npu_prog_tensor *t = &p->tensors[p->steps[step].in[0]];
    if (!s->raw_buf[output] && !(s->raw_buf[output] = malloc(t->bytes ? t->bytes : 1)))
        return NPU_ERR_NOMEM;
    s->raw_of[output] = step + 1;
    s->raw_step[step] = true;
    return NPU_OK;
}

enum npu_status
npu_prog_session_output_argmax(struct npu_prog_session *s, int output, int64_t base,
                               struct npu_prog_argmax *acc)
{
    if (!s || !acc || output < 0 || output >= s->m->p->n_outputs || !s->raw_of ||
        !s->raw_of[output]) {
        npu_err(PROG_DOM, "output argmax: output %d is not kept in the NPU layout", output);
        return NPU_ERR_INVALID;
    }
    const struct npu_prog_tensor *t;
    const void *bytes;
    enum npu_status st = npu_prog_session_output_raw(s, output, &t, &bytes);
    return st ? st : npu_prog_argmax(t, bytes, base, acc);
}

enum npu_status
npu_prog_session_output_raw(struct npu_prog_session *s, int output,
                            const struct npu_prog_tensor **layout, const void **bytes)
{
    if (!s || !layout || !bytes || output < 0 || output >= s->m->p->n_outputs || !s->raw_of ||
        !s->raw_of[output]) {
        npu_err(PROG_DOM, "raw output: output %d is not kept in the NPU layout", output);
        return NPU_ERR_INVALID;
    }
    *layout = &s->m->p->tensors[s->m->p->steps[s->raw_of[output] - 1].in[0]];
    *bytes = s->raw_buf[output];
    return NPU_OK;
}

static enum npu_status
raw_step(struct npu_prog_session *s, int step)
{
    const struct npu_program *p = s->m->p;
    const int ti = p->steps[step].in[0];
    const struct npu_prog_tensor *t = &p->tensors[ti];
    enum npu_status st = sync_tensor(s, t, NPU_SYNC_FROM_DEVICE);
    if (st)
        return run_fail(s, st, "step %d: sync of an output kept in the NPU layout failed", step);
    for (int o = 0; o < p->n_outputs; o++)
        if (s->raw_of[o] == step + 1)
            memcpy(s->raw_buf[o], s->views[ti].data, t->bytes);
    return NPU_OK;
}
