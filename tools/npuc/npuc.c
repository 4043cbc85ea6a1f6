/* SPDX-License-Identifier: MIT */
/*
 * npuc: the OpenNPU compiler driver. Compiles a model (.onnx or .npuir)
 * through the whole pipeline - front-end passes, partitioning by cost,
 * lowering, codegen - and writes the compiled artifact (.npub); prints the
 * lowered IR (--emit=ir, the text that codegen route b compiles again), the
 * partition decisions (--explain) or a summary of an existing artifact.
 * `npuc --help` is the manual.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "npu/npu-build.h"
#include "npu/npu-evidence.h"
#include "npu/npu-npub.h"
#include "npu/npu-partition.h"
#include "npu/npu-passes.h"
#include "npu/npu-quant.h"
#include "npu/npu-timing.h"

/* -o must name a new path or an existing regular file that is not the model:
 * the artifact is written to a temporary file and renamed over OUT, which
 * would destroy the source model, and would replace a device node, FIFO,
 * /dev/stdout or a symbolic link by a regular file. Checked before compiling;
 * npu_npub_save checks the type again just before the rename. */
static bool
output_ok(const char *out, const char *model)
{
    struct stat so, sm;
    if (lstat(out, &so)) {
        if (errno == ENOENT)
            return true;
        fprintf(stderr, "npuc: -o %s: %s\n", out, strerror(errno));
        return false;
    }
    if (S_ISLNK(so.st_mode)) {
        fprintf(stderr,
                "npuc: -o %s is a symbolic link; npuc replaces only a regular file or writes a "
                "new one (give the link's target, or another path)\n",
                out);
        return false;
    }
    if (!S_ISREG(so.st_mode)) {
        fprintf(stderr,
                "npuc: -o %s exists and is not a regular file (%s); npuc would replace it by a "
                "regular file\n",
                out,
                S_ISDIR(so.st_mode)    ? "a folder"
                : S_ISCHR(so.st_mode)  ? "a character device"
                : S_ISBLK(so.st_mode)  ? "a block device"
                : S_ISFIFO(so.st_mode) ? "a FIFO"
                : S_ISSOCK(so.st_mode) ? "a socket"
                                       : "not a file");
        return false;
    }
    if (!stat(model, &sm) && sm.st_dev == so.st_dev && sm.st_ino == so.st_ino) {
        fprintf(stderr, "npuc: -o %s is the input model %s; refusing to overwrite it\n", out,
                model);
        return false;
    }
    return true;
}

