/* SPDX-License-Identifier: MIT */
/*
 * npu-stablehlo.h: the StableHLO front end. Reads a StableHLO module in the
 * MLIR text form JAX prints (`jax.jit(f).lower(x).as_text()`: pretty and
 * generic op forms, `loc(...)` locations), or as MLIR bytecode (a VHLO
 * portable artifact, decoded into that text first), without MLIR, and maps
 * its public entry function (`@main`, private functions it calls are inlined) into an IR
 * graph the usual pipeline compiles. Every shape must be static. Ops: see
 * docs/jax.md; any other op is refused with a message naming it and the line.
 * Bad input is the normal case: NPU_ERR_INVALID / UNSUPPORTED with a logged
 * reason ("stablehlo: line N: ...").
 */
#ifndef NPU_STABLEHLO_H
#define NPU_STABLEHLO_H

#include <stddef.h>

#include "npu/npu-common.h"
#include "npu/npu-ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The StableHLO version whose op syntax the reader follows (major, minor,
 * patch), and the oldest it accepts: what a PJRT plugin reports to JAX. */
#define NPU_STABLEHLO_VERSION_MAJOR 1
#define NPU_STABLEHLO_VERSION_MINOR 0
#define NPU_STABLEHLO_VERSION_PATCH 0

/* Custom-call target of the cached-weight matmul: `stablehlo.custom_call
 * @opennpu.matmul(%x, %w)` with a constant %w becomes a MatMul whose weights
 * the NPU keeps converted once per model. */
#define NPU_STABLEHLO_MATMUL_TARGET "opennpu.matmul"

/* Parses len bytes of StableHLO text into a graph (*out NULL on failure). */
enum npu_status npu_stablehlo_parse(const char *text, size_t len, struct npu_graph **out);
/* The same, choosing the entry function by name (NULL: @main, else the only
 * public function); other functions are still read, and inlined if called.
 * Both also take MLIR bytecode (a VHLO portable artifact, "ML\xEFR..."),
 * decoded into the same text first (docs/jax.md). */
enum npu_status npu_stablehlo_parse_entry(const char *text, size_t len, const char *entry,
                                          struct npu_graph **out);
/* MLIR bytecode (VHLO) decoded into the generic StableHLO text the reader
 * takes; *text is malloc'd and NUL-terminated (*tlen bytes). */
enum npu_status npu_stablehlo_bytecode_to_text(const void *buf, size_t len, char **text,
                                               size_t *tlen);
/* Reads and parses a file. */
enum npu_status npu_stablehlo_load(const char *path, struct npu_graph **out);

#ifdef __cplusplus
}
#endif

#endif /* NPU_STABLEHLO_H */
