/* SPDX-License-Identifier: MIT */
/*
 * shlo-priv.h: private to the StableHLO reader: the text helpers of
 * shlo-lex.c shared with the op mapping of npu-stablehlo.c.
 */
#ifndef NPU_SHLO_PRIV_H
#define NPU_SHLO_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npu/npu-common.h"
#include "npu/npu-fp16.h"
#include "npu/npu-tensor.h"

#define SHLO_DOM "stablehlo"

struct shlo_type {
    enum npu_dtype dt;
    int ndim;
    int64_t dims[NPU_MAX_DIMS];
};

bool shlo_is_ident(char c);
const char *shlo_ws(const char *p, const char *end);
const char *shlo_skip_string(const char *p, const char *end);
char *shlo_clean(const char *text, size_t len);
const char *shlo_stmt_end(const char *p, const char *end);
const char *shlo_skip_group(const char *p, const char *end);
const char *shlo_find_attr(const char *p, const char *end, const char *key);
int shlo_int_list(const char **pp, const char *end, int64_t *v, int max);
bool shlo_parse_type(const char **pp, const char *end, struct shlo_type *t, char *why, size_t wlen);
bool shlo_parse_dense(const char *p, const char *end, enum npu_dtype dt, int64_t numel, void *data,
                      char *why, size_t wlen);

/* An MLIR bytecode module (a VHLO portable artifact) decoded into the text
 * the reader takes (shlo-bytecode.c). */
struct shlo_decoded {
    char *text; /* NUL-terminated, len bytes */
    size_t len;
    int *line_op; /* per text line (1-based, < nlines): VHLO op name index + 1, 0 none */
    int nlines;
    char **op_names; /* "vhlo.add_v1", ... */
    int nop_names;
    char origin[128]; /* "MLIR bytecode (version 6, producer 'StableHLO_v1.1.0')" */
    char error[256];  /* why decoding failed */
};

/* NPU_OK with d filled (free it with shlo_decoded_free), or NPU_ERR_INVALID
 * (damaged) / NPU_ERR_UNSUPPORTED (not VHLO, a newer bytecode version) with
 * d->origin and d->error set and nothing to free. */
enum npu_status shlo_bytecode_decode(const void *buf, size_t len, struct shlo_decoded *d);
void shlo_decoded_free(struct shlo_decoded *d);

#endif /* NPU_SHLO_PRIV_H */