static const char usage[] =
    "usage: npuc MODEL [-o OUT.npub] [--emit=ir] [--explain] [options]\n"
    "       npuc --info FILE.npub\n"
    "\n"
    "Compiles MODEL (.onnx, or .npuir IR text) for the RK3588 NPU: front-end passes,\n"
    "partitioning by cost, lowering to rk.* ops, memory planning and register-command\n"
    "codegen. Without -o it prints a summary of the compiled program.\n"
    "\n"
    "    -o, --output FILE     write the compiled artifact (.npub) to FILE\n"
    "        --emit=ir         print the lowered IR (text form, docs/ir.md) on stdout;\n"
    "                          compiling that text again gives the same register bytes\n"
    "        --explain         print, per node: the placement, the NPU cost (modeled,\n"
    "                          timing model v2), the CPU cost (by the --cpu-cost model), the\n"
    "                          conversion and submit costs, and why the NPU cannot take it\n"
    "        --info            print what an artifact holds (header, options, model\n"
    "                          metadata, program)\n"
    "    -d, --dims LIST       symbolic input dims, e.g. batch=1,seq=64 (default 1)\n"
    "    -p, --partition MODE  cost (default), supported (every node the NPU supports), cpu\n"
    "        --timing NAME     timing model of the estimates: v2 (default,\n"
    "                          docs/timing-model-v2.md), v2-low, v2-high (its bounds), v1;\n"
    "                          sets what $NPU_TIMING would\n"
    "        --cpu-cost MODEL  CPU costs of partitioning by cost: board (RK3588 CPU model v1,\n"
    "                          modeled, the same on every host), measured (timed on this\n"
    "                          host: compile on the board), auto (default: $NPU_CPU_COST if\n"
    "                          set, else board, since an artifact is for the board)\n"
    "    -t, --threads N       CPU threads the CPU ops will use (CPU costs assume them)\n"
    "        --cache-dir DIR   compile cache (also keeps measured CPU costs)\n"
    "        --no-fusion       skip the front-end fusions\n"
    "        --dump-after LIST print the IR (text form) on stderr after these passes: 'all' or\n"
    "                          a comma list of front-end and back-end pass names; 'list'\n"
    "                          names them (compiles without the cache)\n"
    "        --mtx-style       MTX Appendix A.1 style matmul tasks (default: RKNN style)\n"
    "        --rknn-tiling     RKNN's single-core tiling rule when it applies\n"
    "        --fp16-partials   fp16 partial sums for channel-block accumulation\n"
    "        --max-tasks N     cap on tasks per conv/matmul\n"
    "        --print-program   list the program's steps and jobs\n"
    "        --evidence        print 'evidence: V=n M=n O=n T=n': the program's NPU tasks\n"
    "                          counted by the weakest register pattern each uses in the\n"
    "                          evidence ledger (docs/evidence.md); with --explain also a\n"
    "                          per-op table: placement, tasks, weakest level, the pattern\n"
    "                          that decided it and the T patterns the op uses\n"
    "        --hw-profile P    register patterns the program may use: fast (every pattern\n"
    "                          the back end knows) or verified (only tasks whose every write\n"
    "                          the ledger covers at level V, M or O; other nodes go to the\n"
    "                          CPU); default $NPU_HW_PROFILE, else fast (npu-run and the\n"
    "                          plugin default to verified on rknpu and rocket)\n"
    "        --quantize MODE   post-training quantisation (docs/quantisation.md): w8a8\n"
    "                          (int8 weights per channel, int8 activations) or hybrid (w8a8\n"
    "                          but layers under --hybrid-threshold stay float) or w16a16i\n"
    "                          (int16 symmetric weights and activations, the int16 CNA path)\n"
    "        --dataset LIST    calibration samples: one a line, the inputs' .npy files in\n"
    "                          input order separated by spaces (at least 4 samples)\n"
    "        --algorithm A     activation ranges: minmax (default), percentile, mse, kl\n"
    "        --per-channel     one weight scale per output channel (default)\n"
    "        --per-layer       one weight scale per layer\n"
    "        --hybrid-threshold COS  single-layer cosine under which hybrid keeps a layer\n"
    "                          float (default 0.999)\n"
    "        --keep-float LIST comma list of layers (node or output names) kept float\n"
    "        --quantized-outputs  outputs that dequantise a quantised layer stay int8 /\n"
    "                          int16 with their scale and zero point (recorded in the\n"
    "                          artifact, GstNpuTensor scale / zero_point)\n"
    "        --accuracy FILE   per-layer cosine and relative error against fp32, entire and\n"
    "                          single, worst first: printed, and written to FILE as JSON\n"
    "        --emit-qdq FILE   also write the quantised graph as a QDQ ONNX model (the same\n"
    "                          arithmetic, for ONNX Runtime or any QDQ importer)\n"
    "        --stats           print the compile time (wall and CPU) and the peak memory\n"
    "                          (getrusage maxrss) on stderr; with -o a second line\n"
    "                          once the .npub is written\n"
    "    -q, --quiet           no summary\n"
    "    -h, --help            this text\n"
    "\n"
    "Exit status: 0 success, 1 compile or I/O failure, 2 command line.\n"
    "Example:\n"
    "    npuc siglip.onnx -o siglip.npub --explain\n";

