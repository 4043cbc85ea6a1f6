// SPDX-License-Identifier: MIT
/*
 * npu-generate: text generation with a Hugging Face causal language model
 * (GPT-2, LLaMA, Qwen2 checkpoints) through npu/npu-llm.h. Token ids in
 * (--prompt-ids) or text (--prompt, through gen-text.h's tokenizer), new
 * tokens streamed to stdout as they come; with --ids exactly one line
 * "ids: ..." and nothing else on stdout. Statistics go to stderr.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen-text.h"
#include "npu/npu-build.h"
#include "npu/npu-llm.h"
#include "npu/npu-npy.h"
#include "npu/npu-timing.h"

static const char usage[] =
    "usage: npu-generate MODEL_DIR [--prompt TEXT | --prompt-ids 1,2,3] [--max-new-tokens N]\n"
    "                    [--backend cpu|sim|rknpu|rocket|auto] [--greedy | --temperature T\n"
    "                    --top-k K --top-p P --seed S] [--max-context N] [--ids] [--quiet]\n"
    "\n"
    "  MODEL_DIR          a Hugging Face checkpoint folder (config.json, model.safetensors or\n"
    "                     model.safetensors.index.json) or a hub cache folder (models--org--name)\n"
    "  --prompt TEXT      the prompt as text (the folder's tokenizer.json)\n"
    "  --prompt-ids LIST  the prompt as token ids, comma or space separated\n"
    "  --max-new-tokens N tokens to make at most (default 32); stops earlier at any EOS id\n"
    "                     (generation_config.json's eos_token_id, else config.json's)\n"
    "  --backend NAME     where the programs run (default auto)\n"
    "  --greedy           argmax (the default)\n"
    "  --temperature T    sample at temperature T (> 0), with --top-k K (0 = off),\n"
    "                     --top-p P (1 = off) and --seed S (default 0)\n"
    "  --max-context N    tokens the KV cache holds (default min(config, 256))\n"
    "  --cores N          split each step's NPU jobs over N cores (1-3, sim only; default 1)\n"
    "  --weights fp16|w8a8  the projections' weights: fp16 (default) or int8 per output channel\n"
    "                     with int8 activations, scales calibrated at load (docs/llm.md)\n"
    "  --calib-ids LIST   w8a8: calibrate on these token ids first (default: a fixed sequence)\n"
    "  --cache-dir DIR    compile cache of the programs (default $XDG_CACHE_HOME/opennpu/llm,\n"
    "                     else ~/.cache/opennpu/llm)\n"
    "  --no-cache         compile the programs without reading or writing the cache\n"
    "  --cpu-threads N    threads of the CPU steps (default: all CPUs)\n"
    "  --host-kv-cache    convert the KV cache from the host in every decode step instead\n"
    "                     of keeping it resident in device memory (for comparisons)\n"
    "  --ids              print only 'ids: <new ids>' on stdout\n"
    "  --quiet            no statistics or notices on stderr (errors still print)\n"
    "  --logits-out FILE  write each step's logits as a float32 .npy [steps, vocab]\n"
    "  --force-ids LIST   feed these tokens instead of the chosen ones (teacher forcing)\n"
    "  --convert-logits   greedy: convert each step's logits to fp32 and take the argmax there\n"
    "                     (the default without --logits-out reads the argmax over the logits\n"
    "                     as the NPU wrote them, nothing converted; the same token)\n"
    "\n"
    "Statistics (stderr): prompt tokens, prefill time, decode time per token (host time\n"
    "measured; on sim also modeled NPU time, labelled with the timing model, plus the modeled\n"
    "time of the program's CPU steps and conversions (RK3588 CPU model v1, the partition's\n"
    "CPU cost model) and their sum, the step's modeled time on a board in series),\n"
    "KV-cache bytes, why generation stopped.\n";

struct run_ctx {
    bool ids_only, quiet;
    struct gen_text_stream *stream; /* opened at the first token */
    const char *dir;
    int32_t *got;
    int n_got;
    float *logits;
    int vocab, cap;
};

