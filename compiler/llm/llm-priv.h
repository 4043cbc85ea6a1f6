/* SPDX-License-Identifier: MIT */
/*
 * llm-priv.h: the inside of compiler/llm: the checkpoint (config.json and
 * safetensors files mapped read-only), the architecture-neutral weight set
 * the graph builder reads, and the graph builder.
 */
#ifndef NPU_LLM_PRIV_H
#define NPU_LLM_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-ir.h"
#include "npu/npu-llm.h"

enum llm_arch { LLM_ARCH_GPT2, LLM_ARCH_LLAMA, LLM_ARCH_QWEN2 };

struct llm_config {
    enum llm_arch arch;
    char arch_name[64];
    int n_layers, hidden, n_heads, n_kv_heads, head_dim, ffn, vocab, max_pos;
    float eps, rope_theta;
    bool tied;
    int64_t eos[8];
    int n_eos;
    /* where eos came from: "config.json", or "generation_config.json" (whose eos_token_id
     * Hugging Face's generate() uses when the file is there) */
    char eos_source[24]; /* a char array: the compile cache's key hashes this struct */
    /* config.json's rope_scaling (Hugging Face's modeling_rope_utils): none ("default"),
     * "linear" (every inverse frequency / factor) or "llama3" (Llama-3.1/3.2: by wavelength,
     * long ones / factor, short ones kept, a smooth blend between); llm_rope_inv_freq */
    enum llm_rope_scaling { LLM_ROPE_DEFAULT, LLM_ROPE_LINEAR, LLM_ROPE_LLAMA3 } rope_scaling;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_orig_max_pos;
};

/* RoPE's inverse frequency j (0 <= j < head_dim / 2) of c: 1 / theta^(2j / head_dim), then
 * rope_scaling's rescaling. The cos / sin tables are inputs of the graphs (npu-llm.c, the
 * calibration in llm-quant.c), so the graph does not depend on it. */
double llm_rope_inv_freq(const struct llm_config *c, int j);
/* The RoPE angle of position pos and frequency j: pos * llm_rope_inv_freq(c, j). */
double llm_rope_angle(const struct llm_config *c, int pos, int j);
/* The angles' cos and sin of positions pos0 .. pos0 + s - 1 as [s][head_dim] (each half
 * the same, HF's cat(freqs, freqs)), in float as the host computes them for every step: the
 * prefill graph's constants and the run's inputs are the same values. */
void llm_rope_tables(const struct llm_config *c, int pos0, int s, float *cs, float *sn);

/* LLM_ST_OTHER: a dtype of the safetensors format we do not convert (I64, U8, BOOL, F8_E4M3
 * ...), kept by name (llm_st_tensor.dtype) so that a tensor nobody reads (GPT-2's old
 * attn.bias mask, saved as U8 or BOOL by older transformers) loads, and one that is read is
 * refused naming its dtype */
enum llm_st_dtype { LLM_ST_F32, LLM_ST_F16, LLM_ST_BF16, LLM_ST_OTHER };

struct llm_st_tensor {
    char *name;
    enum llm_st_dtype dt;
    char dtype[12]; /* the header's dtype name */
    int ndim;
    int64_t dims[NPU_MAX_DIMS];
    const void *data;
    size_t nbytes;
    int file; /* index into llm_checkpoint.files */
    bool used;
};

struct llm_st_file {
    void *map;
    size_t size;
};

struct llm_checkpoint {
    struct llm_config cfg;
    struct llm_st_file *files;
    int nfiles;
    struct llm_st_tensor *t;
    int nt, cap;
    /* open addressing over t by name (index + 1, 0 = empty; hcap a power of two, at least
     * 2 nt): duplicates, the index's names and the weights' look-ups in constant time, so a
     * header of a million tensors is not a quadratic hang */
    int *hash;
    size_t hcap;
    size_t bytes;
    /* identity of the weight files (FNV-1a over each file's resolved path, device, inode,
     * size and modification time), for the compile cache's key */
    uint64_t ident;
};

/* Column blocks of a weight split for the cores (llm_weights_split): block k holds columns
 * [c0_k, c0_k + cols_k) of W [in, out] as its own row-major [in, cols_k] array, the blocks
 * one after another in W's memory. n 1: not split. */
#define LLM_MAX_SPLIT 3
/* NPU_SPLIT_FORCE=1 in the environment: cut every projection that may be cut (tests). */
bool llm_split_forced(void);
struct llm_split {
    int n;
    int64_t cols[LLM_MAX_SPLIT];
};