/* The pass names --dump-after takes: the front end's, then the back end's. */
static void
print_pass_names(FILE *f)
{
    fputs("front end:", f);
    for (const char *const *p = npu_compile_pass_names(); *p; p++)
        fprintf(f, " %s", *p);
    fputs("\nback end: ", f);
    for (const char *const *p = npu_backend_pass_names(); *p; p++)
        fprintf(f, " %s", *p);
    fputs("\n", f);
}

static bool
pass_known(const char *name, size_t len)
{
    const char *const *lists[2] = {npu_compile_pass_names(), npu_backend_pass_names()};
    for (int l = 0; l < 2; l++)
        for (const char *const *p = lists[l]; *p; p++)
            if (strlen(*p) == len && !strncmp(*p, name, len))
                return true;
    return false;
}

/* "all", or a comma list of known pass names. */
static bool
dump_list_ok(const char *list)
{
    if (!strcmp(list, "all"))
        return true;
    for (const char *p = list;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (!len || !pass_known(p, len))
            return false;
        if (!e)
            return true;
        p = e + 1;
    }
}

static void
summary(const struct npu_program *p, FILE *f)
{
    int cpu = 0, conv = 0;
    unsigned tasks = 0;
    double modeled = 0;
    for (int i = 0; i < p->n_steps; i++) {
        cpu += p->steps[i].kind == NPU_STEP_CPU;
        conv += p->steps[i].kind == NPU_STEP_CONVERT;
    }
    for (int j = 0; j < p->n_jobs; j++) {
        tasks += p->jobs[j].n_tasks;
        modeled += p->jobs[j].modeled_s;
    }
    fprintf(f,
            "program: %d steps (%d CPU, %d NPU jobs with %u tasks, %d conversions), "
            "%d tensors\n",
            p->n_steps, cpu, p->n_jobs, tasks, conv, p->n_tensors);
    fprintf(f, "memory:  weights %llu B, activations %llu B (NPU), host arena %llu B",
            (unsigned long long)p->weights_bytes, (unsigned long long)p->act_bytes,
            (unsigned long long)p->host_bytes);
    if (p->state_bytes)
        fprintf(f, ", state %llu B (NPU, kept across runs)", (unsigned long long)p->state_bytes);
    fputc('\n', f);
    fprintf(f, "NPU:     %.3f ms per run, modeled (%s), compile-time estimate\n", modeled * 1e3,
            npu_timing_model()->label);
}

/* Per-op figures of --evidence --explain. */
struct ev_op {
    const char *name;
    unsigned tasks;
    enum npu_evidence_level weakest;
    const struct npu_evidence_entry *decided; /* the entry of the first write at weakest */
    uint16_t decided_reg;                     /* its register (for an uncovered write) */
    uint32_t decided_value;                   /* and the value written */
    const struct npu_evidence_entry *t[8];    /* T entries used, first 8 */
    unsigned n_t;
};

static struct ev_op *
ev_op_of(struct ev_op *ops, unsigned *n, unsigned cap, const char *name)
{
    for (unsigned i = 0; i < *n; i++)
        if (!strcmp(ops[i].name, name))
            return &ops[i];
    if (*n == cap)
        return NULL;
    ops[*n] = (struct ev_op){.name = name, .weakest = NPU_EVIDENCE_V};
    return &ops[(*n)++];
}

/* Counts the program's NPU tasks by their weakest ledger level; with explain,
 * a table per op (the IR node each task computes) and every uncovered write
 * as an "uncovered:" line (scripts/evidence-survey.py reads those). */
