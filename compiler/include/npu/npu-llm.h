/* SPDX-License-Identifier: MIT */
/*
 * npu-llm.h: causal language models from Hugging Face checkpoints (a folder
 * with config.json and model.safetensors, or sharded with
 * model.safetensors.index.json; F32, F16 or BF16 tensors; the hub cache's
 * layout with files symlinked into blobs/ included). Architectures:
 * GPT2LMHeadModel, LlamaForCausalLM, Qwen2ForCausalLM (docs/llm.md).
 *
 * The decoder is built as an IR graph (npu-ir.h) and compiled by the same
 * pipeline as any model (npu-build.h): a prefill program for the prompt and a
 * decode-step program of static shape (the maximum context; the valid length
 * is a mask), each with its weights uploaded once. Token ids in, token ids
 * out: text is the tokenizer's job.
 *
 * Usage: npu_llm_load(), then npu_llm_generate() with a per-token callback;
 * npu_llm_reset() forgets the context (the KV cache). One generation at a
 * time per handle.
 */
#ifndef NPU_LLM_H
#define NPU_LLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_llm;

struct npu_llm_options {
    const char *backend; /* "cpu", "sim", "rknpu", "rocket", "auto" (NULL = "auto") */
    int max_context;     /* tokens the KV cache holds; 0 = min(config's, 256) */
    int cpu_threads;     /* threads for CPU ops; 0 = all */
    /* NPU cores one step's jobs are split over (npu_session_split_layers: runs of
     * independent tasks, e.g. a matmul's column tiles, where the timing model says it
     * pays; simulator only): 0 or 1 = one core, up to 3 */
    int cores;
    /* Compile cache of the programs (.npub files keyed by the config, the weight files'
     * identity and the compile options; a prefill program per prompt length): NULL =
     * $XDG_CACHE_HOME/opennpu/llm, else $HOME/.cache/opennpu/llm; no_cache: neither read
     * nor written. Not used on cpu (nothing is compiled there). The folder is kept within
     * NPU_LLM_CACHE_MAX_MB MiB (default 4096) by deleting the least recently used entries
     * after each write. */
    const char *cache_dir;
    bool no_cache;
    /* Weights of the projections (q, k, v, o, MLP, LM head): NULL or "fp16" (fp16 on the
     * NPU, fp32 on cpu), or "w8a8": int8 symmetric per output channel, quantised at load,
     * activations int8 per tensor with scales calibrated at load (the fp32 model run on
     * the CPU over calib_ids, then a fixed pseudo-random sequence; docs/llm.md). */
    const char *weights;
    const int32_t *calib_ids; /* w8a8: calibration tokens first (e.g. the prompt); may be NULL */
    int n_calib_ids;
    /* The decode step's KV-cache inputs are state inputs (npu-program.h): where the NPU
     * reads them they stay resident in device memory, uploaded once after a prefill or
     * reset, and each step's new rows are written into them in place. host_cache: convert
     * them from the host copy in every step instead (the earlier behaviour; comparisons). */
    bool host_cache;
};

