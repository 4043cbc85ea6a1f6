/* SPDX-License-Identifier: MIT */
/*
 * npu-common.c: status names, the process-wide log sink, NPU_DEBUG parsing and
 * the one whole-file reader the front ends, the tokenizer and the tools share, and the
 * anonymous huge-page memory of the compiler's big buffers (npu_map_anon).
 * The sink is swapped atomically so that a GStreamer element can install its
 * own while worker threads are logging.
 */
#include "npu/npu-common.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *
npu_status_str(enum npu_status s)
{
    switch (s) {
    case NPU_OK: return "ok";
    case NPU_ERR_INVALID: return "invalid argument or input";
    case NPU_ERR_NOMEM: return "out of memory";
    case NPU_ERR_IO: return "i/o error";
    case NPU_ERR_UNSUPPORTED: return "unsupported";
    case NPU_ERR_NO_DEVICE: return "no such device or backend";
    case NPU_ERR_PERMISSION: return "permission denied";
    case NPU_ERR_TIMEOUT: return "timed out";
    case NPU_ERR_FAULT: return "npu fault";
    case NPU_ERR_HW_REFUSED: return "refused: the hardware would not run this";
    case NPU_ERR_CORRUPT: return "corrupt or malformed file";
    case NPU_ERR_VERSION: return "unsupported version";
    case NPU_ERR_BUSY: return "busy";
    case NPU_ERR_CANCELLED: return "cancelled";
    case NPU_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

enum npu_status
npu_read_file(const char *path, const char *domain, char **buf, size_t *len)
{
    if (buf)
        *buf = NULL;
    if (len)
        *len = 0;
    if (!path || !buf || !len) {
        if (domain)
            npu_err(domain, "read_file: path, buf and len must be given");
        return NPU_ERR_INVALID;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (domain)
            npu_err(domain, "%s: %s", path, strerror(errno));
        return NPU_ERR_IO;
    }
    char *b = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            char *nb = realloc(b, cap + 1);
            if (!nb) {
                free(b);
                fclose(f);
                if (domain)
                    npu_err(domain, "%s: out of memory", path);
                return NPU_ERR_NOMEM;
            }
            b = nb;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        if (!r)
            break;
        n += r;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        free(b);
        if (domain)
            npu_err(domain, "%s: read error: %s", path, strerror(err ? err : EIO));
        return NPU_ERR_IO;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return NPU_OK;
}

static pthread_once_t debug_once = PTHREAD_ONCE_INIT;
static uint32_t debug_flags;
static int log_level = NPU_LOG_WARN;

struct sink {
    npu_log_fn fn;
    void *user;
};
static struct sink log_sink;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

static void
parse_debug(void)
{
    static const struct {
        const char *name;
        uint32_t flag;
    } names[] = {
        {"msgs", NPU_DEBUG_MSGS},         {"debug", NPU_DEBUG_DEBUG},
        {"dump_ir", NPU_DEBUG_DUMP_IR},   {"dump_regcmd", NPU_DEBUG_DUMP_REGCMD},
        {"dump_bos", NPU_DEBUG_DUMP_BOS}, {"zero_bos", NPU_DEBUG_ZERO_BOS},
        {"lenient", NPU_DEBUG_LENIENT},
    };
    const char *env = getenv("NPU_DEBUG");
    if (!env)
        return;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", env);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < NPU_ARRAY_SIZE(names); i++) {
            if (!strcmp(tok, names[i].name)) {
                debug_flags |= names[i].flag;
                break;
            }
        }
        if (i == NPU_ARRAY_SIZE(names))
            fprintf(stderr, "opennpu: NPU_DEBUG: unknown flag '%s' ignored\n", tok);
    }
    if (debug_flags & NPU_DEBUG_DEBUG)
        log_level = NPU_LOG_DEBUG;
    else if (debug_flags & NPU_DEBUG_MSGS)
        log_level = NPU_LOG_INFO;
}

uint32_t
npu_debug_flags(void)
{
    pthread_once(&debug_once, parse_debug);
    return debug_flags;
}

void
npu_log_set_handler(npu_log_fn fn, void *user)
{
    pthread_mutex_lock(&sink_lock);
    log_sink.fn = fn;
    log_sink.user = user;
    pthread_mutex_unlock(&sink_lock);
}

