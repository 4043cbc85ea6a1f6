/* SPDX-License-Identifier: MIT */
/*
 * test-faults.c: the device path failing (issue 17): NPU_SIM_FAULT makes the
 * simulator backend's submit fail (a driver error), its wait time out, and a
 * buffer creation run out of memory. Each gives an error status from
 * npu_session_create / npu_session_run (no crash, and under ASan no leak),
 * and the same session's next run works (after a timed-out wait, once the
 * job has finished: BUSY until then) and gives the same outputs as a run that
 * never failed. Arguments: the test models folder (siglip_tiny), then the
 * backend: sim (default), or rknpu / rocket through the kernel double, whose
 * NPU_KDOUBLE_FAULT fails the same calls as ioctls (-EIO, -ETIMEDOUT, -ENOMEM).
 */
#include <stdlib.h>
#include <unistd.h>

#include "npu-test.h"
#include "npu/npu-model.h"

static const char *backend = "sim";
static const char *fault_var = "NPU_SIM_FAULT";

static struct npu_model *
load(const char *path)
{
    struct npu_model_options o = {.backend = backend};
    struct npu_model *m = NULL;
    CHECK_EQ_INT(NPU_OK, npu_model_load(path, &o, &m));
    return m;
}

/* Runs s once on zero inputs; out receives the first output (malloc'd). */
static enum npu_status
run_once(struct npu_model *m, struct npu_session *s, struct npu_tensor *keep)
{
    int nin = npu_model_num_inputs(m), nout = npu_model_num_outputs(m);
    struct npu_tensor in[8] = {{0}}, out[8] = {{0}};
    if (nin > 8 || nout > 8)
        return NPU_ERR_UNSUPPORTED;
    for (int k = 0; k < nin; k++) {
        const struct npu_io_info *io = npu_model_input(m, k);
        in[k].dtype = io->dtype;
        in[k].ndim = io->ndim;
        memcpy(in[k].dims, io->dims, sizeof(io->dims));
        in[k].data = calloc(1, (size_t)npu_tensor_nbytes(&in[k]) + 1);
    }
    enum npu_status st = npu_session_run(s, in, nin, out, nout, NULL);
    if (!st && keep) {
        size_t nb = (size_t)npu_tensor_nbytes(&out[0]);
        *keep = out[0];
        keep->data = malloc(nb + 1);
        memcpy(keep->data, out[0].data, nb);
    }
    for (int k = 0; k < nin; k++)
        free(in[k].data);
    return st;
}

static void
check_fault(const char *model, const char *spec, enum npu_status want_run,
            enum npu_status want_create, const struct npu_tensor *ref)
{
    /* rknpu's wait is a blocking SUBMIT (polling a fence fd is no ioctl to fail) */
    bool blocking = !strcmp(backend, "rknpu") && !strncmp(spec, "wait", 4);
    if (blocking)
        setenv("NPU_RKNPU_FENCE", "0", 1);
    struct npu_model *m = load(model);
    struct npu_session *s = NULL;
    if (blocking)
        unsetenv("NPU_RKNPU_FENCE");
    if (!m)
        return;
    setenv(fault_var, spec, 1);
    enum npu_status st = npu_session_create(m, 0, &s);
    if (want_create) {
        CHECK_EQ_INT(want_create, st);
        CHECK(s == NULL);
        npu_session_destroy(s);
        s = NULL;
        unsetenv(fault_var);
        /* the next session works */
        CHECK_EQ_INT(NPU_OK, npu_session_create(m, 0, &s));
    } else {
        CHECK_EQ_INT(NPU_OK, st);
        CHECK_EQ_INT(want_run, run_once(m, s, NULL));
        unsetenv(fault_var);
    }
    /* after a timed-out wait the job may still be running on the simulator's
     * core: the session answers BUSY until it has finished, then runs */
    struct npu_tensor again = {0};
    for (int i = 0; i < 1000 && (st = run_once(m, s, &again)) == NPU_ERR_BUSY; i++)
        usleep(10000);
    CHECK_EQ_INT(NPU_OK, st);
    if (again.data && ref->data) {
        size_t nb = (size_t)npu_tensor_nbytes(ref);
        CHECK(!memcmp(again.data, ref->data, nb));
    }
    free(again.data);
    npu_session_destroy(s);
    npu_model_free(m);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-faults MODELS_DIR [sim|rknpu|rocket]\n");
        return 2;
    }
    if (argc > 2)
        backend = argv[2];
    if (strcmp(backend, "sim"))
        fault_var = "NPU_KDOUBLE_FAULT";
    char model[1024];
    snprintf(model, sizeof(model), "%s/siglip_tiny/model.onnx", argv[1]);
    setenv("NPU_PARTITION", "supported", 1); /* NPU jobs, whatever the cost model says */
    unsetenv(fault_var);

    struct npu_model *m = load(model);
    struct npu_session *s = NULL;
    struct npu_tensor ref = {0};
    if (m && npu_session_create(m, 0, &s) == NPU_OK)
        CHECK_EQ_INT(NPU_OK, run_once(m, s, &ref));
    npu_session_destroy(s);
    npu_model_free(m);

    /* counted from when the variable is set */
    check_fault(model, "submit:1", NPU_ERR_IO, NPU_OK, &ref);
    check_fault(model, "wait:1", NPU_ERR_TIMEOUT, NPU_OK, &ref);
    check_fault(model, "bo:1", NPU_OK, NPU_ERR_NOMEM, &ref);
    check_fault(model, "bo:2", NPU_OK, NPU_ERR_NOMEM, &ref);

    free(ref.data);
    char name[64];
    snprintf(name, sizeof(name), "faults-%s", backend);
    return npu_test_done(name);
}
