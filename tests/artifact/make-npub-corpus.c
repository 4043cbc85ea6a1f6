/* SPDX-License-Identifier: MIT */
/*
 * make-npub-corpus.c: writes the seed artifacts of tests/artifact/corpus-npub
 * (the fuzz target's starting points): the hand-made A.1 program of
 * hand-prog.h at two sizes, its I/O-on-the-NPU variant, the small one with
 * model metadata (a format-2 file with a PROPS section), a program with
 * no NPU job, and the I/O-on-the-NPU one writing its result into NPU_BUF_STATE
 * at a run-time position (a format-3 file: STATE size, DYNRELOCS section). Run:
 * build/tests/artifact/make-npub-corpus tests/artifact/corpus-npub
 */
#include <stdio.h>

#include "hand-prog.h"
#include "npu/npu-npub.h"

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make-npub-corpus DIR\n");
        return 2;
    }
    static const struct {
        const char *name;
        uint32_t m, k, n;
        bool io_on_npu;
    } seeds[] = {
        {"a1-4x32x16.npub", 4, 32, 16, false},
        {"a1-io-npu-1x32x16.npub", 1, 32, 16, true},
        {"a1-8x64x32.npub", 8, 64, 32, false},
    };
    char path[1024];
    for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
        struct hand_prog h;
        if (hand_prog_make(&h, seeds[i].m, seeds[i].k, seeds[i].n, seeds[i].io_on_npu, 1))
            return 1;
        snprintf(path, sizeof(path), "%s/%s", argv[1], seeds[i].name);
        struct npu_npub_meta meta = {.options = "seed", .source = seeds[i].name};
        if (npu_npub_save(&h.p, &meta, path))
            return 1;
        hand_prog_free(&h);
    }
    /* model metadata: preprocessing keys as an image model carries them, a
     * value shared with another entry (one pooled string), an empty value */
    static const struct npu_model_prop props[] = {
        {"opennpu.mean", "0.5, 0.25, 0.125"},
        {"opennpu.std", "[0.5 0.25 0.5]"},
        {"opennpu.resize", "letterbox"},
        {"image_mean", "0.5, 0.25, 0.125"},
        {"note", ""},
    };
    struct hand_prog hp;
    if (hand_prog_make(&hp, 4, 32, 16, false, 1))
        return 1;
    snprintf(path, sizeof(path), "%s/a1-props-4x32x16.npub", argv[1]);
    struct npu_npub_meta pmeta = {.options = "seed",
                                  .source = "a1-props.onnx",
                                  .props = props,
                                  .n_props = sizeof(props) / sizeof(props[0])};
    if (npu_npub_save(&hp.p, &pmeta, path))
        return 1;
    hand_prog_free(&hp);
    /* CPU steps only: the A.1 program minus its job (input -> bias add -> relu) */
    struct hand_prog h;
    if (hand_prog_make(&h, 4, 32, 16, false, 2))
        return 1;
    int io[4] = {HT_C, HT_BIAS, HT_CB};
    h.s[3].in = io;
    h.p.steps = h.s + 3;
    h.p.n_steps = 2;
    h.p.inputs = &io[0];
    h.p.n_jobs = 0;
    h.p.weights_bytes = 0;
    h.p.weights = NULL;
    h.p.act_bytes = 0;
    h.t[HT_A16].place = NPU_PLACE_HOST; /* no NPU tensors either */
    h.t[HT_A16].layout = NPU_LAYOUT_NCHW;
    h.t[HT_A16].mem_dtype = NPU_DTYPE_FP32;
    h.t[HT_A16].bytes = 4 * 4 * 32;
    h.t[HT_A16].offset = 0;
    h.t[HT_C32] = h.t[HT_A16];
    snprintf(path, sizeof(path), "%s/cpu-only.npub", argv[1]);
    if (npu_npub_save(&h.p, NULL, path))
        return 1;
    hand_prog_free(&h);

    /* state: c32 in NPU_BUF_STATE, two slots, the slot chosen per run by input 1 */
    struct hand_prog hs;
    if (hand_prog_make(&hs, 1, 32, 16, true, 3))
        return 1;
    struct npu_prog_tensor ts[HT_COUNT + 1];
    memcpy(ts, hs.t, sizeof(hs.t));
    uint64_t c32_off = ts[HT_C32].offset, c32_bytes = ts[HT_C32].bytes;
    uint32_t slot = (uint32_t)NPU_ALIGN(c32_bytes, 64);
    ts[HT_C32].buffer = NPU_BUF_STATE;
    ts[HT_C32].offset = 0;
    memset(&ts[HT_COUNT], 0, sizeof(ts[HT_COUNT]));
    ts[HT_COUNT].name = "slot";
    ts[HT_COUNT].t.dtype = NPU_DTYPE_INT64;
    ts[HT_COUNT].t.ndim = 1;
    ts[HT_COUNT].t.dims[0] = 1;
    ts[HT_COUNT].bytes = 8;
    ts[HT_COUNT].io_input = 1;
    ts[HT_COUNT].io_output = -1;
    int ins[2] = {hs.p.inputs[0], HT_COUNT};
    struct npu_prog_dynreloc dr = {0};
    int moved = 0;
    for (uint32_t r = 0; r < hs.job.n_relocs; r++) {
        struct npu_prog_reloc *rl = &hs.relocs[r];
        if (rl->buffer != NPU_BUF_ACT || rl->offset < c32_off || rl->offset >= c32_off + c32_bytes)
            continue;
        rl->buffer = NPU_BUF_STATE;
        rl->offset -= (uint32_t)c32_off;
        if (!moved++)
            dr = (struct npu_prog_dynreloc){r, 1, slot, 2, (uint32_t)(c32_bytes - rl->offset)};
    }
    if (!moved)
        return 1;
    struct npu_prog_job js = hs.job;
    js.dynrelocs = &dr;
    js.n_dynrelocs = 1;
    hs.p.tensors = ts;
    hs.p.n_tensors = HT_COUNT + 1;
    hs.p.inputs = ins;
    hs.p.n_inputs = 2;
    hs.p.jobs = &js;
    hs.p.state_bytes = 2ull * slot;
    snprintf(path, sizeof(path), "%s/a1-state-1x32x16.npub", argv[1]);
    struct npu_npub_meta smeta = {.options = "seed", .source = "a1-state"};
    if (npu_npub_save(&hs.p, &smeta, path))
        return 1;
    hand_prog_free(&hs);
    return 0;
}
