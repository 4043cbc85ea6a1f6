// SPDX-License-Identifier: MIT
/*
 * pjrt-plugin.c: libpjrt_opennpu.so, a PJRT C API plugin (version 0.33,
 * pjrt-c-api.h) over the public OpenNPU library. A client has one device
 * (the NPU, or the simulator / CPU executor standing in for it: the backend
 * comes from the client option "backend", else $OPENNPU_PJRT_BACKEND, else
 * "auto") and one memory. Compile takes format "mlir" with StableHLO text,
 * reads it with npu_stablehlo_parse(), saves the graph as .npuir in a
 * private temporary folder and loads it with npu_model_load(), so the program
 * is compiled by the same pipeline as an ONNX model. Buffers live in host
 * memory; execution is synchronous, so every event is ready when returned.
 *
 * Every handle the plugin gives out (errors, events, clients, buffers,
 * executables) is recorded in a registry, and every entry checks its
 * handles there before it touches them: a destroyed or foreign handle is an
 * INVALID_ARGUMENT error, not a use after free. Entries the plugin does not
 * implement return UNIMPLEMENTED naming themselves.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu/npu-common.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"
#include "npu/npu-stablehlo.h"
#include "pjrt-c-api.h"
#include "pjrt-dtype.h"

#define EXPORT __attribute__((visibility("default")))
#define BACKEND_ENV "OPENNPU_PJRT_BACKEND"

/* ---- handle registry -------------------------------------------------------- */

enum kind { K_ERROR = 1, K_EVENT, K_CLIENT, K_BUFFER, K_LEXEC, K_EXEC, K_DEVICE, K_MEMORY, K_DESC };

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const void *p;
    enum kind k;
} * reg;
static size_t reg_n, reg_cap;

static bool
reg_add(const void *p, enum kind k)
{
    bool ok = true;
    pthread_mutex_lock(&reg_lock);
    if (reg_n == reg_cap) {
        size_t cap = reg_cap ? 2 * reg_cap : 256;
        void *r = realloc(reg, cap * sizeof *reg);
        if (r)
            reg = r, reg_cap = cap;
        else
            ok = false;
    }
    if (ok) {
        reg[reg_n].p = p;
        reg[reg_n++].k = k;
    }
    pthread_mutex_unlock(&reg_lock);
    return ok;
}

/* The registry's array lives as long as the plugin is loaded. */
__attribute__((destructor)) static void
reg_release(void)
{
    pthread_mutex_lock(&reg_lock);
    free(reg);
    reg = NULL;
    reg_n = reg_cap = 0;
    pthread_mutex_unlock(&reg_lock);
}

static bool
reg_find(const void *p, enum kind k, bool remove)
{
    bool found = false;
    if (!p)
        return false;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = reg_n; i-- > 0;)
        if (reg[i].p == p && reg[i].k == k) {
            found = true;
            if (remove)
                reg[i] = reg[--reg_n];
            break;
        }
    pthread_mutex_unlock(&reg_lock);
    return found;
}

/* ---- errors ----------------------------------------------------------------- */

struct PJRT_Error {
    PJRT_Error_Code code;
    size_t len;
    char msg[];
};

static PJRT_Error *
errv(PJRT_Error_Code code, const char *fmt, va_list ap)
{
    char buf[2048];
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n >= sizeof buf ? sizeof buf - 1 : (size_t)n;
    PJRT_Error *e = malloc(sizeof *e + len + 1);
    if (!e)
        return NULL; /* nothing better to do: the caller sees success */
    e->code = code;
    e->len = len;
    memcpy(e->msg, buf, len + 1);
    if (!reg_add(e, K_ERROR)) {
        free(e);
        return NULL;
    }
    return e;
}

static PJRT_Error *NPU_PRINTF(2, 3) err(PJRT_Error_Code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PJRT_Error *e = errv(code, fmt, ap);
    va_end(ap);
    return e;
}

/* The last error messages the library logged on this thread (compile). */
static __thread char log_buf[1536];
static __thread size_t log_len;

static void
log_sink(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "opennpu: %s: %s\n", domain, msg);
    if (level == NPU_LOG_ERROR) {
        int n = snprintf(log_buf + log_len, sizeof log_buf - log_len, "%s%s: %s",
                         log_len ? "; " : "", domain, msg);
        if (n > 0)
            log_len =
                log_len + (size_t)n >= sizeof log_buf ? sizeof log_buf - 1 : log_len + (size_t)n;
    }
}

static void
log_start(void)
{
    log_len = 0;
    log_buf[0] = 0;
    npu_log_set_handler(log_sink, NULL);
}

static PJRT_Error_Code
code_of(enum npu_status st)
{
    switch (st) {
    case NPU_ERR_UNSUPPORTED:
    case NPU_ERR_VERSION: return PJRT_Error_Code_UNIMPLEMENTED;
    case NPU_ERR_NOMEM: return PJRT_Error_Code_RESOURCE_EXHAUSTED;
    case NPU_ERR_NO_DEVICE: return PJRT_Error_Code_UNAVAILABLE;
    case NPU_ERR_PERMISSION: return PJRT_Error_Code_PERMISSION_DENIED;
    case NPU_ERR_TIMEOUT: return PJRT_Error_Code_DEADLINE_EXCEEDED;
    case NPU_ERR_INTERNAL:
    case NPU_ERR_FAULT: return PJRT_Error_Code_INTERNAL;
    default: return PJRT_Error_Code_INVALID_ARGUMENT;
    }
}

