/* SPDX-License-Identifier: MIT */
/*
 * test-npub.c: the .npub artifact (compiler/artifact/npu-npub-*.c):
 *  - XXH64 against values printed by the reference tool (xxhsum 0.8.1), one
 *    shot and streamed in odd-sized pieces;
 *  - round trip: save -> load -> an identical program (every field, array,
 *    string, attribute and constant compared) -> identical bytes when saved
 *    again -> identical outputs on the simulator, for the hand-made NPU
 *    program and a CPU program with attributes of every type;
 *  - atomic saves (no temporary file left, the destination replaced whole);
 *  - every kind of damage refused with its message: truncation at many
 *    lengths, bad magic / version / header / checksums, and - with the
 *    checksums recomputed so the deeper checks are what fires - sections out
 *    of the file or overlapping, record counts, string references, enum
 *    values, index ranges, constant sizes and payload ranges, unknown op
 *    names, tensors outside their buffers, relocations (qword, buffer id,
 *    offset, non-address register, missing), and CPU steps whose output
 *    shape disagrees with shape inference;
 *  - 20 000 seeded random mutations (with and without recomputed checksums)
 *    load cleanly or fail cleanly;
 *  - model metadata (PROPS, format 2): round trip of every entry, format 1
 *    without it, the writer's bounds, a damaged section refused with its
 *    message, and the ONNX metadata_props reader on protobuf built here.
 */
#include <dirent.h>
#include <unistd.h>

#include "hand-prog.h"
#include "npu-test-log.h"
#include "npu-test.h"
#include "npu/npu-npub.h"
#include "npu/npu-program-exec.h"
#include "npub-rehash.h"

/* ---- XXH64 -------------------------------------------------------------------------- */

static void
test_hash(void)
{
    /* printf '%s' STRING | xxhsum -H1 */
    CHECK_EQ_HEX(0xef46db3751d8e999ull, npu_xxh64("", 0, 0));
    CHECK_EQ_HEX(0xd24ec4f1a98c6e5bull, npu_xxh64("a", 1, 0));
    CHECK_EQ_HEX(0x44bc2cf5ad770999ull, npu_xxh64("abc", 3, 0));
    const char *s = "Nobody inspects the spammish repetition";
    CHECK_EQ_HEX(0xfbcea83c8a378bf1ull, npu_xxh64(s, strlen(s), 0));
    const char *t = "0123456789abcdef0123456789abcdef0123456789";
    CHECK_EQ_HEX(0xa76190c3acf08a1cull, npu_xxh64(t, strlen(t), 0));
    /* head -c 100000 /dev/zero | tr '\0' x | xxhsum -H1 */
    char *x = malloc(100000);
    memset(x, 'x', 100000);
    CHECK_EQ_HEX(0x7c37a271025b345bull, npu_xxh64(x, 100000, 0));
    struct npu_xxh64_state st;
    npu_xxh64_init(&st, 0);
    size_t pos = 0, step = 1;
    while (pos < 100000) {
        size_t n = step < 100000 - pos ? step : 100000 - pos;
        npu_xxh64_update(&st, x + pos, n);
        pos += n;
        step = step * 3 % 97 + 1;
    }
    CHECK_EQ_HEX(0x7c37a271025b345bull, npu_xxh64_digest(&st));
    free(x);
}

/* ---- a CPU program with every attribute type ------------------------------------------- */

struct cpu_prog {
    struct npu_program p;
    struct npu_prog_tensor t[8];
    struct npu_prog_step s[5];
    struct npu_attr a[8];
    int io[32];
    int64_t perm[3], shape[3];
    float fl[2], half;
    const char *strs[2];
    struct npu_tensor value;
};

static struct npu_prog_tensor
ht(const char *name, enum npu_dtype dt, int ndim, const int64_t *dims, uint64_t off)
{
    struct npu_prog_tensor t;
    memset(&t, 0, sizeof(t));
    t.name = name;
    t.t.dtype = dt;
    t.t.ndim = ndim;
    memcpy(t.t.dims, dims, sizeof(int64_t) * (size_t)ndim);
    t.offset = off;
    t.bytes = (uint64_t)npu_tensor_nbytes(&t.t);
    t.io_input = t.io_output = -1;
    return t;
}

/* x[2,3,4] -> Transpose(2,0,1) -> LeakyRelu(0.2) -> + ConstantOfShape([4,2,3], 0.5) = y,
 * z = Cast(y, fp16). Outputs y, z. */
