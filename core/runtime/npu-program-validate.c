/* SPDX-License-Identifier: MIT */
/*
 * npu-program-validate.c: consistency checks of a compiled program before the
 * runtime touches it. A program comes from the codegen or from an artifact
 * on disk, so it is checked as untrusted input: every tensor's bytes lie
 * inside its arena or NPU buffer and match its layout, every index names an
 * existing tensor, job or task, CPU steps read and write host tensors only,
 * CONVERT steps name a supported pair, and every job is a well-formed
 * position-independent regcmd image: tasks inside the image and aligned as
 * they say, relocations on DMA-address registers (NPU_REG_ADDR) pointing
 * inside their buffer, and no address register left unrelocated (an absolute
 * address would make the NPU read or write wherever it points).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-program-priv.h"
#include "npu-regcmd.h"
#include "npu-task.h"
#include "npu/npu-cpu.h"
#include "npu/npu-program-check.h"

/* Per-submit task limit of the vendor driver (facts §4.1 max_submit_number). */
#define MAX_TASKS_PER_JOB NPU_PROG_MAX_JOB_TASKS
/* Step operand limit of the executor (it keeps operand arrays on the stack). */
#define MAX_OPERANDS 64
/* 32-bit IOVA space (facts §1.1): no NPU buffer can be larger. */
#define MAX_NPU_BYTES (1ull << 32)

struct vctx {
    char *msg;
    size_t len;
};

static enum npu_status NPU_PRINTF(2, 3) fail(struct vctx *v, const char *fmt, ...)
{
    if (v->msg && v->len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->msg, v->len, fmt, ap);
        va_end(ap);
    }
    return NPU_ERR_CORRUPT;
}

static bool
dtype_ok(int d)
{
    return d > NPU_DTYPE_UNDEFINED && d < NPU_DTYPE_COUNT;
}

static uint64_t
buffer_size(const struct npu_program *p, uint32_t b)
{
    return b == NPU_BUF_WEIGHTS ? p->weights_bytes
           : b == NPU_BUF_STATE ? p->state_bytes
                                : p->act_bytes;
}

static const char *
buffer_name(uint32_t b)
{
    return b == NPU_BUF_WEIGHTS ? "WEIGHTS" : b == NPU_BUF_STATE ? "STATE" : "ACT";
}

static const char *
tname(const struct npu_program *p, int i)
{
    const char *n = p->tensors[i].name;
    return n ? n : "";
}

