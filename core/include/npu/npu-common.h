/* SPDX-License-Identifier: MIT */
/*
 * npu-common.h: what every OpenNPU layer shares: the status codes that public
 * functions return, the log sink (so that the GStreamer elements can route our
 * messages into their debug category), and the NPU_DEBUG switches.
 *
 * Convention (docs/contributing.md, "Style"): functions return enum npu_status, or a pointer
 * that is NULL on failure after logging the reason with npu_log().
 */
#ifndef NPU_COMMON_H
#define NPU_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define NPU_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define NPU_PRINTF(a, b)
#endif

enum npu_status {
    NPU_OK = 0,
    NPU_ERR_INVALID = -1,     /* bad argument or malformed input */
    NPU_ERR_NOMEM = -2,       /* allocation failed */
    NPU_ERR_IO = -3,          /* file could not be read or written */
    NPU_ERR_UNSUPPORTED = -4, /* valid, but not implemented (op, dtype, mode) */
    NPU_ERR_NO_DEVICE = -5,   /* backend or device node not present */
    NPU_ERR_PERMISSION = -6,  /* device present but not accessible */
    NPU_ERR_TIMEOUT = -7,     /* job did not finish in time */
    NPU_ERR_FAULT = -8,       /* the NPU (or simulator) faulted: bad DMA, bad regcmd */
    NPU_ERR_HW_REFUSED = -9,  /* the hardware would refuse this program (strict mode) */
    NPU_ERR_CORRUPT = -10,    /* artifact or model file failed validation */
    NPU_ERR_VERSION = -11,    /* driver, artifact or opset version not supported */
    NPU_ERR_BUSY = -12,       /* resource in use; try again */
    NPU_ERR_CANCELLED = -13,  /* work was cancelled before it ran */
    NPU_ERR_INTERNAL = -14,   /* a bug in OpenNPU */
};

/* Returns a static, human-readable name for a status ("invalid argument", ...). */
const char *npu_status_str(enum npu_status s);

enum npu_log_level {
    NPU_LOG_ERROR = 0,
    NPU_LOG_WARN = 1,
    NPU_LOG_INFO = 2,
    NPU_LOG_DEBUG = 3,
};

/* A log sink receives one formatted message (no trailing newline). */
typedef void (*npu_log_fn)(enum npu_log_level level, const char *domain, const char *msg,
                           void *user);

/* Installs a sink for all threads; NULL restores the default (stderr). */
void npu_log_set_handler(npu_log_fn fn, void *user);
/* Messages above this level are dropped before formatting (default WARN, or
 * INFO/DEBUG with NPU_DEBUG=msgs / NPU_DEBUG=debug). */
void npu_log_set_level(enum npu_log_level level);
enum npu_log_level npu_log_get_level(void);

void npu_log(enum npu_log_level level, const char *domain, const char *fmt, ...) NPU_PRINTF(3, 4);
void npu_logv(enum npu_log_level level, const char *domain, const char *fmt, va_list ap);

/*
 * The error messages logged (at NPU_LOG_ERROR, whatever the level and sink)
 * on the calling thread since npu_clear_last_error(): "domain: message" lines,
 * oldest first, joined by '\n' (the oldest are dropped past 2 KiB); "" when
 * none. For bindings that turn a failed status into an exception carrying the
 * reason (python/opennpu). Valid until the thread's next log call.
 */
const char *npu_last_error(void);
void npu_clear_last_error(void);

/*
 * Probe scopes: a caller that tries something whose failure it handles itself (a
 * candidate lowering, a supports() or cost dry run, a partition trial) opens one so
 * that the errors logged on this thread meanwhile are not reported as errors of the
 * run: they are recorded (npu_log_probe_reasons), go to the debug log as "(probe)"
 * lines (NPU_DEBUG=debug), and stay out of npu_last_error. Scopes nest: begin returns
 * a mark for the matching end. npu_log_probe_end(mark, emit): with emit (the trial's
 * failure is the caller's failure) the reasons recorded since the mark are logged as
 * errors once the outermost scope closes; without, they are dropped.
 */
