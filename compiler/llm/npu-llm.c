// SPDX-License-Identifier: MIT
/*
 * npu-llm.c: the language-model API of npu-llm.h: load a checkpoint, build
 * and compile the decoder programs, run prefill and decode steps with a KV
 * cache, sample.
 *
 * Programs: the decode step (1 token after max_context cache slots) is built
 * and compiled once at load; the prefill (the prompt's length, no cache) is
 * built and compiled when a prompt of a new length (2 tokens or more) comes
 * to an empty context (compile time is reported apart from run time); a
 * prompt to a non-empty context goes through the decode step token by token. Both run through the
 * model API (npu_model_load_graph): on the NPU backends their weights are uploaded once, when the
 * program is loaded, and stay resident for the handle's life.
 *
 * The KV cache: [layer][kv head][slots][head dim] fp32 per K and V (V [layer][slots][kv head]
 * [head dim] where the decode step writes in place), allocated at load
 * (its size is stated up front, npu_llm_info). The step program reads the cache as inputs
 * (past_k.L, past_v.L, views of the cache, no copy on the host) and outputs the new token's
 * k and v, which the host writes into its copy at the current length. On the NPU backends
 * the cache inputs are state inputs (device-resident, uploaded once after a prefill or a
 * reset): the decode step (LLaMA, Qwen2 and GPT-2) writes its new rows into them itself
 * (npu.StateWrite at the kv_pos input, a run-time positioned DPU copy) and attends over
 * the cache in place; --host-kv-cache keeps the Concat with the new row, and there the
 * host writes the rows into the device copy
 * (npu_session_write_state) where it is resident (docs/llm.md, "The KV cache").
 */
#include "npu/npu-llm.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "llm-priv.h"
#include "npu/npu-build.h"
#include "npu/npu-cpu.h"
#include "npu/npu-exec.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"
#include "npu/npu-npub.h"
#include "npu/npu-partition.h"
#include "npu/npu-program-check.h"
#include "npu/npu-program-exec.h"
#include "npu/npu-program.h"
#include "npu/npu-timing.h"

#define DOM "llm"
/* an empty cache slot's mask value: the CPU fp16 attention skips the slots at or below its
 * constant, so both use the one constant */
#define MASK_OFF NPU_ATTN16_MASK_OFF

struct cand {
    float p;
    int id;
};

struct npu_llm {
    struct llm_checkpoint ck;
    struct llm_weights w;
    struct llm_quant quant; /* w8a8 (llm-quant.c) */
    struct npu_llm_info info;
    struct npu_llm_options o;
    char backend[16];
    struct npu_model *dec, *pre;
    struct npu_session *dec_s, *pre_s;
    int pre_len;
    bool pre_split, dec_split; /* split over o.cores (npu_session_split_layers) */
    float *kc, *vc;            /* [L][KVH][C][hd]; vc [L][C][KVH][hd] if v_slots */
    int len;
    int32_t pending; /* the last token made, not yet fed to the model (-1: none) */
    /* The decode program's cache inputs that it keeps in device memory (state inputs,
     * npu-program.h), per input index; dev_len: the cache rows the decode session's device
     * copy holds (-1: not uploaded since the last prefill or reset). While dev_len equals
     * len a step passes those inputs without data (nothing converted) and then writes its
     * new rows into the device copy in place (npu_session_write_state). */
    bool *dec_state;
    int dev_len;
    /* kv_inplace: the decode step (LLaMA, Qwen2, GPT-2) writes its new rows into the cache itself
     * (npu.StateWrite at the kv_pos input, llm-graph.c) and attends over the whole cache;
     * dev_writes: the decode program does that on the NPU for every resident cache input
     * (one run-time positioned write each), so the host writes no rows into the device
     * copy. */
    bool kv_inplace, dev_writes;
    /* dec_kv_out: the decode program has the k.L, v.L outputs (the host's copy of the cache
     * kept current); false when it keeps every cache input resident and writes it itself
     * (dev_writes): nothing reads the host's copy of the rows it writes (a prefill, which
     * fills the host's copy first, only runs on an empty context), so they are neither
     * converted nor copied (make_model) */
    bool dec_kv_out;
    /* v_slots: the in-place decode step holds V as [slots, KVH x hd] (llm-graph.c), kept
     * only where its attention runs on the NPU; m->vc is then [L][C][KVH][hd] */
    bool v_slots;
    uint64_t dec_conv_bytes; /* this generate call's decode steps: bytes converted */
    unsigned dec_conv_inputs, dec_resident_inputs;
    int64_t *ids, *pos;
    float *cos, *sin, *mask;
    float *cosk, *sink; /* the decode step's K angles, [kv heads][hd] (llm-graph.c) */
    float *last;        /* the last run's logits (vocab) */
    struct cand *order; /* sampling scratch, vocab entries */
    size_t buf_tokens;  /* capacity of the per-token input buffers */
    uint64_t rng;
    time_t opened; /* compile cache entries written or loaded since are never trimmed */
    /* Modeled CPU time of one run of the decode / the prefill program's CPU steps and
     * conversions (RK3588 CPU model v1, cpu_steps_modeled); 0 on the cpu backend. */
    double dec_cpu_model_s, pre_cpu_model_s;
    /* The decode program's price with its in-place CPU attentions over dec_attn_slots slots
     * (the slots the last run's read, npu_cpu_attn16_read_slots; 0: not priced yet), and the
     * slots the last decode run's attention read (0: none on the CPU) */
    double dec_cpu_at_s;
    int64_t dec_attn_slots, last_attn_slots;
    /* the decode program's steps' compiled prices (cpu_steps_modeled at load, n_steps; NULL on
     * the cpu backend): a run prices again only its in-place attentions (cpu_steps_modeled_kept) */
    double *dec_step_s;
    /* pre_kv_dev: the prefill writes its k.L / v.L rows into the decode session's state
     * inputs pre_kv_in[2 l + kv] itself, copied in the NPU's layout where pre_kv_keep (no
     * conversion), else converted and written; set per prefill program by pre_kv_setup,
     * only where the decode program keeps and writes its whole cache (!dec_kv_out) */
    bool pre_kv_dev;
    int *pre_kv_in;
    bool *pre_kv_keep; /* per k / v output: kept and copied (else converted and written) */
    /* the last prefill run: k / v outputs converted, copied on the device and their bytes */
    int pre_kv_conv, pre_kv_copies;
    uint64_t pre_kv_bytes;
    /* The decode / prefill program's logits outputs, its first ones: "logits", or the LM
     * head's column slices logits.0 .. logits.N-1 in vocabulary order (llm-graph.c), which
     * run() copies side by side into m->last; k.L / v.L follow them. */
    int dec_nlog, pre_nlog;
    /* dec_raw: this generate call's decode runs leave their logits outputs in the NPU's
     * layout (fp16, or fp32 where the NPU writes them so) and read the token as their argmax there
     * (npu_llm_sampling.no_logits, set_raw_logits); last_raw: the last run did, its token last_tok
     * (m->last not written). dec_argmax_s: the modeled CPU time of that argmax minus the logits'
     * conversions it replaces, per decode run (RK3588 CPU model v1) */
    bool dec_raw, last_raw;
    int32_t last_tok;
    double dec_argmax_s;
    int dec_argmax_runs;
};

static double
thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *
npu_llm_stop_name(enum npu_llm_stop s)
{
    switch (s) {
    case NPU_LLM_STOP_LIMIT: return "limit";
    case NPU_LLM_STOP_EOS: return "eos";
    case NPU_LLM_STOP_CALLBACK: return "callback";
    case NPU_LLM_STOP_CONTEXT: return "context";
    }
    return "?";
}

/* Decode attention blocks the program runs as CPU steps (npu.Attention or Softmax). */
static int
cpu_attention(const struct npu_program *pg)
{
    int n = 0;
    for (int k = 0; pg && k < pg->n_steps; k++)
        n += pg->steps[k].kind == NPU_STEP_CPU &&
             (pg->steps[k].op == NPU_OP_FUSED_ATTENTION || pg->steps[k].op == NPU_OP_SOFTMAX);
    return n;
}

/* The modeled CPU time of one run of program pg's host steps, priced as the cost partition
 * prices them in board mode (RK3588 CPU model v1, npu-cpumodel.c): each CPU step as a node of
 * its op with the program's tensors' logical shapes and dtypes (npu_cpu_model_cost, with
 * `threads` threads as the build had; an input read in NPU memory with its memory dtype, as
 * the kernel reads it), each conversion as its elements' fp32 bytes at the model's
 * conversion rate. The shapes are the compiled ones: a decode step's attention is priced over
 * all of its cache slots, as the partition priced it. These steps are on each step's critical
 * path (the NPU job after a CPU step waits for it), so a board's step takes about the NPU's
 * modeled time plus this. *n_ops and *n_conv count what was priced. */
static enum npu_status cpu_steps_modeled_kept(const struct npu_program *pg, int threads,
                                              const bool *kept, const double *known,
                                              int64_t attn_slots, double *each, double *out,
                                              int *n_ops, int *n_conv, int *n_copy);

static enum npu_status
cpu_steps_modeled(const struct npu_program *pg, int threads, double *each, double *out, int *n_ops,
                  int *n_conv)
{
    int n_copy;
    return cpu_steps_modeled_kept(pg, threads, NULL, NULL, 0, each, out, n_ops, n_conv, &n_copy);
}

/* The modeled cost of copying an NPU tensor's elements as bytes of its memory dtype into
 * another layout (a routed output moved into the decode session's state, pre_kv_setup): priced
 * as the model prices a copy of those bytes, a Concat of one input (data movement at Add's
 * rate per element against the bytes read and written at the model's DRAM bandwidth). */
static double
copy_modeled(const struct npu_prog_tensor *t, int threads)
{
    struct npu_value a = {0}, b = {0};
    a.t = t->t;
    a.t.data = NULL;
    a.t.dtype = t->mem_dtype != NPU_DTYPE_UNDEFINED ? t->mem_dtype : t->t.dtype;
    b.t = a.t;
    struct npu_value *pa = &a, *pb = &b;
    struct npu_attr ax = {.name = "axis", .type = NPU_ATTR_INT, .i = 0};
    struct npu_node n = {.op = NPU_OP_CONCAT,
                         .name = "kv copy",
                         .in = &pa,
                         .nin = 1,
                         .out = &pb,
                         .nout = 1,
                         .attr = &ax,
                         .nattr = 1};
    return npu_cpu_model_cost(NULL, &n, threads, NULL);
}

/* Whether CPU step ps is an npu.Attention that reads its K or V in NPU memory (the in-place
 * kernel, npu_cpu_attn16_decode): the only steps whose price follows the slots a run read. */
static bool
attn_in_place(const struct npu_program *pg, const struct npu_prog_step *ps)
{
    if (ps->kind != NPU_STEP_CPU || ps->op != NPU_OP_FUSED_ATTENTION)
        return false;
    for (int q = 1; q <= 2 && q < ps->nin; q++)
        if (ps->in[q] >= 0 && ps->in[q] < pg->n_tensors &&
            pg->tensors[ps->in[q]].place == NPU_PLACE_NPU)
            return true;
    return false;
}