#define CHECK_ARGS(a, T)                                                                           \
    do {                                                                                           \
        if (!(a))                                                                                  \
            return err(PJRT_Error_Code_INVALID_ARGUMENT, "%s: args is NULL", __func__ + 5);        \
        if ((a)->struct_size < T##_STRUCT_SIZE)                                                    \
            return err(PJRT_Error_Code_INVALID_ARGUMENT,                                           \
                       "%s: struct_size %zu is smaller than %zu (" #T ", PJRT C API %d.%d)",       \
                       __func__ + 5, (a)->struct_size, (size_t)T##_STRUCT_SIZE, PJRT_API_MAJOR,    \
                       PJRT_API_MINOR);                                                            \
    } while (0)

#define CHECK_HANDLE(p, K, what)                                                                   \
    do {                                                                                           \
        if (!reg_find((p), (K), false))                                                            \
            return err(PJRT_Error_Code_INVALID_ARGUMENT,                                           \
                       "%s: %s %p is not a live handle of this plugin (destroyed already?)",       \
                       __func__ + 5, what, (const void *)(p));                                     \
    } while (0)

static void
impl_Error_Destroy(PJRT_Error_Destroy_Args *a)
{
    if (!a || a->struct_size < PJRT_Error_Destroy_Args_STRUCT_SIZE || !a->error)
        return;
    if (!reg_find(a->error, K_ERROR, true)) {
        fprintf(stderr,
                "opennpu-pjrt: PJRT_Error_Destroy: %p is not a live error (destroyed "
                "twice?); ignored\n",
                (void *)a->error);
        return;
    }
    free(a->error);
}

static void
impl_Error_Message(PJRT_Error_Message_Args *a)
{
    if (!a || a->struct_size < PJRT_Error_Message_Args_STRUCT_SIZE)
        return;
    if (!reg_find(a->error, K_ERROR, false)) {
        a->message = "PJRT_Error_Message: not a live error";
        a->message_size = strlen(a->message);
        return;
    }
    a->message = a->error->msg;
    a->message_size = a->error->len;
}

static PJRT_Error *
impl_Error_GetCode(PJRT_Error_GetCode_Args *a)
{
    CHECK_ARGS(a, PJRT_Error_GetCode_Args);
    CHECK_HANDLE(a->error, K_ERROR, "error");
    a->code = a->error->code;
    return NULL;
}

/* ---- plugin ----------------------------------------------------------------- */

static const int64_t shlo_current[3] = {NPU_STABLEHLO_VERSION_MAJOR, NPU_STABLEHLO_VERSION_MINOR,
                                        NPU_STABLEHLO_VERSION_PATCH};
static const int64_t shlo_minimum[3] = {0, 9, 0};

#define NV_STR(n, s)                                                                               \
    {                                                                                              \
        .struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = n, .name_size = sizeof n - 1,          \
        .type = PJRT_NamedValue_kString, .string_value = s, .value_size = sizeof s - 1             \
    }
#define NV_I64(n, v)                                                                               \
    {                                                                                              \
        .struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = n, .name_size = sizeof n - 1,          \
        .type = PJRT_NamedValue_kInt64, .int64_value = v, .value_size = 1                          \
    }
#define NV_LIST(n, v)                                                                              \
    {                                                                                              \
        .struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = n, .name_size = sizeof n - 1,          \
        .type = PJRT_NamedValue_kInt64List, .int64_array_value = v, .value_size = 3                \
    }

static PJRT_NamedValue plugin_attrs[] = {
    NV_I64("xla_version", 2),
    NV_LIST("stablehlo_current_version", shlo_current),
    NV_LIST("stablehlo_minimum_version", shlo_minimum),
    NV_STR("opennpu_program_formats", "mlir (StableHLO text)"),
};

static PJRT_Error *
impl_Plugin_Initialize(PJRT_Plugin_Initialize_Args *a)
{
    CHECK_ARGS(a, PJRT_Plugin_Initialize_Args);
    npu_log_set_handler(log_sink, NULL);
    return NULL;
}

static PJRT_Error *
impl_Plugin_Attributes(PJRT_Plugin_Attributes_Args *a)
{
    CHECK_ARGS(a, PJRT_Plugin_Attributes_Args);
    a->attributes = plugin_attrs;
    a->num_attributes = sizeof plugin_attrs / sizeof plugin_attrs[0];
    return NULL;
}

/* ---- events: always ready, with an optional error ---------------------------- */

struct PJRT_Event {
    PJRT_Error_Code code; /* 0 = success */
    char msg[512];
};

static PJRT_Event *
event_new(PJRT_Error_Code code, const char *msg)
{
    PJRT_Event *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->code = code;
    snprintf(e->msg, sizeof e->msg, "%s", msg ? msg : "");
    if (!reg_add(e, K_EVENT)) {
        free(e);
        return NULL;
    }
    return e;
}

static PJRT_Error *
event_error(const PJRT_Event *e)
{
    return e->code ? err(e->code, "%s", e->msg) : NULL;
}

static PJRT_Error *
impl_Event_Destroy(PJRT_Event_Destroy_Args *a)
{
    CHECK_ARGS(a, PJRT_Event_Destroy_Args);
    if (!a->event)
        return NULL;
    if (!reg_find(a->event, K_EVENT, true))
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Event_Destroy: %p is not a live event (destroyed twice?)", (void *)a->event);
    free(a->event);
    return NULL;
}

static PJRT_Error *
impl_Event_IsReady(PJRT_Event_IsReady_Args *a)
{
    CHECK_ARGS(a, PJRT_Event_IsReady_Args);
    CHECK_HANDLE(a->event, K_EVENT, "event");
    a->is_ready = true;
    return NULL;
}

static PJRT_Error *
impl_Event_Error(PJRT_Event_Error_Args *a)
{
    CHECK_ARGS(a, PJRT_Event_Destroy_Args);
    CHECK_HANDLE(a->event, K_EVENT, "event");
    return event_error(a->event);
}

static PJRT_Error *
impl_Event_Await(PJRT_Event_Await_Args *a)
{
    CHECK_ARGS(a, PJRT_Event_Destroy_Args);
    CHECK_HANDLE(a->event, K_EVENT, "event");
    return event_error(a->event);
}

static PJRT_Error *
impl_Event_OnReady(PJRT_Event_OnReady_Args *a)
{
    CHECK_ARGS(a, PJRT_Event_OnReady_Args);
    CHECK_HANDLE(a->event, K_EVENT, "event");
    if (!a->callback)
        return err(PJRT_Error_Code_INVALID_ARGUMENT, "Event_OnReady: callback is NULL");
    a->callback(event_error(a->event), a->user_arg);
    return NULL;
}

/* ---- client, device, memory ------------------------------------------------- */

struct PJRT_DeviceDescription {
    PJRT_Client *client;
    char kind[64], debug[128], str[64];
    PJRT_NamedValue attrs[3];
    char backend_attr[16];
    int64_t cores;
};

struct PJRT_Device {
    PJRT_Client *client;
};

struct PJRT_Memory {
    PJRT_Client *client;
};

struct PJRT_Client {
    pthread_mutex_t lock;
    int refs; /* the user's, one per buffer and executable */
    bool destroyed;
    char backend[16];
    char cache_dir[512];
    char entry[128]; /* option "entry": the function to compile, "" = @main rule */
    char version[96];
    struct PJRT_Device dev;
    struct PJRT_Memory mem;
    struct PJRT_DeviceDescription desc;
    PJRT_Device *devp[1];
    PJRT_Memory *memp[1];
};

static void
client_unref(PJRT_Client *c)
{
    pthread_mutex_lock(&c->lock);
    int left = --c->refs;
    pthread_mutex_unlock(&c->lock);
    if (left)
        return;
    reg_find(&c->dev, K_DEVICE, true);
    reg_find(&c->mem, K_MEMORY, true);
    reg_find(&c->desc, K_DESC, true);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void
client_ref(PJRT_Client *c)
{
    pthread_mutex_lock(&c->lock);
    c->refs++;
    pthread_mutex_unlock(&c->lock);
}

static bool
opt_is(const PJRT_NamedValue *o, const char *name)
{
    return o->name && o->name_size == strlen(name) && !memcmp(o->name, name, o->name_size);
}

static PJRT_Error *
impl_Client_Create(PJRT_Client_Create_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_Create_Args);
    if (a->num_options && !a->create_options)
        return err(PJRT_Error_Code_INVALID_ARGUMENT, "Client_Create: %zu options but no array",
                   a->num_options);
    PJRT_Client *c = calloc(1, sizeof *c);
    if (!c)
        return err(PJRT_Error_Code_RESOURCE_EXHAUSTED, "Client_Create: out of memory");
    const char *env = getenv(BACKEND_ENV);
    snprintf(c->backend, sizeof c->backend, "%s", env && *env ? env : "auto");
    for (size_t i = 0; i < a->num_options; i++) {
        const PJRT_NamedValue *o = &a->create_options[i];
        bool is_str = o->type == PJRT_NamedValue_kString && o->string_value;
        if (opt_is(o, "backend") && is_str && o->value_size < sizeof c->backend) {
            snprintf(c->backend, sizeof c->backend, "%.*s", (int)o->value_size, o->string_value);
        } else if (opt_is(o, "cache_dir") && is_str && o->value_size < sizeof c->cache_dir) {
            snprintf(c->cache_dir, sizeof c->cache_dir, "%.*s", (int)o->value_size,
                     o->string_value);
        } else if (opt_is(o, "entry") && is_str && o->value_size < sizeof c->entry) {
            snprintf(c->entry, sizeof c->entry, "%.*s", (int)o->value_size, o->string_value);
        } else {
            PJRT_Error *e = err(PJRT_Error_Code_INVALID_ARGUMENT,
                                "Client_Create: unknown or malformed option '%.*s' (known: "
                                "backend = cpu|sim|rknpu|rocket|auto, cache_dir = PATH, entry = "
                                "FUNCTION; strings)",
                                o->name ? (int)(o->name_size > 64 ? 64 : o->name_size) : 6,
                                o->name ? o->name : "(null)");
            free(c);
            return e;
        }
    }
    static const char *known[] = {"cpu", "sim", "rknpu", "rocket", "auto"};
    bool ok = false;
    for (size_t i = 0; i < 5; i++)
        ok |= !strcmp(c->backend, known[i]);
    if (!ok) {
        PJRT_Error *e =
            err(PJRT_Error_Code_INVALID_ARGUMENT,
                "Client_Create: unknown backend '%s' (cpu, sim, rknpu, rocket, auto)", c->backend);
        free(c);
        return e;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->refs = 1;
    snprintf(c->version, sizeof c->version, "OpenNPU PJRT plugin (PJRT C API %d.%d), backend %s",
             PJRT_API_MAJOR, PJRT_API_MINOR, c->backend);
    c->dev.client = c->mem.client = c->desc.client = c;
    c->devp[0] = &c->dev;
    c->memp[0] = &c->mem;
    struct PJRT_DeviceDescription *d = &c->desc;
    snprintf(d->kind, sizeof d->kind, "RK3588 NPU (%s)", c->backend);
    snprintf(d->str, sizeof d->str, "NpuDevice(id=0)");
    snprintf(d->debug, sizeof d->debug, "OpenNPU device 0: RK3588 NPU, backend %s", c->backend);
    snprintf(d->backend_attr, sizeof d->backend_attr, "%s", c->backend);
    d->cores = 3;
    d->attrs[0] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                    .name = "backend",
                                    .name_size = 7,
                                    .type = PJRT_NamedValue_kString,
                                    .string_value = d->backend_attr,
                                    .value_size = strlen(d->backend_attr)};
    d->attrs[1] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                    .name = "npu_cores",
                                    .name_size = 9,
                                    .type = PJRT_NamedValue_kInt64,
                                    .int64_value = d->cores,
                                    .value_size = 1};
    d->attrs[2] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                    .name = "device_vendor",
                                    .name_size = 13,
                                    .type = PJRT_NamedValue_kString,
                                    .string_value = "Rockchip",
                                    .value_size = 8};
    if (!reg_add(c, K_CLIENT) || !reg_add(&c->dev, K_DEVICE) || !reg_add(&c->mem, K_MEMORY) ||
        !reg_add(&c->desc, K_DESC)) {
        reg_find(c, K_CLIENT, true);
        client_unref(c);
        return err(PJRT_Error_Code_RESOURCE_EXHAUSTED, "Client_Create: out of memory");
    }
    a->client = c;
    return NULL;
}