static void
cpu_prog_make(struct cpu_prog *c)
{
    memset(c, 0, sizeof(*c));
    int64_t dx[3] = {2, 3, 4}, dy[3] = {4, 2, 3}, d3[1] = {3};
    c->t[0] = ht("x", NPU_DTYPE_FP32, 3, dx, 0);
    c->t[1] = ht("y1", NPU_DTYPE_FP32, 3, dy, 128);
    c->t[2] = ht("y2", NPU_DTYPE_FP32, 3, dy, 256);
    c->t[3] = ht("shape", NPU_DTYPE_INT64, 1, d3, 0);
    c->shape[0] = 4, c->shape[1] = 2, c->shape[2] = 3;
    c->t[3].t.data = c->shape;
    c->t[4] = ht("c", NPU_DTYPE_FP32, 3, dy, 384);
    c->t[5] = ht("y", NPU_DTYPE_FP32, 3, dy, 512);
    c->t[6] = ht("z", NPU_DTYPE_FP16, 3, dy, 640);
    c->perm[0] = 2, c->perm[1] = 0, c->perm[2] = 1;
    c->fl[0] = 1.5f, c->fl[1] = -2.25f;
    c->strs[0] = "first", c->strs[1] = "";
    c->half = 0.5f;
    c->value =
        (struct npu_tensor){.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {1}, .data = &c->half};
    c->a[0] = (struct npu_attr){.name = "perm", .type = NPU_ATTR_INTS, .ints = c->perm, .n = 3};
    c->a[1] =
        (struct npu_attr){.name = "npu_note", .type = NPU_ATTR_STRINGS, .strs = c->strs, .n = 2};
    c->a[2] = (struct npu_attr){.name = "npu_f", .type = NPU_ATTR_FLOATS, .floats = c->fl, .n = 2};
    c->a[3] = (struct npu_attr){.name = "alpha", .type = NPU_ATTR_FLOAT, .f = 0.2f};
    c->a[4] = (struct npu_attr){.name = "value", .type = NPU_ATTR_TENSOR, .t = &c->value};
    c->a[5] = (struct npu_attr){.name = "to", .type = NPU_ATTR_INT, .i = 10};
    c->a[6] = (struct npu_attr){.name = "npu_s", .type = NPU_ATTR_STRING, .s = "text"};
    int *io = c->io;
    io[0] = 0, io[1] = 1;
    c->s[0] = (struct npu_prog_step){.kind = NPU_STEP_CPU,
                                     .op = NPU_OP_TRANSPOSE,
                                     .attrs = {&c->a[0], 3},
                                     .in = &io[0],
                                     .nin = 1,
                                     .out = &io[1],
                                     .nout = 1,
                                     .name = "transpose"};
    io[2] = 1, io[3] = 2;
    c->s[1] = (struct npu_prog_step){.kind = NPU_STEP_CPU,
                                     .op = NPU_OP_LEAKY_RELU,
                                     .attrs = {&c->a[3], 1},
                                     .in = &io[2],
                                     .nin = 1,
                                     .out = &io[3],
                                     .nout = 1,
                                     .name = "leaky"};
    io[4] = 3, io[5] = 4;
    c->s[2] = (struct npu_prog_step){.kind = NPU_STEP_CPU,
                                     .op = NPU_OP_CONSTANT_OF_SHAPE,
                                     .attrs = {&c->a[4], 1},
                                     .in = &io[4],
                                     .nin = 1,
                                     .out = &io[5],
                                     .nout = 1,
                                     .name = "const"};
    io[6] = 2, io[7] = 4, io[8] = 5;
    c->s[3] = (struct npu_prog_step){.kind = NPU_STEP_CPU,
                                     .op = NPU_OP_ADD,
                                     .in = &io[6],
                                     .nin = 2,
                                     .out = &io[8],
                                     .nout = 1,
                                     .name = NULL};
    io[9] = 5, io[10] = 6;
    c->s[4] = (struct npu_prog_step){.kind = NPU_STEP_CPU,
                                     .op = NPU_OP_CAST,
                                     .attrs = {&c->a[5], 2},
                                     .in = &io[9],
                                     .nin = 1,
                                     .out = &io[10],
                                     .nout = 1,
                                     .name = "cast"};
    io[11] = 0, io[12] = 5, io[13] = 6;
    c->t[0].io_input = 0;
    c->t[5].io_output = 0;
    c->t[6].io_output = 1;
    c->p = (struct npu_program){.version = NPU_PROGRAM_VERSION,
                                .tensors = c->t,
                                .n_tensors = 7,
                                .steps = c->s,
                                .n_steps = 5,
                                .inputs = &io[11],
                                .n_inputs = 1,
                                .outputs = &io[12],
                                .n_outputs = 2,
                                .host_bytes = 768,
                                .producer = "test-npub cpu"};
}

/* ---- deep comparison --------------------------------------------------------------------- */

static int
str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static int
tensor_eq(const struct npu_tensor *a, const struct npu_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->qscale != b->qscale ||
        a->qzero != b->qzero || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim))
        return 0;
    if (!a->data != !b->data)
        return 0;
    return !a->data || !memcmp(a->data, b->data, (size_t)npu_tensor_nbytes(a));
}

static int
attr_eq(const struct npu_attr *a, const struct npu_attr *b)
{
    if (!str_eq(a->name, b->name) || a->type != b->type)
        return 0;
    switch (a->type) {
    case NPU_ATTR_INT: return a->i == b->i;
    case NPU_ATTR_FLOAT: return !memcmp(&a->f, &b->f, 4);
    case NPU_ATTR_STRING: return str_eq(a->s, b->s);
    case NPU_ATTR_INTS: return a->n == b->n && !memcmp(a->ints, b->ints, 8 * a->n);
    case NPU_ATTR_FLOATS: return a->n == b->n && !memcmp(a->floats, b->floats, 4 * a->n);
    case NPU_ATTR_STRINGS:
        if (a->n != b->n)
            return 0;
        for (size_t i = 0; i < a->n; i++)
            if (!str_eq(a->strs[i], b->strs[i]))
                return 0;
        return 1;
    case NPU_ATTR_TENSOR: return tensor_eq(a->t, b->t);
    }
    return 0;
}

static int
ints_eq(const int *a, const int *b, int n)
{
    return n == 0 || !memcmp(a, b, sizeof(int) * (size_t)n);
}

