/* SPDX-License-Identifier: MIT */
/*
 * npu-build.c: model file -> compiled program (npu-build.h), with the compile
 * cache. The cache key needs the model's content, including external data,
 * before anything is imported (a hit skips the import too), so the model
 * file is read once here: hashed with XXH64, and - for ONNX - scanned with a
 * minimal protobuf walker that only follows ModelProto.graph (7) ->
 * GraphProto.initializer (5) -> TensorProto.external_data (13) ->
 * StringStringEntryProto key/value (1/2) to collect the "location" of every
 * external-data file, which is hashed too. The walker skips everything else
 * by its wire type without copying; anything malformed just ends the scan
 * (the importer reports the problem properly later).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver-priv.h"
#include "npu-hash.h"
#include "npu-pbscan.h"
#include "npu/npu-build.h"
#include "npu/npu-npub.h"
#include "npu/npu-onnx.h"
#include "npu/npu-passes.h"
#include "npu/npu-program-check.h"
#include "npu/npu-timing.h"

#define DOM "build"

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool
ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

bool
npu_driver_model_is(const char *path, const char *ext)
{
    static const unsigned char npub_magic[8] = {'N', 'P', 'U', 'B', 0x0d, 0x0a, 0x1a, 0x0a};
    unsigned char head[64];
    ssize_t n = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd >= 0 && !fstat(fd, &sb) && S_ISREG(sb.st_mode))
        n = read(fd, head, sizeof(head));
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return ends_with(path, ext);
    bool npub = n >= 8 && !memcmp(head, npub_magic, 8);
    const char *t = (const char *)head, *e = t + n;
    while (t < e && (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r'))
        t++;
    bool ir = ((size_t)(e - t) >= 12 && !memcmp(t, "# opennpu ir", 12)) ||
              ((size_t)(e - t) >= 7 && !memcmp(t, "graph \"", 7));
    if (!strcmp(ext, ".npub"))
        return npub;
    if (!strcmp(ext, ".npuir"))
        return ir;
    return ends_with(path, ext);
}

enum npu_status
npu_driver_check_nonempty(const char *path)
{
    struct stat sb;
    if (!stat(path, &sb) && S_ISREG(sb.st_mode) && sb.st_size == 0) {
        npu_err(DOM, "%s: the file is empty (not a model)", path);
        return NPU_ERR_CORRUPT;
    }
    return NPU_OK;
}

/* ---- content hash ----------------------------------------------------------------- */

struct locs {
    char **v;
    int n;
};

static void
add_loc(struct locs *l, const uint8_t *s, size_t n)
{
    for (int i = 0; i < l->n; i++)
        if (strlen(l->v[i]) == n && !memcmp(l->v[i], s, n))
            return;
    char **nv = realloc(l->v, sizeof(*nv) * (size_t)(l->n + 1));
    if (!nv)
        return;
    l->v = nv;
    if ((l->v[l->n] = strndup((const char *)s, n)))
        l->n++;
}

static void
scan_onnx(const uint8_t *data, size_t len, struct locs *l)
{
    struct npu_pb m = {data, data + len}, g, t, e, kv, sub;
    uint32_t f;
    while (npu_pb_next(&m, &f, &g, NULL)) {
        if (f != 7 || !g.p) /* ModelProto.graph */
            continue;
        while (npu_pb_next(&g, &f, &t, NULL)) {
            if (f != 5 || !t.p) /* GraphProto.initializer */
                continue;
            while (npu_pb_next(&t, &f, &e, NULL)) {
                if (f != 13 || !e.p) /* TensorProto.external_data */
                    continue;
                struct npu_pb key = {0}, val = {0};
                kv = e;
                while (npu_pb_next(&kv, &f, &sub, NULL)) {
                    if (f == 1)
                        key = sub;
                    else if (f == 2)
                        val = sub;
                }
                if (key.p && key.end - key.p == 8 && !memcmp(key.p, "location", 8) && val.p)
                    add_loc(l, val.p, (size_t)(val.end - val.p));
            }
        }
    }
}