enum step_price { PRICE_NONE, PRICE_COPY, PRICE_CONV, PRICE_OP };

/* The modeled price of step k of pg (cpu_steps_modeled_kept's terms; *what: what it priced,
 * PRICE_NONE for an NPU job). vals / ptrs: scratch for the step's inputs and outputs. */
static double
step_modeled(const struct npu_program *pg, int k, int threads, const bool *kept, int64_t attn_slots,
             struct npu_value *vals, struct npu_value **ptrs, enum step_price *what)
{
    const double rate = npu_cpu_model_convert_rate();
    const struct npu_prog_step *ps = &pg->steps[k];
    *what = PRICE_NONE;
    if (ps->kind == NPU_STEP_CONVERT && ps->nin > 0 && ps->in[0] >= 0 &&
        ps->in[0] < pg->n_tensors && kept && kept[k]) {
        /* routed into another session's state as bytes (pre_kv_setup), not converted */
        double t = copy_modeled(&pg->tensors[ps->in[0]], threads);
        npu_dbg(DOM, "modeled CPU step: device copy of routed output %s, %.3f us (%s)",
                ps->name ? ps->name : "", t * 1e6, npu_cpu_model_v1.name);
        *what = PRICE_COPY;
        return t;
    }
    if (ps->kind == NPU_STEP_CONVERT && ps->nin > 0 && ps->in[0] >= 0 &&
        ps->in[0] < pg->n_tensors) {
        /* the rate is fp32 bytes per second, i.e. per element (a dtype pass and a
         * layout pass over each): an fp16 tensor's elements cost the same */
        int64_t e = npu_tensor_numel(&pg->tensors[ps->in[0]].t);
        double t = e > 0 ? 4.0 * (double)e / rate : 0;
        npu_dbg(DOM, "modeled CPU step: conversion %s, %lld elements, %.3f us (%s)",
                ps->name ? ps->name : "", (long long)e, t * 1e6, npu_cpu_model_v1.name);
        *what = PRICE_CONV;
        return t;
    }
    if (ps->kind != NPU_STEP_CPU)
        return 0;
    const int nin = NPU_MAX(ps->nin, 0), nout = NPU_MAX(ps->nout, 0);
    struct npu_value **vin = ptrs, **vout = ptrs + nin;
    for (int q = 0; q < nin + nout; q++) {
        int ti = q < nin ? ps->in[q] : ps->out[q - nin];
        memset(&vals[q], 0, sizeof(vals[q]));
        ptrs[q] = NULL; /* an absent optional input */
        if (ti < 0 || ti >= pg->n_tensors)
            continue;
        vals[q].t = pg->tensors[ti].t;
        vals[q].t.data = NULL;
        /* an input the step reads where the NPU holds it (a decode attention's K and V,
         * npu-program-cpu.c): the bytes it reads are those of its memory dtype (fp16) */
        if (q < nin && pg->tensors[ti].place == NPU_PLACE_NPU &&
            pg->tensors[ti].mem_dtype != NPU_DTYPE_UNDEFINED)
            vals[q].t.dtype = pg->tensors[ti].mem_dtype;
        /* K and V of an in-place attention: the slots the run read */
        if (attn_slots > 0 && ps->op == NPU_OP_FUSED_ATTENTION && (q == 1 || q == 2) &&
            pg->tensors[ti].place == NPU_PLACE_NPU && vals[q].t.ndim >= 2)
            vals[q].t.dims[vals[q].t.ndim - 2] =
                NPU_MIN(vals[q].t.dims[vals[q].t.ndim - 2], attn_slots);
        ptrs[q] = &vals[q];
    }
    struct npu_node n = {.op = ps->op,
                         .name = ps->name,
                         .in = vin,
                         .nin = nin,
                         .out = vout,
                         .nout = nout,
                         .attr = (struct npu_attr *)ps->attrs.v,
                         .nattr = (int)ps->attrs.n};
    double t = npu_cpu_model_cost(NULL, &n, threads, NULL);
    if (!attn_slots)
        npu_dbg(DOM, "modeled CPU step: %s %s, %.3f us (%s)", npu_op_name(ps->op),
                ps->name ? ps->name : "", t * 1e6, npu_cpu_model_v1.name);
    else
        npu_dbg(DOM, "modeled CPU step at run time: %s %s over %lld slots read, %.3f us (%s)",
                npu_op_name(ps->op), ps->name ? ps->name : "", (long long)attn_slots, t * 1e6,
                npu_cpu_model_v1.name);
    *what = PRICE_OP;
    return t;
}

/* Scratch for step_modeled: room for the widest step's inputs and outputs. */
static enum npu_status
step_scratch(const struct npu_program *pg, struct npu_value **vals, struct npu_value ***ptrs)
{
    int most = 0; /* a step's inputs and outputs, at most */
    for (int k = 0; pg && k < pg->n_steps; k++)
        most = NPU_MAX(most, NPU_MAX(pg->steps[k].nin, 0) + NPU_MAX(pg->steps[k].nout, 0));
    *vals = calloc((size_t)most + 1, sizeof(**vals));
    *ptrs = calloc((size_t)most + 1, sizeof(**ptrs));
    if (!*vals || !*ptrs) {
        free(*vals);
        free(*ptrs);
        *vals = NULL;
        *ptrs = NULL;
        npu_err(DOM, "out of memory pricing the program's CPU steps");
        return NPU_ERR_NOMEM;
    }
    return NPU_OK;
}

/* The price of one run, summed over the steps in order; each (when not NULL, pg->n_steps
 * entries) gets every step's own price, 0 for an NPU job. kept: per step, a conversion routed
 * as bytes into another session (pre_kv_setup), priced as a copy. *n_ops, *n_conv and
 * *n_copy count the steps priced.
 * known (pg->n_steps prices, each from a call without it) and attn_slots > 0: the price of a
 * run whose in-place attentions (attn_in_place) read that many of their K and V slots
 * (npu_prog_run_stats.cpu_attn_slots) instead of the compiled ones: the kernel reads K and V
 * up to the mask's last valid slot; its mask is still priced whole (it scans it). Only those
 * steps are priced again (*n_ops counts them); every other step's price is its known one,
 * summed in the same order, so the figure is the same to the last bit as pricing every step
 * again. */
static enum npu_status
cpu_steps_modeled_kept(const struct npu_program *pg, int threads, const bool *kept,
                       const double *known, int64_t attn_slots, double *each, double *out,
                       int *n_ops, int *n_conv, int *n_copy)
{
    double sum = 0;
    *out = 0;
    *n_ops = *n_conv = *n_copy = 0;
    struct npu_value *vals, **ptrs;
    enum npu_status st = step_scratch(pg, &vals, &ptrs);
    if (st)
        return st;
    for (int k = 0; pg && k < pg->n_steps; k++) {
        if (known && !attn_in_place(pg, &pg->steps[k])) {
            sum += known[k]; /* 0 for an NPU job: adds nothing */
            continue;
        }
        enum step_price what;
        double t = step_modeled(pg, k, threads, kept, known ? attn_slots : 0, vals, ptrs, &what);
        if (each)
            each[k] = t;
        if (what == PRICE_NONE)
            continue;
        *n_copy += what == PRICE_COPY;
        *n_conv += what == PRICE_CONV;
        *n_ops += what == PRICE_OP;
        sum += t;
    }
    free(vals);
    free(ptrs);
    *out = sum;
    return NPU_OK;
}

/* Bump when the graph builder's output or its lowering changes for the same inputs (cache
 * keys; 12: the decode attention's tasks, branch kcache; 15: RoPE in the projections' chains,
 * branch llm-step; 16: both; 17: GPT-2 small's cache read in place by the CPU attention and
 * its writes in the projections' chains, branch gpt2kv; 18: the outputs named without an
 * Identity, GPT-2's MLP bias on its last block, branch gpt2ser; and, separately, LLaMA / Qwen2
 * decode's joins of the layer split's chains on the CPU, branch tl40; 19: both; 20: the
 * in-place decode step without k / v outputs where it writes its whole cache, branch
 * gpt2ser2; 21: q's column blocks balanced against k and v on three cores, 14 / 14 / 4 heads
 * for TinyLlama, branch tlsplit; merged as 21; 22: the LM head's slices as the outputs
 * logits.0 .. N-1, without their Concat, branch gpt2ser3; 23: the back end's fold_conversions,
 * the int8 Quantize / Dequantize and the Reshape beside a conversion done by it, branch tlser;
 * 24: both; 25: GPT-2's decode joins (the MLP's partial sums, q's column blocks) on the CPU,
 * branch gpt2sum; 26: LLaMA / Qwen2's prefill with its angles constant, its fp16 RMSNorm one
 * node, its last token by Slice, branch llamapre; 27: the MLP's partial products and the
 * residual as one CPU Sum in the decode step, branch gpt2q05; 28: RMSNormalization lowered to
 * the NPU (dpu-norm.c), the prefill's fp16 norms placed by cost, branch prefnorm; 29:
 * RMSNormalization through the layer norm's chain, branch rmsln). A rebuilt
 * compiler changes the key anyway through npu_compiler_build_id, so this matters only for
 * builds without a GNU build ID. */
#define LLM_GRAPH_VERSION 29

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* mkdir -p; false (a warning: the cache is optional) on failure */
static bool
make_dirs(const char *dir)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
        return false;
    for (char *q = p + 1;; q++) {
        if (*q != '/' && *q)
            continue;
        char c = *q;
        *q = 0;
        if (mkdir(p, 0755) && errno != EEXIST) {
            npu_warn(DOM, "compile cache: cannot create %s (%s); compiling without it", p,
                     strerror(errno));
            return false;
        }
        if (!(*q = c))
            return true;
    }
}

/* The cache entry of the program over s tokens after past slots: "" when there is no
 * cache (cpu backend, no_cache, no folder). The key: the graph builder's version, the
 * compiler's version and build ID, the config, the weight files' identity, the program's shape and
 * split, the backend asked for and the build options the model API compiles with (partition, timing
 * model, hardware profile: npu_build_options_hash). */
