// SPDX-License-Identifier: MIT
/*
 * test-pjrt-api.c: the PJRT plugin's contract through its C API, loaded with
 * dlopen like jaxlib does: the table (version, size, every slot filled, each
 * unimplemented slot an UNIMPLEMENTED error naming itself), a whole run of a
 * small program checked against values computed here, and misuse: unknown
 * client options and backends, short struct_size, wrong program formats,
 * an unsupported op, bytecode, wrong argument shapes and counts, a short
 * destination buffer, deleted buffers, and double destroys of every kind of
 * handle. Run under ASan it also proves none of these touches freed memory.
 *
 * Usage: test-pjrt-api PLUGIN.so [ARTIFACT.mlir.bc PRODUCER OP]...
 *   each artifact (MLIR bytecode, a VHLO portable artifact) must compile if
 *   OP is "ok", else be refused as UNIMPLEMENTED with a message naming its
 *   producer and the op; every truncation of it must compile or be refused
 *   cleanly (INVALID_ARGUMENT or UNIMPLEMENTED).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt-c-api.h"

static const PJRT_Api *api;
static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* Code and message of e (which is destroyed); 0 for no error. */
static int
take(PJRT_Error *e, char *msg, size_t len)
{
    if (msg && len)
        msg[0] = 0;
    if (!e)
        return 0;
    PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = e};
    PJRT_ERROR_MESSAGE(api)(&m);
    if (msg)
        snprintf(msg, len, "%.*s", (int)m.message_size, m.message);
    PJRT_Error_GetCode_Args g = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = e};
    PJRT_Error *e2 = api->PJRT_Error_GetCode(&g);
    CHECK(!e2, "Error_GetCode failed");
    PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = e};
    PJRT_ERROR_DESTROY(api)(&d);
    return e2 ? -1 : (int)g.code;
}