static PJRT_Error *
impl_Client_Destroy(PJRT_Client_Destroy_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_Destroy_Args);
    if (!a->client)
        return NULL;
    if (!reg_find(a->client, K_CLIENT, true))
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Client_Destroy: %p is not a live client (destroyed twice?)", (void *)a->client);
    client_unref(a->client);
    return NULL;
}

static PJRT_Error *
impl_Client_PlatformName(PJRT_Client_PlatformName_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_PlatformName_Args);
    CHECK_HANDLE(a->client, K_CLIENT, "client");
    a->str = "opennpu";
    a->str_size = 7;
    return NULL;
}

static PJRT_Error *
impl_Client_PlatformVersion(PJRT_Client_PlatformVersion_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_PlatformName_Args);
    CHECK_HANDLE(a->client, K_CLIENT, "client");
    a->str = a->client->version;
    a->str_size = strlen(a->client->version);
    return NULL;
}

static PJRT_Error *
impl_Client_ProcessIndex(PJRT_Client_ProcessIndex_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_ProcessIndex_Args);
    CHECK_HANDLE(a->client, K_CLIENT, "client");
    a->process_index = 0;
    return NULL;
}

static PJRT_Error *
impl_Client_Devices(PJRT_Client_Devices_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_Devices_Args);
    CHECK_HANDLE(a->client, K_CLIENT, "client");
    a->devices = a->client->devp;
    a->num_devices = 1;
    return NULL;
}

static PJRT_Error *
impl_Client_AddressableDevices(PJRT_Client_AddressableDevices_Args *a)
{
    return impl_Client_Devices(a);
}

static PJRT_Error *
impl_Client_LookupDevice(PJRT_Client_LookupDevice_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_LookupDevice_Args);
    CHECK_HANDLE(a->client, K_CLIENT, "client");
    if (a->id != 0)
        return err(PJRT_Error_Code_INVALID_ARGUMENT, "Client_LookupDevice: no device %d (only 0)",
                   a->id);
    a->device = &a->client->dev;
    return NULL;
}

static PJRT_Error *
impl_Client_LookupAddressableDevice(PJRT_Client_LookupAddressableDevice_Args *a)
{
    return impl_Client_LookupDevice(a);
}

static PJRT_Error *
impl_Client_AddressableMemories(PJRT_Client_AddressableMemories_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_AddressableMemories_Args);
    CHECK_HANDLE(a->client, K_CLIENT, "client");
    a->memories = a->client->memp;
    a->num_memories = 1;
    return NULL;
}

