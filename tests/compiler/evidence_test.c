/* SPDX-License-Identifier: MIT */
/*
 * evidence_test.c: every register write the compiler emits is in the evidence
 * ledger. Each tiny model of tests/models/data (argv[1]; its meta.txt gives
 * the symbolic dims) is compiled with every supported node on the NPU, and
 * each NPU task is classified with npu_evidence_classify_task(): no write may
 * be uncovered (the simulator's strict allow-list would refuse it), and the
 * per-level counts add up to the program's tasks. The LUT activations of the
 * transformer models use patterns no hardware-tested source uses, so their
 * programs have T tasks, and the layout copies match the onpu streams (O).
 */
#include <dirent.h>

#include "npu-test.h"
#include "npu/npu-build.h"
#include "npu/npu-evidence.h"

static void
check_model(const char *dir, const char *name)
{
    char path[1024], dims[256] = "";
    snprintf(path, sizeof(path), "%s/%s/meta.txt", dir, name);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(dims, sizeof(dims), f))
            dims[strcspn(dims, "\r\n")] = 0;
        fclose(f);
    }
    snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, name);
    struct npu_build_options bo = {.no_cache = true, .partition = NPU_PARTITION_SUPPORTED};
    bo.dim_values = dims[0] ? dims : NULL;
    struct npu_built *b = NULL;
    CHECK_EQ_INT(NPU_OK, npu_build(path, &bo, &b));
    if (!b)
        return;
    unsigned count[NPU_EVIDENCE_LEVELS] = {0}, tasks = 0;
    for (int j = 0; j < b->prog->n_jobs; j++) {
        const struct npu_prog_job *job = &b->prog->jobs[j];
        for (uint32_t t = 0; t < job->n_tasks; t++) {
            const struct npu_prog_task *tk = &job->tasks[t];
            struct npu_evidence_write w[2048];
            size_t n = 0;
            enum npu_evidence_level lv;
            CHECK_EQ_INT(NPU_OK, npu_evidence_classify_task(job->regcmd + tk->start, tk->n_body + 4,
                                                            w, 2048, &n, &lv));
            count[lv]++;
            tasks++;
            for (size_t k = 0; k < n && k < 2048; k++)
                if (!w[k].entry) {
                    fprintf(stderr, "%s: job %d task %u: %s = 0x%08x outside the ledger\n", name, j,
                            t, npu_evidence_reg_name(w[k].offset), w[k].value);
                    CHECK(w[k].entry != NULL);
                }
        }
    }
    CHECK_EQ_INT(0, count[NPU_EVIDENCE_NONE]);
    CHECK_EQ_INT(tasks, count[NPU_EVIDENCE_V] + count[NPU_EVIDENCE_M] + count[NPU_EVIDENCE_O] +
                            count[NPU_EVIDENCE_T]);
    printf("%-16s evidence: V=%u M=%u O=%u T=%u\n", name, count[NPU_EVIDENCE_V],
           count[NPU_EVIDENCE_M], count[NPU_EVIDENCE_O], count[NPU_EVIDENCE_T]);
    if (!strcmp(name, "siglip_tiny")) {
        CHECK(count[NPU_EVIDENCE_T] > 0);
        CHECK(count[NPU_EVIDENCE_O] > 0);
    }
    npu_built_free(b);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: evidence_test MODELS_DATA\n");
        return 2;
    }
    static const char *const models[] = {
        "siglip_tiny", "bert_tiny", "gpt2_tiny",  "llama_tiny", "yolo_tiny",    "mobilenet_bn",
        "crnn_tiny",   "unet_tiny", "audio_tiny", "stn_tiny",   "export_quirks"};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(models); i++)
        check_model(argv[1], models[i]);
    return npu_test_done("evidence_test");
}