/* Streams a file into the hash; false if it cannot be read. The mapping is populated in
 * one call: hashing a 372 MB model page by page took ~5,600 read faults (fault-around);
 * with it, the hash's share of npuc's samples on SigLIP-B/16 fell from 10% to 4%. */
static bool
hash_file(struct npu_xxh64_state *h, const char *path, const uint8_t **map, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0)
        return false;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        return false;
    }
    size_t n = (size_t)sb.st_size;
    void *m = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : NULL;
    close(fd);
    if (n && m == MAP_FAILED)
        return false;
    uint64_t sz = n;
    npu_xxh64_update(h, &sz, sizeof(sz));
    if (n)
        npu_xxh64_update(h, m, n);
    if (map) {
        *map = m;
        *len = n;
    } else if (n) {
        munmap(m, n);
    }
    return true;
}

enum npu_status
npu_model_content_hash(const char *path, uint64_t *out)
{
    struct npu_xxh64_state h;
    const uint8_t *map = NULL;
    size_t len = 0;
    npu_xxh64_init(&h, 0x6d6f64656c);
    if (!hash_file(&h, path, &map, &len)) {
        npu_err(DOM, "%s: cannot read: %s", path, strerror(errno));
        return NPU_ERR_IO;
    }
    struct locs l = {0};
    if (npu_driver_model_is(path, ".npuir")) {
        l.v = malloc(sizeof(char *));
        if (l.v && (l.v[0] = malloc(strlen(path) + 8))) {
            sprintf(l.v[0], "%s.bin", path);
            l.n = 1;
        }
    } else if (map) {
        scan_onnx(map, len, &l);
    }
    if (map)
        munmap((void *)map, len);
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash)
        slash[1] = 0;
    for (int i = 0; i < l.n; i++) {
        npu_xxh64_update(&h, l.v[i], strlen(l.v[i]) + 1);
        char full[4096];
        bool abs = l.v[i][0] == '/';
        if (abs || strstr(l.v[i], "..") || !dir)
            snprintf(full, sizeof(full), "%s", abs ? l.v[i] : "");
        else
            snprintf(full, sizeof(full), "%s%s", slash ? dir : "", l.v[i]);
        if (!full[0] || !hash_file(&h, full, NULL, NULL))
            npu_xxh64_update(&h, "missing", 8);
        free(l.v[i]);
    }
    free(l.v);
    free(dir);
    *out = npu_xxh64_digest(&h);
    return NPU_OK;
}

enum npu_partition_mode
npu_build_partition_mode(const struct npu_build_options *o)
{
    if (o && o->partition != NPU_PARTITION_COST)
        return o->partition;
    const char *e = getenv(NPU_PARTITION_ENV);
    if (e && !strcmp(e, "supported"))
        return NPU_PARTITION_SUPPORTED;
    if (e && !strcmp(e, "cpu"))
        return NPU_PARTITION_CPU;
    if (e && e[0] && strcmp(e, "cost"))
        npu_warn(DOM, "%s=%s: not cost, supported or cpu; using cost", NPU_PARTITION_ENV, e);
    return NPU_PARTITION_COST;
}

enum npu_status
npu_build_cpu_cost_mode(const struct npu_build_options *o, enum npu_cpu_cost_mode *out)
{
    return npu_cpu_cost_mode_resolve(o ? o->cpu_cost : NPU_CPU_COST_AUTO, o && o->on_device, out);
}

