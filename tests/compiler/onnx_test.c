/* SPDX-License-Identifier: MIT */
/*
 * onnx_test.c: the importer and the text form on the generated test models
 * (gen_models.py): every valid model imports, verifies, and its IR text
 * round-trips (print -> parse -> print identical, before and after the pass
 * pipeline, blobs through a sidecar); every bad file is refused with a
 * message containing the manifest's keyword; the fusion cases fuse exactly
 * as the manifest says (near misses not at all); TensorProto files read back
 * with the values numpy wrote.
 *
 * usage: onnx_test <models dir>
 */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-test-onnx.h"
#include "npu/npu-passes.h"

static const char *
dims_for(const char *name)
{
    return strstr(name, "torch_block") ? "batch=1,seq=6" : NULL;
}

static void
roundtrip(const struct npu_graph *g, const char *what)
{
    char path[] = "/tmp/npu-onnx-test-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        CHECK(0);
        return;
    }
    close(fd);
    char side[300];
    snprintf(side, sizeof(side), "%s.bin", path);
    struct npu_graph *g2 = NULL;
    CHECK_EQ_INT(NPU_OK, npu_ir_save(g, path));
    CHECK_EQ_INT(NPU_OK, npu_ir_load(path, &g2));
    char *a = npu_ir_print_str(g, NULL), *b = g2 ? npu_ir_print_str(g2, NULL) : NULL;
    bool same = a && b && !strcmp(a, b);
    CHECK(same);
    if (!same)
        fprintf(stderr, "%s: text round trip differs\n", what);
    free(a);
    free(b);
    npu_graph_free(g2);
    remove(path);
    remove(side);
}

static void
valid_models(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/valid", dir);
    struct dirent **ents = NULL; /* unset when scandir fails */
    int n = scandir(p, &ents, NULL, alphasort), count = 0;
    CHECK(n > 10);
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        if (name[0] == '.') {
            free(ents[i]);
            continue;
        }
        char mp[1300];
        snprintf(mp, sizeof(mp), "%s/%s/model.onnx", p, name);
        struct npu_onnx_options o = {.dim_values = dims_for(name)};
        struct npu_graph *g = NULL;
        npu_test_log[0] = 0;
        enum npu_status st = npu_onnx_load(mp, &o, &g);
        CHECK_EQ_INT(NPU_OK, st);
        if (st) {
            fprintf(stderr, "%s: %s", name, npu_test_log);
        } else {
            count++;
            CHECK_EQ_INT(NPU_OK, npu_graph_verify(g));
            roundtrip(g, name);
            struct npu_compile_options co = {.verify = 1};
            CHECK_EQ_INT(NPU_OK, npu_compile(g, &co));
            roundtrip(g, name);
            /* with concrete shapes no Shape node survives the pipeline */
            npu_graph_for_each_node (g, nd)
                CHECK(nd->op != NPU_OP_SHAPE && nd->op != NPU_OP_CONSTANT);
        }
        npu_graph_free(g);
        free(ents[i]);
    }
    free(ents);
    printf("onnx_test: %d valid models imported\n", count);
}

static void
bad_models(const char *dir)
{
    int count = npu_test_onnx_bad_files(dir);
    CHECK(count >= 20);
    printf("onnx_test: %d bad files refused\n", count);
}

static void
fusion_cases(const char *dir)
{
    char p[1024], line[512];
    snprintf(p, sizeof(p), "%s/fuse/manifest.txt", dir);
    FILE *f = fopen(p, "r");
    CHECK(f != NULL);
    int count = 0;
    while (f && fgets(line, sizeof(line), f)) {
        char file[256], op[64];
        int want;
        if (sscanf(line, "%255s %63s %d", file, op, &want) != 3)
            continue;
        char mp[1400];
        snprintf(mp, sizeof(mp), "%s/fuse/%s", dir, file);
        struct npu_graph *g = NULL;
        CHECK_EQ_INT(NPU_OK, npu_onnx_load(mp, NULL, &g));
        if (!g)
            continue;
        struct npu_compile_options co = {.verify = 1};
        CHECK_EQ_INT(NPU_OK, npu_compile(g, &co));
        int got = npu_test_count_op(g, op);
        CHECK_EQ_INT(want, got);
        if (got != want) {
            fprintf(stderr, "%s: %d x %s, expected %d\n", file, got, op, want);
            npu_ir_print(g, stderr, NULL);
        }
        npu_graph_free(g);
        count++;
    }
    if (f)
        fclose(f);
    printf("onnx_test: %d fusion cases\n", count);
}

