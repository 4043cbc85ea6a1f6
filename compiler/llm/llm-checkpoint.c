// SPDX-License-Identifier: MIT
/*
 * llm-checkpoint.c: a Hugging Face checkpoint folder: config.json (the
 * architecture and its dimensions; every key must be one this loader
 * understands or knows to be harmless, so a feature we lack - yarn or dynamic
 * RoPE scaling, sliding windows, cross attention - is an error naming it, not a
 * silent wrong answer; rope_scaling "linear" and "llama3" are taken, with
 * llm_rope_inv_freq, as is transformers v5's rope_parameters form of them (rope_type,
 * rope_theta and the parameters in one object; both forms in one file must agree);
 * eos_token_id may be a list, and generation_config.json's replaces it; the generic
 * keys of transformers' PretrainedConfig, which a config written as a full dump carries,
 * are taken where they do not change the model and refused by name, value and reason
 * where they would (pruned heads, cross attention, a quantised checkpoint)) and the
 * safetensors files, mapped read-only (one
 * model.safetensors, or the shards model.safetensors.index.json lists). A
 * hub cache folder (models--org--name with refs/main and snapshots/) is
 * followed to its snapshot; the snapshot's symlinks into blobs/ are opened
 * like plain files.
 *
 * safetensors: 8 bytes little-endian header length N, N bytes of JSON
 * {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
 * then the data; offsets are relative to the end of the header.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llm-priv.h"
#include "npu-json.h"

#define DOM "llm"
#define MAX_HEADER (100u << 20)

/* Opens path for reading if it is a regular file (a FIFO, device or folder in a
 * checkpoint would block or mislead the reads); else -1 with *why set. */
static int
open_regular(const char *path, struct stat *sb, const char **why)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *why = strerror(errno);
        return -1;
    }
    if (fstat(fd, sb)) {
        *why = strerror(errno);
        close(fd);
        return -1;
    }
    if (!S_ISREG(sb->st_mode)) {
        *why = S_ISDIR(sb->st_mode) ? "a folder, not a file"
                                    : "not a regular file (a FIFO, device or socket)";
        close(fd);
        return -1;
    }
    return fd;
}

#define MAX_JSON_FILE (64l << 20)