uint64_t
npu_build_options_hash(const struct npu_build_options *o, char *text, size_t len)
{
    static const struct npu_build_options none;
    if (!o)
        o = &none;
    char buf[1024];
    /* the CPU cost model decides the program only when partitioning by cost */
    enum npu_partition_mode pm = npu_build_partition_mode(o);
    enum npu_cpu_cost_mode cm;
    const char *cpu_cost = pm != NPU_PARTITION_COST                    ? "-"
                           : npu_build_cpu_cost_mode(o, &cm) == NPU_OK ? npu_cpu_cost_mode_name(cm)
                                                                       : "invalid";
    snprintf(buf, sizeof(buf),
             "dims=%s;fusion=%d;partition=%d;threads=%d;mtx=%d;fp16_partials=%d;rknn_tiling=%d;"
             "max_tasks=%u;no_act_fusion=%d;cpu_cost=%s",
             o->dim_values ? o->dim_values : "", !o->no_fusion, (int)pm, o->cpu_threads,
             o->backend.mtx_style, o->backend.fp16_partials, o->backend.rknn_tiling,
             o->backend.max_tasks, (int)o->backend.no_act_fusion, cpu_cost);
    /* the timing model prices the partition and the jobs' estimates; v1 keys stay as
     * they were before v2 existed */
    const struct npu_timing_model *tm = npu_timing_model();
    if (tm->version != 1) {
        size_t k = strlen(buf);
        snprintf(buf + k, sizeof(buf) - k, ";timing=%s", tm->name);
    }
    /* the verified profile's program differs; fast keys stay as they were before profiles */
    if (npu_hw_profile_resolve(o->backend.hw_profile, o->on_device) == NPU_HW_PROFILE_VERIFIED) {
        size_t k = strlen(buf);
        snprintf(buf + k, sizeof(buf) - k, ";hw_profile=verified");
    }
    if (o->backend.layer_split) { /* keys without it stay as they were */
        size_t k = strlen(buf);
        snprintf(buf + k, sizeof(buf) - k, ";layer_split=1");
    }
    if (text && len)
        snprintf(text, len, "%s", buf);
    return npu_xxh64(buf, strlen(buf), 0x6f707473);
}

const char *
npu_build_cache_dir(const struct npu_build_options *o)
{
    if (o && o->no_cache)
        return NULL;
    if (o && o->cache_dir && o->cache_dir[0])
        return o->cache_dir;
    const char *e = getenv(NPU_CACHE_ENV);
    return e && e[0] ? e : NULL;
}

/* ---- compiling ------------------------------------------------------------------- */

static enum npu_status compile_graph(struct npu_graph *g, const char *path,
                                     const struct npu_build_options *o,
                                     const struct npu_backend_options *be, bool outputs,
                                     struct npu_program **out);

/* One compile with the back-end options be; the tools' outputs (IR dump,
 * emitted IR, partition report, on_lowered) only when outputs. */
static enum npu_status
compile_once(const char *path, const struct npu_build_options *o,
             const struct npu_backend_options *be, bool outputs, struct npu_program **out)
{
    struct npu_graph *g = NULL;
    enum npu_status st;
    *out = NULL;
    if (npu_driver_model_is(path, ".npuir")) {
        st = npu_ir_load(path, &g);
    } else {
        struct npu_onnx_options oo = {.dim_values = o->dim_values, .strict_dims = o->strict_dims};
        st = npu_onnx_load(path, &oo, &g);
    }
    if (st)
        return st;
    return compile_graph(g, path, o, be, outputs, out);
}

/* Compiles g (taken: freed here) through the front- and back-end passes with the
 * back-end options be. */
static enum npu_status
compile_graph(struct npu_graph *g, const char *path, const struct npu_build_options *o,
              const struct npu_backend_options *be, bool outputs, struct npu_program **out)
{
    enum npu_status st;
    *out = NULL;
    struct npu_compile_options co = {.no_fusion = o->no_fusion,
                                     .no_epilogue_fusion =
                                         be->hw_profile == NPU_HW_PROFILE_VERIFIED,
                                     .verify = -1,
                                     .dump_after = outputs ? o->dump_after : NULL,
                                     .dump_file = o->dump_file};
    struct npu_partition_options po = {.mode = npu_build_partition_mode(o),
                                       .backend = be,
                                       .cache_dir = npu_build_cache_dir(o),
                                       .cpu_threads = o->cpu_threads,
                                       .cpu_cost = o->cpu_cost,
                                       .on_device = o->on_device};
    struct npu_backend_compile_options bo = {.backend = be,
                                             .partition = &po,
                                             .report = outputs ? o->report : NULL,
                                             .dump_after = outputs ? o->dump_after : NULL,
                                             .dump_file = o->dump_file,
                                             .emit_ir = outputs ? o->emit_ir : NULL,
                                             /* g is freed below, unless on_lowered reads it */
                                             .release_consts = !(outputs && o->on_lowered)};
    if ((st = npu_compile(g, &co)) || (o->transform && (st = o->transform(g, o->transform_user))))
        goto out;
    if (be->hw_profile == NPU_HW_PROFILE_VERIFIED) {
        /* the verified rounds refuse nodes by the name their tasks carry: give unnamed
         * nodes one, "<op>#<position>" (the front end's graph is the same every round) */
        int k = 0;
        npu_graph_for_each_node (g, n) {
            if (!n->name || !n->name[0]) {
                char nm[64];
                snprintf(nm, sizeof(nm), "%s#%d", npu_op_name(n->op), k);
                if (!(n->name = npu_graph_strdup(g, nm))) {
                    st = NPU_ERR_NOMEM;
                    goto out;
                }
            }
            k++;
        }
    }
    if ((st = npu_backend_compile(g, &bo, out)))
        goto out;
    if (outputs && o->on_lowered)
        o->on_lowered(g, *out, o->on_lowered_user);
    char msg[512];
    if ((st = npu_program_validate(*out, msg, sizeof(msg)))) {
        npu_err(DOM, "%s: the compiled program is invalid (a compiler bug): %s", path, msg);
        npu_program_free(*out);
        *out = NULL;
        st = NPU_ERR_INTERNAL;
    }
out:
    npu_graph_free(g);
    return st;
}