static PJRT_Error *
impl_Client_DefaultDeviceAssignment(PJRT_Client_DefaultDeviceAssignment_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_DefaultDeviceAssignment_Args);
    CHECK_HANDLE(a->client, K_CLIENT, "client");
    if (a->num_replicas != 1 || a->num_partitions != 1)
        return err(PJRT_Error_Code_UNIMPLEMENTED,
                   "Client_DefaultDeviceAssignment: %d replicas x %d partitions (one device only)",
                   a->num_replicas, a->num_partitions);
    if (a->default_assignment_size < 1 || !a->default_assignment)
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Client_DefaultDeviceAssignment: no room for the assignment");
    a->default_assignment[0] = 0;
    return NULL;
}

#define DESC_STR(fn, field)                                                                        \
    static PJRT_Error *impl_DeviceDescription_##fn(PJRT_DeviceDescription_Kind_Args *a)            \
    {                                                                                              \
        CHECK_ARGS(a, PJRT_DeviceDescription_Kind_Args);                                           \
        CHECK_HANDLE(a->device_description, K_DESC, "device description");                         \
        a->str = a->device_description->field;                                                     \
        a->str_size = strlen(a->str);                                                              \
        return NULL;                                                                               \
    }
DESC_STR(Kind, kind)
DESC_STR(DebugString, debug)
DESC_STR(ToString, str)

static PJRT_Error *
impl_DeviceDescription_Id(PJRT_DeviceDescription_Id_Args *a)
{
    CHECK_ARGS(a, PJRT_DeviceDescription_Id_Args);
    CHECK_HANDLE(a->device_description, K_DESC, "device description");
    a->value = 0;
    return NULL;
}

static PJRT_Error *
impl_DeviceDescription_ProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args *a)
{
    return impl_DeviceDescription_Id(a);
}

static PJRT_Error *
impl_DeviceDescription_Attributes(PJRT_DeviceDescription_Attributes_Args *a)
{
    CHECK_ARGS(a, PJRT_DeviceDescription_Attributes_Args);
    CHECK_HANDLE(a->device_description, K_DESC, "device description");
    a->attributes = a->device_description->attrs;
    a->num_attributes = 3;
    return NULL;
}

static PJRT_Error *
impl_Device_GetDescription(PJRT_Device_GetDescription_Args *a)
{
    CHECK_ARGS(a, PJRT_Device_GetDescription_Args);
    CHECK_HANDLE(a->device, K_DEVICE, "device");
    a->device_description = &a->device->client->desc;
    return NULL;
}

static PJRT_Error *
impl_Device_IsAddressable(PJRT_Device_IsAddressable_Args *a)
{
    CHECK_ARGS(a, PJRT_Device_IsAddressable_Args);
    CHECK_HANDLE(a->device, K_DEVICE, "device");
    a->is_addressable = true;
    return NULL;
}

static PJRT_Error *
impl_Device_LocalHardwareId(PJRT_Device_LocalHardwareId_Args *a)
{
    CHECK_ARGS(a, PJRT_Device_LocalHardwareId_Args);
    CHECK_HANDLE(a->device, K_DEVICE, "device");
    a->local_hardware_id = 0;
    return NULL;
}

static PJRT_Error *
impl_Device_AddressableMemories(PJRT_Device_AddressableMemories_Args *a)
{
    CHECK_ARGS(a, PJRT_Device_AddressableMemories_Args);
    CHECK_HANDLE(a->device, K_DEVICE, "device");
    a->memories = a->device->client->memp;
    a->num_memories = 1;
    return NULL;
}

static PJRT_Error *
impl_Device_DefaultMemory(PJRT_Device_DefaultMemory_Args *a)
{
    CHECK_ARGS(a, PJRT_Device_DefaultMemory_Args);
    CHECK_HANDLE(a->device, K_DEVICE, "device");
    a->memory = &a->device->client->mem;
    return NULL;
}

static PJRT_Error *
impl_Memory_Id(PJRT_Memory_Id_Args *a)
{
    CHECK_ARGS(a, PJRT_Memory_Id_Args);
    CHECK_HANDLE(a->memory, K_MEMORY, "memory");
    a->id = 0;
    return NULL;
}

#define MEM_STR(fn, s)                                                                             \
    static PJRT_Error *impl_Memory_##fn(PJRT_Memory_Kind_Args *a)                                  \
    {                                                                                              \
        CHECK_ARGS(a, PJRT_Memory_Kind_Args);                                                      \
        CHECK_HANDLE(a->memory, K_MEMORY, "memory");                                               \
        a->str = s;                                                                                \
        a->str_size = strlen(s);                                                                   \
        return NULL;                                                                               \
    }
MEM_STR(Kind, "device")
MEM_STR(DebugString, "OpenNPU memory 0 (host memory holding the NPU's tensors)")
MEM_STR(ToString, "NpuMemory(id=0)")

static PJRT_Error *
impl_Memory_AddressableByDevices(PJRT_Memory_AddressableByDevices_Args *a)
{
    CHECK_ARGS(a, PJRT_Memory_AddressableByDevices_Args);
    CHECK_HANDLE(a->memory, K_MEMORY, "memory");
    a->devices = a->memory->client->devp;
    a->num_devices = 1;
    return NULL;
}

/* ---- buffers ---------------------------------------------------------------- */

struct PJRT_Buffer {
    PJRT_Client *client;
    PJRT_Buffer_Type type;
    enum npu_dtype dt;
    int ndim;
    int64_t dims[NPU_MAX_DIMS];
    int64_t minor_to_major[NPU_MAX_DIMS];
    size_t nbytes;
    void *data; /* NULL once deleted */
    bool deleted;
};

static PJRT_Buffer *
buffer_new(PJRT_Client *c, enum npu_dtype dt, int ndim, const int64_t *dims)
{
    PJRT_Buffer *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->client = c;
    b->dt = dt;
    b->type = pjrt_buffer_type(dt);
    b->ndim = ndim;
    size_t n = npu_dtype_size(dt);
    for (int i = 0; i < ndim; i++) {
        b->dims[i] = dims[i];
        b->minor_to_major[i] = ndim - 1 - i;
        n *= (size_t)dims[i];
    }
    b->nbytes = n;
    b->data = malloc(n ? n : 1);
    if (!b->data || !reg_add(b, K_BUFFER)) {
        free(b->data);
        free(b);
        return NULL;
    }
    client_ref(c);
    return b;
}

/* Whether a layout is the dense row-major one (all that is supported). */
static bool
layout_is_dense(const PJRT_Buffer_MemoryLayout *l, int ndim, const int64_t *dims, size_t es)
{
    if (!l)
        return true;
    if (l->type == PJRT_Buffer_MemoryLayout_Type_Tiled) {
        if (l->tiled.num_tiles || (l->tiled.minor_to_major_size != (size_t)ndim))
            return l->tiled.num_tiles == 0 && l->tiled.minor_to_major_size == 0;
        for (int i = 0; i < ndim; i++)
            if (!l->tiled.minor_to_major || l->tiled.minor_to_major[i] != ndim - 1 - i)
                return false;
        return true;
    }
    if (l->strides.num_byte_strides != (size_t)ndim || !l->strides.byte_strides)
        return false;
    int64_t s = (int64_t)es;
    for (int i = ndim - 1; i >= 0; i--) {
        if (dims[i] > 1 && l->strides.byte_strides[i] != s)
            return false;
        s *= dims[i];
    }
    return true;
}

