// SPDX-License-Identifier: MIT
/*
 * test-vhlo.c: the MLIR bytecode (VHLO portable artifact) decoder of the
 * StableHLO reader against the stablehlo repository's own artifacts and
 * their StableHLO text (tests/pjrt/vhlo/, README.md there).
 *
 * For each pair ARTIFACT.mlir.bc TEXT.mlir: every function of the artifact
 * is decoded and, as the entry, mapped into a graph; the function of the
 * same name in the text must give the same result: both refused, or two
 * graphs with the same nodes in the same order (op, attributes, inputs,
 * output types, constant data), inputs and outputs. The functions named
 * in REQUIRED (one per op the reader covers) must map. Functions refused
 * from bytecode must name their VHLO op and the producer. Then every
 * truncation of the artifact (at up to 600 points) and 400 random byte
 * mutations must be refused with a message or decoded, never crash or
 * leak (the sanitizer build runs this too). Two artifacts written here by
 * hand (bytecode version 1): one maps to an Add; one whose attribute shares
 * its parts 2^40 times is refused instead of taking exponential time.
 *
 * Usage: test-vhlo REQUIRED ARTIFACT.mlir.bc TEXT.mlir [ARTIFACT TEXT]...
 *   REQUIRED: comma-separated function names. $VHLO_MUTANTS and $VHLO_SEED
 *   set the mutation count and seed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-ir.h"
#include "npu/npu-stablehlo.h"
#include "shlo-test-util.h"

static int failures;
static bool
same_value_type(const struct npu_value *a, const struct npu_value *b)
{
    if (a->t.dtype != b->t.dtype || a->t.ndim != b->t.ndim)
        return false;
    for (int i = 0; i < a->t.ndim; i++)
        if (a->t.dims[i] != b->t.dims[i])
            return false;
    const void *da = npu_value_data(a), *db = npu_value_data(b);
    if (!da != !db)
        return false;
    if (da) {
        struct npu_tensor t = a->t;
        int64_t nb = npu_tensor_nbytes(&t);
        if (nb > 0 && memcmp(da, db, (size_t)nb))
            return false;
    }
    return true;
}

static bool
same_attr(const struct npu_attr *a, const struct npu_attr *b)
{
    if (strcmp(a->name, b->name) || a->type != b->type || a->i != b->i || a->n != b->n)
        return false;
    if (a->f != b->f && !(a->f != a->f && b->f != b->f))
        return false;
    if (a->ints && b->ints && a->n && memcmp(a->ints, b->ints, a->n * sizeof *a->ints))
        return false;
    if (a->floats && b->floats && a->n && memcmp(a->floats, b->floats, a->n * sizeof *a->floats))
        return false;
    if (a->s && b->s && strcmp(a->s, b->s))
        return false;
    return true;
}

/* The same nodes in the same order; NULL, else what differs. */
static const char *
compare(const struct npu_graph *a, const struct npu_graph *b)
{
    if (a->ninputs != b->ninputs || a->noutputs != b->noutputs || a->nnodes != b->nnodes)
        return "different numbers of inputs, outputs or nodes";
    for (int i = 0; i < a->ninputs; i++)
        if (!same_value_type(a->inputs[i], b->inputs[i]))
            return "an input differs";
    for (int i = 0; i < a->noutputs; i++)
        if (!same_value_type(a->outputs[i], b->outputs[i]))
            return "an output differs";
    const struct npu_node *x = a->head, *y = b->head;
    for (; x && y; x = x->next, y = y->next) {
        if (x->op != y->op || x->nin != y->nin || x->nout != y->nout || x->nattr != y->nattr)
            return "a node differs (op, operand or attribute count)";
        for (int i = 0; i < x->nin; i++)
            if (!x->in[i] != !y->in[i] || (x->in[i] && !same_value_type(x->in[i], y->in[i])))
                return "a node's input differs";
        for (int i = 0; i < x->nout; i++)
            if (!same_value_type(x->out[i], y->out[i]))
                return "a node's output type differs";
        for (int i = 0; i < x->nattr; i++)
            if (!same_attr(&x->attr[i], &y->attr[i]))
                return "a node's attribute differs";
    }
    return x || y ? "node lists differ" : NULL;
}

