/* SPDX-License-Identifier: MIT */
/*
 * text-priv.h: what the IR text form's printer (npu-text-print.c) and parser
 * (npu-text-parse.c) share (not public).
 */
#ifndef NPU_TEXT_PRIV_H
#define NPU_TEXT_PRIV_H

#include "ir-priv.h"

/* Whether c may appear in a bare (unquoted) name or word: alphanumerics and
 * '_', '.', '/', '-'. Other names are printed quoted. */
bool ir_bare_char(int c);

#endif /* NPU_TEXT_PRIV_H */
