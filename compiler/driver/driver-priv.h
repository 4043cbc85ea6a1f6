/* SPDX-License-Identifier: MIT */
/* driver-priv.h: shared between the driver's files (not public). */
#ifndef NPU_DRIVER_PRIV_H
#define NPU_DRIVER_PRIV_H

#include <stdbool.h>

#include "npu/npu-common.h"

/* Whether the file at path is a model of the kind `ext` names (".npub" or
 * ".npuir"), judged by its content, not its name: the .npub magic, or IR text's
 * "# opennpu ir" / "graph \"" opening. Anything else is ONNX (the importer
 * judges it). A file that cannot be read is judged by its extension, so that
 * the loader reports the real error. */
bool npu_driver_model_is(const char *path, const char *ext);

/* NPU_ERR_CORRUPT after a logged "the file is empty" for an empty regular
 * file, else NPU_OK (other problems are reported by the loaders). */
enum npu_status npu_driver_check_nonempty(const char *path);

/* The verified profile's refusals (npu-hwverify.c): nodes whose tasks wrote a
 * register pattern below the evidence ledger's level O. */
struct npu_hw_refusals {
    struct npu_hw_refusal *v; /* node names owned (strdup) */
    int n, cap;
};
struct npu_program;
/* Classifies p's NPU tasks with the ledger; adds every node (by its tasks' name) with a
 * task below level O that r does not list yet, with the first write at that level.
 * *added gets how many were added, *below the program's tasks below level O. */
enum npu_status npu_hw_collect_refusals(const struct npu_program *p, struct npu_hw_refusals *r,
                                        int *added, int *below);
void npu_hw_refusals_free(struct npu_hw_refusals *r);

#endif /* NPU_DRIVER_PRIV_H */