static int
evidence(const struct npu_program *p, const struct npu_partition_report *rep, bool explain, FILE *f)
{
    unsigned count[NPU_EVIDENCE_LEVELS] = {0};
    unsigned cap = 4096, n_ops = 0;
    struct ev_op *ops = calloc(cap, sizeof(*ops));
    struct npu_evidence_write *w = NULL;
    size_t wcap = 0;
    int rc = 1;
    if (!ops)
        goto out;
    for (int s = 0; s < p->n_steps; s++) {
        const struct npu_prog_step *st = &p->steps[s];
        if (st->kind != NPU_STEP_NPU_JOB)
            continue;
        const struct npu_prog_job *j = &p->jobs[st->job];
        for (uint32_t t = 0; t < j->n_tasks; t++) {
            const struct npu_prog_task *tk = &j->tasks[t];
            size_t nq = (size_t)tk->n_body + 4; /* body and the 4-qword tail */
            if (tk->start + nq > j->n_qwords) {
                fprintf(stderr, "npuc: job %d task %u: segment outside the regcmd image\n", st->job,
                        t);
                goto out;
            }
            if (nq > wcap) {
                free(w);
                wcap = nq;
                w = malloc(wcap * sizeof(*w));
                if (!w)
                    goto out;
            }
            enum npu_evidence_level lv;
            size_t nw = 0;
            if (npu_evidence_classify_task(j->regcmd + tk->start, nq, w, wcap, &nw, &lv))
                goto out;
            count[lv]++;
            if (!explain)
                continue;
            const char *name = tk->name ? tk->name : st->name ? st->name : "?";
            struct ev_op *o = ev_op_of(ops, &n_ops, cap, name);
            if (!o)
                continue;
            if (lv < o->weakest || !o->tasks) {
                o->weakest = lv;
                o->decided = NULL;
                o->decided_reg = 0;
                for (size_t k = 0; k < nw && k < wcap; k++)
                    if ((w[k].entry ? w[k].entry->level : NPU_EVIDENCE_NONE) == lv) {
                        o->decided = w[k].entry;
                        o->decided_reg = w[k].offset;
                        o->decided_value = w[k].value;
                        break;
                    }
            }
            o->tasks++;
            for (size_t k = 0; k < nw; k++) {
                const struct npu_evidence_entry *e = w[k].entry;
                if (!e) {
                    fprintf(f, "uncovered: %s 0x%08x %s\n", npu_evidence_reg_name(w[k].offset),
                            w[k].value, name);
                    continue;
                }
                if (e->level != NPU_EVIDENCE_T)
                    continue;
                bool seen = false;
                for (unsigned i = 0; i < o->n_t; i++)
                    seen |= o->t[i] == e;
                if (!seen && o->n_t < NPU_ARRAY_SIZE(o->t))
                    o->t[o->n_t++] = e;
            }
        }
    }
    if (explain) {
        fprintf(f, "%-40s %-5s %6s %5s  %-40s %s\n", "op (IR node)", "place", "tasks", "level",
                "decided by", "T patterns");
        for (unsigned i = 0; i < n_ops; i++) {
            char dec[96];
            if (ops[i].decided)
                snprintf(dec, sizeof(dec), "%s=0x%x", ops[i].decided->id, ops[i].decided_value);
            else
                snprintf(dec, sizeof(dec), "%s=0x%x (no entry)",
                         npu_evidence_reg_name(ops[i].decided_reg), ops[i].decided_value);
            fprintf(f, "%-40s %-5s %6u %5s  %-40s", ops[i].name, "npu", ops[i].tasks,
                    npu_evidence_level_name(ops[i].weakest), dec);
            for (unsigned k = 0; k < ops[i].n_t; k++)
                fprintf(f, " %s", ops[i].t[k]->id);
            fputs("\n", f);
        }
        /* the nodes the partition kept on the CPU, and the pattern when the verified
         * profile refused them */
        static const char tag[] = "hw-profile verified: ";
        for (int i = 0; rep && i < rep->n; i++) {
            const struct npu_partition_node *pn = &rep->nodes[i];
            if (pn->device != NPU_DEVICE_CPU)
                continue;
            const char *pat = strstr(pn->why, "pattern ");
            char dec[64] = "-";
            if (!strncmp(pn->why, tag, sizeof(tag) - 1) && pat)
                sscanf(pat + 8, "%63s", dec);
            fprintf(f, "%-40s %-5s %6u %5s  %s\n", pn->name[0] ? pn->name : "(unnamed)", "cpu", 0u,
                    "-", dec);
        }
    }
    fprintf(f, "evidence: V=%u M=%u O=%u T=%u", count[NPU_EVIDENCE_V], count[NPU_EVIDENCE_M],
            count[NPU_EVIDENCE_O], count[NPU_EVIDENCE_T]);
    if (count[NPU_EVIDENCE_NONE])
        fprintf(f, " none=%u", count[NPU_EVIDENCE_NONE]);
    fputs("\n", f);
    rc = 0;
out:
    free(w);
    free(ops);
    return rc;
}

