/* SPDX-License-Identifier: MIT */
/*
 * test-log-probe.c: the log's probe scopes (npu_log_probe_begin / end, core/util/npu-common.c),
 * which keep a trial's refusals (a candidate lowering, a supports() dry run) from being
 * reported as errors. Checks, with a sink that records what reaches it: an error inside a
 * scope reaches neither the sink (at the default level) nor npu_last_error but is recorded;
 * at the debug level it arrives as a "(probe)" debug line; a scope closed without emit drops
 * its reasons, with emit logs them as errors (domain kept); an inner scope's emitted reasons
 * wait for the outer scope, which decides; errors outside any scope are unchanged.
 */
#include <stdio.h>
#include <string.h>

#include "npu-test.h"
#include "npu/npu-common.h"

static char seen[4096];
static int seen_errors, seen_debug;

static void
sink(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)user;
    size_t n = strlen(seen);
    snprintf(seen + n, sizeof(seen) - n, "%d %s: %s\n", (int)level, domain, msg);
    seen_errors += level == NPU_LOG_ERROR;
    seen_debug += level == NPU_LOG_DEBUG;
}

static void
reset(void)
{
    seen[0] = 0;
    seen_errors = seen_debug = 0;
    npu_clear_last_error();
}

int
main(void)
{
    npu_log_set_handler(sink, NULL);
    npu_log_set_level(NPU_LOG_WARN);

    /* a refused trial: recorded, not reported */
    reset();
    size_t m = npu_log_probe_begin();
    npu_err("dpu", "conv: %u rows do not fit the CBUF", 28u);
    CHECK_STR("dpu: conv: 28 rows do not fit the CBUF\n", npu_log_probe_reasons(m));
    npu_log_probe_end(m, false);
    CHECK_EQ_INT(0, seen_errors);
    CHECK_STR("", seen);
    CHECK_STR("", npu_last_error());
    CHECK_STR("", npu_log_probe_reasons(0));

    /* asked for: a debug line */
    reset();
    npu_log_set_level(NPU_LOG_DEBUG);
    m = npu_log_probe_begin();
    npu_err("dpu", "refused");
    npu_log_probe_end(m, false);
    npu_log_set_level(NPU_LOG_WARN);
    CHECK_EQ_INT(0, seen_errors);
    CHECK_EQ_INT(1, seen_debug);
    CHECK_STR("3 dpu: (probe) refused\n", seen);

    /* the trial's failure is the caller's: its reasons become errors */
    reset();
    m = npu_log_probe_begin();
    npu_err("be", "first");
    npu_err(NULL, "second");
    npu_log_probe_end(m, true);
    CHECK_EQ_INT(2, seen_errors);
    CHECK_STR("0 be: first\n0 npu: second\n", seen);
    CHECK_STR("be: first\nnpu: second", npu_last_error());

    /* nested: the inner scope's emit waits for the outer scope */
    reset();
    size_t outer = npu_log_probe_begin();
    size_t inner = npu_log_probe_begin();
    npu_err("a", "kept");
    npu_log_probe_end(inner, true);
    CHECK_EQ_INT(0, seen_errors);
    inner = npu_log_probe_begin();
    npu_err("b", "dropped");
    npu_log_probe_end(inner, false);
    CHECK_STR("a: kept\n", npu_log_probe_reasons(outer));
    npu_log_probe_end(outer, false);
    CHECK_EQ_INT(0, seen_errors);
    outer = npu_log_probe_begin();
    inner = npu_log_probe_begin();
    npu_err("a", "kept");
    npu_log_probe_end(inner, true);
    npu_log_probe_end(outer, true);
    CHECK_STR("0 a: kept\n", seen);

    /* outside a scope, and an unbalanced end: errors as before */
    reset();
    npu_log_probe_end(0, true);
    npu_err("x", "real");
    CHECK_STR("0 x: real\n", seen);
    CHECK_STR("x: real", npu_last_error());

    npu_log_set_handler(NULL, NULL);
    return npu_test_done("test-log-probe");
}