#define EXPECT_OK(call)                                                                            \
    do {                                                                                           \
        char m_[512];                                                                              \
        int c_ = take(call, m_, sizeof m_);                                                        \
        CHECK(c_ == 0, "%s: code %d: %s", #call, c_, m_);                                          \
    } while (0)

#define EXPECT_ERR(call, code, needle)                                                             \
    do {                                                                                           \
        char m_[1024];                                                                             \
        int c_ = take(call, m_, sizeof m_);                                                        \
        CHECK(c_ == (code) && strstr(m_, needle), "%s: expected code %d with '%s', got %d: %s",    \
              #call, (int)(code), needle, c_, m_);                                                 \
    } while (0)

static const char add_program[] =
    "module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n"
    "  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>) -> (tensor<2x3xf32> "
    "{jax.result_info = \"\"}) {\n"
    "    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>\n"
    "    %1 = stablehlo.multiply %arg0, %0 : tensor<2x3xf32>\n"
    "    return %1 : tensor<2x3xf32>\n"
    "  }\n"
    "}\n";

static PJRT_Error *
compile(PJRT_Client *c, const char *code, size_t len, const char *format,
        PJRT_LoadedExecutable **out)
{
    PJRT_Program p = {.struct_size = PJRT_Program_STRUCT_SIZE,
                      .code = (char *)code,
                      .code_size = len,
                      .format = format,
                      .format_size = strlen(format)};
    PJRT_Client_Compile_Args a = {
        .struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE, .client = c, .program = &p};
    PJRT_Error *e = api->PJRT_Client_Compile(&a);
    *out = e ? NULL : a.executable;
    return e;
}

static PJRT_Buffer *
upload(PJRT_Client *c, const float *data, const int64_t *dims, size_t nd)
{
    PJRT_Client_BufferFromHostBuffer_Args a = {
        .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
        .client = c,
        .data = data,
        .type = PJRT_Buffer_Type_F32,
        .dims = dims,
        .num_dims = nd};
    EXPECT_OK(api->PJRT_Client_BufferFromHostBuffer(&a));
    PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
                                 .event = a.done_with_host_buffer};
    EXPECT_OK(api->PJRT_Event_Destroy(&d));
    return a.buffer;
}

static PJRT_Error *
execute(PJRT_LoadedExecutable *e, PJRT_Buffer **args, size_t nargs, PJRT_Buffer **outs,
        PJRT_Event **done)
{
    PJRT_Buffer *const *al = args;
    PJRT_Buffer **ol = outs;
    PJRT_LoadedExecutable_Execute_Args x = {.struct_size =
                                                PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
                                            .executable = e,
                                            .argument_lists = &al,
                                            .num_devices = 1,
                                            .num_args = nargs,
                                            .output_lists = &ol,
                                            .device_complete_events = done};
    return api->PJRT_LoadedExecutable_Execute(&x);
}

static void
test_bytecode(PJRT_Client *client, const char *path, const char *producer, const char *op)
{
    FILE *f = fopen(path, "rb");
    CHECK(f, "cannot open %s", path);
    if (!f)
        return;
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    PJRT_LoadedExecutable *exe = NULL;
    char m[2048];
    PJRT_Error *e = compile(client, buf, len, "mlir", &exe);
    if (!strcmp(op, "ok")) {
        CHECK(!e, "%s: not compiled", path);
        take(e, NULL, 0);
        if (!e && exe) {
            PJRT_LoadedExecutable_Destroy_Args d = {.struct_size = sizeof d, .executable = exe};
            take(api->PJRT_LoadedExecutable_Destroy(&d), NULL, 0);
        }
    } else {
        int code = take(e, m, sizeof m);
        CHECK(code == PJRT_Error_Code_UNIMPLEMENTED && strstr(m, producer) && strstr(m, op),
              "%s: code %d: %s", path, code, m);
    }
    for (size_t cut = 4; cut < len; cut++) {
        exe = NULL;
        e = compile(client, buf, cut, "mlir", &exe);
        if (!e) {
            PJRT_LoadedExecutable_Destroy_Args d = {.struct_size = sizeof d, .executable = exe};
            take(api->PJRT_LoadedExecutable_Destroy(&d), NULL, 0);
            continue;
        }
        int code = take(e, m, sizeof m);
        CHECK(code == PJRT_Error_Code_UNIMPLEMENTED || code == PJRT_Error_Code_INVALID_ARGUMENT,
              "%s cut at %zu: code %d: %s", path, cut, code, m);
    }
}

static int ready_calls;
static void
on_ready(PJRT_Error *e, void *user)
{
    ready_calls += *(int *)user;
    take(e, NULL, 0);
}

static void
test_unimplemented(void)
{
    /* Slots the plugin does not implement: each must name itself. */
    static const struct {
        size_t off;
        const char *name;
    } slots[] = {
#define U(n) {offsetof(PJRT_Api, PJRT_##n), "PJRT_" #n}
        U(Device_MemoryStats),
        U(Executable_GetCostAnalysis),
        U(Executable_OptimizedProgram),
        U(Executable_Serialize),
        U(Executable_DeserializeAndLoad),
        U(Buffer_CopyToDevice),
        U(Buffer_UnsafePointer),
        U(Buffer_IncreaseExternalReferenceCount),
        U(Buffer_DecreaseExternalReferenceCount),
        U(Buffer_OpaqueDeviceMemoryDataPointer),
        U(CopyToDeviceStream_Destroy),
        U(CopyToDeviceStream_AddChunk),
        U(CopyToDeviceStream_TotalBytes),
        U(CopyToDeviceStream_GranuleSize),
        U(CopyToDeviceStream_CurrentBytes),
        U(TopologyDescription_Create),
        U(TopologyDescription_Destroy),
        U(TopologyDescription_PlatformName),
        U(TopologyDescription_PlatformVersion),
        U(TopologyDescription_GetDeviceDescriptions),
        U(TopologyDescription_Serialize),
        U(TopologyDescription_Attributes),
        U(Compile),
        U(Buffer_CopyToMemory),
        U(Executable_OutputShardings),
#undef U
    };
    char zero[512] = {0};
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        PJRT_Generic_Fn fn;
        memcpy(&fn, (const char *)api + slots[i].off, sizeof fn);
        EXPECT_ERR(fn(zero), PJRT_Error_Code_UNIMPLEMENTED, slots[i].name);
    }
}