static PJRT_Error *
impl_Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_BufferFromHostBuffer_Args);
    CHECK_HANDLE(a->client, K_CLIENT, "client");
    if (a->device && !reg_find(a->device, K_DEVICE, false))
        return err(PJRT_Error_Code_INVALID_ARGUMENT, "Client_BufferFromHostBuffer: bad device");
    if (a->memory && !reg_find(a->memory, K_MEMORY, false))
        return err(PJRT_Error_Code_INVALID_ARGUMENT, "Client_BufferFromHostBuffer: bad memory");
    enum npu_dtype dt = pjrt_npu_dtype(a->type);
    if (!dt)
        return err(PJRT_Error_Code_UNIMPLEMENTED,
                   "Client_BufferFromHostBuffer: element type %d is not supported (pred, s8-s64, "
                   "u8-u64, f16, f32, f64)",
                   (int)a->type);
    if (a->num_dims > NPU_MAX_DIMS || (a->num_dims && !a->dims))
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Client_BufferFromHostBuffer: %zu dims (at most %d)", a->num_dims, NPU_MAX_DIMS);
    size_t es = npu_dtype_size(dt);
    int64_t numel = 1;
    for (size_t i = 0; i < a->num_dims; i++) {
        if (a->dims[i] < 0 || (a->dims[i] && numel > ((int64_t)1 << 40) / a->dims[i]))
            return err(PJRT_Error_Code_INVALID_ARGUMENT,
                       "Client_BufferFromHostBuffer: bad dimension %lld", (long long)a->dims[i]);
        numel *= a->dims[i];
    }
    if (numel && !a->data)
        return err(PJRT_Error_Code_INVALID_ARGUMENT, "Client_BufferFromHostBuffer: data is NULL");
    if (!layout_is_dense(a->device_layout, (int)a->num_dims, a->dims, es))
        return err(PJRT_Error_Code_UNIMPLEMENTED,
                   "Client_BufferFromHostBuffer: only the dense row-major device layout");
    if (a->num_byte_strides && a->num_byte_strides != a->num_dims)
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Client_BufferFromHostBuffer: %zu byte strides for %zu dims",
                   a->num_byte_strides, a->num_dims);
    PJRT_Buffer *b = buffer_new(a->client, dt, (int)a->num_dims, a->dims);
    if (!b)
        return err(PJRT_Error_Code_RESOURCE_EXHAUSTED, "Client_BufferFromHostBuffer: no memory");
    if (!a->num_byte_strides || !a->byte_strides) {
        if (b->nbytes)
            memcpy(b->data, a->data, b->nbytes);
    } else { /* any strides, element by element */
        int nd = (int)a->num_dims;
        int64_t idx[NPU_MAX_DIMS] = {0};
        for (int64_t i = 0; i < numel; i++) {
            int64_t off = 0;
            for (int d = 0; d < nd; d++)
                off += idx[d] * a->byte_strides[d];
            memcpy((char *)b->data + i * (int64_t)es, (const char *)a->data + off, es);
            for (int d = nd - 1; d >= 0; d--) {
                if (++idx[d] < a->dims[d])
                    break;
                idx[d] = 0;
            }
        }
    }
    a->done_with_host_buffer = event_new(0, NULL);
    a->buffer = b;
    return NULL;
}

static PJRT_Error *
impl_Buffer_Destroy(PJRT_Buffer_Destroy_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_Destroy_Args);
    if (!a->buffer)
        return NULL;
    if (!reg_find(a->buffer, K_BUFFER, true))
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Buffer_Destroy: %p is not a live buffer (destroyed twice?)", (void *)a->buffer);
    PJRT_Client *c = a->buffer->client;
    free(a->buffer->data);
    free(a->buffer);
    client_unref(c);
    return NULL;
}

static PJRT_Error *
impl_Buffer_Delete(PJRT_Buffer_Delete_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_Destroy_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    free(a->buffer->data);
    a->buffer->data = NULL;
    a->buffer->deleted = true;
    return NULL;
}

static PJRT_Error *
impl_Buffer_IsDeleted(PJRT_Buffer_IsDeleted_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_IsDeleted_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    a->flag = a->buffer->deleted;
    return NULL;
}

static PJRT_Error *
impl_Buffer_IsOnCpu(PJRT_Buffer_IsDeleted_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_IsDeleted_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    a->flag = false; /* the NPU's memory, though it is host memory here */
    return NULL;
}

static PJRT_Error *
impl_Buffer_ElementType(PJRT_Buffer_ElementType_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_ElementType_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    a->type = a->buffer->type;
    return NULL;
}

static PJRT_Error *
impl_Buffer_Dimensions(PJRT_Buffer_Dimensions_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_Dimensions_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    a->dims = a->buffer->dims;
    a->num_dims = (size_t)a->buffer->ndim;
    return NULL;
}

static PJRT_Error *
impl_Buffer_UnpaddedDimensions(PJRT_Buffer_Dimensions_Args *a)
{
    return impl_Buffer_Dimensions(a);
}

static PJRT_Error *
impl_Buffer_DynamicDimensionIndices(PJRT_Buffer_DynamicDimensionIndices_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_DynamicDimensionIndices_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    a->dynamic_dim_indices = NULL;
    a->num_dynamic_dims = 0;
    return NULL;
}

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
    PJRT_Buffer_MemoryLayout layout;
} PJRT_Buffer_GetMemoryLayout_Args;
#define PJRT_Buffer_GetMemoryLayout_Args_STRUCT_SIZE                                               \
    PJRT_SIZE_UPTO(PJRT_Buffer_GetMemoryLayout_Args, layout)

static PJRT_Error *
impl_Buffer_GetMemoryLayout(PJRT_Buffer_GetMemoryLayout_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_GetMemoryLayout_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    memset(&a->layout, 0, sizeof a->layout);
    a->layout.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE;
    a->layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
    a->layout.tiled.struct_size = sizeof a->layout.tiled;
    a->layout.tiled.minor_to_major = a->buffer->minor_to_major;
    a->layout.tiled.minor_to_major_size = (size_t)a->buffer->ndim;
    return NULL;
}

static PJRT_Error *
impl_Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_OnDeviceSizeInBytes_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    if (a->buffer->deleted)
        return err(PJRT_Error_Code_FAILED_PRECONDITION, "Buffer_OnDeviceSizeInBytes: deleted");
    a->on_device_size_in_bytes = a->buffer->nbytes;
    return NULL;
}

static PJRT_Error *
impl_Buffer_Device(PJRT_Buffer_Device_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_Device_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    a->device = &a->buffer->client->dev;
    return NULL;
}