/* Rounds of the verified profile before giving up (each round moves at least one more
 * node to the CPU; SigLIP-B/16 converges in a few). */
#define HW_VERIFY_MAX_ROUNDS 24

/*
 * The fast profile compiles once. The verified profile compiles, classifies the
 * program's tasks with the evidence ledger (npu-hwverify.c) and compiles again
 * with every node that emitted a task below level O refused by supports()
 * (naming the pattern; the cost partition then keeps it on the CPU), until no
 * task is below O. Where the back end has a vendor-matched variant of a lowering
 * the profile selects it first (fp16 partial sums: the fp32 partial through a
 * 32-bit EW operand has no capture).
 */
static enum npu_status
compile(const char *path, const struct npu_build_options *o, struct npu_program **out)
{
    struct npu_backend_options be = o->backend;
    be.hw_profile = npu_hw_profile_resolve(o->backend.hw_profile, o->on_device);
    if (be.hw_profile != NPU_HW_PROFILE_VERIFIED)
        return compile_once(path, o, &be, true, out);
    be.fp16_partials = 1;
    /* biases and activations as passes of their own (compile_once) */
    bool side = o->emit_ir || o->report || o->dump_after || o->on_lowered;
    struct npu_hw_refusals r = {0};
    enum npu_status st;
    bool all_cpu = false;
    for (int round = 1;; round++) {
        if (!all_cpu) {
            be.hw_refused = r.v;
            be.n_hw_refused = r.n;
            if ((st = compile_once(path, o, &be, !side, out)))
                break;
        }
        int added = 0, below = 0;
        if ((st = npu_hw_collect_refusals(*out, &r, &added, &below)))
            break;
        if (!below) {
            npu_info(DOM,
                     "%s: hw-profile verified: every NPU task at ledger level O or better "
                     "after %d compile%s, %d node%s kept on the CPU for their patterns",
                     path, round, round > 1 ? "s" : "", r.n, r.n == 1 ? "" : "s");
            if (side) { /* again, with the tools' outputs: the same program */
                npu_program_free(*out);
                *out = NULL;
                st = compile_once(path, o, &be, true, out);
            }
            break;
        }
        if (all_cpu) { /* cannot happen: a program without NPU tasks has none below O */
            npu_err(DOM,
                    "%s: hw-profile verified: NPU tasks below level O with every node "
                    "refused (a compiler bug)",
                    path);
            st = NPU_ERR_INTERNAL;
            break;
        }
        if (!added || round == HW_VERIFY_MAX_ROUNDS) {
            /* a task that names no source node (or no convergence): the last resort
             * is a program without NPU tasks, which is trivially verified */
            npu_warn(DOM,
                     "%s: hw-profile verified: %d NPU task%s still below ledger level O after "
                     "%d compiles (%s); compiling everything for the CPU",
                     path, below, below == 1 ? "" : "s", round,
                     added ? "no convergence" : "tasks that name no node");
            static const struct npu_hw_refusal every = {
                .node = "*", .pattern = "-", .reg = "-", .level = 0};
            be.hw_refused = &every;
            be.n_hw_refused = 1;
            all_cpu = true;
            npu_program_free(*out);
            *out = NULL;
            if ((st = compile_once(path, o, &be, !side, out)))
                break;
            continue;
        }
        npu_info(DOM,
                 "%s: hw-profile verified: compile %d has %d task%s below level O; %d more "
                 "node%s to the CPU",
                 path, round, below, below == 1 ? "" : "s", added, added == 1 ? "" : "s");
        npu_program_free(*out);
        *out = NULL;
    }
    if (st) {
        npu_program_free(*out);
        *out = NULL;
    }
    npu_hw_refusals_free(&r);
    return st;
}