static void
cache_path(struct npu_llm *m, int s, int past, char *path, size_t len, uint64_t *key,
           uint64_t *opts_hash, char *opts_text, size_t opts_len)
{
    path[0] = 0;
    if (m->o.no_cache || !strcmp(m->o.backend, "cpu"))
        return;
    char dir[PATH_MAX - 64]; /* room for the file name */
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (m->o.cache_dir && m->o.cache_dir[0])
        snprintf(dir, sizeof(dir), "%s", m->o.cache_dir);
    else if (xdg && xdg[0] == '/')
        snprintf(dir, sizeof(dir), "%s/opennpu/llm", xdg);
    else if (home && home[0])
        snprintf(dir, sizeof(dir), "%s/.cache/opennpu/llm", home);
    else
        return;
    bool dev = !strcmp(m->o.backend, "rknpu") || !strcmp(m->o.backend, "rocket");
    struct npu_build_options bo = {.cpu_threads = m->o.cpu_threads, .on_device = dev};
    bo.backend.layer_split = m->o.cores > 1 && s == 1; /* as make_model compiles */
    *opts_hash = npu_build_options_hash(&bo, opts_text, opts_len);
    const struct llm_config *c = &m->ck.cfg;
    int v[] = {LLM_GRAPH_VERSION,
               NPU_PROGRAM_VERSION,
               NPU_NPUB_FORMAT_VERSION,
               s,
               past,
               m->o.cores > 1 ? m->o.cores : 1,
               m->o.cores > 1 && llm_split_forced(),
               m->o.host_cache,
               past > 0 && !m->dec_kv_out};
    uint64_t h = fnv(0xcbf29ce484222325ull, NPU_PROJECT_VERSION, sizeof(NPU_PROJECT_VERSION));
    h = fnv(h, v, sizeof(v));
    uint64_t build = npu_compiler_build_id(); /* a rebuilt compiler compiles afresh */
    h = fnv(h, &build, sizeof(build));
    h = fnv(h, c, sizeof(*c));
    h = fnv(h, &m->ck.ident, sizeof(m->ck.ident));
    h = fnv(h, m->o.backend, strlen(m->o.backend) + 1);
    h = fnv(h, opts_hash, sizeof(*opts_hash));
    if (m->w.quant) /* w8a8: its calibrated ranges (the fp16 key stays as it was) */
        h = llm_quant_hash(m->w.quant, fnv(h, "w8a8", 4));
    *key = h;
    if (!make_dirs(dir))
        return;
    snprintf(path, len, "%s/%s-%016llx.npub", dir, past ? "decode" : "prefill",
             (unsigned long long)h);
}

/* The cache folder's budget: NPU_LLM_CACHE_MAX_MB (MiB), default 4096. A GPT-2-small
 * program is about 0.4 GB (its fp16 weights), so the folder would otherwise grow by that for
 * every prompt length and model. */
static uint64_t
cache_budget(void)
{
    const char *e = getenv("NPU_LLM_CACHE_MAX_MB");
    char *end = NULL;
    unsigned long long mb = e && e[0] ? strtoull(e, &end, 10) : 4096;
    if (e && e[0] && (!end || *end)) {
        npu_warn(DOM, "NPU_LLM_CACHE_MAX_MB=%s is not a number of MiB; using 4096", e);
        mb = 4096;
    }
    return (uint64_t)mb << 20;
}

struct cache_ent {
    char name[256];
    time_t mtime;
    uint64_t bytes;
};

static int
newest_first(const void *a, const void *b)
{
    const struct cache_ent *x = a, *y = b;
    return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : strcmp(x->name, y->name);
}

/* Least recently used first out: deletes the folder's program entries (decode-* / prefill-*
 * .npub; a hit refreshes an entry's time) past the budget, newest kept, never one this
 * process wrote or loaded (time >= since). Best effort: the cache is optional. */
static void
cache_trim(const char *path, time_t since)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = 0;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct cache_ent *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if ((strncmp(de->d_name, "decode-", 7) && strncmp(de->d_name, "prefill-", 8)) || l < 5 ||
            strcmp(de->d_name + l - 5, ".npub") || l >= sizeof(v->name))
            continue;
        char fp[PATH_MAX + 256];
        struct stat sb;
        snprintf(fp, sizeof(fp), "%s/%s", dir, de->d_name);
        if (stat(fp, &sb) || !S_ISREG(sb.st_mode))
            continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            struct cache_ent *nv = realloc(v, nc * sizeof(*v));
            if (!nv)
                break;
            v = nv;
            cap = nc;
        }
        snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
        v[n].mtime = sb.st_mtime;
        v[n].bytes = (uint64_t)sb.st_size;
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof(*v), newest_first);
    uint64_t budget = cache_budget(), used = 0;
    for (size_t i = 0; i < n; i++) {
        used += v[i].bytes;
        if (used <= budget || v[i].mtime >= since)
            continue;
        char fp[PATH_MAX + 256];
        snprintf(fp, sizeof(fp), "%s/%s", dir, v[i].name);
        if (unlink(fp) == 0) {
            npu_info(DOM, "compile cache: removed %s (least recently used; budget %llu MiB)", fp,
                     (unsigned long long)(budget >> 20));
            used -= v[i].bytes;
        }
    }
    free(v);
}

/* fp16 on the NPU backends: the host's fp32 weights live only while a graph is built and
 * compiled (the graph takes them, llm_weights_give, and the compile frees them before the
 * program's weights are uploaded); they are read from the checkpoint's mapping again for the
 * next graph (ensure_weights). The cpu backend runs its graphs on them (kept), and w8a8 keeps
 * only the int8 copies and the small fp32 arrays (kept). */
static bool
weights_transient(const struct npu_llm *m)
{
    return strcmp(m->o.backend, "cpu") && !m->w.quant;
}

static void
drop_weights(struct npu_llm *m)
{
    const struct llm_quant *q = m->w.quant;
    const int hs = m->w.head_split;
    llm_weights_free(&m->ck.cfg, &m->w);
    m->w.quant = q;
    m->w.head_split = hs;
}

/* The fp32 weights, converted again from the checkpoint's mapping if they were given away
 * (and split as at load). */
static enum npu_status
ensure_weights(struct npu_llm *m)
{
    if (m->w.layers)
        return NPU_OK;
    const struct llm_quant *q = m->w.quant;
    enum npu_status st = llm_weights_load(&m->ck, &m->w);
    if (st)
        return st;
    m->w.quant = q;
    if (m->o.cores > 1 && (st = llm_weights_split(&m->ck.cfg, &m->w, m->o.cores)))
        drop_weights(m);
    return st;
}

/* Whether decode program pg keeps all n of its cache inputs (past_*) resident in device
 * memory (state inputs) and writes each itself (a run-time positioned write per input). */
static bool
writes_whole_cache(const struct npu_program *pg, int n)
{
    if (!pg)
        return false;
    int state = 0;
    uint32_t dyn = 0;
    for (int k = 0; k < pg->n_inputs; k++) {
        const struct npu_prog_tensor *t = &pg->tensors[pg->inputs[k]];
        state += t->place == NPU_PLACE_NPU && t->buffer == NPU_BUF_STATE;
    }
    for (int j = 0; j < pg->n_jobs; j++)
        dyn += pg->jobs[j].n_dynrelocs;
    return state == n && dyn >= (uint32_t)n;
}

/* llm_build_graph_ex on the weights, which the graph takes when they are transient */
static enum npu_status
build_graph(struct npu_llm *m, int s, int past, bool v_slots, struct npu_graph **g)
{
    enum npu_status st = ensure_weights(m);
    if (st || (st = llm_build_graph_ex(&m->ck.cfg, &m->w, s, past, m->kv_inplace, v_slots,
                                       past > 0 && !m->dec_kv_out, g)))
        return st;
    if (weights_transient(m))
        llm_weights_give(&m->ck.cfg, &m->w, *g);
    return NPU_OK;
}

static enum npu_status
make_model(struct npu_llm *m, int s, int past, struct npu_model **mo, struct npu_session **se)
{
    struct npu_graph *g = NULL;
    enum npu_status st;
    /* the decode step split over the cores: compiled so that independent tasks share no
     * bytes (npu_model_options.layer_split) */
    struct npu_model_options mo_opts = {.backend = m->o.backend,
                                        .cpu_threads = m->o.cpu_threads,
                                        .layer_split = m->o.cores > 1 && s == 1};
    char name[96], path[PATH_MAX], opts_text[512] = "";
    uint64_t key = 0, opts_hash = 0;
    snprintf(name, sizeof(name), "%s %s", m->ck.cfg.arch_name, past ? "decode" : "prefill");
    cache_path(m, s, past, path, sizeof(path), &key, &opts_hash, opts_text, sizeof(opts_text));
    *mo = NULL;
    if (path[0] && access(path, R_OK) == 0) {
        if (weights_transient(m))
            drop_weights(m); /* a hit needs none */
        if (npu_model_load(path, &mo_opts, mo) == NPU_OK) {
            utime(path, NULL); /* recently used: the last to be trimmed */
            m->info.programs_from_cache++;
            npu_info(DOM, "%s: from the compile cache (%s)", name, path);
        } else {
            npu_warn(DOM, "%s: the compile cache entry %s does not load; compiling", name, path);
            *mo = NULL;
        }
    }
    if (!*mo) {
        /* V as [slots, KVH x hd] (v_slots) only where the attention runs on the NPU without
         * it: the step is compiled with V as [KVH, slots, hd] first (an attention on the CPU
         * would transpose the whole V each step, and the cost partition, seeing that price on
         * the CPU side, moves GPT-2's attention to the NPU with its output projections
         * behind on the CPU: 18.70 ms/token modeled against 11.33 for GPT-2 small) */
        const bool try_vslots = past && m->v_slots;
        if (past)
            m->v_slots = false;
        if ((st = build_graph(m, s, past, false, &g)))
            return st;
        /* NPU_LLM_DUMP_IR=PREFIX writes the graph as PREFIX-decode.npuir / -prefill.npuir
         * (npuc --explain profiles it per node) */
        const char *dump = getenv("NPU_LLM_DUMP_IR");
        if (dump && dump[0]) {
            char ip[PATH_MAX];
            snprintf(ip, sizeof(ip), "%s-%s.npuir", dump, past ? "decode" : "prefill");
            if (npu_ir_save(g, ip) == NPU_OK)
                npu_info(DOM, "%s: graph written to %s", name, ip);
        }
        /* the decode step's cache inputs: resident in device memory where the NPU reads
         * them (codegen keeps them in NPU_BUF_STATE; run() appends the new rows) */
        for (int k = 0; past && !m->o.host_cache && k < g->ninputs; k++)
            if (!strncmp(g->inputs[k]->name, "past_", 5))
                g->inputs[k]->is_state = true;
        if ((st = npu_model_load_graph(g, name, &mo_opts, mo)))
            return st;
        if (try_vslots && strcmp(npu_model_backend(*mo), "cpu") &&
            !cpu_attention(npu_model_program(*mo))) {
            /* the attention is on the NPU: the step again with V as [slots, KVH x hd], kept
             * if its attention stays there (the one the compile cache then keeps). The first
             * program goes before the second is compiled, so that one program's weights are
             * in memory at a time (TinyLlama fp16 peaked at 15.4 GB with both), and is
             * compiled again in the rare case the second moves the attention to the CPU */
            npu_model_free(*mo);
            *mo = NULL;
            for (int v = 1; v >= 0 && !*mo; v--) {
                if ((st = build_graph(m, s, past, v, &g)))
                    return st;
                for (int k = 0; !m->o.host_cache && k < g->ninputs; k++)
                    if (!strncmp(g->inputs[k]->name, "past_", 5))
                        g->inputs[k]->is_state = true;
                st = npu_model_load_graph(g, name, &mo_opts, mo);
                if (st == NPU_OK && v && cpu_attention(npu_model_program(*mo))) {
                    npu_model_free(*mo);
                    *mo = NULL;
                } else if (st != NPU_OK && !v) {
                    return st;
                }
            }
        }
        if (past > 0 && !m->dec_kv_out &&
            !writes_whole_cache(npu_model_program(*mo), 2 * m->ck.cfg.n_layers)) {
            /* a decode step without k / v outputs whose program does not write every cache
             * input itself: not kept (nor cached); the caller compiles it with them */
            npu_model_free(*mo);
            *mo = NULL;
            return NPU_ERR_UNSUPPORTED;
        }
        m->info.programs_compiled++;
        const struct npu_program *pg = npu_model_program(*mo);
        if (path[0] && pg) {
            struct npu_npub_meta meta = {
                .model_hash = key, .options_hash = opts_hash, .options = opts_text, .source = name};
            if (npu_npub_save_ex(pg, &meta, path, NPU_NPUB_QUIET) == NPU_OK) {
                npu_info(DOM, "%s: written to the compile cache (%s)", name, path);
                cache_trim(path, m->opened);
            }
        }
    }
    /* the V layout the program has (from the compile cache: the one chosen when it was
     * compiled): past_v.0 [slots, KVH x hd] or [KVH, slots, hd] */
    for (int k = 0; past && k < npu_model_num_inputs(*mo); k++) {
        const struct npu_io_info *io = npu_model_input(*mo, k);
        /* (a program's input carries its conversion's name: past_v.0.to_npu.npu) */
        if (io && io->name && !strncmp(io->name, "past_v.0", 8) &&
            (io->name[8] == 0 || io->name[8] == '.'))
            m->v_slots = m->kv_inplace && io->ndim == 2;
    }
    int nout = npu_model_num_outputs(*mo), nlog = 0;
    while (nlog < nout && npu_model_output(*mo, nlog) && npu_model_output(*mo, nlog)->name &&
           !strncmp(npu_model_output(*mo, nlog)->name, "logits", 6) &&
           (!npu_model_output(*mo, nlog)->name[6] || npu_model_output(*mo, nlog)->name[6] == '.'))
        nlog++;
    if (past > 0)
        m->dec_nlog = nlog;
    else
        m->pre_nlog = nlog;
    const int want = NPU_MAX(nlog, 1) + (past > 0 && !m->dec_kv_out ? 0 : 2 * m->ck.cfg.n_layers);
    if (nout != want || !nlog) {
        npu_err(DOM, "%s: the compiled program has %d outputs, expected %d", name, nout, want);
        npu_model_free(*mo);
        *mo = NULL;
        return NPU_ERR_INTERNAL;
    }
    if ((st = npu_session_create(*mo, 0, se))) {
        npu_model_free(*mo);
        *mo = NULL;
    }
    return st;
}