static int
prog_eq(const struct npu_program *a, const struct npu_program *b)
{
    int ok = a->version == b->version && a->n_tensors == b->n_tensors && a->n_steps == b->n_steps &&
             a->n_jobs == b->n_jobs && a->n_inputs == b->n_inputs && a->n_outputs == b->n_outputs &&
             a->weights_bytes == b->weights_bytes && a->act_bytes == b->act_bytes &&
             a->host_bytes == b->host_bytes && str_eq(a->producer, b->producer) &&
             ints_eq(a->inputs, b->inputs, a->n_inputs) &&
             ints_eq(a->outputs, b->outputs, a->n_outputs) &&
             (!a->weights_bytes || !memcmp(a->weights, b->weights, a->weights_bytes));
    for (int i = 0; ok && i < a->n_tensors; i++) {
        const struct npu_prog_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        ok = str_eq(x->name, y->name) && tensor_eq(&x->t, &y->t) && x->place == y->place &&
             x->buffer == y->buffer && x->offset == y->offset && x->bytes == y->bytes &&
             x->layout == y->layout && x->mem_dtype == y->mem_dtype && x->npu_c == y->npu_c &&
             x->npu_h == y->npu_h && x->npu_w == y->npu_w && x->npu_order == y->npu_order &&
             x->io_input == y->io_input && x->io_output == y->io_output;
    }
    for (int i = 0; ok && i < a->n_steps; i++) {
        const struct npu_prog_step *x = &a->steps[i], *y = &b->steps[i];
        ok = x->kind == y->kind && str_eq(x->name, y->name) && x->nin == y->nin &&
             x->nout == y->nout && ints_eq(x->in, y->in, x->nin) &&
             ints_eq(x->out, y->out, x->nout) && x->attrs.n == y->attrs.n &&
             (x->kind != NPU_STEP_CPU || x->op == y->op) &&
             (x->kind != NPU_STEP_NPU_JOB || x->job == y->job);
        for (size_t k = 0; ok && k < x->attrs.n; k++)
            ok = attr_eq(&x->attrs.v[k], &y->attrs.v[k]);
    }
    for (int j = 0; ok && j < a->n_jobs; j++) {
        const struct npu_prog_job *x = &a->jobs[j], *y = &b->jobs[j];
        ok = x->n_qwords == y->n_qwords && x->n_tasks == y->n_tasks && x->n_relocs == y->n_relocs &&
             x->segment_align == y->segment_align && x->modeled_s == y->modeled_s &&
             !memcmp(x->regcmd, y->regcmd, 8 * (size_t)x->n_qwords) &&
             !memcmp(x->relocs, y->relocs, sizeof(*x->relocs) * x->n_relocs);
        for (uint32_t t = 0; ok && t < x->n_tasks; t++)
            ok = x->tasks[t].start == y->tasks[t].start &&
                 x->tasks[t].n_body == y->tasks[t].n_body &&
                 x->tasks[t].enable_mask == y->tasks[t].enable_mask &&
                 x->tasks[t].int_mask == y->tasks[t].int_mask &&
                 str_eq(x->tasks[t].name, y->tasks[t].name);
    }
    return ok;
}

/* Runs p once on dev with input x; copies output k's bytes to *out (malloc). */
static size_t
run_once(struct npu_device *dev, const struct npu_program *p, const struct npu_tensor *x, int k,
         void **out)
{
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    struct npu_tensor o[4];
    size_t n = 0;
    *out = NULL;
    if (npu_prog_model_create(dev, p, NULL, &m) || npu_prog_session_create(m, 0, 1, &s) ||
        npu_prog_session_run(s, x, 1, o, p->n_outputs, NULL)) {
        CHECK(!"run failed");
    } else {
        n = (size_t)npu_tensor_nbytes(&o[k]);
        *out = malloc(n);
        memcpy(*out, o[k].data, n);
    }
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
    return n;
}

static void
roundtrip(struct npu_device *dev, const struct npu_program *p, const struct npu_tensor *x,
          const char *what)
{
    struct npu_npub_meta meta = {.model_hash = 0x1234,
                                 .options_hash = 0x5678,
                                 .options = "dims=;fusion=1",
                                 .source = "hand.onnx"};
    void *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    struct npu_npub *a = NULL, *b = NULL;
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(p, &meta, &buf, &len));
    CHECK_EQ_INT(0, len % 64);
    char err[256] = "";
    CHECK_EQ_INT(NPU_OK, npu_npub_decode(buf, len, &a, err, sizeof(err)));
    if (!a) {
        fprintf(stderr, "%s: %s\n", what, err);
        free(buf);
        return;
    }
    CHECK(prog_eq(p, npu_npub_program(a)));
    const struct npu_npub_meta *m = npu_npub_get_meta(a);
    CHECK_EQ_HEX(0x1234, m->model_hash);
    CHECK_EQ_HEX(0x5678, m->options_hash);
    CHECK_STR("dims=;fusion=1", m->options);
    CHECK_STR("hand.onnx", m->source);
    CHECK_STR(npu_compiler_version_str(), m->compiler);
    CHECK_EQ_INT(1, m->format_version); /* no metadata: the oldest format */
    CHECK_EQ_INT(0, m->n_props);
    CHECK_EQ_INT(npu_compiler_version(), m->compiler_version);
    /* saved again: the same bytes */
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(npu_npub_program(a), &meta, &buf2, &len2));
    CHECK(len == len2 && !memcmp(buf, buf2, len));
    /* through a file */
    char path[] = "/tmp/npub-test-XXXXXX";
    CHECK(mkdtemp(path) != NULL);
    char file[300];
    snprintf(file, sizeof(file), "%s/m.npub", path);
    CHECK_EQ_INT(NPU_OK, npu_npub_save(p, &meta, file));
    CHECK_EQ_INT(NPU_OK, npu_npub_save(p, &meta, file)); /* replaces */
    CHECK_EQ_INT(NPU_OK, npu_npub_load(file, &b, NULL, 0));
    CHECK(b && prog_eq(p, npu_npub_program(b)));
    CHECK_EQ_INT(len, npu_npub_file_bytes(b));
    DIR *d = opendir(path);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        entries += e->d_name[0] != '.';
    closedir(d);
    CHECK_EQ_INT(1, entries); /* no temporary file left behind */
    /* identical outputs */
    for (int k = 0; k < p->n_outputs && b; k++) {
        void *o1, *o2;
        size_t n1 = run_once(dev, p, x, k, &o1), n2 = run_once(dev, npu_npub_program(b), x, k, &o2);
        CHECK(n1 && n1 == n2 && !memcmp(o1, o2, n1));
        free(o1);
        free(o2);
    }
    printf("round trip %s: %zu bytes, identical program, bytes and outputs\n", what, len);
    unlink(file);
    rmdir(path);
    npu_npub_free(a);
    npu_npub_free(b);
    free(buf);
    free(buf2);
}