static enum npu_status
check_tensor(struct vctx *v, const struct npu_program *p, int i, bool input)
{
    const struct npu_prog_tensor *t = &p->tensors[i];
    const struct npu_tensor *l = &t->t;
    if (!dtype_ok(l->dtype))
        return fail(v, "tensor %d '%s': dtype %d is not a known dtype", i, tname(p, i), l->dtype);
    if (l->ndim < 0 || l->ndim > NPU_MAX_DIMS)
        return fail(v, "tensor %d '%s': rank %d outside 0..%d", i, tname(p, i), l->ndim,
                    NPU_MAX_DIMS);
    for (int d = 0; d < l->ndim; d++)
        if (l->dims[d] < 0)
            return fail(v, "tensor %d '%s': dim %d is negative (%lld)", i, tname(p, i), d,
                        (long long)l->dims[d]);
    int64_t nbytes = npu_tensor_nbytes(l);
    if (nbytes < 0 || (uint64_t)nbytes > (1ull << 48))
        return fail(v, "tensor %d '%s': element count overflows", i, tname(p, i));
    if (t->mem_dtype != NPU_DTYPE_UNDEFINED && !dtype_ok(t->mem_dtype))
        return fail(v, "tensor %d '%s': memory dtype %d is not a known dtype", i, tname(p, i),
                    t->mem_dtype);
    if (t->layout > NPU_LAYOUT_SMALL_C)
        return fail(v, "tensor %d '%s': layout %d is not a known layout", i, tname(p, i),
                    t->layout);
    if (t->npu_order > NPU_VIEW_HWC)
        return fail(v, "tensor %d '%s': npu_order %u is not a known mapping", i, tname(p, i),
                    t->npu_order);
    if (!(l->qscale == 0 || (isfinite(l->qscale) && l->qscale > 0)))
        return fail(v, "tensor %d '%s': quantisation scale %g is not finite and positive", i,
                    tname(p, i), (double)l->qscale);
    uint64_t need = npu_prog_tensor_need(t);
    if (need == UINT64_MAX)
        return fail(v,
                    "tensor %d '%s': layout view C=%u H=%u W=%u (map %u) does not match its "
                    "dims or memory dtype",
                    i, tname(p, i), t->npu_c, t->npu_h, t->npu_w, t->npu_order);
    if (t->bytes < need)
        return fail(v, "tensor %d '%s': %llu bytes given, its layout needs %llu", i, tname(p, i),
                    (unsigned long long)t->bytes, (unsigned long long)need);
    switch (t->place) {
    case NPU_PLACE_HOST:
        if (t->layout != NPU_LAYOUT_NCHW)
            return fail(v, "tensor %d '%s': host tensors must be row-major", i, tname(p, i));
        if (npu_prog_mem_dtype(t) != l->dtype)
            return fail(v, "tensor %d '%s': a host tensor's memory dtype must be its dtype", i,
                        tname(p, i));
        if (l->data || input)
            break; /* a constant (the program holds its data) or a graph input (bound to the
                      caller's memory at run time, no arena space needed) */
        if (t->offset > p->host_bytes || t->bytes > p->host_bytes - t->offset)
            return fail(v,
                        "tensor %d '%s': host bytes [%llu, +%llu) outside the %llu-byte "
                        "host arena",
                        i, tname(p, i), (unsigned long long)t->offset, (unsigned long long)t->bytes,
                        (unsigned long long)p->host_bytes);
        if (t->offset % 16)
            return fail(v, "tensor %d '%s': host offset %llu is not 16-byte aligned", i,
                        tname(p, i), (unsigned long long)t->offset);
        break;
    case NPU_PLACE_NPU: {
        if (t->buffer != NPU_BUF_WEIGHTS && t->buffer != NPU_BUF_ACT && t->buffer != NPU_BUF_STATE)
            return fail(v, "tensor %d '%s': buffer %u is not WEIGHTS (0), ACT (1) or STATE (2)", i,
                        tname(p, i), t->buffer);
        uint64_t size = buffer_size(p, t->buffer);
        if (t->offset > size || t->bytes > size - t->offset)
            return fail(v,
                        "tensor %d '%s': bytes [%llu, +%llu) outside the %s buffer (%llu "
                        "bytes)",
                        i, tname(p, i), (unsigned long long)t->offset, (unsigned long long)t->bytes,
                        buffer_name(t->buffer), (unsigned long long)size);
        break;
    }
    default:
        return fail(v, "tensor %d '%s': placement %d is not HOST or NPU", i, tname(p, i), t->place);
    }
    return NPU_OK;
}

static bool
is_const(const struct npu_prog_tensor *t)
{
    return t->place == NPU_PLACE_HOST && t->t.data;
}

static enum npu_status
check_attrs(struct vctx *v, int s, const struct npu_attrs *a)
{
    if (a->n > 4096)
        return fail(v, "step %d: %zu attributes", s, a->n);
    if (a->n && !a->v)
        return fail(v, "step %d: attribute array missing", s);
    for (size_t i = 0; i < a->n; i++) {
        const struct npu_attr *x = &a->v[i];
        if (!x->name)
            return fail(v, "step %d: attribute %zu has no name", s, i);
        switch (x->type) {
        case NPU_ATTR_INT:
        case NPU_ATTR_FLOAT: break;
        case NPU_ATTR_STRING:
            if (!x->s)
                return fail(v, "step %d: attribute '%s': string missing", s, x->name);
            break;
        case NPU_ATTR_INTS:
            if (x->n && !x->ints)
                return fail(v, "step %d: attribute '%s': ints missing", s, x->name);
            break;
        case NPU_ATTR_FLOATS:
            if (x->n && !x->floats)
                return fail(v, "step %d: attribute '%s': floats missing", s, x->name);
            break;
        case NPU_ATTR_STRINGS:
            if (x->n && !x->strs)
                return fail(v, "step %d: attribute '%s': strings missing", s, x->name);
            for (size_t k = 0; k < x->n; k++)
                if (!x->strs[k])
                    return fail(v, "step %d: attribute '%s': string %zu missing", s, x->name, k);
            break;
        case NPU_ATTR_TENSOR: {
            const struct npu_tensor *t = x->t;
            if (!t || !dtype_ok(t->dtype) || t->ndim < 0 || t->ndim > NPU_MAX_DIMS ||
                npu_tensor_nbytes(t) < 0 || (npu_tensor_nbytes(t) > 0 && !t->data))
                return fail(v, "step %d: attribute '%s': malformed tensor", s, x->name);
            break;
        }
        default: return fail(v, "step %d: attribute '%s': type %d unknown", s, x->name, x->type);
        }
    }
    return NPU_OK;
}