static PJRT_Error *
impl_Buffer_Memory(PJRT_Buffer_Memory_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_Memory_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    a->memory = &a->buffer->client->mem;
    return NULL;
}

static PJRT_Error *
impl_Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_ReadyEvent_Args);
    CHECK_HANDLE(a->buffer, K_BUFFER, "buffer");
    a->event = a->buffer->deleted
                   ? event_new(PJRT_Error_Code_FAILED_PRECONDITION, "the buffer was deleted")
                   : event_new(0, NULL);
    if (!a->event)
        return err(PJRT_Error_Code_RESOURCE_EXHAUSTED, "Buffer_ReadyEvent: out of memory");
    return NULL;
}

static PJRT_Error *
impl_Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args *a)
{
    CHECK_ARGS(a, PJRT_Buffer_ToHostBuffer_Args);
    CHECK_HANDLE(a->src, K_BUFFER, "buffer");
    PJRT_Buffer *b = a->src;
    if (b->deleted)
        return err(PJRT_Error_Code_FAILED_PRECONDITION, "Buffer_ToHostBuffer: the buffer was "
                                                        "deleted");
    if (!layout_is_dense(a->host_layout, b->ndim, b->dims, npu_dtype_size(b->dt)))
        return err(PJRT_Error_Code_UNIMPLEMENTED,
                   "Buffer_ToHostBuffer: only the dense row-major host layout");
    if (!a->dst) {
        a->dst_size = b->nbytes;
        a->event = NULL;
        return NULL;
    }
    if (a->dst_size < b->nbytes)
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Buffer_ToHostBuffer: dst_size %zu is smaller than the buffer's %zu bytes",
                   a->dst_size, b->nbytes);
    memcpy(a->dst, b->data, b->nbytes);
    a->event = event_new(0, NULL);
    return NULL;
}

/* ---- executables ------------------------------------------------------------ */

struct PJRT_LoadedExecutable {
    PJRT_Client *client;
    pthread_mutex_t lock; /* one run at a time on the session */
    int refs;             /* the user's, one per PJRT_Executable */
    bool deleted;
    struct npu_model *model;
    struct npu_session *sess;
    char name[64];
    char fingerprint[20];
    int nin, nout;
    PJRT_Buffer_Type *out_types;
    int64_t *out_dims;
    size_t *out_ndims;
    const char **mem_kinds;
    size_t *mem_kind_sizes;
    int64_t code_bytes;
};

struct PJRT_Executable {
    PJRT_LoadedExecutable *le;
};

static void
lexec_unref(PJRT_LoadedExecutable *e)
{
    pthread_mutex_lock(&e->lock);
    int left = --e->refs;
    pthread_mutex_unlock(&e->lock);
    if (left)
        return;
    if (e->sess)
        npu_session_destroy(e->sess);
    npu_model_free(e->model);
    free(e->out_types);
    free(e->out_dims);
    free(e->out_ndims);
    free(e->mem_kinds);
    free(e->mem_kind_sizes);
    pthread_mutex_destroy(&e->lock);
    PJRT_Client *c = e->client;
    free(e);
    client_unref(c);
}

/* StableHLO text -> graph -> .npuir in a private folder -> npu_model_load. */
static PJRT_Error *
compile_text(PJRT_Client *c, const char *code, size_t len, struct npu_model **out)
{
    struct npu_graph *g = NULL;
    log_start();
    enum npu_status st = npu_stablehlo_parse_entry(code, len, c->entry[0] ? c->entry : NULL, &g);
    if (st)
        return err(code_of(st), "Client_Compile: %s", log_len ? log_buf : npu_status_str(st));
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600], side[610];
    snprintf(dir, sizeof dir, "%s/opennpu-pjrt-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        npu_graph_free(g);
        return err(PJRT_Error_Code_INTERNAL, "Client_Compile: mkdtemp %s: %s", dir,
                   strerror(errno));
    }
    snprintf(path, sizeof path, "%s/program.npuir", dir);
    snprintf(side, sizeof side, "%s.bin", path);
    st = npu_ir_save(g, path);
    npu_graph_free(g);
    if (!st) {
        struct npu_model_options mo = {.backend = c->backend,
                                       .cache_dir = c->cache_dir[0] ? c->cache_dir : NULL};
        st = npu_model_load(path, &mo, out);
    }
    unlink(path);
    unlink(side);
    rmdir(dir);
    if (st)
        return err(code_of(st), "Client_Compile: %s", log_len ? log_buf : npu_status_str(st));
    return NULL;
}

static PJRT_Error *
impl_Client_Compile(PJRT_Client_Compile_Args *a)
{
    CHECK_ARGS(a, PJRT_Client_Compile_Args);
    CHECK_HANDLE(a->client, K_CLIENT, "client");
    const PJRT_Program *p = a->program;
    if (!p || p->struct_size < PJRT_Program_STRUCT_SIZE)
        return err(PJRT_Error_Code_INVALID_ARGUMENT, "Client_Compile: missing or short program");
    if (!p->format || p->format_size != 4 || memcmp(p->format, "mlir", 4))
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Client_Compile: program format '%.*s' is not supported (only \"mlir\")",
                   p->format ? (int)(p->format_size > 32 ? 32 : p->format_size) : 4,
                   p->format ? p->format : "none");
    if (!p->code || !p->code_size)
        return err(PJRT_Error_Code_INVALID_ARGUMENT, "Client_Compile: empty program");
    PJRT_LoadedExecutable *e = calloc(1, sizeof *e);
    if (!e)
        return err(PJRT_Error_Code_RESOURCE_EXHAUSTED, "Client_Compile: out of memory");
    PJRT_Error *er = compile_text(a->client, p->code, p->code_size, &e->model);
    if (er) {
        free(e);
        return er;
    }
    pthread_mutex_init(&e->lock, NULL);
    e->refs = 1;
    e->client = a->client;
    client_ref(a->client);
    enum npu_status st = npu_session_create(e->model, 0, &e->sess);
    e->nin = npu_model_num_inputs(e->model);
    e->nout = npu_model_num_outputs(e->model);
    int n = e->nout > 0 ? e->nout : 1;
    e->out_types = calloc((size_t)n, sizeof *e->out_types);
    e->out_dims = calloc((size_t)n * NPU_MAX_DIMS, sizeof *e->out_dims);
    e->out_ndims = calloc((size_t)n, sizeof *e->out_ndims);
    e->mem_kinds = calloc((size_t)n, sizeof *e->mem_kinds);
    e->mem_kind_sizes = calloc((size_t)n, sizeof *e->mem_kind_sizes);
    if (st || !e->out_types || !e->out_dims || !e->out_ndims || !e->mem_kinds ||
        !e->mem_kind_sizes) {
        lexec_unref(e);
        return err(code_of(st ? st : NPU_ERR_NOMEM), "Client_Compile: no session: %s",
                   log_len ? log_buf : npu_status_str(st));
    }
    size_t k = 0;
    for (int i = 0; i < e->nout; i++) {
        const struct npu_io_info *io = npu_model_output(e->model, i);
        e->out_types[i] = pjrt_buffer_type(io->dtype);
        e->out_ndims[i] = (size_t)io->ndim;
        for (int d = 0; d < io->ndim; d++)
            e->out_dims[k++] = io->dims[d];
        e->mem_kinds[i] = "device";
        e->mem_kind_sizes[i] = 6;
    }
    snprintf(e->name, sizeof e->name, "opennpu_main");
    snprintf(e->fingerprint, sizeof e->fingerprint, "%016llx",
             (unsigned long long)(npu_fnv1a64(p->code, p->code_size) ^
                                  npu_fnv1a64(a->client->backend, strlen(a->client->backend))));
    e->code_bytes = (int64_t)p->code_size;
    if (!reg_add(e, K_LEXEC)) {
        lexec_unref(e);
        return err(PJRT_Error_Code_RESOURCE_EXHAUSTED, "Client_Compile: out of memory");
    }
    a->executable = e;
    return NULL;
}