/* --quantize: the build's transform hook (after the front-end passes). */
struct quant_cli {
    struct npu_quant_options o;
    const char *dataset, *accuracy, *qdq;
    bool quiet;
    int failed; /* 1: the quantiser failed (its reason is logged) */
};

static enum npu_status
quantize_hook(struct npu_graph *g, void *user)
{
    struct quant_cli *q = user;
    struct npu_quant_dataset *d = NULL;
    struct npu_quant_report rep;
    enum npu_status st = npu_quant_dataset_load(q->dataset, g, &d);
    if (st) {
        q->failed = 1;
        return st;
    }
    q->o.data = d;
    q->o.accuracy = q->accuracy != NULL;
    st = npu_quantize(g, &q->o, &rep);
    q->o.data = NULL;
    npu_quant_dataset_free(d);
    if (st) {
        q->failed = 1;
        return st;
    }
    if (q->accuracy) {
        npu_quant_report_print(&rep, stdout);
        st = npu_quant_report_write_json(&rep, q->accuracy);
    } else if (!q->quiet) {
        printf("quantised %d of %d layers (%s, %s) in %.3f s (calibration %.3f s)\n",
               rep.nquantised, rep.nlayers, rep.mode, rep.algo, rep.total_s, rep.calib_s);
    }
    npu_quant_report_free(&rep);
    if (!st && q->qdq && (st = npu_quant_emit_qdq(g, q->qdq)))
        q->failed = 1;
    else if (!st && q->qdq && !q->quiet)
        printf("wrote %s (QDQ ONNX)\n", q->qdq);
    return st;
}

static int
info(const char *path)
{
    char err[512];
    struct npu_npub *a = NULL;
    if (npu_npub_load(path, &a, err, sizeof(err))) {
        fprintf(stderr, "npuc: %s: %s\n", path, err);
        return 1;
    }
    const struct npu_npub_meta *m = npu_npub_get_meta(a);
    printf("artifact: %s, %zu bytes, format %u, made by %s\n", path, npu_npub_file_bytes(a),
           m->format_version, m->compiler);
    printf("source:   %s (content hash %016llx)\n", m->source[0] ? m->source : "?",
           (unsigned long long)m->model_hash);
    printf("options:  %s (hash %016llx)\n", m->options[0] ? m->options : "-",
           (unsigned long long)m->options_hash);
    /* model metadata, one entry a line; long values shortened for the eye */
    for (uint32_t i = 0; i < m->n_props; i++) {
        size_t vl = strlen(m->props[i].value);
        printf("%s %s = %.*s%s\n", i ? "         " : "metadata:", m->props[i].key,
               (int)(vl > 72 ? 72 : vl), m->props[i].value, vl > 72 ? "..." : "");
    }
    summary(npu_npub_program(a), stdout);
    npu_npub_free(a);
    return 0;
}

/* --stats: what compiling cost, for compile-time work (docs/performance.md). Wall time of
 * npu_build (load, passes, partition, lowering, codegen), the process's CPU time so far and
 * its peak resident memory. */
static void
print_stats(const struct npu_built *b, double wall_s)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) {
        fprintf(stderr, "stats: compile %.3f s wall\n", wall_s);
        return;
    }
    double cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                   (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    fprintf(stderr,
            "stats: compile %.3f s wall (build %.3f s), %.3f s CPU (process), peak memory "
            "%.1f MB (maxrss), %d steps, %d jobs\n",
            wall_s, b->compile_s, cpu_s, (double)ru.ru_maxrss / 1024.0, b->prog->n_steps,
            b->prog->n_jobs);
}