size_t npu_log_probe_begin(void);
void npu_log_probe_end(size_t mark, bool emit);
/* The reasons recorded since mark in the open scopes, "domain: message" lines each ending
 * in '\n' ("" when none; the first 2 KiB are kept). Valid until the next log call. */
const char *npu_log_probe_reasons(size_t mark);

#define npu_err(dom, ...) npu_log(NPU_LOG_ERROR, dom, __VA_ARGS__)
#define npu_warn(dom, ...) npu_log(NPU_LOG_WARN, dom, __VA_ARGS__)
#define npu_info(dom, ...) npu_log(NPU_LOG_INFO, dom, __VA_ARGS__)
#define npu_dbg(dom, ...)                                                                          \
    do {                                                                                           \
        if (npu_log_get_level() >= NPU_LOG_DEBUG)                                                  \
            npu_log(NPU_LOG_DEBUG, dom, __VA_ARGS__);                                              \
    } while (0)

/*
 * NPU_DEBUG=flag,flag,... parsed once. Flags: msgs (info log), debug (debug log),
 * dump_ir, dump_regcmd, dump_bos, zero_bos, lenient (simulator warns instead of
 * refusing unverified register patterns).
 */
enum npu_debug_flag {
    NPU_DEBUG_MSGS = 1u << 0,
    NPU_DEBUG_DEBUG = 1u << 1,
    NPU_DEBUG_DUMP_IR = 1u << 2,
    NPU_DEBUG_DUMP_REGCMD = 1u << 3,
    NPU_DEBUG_DUMP_BOS = 1u << 4,
    NPU_DEBUG_ZERO_BOS = 1u << 5,
    NPU_DEBUG_LENIENT = 1u << 6,
};
uint32_t npu_debug_flags(void);

/*
 * The whole file at path read into *buf (malloc'd, free() it) with a NUL after its
 * *len bytes, so that text can be parsed in place; reads to end of file (pipes too).
 * NPU_ERR_IO when it cannot be opened or read, NPU_ERR_NOMEM; the reason ("path:
 * strerror") is logged in domain, or not at all when domain is NULL (a caller for
 * whom a missing file is no error). *buf is NULL and *len 0 on failure.
 */
enum npu_status npu_read_file(const char *path, const char *domain, char **buf, size_t *len);

/*
 * Anonymous memory for the compiler's big buffers (the weight region, the model file's
 * bytes, the graph arena's big chunks): len bytes of zero pages, 2 MiB aligned and marked
 * for transparent huge pages (MADV_HUGEPAGE: a no-op where the kernel has THP off) when len
 * is at least 2 MiB. Why: every 4 KiB page first touched costs a fault, and under a
 * shadow-paging hypervisor (PVM) a second, host-side one charged to the process as user
 * time: 170 MB of fresh 4 KiB pages cost 0.45 s CPU there, in 2 MiB pages 0.02 s.
 * noreserve: MAP_NORESERVE (address space only); populate: every page faulted in now (by
 * one call, MADV_POPULATE_WRITE; before Linux 5.14, by a write to each page after the huge
 * page advice) instead of on first touch. NULL when it cannot be mapped; freed with
 * munmap(p, len) (or pieces of it).
 */
void *npu_map_anon(size_t len, bool noreserve, bool populate);

/* Internal invariant failure: prints file:line and aborts. Never for input. */
void npu_die_at(const char *file, int line, const char *fmt, ...) NPU_PRINTF(3, 4)
    __attribute__((noreturn));
#define npu_die(...) npu_die_at(__FILE__, __LINE__, __VA_ARGS__)

#define NPU_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NPU_DIV_ROUND_UP(a, b) (((a) + (b)-1) / (b))
#define NPU_ALIGN(a, b) (NPU_DIV_ROUND_UP(a, b) * (b))
#define NPU_MIN(a, b) ((a) < (b) ? (a) : (b))
#define NPU_MAX(a, b) ((a) > (b) ? (a) : (b))

#ifdef __cplusplus
}
#endif

#endif /* NPU_COMMON_H */