static enum npu_status
check_step(struct vctx *v, const struct npu_program *p, int s, const bool *is_input)
{
    const struct npu_prog_step *st = &p->steps[s];
    const char *nm = st->name ? st->name : "";
    if (st->nin < 0 || st->nin > MAX_OPERANDS || st->nout < 0 || st->nout > MAX_OPERANDS)
        return fail(v, "step %d '%s': %d inputs and %d outputs (0..%d each)", s, nm, st->nin,
                    st->nout, MAX_OPERANDS);
    if ((st->nin && !st->in) || (st->nout && !st->out))
        return fail(v, "step %d '%s': operand array missing", s, nm);
    for (int k = 0; k < st->nin; k++)
        if (st->in[k] < -1 || st->in[k] >= p->n_tensors)
            return fail(v, "step %d '%s': input %d names tensor %d (%d tensors)", s, nm, k,
                        st->in[k], p->n_tensors);
    for (int k = 0; k < st->nout; k++) {
        int o = st->out[k];
        if (o < 0 || o >= p->n_tensors)
            return fail(v, "step %d '%s': output %d names tensor %d (%d tensors)", s, nm, k, o,
                        p->n_tensors);
        const struct npu_prog_tensor *t = &p->tensors[o];
        /* a state input (NPU_BUF_STATE) is there to be updated in place */
        bool state = t->place == NPU_PLACE_NPU && t->buffer == NPU_BUF_STATE;
        if (is_const(t) || (is_input[o] && !state) ||
            (t->place == NPU_PLACE_NPU && t->buffer == NPU_BUF_WEIGHTS))
            return fail(v, "step %d '%s': output %d writes tensor %d '%s', which is a %s", s, nm, k,
                        o, tname(p, o),
                        is_const(t)   ? "constant"
                        : is_input[o] ? "graph input"
                                      : "weight");
    }
    switch (st->kind) {
    case NPU_STEP_CPU:
        if (st->op <= NPU_OP_NONE || st->op >= NPU_OP_COUNT)
            return fail(v, "step %d '%s': op %d is not a known op", s, nm, st->op);
        if (!npu_cpu_supports(st->op))
            return fail(v, "step %d '%s': no CPU kernel for %s", s, nm, npu_op_name(st->op));
        for (int k = 0; k < st->nin; k++) {
            if (st->in[k] < 0 || p->tensors[st->in[k]].place == NPU_PLACE_HOST)
                continue;
            /* npu.Attention's K and V read where the NPU holds them (a resident KV cache) */
            const char *why = prog_cpu_in_place_why(p, st, k);
            if (why)
                return fail(v, "step %d '%s': CPU op reads tensor %d '%s' in NPU memory (%s)", s,
                            nm, st->in[k], tname(p, st->in[k]), why);
        }
        for (int k = 0; k < st->nout; k++)
            if (p->tensors[st->out[k]].place != NPU_PLACE_HOST)
                return fail(v, "step %d '%s': CPU op writes tensor %d '%s' in NPU memory", s, nm,
                            st->out[k], tname(p, st->out[k]));
        if (!st->nout)
            return fail(v, "step %d '%s': CPU op without outputs", s, nm);
        return check_attrs(v, s, &st->attrs);
    case NPU_STEP_NPU_JOB:
        if (st->job < 0 || st->job >= p->n_jobs)
            return fail(v, "step %d '%s': job %d (%d jobs)", s, nm, st->job, p->n_jobs);
        return NPU_OK;
    case NPU_STEP_CONVERT: {
        if (st->nin < 1 || st->nout < 1 || st->in[0] < 0)
            return fail(v, "step %d '%s': CONVERT needs in[0] and out[0]", s, nm);
        const char *why = NULL;
        if (!npu_prog_convert_ok(&p->tensors[st->in[0]], &p->tensors[st->out[0]], &why))
            return fail(v, "step %d '%s': CONVERT %d '%s' -> %d '%s': %s", s, nm, st->in[0],
                        tname(p, st->in[0]), st->out[0], tname(p, st->out[0]), why);
        return NPU_OK;
    }
    default:
        return fail(v, "step %d '%s': kind %d is not CPU, NPU_JOB or CONVERT", s, nm, st->kind);
    }
}