/* ---- damage --------------------------------------------------------------------------- */

static uint8_t *good;
static size_t good_len;

/* Decodes buf, expects status st and an error containing words. */
static void
expect(const uint8_t *buf, size_t len, enum npu_status st, const char *words, const char *what)
{
    struct npu_npub *a = NULL;
    char err[512] = "";
    npu_log_set_handler(npu_test_log_quiet, NULL);
    enum npu_status got = npu_npub_decode(buf, len, &a, err, sizeof(err));
    npu_log_set_handler(NULL, NULL);
    CHECK_EQ_INT(st, got);
    CHECK(a == NULL);
    if (!strstr(err, words)) {
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, err, words);
        CHECK(!"message");
    }
    npu_npub_free(a);
}

/* A copy of the good image with a 32-bit field of section `kind`, record
 * `rec` of `rec_bytes`, at `field` set to v; checksums recomputed. */
static void
expect_field(uint32_t kind, uint32_t rec, uint32_t rec_bytes, uint32_t field, uint32_t v,
             const char *words, const char *what)
{
    uint8_t *b = malloc(good_len);
    memcpy(b, good, good_len);
    uint64_t size = 0, off = npub_section(b, good_len, kind, &size);
    CHECK(off && (uint64_t)(rec + 1) * rec_bytes <= size);
    put32(b + off + (size_t)rec * rec_bytes + field, v);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, words, what);
    free(b);
}

static void
expect_field64(uint32_t kind, uint32_t rec, uint32_t rec_bytes, uint32_t field, uint64_t v,
               const char *words, const char *what)
{
    uint8_t *b = malloc(good_len);
    memcpy(b, good, good_len);
    uint64_t size = 0, off = npub_section(b, good_len, kind, &size);
    CHECK(off && (uint64_t)(rec + 1) * rec_bytes <= size);
    put64(b + off + (size_t)rec * rec_bytes + field, v);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, words, what);
    free(b);
}

/* Index of the section table entry of kind. */
static uint8_t *
entry(uint8_t *b, uint32_t kind)
{
    for (uint32_t i = 0; i < get32(b + H_N_SECTIONS); i++) {
        uint8_t *e = b + NPUB_HEADER_BYTES + i * NPUB_SECTION_ENTRY_BYTES;
        if (get32(e + S_KIND) == kind)
            return e;
    }
    return NULL;
}