/* One layer's weights as fp32, laid out for x @ W (W is [in, out]). */
struct llm_layer_w {
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b; /* b: GPT-2 only */
    float *wq, *wk, *wv, *wo, *bq, *bk, *bv, *bo;
    float *w_up, *b_up, *w_gate, *w_down, *b_down; /* GPT-2: c_fc = up, c_proj = down */
    /* how wq, wk, wv, wo, w_up, w_gate, w_down are split (llm_weights_split) */
    struct llm_split sq, sk, sv, so, sup, sgate, sdown;
};

/* w8a8 (llm-quant.c): per-tensor activation ranges of each projection, by its name ("l0.q",
 * "lm_head"), from a calibration run of the fp32 graph on the CPU executor. */
struct llm_qrange {
    char key[32];
    float x, y; /* largest |input|, |result| (before any bias) */
};
/* A projection's int8 weights and per-column scales, quantised once from the fp32 view and
 * kept by name (the graph's weight name, "l0.q.1.weight"): every later graph borrows them,
 * so the fp32 projections can go (llm_weights_release). */
struct llm_qweight {
    char name[48];
    int64_t in, out;
    int8_t *q;    /* [in, out] */
    float *scale; /* [out] */
};
struct llm_qcache {
    int n, cap;
    struct llm_qweight *w;
    uint64_t bytes; /* int8 weights and scales held */
};
struct llm_quant {
    bool observe; /* building the calibration graph: inputs and results become outputs */
    int n, cap;
    struct llm_qrange *r;
    int calib_tokens;
    struct llm_qcache *cache; /* NULL: quantise into each graph (no cache) */
    /* a stage of the calibration a layer at a time (llm_quant_calibrate): the graph's input is
     * the hidden states "hidden" [1, s, hidden] instead of the ids (and GPT-2's positions),
     * its output the hidden states of every token "hidden_out" instead of the logits */
    bool hidden_in, hidden_out;
};

struct llm_weights {
    float *embed; /* [vocab, hidden] */
    float *pos;   /* GPT-2 [max_pos, hidden] */
    float *lnf_w, *lnf_b;
    float *head; /* [hidden, vocab] */
    struct llm_layer_w *layers;
    int head_split; /* LM head slices a multiple of this (the cores), 1 = as few as fit */
    const struct llm_quant *quant; /* NULL: fp32 weights (fp16 on the NPU); else w8a8 */
};

enum npu_status llm_checkpoint_open(const char *dir, struct llm_checkpoint *ck);
/* The tensor of that name, or NULL. */
struct llm_st_tensor *llm_checkpoint_find(const struct llm_checkpoint *ck, const char *name);
void llm_checkpoint_close(struct llm_checkpoint *ck);
/* Maps every tensor of the architecture to fp32 arrays, checking shapes and
 * naming missing and unexpected tensors. */
enum npu_status llm_weights_load(struct llm_checkpoint *ck, struct llm_weights *w);
void llm_weights_free(const struct llm_config *c, struct llm_weights *w);
/* The same checks (every name and shape, missing and unexpected tensors) without converting
 * anything: a load whose graphs may all come from the compile cache. (GPT-2's saved tied
 * head is compared with wte only by llm_weights_load.) */
enum npu_status llm_weights_check(struct llm_checkpoint *ck);

/* The decoder over s new tokens after past cache slots (0 = none): inputs
 * ids [1,s] i64, pos [1,s] i64 (GPT-2) or cos, sin [1,1,s,hd] (RoPE),
 * mask [1,1,g*s,past+s] (g = heads per KV head; 0 or -1e4) and, when
 * past > 0, past_k.L, past_v.L [1,kvh,past,hd]; outputs logits [1,1,vocab]
 * (the last token's), then k.L, v.L [1,kvh,s,hd] for every layer. */
/* Splits every projection weight that is worth it into `cores` column blocks, in place
 * (each block contiguous), so that the graph's MatMul per block is an independent task a
 * layer split can run on its own core: where the weight's time on one core beyond its
 * time at the chip's shared bandwidth exceeds two submits (the timing model's figures);
 * not q, k and v (three independent products already).
 * Once per weight set; cores 1 does nothing. */