static int
on_token(int32_t t, const float *logits, void *user)
{
    struct run_ctx *r = user;
    if (r->n_got < r->cap) {
        r->got[r->n_got] = t;
        if (r->logits)
            memcpy(r->logits + (size_t)r->n_got * r->vocab, logits,
                   (size_t)r->vocab * sizeof(float));
        r->n_got++;
    }
    if (!r->ids_only && !r->stream && !(r->stream = gen_text_stream_open(r->dir, stdout, r->quiet)))
        return 1;
    if (r->stream)
        gen_text_stream_push(r->stream, t);
    return 0;
}

static int
parse_ids(const char *s, int32_t **out, int *n, const char *what)
{
    int cap = 16;
    int32_t *v = malloc((size_t)cap * sizeof(*v));
    *n = 0;
    if (!v)
        return -1;
    while (*s) {
        while (*s == ',' || *s == ' ')
            s++;
        if (!*s)
            break;
        char *e;
        errno = 0;
        long x = strtol(s, &e, 10);
        if (e == s || errno || x < 0 || x > 0x7fffffff || (*e && *e != ',' && *e != ' ')) {
            fprintf(stderr, "npu-generate: %s: '%s' is not a list of token ids\n", what, s);
            free(v);
            return -1;
        }
        if (*n == cap) {
            int32_t *nv = realloc(v, (size_t)(cap *= 2) * sizeof(*v));
            if (!nv) {
                free(v);
                return -1;
            }
            v = nv;
        }
        v[(*n)++] = (int32_t)x;
        s = e;
    }
    *out = v;
    return 0;
}

static bool
num_arg(const char *opt, const char *val, double lo, double hi, double *out)
{
    char *e;
    double x = val ? strtod(val, &e) : 0;
    if (!val || e == val || *e || !(x >= lo && x <= hi)) {
        fprintf(stderr, "npu-generate: %s needs a number in %g..%g\n", opt, lo, hi);
        return false;
    }
    *out = x;
    return true;
}

/* an option that counts (tokens, cores, threads): a whole number in lo..hi */
static bool
int_arg(const char *opt, const char *val, double lo, double hi, double *out)
{
    char *e;
    double x = val ? strtod(val, &e) : 0;
    if (!val || e == val || *e || !(x >= lo && x <= hi) || x != floor(x)) {
        fprintf(stderr, "npu-generate: %s needs a whole number in %.0f..%.0f\n", opt, lo, hi);
        return false;
    }
    *out = x;
    return true;
}

/* --seed: any unsigned 64-bit number, exactly */
static bool
seed_arg(const char *val, uint64_t *out)
{
    char *e;
    errno = 0;
    unsigned long long x = val && *val != '-' ? strtoull(val, &e, 10) : 0;
    if (!val || *val == '-' || e == val || *e || errno) {
        fprintf(stderr, "npu-generate: --seed needs a whole number in 0..18446744073709551615\n");
        return false;
    }
    *out = (uint64_t)x;
    return true;
}