static char *
read_text(const char *path, size_t *len, const char **why)
{
    struct stat sb;
    int fd = open_regular(path, &sb, why);
    if (fd < 0)
        return NULL;
    char *buf = NULL;
    size_t n = (size_t)sb.st_size, got = 0;
    if (sb.st_size >= MAX_JSON_FILE) {
        *why = "larger than 64 MiB";
    } else if (!(buf = malloc(n + 1))) {
        *why = "out of memory";
    } else {
        while (got < n) {
            ssize_t r = read(fd, buf + got, n - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        if (got != n) {
            *why = "short read";
            free(buf);
            buf = NULL;
        } else {
            buf[n] = 0;
            *len = n;
        }
    }
    close(fd);
    return buf;
}

static struct npu_json_doc *
read_json(const char *path)
{
    size_t len = 0;
    const char *why = "";
    char *t = read_text(path, &len, &why), err[256];
    if (!t) {
        npu_err(DOM, "%s: cannot read (%s)", path, why);
        return NULL;
    }
    struct npu_json_doc *doc = npu_json_parse(t, len, err, sizeof(err));
    free(t);
    if (!doc)
        npu_err(DOM, "%s: not valid JSON: %s", path, err);
    return doc;
}

/* ---- config.json ------------------------------------------------------------ */

/* keys with no effect on inference (training, bookkeeping, generation defaults) */
static const char *const harmless_keys[] = {
    "_name_or_path", "architectures", "model_type", "torch_dtype", "transformers_version",
    "use_cache", "initializer_range", "attn_pdrop", "embd_pdrop", "resid_pdrop",
    "attention_dropout", "hidden_dropout", "summary_activation", "summary_first_dropout",
    "summary_proj_to_labels", "summary_type", "summary_use_proj", "task_specific_params",
    "pad_token_id", "bos_token_id", "tokenizer_class", "output_attentions", "output_hidden_states",
    "return_dict", "pretraining_tp", "decoder_start_token_id", "max_length", "min_length",
    "do_sample", "temperature", "top_p", "top_k", "max_window_layers", "sliding_window", "id2label",
    "label2id", "layer_types", "dtype", "is_llama_config", /* SmolLM2's (nanotron export) */
    "_num_labels",                                         /* distilgpt2's */
    "gradient_checkpointing",
    /* run-time hints of transformers.js (the ONNX
       export's KV-cache dtype, external data), in the
       config of repositories that carry both */
    "transformers.js_config",
    /* The rest of transformers' PretrainedConfig attributes, which a config written as a full
     * dump carries (transformers 4.x's config.to_dict(), json.dump of it or of vars(config) by
     * conversion scripts, the text config nested in a vision-language model's): outputs and
     * framework flags (torchscript only clones the tied embedding; chunk_size_feed_forward
     * only splits the MLP's rows, same values), classification-head labels, tokenizer ids,
     * and generate()'s defaults, which npu-generate's options replace as they replace
     * generation_config.json's. The keys of this kind that change the model are in
     * model_keys[] below. */
    "torchscript", "use_bfloat16", "tf_legacy_loss", "chunk_size_feed_forward", "is_decoder",
    "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty", "typical_p",
    "repetition_penalty", "length_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size",
    "bad_words_ids", "num_return_sequences", "output_scores", "return_dict_in_generate",
    "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens",
    "finetuning_task", "prefix", "sep_token_id", "problem_type", "num_labels",
    "output_past", /* transformers 2.x's name of use_cache */
    "xla_device",  /* deprecated in transformers 4.4, ignored */
    /* bookkeeping: the hub commit, and which attention kernel transformers runs (eager, sdpa,
     * flash: the same attention) as 4.34-4.35 (_flash_attn_2_enabled), 4.36+ (vars():
     * _attn_implementation_internal) and 4.48-4.50 (_attn_implementation_autoset) saved it */
    "_commit_hash", "attn_implementation", "_attn_implementation", "_attn_implementation_internal",
    "_attn_implementation_autoset", "_flash_attn_2_enabled", NULL};

/* PretrainedConfig's keys that make the model another one when not at their default (a full
 * dump writes them all at the default): accepted there, refused by name otherwise, whatever
 * the architecture. */
enum key_default { DEF_FALSE, DEF_NULL, DEF_EMPTY };
static const struct {
    const char *key;
    enum key_default def;
    const char *why;
} model_keys[] = {
    {"is_encoder_decoder", DEF_FALSE, "encoder-decoder models are not supported"},
    {"tie_encoder_decoder", DEF_FALSE,
     "it ties an encoder-decoder model's halves: encoder-decoder models are not supported"},
    {"add_cross_attention", DEF_FALSE,
     "cross attention (a decoder reading an encoder's output) is not supported"},
    {"cross_attention_hidden_size", DEF_NULL,
     "cross attention (a decoder reading an encoder's output) is not supported"},
    {"pruned_heads", DEF_EMPTY, "pruned attention heads are not supported"},
    {"quantization_config", DEF_NULL,
     "pre-quantised checkpoints are not supported (use the F32, F16 or BF16 one; npu-generate "
     "--weights w8a8 quantises it on load)"},
};

struct key_rule {
    const char *key;
    unsigned archs; /* bit per enum llm_arch */
};
#define A_GPT2 (1u << LLM_ARCH_GPT2)
#define A_LLAMA (1u << LLM_ARCH_LLAMA)
#define A_QWEN2 (1u << LLM_ARCH_QWEN2)
#define A_LQ (A_LLAMA | A_QWEN2)
static const struct key_rule known_keys[] = {
    {"vocab_size", A_GPT2 | A_LQ},
    {"eos_token_id", A_GPT2 | A_LQ},
    {"tie_word_embeddings", A_GPT2 | A_LQ},
    {"n_layer", A_GPT2},
    {"n_embd", A_GPT2},
    {"n_head", A_GPT2},
    {"n_inner", A_GPT2},
    {"n_positions", A_GPT2},
    {"n_ctx", A_GPT2},
    {"layer_norm_epsilon", A_GPT2},
    {"activation_function", A_GPT2},
    {"scale_attn_weights", A_GPT2},
    {"scale_attn_by_inverse_layer_idx", A_GPT2},
    {"reorder_and_upcast_attn", A_GPT2},
    {"hidden_size", A_LQ},
    {"intermediate_size", A_LQ},
    {"num_hidden_layers", A_LQ},
    {"num_attention_heads", A_LQ},
    {"num_key_value_heads", A_LQ},
    {"head_dim", A_LQ},
    {"max_position_embeddings", A_LQ},
    {"rms_norm_eps", A_LQ},
    {"rope_theta", A_LQ},
    {"rope_scaling", A_LQ},
    {"rope_parameters", A_LQ}, /* transformers v5: rope_type, rope_theta and its parameters */
    {"hidden_act", A_LQ},
    {"attention_bias", A_LLAMA},
    {"mlp_bias", A_LLAMA},
    {"rope_interleaved", A_LLAMA},
    {"use_sliding_window", A_QWEN2},
    {"use_mrope", A_QWEN2},
};

static bool
get_int(const struct npu_json *cfg, const char *key, int lo, int hi, bool required, int *out,
        const char *path)
{
    const struct npu_json *v = npu_json_get(cfg, key);
    if (!v || v->type == NPU_JSON_NULL) {
        if (required)
            npu_err(DOM, "%s: config key '%s' is missing", path, key);
        return !required;
    }
    if (v->type != NPU_JSON_NUMBER || !v->is_int || v->i < lo || v->i > hi) {
        npu_err(DOM, "%s: config key '%s' must be an integer in %d..%d", path, key, lo, hi);
        return false;
    }
    *out = (int)v->i;
    return true;
}

static bool
get_float(const struct npu_json *cfg, const char *key, float *out, const char *path)
{
    const struct npu_json *v = npu_json_get(cfg, key);
    if (!v || v->type == NPU_JSON_NULL)
        return true;
    if (v->type != NPU_JSON_NUMBER || !(v->num > 0)) {
        npu_err(DOM, "%s: config key '%s' must be a positive number", path, key);
        return false;
    }
    *out = (float)v->num;
    return true;
}

static bool
get_bool(const struct npu_json *cfg, const char *key, bool *out, const char *path)
{
    const struct npu_json *v = npu_json_get(cfg, key);
    if (!v || v->type == NPU_JSON_NULL)
        return true;
    if (v->type != NPU_JSON_BOOL) {
        npu_err(DOM, "%s: config key '%s' must be true or false", path, key);
        return false;
    }
    *out = v->b;
    return true;
}

static bool
get_string_is(const struct npu_json *cfg, const char *key, const char *const *allowed,
              const char *path)
{
    const struct npu_json *v = npu_json_get(cfg, key);
    if (!v)
        return true;
    if (v->type == NPU_JSON_STRING)
        for (int i = 0; allowed[i]; i++)
            if (!strcmp(v->str, allowed[i]))
                return true;
    npu_err(DOM, "%s: config key '%s' = %s%s%s is not supported (supported: %s%s%s)", path, key,
            v->type == NPU_JSON_STRING ? "'" : "",
            v->type == NPU_JSON_STRING ? v->str : "(not a string)",
            v->type == NPU_JSON_STRING ? "'" : "", allowed[0], allowed[1] ? ", " : "",
            allowed[1] ? allowed[1] : "");
    return false;
}

/* Appends v as compact JSON to buf[*at .. n), "..." where it does not fit or nests deeper
 * than 3 (an error message states a refused value: it need not be whole). */
static void
json_text(const struct npu_json *v, int depth, char *buf, size_t n, size_t *at)
{
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (*at < n) {                                                                             \
            int w_ = snprintf(buf + *at, n - *at, __VA_ARGS__);                                    \
            *at = w_ < 0 ? n : *at + (size_t)w_;                                                   \
        }                                                                                          \
    } while (0)
    if (*at + 4 >= n || depth > 3) {
        PUT("...");
        return;
    }
    switch (v->type) {
    case NPU_JSON_NULL: PUT("null"); break;
    case NPU_JSON_BOOL: PUT("%s", v->b ? "true" : "false"); break;
    case NPU_JSON_NUMBER:
        if (v->is_int)
            PUT("%lld", v->i);
        else
            PUT("%g", v->num);
        break;
    case NPU_JSON_STRING: PUT("\"%.40s%s\"", v->str, v->len > 40 ? "..." : ""); break;
    case NPU_JSON_ARRAY:
    case NPU_JSON_OBJECT:
        PUT("%c", v->type == NPU_JSON_ARRAY ? '[' : '{');
        for (size_t i = 0; i < v->len && *at + 4 < n; i++) {
            if (i)
                PUT(", ");
            if (v->type == NPU_JSON_OBJECT)
                PUT("\"%.40s\": ", v->keys[i]);
            json_text(&v->items[i], depth + 1, buf, n, at);
        }
        PUT("%c", v->type == NPU_JSON_ARRAY ? ']' : '}');
        break;
    }
#undef PUT
}

/* model_keys[]: each absent or at its default, else refused naming the key and its value. */
static enum npu_status
check_model_keys(const struct npu_json *j, const char *path)
{
    for (size_t r = 0; r < sizeof(model_keys) / sizeof(model_keys[0]); r++) {
        const char *k = model_keys[r].key;
        const struct npu_json *v = npu_json_get(j, k);
        if (!v || v->type == NPU_JSON_NULL)
            continue; /* transformers reads null as the default of each of these */
        char val[128];
        size_t at = 0;
        val[0] = 0;
        json_text(v, 0, val, sizeof(val), &at);
        if (at >= sizeof(val) - 1) /* cut short: say so */
            memcpy(val + sizeof(val) - 4, "...", 4);
        switch (model_keys[r].def) {
        case DEF_FALSE:
            if (v->type != NPU_JSON_BOOL) {
                npu_err(DOM, "%s: config key '%s' must be true or false, not %s", path, k, val);
                return NPU_ERR_INVALID;
            }
            if (!v->b)
                continue;
            npu_err(DOM, "%s: config key '%s' is true: %s", path, k, model_keys[r].why);
            return NPU_ERR_UNSUPPORTED;
        case DEF_EMPTY:
            if (v->type != NPU_JSON_OBJECT) {
                npu_err(DOM, "%s: config key '%s' must be an object, not %s", path, k, val);
                return NPU_ERR_INVALID;
            }
            if (!v->len)
                continue;
            npu_err(DOM, "%s: config key '%s' is not empty (%s): %s", path, k, val,
                    model_keys[r].why);
            return NPU_ERR_UNSUPPORTED;
        case DEF_NULL: {
            const struct npu_json *m = npu_json_get(v, "quant_method");
            if (m && m->type == NPU_JSON_STRING)
                npu_err(DOM, "%s: config key '%s' is present (quant_method '%.40s'): %s", path, k,
                        m->str, model_keys[r].why);
            else
                npu_err(DOM, "%s: config key '%s' is %s, not null: %s", path, k, val,
                        model_keys[r].why);
            return NPU_ERR_UNSUPPORTED;
        }
        }
    }
    return NPU_OK;
}

/* eos_token_id: null, one id or a list of ids (Llama-3: [128001, 128008, 128009]); each
 * stops generation. */
static enum npu_status
parse_eos(const struct npu_json *e, struct llm_config *c, const char *path)
{
    c->n_eos = 0;
    if (!e || e->type == NPU_JSON_NULL)
        return NPU_OK;
    const struct npu_json *one = e;
    size_t n = 1;
    if (e->type == NPU_JSON_ARRAY) {
        one = e->items;
        n = e->len;
    }
    if (n > sizeof(c->eos) / sizeof(c->eos[0])) {
        npu_err(DOM, "%s: 'eos_token_id' lists %zu ids: at most %zu are supported", path, n,
                sizeof(c->eos) / sizeof(c->eos[0]));
        return NPU_ERR_UNSUPPORTED;
    }
    for (size_t i = 0; i < n; i++) {
        if (one[i].type != NPU_JSON_NUMBER || !one[i].is_int || one[i].i < 0 ||
            one[i].i > INT32_MAX) {
            npu_err(DOM, "%s: 'eos_token_id' must be a token id or a list of token ids", path);
            return NPU_ERR_INVALID;
        }
        c->eos[c->n_eos++] = one[i].i;
    }
    return NPU_OK;
}

/* One RoPE scheme as config.json gives it: "rope_scaling" (transformers 4.x) or
 * "rope_parameters" (transformers v5, which also moves rope_theta into it). */
struct rope_spec {
    enum llm_rope_scaling kind;
    double factor, low, high, theta; /* theta 0: not given */
    int orig;                        /* original_max_position_embeddings; 0: not given */
};

/* rope_scaling / rope_parameters (Hugging Face's modeling_rope_utils; WHAT names the key):
 * null, or an object whose "rope_type" (older checkpoints: "type") names the scheme.
 * "default" is plain RoPE; "linear" divides every inverse frequency by factor; "llama3"
 * (Llama-3.1/3.2) divides those whose wavelength 2 pi / f exceeds
 * original_max_position_embeddings / low_freq_factor by factor, keeps those below
 * original_max_position_embeddings / high_freq_factor, and blends between. The schemes
 * that depend on the sequence length or scale the attention (dynamic, yarn, longrope, ...)
 * are refused by name, as is any key a scheme does not have. V5 (rope_parameters): the
 * object may carry rope_theta, and llama3's original_max_position_embeddings may be left
 * out (transformers v5 then takes max_position_embeddings: the caller fills it in). */
static enum npu_status
parse_rope_obj(const struct npu_json *rs, const char *what, bool v5, struct rope_spec *s,
               const char *path)
{
    *s = (struct rope_spec){LLM_ROPE_DEFAULT, 1, 1, 1, 0, 0};
    if (!rs || rs->type == NPU_JSON_NULL)
        return NPU_OK;
    if (rs->type != NPU_JSON_OBJECT) {
        npu_err(DOM, "%s: config key '%s' must be null or an object", path, what);
        return NPU_ERR_INVALID;
    }
    const struct npu_json *t = npu_json_get(rs, "rope_type");
    if (!t)
        t = npu_json_get(rs, "type");
    if (!t && rs->len && rs->items[0].type == NPU_JSON_OBJECT) {
        /* v5's hybrid models: {"full_attention": {...}, "sliding_attention": {...}} */
        npu_err(DOM, "%s: %s gives a RoPE per layer type ('%s'): not supported", path, what,
                rs->keys[0]);
        return NPU_ERR_UNSUPPORTED;
    }
    if ((t || !v5) && (!t || t->type != NPU_JSON_STRING)) {
        npu_err(DOM, "%s: %s has no 'rope_type' (or 'type') string", path, what);
        return NPU_ERR_INVALID;
    }
    const char *tn = t ? t->str : "default"; /* v5 fills in a missing rope_type so */
    static const char *const keys_default[] = {NULL};
    static const char *const keys_linear[] = {"factor", NULL};
    static const char *const keys_llama3[] = {"factor", "low_freq_factor", "high_freq_factor",
                                              "original_max_position_embeddings", NULL};
    const char *const *keys;
    if (!strcmp(tn, "default")) {
        keys = keys_default;
    } else if (!strcmp(tn, "linear")) {
        s->kind = LLM_ROPE_LINEAR;
        keys = keys_linear;
    } else if (!strcmp(tn, "llama3")) {
        s->kind = LLM_ROPE_LLAMA3;
        keys = keys_llama3;
    } else {
        npu_err(DOM, "%s: %s type '%s' is not supported (supported: default, linear, llama3)", path,
                what, tn);
        return NPU_ERR_UNSUPPORTED;
    }
    /* every key is the type's or one of its own parameters (v5: or rope_theta) */
    for (size_t i = 0; i < rs->len; i++) {
        const char *k = rs->keys[i];
        bool ok = !strcmp(k, "rope_type") || !strcmp(k, "type") || (v5 && !strcmp(k, "rope_theta"));
        for (int q = 0; keys[q] && !ok; q++)
            ok = !strcmp(k, keys[q]);
        if (!ok) {
            npu_err(DOM,
                    "%s: %s key '%s' is not one of rope_type '%s' (not understood by this "
                    "loader)",
                    path, what, k, tn);
            return NPU_ERR_UNSUPPORTED;
        }
    }
    if (v5) {
        const struct npu_json *x = npu_json_get(rs, "rope_theta");
        if (x && x->type != NPU_JSON_NULL) {
            if (x->type != NPU_JSON_NUMBER || !(x->num > 0) || x->num > 1e30) {
                npu_err(DOM, "%s: %s 'rope_theta' must be a positive number", path, what);
                return NPU_ERR_INVALID;
            }
            s->theta = x->num;
        }
    }
    double v[3] = {1, 1, 1};
    for (int q = 0; q < 3 && keys[q]; q++) {
        const struct npu_json *x = npu_json_get(rs, keys[q]);
        if (!x || x->type != NPU_JSON_NUMBER || !(x->num > 0) || x->num > 1e9) {
            npu_err(DOM, "%s: %s '%s' needs '%s', a positive number", path, what, tn, keys[q]);
            return NPU_ERR_INVALID;
        }
        v[q] = x->num;
    }
    s->factor = v[0];
    s->low = v[1];
    s->high = v[2];
    if (s->kind == LLM_ROPE_LLAMA3) {
        const struct npu_json *x = npu_json_get(rs, "original_max_position_embeddings");
        if (v5 && (!x || x->type == NPU_JSON_NULL)) {
            x = NULL; /* the caller's max_position_embeddings */
        } else if (!x || x->type != NPU_JSON_NUMBER || !x->is_int || x->i < 1 || x->i > (1 << 30)) {
            npu_err(DOM,
                    "%s: %s 'llama3' needs 'original_max_position_embeddings', a positive "
                    "integer",
                    path, what);
            return NPU_ERR_INVALID;
        }
        s->orig = x ? (int)x->i : 0;
        if (!(v[2] > v[1])) {
            npu_err(DOM, "%s: %s 'llama3' needs high_freq_factor (%g) > low_freq_factor (%g)", path,
                    what, v[2], v[1]);
            return NPU_ERR_INVALID;
        }
    }
    return NPU_OK;
}

static void
rope_spec_text(const struct rope_spec *s, char *buf, size_t n)
{
    if (s->kind == LLM_ROPE_LINEAR)
        snprintf(buf, n, "linear, factor %g", s->factor);
    else if (s->kind == LLM_ROPE_LLAMA3)
        snprintf(buf, n,
                 "llama3, factor %g, low_freq_factor %g, high_freq_factor %g, "
                 "original_max_position_embeddings %d",
                 s->factor, s->low, s->high, s->orig);
    else
        snprintf(buf, n, "default");
}

/* The RoPE of a LLaMA / Qwen2 config: rope_theta + rope_scaling (transformers 4.x) or
 * rope_parameters (v5; its rope_theta, else the top-level one, else 10000). Both forms in
 * one file must say the same thing: if they disagree, which one Hugging Face uses depends on
 * its version, so that is an error naming both. */
static enum npu_status
parse_rope(const struct npu_json *j, struct llm_config *c, const char *path)
{
    struct rope_spec old, v5, *use = &old;
    enum npu_status st;
    const struct npu_json *rp = npu_json_get(j, "rope_parameters"),
                          *rs = npu_json_get(j, "rope_scaling"),
                          *th = npu_json_get(j, "rope_theta");
    bool have_rs = rs && rs->type != NPU_JSON_NULL, have_th = th && th->type == NPU_JSON_NUMBER;
    if ((st = parse_rope_obj(rs, "rope_scaling", false, &old, path)))
        return st;
    if (rp && rp->type != NPU_JSON_NULL) {
        if ((st = parse_rope_obj(rp, "rope_parameters", true, &v5, path)))
            return st;
        if (v5.kind == LLM_ROPE_LLAMA3 && !v5.orig)
            v5.orig = c->max_pos;
        if (have_rs && (old.kind != v5.kind || old.factor != v5.factor || old.low != v5.low ||
                        old.high != v5.high || old.orig != v5.orig)) {
            char a[192], b[192];
            rope_spec_text(&old, a, sizeof(a));
            rope_spec_text(&v5, b, sizeof(b));
            npu_err(DOM,
                    "%s: config keys 'rope_scaling' (%s) and 'rope_parameters' (%s) disagree: "
                    "keep one (transformers v5 writes only rope_parameters)",
                    path, a, b);
            return NPU_ERR_INVALID;
        }
        if (v5.theta && have_th && v5.theta != th->num) {
            npu_err(DOM,
                    "%s: config keys 'rope_theta' (%g) and 'rope_parameters' rope_theta (%g) "
                    "disagree: keep one (transformers v5 writes only rope_parameters)",
                    path, th->num, v5.theta);
            return NPU_ERR_INVALID;
        }
        if (v5.theta)
            c->rope_theta = (float)v5.theta;
        use = &v5;
    }
    c->rope_scaling = use->kind;
    c->rope_factor = use->factor;
    c->rope_low_freq_factor = use->low;
    c->rope_high_freq_factor = use->high;
    c->rope_orig_max_pos = use->orig;
    return NPU_OK;
}

double
llm_rope_inv_freq(const struct llm_config *c, int j)
{
    const double pi = 3.14159265358979323846;
    double f = 1.0 / pow((double)c->rope_theta, (double)(2 * j) / (double)c->head_dim);
    if (c->rope_scaling == LLM_ROPE_LINEAR)
        return f / c->rope_factor;
    if (c->rope_scaling != LLM_ROPE_LLAMA3)
        return f;
    /* wavelengths against the original context: long (low frequency) / factor, short kept,
     * in between blended by where old_context / wavelength lies between the two factors */
    double old = c->rope_orig_max_pos, wl = 2 * pi / f;
    double lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor;
    if (wl > old / lo)
        return f / c->rope_factor;
    if (wl < old / hi)
        return f;
    double smooth = (old / wl - lo) / (hi - lo);
    return (1 - smooth) * f / c->rope_factor + smooth * f;
}

double
llm_rope_angle(const struct llm_config *c, int pos, int j)
{
    return (double)pos * llm_rope_inv_freq(c, j);
}

void
llm_rope_tables(const struct llm_config *c, int pos0, int s, float *cs, float *sn)
{
    const int hd = c->head_dim;
    for (int j = 0; j < hd / 2; j++) {
        const float inv = (float)llm_rope_inv_freq(c, j);
        for (int i = 0; i < s; i++) {
            const float f = (float)(pos0 + i) * inv;
            cs[(size_t)i * hd + j] = cs[(size_t)i * hd + j + hd / 2] = cosf(f);
            sn[(size_t)i * hd + j] = sn[(size_t)i * hd + j + hd / 2] = sinf(f);
        }
    }
}

static enum npu_status
parse_config(const char *path, struct llm_config *c)
{
    struct npu_json_doc *doc = read_json(path);
    enum npu_status st = NPU_ERR_INVALID;
    if (!doc)
        return NPU_ERR_CORRUPT;
    const struct npu_json *j = npu_json_root(doc);
    memset(c, 0, sizeof(*c));
    if (j->type != NPU_JSON_OBJECT) {
        npu_err(DOM, "%s: not a JSON object", path);
        goto out;
    }
    const struct npu_json *ar = npu_json_get(j, "architectures");
    const char *an = NULL;
    if (!ar || ar->type == NPU_JSON_NULL) {
        /* as AutoModelForCausalLM: the causal LM of model_type (configs saved from a bare
         * PretrainedConfig or by hand have no architectures) */
        const struct npu_json *m = npu_json_get(j, "model_type");
        const char *t = m && m->type == NPU_JSON_STRING ? m->str : "";
        an = !strcmp(t, "gpt2")    ? "GPT2LMHeadModel"
             : !strcmp(t, "llama") ? "LlamaForCausalLM"
             : !strcmp(t, "qwen2") ? "Qwen2ForCausalLM"
                                   : NULL;
        if (!an && !*t) {
            npu_err(DOM, "%s: neither 'architectures' nor 'model_type' names the model", path);
            goto out;
        }
        if (!an) {
            npu_err(DOM,
                    "%s: no 'architectures', and 'model_type' '%s' is not one of gpt2, llama, "
                    "qwen2",
                    path, t);
            st = NPU_ERR_UNSUPPORTED;
            goto out;
        }
    } else if (ar->type != NPU_JSON_ARRAY || ar->len != 1 || ar->items[0].type != NPU_JSON_STRING) {
        npu_err(DOM, "%s: 'architectures' must be a list of one name", path);
        goto out;
    } else {
        an = ar->items[0].str;
    }
    snprintf(c->arch_name, sizeof(c->arch_name), "%s", an);
    if (!strcmp(an, "GPT2LMHeadModel"))
        c->arch = LLM_ARCH_GPT2;
    else if (!strcmp(an, "LlamaForCausalLM"))
        c->arch = LLM_ARCH_LLAMA;
    else if (!strcmp(an, "Qwen2ForCausalLM"))
        c->arch = LLM_ARCH_QWEN2;
    else {
        npu_err(DOM,
                "%s: unknown architecture '%s' (supported: GPT2LMHeadModel, LlamaForCausalLM, "
                "Qwen2ForCausalLM)",
                path, an);
        st = NPU_ERR_UNSUPPORTED;
        goto out;
    }
    /* Hugging Face's Auto classes build the model model_type names: it must be this one */
    static const char *const model_types[] = {
        [LLM_ARCH_GPT2] = "gpt2", [LLM_ARCH_LLAMA] = "llama", [LLM_ARCH_QWEN2] = "qwen2"};
    const struct npu_json *mt = npu_json_get(j, "model_type");
    if (mt && (mt->type != NPU_JSON_STRING || strcmp(mt->str, model_types[c->arch]))) {
        npu_err(DOM, "%s: config key 'model_type' is %s%s%s, not '%s' as %s needs", path,
                mt->type == NPU_JSON_STRING ? "'" : "",
                mt->type == NPU_JSON_STRING ? mt->str : "not a string",
                mt->type == NPU_JSON_STRING ? "'" : "", model_types[c->arch], an);
        st = NPU_ERR_UNSUPPORTED;
        goto out;
    }
    for (size_t i = 0; i < j->len; i++) {
        const char *k = j->keys[i];
        bool ok = false;
        for (int h = 0; harmless_keys[h] && !ok; h++)
            ok = !strcmp(k, harmless_keys[h]);
        for (size_t r = 0; r < sizeof(known_keys) / sizeof(known_keys[0]) && !ok; r++)
            ok = !strcmp(k, known_keys[r].key) && (known_keys[r].archs & (1u << c->arch));
        for (size_t r = 0; r < sizeof(model_keys) / sizeof(model_keys[0]) && !ok; r++)
            ok = !strcmp(k, model_keys[r].key);
        if (!ok) {
            npu_err(DOM, "%s: unknown config key '%s' for %s (not understood by this loader)", path,
                    k, an);
            st = NPU_ERR_UNSUPPORTED;
            goto out;
        }
    }
    if ((st = check_model_keys(j, path)))
        goto out;
    st = NPU_ERR_INVALID;
    const int BIG = 1 << 24;
    c->tied = true;
    if (c->arch == LLM_ARCH_GPT2) {
        c->eps = 1e-5f;
        c->max_pos = 1024;
        if (!get_int(j, "n_layer", 1, 1024, true, &c->n_layers, path) ||
            !get_int(j, "n_embd", 1, 65536, true, &c->hidden, path) ||
            !get_int(j, "n_head", 1, 1024, true, &c->n_heads, path) ||
            !get_int(j, "vocab_size", 1, BIG, true, &c->vocab, path) ||
            !get_int(j, "n_positions", 1, BIG, false, &c->max_pos, path) ||
            !get_float(j, "layer_norm_epsilon", &c->eps, path) ||
            !get_bool(j, "tie_word_embeddings", &c->tied, path))
            goto out;
        c->ffn = 4 * c->hidden;
        if (!get_int(j, "n_inner", 1, BIG, false, &c->ffn, path))
            goto out;
        c->n_kv_heads = c->n_heads;
        static const char *const gelu[] = {"gelu_new", "gelu_pytorch_tanh", NULL};
        if (!get_string_is(j, "activation_function", gelu, path))
            goto out;
        bool f = true;
        if (!get_bool(j, "scale_attn_weights", &f, path))
            goto out;
        bool no[2] = {false, false};
        if (!get_bool(j, "scale_attn_by_inverse_layer_idx", &no[0], path) ||
            !get_bool(j, "reorder_and_upcast_attn", &no[1], path))
            goto out;
        if (!f || no[0]) {
            npu_err(DOM, "%s: config key '%s' is %s: not supported for %s", path,
                    f ? "scale_attn_by_inverse_layer_idx" : "scale_attn_weights",
                    f ? "true" : "false", an);
            st = NPU_ERR_UNSUPPORTED;
            goto out;
        }
        /* reorder_and_upcast_attn only changes where fp32 is used: we are fp32 on the host */
    } else {
        c->eps = 1e-6f;
        c->rope_theta = 10000.0f;
        c->max_pos = 2048;
        c->tied = false; /* LlamaConfig's and Qwen2Config's default */
        if (!get_int(j, "num_hidden_layers", 1, 1024, true, &c->n_layers, path) ||
            !get_int(j, "hidden_size", 1, 65536, true, &c->hidden, path) ||
            !get_int(j, "num_attention_heads", 1, 1024, true, &c->n_heads, path) ||
            !get_int(j, "intermediate_size", 1, BIG, true, &c->ffn, path) ||
            !get_int(j, "vocab_size", 1, BIG, true, &c->vocab, path) ||
            !get_int(j, "max_position_embeddings", 1, BIG, false, &c->max_pos, path) ||
            !get_float(j, "rms_norm_eps", &c->eps, path) ||
            !get_float(j, "rope_theta", &c->rope_theta, path) ||
            !get_bool(j, "tie_word_embeddings", &c->tied, path))
            goto out;
        c->n_kv_heads = c->n_heads;
        if (!get_int(j, "num_key_value_heads", 1, 1024, false, &c->n_kv_heads, path))
            goto out;
        static const char *const silu[] = {"silu", NULL};
        if (!get_string_is(j, "hidden_act", silu, path))
            goto out;
        if ((st = parse_rope(j, c, path)))
            goto out;
        st = NPU_ERR_INVALID;
        bool b[4] = {false, false, false, false};
        if (!get_bool(j, "attention_bias", &b[0], path) || !get_bool(j, "mlp_bias", &b[1], path) ||
            !get_bool(j, "use_sliding_window", &b[2], path) ||
            !get_bool(j, "rope_interleaved", &b[3], path))
            goto out;
        const struct npu_json *mr = npu_json_get(j, "use_mrope");
        static const char *const flag[] = {"attention_bias", "mlp_bias", "use_sliding_window",
                                           "rope_interleaved", "use_mrope"};
        bool set[5] = {b[0], b[1], b[2], b[3], mr && mr->type == NPU_JSON_BOOL && mr->b};
        for (int f = 0; f < 5; f++)
            if (set[f]) {
                npu_err(DOM, "%s: config key '%s' is true: not supported for %s", path, flag[f],
                        an);
                st = NPU_ERR_UNSUPPORTED;
                goto out;
            }
    }
    /* head_dim: LlamaConfig's and Qwen2Config's default hidden / heads; an explicit one
     * (Llama-3.2 ships it) may differ: q, k, v and o are then heads x head_dim wide */
    c->head_dim = c->hidden / c->n_heads;
    const struct npu_json *hdj = npu_json_get(j, "head_dim");
    bool explicit_hd = c->arch != LLM_ARCH_GPT2 && hdj && hdj->type != NPU_JSON_NULL;
    if (c->arch != LLM_ARCH_GPT2 && !get_int(j, "head_dim", 1, 4096, false, &c->head_dim, path))
        goto out;
    if ((!explicit_hd && c->hidden % c->n_heads) || c->n_heads % c->n_kv_heads ||
        (c->arch == LLM_ARCH_GPT2 && c->head_dim * c->n_heads != c->hidden) ||
        (c->arch != LLM_ARCH_GPT2 && c->head_dim % 2)) {
        npu_err(DOM, "%s: inconsistent heads: hidden %d, heads %d, key/value heads %d, head dim %d",
                path, c->hidden, c->n_heads, c->n_kv_heads, c->head_dim);
        goto out;
    }
    if ((st = parse_eos(npu_json_get(j, "eos_token_id"), c, path)))
        goto out;
    snprintf(c->eos_source, sizeof(c->eos_source), "config.json");
out:
    npu_json_free(doc);
    return st;
}

/* ---- safetensors --------------------------------------------------------------- */

static uint64_t
name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

struct llm_st_tensor *
llm_checkpoint_find(const struct llm_checkpoint *ck, const char *name)
{
    if (!ck->hcap)
        return NULL;
    for (size_t i = (size_t)name_hash(name) & (ck->hcap - 1);; i = (i + 1) & (ck->hcap - 1)) {
        int k = ck->hash[i] - 1;
        if (k < 0)
            return NULL;
        if (!strcmp(ck->t[k].name, name))
            return &ck->t[k];
    }
}

/* Enters t[k] in the hash, growing it to keep it at most half full. */
static bool
hash_add(struct llm_checkpoint *ck, int k)
{
    if ((size_t)ck->nt * 2 > ck->hcap) {
        size_t nc = ck->hcap ? ck->hcap * 2 : 256;
        while ((size_t)ck->nt * 2 > nc)
            nc *= 2;
        int *nh = calloc(nc, sizeof(*nh));
        if (!nh)
            return false;
        free(ck->hash);
        ck->hash = nh;
        ck->hcap = nc;
        for (int j = 0; j < ck->nt; j++)
            if (j != k && !hash_add(ck, j))
                return false;
    }
    size_t i = (size_t)name_hash(ck->t[k].name) & (ck->hcap - 1);
    while (ck->hash[i])
        i = (i + 1) & (ck->hcap - 1);
    ck->hash[i] = k + 1;
    return true;
}

/* Bytes per element of a safetensors dtype (0: not one of the format's whole-byte dtypes),
 * and which of ours it is. */
static size_t
st_dtype_size(const char *s, enum llm_st_dtype *dt)
{
    static const struct {
        const char *name;
        size_t size;
    } other[] = {{"BOOL", 1},    {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
                 {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2}, {"I32", 4},     {"U32", 4},
                 {"F64", 8},     {"I64", 8}, {"U64", 8}};
    if (!strcmp(s, "F32"))
        return *dt = LLM_ST_F32, 4;
    if (!strcmp(s, "F16"))
        return *dt = LLM_ST_F16, 2;
    if (!strcmp(s, "BF16"))
        return *dt = LLM_ST_BF16, 2;
    *dt = LLM_ST_OTHER;
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        if (!strcmp(s, other[i].name))
            return other[i].size;
    return 0;
}

struct span {
    const unsigned char *p;
    size_t n;
    const char *name;
};

static int
span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->p != y->p ? (x->p < y->p ? -1 : 1) : strcmp(x->name, y->name); /* deterministic */
}

/* No two of one file's tensors (ck->t[first ..]) share bytes: the format's writers lay
 * them out one after another, and a header whose tensors overlap is corrupt or hostile. */
static enum npu_status
check_overlap(const struct llm_checkpoint *ck, int first, const char *path)
{
    int n = ck->nt - first, k = 0;
    if (n < 2)
        return NPU_OK;
    struct span *s = malloc((size_t)n * sizeof(*s));
    if (!s)
        return NPU_ERR_NOMEM;
    for (int i = first; i < ck->nt; i++)
        if (ck->t[i].nbytes)
            s[k++] = (struct span){ck->t[i].data, ck->t[i].nbytes, ck->t[i].name};
    qsort(s, (size_t)k, sizeof(*s), span_cmp);
    enum npu_status st = NPU_OK;
    for (int i = 1; i < k && !st; i++)
        if (s[i].p < s[i - 1].p + s[i - 1].n) {
            npu_err(DOM,
                    "%s: corrupt safetensors header: tensors '%s' and '%s' overlap in the file",
                    path, s[i - 1].name, s[i].name);
            st = NPU_ERR_CORRUPT;
        }
    free(s);
    return st;
}

static enum npu_status
add_file(struct llm_checkpoint *ck, const char *path)
{
    struct stat sb;
    const char *why = "";
    int fd = open_regular(path, &sb, &why);
    if (fd < 0) {
        npu_err(DOM, "%s: cannot open (%s)", path, why);
        return NPU_ERR_IO;
    }
    enum npu_status st = NPU_ERR_CORRUPT;
    struct npu_json_doc *doc = NULL;
    const struct npu_json *j = NULL;
    void *map = MAP_FAILED;
    if (sb.st_size < 8) {
        npu_err(DOM, "%s: not a safetensors file (shorter than its 8-byte header length)", path);
        goto out;
    }
    size_t size = (size_t)sb.st_size;
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        npu_err(DOM, "%s: cannot map (%s)", path, strerror(errno));
        st = NPU_ERR_IO;
        goto out;
    }
    const unsigned char *b = map;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | b[i];
    if (hl > MAX_HEADER || hl > size - 8) {
        npu_err(DOM, "%s: corrupt safetensors header: length %llu does not fit the %zu-byte file",
                path, (unsigned long long)hl, size);
        goto out;
    }
    char err[256];
    if ((doc = npu_json_parse((const char *)b + 8, (size_t)hl, err, sizeof(err))))
        j = npu_json_root(doc);
    if (!j || j->type != NPU_JSON_OBJECT) {
        npu_err(DOM, "%s: corrupt safetensors header: %s", path, j ? "not a JSON object" : err);
        goto out;
    }
    const unsigned char *data = b + 8 + hl;
    size_t dlen = size - 8 - (size_t)hl;
    const int first = ck->nt; /* this file's tensors are ck->t[first ..] */
    for (size_t i = 0; i < j->len; i++) {
        const char *name = j->keys[i];
        const struct npu_json *e = &j->items[i];
        if (!strcmp(name, "__metadata__"))
            continue;
        const struct npu_json *dt = npu_json_get(e, "dtype"), *sh = npu_json_get(e, "shape"),
                              *off = npu_json_get(e, "data_offsets");
        if (!dt || dt->type != NPU_JSON_STRING || !sh || sh->type != NPU_JSON_ARRAY ||
            sh->len > NPU_MAX_DIMS || !off || off->type != NPU_JSON_ARRAY || off->len != 2) {
            npu_err(DOM,
                    "%s: corrupt safetensors header: entry '%s' lacks dtype, shape or "
                    "data_offsets",
                    path, name);
            goto out;
        }
        struct llm_st_tensor t = {0};
        size_t es = st_dtype_size(dt->str, &t.dt);
        if (!es) {
            npu_err(DOM, "%s: tensor '%s' has dtype %s: not supported (F32, F16, BF16)", path, name,
                    dt->str);
            st = NPU_ERR_UNSUPPORTED;
            goto out;
        }
        snprintf(t.dtype, sizeof(t.dtype), "%s", dt->str);
        uint64_t numel = 1;
        t.ndim = (int)sh->len;
        for (size_t d = 0; d < sh->len; d++) {
            const struct npu_json *x = &sh->items[d];
            if (x->type != NPU_JSON_NUMBER || !x->is_int || x->i < 0 || x->i > (1ll << 40)) {
                npu_err(DOM, "%s: corrupt safetensors header: bad shape of '%s'", path, name);
                goto out;
            }
            t.dims[d] = x->i;
            if (x->i && numel > (1ull << 40) / (uint64_t)x->i) { /* before it could wrap */
                npu_err(DOM, "%s: corrupt safetensors header: '%s' is too large", path, name);
                goto out;
            }
            numel *= (uint64_t)x->i;
        }
        const struct npu_json *o0 = &off->items[0], *o1 = &off->items[1];
        if (o0->type != NPU_JSON_NUMBER || o1->type != NPU_JSON_NUMBER || !o0->is_int ||
            !o1->is_int || o0->i < 0 || o1->i < o0->i) {
            npu_err(DOM,
                    "%s: corrupt safetensors header: data_offsets of '%s' are not two whole "
                    "numbers begin <= end",
                    path, name);
            goto out;
        }
        if ((uint64_t)o1->i > dlen) {
            npu_err(DOM,
                    "%s: corrupt safetensors header: data_offsets [%lld, %lld] of '%s' leave the "
                    "%zu bytes of data in the file",
                    path, (long long)o0->i, (long long)o1->i, name, dlen);
            goto out;
        }
        if ((uint64_t)(o1->i - o0->i) != numel * es) {
            npu_err(DOM,
                    "%s: corrupt safetensors header: '%s' is %llu element(s) of %s (%llu "
                    "bytes) but its data_offsets [%lld, %lld] hold %lld bytes",
                    path, name, (unsigned long long)numel, dt->str,
                    (unsigned long long)(numel * es), (long long)o0->i, (long long)o1->i,
                    (long long)(o1->i - o0->i));
            goto out;
        }
        if (llm_checkpoint_find(ck, name)) {
            npu_err(DOM, "%s: tensor '%s' appears twice in the checkpoint", path, name);
            goto out;
        }
        t.data = data + o0->i;
        t.nbytes = numel * es;
        t.file = ck->nfiles; /* this file's index once it is added below */
        if (!(t.name = strdup(name))) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
        if (ck->nt == ck->cap) {
            int nc = ck->cap ? ck->cap * 2 : 64;
            struct llm_st_tensor *nt = realloc(ck->t, (size_t)nc * sizeof(*nt));
            if (!nt) {
                free(t.name);
                st = NPU_ERR_NOMEM;
                goto out;
            }
            ck->t = nt;
            ck->cap = nc;
        }
        ck->t[ck->nt++] = t;
        if (!hash_add(ck, ck->nt - 1)) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
        ck->bytes += t.nbytes;
    }
    if ((st = check_overlap(ck, first, path)))
        goto out;
    st = NPU_ERR_CORRUPT;
    struct llm_st_file *nf = realloc(ck->files, (size_t)(ck->nfiles + 1) * sizeof(*nf));
    if (!nf) {
        st = NPU_ERR_NOMEM;
        goto out;
    }
    ck->files = nf;
    ck->files[ck->nfiles++] = (struct llm_st_file){map, size};
    {
        char real[PATH_MAX];
        const char *id = realpath(path, real) ? real : path;
        uint64_t fields[5] = {(uint64_t)sb.st_dev, (uint64_t)sb.st_ino, (uint64_t)sb.st_size,
                              (uint64_t)sb.st_mtim.tv_sec, (uint64_t)sb.st_mtim.tv_nsec};
        uint64_t h = ck->ident ? ck->ident : 0xcbf29ce484222325ull;
        for (const unsigned char *q = (const unsigned char *)id; *q; q++)
            h = (h ^ *q) * 0x100000001b3ull;
        for (size_t i = 0; i < sizeof(fields); i++)
            h = (h ^ ((const unsigned char *)fields)[i]) * 0x100000001b3ull;
        ck->ident = h;
    }
    map = MAP_FAILED;
    st = NPU_OK;
out:
    if (map != MAP_FAILED)
        munmap(map, (size_t)sb.st_size);
    npu_json_free(doc);
    close(fd);
    return st;
}