enum npu_status llm_weights_split(const struct llm_config *c, struct llm_weights *w, int cores);
/* The heads of one of q's column blocks when the decode step RoPEs each block on its own
 * (then its `cos` / `sin` inputs are [that, 1, head_dim]), else 0 (llm-graph.c). */
int llm_rope_block_heads(const struct llm_config *c, const struct llm_weights *w);

/* w8a8, LLaMA / Qwen2: frees the fp32 projection weights (q, k, v, o, gate, up, down, the LM
 * head) once
 * w->quant's cache holds every one of them int8 (after a graph of the model was built with
 * the cache on), leaving their pointers NULL: later graphs take the int8 copies by name.
 * Returns the fp32 bytes freed. The embeddings and norms stay fp32. */
uint64_t llm_weights_release(const struct llm_config *c, struct llm_weights *w);
/* The same for layer l's projections alone (whose int8 copies the cache holds). */
uint64_t llm_weights_release_layer(const struct llm_config *c, struct llm_weights *w, int l);
/* Hands every fp32 array of w to g (npu_graph_adopt_malloc), which borrows them, and empties
 * w (layers NULL; quant and head_split kept): the weights are freed with the graph, which the
 * compile frees before the program is uploaded, so that the fp32 copy, the program's and the
 * device's are not all resident at once. The next graph needs llm_weights_load again. An array
 * g cannot take is freed here. */
void llm_weights_give(const struct llm_config *c, struct llm_weights *w, struct npu_graph *g);

enum npu_status llm_build_graph(const struct llm_config *c, const struct llm_weights *w, int s,
                                int past, struct npu_graph **out);
/* The same; with kv_inplace the decode step (s 1, past > 0) writes its new k / v
 * rows into the cache itself and attends over the whole cache: an input kv_pos [1] i64 (the
 * slot of the new token) after the mask, past_k.L, past_v.L [kvh, past, hd] updated by
 * npu.StateWrite at kv_pos, mask [1, g, past] (keys = the cache's slots, the new one
 * included). With v_slots too, past_v.L is [past, kvh x hd] (the v projection's rows; the
 * attention reads it through a head split the NPU takes as a view). The k.L, v.L outputs
 * stay (the host's copy of the cache) unless no_kv_out: the in-place decode step then has
 * the logits as its only output (npu-llm.c builds it so when the program keeps every cache
 * input resident and writes it itself, so that nothing reads the host's copy of those rows). */
enum npu_status llm_build_graph_ex(const struct llm_config *c, const struct llm_weights *w, int s,
                                   int past, bool kv_inplace, bool v_slots, bool no_kv_out,
                                   struct npu_graph **out);

/* w8a8 (llm-quant.c). The projection x @ W over the named range: QuantizeLinear (per
 * tensor, symmetric; shared by the products that read the same x) -> QLinearMatMul (W
 * int8 symmetric per output column) -> DequantizeLinear. NULL on failure (logged). */
struct npu_value *llm_quant_matmul(struct npu_graph *g, struct npu_value *x, const float *w,
                                   int64_t in, int64_t out, const char *name, const char *key,
                                   const struct llm_quant *q);
/* The calibration graph: x and y (x @ W before any bias) become outputs calib.x.KEY,
 * calib.y.KEY (with a suffix @N: unique names). */
enum npu_status llm_quant_observe(struct npu_graph *g, struct npu_value *x, struct npu_value *y,
                                  const char *key);
/* Runs the fp32 decoder over ids (n tokens, a prefill from position 0) on the CPU executor,
 * one layer at a time (the hidden states carried from layer to layer), and records every
 * projection's ranges into q (whose previous contents are freed). With quantise (LLaMA,
 * Qwen2), each layer's projections are quantised into a new q->cache once its ranges are
 * known and their fp32 arrays freed (llm_weights_release_layer), so that the fp32 view
 * shrinks while the calibration runs; the LM head is left to the first graph built. */
enum npu_status llm_quant_calibrate(const struct llm_config *c, struct llm_weights *w,
                                    const int32_t *ids, int n, int cpu_threads, bool quantise,
                                    struct llm_quant *q);
void llm_quant_free(struct llm_quant *q);
/* Moves each DequantizeLinear to just before its first reader (independent products). */
void llm_quant_sink(struct npu_graph *g);
/* FNV-1a over the ranges (compile cache key) */
uint64_t llm_quant_hash(const struct llm_quant *q, uint64_t h);

#endif /* NPU_LLM_PRIV_H */