static enum npu_status
ensure_buffers(struct npu_llm *m, int s)
{
    const struct llm_config *c = &m->ck.cfg;
    if ((size_t)s <= m->buf_tokens)
        return NPU_OK;
    size_t hd = (size_t)c->head_dim, G = (size_t)(c->n_heads / c->n_kv_heads);
    size_t T = (size_t)m->info.cache_slots + (size_t)s;
    /* cos / sin: [s][hd] for s tokens; the decode step's [heads][hd] (one row per head) */
    size_t ang = (size_t)s * hd, heads = (size_t)c->n_heads * hd;
    if (ang < heads)
        ang = heads;
    free(m->ids);
    free(m->pos);
    free(m->cos);
    free(m->sin);
    free(m->cosk);
    free(m->sink);
    free(m->mask);
    m->ids = calloc((size_t)s, sizeof(int64_t));
    m->pos = calloc((size_t)s, sizeof(int64_t));
    m->cos = calloc(ang, sizeof(float));
    m->sin = calloc(ang, sizeof(float));
    m->cosk = calloc((size_t)c->n_kv_heads * hd, sizeof(float));
    m->sink = calloc((size_t)c->n_kv_heads * hd, sizeof(float));
    m->mask = calloc(G * (size_t)s * T, sizeof(float));
    if (!m->ids || !m->pos || !m->cos || !m->sin || !m->cosk || !m->sink || !m->mask) {
        m->buf_tokens = 0;
        return NPU_ERR_NOMEM;
    }
    m->buf_tokens = (size_t)s;
    return NPU_OK;
}

/* The run's NPU tasks as CSV (NPU_LLM_BREAKDOWN): best effort, a debugging aid. */
static void
breakdown_write(const char *path, const struct npu_prog_run_stats *rs)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        npu_warn(DOM, "NPU_LLM_BREAKDOWN: cannot write %s", path);
        return;
    }
    fprintf(f, "# %s; submits %u, tasks %u, modeled %.9f s\n", npu_timing_model()->label,
            rs->submits, rs->tasks, rs->npu_modeled_s);
    fprintf(f, "submit,submit_s,core,start_s,task_s,dma_bytes,weight_bytes,name\n");
    for (size_t i = 0; i < rs->n_task_stats; i++) {
        const struct npu_prog_task_stats *t = &rs->task_stats[i];
        fprintf(f, "%u,%.9f,%u,%.9f,%.9f,%llu,%llu,%s\n", t->submit, t->submit_s, t->core,
                t->start_s, t->modeled_s, (unsigned long long)t->dma_bytes,
                (unsigned long long)t->weight_bytes, t->name ? t->name : "");
    }
    fclose(f);
}

/* Whether the prefill writes the decode session's device copy of the cache itself
 * (pre_kv_dev), so that the first decode step uploads nothing: the decode program keeps
 * every cache input resident and writes it itself (!dec_kv_out), and each cache input
 * past_k.L / past_v.L (pre_kv_in[2 l + kv]) is a state input [KVH, slots, hd] or V's
 * [slots, KVH x hd] (v_slots). Where the prefill's output k.L / v.L (output o0 + 2 l + kv,
 * o0 = pre_nlog, after the logits)
 * is made by one conversion from an NC1HWC2 tensor of the state's element type with
 * [.., KVH, s, hd] elements that no host step reads (not where a CPU attention reads the
 * converted rows), and the state is [KVH, slots, hd], the prefill session keeps it in device
 * memory (npu_session_route_output, pre_kv_keep): the run copies its bytes into the state
 * where it would convert them (kept[step] marks the conversion replaced, for
 * cpu_steps_modeled_kept); the others are converted as before and their rows written into
 * the state (npu_session_write_state). NPU_LLM_PREFILL_KV_HOST=1: neither (A/B). */
static enum npu_status
pre_kv_setup(struct npu_llm *m, int s, bool **kept)
{
    const struct llm_config *c = &m->ck.cfg;
    const struct npu_program *pp = npu_model_program(m->pre), *dp = npu_model_program(m->dec);
    const char *env = getenv("NPU_LLM_PREFILL_KV_HOST");
    const int L = c->n_layers, KVH = c->n_kv_heads, hd = c->head_dim, o0 = m->pre_nlog;
    *kept = NULL;
    m->pre_kv_dev = false;
    free(m->pre_kv_in);
    free(m->pre_kv_keep);
    m->pre_kv_in = NULL;
    m->pre_kv_keep = NULL;
    if (!pp || !dp || m->dec_kv_out || !m->dec_state || (env && env[0] == '1') || o0 < 1 ||
        pp->n_outputs != o0 + 2 * L)
        return NPU_OK;
    bool *kp = calloc((size_t)pp->n_steps + 1, sizeof(bool));
    int *in = calloc((size_t)(2 * L), sizeof(int));
    bool *keep = calloc((size_t)(2 * L), sizeof(bool));
    if (!kp || !in || !keep) {
        free(kp);
        free(in);
        free(keep);
        return NPU_ERR_NOMEM;
    }
    bool ok = true;
    for (int o = o0; o < o0 + 2 * L && ok; o++) {
        const int l = (o - o0) / 2, kv = (o - o0) % 2;
        char nm[32];
        snprintf(nm, sizeof(nm), "past_%c.%d", kv ? 'v' : 'k', l);
        const size_t nl = strlen(nm);
        int q = -1;
        for (int k = 0; k < dp->n_inputs && k < npu_model_num_inputs(m->dec); k++) {
            const struct npu_io_info *ii = npu_model_input(m->dec, k);
            /* a state input is named after its conversion (past_k.0.to_npu.npu) */
            if (ii && ii->name && !strncmp(ii->name, nm, nl) &&
                (ii->name[nl] == '\0' || ii->name[nl] == '.'))
                q = k;
        }
        const struct npu_prog_tensor *t = q >= 0 ? &dp->tensors[dp->inputs[q]] : NULL;
        const bool heads = t && t->t.ndim == 3 && t->t.dims[0] == KVH && t->t.dims[2] == hd;
        const bool vs =
            t && kv && m->v_slots && t->t.ndim == 2 && t->t.dims[1] == (int64_t)KVH * hd;
        ok = t && m->dec_state[q] && (heads || vs);
        in[o - o0] = q;
        int step = -1;
        bool read = false;
        for (int k = 0; ok && k < pp->n_steps; k++) {
            if (pp->steps[k].kind == NPU_STEP_CONVERT && pp->steps[k].nout > 0 &&
                pp->steps[k].out[0] == pp->outputs[o])
                step = k;
            /* a host step that reads the converted rows (a CPU attention) needs them */
            for (int j = 0; j < pp->steps[k].nin; j++)
                read |= pp->steps[k].in[j] == pp->outputs[o];
        }
        const struct npu_prog_tensor *a =
            ok && step >= 0 ? &pp->tensors[pp->steps[step].in[0]] : NULL;
        keep[o - o0] =
            heads && !read && a && a->place == NPU_PLACE_NPU && a->layout == NPU_LAYOUT_NC1HWC2 &&
            npu_prog_mem_dtype(a) == NPU_DTYPE_FP16 && npu_prog_mem_dtype(t) == NPU_DTYPE_FP16 &&
            a->t.ndim >= 3 && a->t.dims[a->t.ndim - 3] == KVH && a->t.dims[a->t.ndim - 2] == s &&
            a->t.dims[a->t.ndim - 1] == hd && npu_tensor_numel(&a->t) == (int64_t)KVH * s * hd;
        if (keep[o - o0])
            kp[step] = true;
    }
    enum npu_status st = NPU_OK;
    int done = 0;
    /* the prefill runs on an empty context: its rows go to positions 0 .. s - 1 */
    for (int o = o0; ok && o < o0 + 2 * L && !st; o++, done++)
        if (keep[o - o0])
            st = npu_session_route_output(m->pre_s, o, m->dec_s, in[o - o0], 1, 0);
    if (!ok || st) {
        npu_dbg(DOM, "the prefill's k/v rows reach the decode session through the host's copy");
        for (int o = o0; o < o0 + done - (st ? 1 : 0); o++)
            if (keep[o - o0])
                npu_session_route_output(m->pre_s, o, NULL, 0, 0, 0);
        free(kp);
        free(in);
        free(keep);
        return st == NPU_ERR_NOMEM ? st : NPU_OK;
    }
    m->pre_kv_dev = true;
    m->pre_kv_in = in;
    m->pre_kv_keep = keep;
    *kept = kp;
    return NPU_OK;
}