/*
 * The verified profile's rounds compile the graph afresh each time, from a file:
 * an in-memory graph (taken: freed here) is saved in its text form with its
 * constants (npu_ir_save) into a private temporary folder, compiled from there
 * like a .npuir model, and the folder removed.
 */
static enum npu_status
compile_graph_verified(struct npu_graph *g, const char *name, const struct npu_build_options *o,
                       struct npu_program **out)
{
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600], side[640];
    enum npu_status st;

    *out = NULL;
    snprintf(dir, sizeof(dir), "%s/npu-build-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        npu_err(DOM, "%s: hw-profile verified: cannot make a temporary folder %s: %s", name, dir,
                strerror(errno));
        npu_graph_free(g);
        return NPU_ERR_IO;
    }
    snprintf(path, sizeof(path), "%s/graph.npuir", dir);
    st = npu_ir_save(g, path);
    npu_graph_free(g);
    if (st == NPU_OK)
        st = compile(path, o, out);
    /* npu_ir_save writes PATH and its constants' sidecar PATH.bin (docs/ir.md) */
    snprintf(side, sizeof(side), "%s.bin", path);
    unlink(side);
    unlink(path);
    rmdir(dir);
    return st;
}

void
npu_built_free(struct npu_built *b)
{
    if (!b)
        return;
    npu_program_free(b->owned);
    npu_npub_free(b->art);
    free(b->owned_props);
    free(b);
}

