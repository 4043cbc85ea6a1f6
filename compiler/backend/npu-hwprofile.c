/* SPDX-License-Identifier: MIT */
/*
 * npu-hwprofile.c: the register-pattern profiles of the back end (fast,
 * verified; docs/evidence.md "Compile profiles"): their names, the profile a
 * compile resolves to, and the verified profile's refusal, which
 * npu_backend_supports() asks before any handler. Which patterns are good
 * enough is not decided here: the driver (compiler/driver/npu-hwverify.c)
 * classifies the compiled tasks with the evidence ledger and hands back the
 * nodes whose tasks wrote a pattern below level O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-be-priv.h"
#include "npu/npu-backend.h"

const char *
npu_hw_profile_name(int profile)
{
    switch (profile) {
    case NPU_HW_PROFILE_FAST: return "fast";
    case NPU_HW_PROFILE_VERIFIED: return "verified";
    default: return "auto";
    }
}

enum npu_status
npu_hw_profile_parse(const char *s, int *out)
{
    if (!s || !out)
        return NPU_ERR_INVALID;
    if (!strcmp(s, "fast"))
        *out = NPU_HW_PROFILE_FAST;
    else if (!strcmp(s, "verified"))
        *out = NPU_HW_PROFILE_VERIFIED;
    else if (!strcmp(s, "auto"))
        *out = NPU_HW_PROFILE_AUTO;
    else
        return NPU_ERR_INVALID;
    return NPU_OK;
}

int
npu_hw_profile_resolve(int p, bool on_device)
{
    if (p == NPU_HW_PROFILE_FAST || p == NPU_HW_PROFILE_VERIFIED)
        return p;
    const char *e = getenv(NPU_HW_PROFILE_ENV);
    int v;
    if (e && e[0] && npu_hw_profile_parse(e, &v) == NPU_OK && v != NPU_HW_PROFILE_AUTO)
        return v;
    if (e && e[0] && strcmp(e, "auto"))
        npu_warn(NPU_BE_DOM, "%s=%s: not fast, verified or auto; ignored", NPU_HW_PROFILE_ENV, e);
    return on_device ? NPU_HW_PROFILE_VERIFIED : NPU_HW_PROFILE_FAST;
}

bool
npu_be_hw_refused(const struct npu_node *n, const struct npu_backend_options *o, char *why,
                  size_t why_len)
{
    if (!o || o->hw_profile != NPU_HW_PROFILE_VERIFIED || !o->n_hw_refused)
        return false;
    for (int i = 0; i < o->n_hw_refused; i++) {
        const struct npu_hw_refusal *r = &o->hw_refused[i];
        if (!strcmp(r->node, "*")) { /* the driver's last resort: nothing on the NPU */
            if (why && why_len)
                snprintf(why, why_len,
                         "hw-profile verified: the program kept a task below level O that "
                         "names no node; everything on the CPU");
            return true;
        }
        if (!n->name || !n->name[0] || strcmp(r->node, n->name))
            continue;
        if (why && why_len)
            snprintf(why, why_len,
                     "hw-profile verified: its lowering writes %s = 0x%08x, pattern %s "
                     "(below the ledger's level O)",
                     r->reg, r->value, r->pattern);
        return true;
    }
    return false;
}