/* The modeled CPU time of the argmax over the decode program's logits outputs read in the
 * NPU's layout (fp16, fp32, or a w8a8 head's int8), minus the conversions of those outputs to fp32
 * that it replaces (CONVERT steps at the model's conversion rate, as cpu_steps_modeled_kept prices
 * them). The argmax is one reduction over all the outputs' elements (run() scans the LM head's
 * slices in one pass): ArgMax at the model's reduction rate against their bytes in the NPU's dtype
 * (fp16, or fp32 where the NPU writes them so) at the DRAM rate, and one dispatch. */
static double
argmax_modeled_delta(const struct npu_program *pg, int nlog, int threads)
{
    double conv = 0;
    int64_t elems = 0;
    enum npu_dtype dt = NPU_DTYPE_UNDEFINED;
    const double rate = npu_cpu_model_convert_rate();
    for (int q = 0; pg && q < nlog && q < pg->n_outputs; q++)
        for (int k = 0; k < pg->n_steps; k++) {
            const struct npu_prog_step *ps = &pg->steps[k];
            if (ps->kind != NPU_STEP_CONVERT || ps->nout < 1 || ps->out[0] != pg->outputs[q] ||
                ps->nin < 1 || ps->in[0] < 0 || ps->in[0] >= pg->n_tensors)
                continue;
            const int64_t e = npu_tensor_numel(&pg->tensors[ps->in[0]].t);
            if (e <= 0)
                continue;
            elems += e;
            conv += 4.0 * (double)e / rate;
            const enum npu_dtype md = npu_prog_mem_dtype(&pg->tensors[ps->in[0]]);
            if (dt == NPU_DTYPE_UNDEFINED || npu_dtype_size(md) > npu_dtype_size(dt))
                dt = md; /* priced at the widest of them (int8: a w8a8 head's) */
        }
    if (dt == NPU_DTYPE_UNDEFINED)
        dt = NPU_DTYPE_FP16;
    struct npu_value a = {0}, b = {0};
    a.t = (struct npu_tensor){.dtype = dt, .ndim = 1, .dims = {elems}};
    b.t = (struct npu_tensor){.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}};
    struct npu_value *pa = &a, *pb = &b;
    struct npu_node n = {
        .op = NPU_OP_ARGMAX, .name = "logits argmax", .in = &pa, .nin = 1, .out = &pb, .nout = 1};
    const double am = elems > 0 ? npu_cpu_model_cost(NULL, &n, threads, NULL) : 0;
    npu_dbg(DOM,
            "modeled CPU argmax of the logits in the NPU layout: %lld %s elements, %.3f us in "
            "place of %d-output conversions, %.3f us (%s)",
            (long long)elems, npu_dtype_name(dt), am * 1e6, nlog, conv * 1e6,
            npu_cpu_model_v1.name);
    return am - conv;
}

/* Whether each of the program's first nlog outputs is made by a CONVERT step from an fp16 /
 * fp32 NC1HWC2 tensor in NPU memory (what npu_session_raw_output takes, which checks the rest
 * and says why not as an error: a w8a8 head's dequantised logits, say, are not; asked first so
 * that such a program converts its logits without an error on stderr). */
static bool
logits_raw_ok(const struct npu_program *pg, int nlog)
{
    for (int q = 0; q < nlog; q++) {
        bool found = false;
        for (int k = 0; pg && q < pg->n_outputs && k < pg->n_steps && !found; k++) {
            const struct npu_prog_step *ps = &pg->steps[k];
            if (ps->kind != NPU_STEP_CONVERT || ps->nout < 1 || ps->out[0] != pg->outputs[q] ||
                ps->nin < 1 || ps->in[0] < 0 || ps->in[0] >= pg->n_tensors)
                continue;
            const struct npu_prog_tensor *t = &pg->tensors[ps->in[0]];
            const enum npu_dtype md = npu_prog_mem_dtype(t);
            /* int8: a w8a8 head's logits, read dequantised (npu_prog_argmax) */
            found = t->place == NPU_PLACE_NPU && t->layout == NPU_LAYOUT_NC1HWC2 &&
                    npu_prog_argmax_dtype_ok(t) &&
                    (md != NPU_DTYPE_INT8 ||
                     npu_prog_mem_dtype(&pg->tensors[pg->outputs[q]]) == NPU_DTYPE_FP32);
        }
        if (!found)
            return false;
    }
    return true;
}

/* The decode session's logits outputs left in the NPU layout (raw) or converted: all of them
 * or none (false when one cannot be: then all are converted). */
static bool
set_raw_logits(struct npu_llm *m, bool raw)
{
    const int nlog = NPU_MAX(m->dec_nlog, 1);
    bool ok = raw && m->dec_s && strcmp(m->info.backend ? m->info.backend : "cpu", "cpu") &&
              logits_raw_ok(npu_model_program(m->dec), nlog);
    int q = 0;
    for (; ok && q < nlog; q++)
        if (npu_session_raw_output(m->dec_s, q, true)) {
            npu_dbg(DOM, "decode logits output %d cannot stay in the NPU layout: converted", q);
            ok = false;
        }
    /* undone: the ones just set (q of them) or, when it was on, all */
    for (int k = 0; !ok && k < (m->dec_raw ? nlog : q); k++)
        npu_session_raw_output(m->dec_s, k, false);
    if (ok && !m->dec_raw)
        m->dec_argmax_s = argmax_modeled_delta(npu_model_program(m->dec), nlog, m->o.cpu_threads);
    m->dec_raw = ok;
    return ok;
}

/* Runs s tokens at positions len.. through prefill (past 0) or the decode
 * step (past = max_context), appends their k/v to the cache, copies the last
 * token's logits into m->last. */