/* --stats with -o: the same figures once the .npub is written (the model's content hash
 * and the file included): what a compile to a file costs, where the line above is the
 * compile in memory. */
static void
print_written_stats(double wall_s)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return;
    double cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                   (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    fprintf(stderr,
            "stats: written %.3f s wall, %.3f s CPU (process), peak memory %.1f MB (maxrss)\n",
            wall_s, cpu_s, (double)ru.ru_maxrss / 1024.0);
}

int
main(int argc, char **argv)
{
    enum {
        O_EMIT = 256,
        O_EXPLAIN,
        O_INFO,
        O_CACHE,
        O_NOFUSE,
        O_MTX,
        O_RKNN,
        O_FP16P,
        O_MAXT,
        O_PRINT,
        O_CPUCOST,
        O_TIMING,
        O_DUMP,
        O_EVIDENCE,
        O_HWPROFILE,
        O_QUANT,
        O_DATASET,
        O_ALGO,
        O_PERCH,
        O_PERLAYER,
        O_HYBRID,
        O_KEEP,
        O_ACCURACY,
        O_QDQ,
        O_STATS,
        O_QOUT
    };
    static const struct option lopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"emit", required_argument, NULL, O_EMIT},
        {"explain", no_argument, NULL, O_EXPLAIN},
        {"info", no_argument, NULL, O_INFO},
        {"dims", required_argument, NULL, 'd'},
        {"partition", required_argument, NULL, 'p'},
        {"threads", required_argument, NULL, 't'},
        {"cache-dir", required_argument, NULL, O_CACHE},
        {"no-fusion", no_argument, NULL, O_NOFUSE},
        {"mtx-style", no_argument, NULL, O_MTX},
        {"rknn-tiling", no_argument, NULL, O_RKNN},
        {"fp16-partials", no_argument, NULL, O_FP16P},
        {"max-tasks", required_argument, NULL, O_MAXT},
        {"print-program", no_argument, NULL, O_PRINT},
        {"quiet", no_argument, NULL, 'q'},
        {"cpu-cost", required_argument, NULL, O_CPUCOST},
        {"timing", required_argument, NULL, O_TIMING},
        {"dump-after", required_argument, NULL, O_DUMP},
        {"evidence", no_argument, NULL, O_EVIDENCE},
        {"hw-profile", required_argument, NULL, O_HWPROFILE},
        {"quantize", required_argument, NULL, O_QUANT},
        {"dataset", required_argument, NULL, O_DATASET},
        {"algorithm", required_argument, NULL, O_ALGO},
        {"per-channel", no_argument, NULL, O_PERCH},
        {"per-layer", no_argument, NULL, O_PERLAYER},
        {"hybrid-threshold", required_argument, NULL, O_HYBRID},
        {"keep-float", required_argument, NULL, O_KEEP},
        {"accuracy", required_argument, NULL, O_ACCURACY},
        {"emit-qdq", required_argument, NULL, O_QDQ},
        {"quantized-outputs", no_argument, NULL, O_QOUT},
        {"stats", no_argument, NULL, O_STATS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct npu_build_options bo = {.no_cache = true, .strict_dims = true};
    const char *out = NULL;
    bool emit_ir = false, explain = false, want_info = false, print = false, quiet = false;
    bool want_evidence = false, quantize = false;
    struct quant_cli qc = {.o = {.mode = NPU_QUANT_W8A8}};
    bool want_stats = false;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "o:d:p:t:qh", lopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case O_EMIT:
            if (strcmp(optarg, "ir")) {
                fprintf(stderr, "npuc: --emit=%s: only --emit=ir exists\n", optarg);
                return 2;
            }
            emit_ir = true;
            break;
        case O_EXPLAIN: explain = true; break;
        case O_INFO: want_info = true; break;
        case 'd': bo.dim_values = optarg; break;
        case 'p':
            if (!strcmp(optarg, "cost"))
                bo.partition = NPU_PARTITION_COST;
            else if (!strcmp(optarg, "supported"))
                bo.partition = NPU_PARTITION_SUPPORTED;
            else if (!strcmp(optarg, "cpu"))
                bo.partition = NPU_PARTITION_CPU;
            else {
                fprintf(stderr, "npuc: --partition %s: use cost, supported or cpu\n", optarg);
                return 2;
            }
            break;
        case 't':
            bo.cpu_threads = (int)strtol(optarg, &end, 10);
            if (*end || bo.cpu_threads < 0 || bo.cpu_threads > 1024) {
                fprintf(stderr, "npuc: --threads %s: a count from 0 (all) to 1024\n", optarg);
                return 2;
            }
            break;
        case O_CACHE:
            bo.cache_dir = optarg;
            bo.no_cache = false;
            break;
        case O_NOFUSE: bo.no_fusion = true; break;
        case O_MTX: bo.backend.mtx_style = 1; break;
        case O_RKNN: bo.backend.rknn_tiling = 1; break;
        case O_FP16P: bo.backend.fp16_partials = 1; break;
        case O_MAXT: {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 4095) {
                fprintf(stderr, "npuc: --max-tasks %s: 1 to 4095\n", optarg);
                return 2;
            }
            bo.backend.max_tasks = (unsigned)v;
            break;
        }
        case O_PRINT: print = true; break;
        case O_TIMING:
            if (npu_timing_model_select(optarg)) {
                fprintf(stderr, "npuc: --timing %s: use %s\n", optarg, npu_timing_model_names());
                return 2;
            }
            break;
        case O_EVIDENCE: want_evidence = true; break;
        case O_HWPROFILE:
            if (npu_hw_profile_parse(optarg, &bo.backend.hw_profile)) {
                fprintf(stderr, "npuc: --hw-profile %s: use fast, verified or auto\n", optarg);
                return 2;
            }
            break;
        case O_STATS: want_stats = true; break;
        case O_CPUCOST:
            if (npu_cpu_cost_mode_parse(optarg, &bo.cpu_cost)) {
                fprintf(stderr, "npuc: --cpu-cost %s: use board, measured or auto\n", optarg);
                return 2;
            }
            break;
        case O_DUMP:
            if (!strcmp(optarg, "list")) {
                print_pass_names(stdout);
                return 0;
            }
            if (!dump_list_ok(optarg)) {
                fprintf(stderr, "npuc: --dump-after %s: unknown pass; the passes are:\n", optarg);
                print_pass_names(stderr);
                return 2;
            }
            bo.dump_after = optarg;
            bo.no_cache = true; /* a cache hit would compile nothing to dump */
            break;
        case O_QUANT:
            if (npu_quant_mode_parse(optarg, &qc.o.mode)) {
                fprintf(stderr, "npuc: --quantize %s: use w8a8, hybrid or w16a16i\n", optarg);
                return 2;
            }
            quantize = true;
            break;
        case O_DATASET: qc.dataset = optarg; break;
        case O_ALGO:
            if (npu_quant_algo_parse(optarg, &qc.o.algo)) {
                fprintf(stderr,
                        "npuc: --algorithm %s: unknown; use minmax, percentile, mse or kl\n",
                        optarg);
                return 2;
            }
            break;
        case O_PERCH:
            qc.o.per_layer = false;
            qc.o.per_channel = true;
            break;
        case O_PERLAYER: qc.o.per_layer = true; break;
        case O_HYBRID:
            qc.o.hybrid_threshold = strtod(optarg, &end);
            if (*end || !(qc.o.hybrid_threshold > -1) || qc.o.hybrid_threshold > 1) {
                fprintf(stderr, "npuc: --hybrid-threshold %s: a cosine in (-1, 1]\n", optarg);
                return 2;
            }
            break;
        case O_KEEP: qc.o.keep_float = optarg; break;
        case O_QOUT: qc.o.quantised_outputs = true; break;
        case O_ACCURACY: qc.accuracy = optarg; break;
        case O_QDQ: qc.qdq = optarg; break;
        case 'q': quiet = true; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "npuc: %s\n%s", optind >= argc ? "no model given" : "one model only",
                usage);
        return 2;
    }
    const char *model = argv[optind];
    if (want_info)
        return info(model);
    size_t ml = strlen(model);
    if (ml > 5 && !strcmp(model + ml - 5, ".npub")) {
        fprintf(stderr, "npuc: %s is already compiled (use --info to inspect it)\n", model);
        return 2;
    }
    if (out && !output_ok(out, model))
        return 2;
    if (!quantize &&
        (qc.dataset || qc.accuracy || qc.o.keep_float || qc.qdq || qc.o.quantised_outputs)) {
        fprintf(stderr, "npuc: --dataset, --accuracy, --keep-float, --emit-qdq and "
                        "--quantized-outputs go with --quantize\n");
        return 2;
    }
    if (quantize) {
        if (!qc.dataset) {
            fprintf(stderr, "npuc: --quantize needs a calibration set (--dataset LIST.txt)\n");
            return 2;
        }
        FILE *df = fopen(qc.dataset, "r");
        if (!df) {
            fprintf(stderr, "npuc: --dataset %s: %s\n", qc.dataset, strerror(errno));
            return 2;
        }
        fclose(df);
        qc.o.threads = bo.cpu_threads;
        qc.quiet = quiet || emit_ir;
        bo.transform = quantize_hook;
        bo.transform_user = &qc;
        bo.no_cache = true;
    }

    struct npu_partition_report rep;
    memset(&rep, 0, sizeof(rep));
    bo.emit_ir = emit_ir ? stdout : NULL;
    bo.report = explain ? &rep : NULL;
    struct npu_built *b = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (npu_build(model, &bo, &b)) {
        fprintf(stderr, "npuc: %s: %s failed\n", model, qc.failed ? "quantisation" : "compilation");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (want_stats)
        print_stats(b, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    if (explain)
        npu_partition_report_print(&rep, stdout);
    if (print)
        npu_program_print(b->prog, stdout);
    int rc = 0;
    if (want_evidence && evidence(b->prog, explain ? &rep : NULL, explain, stdout))
        rc = 1;
    if (out) {
        char opt_text[1024];
        struct npu_npub_meta meta = {.options_hash =
                                         npu_build_options_hash(&bo, opt_text, sizeof(opt_text)),
                                     .options = opt_text,
                                     .source = model,
                                     .props = b->props,
                                     .n_props = b->n_props};
        if (quantize) { /* the artifact says how it was quantised (npuc --info) */
            size_t k = strlen(opt_text);
            snprintf(opt_text + k, sizeof(opt_text) - k, ";quantize=%s;algorithm=%s;weights=%s",
                     npu_quant_mode_name(qc.o.mode), npu_quant_algo_name(qc.o.algo),
                     qc.o.per_layer ? "per-layer" : "per-channel");
            if (qc.o.quantised_outputs) {
                k = strlen(opt_text);
                snprintf(opt_text + k, sizeof(opt_text) - k, ";outputs=quantised");
            }
            meta.options_hash ^= npu_fnv1a64(opt_text, strlen(opt_text));
        }
        if (npu_model_content_hash(model, &meta.model_hash) || npu_npub_save(b->prog, &meta, out)) {
            fprintf(stderr, "npuc: cannot write %s\n", out);
            rc = 1;
        } else if (want_stats) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            print_written_stats((double)(t1.tv_sec - t0.tv_sec) +
                                1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
        }
    }
    if (!quiet && !emit_ir) {
        summary(b->prog, stdout);
        if (out && !rc)
            printf("wrote %s (compiled in %.1f ms)\n", out, b->compile_s * 1e3);
    }
    npu_partition_report_free(&rep);
    npu_built_free(b);
    return rc;
}