/* The function names of the decoded text, in order. */
static int
functions(const char *text, char (*names)[128], int max)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, "func.func ")) && n < max; p++) {
        const char *q = strchr(p, '@');
        if (!q || q[1] != '"')
            continue;
        const char *e = strchr(q + 2, '"');
        if (!e || e - q - 2 >= 127)
            continue;
        snprintf(names[n++], 128, "%.*s", (int)(e - q - 2), q + 2);
    }
    return n;
}

static void
check_pair(const char *bcpath, const char *txtpath, const char *required)
{
    size_t blen = 0, tlen = 0;
    char *bc = npu_test_slurp(bcpath, &blen), *txt = npu_test_slurp(txtpath, &tlen);
    char *dec = NULL;
    size_t dlen = 0;
    static char names[1024][128];
    if (!bc || !txt) {
        fprintf(stderr, "FAIL: cannot read %s or %s\n", bcpath, txtpath);
        failures++;
        goto out;
    }
    last[0] = 0;
    if (npu_stablehlo_bytecode_to_text(bc, blen, &dec, &dlen)) {
        fprintf(stderr, "FAIL: %s does not decode: %s\n", bcpath, last);
        failures++;
        goto out;
    }
    int nf = functions(dec, names, 1024), mapped = 0, refused = 0, compared = 0;
    for (int i = 0; i < nf; i++) {
        struct npu_graph *g1 = NULL, *g2 = NULL;
        char m1[sizeof last];
        last[0] = 0;
        enum npu_status s1 = npu_stablehlo_parse_entry(bc, blen, names[i], &g1);
        memcpy(m1, last, sizeof m1);
        last[0] = 0;
        enum npu_status s2 = npu_stablehlo_parse_entry(txt, tlen, names[i], &g2);
        bool in_text = !strstr(last, "no function @");
        if (getenv("VHLO_VERBOSE"))
            printf("  @%s: %s\n", names[i], s1 == NPU_OK ? "mapped" : m1);
        if (s1 == NPU_OK) {
            mapped++;
            if (npu_graph_verify(g1) != NPU_OK) {
                fprintf(stderr, "FAIL: %s @%s: the graph does not verify\n", bcpath, names[i]);
                failures++;
            }
        } else {
            refused++;
            if (!strstr(m1, "producer 'StableHLO_v") ||
                (strstr(m1, "is not supported by the StableHLO reader") && !strstr(m1, "(vhlo."))) {
                fprintf(stderr, "FAIL: %s @%s: refusal names no VHLO op or producer: %s\n", bcpath,
                        names[i], m1);
                failures++;
            }
        }
        if (in_text) {
            compared++;
            const char *why = NULL;
            if ((s1 == NPU_OK) != (s2 == NPU_OK))
                why = s1 == NPU_OK ? "the text is refused" : "the bytecode is refused";
            else if (s1 == NPU_OK)
                why = compare(g1, g2);
            if (why) {
                fprintf(stderr, "FAIL: %s @%s: %s (bytecode: %s | text: %s)\n", bcpath, names[i],
                        why, s1 ? m1 : "ok", s2 ? last : "ok");
                failures++;
            }
        }
        npu_graph_free(g1);
        npu_graph_free(g2);
    }
    /* the functions of the ops the reader covers must map */
    char req[4096];
    snprintf(req, sizeof req, "%s", required);
    for (char *tok = strtok(req, ","); tok; tok = strtok(NULL, ",")) {
        struct npu_graph *g = NULL;
        last[0] = 0;
        if (npu_stablehlo_parse_entry(bc, blen, tok, &g) != NPU_OK) {
            fprintf(stderr, "FAIL: %s @%s is not mapped: %s\n", bcpath, tok, last);
            failures++;
        }
        npu_graph_free(g);
    }
    printf("%s: %d functions decoded, %d mapped, %d refused by name, %d compared with the "
           "text\n",
           bcpath, nf, mapped, refused, compared);
out:
    free(dec);
    free(bc);
    free(txt);
}