struct npu_llm_info {
    const char *architecture; /* "GPT2LMHeadModel", ... */
    const char *backend;      /* what the programs run on */
    int n_layers, hidden, n_heads, n_kv_heads, head_dim, intermediate, vocab;
    int max_context;       /* of this handle */
    int64_t eos_ids[8];    /* config's eos_token_id(s) */
    int n_eos;             /* 0: the model has none */
    size_t kv_cache_bytes; /* the KV cache of this handle (fp32 host copy) */
    size_t weight_bytes;   /* the checkpoint's tensors as stored */
    /* The decode-step program's steps (NPU backends; 0 on cpu): NPU jobs,
     * CPU steps and how many of those are MatMuls or QLinearMatMuls (weights the partition
     * left on the host), layout conversions. */
    int decode_npu_jobs, decode_cpu_steps, decode_cpu_matmuls, decode_converts;
    /* Cache slots the decode step reads (max_context rounded so that the keys, slots + the
     * new token, are a multiple of 32: attention on the NPU pads keys to that). */
    int cache_slots;
    /* The decode step split over this many cores (1: not split); its multi-core submits,
     * its submits in all and the tasks in multi-core submits. */
    int decode_cores;
    unsigned decode_split_submits, decode_submits, decode_split_tasks, decode_tasks;
    /* Attention blocks of the decode step run as CPU steps (npu.Attention or Softmax);
     * the others are in its NPU jobs. */
    int decode_cpu_attention;
    /* Programs of this handle loaded from the compile cache, and compiled (and written to
     * the cache when there is one). */
    int programs_from_cache, programs_compiled;
    const char *weights; /* "fp16" or "w8a8" */
    int calib_tokens;    /* w8a8: tokens of the calibration run */
    double calib_s;      /* w8a8: its host time */
    /* The decode program's cache inputs it keeps resident in device memory (state inputs,
     * appended in place each step; 0 where the cache is read on the host or converted each
     * step). */
    int decode_state_inputs;
    size_t decode_state_bytes; /* their bytes in device memory (NPU layout) */
    /* Of those, the ones the decode program writes its new rows into itself (npu.StateWrite,
     * a run-time positioned DPU copy each); 0: the host writes the rows into the device
     * copy (--host-kv-cache, or too few run-time writes). */
    int decode_state_writes;
    /* 1: the decode step holds V as [slots, kv heads x head dim], which its NPU attention
     * reads in place (no copy of V per step); 0: [kv heads, slots, head dim]. */
    int decode_v_slots;
    /* Where eos_ids came from: "config.json", or "generation_config.json" (its eos_token_id
     * replaces config.json's, as in Hugging Face's generate()). */
    const char *eos_source;
    /* NPU backends (0 on cpu): the modeled CPU time of one decode step's host steps - its
     * CPU steps (decode_cpu_model_ops, priced by the CPU cost model at their compiled shapes:
     * an attention over all cache_slots) and its layout conversions
     * (decode_cpu_model_converts, at the model's conversion rate) - the model the cost
     * partition places nodes with (cpu_model: "RK3588 CPU model v1"; modeled, not measured).
     * They wait for and are waited for by the NPU jobs, so a board's step takes about the
     * NPU's modeled time plus this. */
    double decode_cpu_modeled_s;
    int decode_cpu_model_ops, decode_cpu_model_converts;
    const char *cpu_model;
    /* The decode program's outputs besides the logits: the new k / v rows of each layer
     * (2 x n_layers) where the host keeps its copy of the cache current, 0 where the program
     * keeps every cache input resident and writes it itself (decode_state_writes of all). */
    int decode_kv_outputs;
};

struct npu_llm_sampling {
    bool greedy;       /* argmax (the default when the struct is NULL) */
    float temperature; /* > 0 */
    int top_k;         /* 0 = off */
    float top_p;       /* 1 = off */
    uint64_t seed;
    /* Greedy decoding whose caller does not want the logits: the callback gets logits NULL
     * for the tokens the decode step made, and on the NPU backends the step's logits
     * outputs stay in the NPU's layout (fp16, or fp32 where the NPU writes them so), the
     * token their argmax read there (the same token: fp16 -> fp32 is exact and keeps the
     * order; the first maximum wins, a NaN only as the first element) instead of converted
     * to fp32 (npu_llm_stats.decode_argmax_steps; its modeled CPU time: one ArgMax reduction
     * over the logits' elements in the NPU's dtype in place of their conversions). Ignored
     * when not greedy or with force. */
    bool no_logits;
};

enum npu_llm_stop {
    NPU_LLM_STOP_LIMIT = 0, /* max_new tokens made */
    NPU_LLM_STOP_EOS,       /* the model made an end-of-sequence token */
    NPU_LLM_STOP_CALLBACK,  /* the callback asked to stop */
    NPU_LLM_STOP_CONTEXT,   /* the context is full (the KV cache) */
};
const char *npu_llm_stop_name(enum npu_llm_stop s);