void
npu_log_set_level(enum npu_log_level level)
{
    npu_debug_flags();
    __atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

enum npu_log_level
npu_log_get_level(void)
{
    npu_debug_flags();
    return (enum npu_log_level)__atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

/* The errors logged on this thread since npu_clear_last_error() (npu_last_error),
 * "domain: message" lines, oldest first; the oldest lines go when it is full. */
static _Thread_local char last_err[2048];

static void
remember_error(const char *domain, const char *msg)
{
    char line[1100];
    int n = snprintf(line, sizeof(line), "%s: %s", domain ? domain : "npu", msg);
    size_t ln = n < 0 ? 0 : NPU_MIN((size_t)n, sizeof(line) - 1);
    size_t have = strlen(last_err);
    while (have && have + 1 + ln >= sizeof(last_err)) {
        char *nl = strchr(last_err, '\n');
        if (!nl) {
            have = 0;
            break;
        }
        memmove(last_err, nl + 1, strlen(nl + 1) + 1);
        have = strlen(last_err);
    }
    if (have)
        last_err[have++] = '\n';
    memcpy(last_err + have, line, ln);
    last_err[have + ln] = 0;
}

const char *
npu_last_error(void)
{
    return last_err;
}

void
npu_clear_last_error(void)
{
    last_err[0] = 0;
}

/* Probe scopes (npu_log_probe_begin): how many are open on this thread and the reasons
 * recorded in them, "domain: message\n" lines; lines past the end are dropped, since the
 * first reason of a trial is the one that decided it. */
static _Thread_local int probe_depth;
static _Thread_local char probe_buf[2048];
static _Thread_local size_t probe_len;

static void
probe_record(const char *domain, const char *msg)
{
    int n = snprintf(probe_buf + probe_len, sizeof(probe_buf) - probe_len, "%s: %s\n",
                     domain ? domain : "npu", msg);
    if (n > 0 && probe_len + (size_t)n < sizeof(probe_buf))
        probe_len += (size_t)n;
    probe_buf[probe_len] = 0; /* a line cut short is dropped whole */
}

size_t
npu_log_probe_begin(void)
{
    probe_depth++;
    return probe_len;
}

const char *
npu_log_probe_reasons(size_t mark)
{
    return probe_buf + NPU_MIN(mark, probe_len);
}

void
npu_log_probe_end(size_t mark, bool emit)
{
    if (probe_depth <= 0)
        return; /* unbalanced: nothing is open */
    mark = NPU_MIN(mark, probe_len);
    probe_depth--;
    if (!emit) {
        probe_len = mark;
        probe_buf[mark] = 0;
        return;
    }
    if (probe_depth)
        return; /* an outer trial decides whether these are errors */
    char lines[sizeof(probe_buf)];
    memcpy(lines, probe_buf + mark, probe_len - mark + 1);
    probe_len = mark;
    probe_buf[mark] = 0;
    for (char *save = NULL, *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *sep = strstr(l, ": ");
        if (sep) {
            *sep = 0;
            npu_log(NPU_LOG_ERROR, l, "%s", sep + 2);
        } else {
            npu_log(NPU_LOG_ERROR, NULL, "%s", l);
        }
    }
}

void
npu_logv(enum npu_log_level level, const char *domain, const char *fmt, va_list ap)
{
    static const char *const lvl[] = {"error", "warning", "info", "debug"};
    bool probe = level == NPU_LOG_ERROR && probe_depth > 0;
    if (level != NPU_LOG_ERROR && (int)level > (int)npu_log_get_level())
        return;
    char msg[1024];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (probe) {
        /* a trial's refusal: recorded for the caller, shown only in the debug log */
        probe_record(domain, msg);
        if ((int)npu_log_get_level() < (int)NPU_LOG_DEBUG)
            return;
        level = NPU_LOG_DEBUG;
        memmove(msg + 8, msg, NPU_MIN(strlen(msg) + 1, sizeof(msg) - 8));
        msg[sizeof(msg) - 1] = 0;
        memcpy(msg, "(probe) ", 8);
    } else if (level == NPU_LOG_ERROR) {
        remember_error(domain, msg);
    }
    if ((int)level > (int)npu_log_get_level())
        return;
    pthread_mutex_lock(&sink_lock);
    struct sink s = log_sink;
    pthread_mutex_unlock(&sink_lock);
    if (s.fn)
        s.fn(level, domain ? domain : "npu", msg, s.user);
    else
        fprintf(stderr, "opennpu %s: %s: %s\n", lvl[level], domain ? domain : "npu", msg);
}

void
npu_log(enum npu_log_level level, const char *domain, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    npu_logv(level, domain, fmt, ap);
    va_end(ap);
}

void
npu_die_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "opennpu: internal error at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* Every page of [p, p + len) faulted in by one call (MADV_POPULATE_WRITE, Linux 5.14);
 * false where the kernel does not know the advice, or NPU_MAP_POPULATE_WRITE=0 in the
 * environment says to act as if (tests). */
static bool
populate_write(void *p, size_t len)
{
    const char *e = getenv("NPU_MAP_POPULATE_WRITE");
    if (e && !strcmp(e, "0"))
        return false;
#ifdef MADV_POPULATE_WRITE
    /* other failures (ENOMEM, EFAULT) are not the kernel's age: the pages then fault on
     * first touch, as they would after a second try */
    return madvise(p, len, MADV_POPULATE_WRITE) == 0 || errno != EINVAL;
#else
    (void)p;
    (void)len;
    return false;
#endif
}

void *
npu_map_anon(size_t len, bool noreserve, bool populate)
{
    const size_t huge = (size_t)2 << 20;
    if (!len)
        return NULL;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (noreserve ? MAP_NORESERVE : 0);
    bool big = len >= huge && len <= SIZE_MAX - huge;
    /* a huge page needs a 2 MiB aligned virtual range: map 2 MiB more and trim both ends */
    size_t want = big ? len + huge : len;
    unsigned char *m = mmap(NULL, want, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    unsigned char *p = m;
    long psz = sysconf(_SC_PAGESIZE);
    const size_t pg = psz > 0 ? (size_t)psz : 4096;
    if (big) {
        /* the tail is cut at the end of len's last page (munmap takes page-aligned addresses
         * only: cut at p + len, an unaligned len left up to 2 MiB mapped for good) */
        p = m + (-(uintptr_t)m & (huge - 1));
        unsigned char *end = p + (len + pg - 1) / pg * pg;
        if (p > m)
            munmap(m, (size_t)(p - m));
        if (m + want > end)
            munmap(end, (size_t)(m + want - end));
#ifdef MADV_HUGEPAGE
        (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    }
    if (populate && !populate_write(p, len)) {
        /* a kernel before 5.14 (the RK3588 vendor kernels are 5.10): every page touched,
         * after the range was marked for huge pages, so that a fault brings in a 2 MiB page
         * where it can (MAP_POPULATE, by mapping the range anew, would fault 4 KiB pages in
         * before MADV_HUGEPAGE could mark the new mapping) */
        volatile unsigned char *v = p;
        for (size_t o = 0; o < len; o += pg)
            v[o] = 0;
    }
    return p;
}