static void
test_damage(const struct npu_program *p)
{
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(p, NULL, (void **)&good, &good_len));
    uint8_t *b = malloc(good_len);

    /* truncated: every length up to the header, then a spread of longer ones */
    for (size_t n = 0; n < good_len; n += n < 160 ? 1 : 61)
        expect(good, n, NPU_ERR_CORRUPT,
               n < 128 ? "shorter than the 128-byte header" : "header says", "truncated");
    expect(good, good_len - 1, NPU_ERR_CORRUPT, "header says", "truncated by one");
    /* extended */
    uint8_t *longer = calloc(1, good_len + 8);
    memcpy(longer, good, good_len);
    expect(longer, good_len + 8, NPU_ERR_CORRUPT, "header says", "extended");
    free(longer);

    memcpy(b, good, good_len);
    b[1] = 'Q';
    expect(b, good_len, NPU_ERR_CORRUPT, "bad magic", "magic");
    memcpy(b, good, good_len);
    put32(b + H_FORMAT, NPU_NPUB_FORMAT_VERSION + 1);
    expect(b, good_len, NPU_ERR_VERSION, "reads versions 1 to 3", "version");
    put32(b + H_FORMAT, 0);
    expect(b, good_len, NPU_ERR_VERSION, "format version 0", "version 0");
    memcpy(b, good, good_len);
    put32(b + H_PROGRAM_VERSION, 9);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_VERSION, "program version 9", "program version");
    memcpy(b, good, good_len);
    b[80] ^= 1; /* a reserved header byte */
    expect(b, good_len, NPU_ERR_CORRUPT, "header checksum", "header hash");
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "reserved header byte 80", "reserved byte");
    memcpy(b, good, good_len);
    uint64_t wsz = 0, woff = npub_section(b, good_len, SEC_WEIGHTS, &wsz);
    CHECK(woff && wsz);
    b[woff + wsz / 2] ^= 0x40; /* one bit of the weights */
    expect(b, good_len, NPU_ERR_CORRUPT, "body checksum", "weights bit");
    b[woff + wsz / 2] ^= 0x40;
    b[woff + wsz / 2] ^= 0x40;
    put64(b + H_BODY_HASH, npu_xxh64(b + 128, good_len - 128, 0));
    put64(b + H_HEADER_HASH, npu_xxh64(b, H_HEADER_HASH, 0));
    expect(b, good_len, NPU_ERR_CORRUPT, "section WEIGHTS: checksum", "section hash");
    memcpy(b, good, good_len);
    b[NPUB_HEADER_BYTES + 3] ^= 1; /* the table, with the body hash made to fit */
    put64(b + H_BODY_HASH, npu_xxh64(b + 128, good_len - 128, 0));
    put64(b + H_HEADER_HASH, npu_xxh64(b, H_HEADER_HASH, 0));
    expect(b, good_len, NPU_ERR_CORRUPT, "section table checksum", "table hash");

    /* section table, checksums recomputed */
    memcpy(b, good, good_len);
    put64(entry(b, SEC_WEIGHTS) + S_OFFSET, good_len);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "section WEIGHTS: bytes", "section past the end");
    memcpy(b, good, good_len);
    put64(entry(b, SEC_WEIGHTS) + S_SIZE, UINT64_MAX - 100);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "section WEIGHTS: bytes", "section size overflow");
    memcpy(b, good, good_len);
    put64(entry(b, SEC_WEIGHTS) + S_OFFSET, get64(entry(b, SEC_REGCMD) + S_OFFSET));
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "overlap", "overlapping sections");
    memcpy(b, good, good_len);
    put64(entry(b, SEC_WEIGHTS) + S_OFFSET, get64(entry(b, SEC_WEIGHTS) + S_OFFSET) + 8);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "misplaced", "misaligned section");
    memcpy(b, good, good_len);
    put32(entry(b, SEC_TENSORS) + S_COUNT, get32(entry(b, SEC_TENSORS) + S_COUNT) + 1);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "do not fill", "record count");
    memcpy(b, good, good_len);
    put32(entry(b, SEC_STEPS) + S_KIND, SEC_TENSORS);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "appears twice", "duplicate section");
    memcpy(b, good, good_len);
    put32(entry(b, SEC_STEPS) + S_KIND, 99);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "kind 99 unknown", "unknown section");
    memcpy(b, good, good_len);
    put32(b + H_N_SECTIONS, 1000);
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "1000 sections", "section count");
    memcpy(b, good, good_len);
    uint64_t ssz = 0, soff = npub_section(b, good_len, SEC_STRINGS, &ssz);
    b[soff + ssz - 1] = 'x';
    npub_rehash(b, good_len, 0);
    expect(b, good_len, NPU_ERR_CORRUPT, "does not end with a NUL", "string pool");

    /* records */
    expect_field(SEC_TENSORS, 2, TENSOR_BYTES, T_NAME, 0x7fffffff, "string reference",
                 "tensor name");
    expect_field(SEC_TENSORS, 2, TENSOR_BYTES, T_DTYPE, 99, "tensor 2: dtype 99", "dtype");
    expect_field(SEC_TENSORS, 2, TENSOR_BYTES, T_LAYOUT, 7, "tensor 2: layout 7", "layout");
    expect_field(SEC_TENSORS, 2, TENSOR_BYTES, T_PLACE, 4, "placement 4", "placement");
    expect_field(SEC_TENSORS, 2, TENSOR_BYTES, T_NDIM, 9, "rank 9", "rank");
    expect_field64(SEC_TENSORS, 2, TENSOR_BYTES, T_DIMS, (uint64_t)-5, "dim 0 = -5", "dim");
    expect_field64(SEC_TENSORS, 2, TENSOR_BYTES, T_OFFSET, p->act_bytes, "tensor 2 'c32': bytes",
                   "tensor outside ACT");
    expect_field(SEC_TENSORS, 2, TENSOR_BYTES, T_BUFFER, 3, "buffer 3", "tensor buffer");
    expect_field(SEC_TENSORS, 2, TENSOR_BYTES, T_NPU_C, 31, "does not match its dims",
                 "layout view");
    expect_field(SEC_TENSORS, HT_BIAS, TENSOR_BYTES, T_FLAGS, 0x10, "flags 0x10", "flags");
    expect_field64(SEC_TENSORS, HT_BIAS, TENSOR_BYTES, T_DATA_OFFSET, 1ull << 40, "outside CONSTS",
                   "constant payload");
    expect_field64(SEC_TENSORS, HT_BIAS, TENSOR_BYTES, T_DATA_OFFSET, 4, "aligned",
                   "constant alignment");
    expect_field64(SEC_TENSORS, HT_BIAS, TENSOR_BYTES, T_DATA_SIZE, 8, "need", "constant size");
    expect_field(SEC_STEPS, 3, STEP_BYTES, ST_KIND, 9, "kind 9", "step kind");
    expect_field(SEC_STEPS, 3, STEP_BYTES, ST_OP, 0, "op '' unknown", "op name");
    expect_field(SEC_STEPS, 3, STEP_BYTES, ST_IN_START, 1u << 30, "operand range", "operand range");
    expect_field(SEC_STEPS, 3, STEP_BYTES, ST_NIN, 0xffffffffu, "operand range", "nin");
    expect_field(SEC_STEPS, 1, STEP_BYTES, ST_JOB, 5, "job 5", "job index");
    expect_field(SEC_STEPS, 3, STEP_BYTES, ST_ATTR_START, 40, "attribute range", "attrs");
    expect_field(SEC_INDICES, 0, 4, 0, 77, "names tensor 77", "tensor index");
    expect_field(SEC_JOBS, 0, JOB_BYTES, J_N_QWORDS, 1u << 30, "outside REGCMD", "job qwords");
    expect_field(SEC_JOBS, 0, JOB_BYTES, J_N_TASKS, 5, "outside TASKS", "job tasks");
    expect_field(SEC_JOBS, 0, JOB_BYTES, J_N_RELOCS, 500, "outside RELOCS", "job relocs");
    expect_field(SEC_JOBS, 0, JOB_BYTES, J_ALIGN, 24, "segment alignment 24", "job align");
    expect_field(SEC_TASKS, 0, TASK_BYTES, K_N_BODY, 1u << 20, "past the image", "task body");
    expect_field(SEC_RELOCS, 0, RELOC_BYTES, R_QWORD, 1u << 20, "outside the image", "reloc qword");
    expect_field(SEC_RELOCS, 0, RELOC_BYTES, R_BUFFER, 7, "buffer id 7", "reloc buffer");
    expect_field(SEC_RELOCS, 0, RELOC_BYTES, R_OFFSET, 1u << 30, "reloc 0: offset", "reloc offset");
    expect_field(SEC_RELOCS, 0, RELOC_BYTES, R_QWORD, 0, "not a DMA address register",
                 "reloc on a non-address register");
    /* one relocation dropped: the address it carried stays absolute */
    uint32_t nrel = p->jobs[0].n_relocs;
    expect_field(SEC_JOBS, 0, JOB_BYTES, J_N_RELOCS, nrel - 1, "without a relocation",
                 "missing relocation");
    expect_field(SEC_PROGRAM, 0, PROGRAM_BYTES, P_N_OUTPUTS, 0, "without outputs", "no outputs");
    expect_field64(SEC_PROGRAM, 0, PROGRAM_BYTES, P_WEIGHTS_BYTES, 12, "weights_bytes 12",
                   "weights size");
    expect_field64(SEC_PROGRAM, 0, PROGRAM_BYTES, P_HOST_BYTES, 64, "host arena", "host arena");
    /* a CPU step whose output disagrees with shape inference: y of the Relu as [64, 16] */
    expect_field64(SEC_TENSORS, HT_Y, TENSOR_BYTES, T_DIMS + 8, 16, "shape inference",
                   "inferred shape");
    free(b);
}

