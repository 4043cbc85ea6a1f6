/* SPDX-License-Identifier: MIT */
/*
 * test-routes.c: route b for rk.Dpu nodes: a model lowered by the back end (with the
 * DPU lowerings' layer norm, attention, softmax, GELU, pooling, data movement and aliases),
 * saved as IR text + sidecar, loaded again (which re-runs rk.Dpu's inference and its
 * bounds checks) and compiled, gives the same program: the same regcmd bytes, tasks,
 * relocations, weights and memory sizes. Usage: test-routes DATA_DIR [model...].
 */
#include <unistd.h>

#include "npu-test-util.h"
#include "npu/npu-onnx.h"

static bool
same_job(const struct npu_prog_job *a, const struct npu_prog_job *b)
{
    if (a->n_qwords != b->n_qwords || a->n_tasks != b->n_tasks || a->n_relocs != b->n_relocs ||
        memcmp(a->regcmd, b->regcmd, (size_t)a->n_qwords * 8))
        return false;
    for (uint32_t i = 0; i < a->n_tasks; i++)
        if (a->tasks[i].start != b->tasks[i].start || a->tasks[i].n_body != b->tasks[i].n_body ||
            a->tasks[i].enable_mask != b->tasks[i].enable_mask)
            return false;
    for (uint32_t i = 0; i < a->n_relocs; i++)
        if (a->relocs[i].qword != b->relocs[i].qword ||
            a->relocs[i].buffer != b->relocs[i].buffer ||
            a->relocs[i].offset != b->relocs[i].offset)
            return false;
    return true;
}

static void
route_b(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, name);
    struct npu_graph *ga = NULL, *gb = NULL;
    struct npu_compile_options co = {0};
    struct npu_program *pa = NULL, *pb = NULL;
    if (npu_onnx_load(path, NULL, &ga) || npu_compile(ga, &co)) {
        fprintf(stderr, "%s: cannot load\n", path);
        npu_test_checks++, npu_test_failures++;
        npu_graph_free(ga);
        return;
    }
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(ga, NULL));
    CHECK_EQ_INT(NPU_OK, npu_codegen(ga, NULL, &pa));
    int n_dpu = 0;
    npu_graph_for_each_node (ga, n)
        n_dpu += n->op == NPU_OP_RK_DPU;
    /* every job's tasks are what its nodes say they emit (npu_backend_node_tasks) */
    if (pa) {
        long listed = 0, jobs = 0;
        npu_graph_for_each_node (ga, n) {
            int c = npu_backend_node_tasks(n);
            if (c > 0)
                listed += c;
            else if (c < 0 && npu_op_is_rk(n->op) && n->op != NPU_OP_RK_TO_NPU &&
                     n->op != NPU_OP_RK_TO_HOST)
                CHECK(!"rk compute node without a task count");
        }
        for (int j = 0; j < pa->n_jobs; j++)
            jobs += pa->jobs[j].n_tasks;
        CHECK_EQ_INT(jobs, listed);
    }
    char tmp[] = "/tmp/dpu-routes-XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    close(fd);
    CHECK_EQ_INT(NPU_OK, npu_ir_save(ga, tmp));
    CHECK_EQ_INT(NPU_OK, npu_ir_load(tmp, &gb));
    char side[64];
    snprintf(side, sizeof(side), "%s.bin", tmp);
    unlink(tmp);
    unlink(side);
    if (gb)
        CHECK_EQ_INT(NPU_OK, npu_codegen(gb, NULL, &pb));
    CHECK(pa && pb);
    if (pa && pb) {
        CHECK_EQ_INT(pa->n_jobs, pb->n_jobs);
        CHECK_EQ_INT(pa->n_steps, pb->n_steps);
        CHECK_EQ_INT(pa->act_bytes, pb->act_bytes);
        CHECK(pa->weights_bytes == pb->weights_bytes &&
              !memcmp(pa->weights, pb->weights, pa->weights_bytes));
        int same = 0;
        for (int j = 0; j < pa->n_jobs && j < pb->n_jobs; j++)
            same += same_job(&pa->jobs[j], &pb->jobs[j]);
        CHECK_EQ_INT(pa->n_jobs, same);
        printf("  %-14s %d rk.Dpu nodes, %d jobs: text round trip gives identical programs: %s\n",
               name, n_dpu, pa->n_jobs, same == pa->n_jobs ? "yes" : "NO");
    }
    npu_program_free(pa);
    npu_program_free(pb);
    npu_graph_free(ga);
    npu_graph_free(gb);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-routes DATA_DIR [model...]\n");
        return 2;
    }
    static const char *const def[] = {"siglip_tiny", "gpt2_tiny", "cnn_small", "external_data"};
    printf("route b (IR text) with the DPU lowerings' ops:\n");
    if (argc > 2)
        for (int i = 2; i < argc; i++)
            route_b(argv[1], argv[i]);
    else
        for (size_t i = 0; i < NPU_ARRAY_SIZE(def); i++)
            route_b(argv[1], def[i]);
    return npu_test_done("dpu-routes");
}