static enum npu_status
check_job(struct vctx *v, const struct npu_program *p, int j, uint8_t *mark)
{
    const struct npu_prog_job *jb = &p->jobs[j];
    if (!jb->n_qwords || !jb->regcmd || jb->n_qwords > (1u << 26))
        return fail(v, "job %d: regcmd image of %u qwords", j, jb->n_qwords);
    if (!jb->n_tasks || jb->n_tasks > MAX_TASKS_PER_JOB || !jb->tasks)
        return fail(v, "job %d: %u tasks (1..%u)", j, jb->n_tasks, MAX_TASKS_PER_JOB);
    if (jb->n_relocs && !jb->relocs)
        return fail(v, "job %d: relocation array missing", j);
    uint32_t al = jb->segment_align;
    if (al < NPU_SEGMENT_ALIGN_MIN || al > 4096 || (al & (al - 1)))
        return fail(v, "job %d: segment alignment %u (a power of two, 16..4096)", j, al);
    if (!isfinite(jb->modeled_s) || jb->modeled_s < 0)
        return fail(v, "job %d: modeled time %g", j, jb->modeled_s);
    for (uint32_t t = 0; t < jb->n_tasks; t++) {
        const struct npu_prog_task *tk = &jb->tasks[t];
        if ((uint64_t)tk->start * 8 % al)
            return fail(v, "job %d task %u: start qword %u not on a %u-byte boundary", j, t,
                        tk->start, al);
        if ((uint64_t)tk->start + tk->n_body + NPU_TASK_TAIL_QWORDS > jb->n_qwords)
            return fail(v, "job %d task %u: qwords [%u, +%u + tail) past the image (%u)", j, t,
                        tk->start, tk->n_body, jb->n_qwords);
        if (!tk->enable_mask || tk->enable_mask > 0x7f)
            return fail(v, "job %d task %u: enable mask 0x%x", j, t, tk->enable_mask);
    }
    memset(mark, 0, jb->n_qwords);
    for (uint32_t r = 0; r < jb->n_relocs; r++) {
        const struct npu_prog_reloc *rl = &jb->relocs[r];
        if (rl->qword >= jb->n_qwords)
            return fail(v, "job %d reloc %u: qword %u outside the image (%u qwords)", j, r,
                        rl->qword, jb->n_qwords);
        uint64_t size;
        const char *bn;
        if (rl->buffer == NPU_RELOC_REGCMD) {
            size = (uint64_t)jb->n_qwords * 8;
            bn = "REGCMD";
        } else if (rl->buffer == NPU_BUF_WEIGHTS || rl->buffer == NPU_BUF_ACT ||
                   rl->buffer == NPU_BUF_STATE) {
            size = buffer_size(p, rl->buffer);
            bn = buffer_name(rl->buffer);
        } else {
            return fail(v, "job %d reloc %u: buffer id %u (WEIGHTS 0, ACT 1, STATE 2, REGCMD 0x%x)",
                        j, r, rl->buffer, NPU_RELOC_REGCMD);
        }
        if (rl->offset >= size)
            return fail(v, "job %d reloc %u: offset %u outside the %s buffer (%llu bytes)", j, r,
                        rl->offset, bn, (unsigned long long)size);
        struct npu_qword_info qi;
        if (npu_qword_classify(jb->regcmd[rl->qword], &qi) != NPU_QW_REG ||
            !(qi.reg->flags & NPU_REG_ADDR))
            return fail(v,
                        "job %d reloc %u: qword %u (0x%016llx) is not a DMA address register "
                        "write",
                        j, r, rl->qword, (unsigned long long)jb->regcmd[rl->qword]);
        mark[rl->qword] = 1;
    }
    if (jb->n_dynrelocs && !jb->dynrelocs)
        return fail(v, "job %d: dynamic relocation array missing", j);
    if (jb->n_dynrelocs > jb->n_relocs)
        return fail(v, "job %d: %u dynamic relocations, %u relocations", j, jb->n_dynrelocs,
                    jb->n_relocs);
    for (uint32_t d = 0; d < jb->n_dynrelocs; d++) {
        const struct npu_prog_dynreloc *dr = &jb->dynrelocs[d];
        if (dr->reloc >= jb->n_relocs)
            return fail(v, "job %d dynreloc %u: relocation %u (%u relocations)", j, d, dr->reloc,
                        jb->n_relocs);
        for (uint32_t e = 0; e < d; e++)
            if (jb->dynrelocs[e].reloc == dr->reloc)
                return fail(v, "job %d dynreloc %u: relocation %u is already dynamic", j, d,
                            dr->reloc);
        const struct npu_prog_reloc *rl = &jb->relocs[dr->reloc];
        if (rl->buffer == NPU_RELOC_REGCMD)
            return fail(v, "job %d dynreloc %u: relocation %u points into the regcmd buffer", j, d,
                        dr->reloc);
        if ((int64_t)dr->input >= p->n_inputs)
            return fail(v, "job %d dynreloc %u: position input %u (%d inputs)", j, d, dr->input,
                        p->n_inputs);
        const struct npu_prog_tensor *pt = &p->tensors[p->inputs[dr->input]];
        if (pt->place != NPU_PLACE_HOST ||
            (pt->t.dtype != NPU_DTYPE_INT64 && pt->t.dtype != NPU_DTYPE_INT32) ||
            npu_tensor_numel(&pt->t) != 1)
            return fail(v,
                        "job %d dynreloc %u: position input %u '%s' must be one int32 or int64 "
                        "on the host",
                        j, d, dr->input, pt->name ? pt->name : "");
        if (!dr->stride || dr->stride % 16 || !dr->limit || !dr->extent)
            return fail(v,
                        "job %d dynreloc %u: stride %u (a non-zero multiple of 16), limit %u and "
                        "extent %u (non-zero)",
                        j, d, dr->stride, dr->limit, dr->extent);
        uint64_t size = buffer_size(p, rl->buffer);
        uint64_t last = (uint64_t)rl->offset + (uint64_t)(dr->limit - 1) * dr->stride;
        if (last > size || dr->extent > size - last)
            return fail(v,
                        "job %d dynreloc %u: position %u at offset %llu + %u bytes runs past the "
                        "%s buffer (%llu bytes)",
                        j, d, dr->limit - 1, (unsigned long long)last, dr->extent,
                        buffer_name(rl->buffer), (unsigned long long)size);
    }
    /* No address register may keep an absolute (unrelocated) address. */
    for (uint32_t q = 0; q < jb->n_qwords; q++) {
        struct npu_qword_info qi;
        if (mark[q] || npu_qword_classify(jb->regcmd[q], &qi) != NPU_QW_REG)
            continue;
        if ((qi.reg->flags & NPU_REG_ADDR) && qi.value)
            return fail(v, "job %d: qword %u writes %s = 0x%x, an address without a relocation", j,
                        q, qi.reg->full_name, qi.value);
    }
    return NPU_OK;
}