static void
test_mutations(const uint8_t *img, size_t img_len, int count, const char *what)
{
    uint32_t s = 4242;
    uint8_t *b = malloc(img_len);
    int loaded = 0;
    npu_log_set_handler(npu_test_log_quiet, NULL);
    for (int i = 0; i < count; i++) {
        memcpy(b, img, img_len);
        size_t len = img_len;
        int edits = 1 + (int)(hp_rand(&s) % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = hp_rand(&s) % len;
            switch (hp_rand(&s) % 4) {
            case 0: b[at] ^= (uint8_t)(1u << (hp_rand(&s) % 8)); break;
            case 1: b[at] = (uint8_t)hp_rand(&s); break;
            case 2:
                if (at + 4 <= len)
                    put32(b + at, hp_rand(&s) % 2 ? 0xffffffffu : hp_rand(&s) % 256);
                break;
            default:
                if (hp_rand(&s) % 8 == 0)
                    len = at;
                break;
            }
        }
        if (i % 2)
            npub_rehash(b, len, i % 4 == 1);
        struct npu_npub *a = NULL;
        if (npu_npub_decode(b, len, &a, NULL, 0) == NPU_OK)
            loaded++;
        npu_npub_free(a);
    }
    npu_log_set_handler(NULL, NULL);
    printf("mutations of %s: %d damaged images decoded or refused cleanly (%d still valid)\n", what,
           count, loaded);
    free(b);
}

/* ---- model metadata ------------------------------------------------------------------ */

/* A tiny protobuf writer for the ONNX reader's tests. */
struct pbw {
    uint8_t b[4096];
    size_t n;
};