static enum npu_status
run(struct npu_llm *m, const int32_t *tok, int s, bool prefill, double *host_s, double *mod_s,
    double *wait_s, double *cpu_s, double *cpu_mod_s)
{
    double t0 = now(), c0 = thread_cpu();
    const struct llm_config *c = &m->ck.cfg;
    const int L = c->n_layers, KVH = c->n_kv_heads, hd = c->head_dim,
              G = c->n_heads / c->n_kv_heads, C = m->info.cache_slots;
    /* in place (decode): the keys are the cache's slots, the new token's at m->len */
    const bool inplace = m->kv_inplace && !prefill;
    const int past = prefill ? 0 : C, T = inplace ? past : past + s;
    enum npu_status st;
    if ((st = ensure_buffers(m, s)))
        return st;
    for (int i = 0; i < s; i++) {
        if (tok[i] < 0 || tok[i] >= c->vocab) {
            npu_err(DOM, "token id %d is outside the vocabulary (0..%d)", tok[i], c->vocab - 1);
            return NPU_ERR_INVALID;
        }
        m->ids[i] = tok[i];
        m->pos[i] = m->len + i;
        if (c->arch == LLM_ARCH_GPT2 && m->pos[i] >= c->max_pos) {
            npu_err(DOM, "position %lld is beyond GPT-2's %d position embeddings",
                    (long long)m->pos[i], c->max_pos);
            return NPU_ERR_INVALID;
        }
    }
    if (c->arch != LLM_ARCH_GPT2)
        llm_rope_tables(c, m->len, s, m->cos, m->sin);
    /* the decode step (LLaMA, Qwen2) takes the angles per head: [H, 1, hd] for Q and
     * [KVH, 1, hd] for K, the rows its RoPE multiplies without broadcasting (llm-graph.c) */
    const bool rows = s == 1 && c->arch != LLM_ARCH_GPT2;
    const bool mask_rows = s == 1; /* GPT-2's decode step too: mask [1, 1, T] */
    for (int h = 0; rows && h < c->n_heads; h++) {
        if (h)
            memcpy(m->cos + (size_t)h * hd, m->cos, (size_t)hd * sizeof(float));
        if (h)
            memcpy(m->sin + (size_t)h * hd, m->sin, (size_t)hd * sizeof(float));
        if (h < KVH) {
            memcpy(m->cosk + (size_t)h * hd, m->cos, (size_t)hd * sizeof(float));
            memcpy(m->sink + (size_t)h * hd, m->sin, (size_t)hd * sizeof(float));
        }
    }
    for (int j = 0; j < G; j++)
        for (int i = 0; i < s; i++) {
            float *row = m->mask + ((size_t)j * s + i) * T;
            for (int t = 0; t < past; t++)
                row[t] = t < m->len + (inplace ? 1 : 0) ? 0.0f : MASK_OFF;
            for (int t = 0; t < s && !inplace; t++)
                row[past + t] = t <= i ? 0.0f : MASK_OFF;
        }
    /* a prefill program of LLaMA / Qwen2 holds its angles as constants (llm-graph.c; one
     * from before LLM_GRAPH_VERSION 26 takes them as the inputs cos, sin) */
    const struct npu_model *pm = prefill ? m->pre : m->dec;
    const struct npu_io_info *in1 =
        pm && npu_model_num_inputs(pm) > 1 ? npu_model_input(pm, 1) : NULL;
    const bool ang_in =
        c->arch != LLM_ARCH_GPT2 && (rows || (in1 && in1->name && !strncmp(in1->name, "cos", 3) &&
                                              (in1->name[3] == '\0' || in1->name[3] == '.')));
    /* ids, mask, then GPT-2's positions or the angles (the decode step's four, a prefill's
     * two where it takes them) */
    const int n_ang = c->arch == LLM_ARCH_GPT2 ? 1 : rows ? 4 : ang_in ? 2 : 0;
    int nin = 2 + n_ang + inplace + (past ? 2 * L : 0);
    int64_t kv_pos = m->len;
    struct npu_tensor *in = calloc((size_t)nin, sizeof(*in));
    /* the logits' outputs (one, or the LM head's slices) and then k.L, v.L */
    const int nlog = NPU_MAX(prefill ? m->pre_nlog : m->dec_nlog, 1);
    struct npu_tensor *out = calloc((size_t)(nlog + 2 * L), sizeof(*out));
    /* the k.L, v.L outputs (none from a decode program that writes its cache itself) */
    const int nkv = prefill || m->dec_kv_out ? L : 0;
    if (!in || !out) {
        free(in);
        free(out);
        return NPU_ERR_NOMEM;
    }
    int k = 0;
    in[k++] =
        (struct npu_tensor){.dtype = NPU_DTYPE_INT64, .ndim = 2, .dims = {1, s}, .data = m->ids};
    if (c->arch == LLM_ARCH_GPT2) {
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_INT64, .ndim = 2, .dims = {1, s}, .data = m->pos};
    } else if (rows) {
        /* one q block's heads when the step RoPEs q's blocks each on its own (llm-graph.c):
         * read from the program's own 'cos' input, since a program from the compile cache
         * (or fp16 weights given to their graph) leaves no split plan to ask
         * llm_rope_block_heads */
        const struct npu_io_info *ci = in1;
        const int H = ci && ci->ndim == 3 && ci->name && !strcmp(ci->name, "cos") &&
                              ci->dims[0] >= 1 && ci->dims[0] <= c->n_heads
                          ? (int)ci->dims[0]
                          : c->n_heads;
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {H, 1, hd}, .data = m->cos};
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {H, 1, hd}, .data = m->sin};
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KVH, 1, hd}, .data = m->cosk};
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KVH, 1, hd}, .data = m->sink};
    } else if (ang_in) {
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, 1, s, hd}, .data = m->cos};
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, 1, s, hd}, .data = m->sin};
    }
    if (mask_rows)
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {1, G, T}, .data = m->mask};
    else
        in[k++] = (struct npu_tensor){
            .dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, 1, G * s, T}, .data = m->mask};
    if (inplace)
        in[k++] =
            (struct npu_tensor){.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}, .data = &kv_pos};
    const size_t layer = (size_t)KVH * C * hd;
    const int kv0 = k; /* the first cache input */
    const bool resident = past && m->dev_len == m->len;
    /* GPT-2's decode step, and the in-place one of LLaMA / Qwen2, take the cache as
     * [KVH, slots, hd] (llm-graph.c) */
    const bool cache3 = (mask_rows && c->arch == LLM_ARCH_GPT2) || inplace;
    const struct npu_tensor kv_in = {
        .dtype = NPU_DTYPE_FP32,
        .ndim = cache3 ? 3 : 4,
        .dims = {cache3 ? KVH : 1, cache3 ? C : KVH, cache3 ? hd : C, cache3 ? 0 : hd}};
    /* v_slots: V's cache is [slots, KVH x hd] (llm-graph.c; m->vc holds it that way) */
    const struct npu_tensor v_in = {
        .dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {C, (int64_t)KVH * hd}};
    for (int l = 0; l < L && past; l++) {
        in[k] = kv_in;
        in[k++].data = m->kc + l * layer;
        in[k] = inplace && m->v_slots ? v_in : kv_in;
        in[k++].data = m->vc + l * layer;
        for (int q = k - 2; resident && m->dec_state && q < k; q++)
            if (m->dec_state[q])
                in[q].data = NULL; /* resident: the device copy is current */
    }
    struct npu_session *se = prefill ? m->pre_s : m->dec_s;
    struct npu_prog_run_stats rs = {0};
    if (m->o.cores > 1 && (prefill ? !m->pre_split : !m->dec_split)) {
        /* the first run of a program records it (an extra run, not counted) and splits
         * its jobs over the cores; addresses do not depend on the data */
        struct npu_prog_split_info si = {0};
        if ((st = npu_session_split_layers(se, in, nin, (unsigned)m->o.cores, &si))) {
            npu_err(DOM, "cannot split the %s program over %d cores",
                    prefill ? "prefill" : "decode", m->o.cores);
            free(in);
            free(out);
            return st;
        }
        if (prefill) {
            m->pre_split = true;
        } else {
            m->dec_split = true;
            m->info.decode_cores = (int)si.cores;
            m->info.decode_split_submits = si.parallel_segs;
            m->info.decode_submits = si.submits;
            m->info.decode_split_tasks = si.parallel_tasks;
            m->info.decode_tasks = si.tasks;
        }
        t0 = now();
        c0 = thread_cpu();
    }
    /* NPU_LLM_BREAKDOWN=FILE: each decode step's NPU tasks (submit, core, modeled times,
     * weight bytes, name) written to FILE as CSV, the last step's kept (tests/llm
     * llm-breakdown.py sums them per token) */
    const char *bd = prefill ? NULL : getenv("NPU_LLM_BREAKDOWN");
    struct npu_prog_task_stats *ts = NULL;
    if (bd && bd[0] && (ts = calloc(65536, sizeof(*ts)))) {
        rs.task_stats = ts;
        rs.task_cap = 65536;
    }
    if (strcmp(m->info.backend ? m->info.backend : "cpu", "cpu")) {
        st = npu_session_run_detailed(se, in, nin, out, nlog + 2 * nkv, &rs);
        if (!st && ts)
            breakdown_write(bd, &rs);
    } else {
        struct npu_run_stats cs = {0};
        st = npu_session_run(se, in, nin, out, nlog + 2 * nkv, &cs);
    }
    if (!st && rs.order_violations) {
        npu_err(DOM, "the %s program split over %d cores ran %u task(s) before their inputs",
                prefill ? "prefill" : "decode", m->o.cores, rs.order_violations);
        st = NPU_ERR_INTERNAL;
    }
    m->last_raw = !st && !prefill && m->dec_raw;
    if (m->last_raw) {
        /* the token: the argmax over the slices' fp16 values where the NPU left them */
        struct npu_prog_argmax am = {.index = -1};
        int64_t at = 0;
        for (int q = 0; q < nlog && !st; q++) {
            const int64_t n = npu_tensor_numel(&out[q]);
            if (n <= 0 || n > c->vocab - at || out[q].data) {
                st = NPU_ERR_INTERNAL;
                break;
            }
            st = npu_session_output_argmax(se, q, at, &am);
            at += n;
        }
        if (st || at != c->vocab || am.index < 0) {
            npu_err(DOM, "the program's logits (%d output(s)) are not %d values in the NPU layout",
                    nlog, c->vocab);
            st = NPU_ERR_INTERNAL;
        }
        m->last_tok = (int32_t)am.index;
        m->dec_argmax_runs++;
    }
    if (!st) {
        /* the LM head's slices side by side, in vocabulary order (no join in the program) */
        int64_t at = 0;
        for (int q = 0; q < nlog && !st && !m->last_raw; q++) {
            const int64_t n = npu_tensor_numel(&out[q]);
            if (out[q].dtype != NPU_DTYPE_FP32 || n <= 0 || n > c->vocab - at || !out[q].data) {
                st = NPU_ERR_INTERNAL;
                break;
            }
            memcpy(m->last + at, out[q].data, (size_t)n * sizeof(float));
            at += n;
        }
        if (st || (at != c->vocab && !m->last_raw)) {
            npu_err(DOM, "the program's logits (%d output(s)) are not %d floats", nlog, c->vocab);
            st = NPU_ERR_INTERNAL;
        }
        if (prefill) {
            m->pre_kv_conv = m->pre_kv_copies = 0;
            m->pre_kv_bytes = 0;
        }
        for (int l = 0; l < nkv && !st && prefill && m->pre_kv_dev; l++)
            for (int kv = 0; kv < 2 && !st; kv++) {
                /* routed: the run copied its NPU bytes into the decode session's device
                 * copy, nothing converted (pre_kv_setup) */
                if (!m->pre_kv_keep[2 * l + kv])
                    continue;
                if (m->len) {
                    npu_err(DOM, "the prefill's k/v rows were copied to position 0, not %d",
                            m->len);
                    st = NPU_ERR_INTERNAL;
                }
                m->pre_kv_copies++;
                m->pre_kv_bytes += (uint64_t)KVH * s * hd * 2; /* fp16 (pre_kv_setup) */
            }
        for (int l = 0; l < nkv && !st; l++)
            for (int kv = 0; kv < 2; kv++) {
                if (prefill && m->pre_kv_dev && m->pre_kv_keep[2 * l + kv])
                    continue; /* copied above */
                const struct npu_tensor *o = &out[nlog + 2 * l + kv];
                m->pre_kv_conv += prefill;
                if (o->dtype != NPU_DTYPE_FP32 || npu_tensor_numel(o) != (int64_t)KVH * s * hd) {
                    npu_err(DOM, "the program's key/value output %d has the wrong shape",
                            nlog + 2 * l + kv);
                    st = NPU_ERR_INTERNAL;
                    break;
                }
                const float *src = o->data;
                float *dst = (kv ? m->vc : m->kc) + l * layer;
                for (int h = 0; h < KVH; h++)
                    for (int t = 0; t < (kv && m->v_slots ? s : 1); t++)
                        if (kv && m->v_slots) /* V: [slots, KVH x hd] */
                            memcpy(dst + ((size_t)(m->len + t) * KVH + h) * hd,
                                   src + ((size_t)h * s + t) * hd, (size_t)hd * sizeof(float));
                        else
                            memcpy(dst + ((size_t)h * C + m->len) * hd, src + (size_t)h * s * hd,
                                   (size_t)s * hd * sizeof(float));
                /* the device copy: the new rows only, at the current length */
                int q = kv0 + 2 * l + kv;
                if (prefill && m->pre_kv_dev) {
                    /* the decode session's device copy, written by the prefill: V as
                     * [slots, KVH x hd] from the host's copy just written, else [KVH, s, hd] */
                    const int qd = m->pre_kv_in[2 * l + kv];
                    const bool vs = kv && m->v_slots;
                    struct npu_tensor blk = {.dtype = NPU_DTYPE_FP32,
                                             .ndim = vs ? 2 : 3,
                                             .dims = {vs ? s : KVH, vs ? (int64_t)KVH * hd : s, hd},
                                             .data = vs ? (void *)(dst + (size_t)m->len * KVH * hd)
                                                        : (void *)src};
                    if (vs)
                        blk.dims[2] = 0;
                    st = npu_session_write_state(m->dec_s, qd, &blk, vs ? 0 : 1, m->len);
                    if (st) {
                        npu_err(DOM, "cannot write the prefill's rows into the device copy of the "
                                     "KV cache");
                        break;
                    }
                    continue;
                }
                if (!prefill && m->dec_state && m->dec_state[q] && !m->dev_writes) {
                    struct npu_tensor row = {.dtype = NPU_DTYPE_FP32,
                                             .ndim = 4,
                                             .dims = {1, KVH, s, hd},
                                             .data = (void *)src};
                    if (cache3)
                        row = (struct npu_tensor){.dtype = NPU_DTYPE_FP32,
                                                  .ndim = 3,
                                                  .dims = {KVH, s, hd},
                                                  .data = (void *)src};
                    const bool vrow = kv && inplace && m->v_slots; /* [1, KVH x hd] */
                    if (vrow)
                        row = (struct npu_tensor){.dtype = NPU_DTYPE_FP32,
                                                  .ndim = 2,
                                                  .dims = {1, (int64_t)KVH * hd},
                                                  .data = (void *)src};
                    st = npu_session_write_state(se, q, &row, vrow ? 0 : cache3 ? 1 : 2, m->len);
                    if (st) {
                        npu_err(DOM, "cannot append to the device copy of the KV cache");
                        break;
                    }
                }
            }
        if (!st)
            m->dev_len = prefill && !m->pre_kv_dev ? -1 : m->len + s;
    }
    free(ts);
    free(in);
    free(out);
    if (st)
        return st;
    m->len += s;
    *host_s += now() - t0;
    *cpu_s += thread_cpu() - c0;
    *mod_s += rs.npu_modeled_s;
    /* the decode step's CPU attentions priced over the slots this run read (the mask's valid
     * ones), as a board's CPU reads them, not the compiled slots */
    double dec_cpu = m->dec_cpu_model_s;
    m->last_attn_slots = prefill ? 0 : rs.cpu_attn_steps ? rs.cpu_attn_slots : 0;
    if (m->last_attn_slots > 0 && m->dec_cpu_model_s > 0) {
        int priced, conv, copies;
        if (m->dec_attn_slots != m->last_attn_slots && m->dec_step_s &&
            !cpu_steps_modeled_kept(npu_model_program(m->dec), m->o.cpu_threads, NULL,
                                    m->dec_step_s, m->last_attn_slots, NULL, &m->dec_cpu_at_s,
                                    &priced, &conv, &copies)) {
            m->dec_attn_slots = m->last_attn_slots;
            npu_dbg(DOM, "modeled CPU steps at run time: %d step(s) priced again over %lld slots",
                    priced, (long long)m->last_attn_slots);
        }
        if (m->dec_attn_slots == m->last_attn_slots)
            dec_cpu = m->dec_cpu_at_s;
    }
    if (m->last_raw)
        dec_cpu += m->dec_argmax_s; /* the argmax in place of the logits' conversions */
    *cpu_mod_s += prefill ? m->pre_cpu_model_s : dec_cpu;
    *wait_s += rs.npu_wait_s;
    if (!prefill) {
        m->dec_conv_bytes += rs.input_convert_bytes + rs.convert_step_bytes;
        m->dec_conv_inputs += rs.inputs_converted;
        m->dec_resident_inputs += rs.inputs_resident;
    }
    return NPU_OK;
}