/* The torch exports fuse the way their source says. */
static void
torch_fusions(const char *dir)
{
    static const struct {
        const char *model, *op;
        int count;
    } want[] = {
        {"torch_block", "LayerNormalization", 2},
        {"torch_block", "npu.Attention", 1},
        {"torch_block", "Gelu", 0},
        {"torch_block", "npu.SiLU", 1},
        {"torch_block_tanh", "npu.GeluTanh", 0},
        {"torch_block_tanh", "npu.Attention", 1},
        {"torch_mlp", "Gelu", 1},
        {"torch_silu", "npu.SiLU", 1},
        {"torch_convnet", "BatchNormalization", 0},
        {"torch_convnet", "Relu", 0},
        {"torch_convnet", "Clip", 0},
        {"torch_block_opset17", "npu.Attention", 1},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(want); i++) {
        char mp[1200];
        snprintf(mp, sizeof(mp), "%s/valid/%s/model.onnx", dir, want[i].model);
        struct npu_onnx_options o = {.dim_values = dims_for(want[i].model)};
        struct npu_graph *g = NULL;
        CHECK_EQ_INT(NPU_OK, npu_onnx_load(mp, &o, &g));
        if (!g)
            continue;
        CHECK_EQ_INT(NPU_OK, npu_compile(g, NULL));
        int got = npu_test_count_op(g, want[i].op);
        CHECK_EQ_INT(want[i].count, got);
        if (got != want[i].count)
            fprintf(stderr, "%s: %d x %s, expected %d\n", want[i].model, got, want[i].op,
                    want[i].count);
        npu_graph_free(g);
    }
}

static void
tensor_files(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/valid/add_mul/test_data_set_0/input_0.pb", dir);
    struct npu_tensor t;
    char *name = NULL;
    CHECK_EQ_INT(NPU_OK, npu_onnx_read_tensor(p, &t, &name));
    CHECK_EQ_INT(NPU_DTYPE_FP32, t.dtype);
    CHECK_EQ_INT(2, t.ndim);
    CHECK_EQ_INT(3, t.dims[1]);
    free(t.data);
    free(name);
    CHECK(npu_onnx_read_tensor("/nonexistent.pb", &t, NULL) != NPU_OK);
    static const unsigned char junk[] = {0xff, 0xff, 0xff, 0x07};
    CHECK(npu_onnx_parse_tensor(junk, sizeof(junk), &t, NULL) != NPU_OK);
}

/* Symbolic dims sized through an input's axis ("x:1=5", what npu-run passes for
 * --input files): the dim's name takes the value, so every input with that dim
 * agrees; a name given outright wins; two axes that disagree are refused. */