static uint64_t rng;
static uint32_t
rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

/* Truncations and byte mutations: refused with a message or decoded. */
static void
fuzz(const char *bcpath, int mutants)
{
    size_t len = 0;
    char *bc = npu_test_slurp(bcpath, &len), *m = bc ? malloc(len + 1) : NULL;
    if (!bc || !m) {
        failures++;
        free(bc);
        return;
    }
    int refused = 0, accepted = 0;
    size_t step = len / 600 + 1;
    for (size_t cut = 0; cut < len; cut += step) {
        struct npu_graph *g = NULL;
        char *t = NULL;
        size_t tl;
        last[0] = 0;
        memcpy(m, bc, cut);
        enum npu_status st = npu_stablehlo_bytecode_to_text(m, cut, &t, &tl);
        if (st == NPU_OK) {
            accepted++;
        } else {
            refused++;
            if (!last[0]) {
                fprintf(stderr, "FAIL: %s cut at %zu refused without a message\n", bcpath, cut);
                failures++;
            }
        }
        free(t);
        st = npu_stablehlo_parse_entry(m, cut, NULL, &g);
        npu_graph_free(g);
    }
    for (int k = 0; k < mutants; k++) {
        memcpy(m, bc, len);
        int nb = 1 + (int)(rnd() % 4);
        for (int j = 0; j < nb; j++) {
            size_t at = rnd() % len;
            switch (rnd() % 4) {
            case 0: m[at] = (char)rnd(); break;
            case 1: m[at] = (char)(m[at] ^ (1 << (rnd() % 8))); break;
            case 2: m[at] = (char)0xFF; break;
            default: m[at] = 0; break;
            }
        }
        char *t = NULL;
        size_t tl;
        last[0] = 0;
        enum npu_status st = npu_stablehlo_bytecode_to_text(m, len, &t, &tl);
        if (st != NPU_OK && !last[0]) {
            fprintf(stderr, "FAIL: %s mutant %d refused without a message\n", bcpath, k);
            failures++;
        }
        st == NPU_OK ? accepted++ : refused++;
        free(t);
        if (k % 10 == 0) { /* and mapped, one function as the entry */
            struct npu_graph *g = NULL;
            npu_stablehlo_parse_entry(m, len, "op_add", &g);
            if (g && npu_graph_verify(g) != NPU_OK) {
                fprintf(stderr, "FAIL: %s mutant %d gives a graph that does not verify\n", bcpath,
                        k);
                failures++;
            }
            npu_graph_free(g);
        }
    }
    printf("%s: truncations and %d mutants: %d refused with a message, %d decoded\n", bcpath,
           mutants, refused, accepted);
    free(m);
    free(bc);
}

/* ---- a hand-made artifact -------------------------------------------------- */

struct wb {
    unsigned char b[2048];
    size_t n;
};

static void
wbyte(struct wb *w, unsigned v)
{
    if (w->n < sizeof w->b)
        w->b[w->n++] = (unsigned char)v;
}

static void
wvar(struct wb *w, uint64_t v) /* PrefixVarInt, values < 2^14 here */
{
    if (v < 128) {
        wbyte(w, (unsigned)(v << 1 | 1));
    } else {
        wbyte(w, (unsigned)((v << 2 | 2) & 0xff));
        wbyte(w, (unsigned)(v >> 6));
    }
}

static void
wsec(struct wb *w, unsigned id, const struct wb *data)
{
    wbyte(w, id);
    wvar(w, data->n);
    for (size_t i = 0; i < data->n; i++)
        wbyte(w, data->b[i]);
}

/* MLIR bytecode version 1 (isolated regions inline, no properties), written
 * here from the format: module { vhlo.func_v1 @main(%a: tensor<f32>) {
 * %r = vhlo.add_v1 %a, %a {x = ATTR}; vhlo.return_v1 %r } }, where ATTR is
 * an array of one integer, or (self) the first of 40 arrays each holding the
 * next one twice. */