/* w8a8 (LLaMA, Qwen2): every projection quantised once into m->quant's cache, by building
 * the decode step's graph with the cache on (the products the graph takes: q, k, v, o, the
 * MLP's blocks, the LM head's slices), then the fp32 copies freed (llm_weights_release):
 * every later graph (the decode step's, a prefill per prompt length) borrows the int8
 * copies, and the host holds about a quarter of the projections' fp32 bytes. GPT-2 keeps
 * its fp32 weights (its MLP blocks stay fp32 products). */
static enum npu_status
quantize_once(struct npu_llm *m, int slots)
{
    const struct llm_config *c = &m->ck.cfg;
    if (c->arch == LLM_ARCH_GPT2)
        return NPU_OK;
    /* the layers' projections are in the cache already (quantised and freed by the
     * calibration a layer at a time): this graph quantises the LM head */
    if (!m->quant.cache && !(m->quant.cache = calloc(1, sizeof(*m->quant.cache))))
        return NPU_ERR_NOMEM;
    struct npu_graph *g = NULL;
    double t0 = now();
    enum npu_status st = llm_build_graph_ex(c, &m->w, 1, slots, m->kv_inplace, false, false, &g);
    npu_graph_free(g);
    if (st)
        return st;
    uint64_t freed = llm_weights_release(c, &m->w);
    npu_info(DOM, "w8a8: %d weights quantised once (%.1f MB int8) in %.3f s; %.1f MB of fp32 freed",
             m->quant.cache->n, (double)m->quant.cache->bytes / 1e6, now() - t0,
             (double)freed / 1e6);
    return NPU_OK;
}

enum npu_status
npu_llm_load(const char *dir, const struct npu_llm_options *opts, struct npu_llm **out)
{
    enum npu_status st;
    *out = NULL;
    struct npu_llm *m = calloc(1, sizeof(*m));
    if (!m)
        return NPU_ERR_NOMEM;
    m->opened = time(NULL);
    m->o = opts ? *opts : (struct npu_llm_options){0};
    snprintf(m->backend, sizeof(m->backend), "%s", m->o.backend ? m->o.backend : "auto");
    m->o.backend = m->backend;
    if ((st = llm_checkpoint_open(dir, &m->ck))) {
        free(m);
        return st;
    }
    const struct llm_config *c = &m->ck.cfg;
    /* fp16 on the NPU backends: the checkpoint checked now, its fp32 weights made only when a
     * graph is built (none on a compile-cache hit; weights_transient) */
    const bool check_only =
        strcmp(m->o.backend, "cpu") && (!m->o.weights || !strcmp(m->o.weights, "fp16"));
    if ((st = check_only ? llm_weights_check(&m->ck) : llm_weights_load(&m->ck, &m->w)))
        goto err;
    m->info.weights = "fp16";
    if (m->o.weights && strcmp(m->o.weights, "fp16")) {
        if (strcmp(m->o.weights, "w8a8")) {
            npu_err(DOM, "weights '%s': not one of fp16, w8a8", m->o.weights);
            st = NPU_ERR_INVALID;
            goto err;
        }
        /* after the weights are split (as the decode graph's, llm_weights_split's w8a8 rule):
         * the calibration graph has the same blocks, w8a8 LLaMA's down products one range
         * per block (swiglu_blocks) */
        m->w.quant = &m->quant;
        if (m->o.cores > 1 && m->o.cores <= 3 && (st = llm_weights_split(c, &m->w, m->o.cores)))
            goto err;
        double t0 = now();
        if ((st = llm_quant_calibrate(c, &m->w, m->o.calib_ids, m->o.n_calib_ids, m->o.cpu_threads,
                                      true, &m->quant)))
            goto err;
        m->w.quant = &m->quant;
        m->info.weights = "w8a8";
        m->info.calib_tokens = m->quant.calib_tokens;
        m->info.calib_s = now() - t0;
    }
    m->o.weights = m->info.weights;
    m->o.calib_ids = NULL; /* the caller's; not kept */
    int C = m->o.max_context ? m->o.max_context : (c->max_pos < 256 ? c->max_pos : 256);
    if (C < 1 || C > (1 << 20) || (c->arch == LLM_ARCH_GPT2 && C > c->max_pos)) {
        npu_err(DOM, "%s: a maximum context of %d tokens is out of range (1..%d)", dir, C,
                c->arch == LLM_ARCH_GPT2 ? c->max_pos : 1 << 20);
        st = NPU_ERR_INVALID;
        goto err;
    }
    struct npu_llm_info *i = &m->info;
    i->architecture = c->arch_name;
    i->n_layers = c->n_layers;
    i->hidden = c->hidden;
    i->n_heads = c->n_heads;
    i->n_kv_heads = c->n_kv_heads;
    i->head_dim = c->head_dim;
    i->intermediate = c->ffn;
    i->vocab = c->vocab;
    i->max_context = C;
    i->n_eos = c->n_eos;
    memcpy(i->eos_ids, c->eos, sizeof(i->eos_ids));
    i->eos_source = c->eos_source;
    i->weight_bytes = m->ck.bytes;
    /* cache slots: the decode step's keys (slots + the new token, or in place the slots
     * alone) a multiple of 32, so that attention on the NPU needs no key padding (the extra
     * slots are masked like empty ones) */
    m->kv_inplace = !m->o.host_cache;
    const int slots = m->kv_inplace ? (C + 31) / 32 * 32 : (C + 1 + 31) / 32 * 32 - 1;
    i->cache_slots = slots;
    size_t cache = (size_t)c->n_layers * c->n_kv_heads * (size_t)slots * c->head_dim;
    i->kv_cache_bytes = 2 * cache * sizeof(float);
    m->kc = calloc(cache, sizeof(float));
    m->vc = calloc(cache, sizeof(float));
    m->last = malloc((size_t)c->vocab * sizeof(float));
    m->order = malloc((size_t)c->vocab * sizeof(*m->order));
    if (!m->kc || !m->vc || !m->last || !m->order) {
        npu_err(DOM, "%s: no memory for a KV cache of %zu bytes", dir, i->kv_cache_bytes);
        st = NPU_ERR_NOMEM;
        goto err;
    }
    if (m->o.cores < 0 || m->o.cores > 3) {
        npu_err(DOM, "cores: %d is not 0..3", m->o.cores);
        st = NPU_ERR_INVALID;
        goto err;
    }
    /* the big projections as column blocks, one MatMul per core (the split then runs them
     * side by side) */
    if (m->o.cores > 1 && m->w.layers && (st = llm_weights_split(c, &m->w, m->o.cores)))
        goto err;
    if (m->w.quant && (st = quantize_once(m, slots)))
        goto err;
    m->v_slots = m->kv_inplace; /* make_model keeps it only with the attention on the NPU */
    /* first without the k.L, v.L outputs where the step may write its cache itself; kept if
     * the program holds every cache input resident and writes it (else compiled again with
     * them, the host then keeping its copy current) */
    m->dec_kv_out = !m->kv_inplace || m->o.host_cache || !strcmp(m->o.backend, "cpu");
    if (!m->dec_kv_out) {
        /* a compile cache entry with the outputs: this step was found to need them before */
        char path[PATH_MAX], opts_text[512];
        uint64_t key = 0, opts_hash = 0;
        m->dec_kv_out = true;
        cache_path(m, 1, slots, path, sizeof(path), &key, &opts_hash, opts_text, sizeof(opts_text));
        m->dec_kv_out = path[0] && access(path, R_OK) == 0;
    }
    st = make_model(m, 1, slots, &m->dec, &m->dec_s);
    if (st == NPU_ERR_UNSUPPORTED && !m->dec_kv_out && !m->dec) {
        m->dec_kv_out = true;
        m->v_slots = m->kv_inplace;
        st = make_model(m, 1, slots, &m->dec, &m->dec_s);
    }
    if (st)
        goto err;
    i->backend = npu_model_backend(m->dec);
    if (weights_transient(m))
        drop_weights(m); /* until a prefill program is compiled */
    if (m->o.cores > 1 && strcmp(i->backend, "sim")) {
        npu_err(DOM,
                "splitting a step over %d cores needs the sim backend (the split plans from the "
                "simulator's record of each task's memory accesses); this runs on %s",
                m->o.cores, i->backend);
        st = NPU_ERR_UNSUPPORTED;
        goto err;
    }
    const struct npu_program *pg = npu_model_program(m->dec);
    m->dev_len = -1;
    if (pg && !(m->dec_state = calloc((size_t)pg->n_inputs + 1, sizeof(bool)))) {
        st = NPU_ERR_NOMEM;
        goto err;
    }
    for (int k = 0; pg && k < pg->n_inputs; k++) {
        const struct npu_prog_tensor *t = &pg->tensors[pg->inputs[k]];
        m->dec_state[k] = t->place == NPU_PLACE_NPU && t->buffer == NPU_BUF_STATE;
        i->decode_state_inputs += m->dec_state[k];
        i->decode_state_bytes += m->dec_state[k] ? (size_t)t->bytes : 0;
    }
    /* in place: every resident cache input is written by the program (one run-time
     * positioned write each); otherwise the host writes the rows (as with --host-kv-cache) */
    uint32_t dyn = 0;
    for (int j = 0; pg && j < pg->n_jobs; j++)
        dyn += pg->jobs[j].n_dynrelocs;
    m->dev_writes =
        m->kv_inplace && i->decode_state_inputs && dyn >= (uint32_t)i->decode_state_inputs;
    i->decode_state_writes = m->dev_writes ? i->decode_state_inputs : 0;
    i->decode_kv_outputs = m->dec_kv_out ? 2 * c->n_layers : 0;
    if (m->kv_inplace && i->decode_state_inputs && !m->dev_writes)
        npu_warn(DOM,
                 "decode program: %u run-time writes for %u resident cache inputs; the host "
                 "writes the rows",
                 dyn, (unsigned)i->decode_state_inputs);
    for (int k = 0; pg && k < pg->n_steps; k++) {
        const struct npu_prog_step *ps = &pg->steps[k];
        i->decode_npu_jobs += ps->kind == NPU_STEP_NPU_JOB;
        i->decode_converts += ps->kind == NPU_STEP_CONVERT;
        i->decode_cpu_steps += ps->kind == NPU_STEP_CPU;
        i->decode_cpu_matmuls += ps->kind == NPU_STEP_CPU &&
                                 (ps->op == NPU_OP_MATMUL || ps->op == NPU_OP_QLINEAR_MATMUL);
    }
    i->decode_cpu_attention = cpu_attention(pg);
    if (strcmp(i->backend, "cpu")) {
        m->dec_step_s = calloc((size_t)NPU_MAX(pg ? pg->n_steps : 0, 1), sizeof(double));
        if (!m->dec_step_s) {
            npu_err(DOM, "out of memory for the decode program's step prices");
            st = NPU_ERR_NOMEM;
            goto err;
        }
        if ((st = cpu_steps_modeled(pg, m->o.cpu_threads, m->dec_step_s, &m->dec_cpu_model_s,
                                    &i->decode_cpu_model_ops, &i->decode_cpu_model_converts)))
            goto err;
        i->decode_cpu_modeled_s = m->dec_cpu_model_s;
    }
    i->cpu_model = npu_cpu_model_v1.name;
    i->decode_v_slots = m->v_slots;
    i->decode_cores = 1;
    m->pending = -1;
    *out = m;
    return NPU_OK;
err:
    npu_llm_free(m);
    return st;
}