static void
dims_by_axis(const char *dir)
{
    char mp[1200];
    snprintf(mp, sizeof(mp), "%s/valid/torch_block/model.onnx", dir);
    static const struct {
        const char *spec;
        int64_t batch, seq; /* expected dims of x[0], x[1]; 0: the load fails */
    } cases[] = {
        {"x:0=2,x:1=5", 2, 5},          {"mask:1=7", 1, 7}, /* seq from mask, passed on to x */
        {"seq=3,x:1=5", 1, 3},                              /* the name outright wins */
        {"x:1=5,mask:1=6", 0, 0},                           /* disagree */
        {"x:1=5,mask:1=5,x:2=9", 1, 5}, /* x:2 is a fixed dim (32): not consulted */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct npu_onnx_options o = {.dim_values = cases[i].spec};
        struct npu_graph *g = NULL;
        npu_test_log[0] = 0;
        enum npu_status st = npu_onnx_load(mp, &o, &g);
        if (!cases[i].batch) {
            CHECK(st != NPU_OK && strstr(npu_test_log, "dim 'seq'") != NULL);
            npu_graph_free(g);
            continue;
        }
        CHECK_EQ_INT(NPU_OK, st);
        if (st) {
            fprintf(stderr, "%s: %s", cases[i].spec, npu_test_log);
            continue;
        }
        const struct npu_value *x = npu_graph_find_value(g, "x");
        const struct npu_value *m = npu_graph_find_value(g, "mask");
        CHECK(x && m);
        if (x && m) {
            CHECK_EQ_INT(cases[i].batch, x->t.dims[0]);
            CHECK_EQ_INT(cases[i].seq, x->t.dims[1]);
            CHECK_EQ_INT(32, x->t.dims[2]);
            CHECK_EQ_INT(cases[i].batch, m->t.dims[0]);
            CHECK_EQ_INT(cases[i].seq, m->t.dims[1]);
        }
        npu_graph_free(g);
    }
}

/* A model laid out like the Hugging Face hub cache (snapshots/<rev>/ files are
 * symbolic links into blobs/) loads; a link to a file outside that tree's
 * blobs folder is still refused. */
static void
hub_layout(const char *dir)
{
    char tmpl[] = "/tmp/npu-hub-XXXXXX";
    char *t = mkdtemp(tmpl), p[1024], q[1024];
    CHECK(t != NULL);
    if (!t)
        return;
    const char *mk[] = {"models--o--m", "models--o--m/blobs", "models--o--m/snapshots",
                        "models--o--m/snapshots/rev1", "other"};
    for (size_t i = 0; i < sizeof(mk) / sizeof(mk[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", t, mk[i]);
        CHECK(mkdir(p, 0755) == 0);
    }
    const char *files[][2] = {{"model.onnx", "models--o--m/blobs/1111"},
                              {"weights.bin", "models--o--m/blobs/2222"},
                              {"weights.bin", "other/2222"}};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/valid/external_data/%s", dir, files[i][0]);
        snprintf(q, sizeof(q), "%s/%s", t, files[i][1]);
        FILE *in = fopen(p, "rb"), *out = fopen(q, "wb");
        CHECK(in && out);
        char buf[4096];
        size_t n;
        while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
            CHECK(fwrite(buf, 1, n, out) == n);
        if (in)
            fclose(in);
        if (out)
            fclose(out);
    }
    snprintf(p, sizeof(p), "%s/models--o--m/snapshots/rev1/model.onnx", t);
    CHECK(symlink("../../blobs/1111", p) == 0);
    snprintf(q, sizeof(q), "%s/models--o--m/snapshots/rev1/weights.bin", t);
    CHECK(symlink("../../blobs/2222", q) == 0);
    struct npu_graph *g = NULL;
    npu_test_log[0] = 0;
    CHECK_EQ_INT(NPU_OK, npu_onnx_load(p, NULL, &g));
    if (npu_test_log[0])
        fprintf(stderr, "hub layout: %s\n", npu_test_log);
    npu_graph_free(g);
    g = NULL;
    /* the data file linked to a file outside the tree's blobs folder */
    CHECK(unlink(q) == 0);
    CHECK(symlink("../../../other/2222", q) == 0);
    npu_test_log[0] = 0;
    CHECK(npu_onnx_load(p, NULL, &g) != NPU_OK);
    CHECK(strstr(npu_test_log, "outside the model's folder") != NULL);
    npu_graph_free(g);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t);
    CHECK(system(cmd) == 0);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: onnx_test <models dir>\n");
        return 2;
    }
    npu_log_set_handler(npu_test_log_capture, NULL);
    valid_models(argv[1]);
    bad_models(argv[1]);
    fusion_cases(argv[1]);
    torch_fusions(argv[1]);
    tensor_files(argv[1]);
    dims_by_axis(argv[1]);
    hub_layout(argv[1]);
    return npu_test_done("onnx_test");
}
