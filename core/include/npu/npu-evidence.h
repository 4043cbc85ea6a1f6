/* SPDX-License-Identifier: MIT */
/*
 * npu-evidence.h: the evidence ledger of the register patterns OpenNPU emits
 * and the classification of a task's register writes against it.
 *
 * The ledger (core/hw/evidence.xml, rendered in docs/evidence.md) has one
 * entry per register pattern: a register of one block, the values it covers
 * (a list, or any value for addresses, sizes and strides) and how well the
 * pattern is known to work on the hardware: V (byte-matched to a Rockchip
 * vendor capture), M (Mesa rocket, tested on hardware), O (another open
 * project tested on hardware), T (inferred from the TRM / facts only). A
 * register write is covered by the strongest entry holding its value; a
 * task's level is the weakest level over its writes (NONE when some write is
 * covered by no entry). The simulator's strict mode refuses writes below a
 * threshold (docs/simulator.md); `npuc --evidence` counts a program's tasks
 * per level.
 */
#ifndef NPU_EVIDENCE_H
#define NPU_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ordered: a larger value is stronger evidence. */
enum npu_evidence_level {
    NPU_EVIDENCE_NONE = 0, /* no ledger entry covers the write */
    NPU_EVIDENCE_T = 1,
    NPU_EVIDENCE_O = 2,
    NPU_EVIDENCE_M = 3,
    NPU_EVIDENCE_V = 4,
};

#define NPU_EVIDENCE_LEVELS 5

struct npu_evidence_entry {
    const char *id;  /* "DPU.LUT_INFO.O" */
    uint16_t offset; /* register offset; 0x0008 (in PC) = the op_en entry of the tail */
    enum npu_evidence_level level;
    bool any;               /* every value is covered */
    uint32_t mask;          /* bits compared (size and address fields left out) */
    const uint32_t *values; /* sorted, masked, when !any */
    unsigned n_values;
    const char *block;   /* "DPU" */
    const char *reg;     /* "LUT_INFO", or "OP_EN" */
    const char *source;  /* golden file and task, Mesa file and function, or facts section */
    const char *purpose; /* what the pattern is for */
};

/* One register write of a task and the entry covering it (NULL: none). */
struct npu_evidence_write {
    uint32_t qword; /* index in the classified qwords */
    uint16_t offset;
    uint32_t value;
    const struct npu_evidence_entry *entry;
};

/* The ledger, sorted by offset then by level, strongest first. */
const struct npu_evidence_entry *npu_evidence_ledger(unsigned *n_entries);

/* "V", "M", "O", "T" or "none". */
const char *npu_evidence_level_name(enum npu_evidence_level level);
/* Parses "V", "M", "O" or "T" (either case) into *out; NPU_ERR_INVALID otherwise. */
enum npu_status npu_evidence_level_parse(const char *text, enum npu_evidence_level *out);

/* The strongest entry covering value at the register offset (0x0008: an
 * op_en mask), or NULL. */
const struct npu_evidence_entry *npu_evidence_lookup(uint16_t offset, uint32_t value);
/* For messages: the entry of that register whose values are nearest to value
 * (fewest differing bits), or NULL if the ledger has none for the register. */
const struct npu_evidence_entry *npu_evidence_nearest(uint16_t offset, uint32_t value,
                                                      uint32_t *nearest_value);

/* "DPU.LUT_INFO" for a register offset, "PC.OP_EN" for 0x0008, "?" if unknown. */
const char *npu_evidence_reg_name(uint16_t offset);

/*
 * Classifies the register writes of one task segment (body and tail, as the
 * PC fetches it; NOPs and the marker are skipped, the op_en entry counts as
 * the pseudo-register PC.OP_EN). writes may be NULL; otherwise up to cap
 * writes are stored and *n_writes (may be NULL) gets the number of writes in
 * the segment. *weakest gets the task's level: the weakest over its writes,
 * NONE if a write is uncovered or a qword is not a register write of a
 * regcmd block. Returns NPU_ERR_INVALID for NULL arguments.
 */
enum npu_status npu_evidence_classify_task(const uint64_t *qwords, size_t n_qwords,
                                           struct npu_evidence_write *writes, size_t cap,
                                           size_t *n_writes, enum npu_evidence_level *weakest);

#ifdef __cplusplus
}
#endif

#endif /* NPU_EVIDENCE_H */
