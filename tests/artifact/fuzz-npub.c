/* SPDX-License-Identifier: MIT */
/*
 * fuzz-npub.c: libFuzzer target for the .npub loader (npu_npub_decode). Each
 * input is tried twice: as given (mostly caught by the checksums), and with
 * its checksums and file size recomputed (npub-rehash.h), so that mutations
 * reach the record, program and shape checks behind them. An artifact that
 * loads must save again to a file that loads to an identical encoding, and -
 * when its buffers are small - must run once on the simulator with zero
 * inputs, succeeding or failing cleanly. Replayed over
 * tests/artifact/corpus-npub by the normal test suite.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-npub.h"
#include "npu/npu-program-exec.h"
#include "npub-rehash.h"

#define RUN_LIMIT (4u << 20) /* bytes of host arena / activations / state worth running */

static void
quiet(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
}

static struct npu_device *dev;

static void
try_run(const struct npu_program *p)
{
    if (p->host_bytes > RUN_LIMIT || p->act_bytes > RUN_LIMIT || p->state_bytes > RUN_LIMIT ||
        p->n_inputs > 16)
        return;
    struct npu_tensor in[16];
    void *bufs[16] = {0};
    for (int i = 0; i < p->n_inputs; i++) {
        const struct npu_prog_tensor *t = &p->tensors[p->inputs[i]];
        int64_t nb = npu_tensor_nbytes(&t->t);
        if (nb < 0 || nb > RUN_LIMIT)
            goto out;
        in[i] = t->t;
        in[i].data = bufs[i] = calloc(1, (size_t)nb + 1);
    }
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    struct npu_tensor outs[64];
    if (p->n_outputs <= 64 && !npu_prog_model_create(dev, p, NULL, &m) &&
        !npu_prog_session_create(m, 0, 1, &s))
        npu_prog_session_run(s, in, p->n_inputs, outs, p->n_outputs, NULL);
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
out:
    for (int i = 0; i < 16; i++)
        free(bufs[i]);
}

static void
one(const uint8_t *data, size_t size)
{
    struct npu_npub *a = NULL;
    if (npu_npub_decode(data, size, &a, NULL, 0) != NPU_OK)
        return;
    void *b1 = NULL, *b2 = NULL;
    size_t l1 = 0, l2 = 0;
    struct npu_npub *a2 = NULL;
    const struct npu_npub_meta *m = npu_npub_get_meta(a);
    struct npu_npub_meta meta = {m->model_hash, m->options_hash, m->options,
                                 m->source,     m->props,        m->n_props};
    if (npu_npub_encode(npu_npub_program(a), &meta, &b1, &l1) != NPU_OK ||
        npu_npub_decode(b1, l1, &a2, NULL, 0) != NPU_OK ||
        npu_npub_encode(npu_npub_program(a2), &meta, &b2, &l2) != NPU_OK || l1 != l2 ||
        memcmp(b1, b2, l1))
        abort(); /* what loads must save and load again, to the same bytes */
    try_run(npu_npub_program(a));
    free(b1);
    free(b2);
    npu_npub_free(a2);
    npu_npub_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        if (!getenv("FUZZ_VERBOSE"))
            npu_log_set_handler(quiet, NULL);
        if (npu_device_open("sim", &dev))
            abort();
        init = 1;
    }
    one(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    npub_rehash(copy, size, 1);
    one(copy, size);
    free(copy);
    return 0;
}