enum npu_status
npu_build(const char *path, const struct npu_build_options *opts, struct npu_built **out)
{
    static const struct npu_build_options none;
    const struct npu_build_options *o = opts ? opts : &none;
    double t0 = now();
    enum npu_status st;
    *out = NULL;
    if (!path) {
        npu_err(DOM, "no model path given");
        return NPU_ERR_INVALID;
    }
    if (npu_driver_check_nonempty(path))
        return NPU_ERR_CORRUPT;
    struct npu_built *b = calloc(1, sizeof(*b));
    if (!b)
        return NPU_ERR_NOMEM;
    if (npu_driver_model_is(path, ".npub")) {
        char err[512];
        if ((st = npu_npub_load(path, &b->art, err, sizeof(err)))) {
            free(b);
            return st;
        }
        b->prog = npu_npub_program(b->art);
        b->props = npu_npub_get_meta(b->art)->props;
        b->n_props = npu_npub_get_meta(b->art)->n_props;
        b->from_npub = true;
        b->model_hash = npu_npub_get_meta(b->art)->model_hash;
        b->options_hash = npu_npub_get_meta(b->art)->options_hash;
        b->load_s = now() - t0;
        *out = b;
        return NPU_OK;
    }

    enum npu_cpu_cost_mode cm;
    if ((st = npu_build_cpu_cost_mode(o, &cm))) { /* a bad $NPU_CPU_COST: said already */
        free(b);
        return st;
    }
    char opt_text[1024];
    b->options_hash = npu_build_options_hash(o, opt_text, sizeof(opt_text));
    const char *dir = o->transform ? NULL : npu_build_cache_dir(o);
    bool want_outputs = o->emit_ir || o->report || o->on_lowered; /* need a real compile */
    if (dir) {
        if ((st = npu_model_content_hash(path, &b->model_hash))) {
            free(b);
            return st;
        }
        struct {
            uint64_t model, options, build;
            uint32_t program, format;
            char compiler[32];
        } k;
        memset(&k, 0, sizeof(k));
        k.model = b->model_hash;
        k.options = b->options_hash;
        k.build = npu_compiler_build_id();
        k.program = NPU_PROGRAM_VERSION;
        k.format = NPU_NPUB_FORMAT_VERSION;
        snprintf(k.compiler, sizeof(k.compiler), "%s", npu_compiler_version_str());
        snprintf(b->cache_path, sizeof(b->cache_path), "%s/%016llx.npub", dir,
                 (unsigned long long)npu_xxh64(&k, sizeof(k), 0));
        struct stat sb;
        if (!want_outputs && !stat(b->cache_path, &sb)) {
            char err[512] = "";
            struct npu_npub *a = NULL;
            npu_npub_load_ex(b->cache_path, &a, err, sizeof(err), NPU_NPUB_QUIET);
            const struct npu_npub_meta *m = a ? npu_npub_get_meta(a) : NULL;
            if (m && m->model_hash == b->model_hash && m->options_hash == b->options_hash) {
                b->art = a;
                b->prog = npu_npub_program(a);
                b->props = m->props;
                b->n_props = m->n_props;
                b->from_cache = true;
                b->load_s = now() - t0;
                npu_info(DOM, "%s: compile cache hit (%s)", path, b->cache_path);
                *out = b;
                return NPU_OK;
            }
            npu_warn(DOM, "%s: cache entry %s %s%s; recompiling", path, b->cache_path,
                     a ? "belongs to another model or options" : "is unusable: ", a ? "" : err);
            npu_npub_free(a);
        }
    }
    double c0 = now();
    if ((st = compile(path, o, &b->owned))) {
        free(b);
        return st;
    }
    b->prog = b->owned;
    b->compile_s = now() - c0;
    /* the model imported, so the file is a readable model: a failure here
     * would only drop the metadata, never the compile */
    if (!npu_driver_model_is(path, ".npuir") &&
        npu_npub_props_from_onnx_file(path, &b->owned_props, &b->n_props) == NPU_OK)
        b->props = b->owned_props;
    if (dir) {
        struct npu_npub_meta meta = {.model_hash = b->model_hash,
                                     .options_hash = b->options_hash,
                                     .options = opt_text,
                                     .source = path,
                                     .props = b->props,
                                     .n_props = b->n_props};
        mkdir(dir, 0755); /* one level; an existing folder is fine */
        if (npu_npub_save_ex(b->prog, &meta, b->cache_path, NPU_NPUB_QUIET))
            npu_warn(DOM, "%s: cannot write the compile cache entry %s", path, b->cache_path);
    }
    b->load_s = now() - t0;
    *out = b;
    return NPU_OK;
}

enum npu_status
npu_build_graph(struct npu_graph *g, const char *name, const struct npu_build_options *opts,
                struct npu_built **out)
{
    static const struct npu_build_options none;
    const struct npu_build_options *o = opts ? opts : &none;
    double t0 = now();
    enum npu_status st;
    *out = NULL;
    struct npu_built *b = calloc(1, sizeof(*b));
    if (!b) {
        npu_graph_free(g);
        return NPU_ERR_NOMEM;
    }
    enum npu_cpu_cost_mode cm;
    if ((st = npu_build_cpu_cost_mode(o, &cm))) {
        npu_graph_free(g);
        free(b);
        return st;
    }
    b->options_hash = npu_build_options_hash(o, NULL, 0);
    struct npu_backend_options be = o->backend;
    be.hw_profile = npu_hw_profile_resolve(o->backend.hw_profile, o->on_device);
    st = be.hw_profile == NPU_HW_PROFILE_VERIFIED
             ? compile_graph_verified(g, name ? name : "graph", o, &b->owned)
             : compile_graph(g, name ? name : "graph", o, &be, true, &b->owned);
    if (st) {
        free(b);
        return st;
    }
    b->prog = b->owned;
    b->compile_s = b->load_s = now() - t0;
    *out = b;
    return NPU_OK;
}