int
main(int argc, char **argv)
{
    if (argc < 2 || (argc - 2) % 3) {
        fprintf(stderr, "usage: test-pjrt-api PLUGIN.so [ARTIFACT.mlir.bc PRODUCER OP]...\n");
        return 2;
    }
    void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    const PJRT_Api *(*get)(void) = (const PJRT_Api *(*)(void))dlsym(so, "GetPjrtApi");
    CHECK(get, "no GetPjrtApi");
    if (!get)
        return 1;
    api = get();
    CHECK(api->pjrt_api_version.major_version == 0 && api->pjrt_api_version.minor_version == 33,
          "version %d.%d", api->pjrt_api_version.major_version,
          api->pjrt_api_version.minor_version);
    CHECK(api->struct_size == PJRT_Api_STRUCT_SIZE && PJRT_Api_STRUCT_SIZE == 40 + 94 * 8,
          "struct_size %zu", api->struct_size);
    const PJRT_Generic_Fn *slot = &api->PJRT_Error_Destroy;
    for (int i = 0; i < PJRT_API_NUM_ENTRIES; i++)
        CHECK(slot[i], "slot %d is NULL", i);
    test_unimplemented();

    PJRT_Plugin_Initialize_Args pi = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
    EXPECT_OK(api->PJRT_Plugin_Initialize(&pi));
    PJRT_Plugin_Attributes_Args pa = {.struct_size = sizeof pa};
    EXPECT_OK(api->PJRT_Plugin_Attributes(&pa));
    bool have_shlo = false;
    for (size_t i = 0; i < pa.num_attributes; i++)
        if (pa.attributes[i].name_size == 25 &&
            !memcmp(pa.attributes[i].name, "stablehlo_current_version", 25))
            have_shlo = pa.attributes[i].type == PJRT_NamedValue_kInt64List &&
                        pa.attributes[i].value_size == 3;
    CHECK(have_shlo, "no stablehlo_current_version attribute");

    /* short struct_size */
    PJRT_Client_Create_Args cc = {.struct_size = 16};
    EXPECT_ERR(api->PJRT_Client_Create(&cc), PJRT_Error_Code_INVALID_ARGUMENT, "struct_size");
    EXPECT_ERR(api->PJRT_Client_Create(NULL), PJRT_Error_Code_INVALID_ARGUMENT, "NULL");
    /* unknown option, unknown backend */
    PJRT_NamedValue opt = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                           .name = "no_such_option",
                           .name_size = 14,
                           .type = PJRT_NamedValue_kInt64,
                           .int64_value = 1,
                           .value_size = 1};
    cc = (PJRT_Client_Create_Args){.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                                   .create_options = &opt,
                                   .num_options = 1};
    EXPECT_ERR(api->PJRT_Client_Create(&cc), PJRT_Error_Code_INVALID_ARGUMENT, "no_such_option");
    opt = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                            .name = "backend",
                            .name_size = 7,
                            .type = PJRT_NamedValue_kString,
                            .string_value = "tpu",
                            .value_size = 3};
    EXPECT_ERR(api->PJRT_Client_Create(&cc), PJRT_Error_Code_INVALID_ARGUMENT, "tpu");
    opt.string_value = "cpu";
    EXPECT_OK(api->PJRT_Client_Create(&cc));
    PJRT_Client *client = cc.client;

    PJRT_Client_PlatformName_Args pn = {.struct_size = sizeof pn, .client = client};
    EXPECT_OK(api->PJRT_Client_PlatformName(&pn));
    CHECK(pn.str_size == 7 && !memcmp(pn.str, "opennpu", 7), "platform name");
    PJRT_Client_Devices_Args dv = {.struct_size = sizeof dv, .client = client};
    EXPECT_OK(api->PJRT_Client_Devices(&dv));
    CHECK(dv.num_devices == 1, "devices %zu", dv.num_devices);
    PJRT_Device_GetDescription_Args gd = {.struct_size = sizeof gd, .device = dv.devices[0]};
    EXPECT_OK(api->PJRT_Device_GetDescription(&gd));
    PJRT_DeviceDescription_Attributes_Args da = {.struct_size = sizeof da,
                                                 .device_description = gd.device_description};
    EXPECT_OK(api->PJRT_DeviceDescription_Attributes(&da));
    CHECK(da.num_attributes >= 1, "device attributes");
    PJRT_Device_AddressableMemories_Args dm = {.struct_size = sizeof dm, .device = dv.devices[0]};
    EXPECT_OK(api->PJRT_Device_AddressableMemories(&dm));
    PJRT_Memory_Kind_Args mk = {.struct_size = sizeof mk, .memory = dm.memories[0]};
    EXPECT_OK(api->PJRT_Memory_Kind(&mk));
    PJRT_Device_GetDescription_Args bad_dev = {.struct_size = sizeof bad_dev,
                                               .device = (PJRT_Device *)&pn};
    EXPECT_ERR(api->PJRT_Device_GetDescription(&bad_dev), PJRT_Error_Code_INVALID_ARGUMENT,
               "not a live handle");

    /* compile: wrong format, unsupported op, bytecode, garbage */
    PJRT_LoadedExecutable *exe = NULL;
    EXPECT_ERR(compile(client, add_program, sizeof add_program - 1, "hlo", &exe),
               PJRT_Error_Code_INVALID_ARGUMENT, "format 'hlo'");
    const char cbrt[] = "func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                        "  %0 = stablehlo.cbrt %arg0 : tensor<4xf32>\n"
                        "  return %0 : tensor<4xf32>\n}\n";
    EXPECT_ERR(compile(client, cbrt, sizeof cbrt - 1, "mlir", &exe), PJRT_Error_Code_UNIMPLEMENTED,
               "'stablehlo.cbrt' is not supported");
    EXPECT_ERR(compile(client, cbrt, sizeof cbrt - 1, "mlir", &exe), PJRT_Error_Code_UNIMPLEMENTED,
               "StableHLO 1.0.0");
    EXPECT_ERR(compile(client, "ML\xefR\x00\x01\x02", 7, "mlir", &exe),
               PJRT_Error_Code_INVALID_ARGUMENT, "corrupt MLIR bytecode");
    EXPECT_ERR(compile(client, "hello", 5, "mlir", &exe), PJRT_Error_Code_INVALID_ARGUMENT,
               "no public function");
    const char badshape[] = "func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                            "  %0 = stablehlo.add %arg0, %arg0 : tensor<5xf32>\n"
                            "  return %0 : tensor<5xf32>\n}\n";
    EXPECT_ERR(compile(client, badshape, sizeof badshape - 1, "mlir", &exe),
               PJRT_Error_Code_INVALID_ARGUMENT, "line 2");
    for (int i = 2; i + 2 < argc; i += 3)
        test_bytecode(client, argv[i], argv[i + 1], argv[i + 2]);
    EXPECT_OK(compile(client, add_program, sizeof add_program - 1, "mlir", &exe));

    PJRT_LoadedExecutable_GetExecutable_Args ge = {.struct_size = sizeof ge,
                                                   .loaded_executable = exe};
    EXPECT_OK(api->PJRT_LoadedExecutable_GetExecutable(&ge));
    PJRT_Executable_NumOutputs_Args no = {.struct_size = sizeof no, .executable = ge.executable};
    EXPECT_OK(api->PJRT_Executable_NumOutputs(&no));
    CHECK(no.count == 1, "outputs %zu", no.count);
    PJRT_Executable_OutputDimensions_Args od = {.struct_size = sizeof od,
                                                .executable = ge.executable};
    EXPECT_OK(api->PJRT_Executable_OutputDimensions(&od));
    CHECK(od.num_outputs == 1 && od.dim_sizes[0] == 2 && od.dims[0] == 2 && od.dims[1] == 3,
          "output dims");

    float x[6] = {1, 2, 3, 4, 5, 6}, s[3] = {0.5f, -1, 2};
    int64_t dx[2] = {2, 3}, ds[1] = {3}, dwrong[2] = {3, 2};
    PJRT_Buffer *bx = upload(client, x, dx, 2), *bs = upload(client, s, ds, 1);
    PJRT_Buffer *bw = upload(client, x, dwrong, 2);
    PJRT_Buffer *args[2] = {bx, bs}, *outs[1] = {0};
    PJRT_Event *done = NULL;
    /* wrong argument count and shape */
    EXPECT_ERR(execute(exe, args, 1, outs, NULL), PJRT_Error_Code_INVALID_ARGUMENT,
               "1 arguments, the program takes 2");
    PJRT_Buffer *wargs[2] = {bw, bs};
    EXPECT_ERR(execute(exe, wargs, 2, outs, NULL), PJRT_Error_Code_INVALID_ARGUMENT, "argument 0");
    EXPECT_OK(execute(exe, args, 2, outs, &done));
    PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = done};
    EXPECT_OK(api->PJRT_Event_Await(&aw));
    int one = 1;
    PJRT_Event_OnReady_Args orr = {.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE,
                                   .event = done,
                                   .callback = on_ready,
                                   .user_arg = &one};
    EXPECT_OK(api->PJRT_Event_OnReady(&orr));
    CHECK(ready_calls == 1, "OnReady callback calls %d", ready_calls);
    PJRT_Event_Destroy_Args ed = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
                                  .event = done};
    EXPECT_OK(api->PJRT_Event_Destroy(&ed));
    EXPECT_ERR(api->PJRT_Event_Destroy(&ed), PJRT_Error_Code_INVALID_ARGUMENT, "destroyed twice");

    /* results: size query, a short buffer, then the copy */
    PJRT_Buffer_ToHostBuffer_Args th = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                        .src = outs[0]};
    EXPECT_OK(api->PJRT_Buffer_ToHostBuffer(&th));
    CHECK(th.dst_size == 24, "dst_size %zu", th.dst_size);
    float y[6] = {0};
    th.dst = y;
    th.dst_size = 20;
    EXPECT_ERR(api->PJRT_Buffer_ToHostBuffer(&th), PJRT_Error_Code_INVALID_ARGUMENT,
               "smaller than");
    th.dst_size = sizeof y;
    EXPECT_OK(api->PJRT_Buffer_ToHostBuffer(&th));
    ed.event = th.event;
    EXPECT_OK(api->PJRT_Event_Destroy(&ed));
    for (int i = 0; i < 6; i++)
        CHECK(fabsf(y[i] - x[i] * s[i % 3]) < 1e-6f, "y[%d] = %g, expected %g", i, y[i],
              x[i] * s[i % 3]);
    PJRT_Buffer_OnDeviceSizeInBytes_Args osz = {.struct_size = sizeof osz, .buffer = outs[0]};
    EXPECT_OK(api->PJRT_Buffer_OnDeviceSizeInBytes(&osz));
    CHECK(osz.on_device_size_in_bytes == 24, "on-device size");

    /* a deleted buffer */
    PJRT_Buffer_Delete_Args bdel = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE,
                                    .buffer = bs};
    EXPECT_OK(api->PJRT_Buffer_Delete(&bdel));
    PJRT_Buffer_IsDeleted_Args isd = {.struct_size = sizeof isd, .buffer = bs};
    EXPECT_OK(api->PJRT_Buffer_IsDeleted(&isd));
    CHECK(isd.flag, "IsDeleted");
    EXPECT_ERR(execute(exe, args, 2, outs + 0, NULL), PJRT_Error_Code_FAILED_PRECONDITION,
               "deleted");
    PJRT_Buffer_ReadyEvent_Args re = {.struct_size = sizeof re, .buffer = bs};
    EXPECT_OK(api->PJRT_Buffer_ReadyEvent(&re));
    PJRT_Event_Error_Args ee = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
                                .event = re.event};
    EXPECT_ERR(api->PJRT_Event_Error(&ee), PJRT_Error_Code_FAILED_PRECONDITION, "deleted");
    ed.event = re.event;
    EXPECT_OK(api->PJRT_Event_Destroy(&ed));

    /* double destroys: buffers, executables, client; the executable and a
     * buffer outlive their loaded executable and client */
    PJRT_Buffer_Destroy_Args bd = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE};
    PJRT_Buffer *all[4] = {bx, bs, bw, outs[0]};
    for (int i = 0; i < 3; i++) {
        bd.buffer = all[i];
        EXPECT_OK(api->PJRT_Buffer_Destroy(&bd));
        EXPECT_ERR(api->PJRT_Buffer_Destroy(&bd), PJRT_Error_Code_INVALID_ARGUMENT,
                   "destroyed twice");
    }
    PJRT_LoadedExecutable_Destroy_Args ld = {.struct_size = sizeof ld, .executable = exe};
    EXPECT_OK(api->PJRT_LoadedExecutable_Destroy(&ld));
    EXPECT_ERR(api->PJRT_LoadedExecutable_Destroy(&ld), PJRT_Error_Code_INVALID_ARGUMENT,
               "destroyed twice");
    EXPECT_OK(api->PJRT_Executable_NumOutputs(&no)); /* still alive through ge */
    PJRT_Executable_Destroy_Args xd = {.struct_size = sizeof xd, .executable = ge.executable};
    EXPECT_OK(api->PJRT_Executable_Destroy(&xd));
    EXPECT_ERR(api->PJRT_Executable_Destroy(&xd), PJRT_Error_Code_INVALID_ARGUMENT,
               "destroyed twice");
    PJRT_Client_Destroy_Args cd = {.struct_size = sizeof cd, .client = client};
    EXPECT_OK(api->PJRT_Client_Destroy(&cd));
    EXPECT_ERR(api->PJRT_Client_Destroy(&cd), PJRT_Error_Code_INVALID_ARGUMENT, "destroyed twice");
    EXPECT_ERR(api->PJRT_Client_PlatformName(&pn), PJRT_Error_Code_INVALID_ARGUMENT,
               "not a live handle");
    PJRT_Buffer_Device_Args bdev = {.struct_size = sizeof bdev, .buffer = outs[0]};
    EXPECT_OK(api->PJRT_Buffer_Device(&bdev)); /* the buffer keeps the client's device */
    bd.buffer = outs[0];
    EXPECT_OK(api->PJRT_Buffer_Destroy(&bd));
    /* an error destroyed twice is reported on stderr and ignored */
    PJRT_Error *er = api->PJRT_Client_Destroy(&cd);
    PJRT_Error_Destroy_Args erd = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = er};
    PJRT_ERROR_DESTROY(api)(&erd);
    PJRT_ERROR_DESTROY(api)(&erd);
    erd.error = NULL;
    PJRT_ERROR_DESTROY(api)(&erd);

    dlclose(so);
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("test-pjrt-api: all checks passed\n");
    return failures ? 1 : 0;
}