static PJRT_Error *
impl_LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args *a)
{
    CHECK_ARGS(a, PJRT_LoadedExecutable_Destroy_Args);
    if (!a->executable)
        return NULL;
    if (!reg_find(a->executable, K_LEXEC, true))
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "LoadedExecutable_Destroy: %p is not a live executable (destroyed twice?)",
                   (void *)a->executable);
    lexec_unref(a->executable);
    return NULL;
}

static PJRT_Error *
impl_LoadedExecutable_Delete(PJRT_LoadedExecutable_Delete_Args *a)
{
    CHECK_ARGS(a, PJRT_LoadedExecutable_Destroy_Args);
    CHECK_HANDLE(a->executable, K_LEXEC, "loaded executable");
    a->executable->deleted = true;
    return NULL;
}

static PJRT_Error *
impl_LoadedExecutable_IsDeleted(PJRT_LoadedExecutable_IsDeleted_Args *a)
{
    CHECK_ARGS(a, PJRT_LoadedExecutable_IsDeleted_Args);
    CHECK_HANDLE(a->executable, K_LEXEC, "loaded executable");
    a->is_deleted = a->executable->deleted;
    return NULL;
}

static PJRT_Error *
impl_LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args *a)
{
    CHECK_ARGS(a, PJRT_LoadedExecutable_GetExecutable_Args);
    CHECK_HANDLE(a->loaded_executable, K_LEXEC, "loaded executable");
    PJRT_Executable *x = calloc(1, sizeof *x);
    if (!x || !reg_add(x, K_EXEC)) {
        free(x);
        return err(PJRT_Error_Code_RESOURCE_EXHAUSTED, "LoadedExecutable_GetExecutable: no "
                                                       "memory");
    }
    x->le = a->loaded_executable;
    pthread_mutex_lock(&x->le->lock);
    x->le->refs++;
    pthread_mutex_unlock(&x->le->lock);
    a->executable = x;
    return NULL;
}

static PJRT_Error *
impl_LoadedExecutable_AddressableDevices(PJRT_LoadedExecutable_AddressableDevices_Args *a)
{
    CHECK_ARGS(a, PJRT_LoadedExecutable_AddressableDevices_Args);
    CHECK_HANDLE(a->executable, K_LEXEC, "loaded executable");
    a->addressable_devices = a->executable->client->devp;
    a->num_addressable_devices = 1;
    return NULL;
}

static PJRT_Error *
impl_LoadedExecutable_Fingerprint(PJRT_LoadedExecutable_Fingerprint_Args *a)
{
    CHECK_ARGS(a, PJRT_LoadedExecutable_Fingerprint_Args);
    CHECK_HANDLE(a->executable, K_LEXEC, "loaded executable");
    a->executable_fingerprint = a->executable->fingerprint;
    a->executable_fingerprint_size = strlen(a->executable->fingerprint);
    return NULL;
}

static PJRT_Error *
impl_Executable_Destroy(PJRT_Executable_Destroy_Args *a)
{
    CHECK_ARGS(a, PJRT_Executable_Destroy_Args);
    if (!a->executable)
        return NULL;
    if (!reg_find(a->executable, K_EXEC, true))
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Executable_Destroy: %p is not a live executable (destroyed twice?)",
                   (void *)a->executable);
    lexec_unref(a->executable->le);
    free(a->executable);
    return NULL;
}

static PJRT_Error *
impl_Executable_Name(PJRT_Executable_Name_Args *a)
{
    CHECK_ARGS(a, PJRT_Executable_Name_Args);
    CHECK_HANDLE(a->executable, K_EXEC, "executable");
    a->executable_name = a->executable->le->name;
    a->executable_name_size = strlen(a->executable->le->name);
    return NULL;
}

#define EXEC_COUNT(fn, expr)                                                                       \
    static PJRT_Error *impl_Executable_##fn(PJRT_Executable_NumOutputs_Args *a)                    \
    {                                                                                              \
        CHECK_ARGS(a, PJRT_Executable_NumOutputs_Args);                                            \
        CHECK_HANDLE(a->executable, K_EXEC, "executable");                                         \
        a->count = (size_t)(expr);                                                                 \
        return NULL;                                                                               \
    }
EXEC_COUNT(NumReplicas, 1)
EXEC_COUNT(NumPartitions, 1)
EXEC_COUNT(NumOutputs, a->executable->le->nout)

static PJRT_Error *
impl_Executable_SizeOfGeneratedCodeInBytes(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args *a)
{
    CHECK_ARGS(a, PJRT_Executable_SizeOfGeneratedCodeInBytes_Args);
    CHECK_HANDLE(a->executable, K_EXEC, "executable");
    a->size_in_bytes = a->executable->le->code_bytes;
    return NULL;
}

static PJRT_Error *
impl_Executable_OutputElementTypes(PJRT_Executable_OutputElementTypes_Args *a)
{
    CHECK_ARGS(a, PJRT_Executable_OutputElementTypes_Args);
    CHECK_HANDLE(a->executable, K_EXEC, "executable");
    a->output_types = a->executable->le->out_types;
    a->num_output_types = (size_t)a->executable->le->nout;
    return NULL;
}

static PJRT_Error *
impl_Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args *a)
{
    CHECK_ARGS(a, PJRT_Executable_OutputDimensions_Args);
    CHECK_HANDLE(a->executable, K_EXEC, "executable");
    a->num_outputs = (size_t)a->executable->le->nout;
    a->dims = a->executable->le->out_dims;
    a->dim_sizes = a->executable->le->out_ndims;
    return NULL;
}

static PJRT_Error *
impl_Executable_OutputMemoryKinds(PJRT_Executable_OutputMemoryKinds_Args *a)
{
    CHECK_ARGS(a, PJRT_Executable_OutputMemoryKinds_Args);
    CHECK_HANDLE(a->executable, K_EXEC, "executable");
    a->num_outputs = (size_t)a->executable->le->nout;
    a->memory_kinds = a->executable->le->mem_kinds;
    a->memory_kind_sizes = a->executable->le->mem_kind_sizes;
    return NULL;
}