int
main(int argc, char **argv)
{
    const char *dir = NULL, *prompt = NULL, *prompt_ids = NULL, *logits_out = NULL,
               *force_ids = NULL, *calib_ids = NULL;
    struct npu_llm_options o = {.backend = "auto"};
    struct npu_llm_sampling sp = {.greedy = true, .temperature = 1, .top_p = 1};
    bool ids_only = false, quiet = false, greedy_flag = false, sample_flag = false;
    bool convert_logits = false;
    double max_new = 32, x;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--prompt") && v) {
            prompt = v, i++;
        } else if (!strcmp(a, "--prompt-ids") && v) {
            prompt_ids = v, i++;
        } else if (!strcmp(a, "--max-new-tokens")) {
            if (!int_arg(a, v, 0, 1 << 24, &max_new))
                return 2;
            i++;
        } else if (!strcmp(a, "--backend") && v) {
            o.backend = v, i++;
        } else if (!strcmp(a, "--convert-logits")) {
            convert_logits = true;
        } else if (!strcmp(a, "--greedy")) {
            greedy_flag = true;
        } else if (!strcmp(a, "--temperature")) {
            if (!num_arg(a, v, 1e-6, 1e6, &x))
                return 2;
            sp.temperature = (float)x, sample_flag = true, i++;
        } else if (!strcmp(a, "--top-k")) {
            if (!int_arg(a, v, 0, 1 << 30, &x))
                return 2;
            sp.top_k = (int)x, sample_flag = true, i++;
        } else if (!strcmp(a, "--top-p")) {
            if (!num_arg(a, v, 0, 1, &x))
                return 2;
            sp.top_p = (float)x, sample_flag = true, i++;
        } else if (!strcmp(a, "--seed")) {
            if (!seed_arg(v, &sp.seed))
                return 2;
            sample_flag = true, i++;
        } else if (!strcmp(a, "--max-context")) {
            if (!int_arg(a, v, 1, 1 << 20, &x))
                return 2;
            o.max_context = (int)x, i++;
        } else if (!strcmp(a, "--cores")) {
            if (!int_arg(a, v, 1, 3, &x))
                return 2;
            o.cores = (int)x, i++;
        } else if (!strcmp(a, "--weights") && v) {
            o.weights = v, i++;
        } else if (!strcmp(a, "--calib-ids") && v) {
            calib_ids = v, i++;
        } else if (!strcmp(a, "--host-kv-cache")) {
            o.host_cache = true;
        } else if (!strcmp(a, "--cpu-threads")) {
            if (!int_arg(a, v, 1, 1024, &x))
                return 2;
            o.cpu_threads = (int)x, i++;
        } else if (!strcmp(a, "--cache-dir") && v) {
            o.cache_dir = v, i++;
        } else if (!strcmp(a, "--no-cache")) {
            o.no_cache = true;
        } else if (!strcmp(a, "--ids")) {
            ids_only = true;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (!strcmp(a, "--logits-out") && v) {
            logits_out = v, i++;
        } else if (!strcmp(a, "--force-ids") && v) {
            force_ids = v, i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "npu-generate: unknown option or missing value: %s\n%s", a, usage);
            return 2;
        } else if (!dir) {
            dir = a;
        } else {
            fprintf(stderr, "npu-generate: more than one model folder: %s\n", a);
            return 2;
        }
    }
    if (!dir) {
        fputs(usage, stderr);
        return 2;
    }
    if (greedy_flag && sample_flag) {
        fprintf(stderr, "npu-generate: --greedy and sampling options exclude each other\n");
        return 2;
    }
    sp.greedy = !sample_flag;
    /* nobody reads the logits: the argmax over the values as the NPU wrote them, nothing
     * converted */
    sp.no_logits = sp.greedy && !logits_out && !convert_logits;
    if ((prompt != NULL) == (prompt_ids != NULL)) {
        fprintf(stderr, "npu-generate: give exactly one of --prompt and --prompt-ids\n");
        return 2;
    }
    if (o.weights && strcmp(o.weights, "fp16") && strcmp(o.weights, "w8a8")) {
        fprintf(stderr, "npu-generate: --weights %s: not one of fp16, w8a8\n", o.weights);
        return 2;
    }
    if (calib_ids && (!o.weights || strcmp(o.weights, "w8a8"))) {
        fprintf(stderr, "npu-generate: --calib-ids needs --weights w8a8\n");
        return 2;
    }
    int32_t *ids = NULL, *force = NULL, *calib = NULL;
    int n = 0, nforce = 0, ncalib = 0;

    if (prompt) {
        if (gen_text_encode(dir, prompt, &ids, &n))
            return 1;
    } else if (parse_ids(prompt_ids, &ids, &n, "--prompt-ids")) {
        return 2;
    }
    if (n == 0) {
        fprintf(stderr, "npu-generate: the prompt has no tokens\n");
        free(ids);
        return 2;
    }
    if (force_ids && parse_ids(force_ids, &force, &nforce, "--force-ids")) {
        free(ids);
        return 2;
    }
    if (force && nforce < (int)max_new) {
        fprintf(stderr, "npu-generate: --force-ids has %d ids for --max-new-tokens %d\n", nforce,
                (int)max_new);
        free(ids);
        free(force);
        return 2;
    }
    if (calib_ids && parse_ids(calib_ids, &calib, &ncalib, "--calib-ids")) {
        free(ids);
        free(force);
        return 2;
    }
    o.calib_ids = calib;
    o.n_calib_ids = ncalib;
    int rc = 1;
    struct npu_llm *m = NULL;
    struct run_ctx r = {.ids_only = ids_only, .quiet = quiet, .cap = (int)max_new, .dir = dir};
    enum npu_status st = npu_llm_load(dir, &o, &m);
    if (st) {
        fprintf(stderr, "npu-generate: cannot load %s: %s\n", dir, npu_status_str(st));
        goto out;
    }
    const struct npu_llm_info *in = npu_llm_get_info(m);
    r.vocab = in->vocab;
    r.got = malloc(((size_t)max_new + 1) * sizeof(int32_t));
    if (logits_out)
        r.logits = malloc(((size_t)max_new + 1) * (size_t)in->vocab * sizeof(float));
    if (!r.got || (logits_out && !r.logits)) {
        fprintf(stderr, "npu-generate: out of memory\n");
        goto out;
    }
    if (!quiet)
        fprintf(stderr,
                "model: %s, %d layers, hidden %d, %d heads (%d key/value), vocab %d; backend %s\n"
                "KV cache: %zu bytes (max context %d tokens, fp32)\n",
                in->architecture, in->n_layers, in->hidden, in->n_heads, in->n_kv_heads, in->vocab,
                in->backend, in->kv_cache_bytes, in->max_context);
    if (!quiet) {
        fprintf(stderr, "end of sequence:");
        for (int i = 0; i < in->n_eos; i++)
            fprintf(stderr, " %lld", (long long)in->eos_ids[i]);
        fprintf(stderr, in->n_eos ? " (%s)\n" : " none (%s)\n",
                in->eos_source ? in->eos_source : "config.json");
    }
    if (!quiet && prompt) {
        fprintf(stderr, "prompt ids (tokenizer.json, special tokens added):");
        for (int i = 0; i < n; i++)
            fprintf(stderr, " %d", ids[i]);
        fputc('\n', stderr);
    }
    if (!quiet && !strcmp(in->weights, "w8a8"))
        fprintf(stderr,
                "weights: w8a8 (int8 per output channel; int8 activations per tensor, "
                "calibrated on %d token(s) in %.3f s)\n",
                in->calib_tokens, in->calib_s);
    if (!quiet && strcmp(in->backend, "cpu"))
        fprintf(stderr,
                "decode program: %d NPU job(s), %d CPU step(s) (%d MatMul), %d conversion(s); "
                "attention on the %s (%d of %d layers on the CPU); %d cache slots; %d of %d "
                "cache inputs resident on the device (%zu bytes), %d written in place by "
                "the program; V cache as %s; %d k/v output(s)\n",
                in->decode_npu_jobs, in->decode_cpu_steps, in->decode_cpu_matmuls,
                in->decode_converts, in->decode_cpu_attention ? "CPU" : "NPU",
                in->decode_cpu_attention, in->n_layers, in->cache_slots, in->decode_state_inputs,
                2 * in->n_layers, in->decode_state_bytes, in->decode_state_writes,
                in->decode_v_slots ? "[slots, heads x head_dim]" : "[heads, slots, head_dim]",
                in->decode_kv_outputs);
    if (!quiet && strcmp(in->backend, "cpu") && !in->decode_npu_jobs &&
        npu_build_partition_mode(NULL) == NPU_PARTITION_COST) {
        /* said, not silent: a board whose measured CPU wins every node runs all on the CPU */
        struct npu_build_options bo = {.on_device = strcmp(in->backend, "sim") != 0};
        enum npu_cpu_cost_mode cm = NPU_CPU_COST_BOARD;
        (void)npu_build_cpu_cost_mode(&bo, &cm);
        fprintf(stderr,
                "note: the decode step has no NPU job: the cost partition (CPU priced: %s) keeps "
                "every node on the CPU%s\n",
                npu_cpu_cost_mode_name(cm),
                cm == NPU_CPU_COST_MEASURED
                    ? "; NPU_CPU_COST=board prices the CPU by the RK3588 CPU model instead"
                    : "; NPU_PARTITION=supported puts every node the NPU takes on the NPU");
    }
    struct npu_llm_stats s;
    st = npu_llm_generate(m, ids, n, (int)max_new, &sp, force, on_token, &r, &s);
    if (r.stream)
        gen_text_stream_close(r.stream);
    if (st) {
        fprintf(stderr, "npu-generate: generation failed: %s\n", npu_status_str(st));
        goto out;
    }
    if (ids_only) {
        fputs("ids:", stdout);
        for (int i = 0; i < r.n_got; i++)
            printf(" %d", r.got[i]);
        fputc('\n', stdout);
    }
    if (!quiet) {
        const char *label = npu_timing_model()->label;
        int steps = s.new_tokens > 1 ? s.new_tokens - 1 : 0;
        fprintf(stderr, "prompt tokens: %d; prefill %.3f ms host", s.prompt_tokens,
                s.prefill_host_s * 1e3);
        if (s.modeled)
            fprintf(stderr,
                    ", %.3f ms modeled NPU (%s) + %.4f ms modeled CPU steps (%s) = %.3f ms "
                    "modeled in series",
                    s.prefill_modeled_s * 1e3, label, s.prefill_cpu_modeled_s * 1e3, s.cpu_model,
                    (s.prefill_modeled_s + s.prefill_cpu_modeled_s) * 1e3);
        if (s.prefill_kv_converted || s.prefill_kv_device_copies)
            fprintf(stderr,
                    "; prefill k/v outputs: %d converted, %d copied on the device (%llu bytes)",
                    s.prefill_kv_converted, s.prefill_kv_device_copies,
                    (unsigned long long)s.prefill_kv_copy_bytes);
        fprintf(stderr, "; compile %.3f s\n", s.compile_s);
        fprintf(stderr, "decode: %d token(s), %d step(s)", s.new_tokens, steps);
        if (steps) {
            fprintf(stderr, ", %.3f ms/token host", s.decode_host_s * 1e3 / steps);
            if (s.modeled)
                fprintf(stderr,
                        ", %.3f ms/token modeled NPU (%s) + %.4f ms/token modeled CPU steps (%s; "
                        "%d ops and %d conversions at %d cache slots, the CPU attention over "
                        "%.1f slots read a step) = %.3f ms/token modeled in series",
                        s.decode_modeled_s * 1e3 / steps, label,
                        s.decode_cpu_modeled_s * 1e3 / steps, s.cpu_model, in->decode_cpu_model_ops,
                        in->decode_cpu_model_converts, in->cache_slots,
                        s.decode_cpu_attn_slots / steps,
                        (s.decode_modeled_s + s.decode_cpu_modeled_s) * 1e3 / steps);
            if (s.decode_npu_wait_s > 0)
                fprintf(stderr, "; host work besides the NPU %.3f ms/token",
                        (s.decode_host_s - s.decode_npu_wait_s) * 1e3 / steps);
            fprintf(stderr, "; host CPU time of the loop's thread %.3f ms/token",
                    s.decode_host_cpu_s * 1e3 / steps);
            if (s.decode_argmax_steps)
                fprintf(stderr,
                        "; %d step(s) read the token as the argmax of the logits in the NPU layout",
                        s.decode_argmax_steps);
        }
        fputc('\n', stderr);
        if (steps && strcmp(in->backend, "cpu"))
            fprintf(stderr,
                    "decode conversions: %.0f bytes/token (%.1f inputs converted, %.1f state "
                    "inputs resident per token)\n",
                    (double)s.decode_convert_bytes / steps,
                    (double)s.decode_inputs_converted / steps,
                    (double)s.decode_inputs_resident / steps);
        if (strcmp(in->backend, "cpu"))
            fprintf(stderr, "programs: %d compiled, %d from the compile cache%s\n",
                    in->programs_compiled, in->programs_from_cache,
                    o.no_cache ? " (--no-cache)" : "");
        if (in->decode_cores > 1)
            fprintf(stderr,
                    "decode split over %d cores: %u of %u tasks in %u multi-core submit(s), %u "
                    "submit(s) in all\n",
                    in->decode_cores, in->decode_split_tasks, in->decode_tasks,
                    in->decode_split_submits, in->decode_submits);
        if (s.stop == NPU_LLM_STOP_EOS)
            fprintf(stderr,
                    "stopped: end of sequence (token %d, %s's eos_token_id) after %d new "
                    "token(s)\n",
                    r.got[r.n_got - 1], in->eos_source ? in->eos_source : "config.json",
                    s.new_tokens);
        else
            fprintf(stderr, "stopped: limit of %d new token(s) reached\n", (int)max_new);
    }
    if (logits_out) {
        struct npu_tensor t = {
            .dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {r.n_got, in->vocab}, .data = r.logits};
        if (npu_npy_write(logits_out, &t)) {
            fprintf(stderr, "npu-generate: cannot write %s\n", logits_out);
            goto out;
        }
    }
    rc = 0;
out:
    npu_llm_free(m);
    free(r.got);
    free(r.logits);
    free(ids);
    free(force);
    free(calib);
    return rc;
}