static void
pbw_varint(struct pbw *w, uint64_t v)
{
    do {
        w->b[w->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void
pbw_bytes(struct pbw *w, uint32_t field, const void *p, size_t n)
{
    pbw_varint(w, (uint64_t)field << 3 | 2);
    pbw_varint(w, n);
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

/* ModelProto.metadata_props entry (field 14: key = 1, value = 2). */
static void
pbw_prop(struct pbw *w, const char *k, size_t kl, const char *v, size_t vl)
{
    struct pbw e = {.n = 0};
    pbw_bytes(&e, 1, k, kl);
    pbw_bytes(&e, 2, v, vl);
    pbw_bytes(w, 14, e.b, e.n);
}

static void
test_props_onnx(void)
{
    struct pbw w = {.n = 0};
    struct npu_model_prop *v = NULL;
    uint32_t n = 0;
    pbw_varint(&w, 1 << 3 | 0); /* ir_version = 8 */
    pbw_varint(&w, 8);
    pbw_bytes(&w, 2, "opennpu-tests", 13); /* producer_name */
    pbw_prop(&w, "image_mean", 10, "[0.5, 0.5, 0.5]", 15);
    pbw_bytes(&w, 7,
              "\x0a\x03"
              "abc",
              5);                                /* a graph: skipped, never parsed */
    pbw_prop(&w, "", 0, "empty key", 9);         /* left out */
    pbw_prop(&w, "nul", 3, "a\0b", 3);           /* left out */
    pbw_prop(&w, "image_mean", 10, "second", 6); /* repeated: the first wins */
    pbw_prop(&w, "opennpu.resize", 14, "crop", 4);
    pbw_prop(&w, "empty", 5, "", 0);
    w.b[w.n++] = 0x45; /* field 8, fixed32 */
    memcpy(w.b + w.n, "\1\2\3\4", 4);
    w.n += 4;
    npu_log_set_handler(npu_test_log_quiet, NULL);
    CHECK_EQ_INT(NPU_OK, npu_npub_props_from_onnx(w.b, w.n, &v, &n));
    CHECK_EQ_INT(3, n);
    if (n == 3) {
        CHECK_STR("image_mean", v[0].key);
        CHECK_STR("[0.5, 0.5, 0.5]", v[0].value);
        CHECK_STR("opennpu.resize", v[1].key);
        CHECK_STR("crop", v[1].value);
        CHECK_STR("empty", v[2].key);
        CHECK_STR("", v[2].value);
        CHECK(npu_npub_props_check(v, n, NULL, 0));
    }
    free(v);
    /* malformed: a length past the end */
    static const uint8_t bad[] = {0x72, 0x7f, 0x0a};
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_npub_props_from_onnx(bad, sizeof(bad), &v, &n));
    CHECK(v == NULL && n == 0);
    CHECK_EQ_INT(NPU_OK, npu_npub_props_from_onnx(NULL, 0, &v, &n));
    CHECK(v == NULL && n == 0);
    /* more entries than the bound: the first NPU_NPUB_MAX_PROPS are kept */
    size_t cap = 16 * (NPU_NPUB_MAX_PROPS + 10);
    uint8_t *big = malloc(cap);
    size_t bn = 0;
    for (unsigned i = 0; i < NPU_NPUB_MAX_PROPS + 10; i++) {
        struct pbw e = {.n = 0};
        char k[16];
        int kl = snprintf(k, sizeof(k), "k%u", i);
        pbw_prop(&e, k, (size_t)kl, "v", 1);
        memcpy(big + bn, e.b, e.n);
        bn += e.n;
    }
    CHECK_EQ_INT(NPU_OK, npu_npub_props_from_onnx(big, bn, &v, &n));
    CHECK_EQ_INT(NPU_NPUB_MAX_PROPS, n);
    CHECK(n && !strcmp(v[n - 1].key, "k255"));
    free(v);
    free(big);
    /* an over-long value is left out, the next entry kept */
    size_t vl = NPU_NPUB_MAX_PROP_VALUE + 1;
    char *lv = malloc(vl);
    memset(lv, 'x', vl);
    size_t ln = vl + 64;
    uint8_t *lb = malloc(ln);
    size_t at = 0;
    /* entry { key "long", value lv } by hand: the helper's buffer is small */
    lb[at++] = 14 << 3 | 2;
    size_t inner = 2 + 4 + 1 + 3 + vl; /* key tag+len+4, value tag + 3-byte len + vl */
    for (uint64_t x = inner;; x >>= 7) {
        lb[at++] = (uint8_t)((x & 0x7f) | (x > 0x7f ? 0x80 : 0));
        if (x <= 0x7f)
            break;
    }
    memcpy(lb + at, "\x0a\x04long\x12", 7);
    at += 7;
    lb[at++] = (uint8_t)(0x80 | (vl & 0x7f));
    lb[at++] = (uint8_t)(0x80 | ((vl >> 7) & 0x7f));
    lb[at++] = (uint8_t)(vl >> 14);
    memcpy(lb + at, lv, vl);
    at += vl;
    memcpy(lb + at, "\x72\x08\x0a\x02ok\x12\x02ye", 10);
    at += 10;
    CHECK_EQ_INT(NPU_OK, npu_npub_props_from_onnx(lb, at, &v, &n));
    CHECK_EQ_INT(1, n);
    CHECK(n == 1 && !strcmp(v[0].key, "ok") && !strcmp(v[0].value, "ye"));
    free(v);
    free(lb);
    free(lv);
    npu_log_set_handler(NULL, NULL);
    printf("ONNX metadata_props reader: entries in order, bounds, malformed input\n");
}

static void
test_props(const struct npu_program *p)
{
    /* two 40000-byte values next to each other in the string pool (strings are
     * pooled at first use: "big.b" is already there as the value of "alias") */
    char *va = malloc(40001), *vb = malloc(40001);
    memset(va, 'a', 40000);
    memset(vb, 'b', 40000);
    va[40000] = vb[40000] = 0;
    const struct npu_model_prop props[] = {
        {"opennpu.mean", "0.5, 0.25, 0.125"}, {"alias", "big.b"}, {"big.a", va}, {"big.b", vb},
        {"same", "0.5, 0.25, 0.125"},         {"empty", ""},
    };
    const uint32_t np = sizeof(props) / sizeof(props[0]);
    struct npu_npub_meta meta = {.options = "x", .source = "m.onnx", .props = props, .n_props = np};
    void *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    struct npu_npub *a = NULL;
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(p, &meta, &buf, &len));
    CHECK_EQ_INT(NPU_OK, npu_npub_decode(buf, len, &a, NULL, 0));
    const struct npu_npub_meta *m = a ? npu_npub_get_meta(a) : NULL;
    CHECK(m && m->format_version == 2 && m->n_props == np);
    for (uint32_t i = 0; m && i < np && i < m->n_props; i++) {
        CHECK_STR(props[i].key, m->props[i].key);
        CHECK_STR(props[i].value, m->props[i].value);
    }
    CHECK(a && prog_eq(p, npu_npub_program(a)));
    struct npu_npub_meta again = {.options = "x",
                                  .source = "m.onnx",
                                  .props = m ? m->props : NULL,
                                  .n_props = m ? m->n_props : 0};
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(npu_npub_program(a), &again, &buf2, &len2));
    CHECK(len == len2 && !memcmp(buf, buf2, len));
    free(buf2);
    npu_npub_free(a);

    /* the writer keeps the bounds */
    npu_log_set_handler(npu_test_log_quiet, NULL);
    struct npu_model_prop dup[] = {{"k", "1"}, {"k", "2"}};
    struct npu_npub_meta bad = {.props = dup, .n_props = 2};
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_npub_encode(p, &bad, &buf2, &len2));
    dup[1].key = "";
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_npub_encode(p, &bad, &buf2, &len2));
    char *lv = malloc(NPU_NPUB_MAX_PROP_VALUE + 2);
    memset(lv, 'v', NPU_NPUB_MAX_PROP_VALUE + 1);
    lv[NPU_NPUB_MAX_PROP_VALUE + 1] = 0;
    dup[1].key = "long";
    dup[1].value = lv;
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_npub_encode(p, &bad, &buf2, &len2));
    lv[NPU_NPUB_MAX_PROP_VALUE] = 0; /* exactly the bound: fine */
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(p, &bad, &buf2, &len2));
    free(buf2);
    free(lv);
    struct npu_model_prop many[NPU_NPUB_MAX_PROPS + 1];
    char keys[NPU_NPUB_MAX_PROPS + 1][8];
    for (unsigned i = 0; i <= NPU_NPUB_MAX_PROPS; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%u", i);
        many[i] = (struct npu_model_prop){keys[i], "v"};
    }
    bad.props = many;
    bad.n_props = NPU_NPUB_MAX_PROPS + 1;
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_npub_encode(p, &bad, &buf2, &len2));
    npu_log_set_handler(NULL, NULL);

    /* damage, checksums recomputed so that the PROPS checks are what fires */
    uint8_t *b = malloc(len);
    uint64_t psz = 0, poff = npub_section(buf, len, SEC_PROPS, &psz);
    uint64_t ssz = 0, soff = npub_section(buf, len, SEC_STRINGS, &ssz);
    CHECK(poff && psz == np * PROP_BYTES && soff);