static size_t
crafted(unsigned char *out, size_t cap, bool self)
{
    static const char *const strs[] = {"builtin", "vhlo",      "module",   "func_v1",
                                       "add_v1",  "return_v1", "sym_name", "function_type",
                                       "main",    "x"};
    struct wb f = {{0}, 0}, s = {{0}, 0}, d = {{0}, 0}, at = {{0}, 0}, off = {{0}, 0},
              ir = {{0}, 0};
    int ns = (int)(sizeof strs / sizeof strs[0]);
    wvar(&s, (uint64_t)ns);
    for (int i = ns - 1; i >= 0; i--)
        wvar(&s, strlen(strs[i]) + 1);
    for (int i = 0; i < ns; i++)
        for (const char *p = strs[i];; p++) {
            wbyte(&s, (unsigned char)*p);
            if (!*p)
                break;
        }
    /* dialects builtin, vhlo (no versions); ops: builtin.module, vhlo.func/add/return */
    wvar(&d, 2);
    wvar(&d, 0 << 1);
    wvar(&d, 1 << 1);
    wvar(&d, 0), wvar(&d, 1), wvar(&d, 2);
    wvar(&d, 1), wvar(&d, 3), wvar(&d, 3), wvar(&d, 4), wvar(&d, 5);
    /* attributes: builtin 0 unknown loc, 1 dict(func), 2 "sym_name", 3
     * "function_type", 4 dict(add), 5 "x"; vhlo 6 string "main", 7
     * type(function), 8 the array, 9 integer 7 : i64.
     * types: vhlo 0 f32, 1 tensor<f32>, 2 (tensor<f32>) -> tensor<f32>, 3 i64 */
    int chain = self ? 40 : 1; /* arrays 8 .. 8 + chain - 1, then the integer */
    size_t sz[64];
    size_t k = 0, m;
#define ENTRY(...)                                                                                 \
    do {                                                                                           \
        m = at.n;                                                                                  \
        __VA_ARGS__;                                                                               \
        sz[k++] = at.n - m;                                                                        \
    } while (0)
    ENTRY(wvar(&at, 15));
    ENTRY(wvar(&at, 1); wvar(&at, 2); wvar(&at, 2); wvar(&at, 6); wvar(&at, 3); wvar(&at, 7));
    ENTRY(wvar(&at, 2); wvar(&at, 6));
    ENTRY(wvar(&at, 2); wvar(&at, 7));
    ENTRY(wvar(&at, 1); wvar(&at, 1); wvar(&at, 5); wvar(&at, 8));
    ENTRY(wvar(&at, 2); wvar(&at, 9));
    ENTRY(wvar(&at, 14); wvar(&at, 8));
    ENTRY(wvar(&at, 17); wvar(&at, 2));
    for (int i = 0; i < chain; i++) /* each holds the next twice: 2^chain renderings */
        ENTRY(wvar(&at, 1); wvar(&at, self ? 2 : 1); wvar(&at, 8 + (unsigned)i + 1);
              if (self) wvar(&at, 8 + (unsigned)i + 1));
    ENTRY(wvar(&at, 9); wvar(&at, 3); wvar(&at, 14)); /* 7 : i64, zigzag */
    size_t nattr = k;
    ENTRY(wvar(&at, 4));
    ENTRY(wvar(&at, 20); wvar(&at, 0); wvar(&at, 0));
    ENTRY(wvar(&at, 8); wvar(&at, 1); wvar(&at, 1); wvar(&at, 1); wvar(&at, 1));
    ENTRY(wvar(&at, 14));
#undef ENTRY
    wvar(&off, nattr), wvar(&off, 4);
    wvar(&off, 0), wvar(&off, 6);
    for (size_t i = 0; i < 6; i++)
        wvar(&off, sz[i] << 1 | 1);
    wvar(&off, 1), wvar(&off, nattr - 6);
    for (size_t i = 6; i < nattr; i++)
        wvar(&off, sz[i] << 1 | 1);
    wvar(&off, 1), wvar(&off, 4);
    for (size_t i = nattr; i < nattr + 4; i++)
        wvar(&off, sz[i] << 1 | 1);
    /* IR: one op (module); its region: one block, one op (func); the func's
     * region: 2 values, a block with one argument and two ops */
    wvar(&ir, 1 << 1);
    wvar(&ir, 0), wbyte(&ir, 0x10), wvar(&ir, 0), wvar(&ir, 1 << 1 | 1);
    wvar(&ir, 1), wvar(&ir, 0), wvar(&ir, 1 << 1);
    wvar(&ir, 1), wbyte(&ir, 0x11), wvar(&ir, 0), wvar(&ir, 1), wvar(&ir, 1 << 1 | 1);
    wvar(&ir, 1), wvar(&ir, 2), wvar(&ir, 2 << 1 | 1), wvar(&ir, 1), wvar(&ir, 1), wvar(&ir, 0);
    wvar(&ir, 2), wbyte(&ir, 0x07), wvar(&ir, 0), wvar(&ir, 4), wvar(&ir, 1), wvar(&ir, 1);
    wvar(&ir, 2), wvar(&ir, 0), wvar(&ir, 0);
    wvar(&ir, 3), wbyte(&ir, 0x04), wvar(&ir, 0), wvar(&ir, 1), wvar(&ir, 1);
    for (const char *p = "ML\xefR"; *p; p++)
        wbyte(&f, (unsigned char)*p);
    wvar(&f, 1);
    for (const char *p = "test"; *p; p++)
        wbyte(&f, (unsigned char)*p);
    wbyte(&f, 0);
    wsec(&f, 0, &s);
    wsec(&f, 1, &d);
    wsec(&f, 2, &at);
    wsec(&f, 3, &off);
    wsec(&f, 4, &ir);
    if (f.n > cap)
        return 0;
    memcpy(out, f.b, f.n);
    return f.n;
}