/* Host tensors are written only by CPU and CONVERT steps (jobs write NPU
 * memory), so for them the order can be checked: every host tensor a step
 * reads, and every host output, must be a constant, a graph input, or
 * written by an earlier step. (A host output nobody writes would hand the
 * caller whatever the arena held.) */
static enum npu_status
check_dataflow(struct vctx *v, const struct npu_program *p, const bool *is_input)
{
    bool *w = calloc((size_t)p->n_tensors + 1, sizeof(bool));
    enum npu_status st = NPU_OK;
    if (!w)
        return NPU_ERR_NOMEM;
    for (int i = 0; i < p->n_tensors; i++)
        w[i] = is_input[i] || is_const(&p->tensors[i]) || p->tensors[i].place != NPU_PLACE_HOST;
    for (int s = 0; s < p->n_steps && !st; s++) {
        const struct npu_prog_step *stp = &p->steps[s];
        if (stp->kind == NPU_STEP_NPU_JOB)
            continue;
        for (int k = 0; k < stp->nin && !st; k++) {
            int t = stp->in[k];
            if (t >= 0 && !w[t])
                st = fail(v, "step %d '%s' reads tensor %d '%s' before any step writes it", s,
                          stp->name ? stp->name : "", t, tname(p, t));
        }
        for (int k = 0; k < stp->nout; k++)
            w[stp->out[k]] = true;
    }
    for (int i = 0; i < p->n_outputs && !st; i++)
        if (!w[p->outputs[i]])
            st = fail(v, "output %d: tensor %d '%s' is never written by any step", i, p->outputs[i],
                      tname(p, p->outputs[i]));
    free(w);
    return st;
}