#define DAMAGE(edit, words, what)                                                                  \
    do {                                                                                           \
        memcpy(b, buf, len);                                                                       \
        edit;                                                                                      \
        npub_rehash(b, len, 0);                                                                    \
        expect(b, len, NPU_ERR_CORRUPT, words, what);                                              \
    } while (0)
    DAMAGE(put32(b + poff + PR_KEY, (uint32_t)ssz), "metadata entry 0: string reference",
           "key outside the pool");
    DAMAGE(put32(b + poff + PROP_BYTES + PR_VALUE, NPUB_NO_STRING), "metadata entry 1: no value",
           "no value");
    DAMAGE(put32(b + poff + PROP_BYTES + PR_KEY, 0), "metadata entry 1: key of 0 bytes",
           "empty key");
    DAMAGE(put32(b + poff + PROP_BYTES + PR_KEY, get32(b + poff + PR_KEY)),
           "entries 0 and 1 have the same key 'opennpu.mean'", "repeated key");
    /* big.a's NUL made an 'x': its value runs on into big.b's, 80001 bytes */
    DAMAGE(b[soff + get32(b + poff + 2 * PROP_BYTES + PR_VALUE) + 40000] = 'x',
           "entry 2 'big.a': value of 80001 bytes (at most 65536)", "over-long value");
    DAMAGE(put32(b + H_FORMAT, 1), "section PROPS in a format 1 artifact", "PROPS in format 1");
    DAMAGE(put32(entry(b, SEC_PROPS) + S_COUNT, np - 1), "do not fill", "PROPS count");
#undef DAMAGE
    /* the section dropped from the table (count and table shrunk): a format-2
     * file without metadata loads, with none */
    memcpy(b, buf, len);
    uint32_t ns = get32(b + H_N_SECTIONS);
    uint8_t *pe = entry(b, SEC_PROPS);
    uint8_t *last = b + NPUB_HEADER_BYTES + (ns - 1) * NPUB_SECTION_ENTRY_BYTES;
    memmove(pe, pe + NPUB_SECTION_ENTRY_BYTES, (size_t)(last - pe));
    memset(last, 0, NPUB_SECTION_ENTRY_BYTES);
    put32(b + H_N_SECTIONS, ns - 1);
    npub_rehash(b, len, 0);
    CHECK_EQ_INT(NPU_OK, npu_npub_decode(b, len, &a, NULL, 0));
    CHECK(a && npu_npub_get_meta(a)->n_props == 0 && npu_npub_get_meta(a)->format_version == 2);
    npu_npub_free(a);
    free(b);
    test_mutations(buf, len, 4000, "an artifact with metadata");
    free(buf);
    free(va);
    free(vb);
    printf("model metadata: round trip of %u entries (format 2), bounds, damage refused\n", np);
}

/* A file of several staging blocks (npu_npub_save writes large files in 4 MB blocks, with
 * O_DIRECT where the file system allows, and the last partial block through the page
 * cache): its bytes are those of npu_npub_encode, in the model's folder and in /dev/shm. */
static void
test_large_file(const struct npu_program *hp)
{
    struct npu_program p = *hp;
    size_t wn = ((size_t)9 << 20) + 4096 * 3 + 64 + (size_t)hp->weights_bytes;
    uint8_t *w = malloc(wn);
    uint32_t sd = 11;
    for (size_t i = 0; i < wn; i++)
        w[i] = (uint8_t)(hp_rand(&sd) >> 3);
    memcpy(w, hp->weights, (size_t)hp->weights_bytes);
    p.weights = w;
    p.weights_bytes = wn;
    struct npu_npub_meta meta = {.source = "large.onnx"};
    void *buf = NULL;
    size_t len = 0;
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(&p, &meta, &buf, &len));
    CHECK(len > wn);
    static const char *const dirs[] = {"/tmp", "/dev/shm"};
    for (size_t k = 0; k < NPU_ARRAY_SIZE(dirs) && buf; k++) {
        char path[300], file[320];
        snprintf(path, sizeof(path), "%s/npub-large-XXXXXX", dirs[k]);
        if (!mkdtemp(path))
            continue; /* no such folder here */
        snprintf(file, sizeof(file), "%s/m.npub", path);
        CHECK_EQ_INT(NPU_OK, npu_npub_save(&p, &meta, file));
        FILE *f = fopen(file, "rb");
        uint8_t *back = malloc(len + 1);
        size_t got = f ? fread(back, 1, len + 1, f) : 0;
        if (f)
            fclose(f);
        CHECK_EQ_INT(len, got);
        CHECK(got == len && !memcmp(back, buf, len));
        free(back);
        unlink(file);
        rmdir(path);
    }
    free(buf);
    free(w);
}

int
main(void)
{
    test_hash();
    struct npu_device *dev = NULL;
    CHECK_EQ_INT(NPU_OK, npu_device_open("sim", &dev));
    struct hand_prog h;
    CHECK_EQ_INT(0, hand_prog_make(&h, 64, 64, 32, false, 3));
    float *a = malloc(64 * 64 * 4);
    uint32_t sd = 5;
    for (int i = 0; i < 64 * 64; i++)
        a[i] = ((int)(hp_rand(&sd) % 2001) - 1000) / 300.0f;
    struct npu_tensor x = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {64, 64}, .data = a};
    roundtrip(dev, &h.p, &x, "A.1 program");
    struct cpu_prog c;
    cpu_prog_make(&c);
    float xs[24];
    for (int i = 0; i < 24; i++)
        xs[i] = (float)i - 11.5f;
    struct npu_tensor xc = {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {2, 3, 4}, .data = xs};
    roundtrip(dev, &c.p, &xc, "CPU program");
    test_damage(&h.p);
    test_mutations(good, good_len, 20000, "the A.1 program");
    test_props(&h.p);
    test_props_onnx();
    test_large_file(&h.p);
    free(good);
    free(a);
    hand_prog_free(&h);
    npu_device_close(dev);
    return npu_test_done("test-npub");
}
