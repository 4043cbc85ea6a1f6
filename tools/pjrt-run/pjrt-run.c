// SPDX-License-Identifier: MIT
/*
 * pjrt-run: loads a PJRT plugin (libpjrt_opennpu.so) with dlopen and drives
 * it through its C API in the order jaxlib does: initialise the plugin, read
 * its attributes, create a client, list devices and memories, compile the
 * program (format "mlir"), query the executable's outputs, copy the inputs
 * to device buffers, execute, await the completion event, copy the results
 * back and destroy everything. Each result is written as DIR/out<i>.npy.
 * What it proves is the plugin's contract, not jaxlib's own code (docs/jax.md).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-common.h"
#include "npu/npu-npy.h"
#include "npu/npu-tensor.h"
#include "pjrt-c-api.h"
#include "pjrt-dtype.h"

#define MAX_INPUTS 64

static const PJRT_Api *api;

static void
usage(FILE *f)
{
    fprintf(
        f,
        "usage: pjrt-run PROGRAM.mlir|PROGRAM.mlirbc [--input FILE.npy]... --output-dir DIR\n"
        "                [--backend cpu|sim|rknpu|rocket|auto] [--entry FUNCTION] [--plugin PATH]\n"
        "                [--verbose]\n"
        "  Runs a StableHLO program through the PJRT plugin (default plugin: "
        "$OPENNPU_PJRT_PLUGIN,\n"
        "  else libpjrt_opennpu.so from the library path) and writes DIR/out<i>.npy.\n");
}

/* Reports and frees an error; returns true if there was one. */
static bool
failed(PJRT_Error *e, const char *what)
{
    if (!e)
        return false;
    PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = e};
    PJRT_ERROR_MESSAGE(api)(&m);
    PJRT_Error_GetCode_Args g = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = e};
    PJRT_Error *e2 = api->PJRT_Error_GetCode(&g);
    (void)what; /* the plugin's messages name the entry */
    fprintf(stderr, "pjrt-run: %.*s (code %d)\n", (int)m.message_size, m.message,
            e2 ? -1 : (int)g.code);
    PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = e};
    PJRT_ERROR_DESTROY(api)(&d);
    if (e2) {
        d.error = e2;
        PJRT_ERROR_DESTROY(api)(&d);
    }
    return true;
}

#define CALL(fn, args, what) failed(api->PJRT_##fn(&(args)), what)

/* Awaits and destroys an event (NULL is fine). */
static bool
await_event(PJRT_Event *ev, const char *what)
{
    if (!ev)
        return true;
    PJRT_Event_Await_Args w = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = ev};
    bool ok = !CALL(Event_Await, w, what);
    PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = ev};
    ok &= !CALL(Event_Destroy, d, "Event_Destroy");
    return ok;
}