enum npu_status
npu_program_validate(const struct npu_program *p, char *msg, size_t msg_len)
{
    struct vctx v = {msg, msg_len};
    enum npu_status st = NPU_OK;
    bool *is_input = NULL;
    uint8_t *mark = NULL;
    if (msg && msg_len)
        msg[0] = 0;
    if (!p)
        return fail(&v, "no program");
    if (p->version != NPU_PROGRAM_VERSION)
        return fail(&v, "program version %u (this runtime reads %u)", p->version,
                    NPU_PROGRAM_VERSION);
    if (p->n_tensors < 0 || p->n_steps < 0 || p->n_jobs < 0 || p->n_inputs < 0 || p->n_outputs < 0)
        return fail(&v, "negative count");
    if ((p->n_tensors && !p->tensors) || (p->n_steps && !p->steps) || (p->n_jobs && !p->jobs) ||
        (p->n_inputs && !p->inputs) || (p->n_outputs && !p->outputs))
        return fail(&v, "array missing for a non-zero count");
    if (p->weights_bytes && !p->weights)
        return fail(&v, "weights_bytes %llu but no weights", (unsigned long long)p->weights_bytes);
    if (p->weights_bytes >= MAX_NPU_BYTES || p->act_bytes >= MAX_NPU_BYTES ||
        p->state_bytes >= MAX_NPU_BYTES)
        return fail(&v,
                    "NPU buffers of %llu (weights), %llu (act) and %llu (state) bytes: 4 GiB is "
                    "the limit",
                    (unsigned long long)p->weights_bytes, (unsigned long long)p->act_bytes,
                    (unsigned long long)p->state_bytes);
    if (p->host_bytes > (1ull << 40))
        return fail(&v, "host arena of %llu bytes", (unsigned long long)p->host_bytes);
    if (!p->n_outputs)
        return fail(&v, "program without outputs");
    is_input = calloc((size_t)p->n_tensors + 1, sizeof(bool));
    if (!is_input)
        return NPU_ERR_NOMEM;
    for (int i = 0; i < p->n_inputs && !st; i++) {
        int t = p->inputs[i];
        if (t < 0 || t >= p->n_tensors)
            st = fail(&v, "input %d names tensor %d (%d tensors)", i, t, p->n_tensors);
        else if (is_input[t])
            st = fail(&v, "input %d: tensor %d '%s' is listed twice", i, t, tname(p, t));
        else
            is_input[t] = true;
    }
    for (int i = 0; i < p->n_tensors && !st; i++)
        st = check_tensor(&v, p, i, is_input[i]);
    for (int i = 0; i < p->n_inputs && !st; i++) {
        int t = p->inputs[i];
        if (is_const(&p->tensors[t]) ||
            (p->tensors[t].place == NPU_PLACE_NPU && p->tensors[t].buffer == NPU_BUF_WEIGHTS))
            st = fail(&v, "input %d: tensor %d '%s' is a constant or weight", i, t, tname(p, t));
    }
    for (int i = 0; i < p->n_outputs && !st; i++) {
        int t = p->outputs[i];
        if (t < 0 || t >= p->n_tensors)
            st = fail(&v, "output %d names tensor %d (%d tensors)", i, t, p->n_tensors);
        else if (p->tensors[t].place == NPU_PLACE_NPU && p->tensors[t].buffer == NPU_BUF_WEIGHTS)
            st = fail(&v, "output %d: tensor %d '%s' lies in the weights", i, t, tname(p, t));
    }
    for (int s = 0; s < p->n_steps && !st; s++)
        st = check_step(&v, p, s, is_input);
    if (!st)
        st = check_dataflow(&v, p, is_input);
    uint32_t maxq = 0;
    for (int j = 0; j < p->n_jobs; j++)
        maxq = NPU_MAX(maxq, p->jobs[j].n_qwords);
    if (!st && p->n_jobs && !(mark = malloc((size_t)NPU_MIN(maxq, 1u << 26) + 1)))
        st = NPU_ERR_NOMEM;
    for (int j = 0; j < p->n_jobs && !st; j++)
        st = check_job(&v, p, j, mark);
    free(mark);
    free(is_input);
    return st;
}