void
npu_llm_free(struct npu_llm *m)
{
    if (!m)
        return;
    npu_session_destroy(m->pre_s);
    npu_model_free(m->pre);
    npu_session_destroy(m->dec_s);
    npu_model_free(m->dec);
    free(m->dec_state);
    free(m->dec_step_s);
    free(m->pre_kv_in);
    free(m->pre_kv_keep);
    llm_weights_free(&m->ck.cfg, &m->w);
    llm_quant_free(&m->quant);
    llm_checkpoint_close(&m->ck);
    free(m->kc);
    free(m->vc);
    free(m->ids);
    free(m->pos);
    free(m->cos);
    free(m->sin);
    free(m->cosk);
    free(m->sink);
    free(m->mask);
    free(m->last);
    free(m->order);
    free(m);
}

const struct npu_llm_info *
npu_llm_get_info(const struct npu_llm *m)
{
    return m ? &m->info : NULL;
}

void
npu_llm_reset(struct npu_llm *m)
{
    if (m) {
        m->len = 0;
        m->pending = -1;
        m->dev_len = -1;
    }
}

int
npu_llm_context_length(const struct npu_llm *m)
{
    return m ? m->len : 0;
}

/* splitmix64 */
static uint64_t
rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int
by_prob_desc(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    return x->p < y->p ? 1 : x->p > y->p ? -1 : x->id - y->id;
}

static int32_t
choose(struct npu_llm *m, const float *logits, const struct npu_llm_sampling *sp)
{
    const int V = m->ck.cfg.vocab;
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best])
            best = i;
    if (!sp || sp->greedy || sp->temperature <= 0)
        return best;
    /* A NaN logit is never sampled (probability 0) and sets no maximum: one NaN made every
     * probability NaN (their sum), and the draw then always the last candidate. A +inf one
     * (or none finite) wins outright: the softmax would be inf - inf. */
    float mx = -INFINITY;
    int at = best;
    for (int i = 0; i < V; i++)
        if (logits[i] > mx) {
            mx = logits[i];
            at = i;
        }
    if (!isfinite(mx))
        return at;
    /* softmax at the temperature, then top-k and top-p over the sorted list */
    struct cand *c = m->order;
    double sum = 0;
    for (int i = 0; i < V; i++) {
        c[i].p = isnan(logits[i]) ? 0.0f : expf((logits[i] - mx) / sp->temperature);
        c[i].id = i;
        sum += c[i].p;
    }
    for (int i = 0; i < V; i++)
        c[i].p = (float)(c[i].p / sum);
    qsort(c, (size_t)V, sizeof(*c), by_prob_desc);
    int n = V;
    if (sp->top_k > 0 && sp->top_k < n)
        n = sp->top_k;
    if (sp->top_p > 0 && sp->top_p < 1) {
        double cum = 0;
        for (int i = 0; i < n; i++) {
            cum += c[i].p;
            if (cum >= sp->top_p) {
                n = i + 1;
                break;
            }
        }
    }
    double tot = 0;
    for (int i = 0; i < n; i++)
        tot += c[i].p;
    double r = (double)(rng_next(&m->rng) >> 11) * (1.0 / 9007199254740992.0) * tot;
    for (int i = 0; i < n; i++) {
        r -= c[i].p;
        if (r <= 0)
            return c[i].id;
    }
    return c[n - 1].id;
}

static bool
is_eos(const struct npu_llm *m, int32_t t)
{
    for (int i = 0; i < m->info.n_eos; i++)
        if (m->info.eos_ids[i] == t)
            return true;
    return false;
}

enum npu_status
npu_llm_generate(struct npu_llm *m, const int32_t *prompt, int n, int max_new,
                 const struct npu_llm_sampling *sampling, const int32_t *force, npu_llm_token_fn cb,
                 void *user, struct npu_llm_stats *stats)
{
    struct npu_llm_stats sx = {0};
    struct npu_llm_stats *s = stats ? stats : &sx;
    enum npu_status st;
    memset(s, 0, sizeof(*s));
    if (!m || n < 0 || max_new < 0 || (n > 0 && !prompt))
        return NPU_ERR_INVALID;
    m->dec_conv_bytes = 0;
    m->dec_conv_inputs = m->dec_resident_inputs = 0;
    m->dec_argmax_runs = 0;
    if (n == 0 && m->len == 0) {
        npu_err(DOM, "an empty prompt with an empty context: give at least one token");
        return NPU_ERR_INVALID;
    }
    if (sampling && !sampling->greedy &&
        (!(sampling->temperature > 0) || sampling->top_k < 0 || sampling->top_p < 0 ||
         sampling->top_p > 1)) {
        npu_err(DOM, "sampling needs temperature > 0, top_k >= 0 and 0 <= top_p <= 1");
        return NPU_ERR_INVALID;
    }
    /* the previous call's last token goes in first */
    const int np = m->pending >= 0 ? 1 : 0, nf = n + np;
    const int C = m->info.max_context;
    /* the last new token is not fed: len + nf + max_new - 1 tokens of context */
    const int64_t need = (int64_t)m->len + nf + (max_new > 0 ? max_new - 1 : 0);
    if (need > C) {
        npu_err(DOM,
                "context overflow: %d token(s) in the context, a prompt of %d and %d new "
                "token(s) need %lld, the maximum context is %d (--max-context)",
                m->len + np, n, max_new, (long long)need, C);
        return NPU_ERR_INVALID;
    }
    int32_t *seq = malloc(((size_t)nf + 1) * sizeof(int32_t));
    if (!seq)
        return NPU_ERR_NOMEM;
    if (np)
        seq[0] = m->pending;
    if (n)
        memcpy(seq + np, prompt, (size_t)n * sizeof(int32_t));
    if (sampling && !sampling->greedy)
        m->rng = sampling->seed;
    s->prompt_tokens = n;
    st = NPU_OK;
    /* greedy without logits: the decode step's token read as the argmax in the NPU layout */
    set_raw_logits(m, sampling && sampling->no_logits && sampling->greedy && !force);
    /* one token needs no prefill program: the decode step takes it */
    if (nf > 1 && m->len == 0) {
        if (!m->pre || m->pre_len != nf) {
            double t0 = now();
            npu_session_destroy(m->pre_s);
            npu_model_free(m->pre);
            m->pre = NULL;
            m->pre_s = NULL;
            m->pre_split = false;
            if (!(st = make_model(m, nf, 0, &m->pre, &m->pre_s))) {
                int ops, conv, copies;
                bool *kept = NULL;
                m->pre_cpu_model_s = 0;
                m->pre_kv_dev = false;
                if (strcmp(npu_model_backend(m->pre), "cpu") && !(st = pre_kv_setup(m, nf, &kept)))
                    st = cpu_steps_modeled_kept(npu_model_program(m->pre), m->o.cpu_threads, kept,
                                                NULL, 0, NULL, &m->pre_cpu_model_s, &ops, &conv,
                                                &copies);
                free(kept);
                m->pre_len = st ? 0 : nf; /* not priced: made again next time */
            }
            s->compile_s += now() - t0;
        }
        if (!st)
            st = run(m, seq, nf, true, &s->prefill_host_s, &s->prefill_modeled_s,
                     &s->prefill_npu_wait_s, &s->prefill_host_cpu_s, &s->prefill_cpu_modeled_s);
        if (!st) {
            s->prefill_kv_converted += m->pre_kv_conv;
            s->prefill_kv_device_copies += m->pre_kv_copies;
            s->prefill_kv_copy_bytes += m->pre_kv_bytes;
        }
    } else {
        for (int i = 0; i < nf && !st; i++)
            st = run(m, seq + i, 1, false, &s->prefill_host_s, &s->prefill_modeled_s,
                     &s->prefill_npu_wait_s, &s->prefill_host_cpu_s, &s->prefill_cpu_modeled_s);
    }
    free(seq);
    if (st)
        return st;
    m->pending = -1;
    /* the simulator models every run, also one whose programs have no NPU job (a tiny model
     * the cost partition keeps on the CPU: its CPU steps are still priced) */
    s->modeled = (m->info.backend && !strcmp(m->info.backend, "sim")) || s->prefill_modeled_s > 0;
    s->cpu_model = npu_cpu_model_v1.name;
    s->stop = NPU_LLM_STOP_LIMIT;
    float *logits = malloc((size_t)m->ck.cfg.vocab * sizeof(float));
    if (!logits)
        return NPU_ERR_NOMEM;
    for (int k = 0; k < max_new; k++) {
        const bool raw = m->last_raw;
        if (!raw)
            memcpy(logits, m->last, (size_t)m->ck.cfg.vocab * sizeof(float));
        int32_t t = force ? force[k] : raw ? m->last_tok : choose(m, logits, sampling);
        s->new_tokens++;
        m->pending = t;
        if (cb && cb(t, raw ? NULL : logits, user)) {
            s->stop = NPU_LLM_STOP_CALLBACK;
            break;
        }
        if (!force && is_eos(m, t)) {
            s->stop = NPU_LLM_STOP_EOS;
            break;
        }
        if (k + 1 == max_new)
            break;
        if ((st = run(m, &t, 1, false, &s->decode_host_s, &s->decode_modeled_s,
                      &s->decode_npu_wait_s, &s->decode_host_cpu_s, &s->decode_cpu_modeled_s))) {
            free(logits);
            return st;
        }
        s->decode_cpu_attn_slots += (double)m->last_attn_slots;
        m->pending = -1;
    }
    free(logits);
    s->modeled = s->modeled || s->decode_modeled_s > 0;
    s->decode_convert_bytes = m->dec_conv_bytes;
    s->decode_inputs_converted = m->dec_conv_inputs;
    s->decode_inputs_resident = m->dec_resident_inputs;
    s->decode_argmax_steps = m->dec_argmax_runs;
    return NPU_OK;
}