int
main(int argc, char **argv)
{
    const char *program = NULL, *outdir = NULL, *backend = NULL, *plugin = NULL, *entry = NULL;
    const char *inputs[MAX_INPUTS];
    int nin = 0, rc = 1;
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--input") && i + 1 < argc && nin < MAX_INPUTS)
            inputs[nin++] = argv[++i];
        else if (!strcmp(argv[i], "--output-dir") && i + 1 < argc)
            outdir = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--entry") && i + 1 < argc)
            entry = argv[++i];
        else if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            plugin = argv[++i];
        else if (!strcmp(argv[i], "--verbose"))
            verbose = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && !program)
            program = argv[i];
        else {
            fprintf(stderr, "pjrt-run: bad argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!program || !outdir) {
        usage(stderr);
        return 2;
    }
    if (!plugin)
        plugin = getenv("OPENNPU_PJRT_PLUGIN");
    if (!plugin)
        plugin = "libpjrt_opennpu.so";

    void *so = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "pjrt-run: dlopen %s: %s\n", plugin, dlerror());
        return 1;
    }
    const PJRT_Api *(*get)(void) = (const PJRT_Api *(*)(void))dlsym(so, "GetPjrtApi");
    if (!get || !(api = get())) {
        fprintf(stderr, "pjrt-run: %s has no GetPjrtApi\n", plugin);
        dlclose(so);
        return 1;
    }
    /* what jaxlib checks first: the major version must match, the table be whole */
    if (api->pjrt_api_version.major_version != PJRT_API_MAJOR ||
        api->struct_size < PJRT_Api_STRUCT_SIZE) {
        fprintf(stderr, "pjrt-run: plugin has PJRT C API %d.%d (struct %zu), we need %d.x\n",
                api->pjrt_api_version.major_version, api->pjrt_api_version.minor_version,
                api->struct_size, PJRT_API_MAJOR);
        dlclose(so);
        return 1;
    }
    if (verbose)
        fprintf(stderr, "pjrt-run: PJRT C API %d.%d\n", api->pjrt_api_version.major_version,
                api->pjrt_api_version.minor_version);

    PJRT_Client *client = NULL;
    PJRT_LoadedExecutable *exe = NULL;
    PJRT_Buffer *inbuf[MAX_INPUTS] = {0};
    PJRT_Buffer **outbuf = NULL;
    size_t nout = 0;
    char *code = NULL;
    struct npu_tensor tin[MAX_INPUTS] = {0};

    PJRT_Plugin_Initialize_Args pi = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
    if (CALL(Plugin_Initialize, pi, "Plugin_Initialize"))
        goto out;
    PJRT_Plugin_Attributes_Args pa = {.struct_size = sizeof pa};
    if (CALL(Plugin_Attributes, pa, "Plugin_Attributes"))
        goto out;
    for (size_t i = 0; verbose && i < pa.num_attributes; i++) {
        const PJRT_NamedValue *v = &pa.attributes[i];
        fprintf(stderr, "pjrt-run: attribute %.*s", (int)v->name_size, v->name);
        if (v->type == PJRT_NamedValue_kString)
            fprintf(stderr, " = \"%.*s\"\n", (int)v->value_size, v->string_value);
        else if (v->type == PJRT_NamedValue_kInt64)
            fprintf(stderr, " = %lld\n", (long long)v->int64_value);
        else if (v->type == PJRT_NamedValue_kInt64List) {
            for (size_t k = 0; k < v->value_size; k++)
                fprintf(stderr, "%s%lld", k ? "." : " = ", (long long)v->int64_array_value[k]);
            fprintf(stderr, "\n");
        } else
            fprintf(stderr, "\n");
    }

    PJRT_NamedValue opts[2];
    size_t nopt = 0;
    if (backend)
        opts[nopt++] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                         .name = "backend",
                                         .name_size = 7,
                                         .type = PJRT_NamedValue_kString,
                                         .string_value = backend,
                                         .value_size = strlen(backend)};
    if (entry) /* an OpenNPU option: one function of a module with several */
        opts[nopt++] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                         .name = "entry",
                                         .name_size = 5,
                                         .type = PJRT_NamedValue_kString,
                                         .string_value = entry,
                                         .value_size = strlen(entry)};
    PJRT_Client_Create_Args cc = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                                  .create_options = nopt ? opts : NULL,
                                  .num_options = nopt};
    if (CALL(Client_Create, cc, "Client_Create"))
        goto out;
    client = cc.client;

    PJRT_Client_PlatformName_Args pn = {.struct_size = sizeof pn, .client = client};
    PJRT_Client_PlatformVersion_Args pv = {.struct_size = sizeof pv, .client = client};
    PJRT_Client_ProcessIndex_Args px = {.struct_size = sizeof px, .client = client};
    PJRT_Client_Devices_Args dv = {.struct_size = sizeof dv, .client = client};
    PJRT_Client_AddressableDevices_Args ad = {.struct_size = sizeof ad, .client = client};
    PJRT_Client_AddressableMemories_Args am = {.struct_size = sizeof am, .client = client};
    if (CALL(Client_PlatformName, pn, "Client_PlatformName") ||
        CALL(Client_PlatformVersion, pv, "Client_PlatformVersion") ||
        CALL(Client_ProcessIndex, px, "Client_ProcessIndex") ||
        CALL(Client_Devices, dv, "Client_Devices") ||
        CALL(Client_AddressableDevices, ad, "Client_AddressableDevices") ||
        CALL(Client_AddressableMemories, am, "Client_AddressableMemories"))
        goto out;
    if (ad.num_devices < 1) {
        fprintf(stderr, "pjrt-run: the plugin has no addressable device\n");
        goto out;
    }
    PJRT_Device *dev = ad.devices[0];
    PJRT_Device_GetDescription_Args gd = {.struct_size = sizeof gd, .device = dev};
    if (CALL(Device_GetDescription, gd, "Device_GetDescription"))
        goto out;
    PJRT_DeviceDescription_Id_Args di = {.struct_size = sizeof di,
                                         .device_description = gd.device_description};
    PJRT_DeviceDescription_Kind_Args dk = {.struct_size = sizeof dk,
                                           .device_description = gd.device_description};
    PJRT_DeviceDescription_Attributes_Args da = {.struct_size = sizeof da,
                                                 .device_description = gd.device_description};
    PJRT_Device_DefaultMemory_Args dm = {.struct_size = sizeof dm, .device = dev};
    if (CALL(DeviceDescription_Id, di, "DeviceDescription_Id") ||
        CALL(DeviceDescription_Kind, dk, "DeviceDescription_Kind") ||
        CALL(DeviceDescription_Attributes, da, "DeviceDescription_Attributes") ||
        CALL(Device_DefaultMemory, dm, "Device_DefaultMemory"))
        goto out;
    if (verbose)
        fprintf(stderr, "pjrt-run: platform %.*s (%.*s), process %d, %zu device(s): %.*s\n",
                (int)pn.str_size, pn.str, (int)pv.str_size, pv.str, px.process_index,
                dv.num_devices, (int)dk.str_size, dk.str);

    size_t len = 0;
    if (npu_read_file(program, NULL, &code, &len)) {
        fprintf(stderr, "pjrt-run: cannot read %s\n", program);
        goto out;
    }
    PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE,
                         .code = code,
                         .code_size = len,
                         .format = "mlir",
                         .format_size = 4};
    PJRT_Client_Compile_Args cp = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                   .client = client,
                                   .program = &prog,
                                   .compile_options = "",
                                   .compile_options_size = 0};
    if (CALL(Client_Compile, cp, "Client_Compile"))
        goto out;
    exe = cp.executable;

    PJRT_LoadedExecutable_GetExecutable_Args ge = {.struct_size = sizeof ge,
                                                   .loaded_executable = exe};
    if (CALL(LoadedExecutable_GetExecutable, ge, "LoadedExecutable_GetExecutable"))
        goto out;
    PJRT_Executable_NumOutputs_Args no = {.struct_size = sizeof no, .executable = ge.executable};
    PJRT_Executable_OutputElementTypes_Args ot = {.struct_size = sizeof ot,
                                                  .executable = ge.executable};
    PJRT_Executable_OutputDimensions_Args od = {.struct_size = sizeof od,
                                                .executable = ge.executable};
    bool bad = CALL(Executable_NumOutputs, no, "Executable_NumOutputs") ||
               CALL(Executable_OutputElementTypes, ot, "Executable_OutputElementTypes") ||
               CALL(Executable_OutputDimensions, od, "Executable_OutputDimensions");
    nout = no.count;
    PJRT_Executable_Destroy_Args xd = {.struct_size = sizeof xd, .executable = ge.executable};
    bad |= CALL(Executable_Destroy, xd, "Executable_Destroy");
    if (bad)
        goto out;
    if (verbose)
        fprintf(stderr, "pjrt-run: compiled, %zu output(s)\n", nout);

    for (int i = 0; i < nin; i++) {
        if (npu_npy_read(inputs[i], &tin[i])) {
            fprintf(stderr, "pjrt-run: cannot read %s\n", inputs[i]);
            goto out;
        }
        PJRT_Buffer_Type pt = pjrt_buffer_type(tin[i].dtype);
        PJRT_Client_BufferFromHostBuffer_Args bh = {
            .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
            .client = client,
            .data = tin[i].data,
            .type = pt,
            .dims = tin[i].dims,
            .num_dims = (size_t)tin[i].ndim,
            .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
            .device = dev};
        if (CALL(Client_BufferFromHostBuffer, bh, "Client_BufferFromHostBuffer") ||
            !await_event(bh.done_with_host_buffer, "done_with_host_buffer"))
            goto out;
        inbuf[i] = bh.buffer;
        PJRT_Buffer_ReadyEvent_Args re = {.struct_size = sizeof re, .buffer = inbuf[i]};
        if (CALL(Buffer_ReadyEvent, re, "Buffer_ReadyEvent") ||
            !await_event(re.event, "input ready"))
            goto out;
    }

    outbuf = calloc(nout ? nout : 1, sizeof *outbuf);
    if (!outbuf)
        goto out;
    PJRT_Buffer *const *arg_list = inbuf;
    PJRT_Buffer **out_list = outbuf;
    PJRT_Event *done = NULL;
    PJRT_ExecuteOptions eo = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
    PJRT_LoadedExecutable_Execute_Args ex = {.struct_size =
                                                 PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
                                             .executable = exe,
                                             .options = &eo,
                                             .argument_lists = &arg_list,
                                             .num_devices = 1,
                                             .num_args = (size_t)nin,
                                             .output_lists = &out_list,
                                             .device_complete_events = &done};
    if (CALL(LoadedExecutable_Execute, ex, "LoadedExecutable_Execute") ||
        !await_event(done, "execution"))
        goto out;

    for (size_t i = 0; i < nout; i++) {
        PJRT_Buffer_Dimensions_Args bd = {.struct_size = sizeof bd, .buffer = outbuf[i]};
        PJRT_Buffer_ElementType_Args be = {.struct_size = sizeof be, .buffer = outbuf[i]};
        PJRT_Buffer_ToHostBuffer_Args th = {
            .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = outbuf[i]};
        if (CALL(Buffer_Dimensions, bd, "Buffer_Dimensions") ||
            CALL(Buffer_ElementType, be, "Buffer_ElementType") ||
            CALL(Buffer_ToHostBuffer, th, "Buffer_ToHostBuffer (size)"))
            goto out;
        struct npu_tensor t = {.ndim = (int)bd.num_dims, .dtype = pjrt_npu_dtype(be.type)};
        if (!t.dtype || bd.num_dims > NPU_MAX_DIMS) {
            fprintf(stderr, "pjrt-run: output %zu has element type %d\n", i, (int)be.type);
            goto out;
        }
        memcpy(t.dims, bd.dims, bd.num_dims * sizeof *bd.dims);
        t.data = malloc(th.dst_size ? th.dst_size : 1);
        if (!t.data)
            goto out;
        th.dst = t.data;
        bool ok = !CALL(Buffer_ToHostBuffer, th, "Buffer_ToHostBuffer") &&
                  await_event(th.event, "to host");
        char path[4096];
        snprintf(path, sizeof path, "%s/out%zu.npy", outdir, i);
        if (ok && npu_npy_write(path, &t)) {
            fprintf(stderr, "pjrt-run: cannot write %s\n", path);
            ok = false;
        }
        free(t.data);
        if (!ok)
            goto out;
        if (verbose)
            fprintf(stderr, "pjrt-run: wrote %s\n", path);
    }
    rc = 0;
out:
    for (size_t i = 0; outbuf && i < nout; i++) {
        PJRT_Buffer_Destroy_Args d = {.struct_size = sizeof d, .buffer = outbuf[i]};
        if (outbuf[i] && CALL(Buffer_Destroy, d, "Buffer_Destroy"))
            rc = 1;
    }
    free(outbuf);
    for (int i = 0; i < nin; i++) {
        PJRT_Buffer_Destroy_Args d = {.struct_size = sizeof d, .buffer = inbuf[i]};
        if (inbuf[i] && CALL(Buffer_Destroy, d, "Buffer_Destroy"))
            rc = 1;
        npu_npy_free(&tin[i]);
    }
    if (exe) {
        PJRT_LoadedExecutable_Destroy_Args d = {.struct_size = sizeof d, .executable = exe};
        if (CALL(LoadedExecutable_Destroy, d, "LoadedExecutable_Destroy"))
            rc = 1;
    }
    if (client) {
        PJRT_Client_Destroy_Args d = {.struct_size = sizeof d, .client = client};
        if (CALL(Client_Destroy, d, "Client_Destroy"))
            rc = 1;
    }
    free(code);
    dlclose(so);
    return rc;
}