struct npu_llm_stats {
    int prompt_tokens, new_tokens;
    double prefill_host_s;    /* measured wall time of the prompt's run */
    double prefill_modeled_s; /* modeled NPU time of it (timing model v1; 0 on cpu) */
    double decode_host_s;     /* measured wall time of all decode steps */
    double decode_modeled_s;  /* modeled NPU time of all decode steps */
    /* Of the host times above, the part spent waiting for NPU jobs (on the
     * simulator: simulating them); host time minus this is the loop's own
     * work (inputs, CPU ops, conversions, the cache append, sampling). */
    double prefill_npu_wait_s, decode_npu_wait_s;
    /* CPU time of the calling thread during the runs (CLOCK_THREAD_CPUTIME_ID): the loop's
     * own work and the submits' host side, without waiting (robust to a loaded host); it
     * leaves out the simulator's threads and, with cpu_threads > 1, the CPU kernels'
     * helper threads. */
    double prefill_host_cpu_s, decode_host_cpu_s;
    double compile_s; /* building and compiling programs during this call */
    bool modeled;     /* the backend reports modeled NPU time (sim) */
    enum npu_llm_stop stop;
    /* NPU backends, all decode steps of the call: bytes written by conversions between the
     * host and NPU layouts (graph inputs and CONVERT steps), the graph inputs converted, and
     * the state inputs left resident in device memory (npu-program-exec.h). */
    uint64_t decode_convert_bytes;
    unsigned decode_inputs_converted, decode_inputs_resident;
    /* NPU backends (0 on cpu): the modeled CPU time of the runs' host steps (CPU steps and
     * conversions, npu_llm_info.decode_cpu_modeled_s per decode step), by cpu_model ("RK3588
     * CPU model v1"), on the critical path beside the modeled NPU time above: a board's
     * figure is about the sum of the two. */
    double prefill_cpu_modeled_s, decode_cpu_modeled_s;
    const char *cpu_model;
    /* The prefill's k / v outputs (2 x n_layers per prefill run): converted to the host's
     * fp32 copy of the cache, or (where the decode program keeps its whole cache in device
     * memory and writes it itself) left in the NPU's fp16 layout and copied as bytes into
     * the decode session's device copy (prefill_kv_copy_bytes), nothing converted. */
    int prefill_kv_converted, prefill_kv_device_copies;
    uint64_t prefill_kv_copy_bytes;
    /* NPU backends, all decode steps of the call: the cache slots the decode step's CPU
     * attention read, summed over the steps (each step the most one of its attentions read:
     * up to the mask's last valid slot, npu_cpu_attn16_read_slots; 0 where it is not on the
     * CPU). decode_cpu_modeled_s prices that attention over these slots, step by step,
     * not over npu_llm_info.cache_slots (decode_cpu_modeled_s there is the compiled price). */
    double decode_cpu_attn_slots;
    /* Decode runs whose token was the argmax read over the logits in the NPU layout
     * (npu_llm_sampling.no_logits), nothing converted. */
    int decode_argmax_steps;
};

/* Called for each new token; a nonzero return stops the generation. logits
 * (vocab floats, the step's) is valid during the call; NULL where the caller asked for none
 * (npu_llm_sampling.no_logits) and the step did not make them. */
typedef int (*npu_llm_token_fn)(int32_t token, const float *logits, void *user);

enum npu_status npu_llm_load(const char *dir, const struct npu_llm_options *opts,
                             struct npu_llm **out);
void npu_llm_free(struct npu_llm *m);
const struct npu_llm_info *npu_llm_get_info(const struct npu_llm *m);

/*
 * Appends prompt (n ids, n >= 1 unless the context is not empty) to the
 * context and makes up to max_new tokens. A later call continues the same
 * context (the previous call's last token is fed first) until
 * npu_llm_reset(); the context must hold every token fed (else an error
 * saying so, before anything runs). force (NULL or max_new ids) feeds
 * the given tokens instead of sampled ones (teacher forcing: the callback
 * still sees each step's logits). stats may be NULL.
 */
enum npu_status npu_llm_generate(struct npu_llm *m, const int32_t *prompt, int n, int max_new,
                                 const struct npu_llm_sampling *sampling, const int32_t *force,
                                 npu_llm_token_fn cb, void *user, struct npu_llm_stats *stats);
/* Forgets the context: the next generate starts from an empty KV cache. */
void npu_llm_reset(struct npu_llm *m);
/* Tokens in the context now. */
int npu_llm_context_length(const struct npu_llm *m);

#ifdef __cplusplus
}
#endif

#endif /* NPU_LLM_H */