static PJRT_Error *
impl_LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args *a)
{
    CHECK_ARGS(a, PJRT_LoadedExecutable_Execute_Args);
    CHECK_HANDLE(a->executable, K_LEXEC, "loaded executable");
    PJRT_LoadedExecutable *e = a->executable;
    if (e->deleted)
        return err(PJRT_Error_Code_FAILED_PRECONDITION,
                   "LoadedExecutable_Execute: the executable was deleted");
    if (a->num_devices != 1)
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "LoadedExecutable_Execute: %zu devices (the plugin has one)", a->num_devices);
    if (a->execute_device && !reg_find(a->execute_device, K_DEVICE, false))
        return err(PJRT_Error_Code_INVALID_ARGUMENT, "LoadedExecutable_Execute: bad device");
    if (a->num_args != (size_t)e->nin)
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "LoadedExecutable_Execute: %zu arguments, the program takes %d", a->num_args,
                   e->nin);
    if (!a->output_lists || !a->output_lists[0] ||
        (e->nin && (!a->argument_lists || !a->argument_lists[0])))
        return err(PJRT_Error_Code_INVALID_ARGUMENT,
                   "LoadedExecutable_Execute: missing argument or output lists");
    struct npu_tensor in[64], out[64];
    if (e->nin > 64 || e->nout > 64)
        return err(PJRT_Error_Code_UNIMPLEMENTED, "LoadedExecutable_Execute: over 64 arguments "
                                                  "or results");
    for (int i = 0; i < e->nin; i++) {
        PJRT_Buffer *b = a->argument_lists[0][i];
        if (!reg_find(b, K_BUFFER, false))
            return err(PJRT_Error_Code_INVALID_ARGUMENT,
                       "LoadedExecutable_Execute: argument %d is not a live buffer", i);
        if (b->deleted)
            return err(PJRT_Error_Code_FAILED_PRECONDITION,
                       "LoadedExecutable_Execute: argument %d was deleted", i);
        const struct npu_io_info *io = npu_model_input(e->model, i);
        if (b->dt != io->dtype || b->ndim != io->ndim ||
            memcmp(b->dims, io->dims, (size_t)io->ndim * sizeof io->dims[0]))
            return err(PJRT_Error_Code_INVALID_ARGUMENT,
                       "LoadedExecutable_Execute: argument %d is %s with %d dims, the program "
                       "takes %s with %d dims (or the dims differ)",
                       i, npu_dtype_name(b->dt), b->ndim, npu_dtype_name(io->dtype), io->ndim);
        in[i] = (struct npu_tensor){.dtype = b->dt, .ndim = b->ndim, .data = b->data};
        memcpy(in[i].dims, b->dims, sizeof in[i].dims);
    }
    log_start();
    pthread_mutex_lock(&e->lock);
    enum npu_status st = npu_session_run(e->sess, in, e->nin, out, e->nout, NULL);
    PJRT_Error *er = NULL;
    PJRT_Buffer *res[64] = {0};
    for (int i = 0; !st && i < e->nout; i++) {
        res[i] = buffer_new(e->client, out[i].dtype, out[i].ndim, out[i].dims);
        if (!res[i]) {
            st = NPU_ERR_NOMEM;
            break;
        }
        if (res[i]->nbytes)
            memcpy(res[i]->data, out[i].data, res[i]->nbytes);
    }
    pthread_mutex_unlock(&e->lock);
    if (st) {
        for (int i = 0; i < e->nout; i++)
            if (res[i]) {
                PJRT_Buffer_Destroy_Args d = {.struct_size = sizeof d, .buffer = res[i]};
                impl_Buffer_Destroy(&d);
            }
        er = err(code_of(st), "LoadedExecutable_Execute: %s",
                 log_len ? log_buf : npu_status_str(st));
        return er;
    }
    for (int i = 0; i < e->nout; i++)
        a->output_lists[0][i] = res[i];
    if (a->device_complete_events)
        a->device_complete_events[0] = event_new(0, NULL);
    return NULL;
}

/* ---- entries not implemented ------------------------------------------------ */

#define UNIMPL(name)                                                                               \
    static PJRT_Error *impl_##name(void *a)                                                        \
    {                                                                                              \
        (void)a;                                                                                   \
        return err(PJRT_Error_Code_UNIMPLEMENTED,                                                  \
                   "PJRT_" #name " is not implemented by the OpenNPU plugin");                     \
    }
UNIMPL(Device_MemoryStats)
UNIMPL(Executable_GetCostAnalysis)
UNIMPL(Executable_OptimizedProgram)
UNIMPL(Executable_Serialize)
UNIMPL(Executable_DeserializeAndLoad)
UNIMPL(Buffer_CopyToDevice)
UNIMPL(Buffer_UnsafePointer)
UNIMPL(Buffer_IncreaseExternalReferenceCount)
UNIMPL(Buffer_DecreaseExternalReferenceCount)
UNIMPL(Buffer_OpaqueDeviceMemoryDataPointer)
UNIMPL(CopyToDeviceStream_Destroy)
UNIMPL(CopyToDeviceStream_AddChunk)
UNIMPL(CopyToDeviceStream_TotalBytes)
UNIMPL(CopyToDeviceStream_GranuleSize)
UNIMPL(CopyToDeviceStream_CurrentBytes)
UNIMPL(TopologyDescription_Create)
UNIMPL(TopologyDescription_Destroy)
UNIMPL(TopologyDescription_PlatformName)
UNIMPL(TopologyDescription_PlatformVersion)
UNIMPL(TopologyDescription_GetDeviceDescriptions)
UNIMPL(TopologyDescription_Serialize)
UNIMPL(TopologyDescription_Attributes)
UNIMPL(Compile)
UNIMPL(Buffer_CopyToMemory)
UNIMPL(Executable_OutputShardings)

static PJRT_Api api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void
api_init(void)
{
    api.struct_size = PJRT_Api_STRUCT_SIZE;
    api.extension_start = NULL;
    api.pjrt_api_version.struct_size = sizeof api.pjrt_api_version;
    api.pjrt_api_version.major_version = PJRT_API_MAJOR;
    api.pjrt_api_version.minor_version = PJRT_API_MINOR;
#define FILL(name) api.PJRT_##name = (PJRT_Generic_Fn)(void (*)(void))impl_##name;
    PJRT_API_ENTRIES(FILL)
#undef FILL
}

_Static_assert(sizeof(PJRT_Api) == 2 * sizeof(void *) + sizeof(PJRT_Api_Version) +
                                       PJRT_API_NUM_ENTRIES * sizeof(void *),
               "PJRT_Api layout");

EXPORT const PJRT_Api *GetPjrtApi(void);

const PJRT_Api *
GetPjrtApi(void)
{
    pthread_once(&api_once, api_init);
    return &api;
}