static bool
exists(const char *p)
{
    struct stat sb;
    return !stat(p, &sb);
}

enum npu_status
llm_checkpoint_open(const char *dir_in, struct llm_checkpoint *ck)
{
    char dir[PATH_MAX], p[PATH_MAX + 64];
    enum npu_status st;
    memset(ck, 0, sizeof(*ck));
    if (!dir_in || !*dir_in) {
        npu_err(DOM, "no model folder given");
        return NPU_ERR_INVALID;
    }
    snprintf(dir, sizeof(dir), "%s", dir_in);
    snprintf(p, sizeof(p), "%s/config.json", dir);
    if (!exists(p)) {
        /* the hub cache: models--org--name/{refs/main, snapshots/<rev>/} */
        char ref[256] = "";
        snprintf(p, sizeof(p), "%s/refs/main", dir);
        size_t rl = 0;
        const char *why = "";
        char *r = read_text(p, &rl, &why);
        if (r) {
            snprintf(ref, sizeof(ref), "%s", r);
            free(r);
            ref[strcspn(ref, "\r\n")] = 0;
        }
        if (!ref[0] || strchr(ref, '/')) {
            npu_err(DOM, "%s: no config.json (and no hub cache refs/main)", dir_in);
            return NPU_ERR_IO;
        }
        int w = snprintf(dir, sizeof(dir), "%s/snapshots/%s", dir_in, ref);
        if (w < 0 || (size_t)w >= sizeof(dir)) {
            npu_err(DOM, "%s: path too long", dir_in);
            return NPU_ERR_INVALID;
        }
        snprintf(p, sizeof(p), "%s/config.json", dir);
        if (!exists(p)) {
            npu_err(DOM, "%s: hub cache snapshot %s has no config.json", dir_in, ref);
            return NPU_ERR_IO;
        }
    }
    if ((st = parse_config(p, &ck->cfg)))
        return st;
    /* generation_config.json's eos_token_id replaces config.json's (Hugging Face's
     * generate() reads that file when the folder has it) */
    snprintf(p, sizeof(p), "%s/generation_config.json", dir);
    if (exists(p)) {
        struct npu_json_doc *gdoc = read_json(p);
        if (!gdoc)
            return NPU_ERR_CORRUPT;
        const struct npu_json *gj = npu_json_root(gdoc), *ge = npu_json_get(gj, "eos_token_id");
        if (gj->type != NPU_JSON_OBJECT) {
            npu_err(DOM, "%s: not a JSON object", p);
            st = NPU_ERR_CORRUPT;
        } else if (ge && !(st = parse_eos(ge, &ck->cfg, p))) {
            snprintf(ck->cfg.eos_source, sizeof(ck->cfg.eos_source), "generation_config.json");
        }
        npu_json_free(gdoc);
        if (st)
            return st;
    }
    snprintf(p, sizeof(p), "%s/model.safetensors", dir);
    if (exists(p)) {
        if ((st = add_file(ck, p)))
            goto err;
        return NPU_OK;
    }
    snprintf(p, sizeof(p), "%s/model.safetensors.index.json", dir);
    if (!exists(p)) {
        /* older repositories ship only PyTorch's pickle (a format that runs code when read) */
        char b1[PATH_MAX + 32], b2[PATH_MAX + 48];
        snprintf(b1, sizeof(b1), "%s/pytorch_model.bin", dir);
        snprintf(b2, sizeof(b2), "%s/pytorch_model.bin.index.json", dir);
        bool pt = exists(b1) || exists(b2);
        npu_err(DOM, "%s: neither model.safetensors nor model.safetensors.index.json%s", dir,
                pt ? " (pytorch_model.bin is not read: convert it to safetensors, or download "
                     "the repository's safetensors files if it has them)"
                   : "");
        return NPU_ERR_IO;
    }
    struct npu_json_doc *ixdoc = read_json(p);
    if (!ixdoc) {
        st = NPU_ERR_CORRUPT;
        goto err;
    }
    const struct npu_json *ix = npu_json_root(ixdoc);
    const struct npu_json *wm = npu_json_get(ix, "weight_map");
    if (!wm || wm->type != NPU_JSON_OBJECT || !wm->len) {
        npu_err(DOM, "%s: no 'weight_map' object", p);
        npu_json_free(ixdoc);
        st = NPU_ERR_CORRUPT;
        goto err;
    }
    /* each shard once, in order of first mention; shard[i]: the file index of entry i's */
    int *shard = malloc(wm->len * sizeof(*shard));
    if (!shard) {
        npu_json_free(ixdoc);
        st = NPU_ERR_NOMEM;
        goto err;
    }
    for (size_t i = 0; i < wm->len; i++) {
        const struct npu_json *f = &wm->items[i];
        if (f->type != NPU_JSON_STRING || strchr(f->str, '/') || !f->str[0]) {
            npu_err(DOM, "%s: weight_map entry '%s' does not name a file of the folder", p,
                    wm->keys[i]);
            st = NPU_ERR_CORRUPT;
            goto err_index;
        }
        size_t k = 0;
        while (k < i && strcmp(wm->items[k].str, f->str))
            k++;
        if (k < i) {
            shard[i] = shard[k];
            continue;
        }
        shard[i] = ck->nfiles;
        char sp[PATH_MAX + 300];
        snprintf(sp, sizeof(sp), "%s/%s", dir, f->str);
        if ((st = add_file(ck, sp)))
            goto err_index;
    }
    /* every tensor the index names is in its shard */
    for (size_t i = 0; i < wm->len; i++) {
        const struct llm_st_tensor *t = llm_checkpoint_find(ck, wm->keys[i]);
        if (!t || t->file != shard[i]) {
            npu_err(DOM, "%s: tensor '%s' is listed in the index but not in %s", p, wm->keys[i],
                    wm->items[i].str);
            st = NPU_ERR_CORRUPT;
            goto err_index;
        }
    }
    free(shard);
    npu_json_free(ixdoc);
    return NPU_OK;
err_index:
    free(shard);
    npu_json_free(ixdoc);
err:
    llm_checkpoint_close(ck);
    return st;
}

void
llm_checkpoint_close(struct llm_checkpoint *ck)
{
    for (int i = 0; i < ck->nt; i++)
        free(ck->t[i].name);
    free(ck->t);
    free(ck->hash);
    ck->hash = NULL;
    ck->hcap = 0;
    for (int i = 0; i < ck->nfiles; i++)
        munmap(ck->files[i].map, ck->files[i].size);
    free(ck->files);
    ck->t = NULL;
    ck->files = NULL;
    ck->nt = ck->nfiles = 0;
}