static void
check_crafted(void)
{
    unsigned char buf[2048];
    struct npu_graph *g = NULL;
    size_t n = crafted(buf, sizeof buf, false);
    last[0] = 0;
    enum npu_status st = npu_stablehlo_parse((const char *)buf, n, &g);
    if (st != NPU_OK || !g || g->ninputs != 1 || g->noutputs != 1 || g->nnodes != 1 ||
        g->head->op != NPU_OP_ADD) {
        fprintf(stderr, "FAIL: the hand-made version 1 artifact does not map to one Add: %s\n",
                last);
        failures++;
    }
    npu_graph_free(g);
    g = NULL;
    n = crafted(buf, sizeof buf, true);
    last[0] = 0;
    st = npu_stablehlo_parse((const char *)buf, n, &g);
    if (st == NPU_OK || !strstr(last, "repeat too much")) {
        fprintf(stderr, "FAIL: an attribute shared 2^40 times is not refused: %s\n", last);
        failures++;
    }
    npu_graph_free(g);
    printf("hand-made artifacts: %s\n", failures ? "FAILED" : "ok");
}

int
main(int argc, char **argv)
{
    if (argc < 4 || argc % 2) {
        fprintf(stderr, "usage: test-vhlo REQUIRED ARTIFACT.mlir.bc TEXT.mlir...\n");
        return 2;
    }
    npu_log_set_handler(sink, NULL);
    const char *e = getenv("VHLO_MUTANTS");
    int mutants = e ? atoi(e) : 400;
    e = getenv("VHLO_SEED");
    rng = e ? strtoull(e, NULL, 10) : 4242;
    check_crafted();
    for (int i = 2; i + 1 < argc; i += 2)
        check_pair(argv[i], argv[i + 1], argv[1]);
    for (int i = 2; i + 1 < argc; i += 2)
        fuzz(argv[i], mutants);
    /* a refusal names the op, the VHLO op and the producer */
    {
        static const char junk[] = "ML\xefR\x0d"
                                   "StableHLO_v1.0.0";
        struct npu_graph *g = NULL;
        last[0] = 0;
        if (npu_stablehlo_parse(junk, sizeof junk, &g) == NPU_OK || !strstr(last, "corrupt")) {
            fprintf(stderr, "FAIL: a header alone is not refused as corrupt: %s\n", last);
            failures++;
        }
        npu_graph_free(g);
    }
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    else
        printf("ok\n");
    return failures ? 1 : 0;
}
