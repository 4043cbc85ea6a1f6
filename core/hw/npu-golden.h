/* SPDX-License-Identifier: MIT */
/*
 * npu-golden.h: the "golden-regcmd v1" text format of tests/golden/vectors (format in
 * tests/golden/vectors/README.md), parsed into tasks, qwords, buffers and relocations, and
 * written back byte for byte:
 *
 *   # format: golden-regcmd v1
 *   # key: value                                  (buffer: name START SIZE note)
 *   task N key=value ...                          (dup_of=K: no qword lines follow)
 *   TTTT OOOO VVVVVVVV [@name+0xOFF | * | *?]     (qword = T<<48 | V<<16 | O)
 *
 * A task lists amount + 4 qwords (body + tail); the parser checks that.
 */
#ifndef NPU_GOLDEN_H
#define NPU_GOLDEN_H

#include <stdint.h>
#include <stdio.h>

#include "npu/npu-common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum npu_golden_qflags {
    NPU_GQ_INSERTED = 1u << 0,  /* "*": zero re-inserted, absent from the sparse source */
    NPU_GQ_AMBIGUOUS = 1u << 1, /* "*?": as *, register position not unique */
    NPU_GQ_RELOC = 1u << 2,     /* "@buf+0xOFF": address inside a declared buffer */
};

struct npu_golden_qword {
    uint64_t q;
    uint32_t flags;      /* enum npu_golden_qflags */
    int32_t buffer;      /* index into npu_golden.buffers, -1 if none */
    uint32_t buf_offset; /* byte offset inside that buffer */
};

struct npu_golden_kv {
    char *key;
    char *value;
};

struct npu_golden_task {
    uint32_t index;             /* N of "task N" */
    int line;                   /* line of the task header in the source */
    struct npu_golden_kv *keys; /* in source order */
    uint32_t n_keys;
    /* Common keys, parsed; -1 when absent. */
    int64_t amount, enable, int_mask, addr, chain, next, dup_of, op_idx;
    struct npu_golden_qword *q;
    uint32_t n_q;
};

struct npu_golden_buffer {
    char *name;
    uint32_t start, size;
    char *note; /* may be "" */
};

struct npu_golden_reloc {
    uint32_t task;  /* index into npu_golden.tasks */
    uint32_t qword; /* index into that task's q[] */
    int32_t buffer;
    uint32_t offset;
};

struct npu_golden {
    struct npu_golden_kv *header; /* every "# key: value" line in order, format line first */
    uint32_t n_header;
    struct npu_golden_buffer *buffers;
    uint32_t n_buffers;
    struct npu_golden_task *tasks;
    uint32_t n_tasks;
    struct npu_golden_reloc *relocs;
    uint32_t n_relocs;
    char errmsg[256]; /* "name:LINE: reason" after a failed parse */
};

/* Parses text (need not be NUL-terminated). name is used in messages. On failure returns
 * NPU_ERR_CORRUPT (or NOMEM), leaves g empty and puts "name:LINE: reason" in g->errmsg. */
enum npu_status npu_golden_parse(const char *text, size_t len, const char *name,
                                 struct npu_golden *g);
enum npu_status npu_golden_load(const char *path, struct npu_golden *g);
void npu_golden_free(struct npu_golden *g);

/* Writes the text form. */
enum npu_status npu_golden_write(const struct npu_golden *g, FILE *f);
/* Same into a malloc'd NUL-terminated string (*len without the NUL); NULL on OOM. */
char *npu_golden_to_string(const struct npu_golden *g, size_t *len);

/* Building a golden structure from scratch (for writing our own streams). Each returns NULL
 * or an error status on OOM; strings are copied. */
enum npu_status npu_golden_add_header(struct npu_golden *g, const char *key, const char *value);
/* Adds a "# buffer: name 0xSTART 0xSIZE note" header line and the buffer. */
enum npu_status npu_golden_add_buffer(struct npu_golden *g, const char *name, uint32_t start,
                                      uint32_t size, const char *note);
struct npu_golden_task *npu_golden_add_task(struct npu_golden *g, uint32_t index);
enum npu_status npu_golden_task_set(struct npu_golden_task *t, const char *key, const char *value);
/* Appends a qword; buffer -1 for none. Rebuilds nothing: call npu_golden_index() when done. */
enum npu_status npu_golden_task_add_qword(struct npu_golden_task *t, uint64_t q, uint32_t flags,
                                          int32_t buffer, uint32_t buf_offset);
/* Recomputes the parsed task keys and the flat relocation list after building by hand. */
enum npu_status npu_golden_index(struct npu_golden *g);

int npu_golden_find_buffer(const struct npu_golden *g, const char *name);
/* Header value of the first line with this key, or NULL. */
const char *npu_golden_header(const struct npu_golden *g, const char *key);
/* Task value of a key, or NULL. */
const char *npu_golden_task_get(const struct npu_golden_task *t, const char *key);

#ifdef __cplusplus
}
#endif

#endif /* NPU_GOLDEN_H */
