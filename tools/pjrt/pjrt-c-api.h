/* SPDX-License-Identifier: MIT */
/*
 * pjrt-c-api.h: our own declarations of the PJRT C API, version 0.33 (major
 * 0, minor 33), written from the public interface of openxla/xla
 * xla/pjrt/c/pjrt_c_api.h at commit 00fcf3f218e36866d5a84d127aed963df0aa3db3
 * (docs/jax.md says why this version). What must match that header byte for
 * byte is the ABI: the order and types of every argument struct's fields
 * (each opens with struct_size and priv), the enum values and the order of
 * the function table PJRT_Api. The argument structs are declared for the
 * entries the OpenNPU plugin implements; the other table slots keep their
 * place and are typed generically, since the plugin only answers them with
 * an UNIMPLEMENTED error. The size macros follow the interface's rule: the
 * end of the field the interface names as each struct's last (for
 * PJRT_Plugin_Attributes_Args and PJRT_Device_AddressableMemories_Args that
 * is not the struct's final field; we keep the interface's choice).
 */
#ifndef OPENNPU_PJRT_C_API_H
#define OPENNPU_PJRT_C_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PJRT_API_MAJOR 0
#define PJRT_API_MINOR 33

#define PJRT_SIZE_UPTO(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

typedef struct PJRT_Error PJRT_Error;
typedef struct PJRT_Event PJRT_Event;
typedef struct PJRT_Client PJRT_Client;
typedef struct PJRT_Device PJRT_Device;
typedef struct PJRT_Memory PJRT_Memory;
typedef struct PJRT_DeviceDescription PJRT_DeviceDescription;
typedef struct PJRT_Executable PJRT_Executable;
typedef struct PJRT_LoadedExecutable PJRT_LoadedExecutable;
typedef struct PJRT_Buffer PJRT_Buffer;

typedef struct {
    size_t struct_size;
    void *priv;
    int major_version;
    int minor_version;
} PJRT_Api_Version;

typedef enum {
    PJRT_Error_Code_CANCELLED = 1,
    PJRT_Error_Code_UNKNOWN = 2,
    PJRT_Error_Code_INVALID_ARGUMENT = 3,
    PJRT_Error_Code_DEADLINE_EXCEEDED = 4,
    PJRT_Error_Code_NOT_FOUND = 5,
    PJRT_Error_Code_ALREADY_EXISTS = 6,
    PJRT_Error_Code_PERMISSION_DENIED = 7,
    PJRT_Error_Code_RESOURCE_EXHAUSTED = 8,
    PJRT_Error_Code_FAILED_PRECONDITION = 9,
    PJRT_Error_Code_ABORTED = 10,
    PJRT_Error_Code_OUT_OF_RANGE = 11,
    PJRT_Error_Code_UNIMPLEMENTED = 12,
    PJRT_Error_Code_INTERNAL = 13,
    PJRT_Error_Code_UNAVAILABLE = 14,
    PJRT_Error_Code_DATA_LOSS = 15,
    PJRT_Error_Code_UNAUTHENTICATED = 16,
} PJRT_Error_Code;

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Error *error;
} PJRT_Error_Destroy_Args;
#define PJRT_Error_Destroy_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Error_Destroy_Args, error)

typedef struct {
    size_t struct_size;
    void *priv;
    const PJRT_Error *error;
    const char *message;
    size_t message_size;
} PJRT_Error_Message_Args;
#define PJRT_Error_Message_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Error_Message_Args, message_size)

typedef struct {
    size_t struct_size;
    void *priv;
    const PJRT_Error *error;
    PJRT_Error_Code code;
} PJRT_Error_GetCode_Args;
#define PJRT_Error_GetCode_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Error_GetCode_Args, code)

typedef enum {
    PJRT_NamedValue_kString = 0,
    PJRT_NamedValue_kInt64,
    PJRT_NamedValue_kInt64List,
    PJRT_NamedValue_kFloat,
    PJRT_NamedValue_kBool,
} PJRT_NamedValue_Type;

typedef struct {
    size_t struct_size;
    void *priv;
    const char *name;
    size_t name_size;
    PJRT_NamedValue_Type type;
    union {
        const char *string_value;
        int64_t int64_value;
        const int64_t *int64_array_value;
        float float_value;
        bool bool_value;
    };
    size_t value_size;
} PJRT_NamedValue;
#define PJRT_NamedValue_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_NamedValue, value_size)

typedef struct {
    size_t struct_size;
    void *priv;
} PJRT_Plugin_Initialize_Args;
#define PJRT_Plugin_Initialize_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Plugin_Initialize_Args, priv)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_NamedValue *attributes;
    size_t num_attributes;
} PJRT_Plugin_Attributes_Args;
#define PJRT_Plugin_Attributes_Args_STRUCT_SIZE                                                    \
    PJRT_SIZE_UPTO(PJRT_Plugin_Attributes_Args, attributes)

/* ---- events ---- */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Event *event;
} PJRT_Event_Destroy_Args, PJRT_Event_Error_Args, PJRT_Event_Await_Args;
#define PJRT_Event_Destroy_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Event_Destroy_Args, event)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Event *event;
    bool is_ready;
} PJRT_Event_IsReady_Args;
#define PJRT_Event_IsReady_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Event_IsReady_Args, is_ready)

typedef void (*PJRT_Event_OnReadyCallback)(PJRT_Error *error, void *user_arg);
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Event *event;
    PJRT_Event_OnReadyCallback callback;
    void *user_arg;
} PJRT_Event_OnReady_Args;
#define PJRT_Event_OnReady_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Event_OnReady_Args, user_arg)

/* ---- client ---- */
typedef struct {
    size_t struct_size;
    void *priv;
    const PJRT_NamedValue *create_options;
    size_t num_options;
    void *kv_get_callback; /* PJRT_KeyValueGetCallback: not used */
    void *kv_get_user_arg;
    void *kv_put_callback; /* PJRT_KeyValuePutCallback: not used */
    void *kv_put_user_arg;
    PJRT_Client *client;
} PJRT_Client_Create_Args;
#define PJRT_Client_Create_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Client_Create_Args, client)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Client *client;
} PJRT_Client_Destroy_Args;
#define PJRT_Client_Destroy_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Client_Destroy_Args, client)

/* PlatformName and PlatformVersion share a layout: client, string, size. */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Client *client;
    const char *str;
    size_t str_size;
} PJRT_Client_PlatformName_Args, PJRT_Client_PlatformVersion_Args;
#define PJRT_Client_PlatformName_Args_STRUCT_SIZE                                                  \
    PJRT_SIZE_UPTO(PJRT_Client_PlatformName_Args, str_size)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Client *client;
    int process_index;
} PJRT_Client_ProcessIndex_Args;
#define PJRT_Client_ProcessIndex_Args_STRUCT_SIZE                                                  \
    PJRT_SIZE_UPTO(PJRT_Client_ProcessIndex_Args, process_index)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Client *client;
    PJRT_Device **devices;
    size_t num_devices;
} PJRT_Client_Devices_Args, PJRT_Client_AddressableDevices_Args;
#define PJRT_Client_Devices_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Client_Devices_Args, num_devices)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Client *client;
    int id; /* id, or local_hardware_id for LookupAddressableDevice */
    PJRT_Device *device;
} PJRT_Client_LookupDevice_Args, PJRT_Client_LookupAddressableDevice_Args;
#define PJRT_Client_LookupDevice_Args_STRUCT_SIZE                                                  \
    PJRT_SIZE_UPTO(PJRT_Client_LookupDevice_Args, device)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Client *client;
    PJRT_Memory **memories;
    size_t num_memories;
} PJRT_Client_AddressableMemories_Args;
#define PJRT_Client_AddressableMemories_Args_STRUCT_SIZE                                           \
    PJRT_SIZE_UPTO(PJRT_Client_AddressableMemories_Args, num_memories)

typedef struct {
    size_t struct_size;
    void *priv;
    char *code;
    size_t code_size;
    const char *format;
    size_t format_size;
} PJRT_Program;
#define PJRT_Program_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Program, format_size)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Client *client;
    const PJRT_Program *program;
    const char *compile_options; /* serialized CompileOptionsProto */
    size_t compile_options_size;
    PJRT_LoadedExecutable *executable;
} PJRT_Client_Compile_Args;
#define PJRT_Client_Compile_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Client_Compile_Args, executable)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Client *client;
    int num_replicas;
    int num_partitions;
    size_t default_assignment_size;
    int *default_assignment;
} PJRT_Client_DefaultDeviceAssignment_Args;
#define PJRT_Client_DefaultDeviceAssignment_Args_STRUCT_SIZE                                       \
    PJRT_SIZE_UPTO(PJRT_Client_DefaultDeviceAssignment_Args, default_assignment)

typedef enum {
    PJRT_Buffer_Type_INVALID,
    PJRT_Buffer_Type_PRED,
    PJRT_Buffer_Type_S8,
    PJRT_Buffer_Type_S16,
    PJRT_Buffer_Type_S32,
    PJRT_Buffer_Type_S64,
    PJRT_Buffer_Type_U8,
    PJRT_Buffer_Type_U16,
    PJRT_Buffer_Type_U32,
    PJRT_Buffer_Type_U64,
    PJRT_Buffer_Type_F16,
    PJRT_Buffer_Type_F32,
    PJRT_Buffer_Type_F64,
    PJRT_Buffer_Type_BF16,
    PJRT_Buffer_Type_C64,
    PJRT_Buffer_Type_C128,
    PJRT_Buffer_Type_F8E5M2,
    PJRT_Buffer_Type_F8E4M3FN,
    PJRT_Buffer_Type_F8E4M3B11FNUZ,
    PJRT_Buffer_Type_F8E5M2FNUZ,
    PJRT_Buffer_Type_F8E4M3FNUZ,
    PJRT_Buffer_Type_S4,
    PJRT_Buffer_Type_U4,
} PJRT_Buffer_Type;

typedef enum {
    PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
    PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
    PJRT_HostBufferSemantics_kZeroCopy,
} PJRT_HostBufferSemantics;

typedef enum {
    PJRT_Buffer_MemoryLayout_Type_Tiled = 0,
    PJRT_Buffer_MemoryLayout_Type_Strides,
} PJRT_Buffer_MemoryLayout_Type;

typedef struct {
    size_t struct_size;
    void *priv;
    const int64_t *minor_to_major;
    size_t minor_to_major_size;
    const int64_t *tile_dims;
    const size_t *tile_dim_sizes;
    size_t num_tiles;
} PJRT_Buffer_MemoryLayout_Tiled;

typedef struct {
    size_t struct_size;
    void *priv;
    const int64_t *byte_strides;
    size_t num_byte_strides;
} PJRT_Buffer_MemoryLayout_Strides;

typedef struct {
    size_t struct_size;
    void *priv;
    union {
        PJRT_Buffer_MemoryLayout_Tiled tiled;
        PJRT_Buffer_MemoryLayout_Strides strides;
    };
    PJRT_Buffer_MemoryLayout_Type type;
} PJRT_Buffer_MemoryLayout;
#define PJRT_Buffer_MemoryLayout_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Buffer_MemoryLayout, type)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Client *client;
    const void *data;
    PJRT_Buffer_Type type;
    const int64_t *dims;
    size_t num_dims;
    const int64_t *byte_strides;
    size_t num_byte_strides;
    PJRT_HostBufferSemantics host_buffer_semantics;
    PJRT_Device *device;
    PJRT_Memory *memory;
    PJRT_Buffer_MemoryLayout *device_layout;
    PJRT_Event *done_with_host_buffer;
    PJRT_Buffer *buffer;
} PJRT_Client_BufferFromHostBuffer_Args;
#define PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE                                          \
    PJRT_SIZE_UPTO(PJRT_Client_BufferFromHostBuffer_Args, buffer)

/* ---- device descriptions, devices, memories ---- */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_DeviceDescription *device_description;
    int value; /* id or process_index */
} PJRT_DeviceDescription_Id_Args, PJRT_DeviceDescription_ProcessIndex_Args;
#define PJRT_DeviceDescription_Id_Args_STRUCT_SIZE                                                 \
    PJRT_SIZE_UPTO(PJRT_DeviceDescription_Id_Args, value)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_DeviceDescription *device_description;
    size_t num_attributes;
    const PJRT_NamedValue *attributes;
} PJRT_DeviceDescription_Attributes_Args;
#define PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE                                         \
    PJRT_SIZE_UPTO(PJRT_DeviceDescription_Attributes_Args, attributes)

/* Kind, DebugString and ToString: description, string, size. */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_DeviceDescription *device_description;
    const char *str;
    size_t str_size;
} PJRT_DeviceDescription_Kind_Args;
#define PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE                                               \
    PJRT_SIZE_UPTO(PJRT_DeviceDescription_Kind_Args, str_size)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Device *device;
    PJRT_DeviceDescription *device_description;
} PJRT_Device_GetDescription_Args;
#define PJRT_Device_GetDescription_Args_STRUCT_SIZE                                                \
    PJRT_SIZE_UPTO(PJRT_Device_GetDescription_Args, device_description)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Device *device;
    bool is_addressable;
} PJRT_Device_IsAddressable_Args;
#define PJRT_Device_IsAddressable_Args_STRUCT_SIZE                                                 \
    PJRT_SIZE_UPTO(PJRT_Device_IsAddressable_Args, is_addressable)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Device *device;
    int local_hardware_id;
} PJRT_Device_LocalHardwareId_Args;
#define PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE                                               \
    PJRT_SIZE_UPTO(PJRT_Device_LocalHardwareId_Args, local_hardware_id)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Device *device;
    PJRT_Memory **memories;
    size_t num_memories;
} PJRT_Device_AddressableMemories_Args;
#define PJRT_Device_AddressableMemories_Args_STRUCT_SIZE                                           \
    PJRT_SIZE_UPTO(PJRT_Device_AddressableMemories_Args, memories)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Device *device;
    PJRT_Memory *memory;
} PJRT_Device_DefaultMemory_Args;
#define PJRT_Device_DefaultMemory_Args_STRUCT_SIZE                                                 \
    PJRT_SIZE_UPTO(PJRT_Device_DefaultMemory_Args, memory)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Memory *memory;
    int id;
} PJRT_Memory_Id_Args;
#define PJRT_Memory_Id_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Memory_Id_Args, id)

/* Kind, DebugString and ToString: memory, string, size. */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Memory *memory;
    const char *str;
    size_t str_size;
} PJRT_Memory_Kind_Args;
#define PJRT_Memory_Kind_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Memory_Kind_Args, str_size)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Memory *memory;
    PJRT_Device **devices;
    size_t num_devices;
} PJRT_Memory_AddressableByDevices_Args;
#define PJRT_Memory_AddressableByDevices_Args_STRUCT_SIZE                                          \
    PJRT_SIZE_UPTO(PJRT_Memory_AddressableByDevices_Args, num_devices)

/* ---- executables ---- */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Executable *executable;
} PJRT_Executable_Destroy_Args;
#define PJRT_Executable_Destroy_Args_STRUCT_SIZE                                                   \
    PJRT_SIZE_UPTO(PJRT_Executable_Destroy_Args, executable)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_LoadedExecutable *executable;
} PJRT_LoadedExecutable_Destroy_Args, PJRT_LoadedExecutable_Delete_Args;
#define PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE                                             \
    PJRT_SIZE_UPTO(PJRT_LoadedExecutable_Destroy_Args, executable)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_LoadedExecutable *loaded_executable;
    PJRT_Executable *executable;
} PJRT_LoadedExecutable_GetExecutable_Args;
#define PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE                                       \
    PJRT_SIZE_UPTO(PJRT_LoadedExecutable_GetExecutable_Args, executable)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Executable *executable;
    const char *executable_name;
    size_t executable_name_size;
} PJRT_Executable_Name_Args;
#define PJRT_Executable_Name_Args_STRUCT_SIZE                                                      \
    PJRT_SIZE_UPTO(PJRT_Executable_Name_Args, executable_name_size)

/* NumReplicas, NumPartitions, NumOutputs: executable, a count. */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Executable *executable;
    size_t count;
} PJRT_Executable_NumOutputs_Args;
#define PJRT_Executable_NumOutputs_Args_STRUCT_SIZE                                                \
    PJRT_SIZE_UPTO(PJRT_Executable_NumOutputs_Args, count)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Executable *executable;
    int64_t size_in_bytes;
} PJRT_Executable_SizeOfGeneratedCodeInBytes_Args;
#define PJRT_Executable_SizeOfGeneratedCodeInBytes_Args_STRUCT_SIZE                                \
    PJRT_SIZE_UPTO(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, size_in_bytes)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_LoadedExecutable *executable;
    PJRT_Device **addressable_devices;
    size_t num_addressable_devices;
} PJRT_LoadedExecutable_AddressableDevices_Args;
#define PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE                                  \
    PJRT_SIZE_UPTO(PJRT_LoadedExecutable_AddressableDevices_Args, num_addressable_devices)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_LoadedExecutable *executable;
    bool is_deleted;
} PJRT_LoadedExecutable_IsDeleted_Args;
#define PJRT_LoadedExecutable_IsDeleted_Args_STRUCT_SIZE                                           \
    PJRT_SIZE_UPTO(PJRT_LoadedExecutable_IsDeleted_Args, is_deleted)

typedef struct {
    size_t struct_size;
    void *priv;
    void **send_callbacks; /* PJRT_SendCallbackInfo**: not used */
    void **recv_callbacks; /* PJRT_RecvCallbackInfo**: not used */
    size_t num_send_ops;
    size_t num_recv_ops;
    int launch_id;
} PJRT_ExecuteOptions;
#define PJRT_ExecuteOptions_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_ExecuteOptions, launch_id)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_LoadedExecutable *executable;
    PJRT_ExecuteOptions *options;
    PJRT_Buffer *const *const *argument_lists;
    size_t num_devices;
    size_t num_args;
    PJRT_Buffer **const *output_lists;
    PJRT_Event **device_complete_events;
    PJRT_Device *execute_device;
} PJRT_LoadedExecutable_Execute_Args;
#define PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE                                             \
    PJRT_SIZE_UPTO(PJRT_LoadedExecutable_Execute_Args, execute_device)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Executable *executable;
    PJRT_Buffer_Type *output_types;
    size_t num_output_types;
} PJRT_Executable_OutputElementTypes_Args;
#define PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE                                        \
    PJRT_SIZE_UPTO(PJRT_Executable_OutputElementTypes_Args, num_output_types)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Executable *executable;
    size_t num_outputs;
    const int64_t *dims;
    const size_t *dim_sizes;
} PJRT_Executable_OutputDimensions_Args;
#define PJRT_Executable_OutputDimensions_Args_STRUCT_SIZE                                          \
    PJRT_SIZE_UPTO(PJRT_Executable_OutputDimensions_Args, dim_sizes)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Executable *executable;
    size_t num_outputs;
    const char *const *memory_kinds;
    const size_t *memory_kind_sizes;
} PJRT_Executable_OutputMemoryKinds_Args;
#define PJRT_Executable_OutputMemoryKinds_Args_STRUCT_SIZE                                         \
    PJRT_SIZE_UPTO(PJRT_Executable_OutputMemoryKinds_Args, memory_kind_sizes)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_LoadedExecutable *executable;
    const char *executable_fingerprint;
    size_t executable_fingerprint_size;
} PJRT_LoadedExecutable_Fingerprint_Args;
#define PJRT_LoadedExecutable_Fingerprint_Args_STRUCT_SIZE                                         \
    PJRT_SIZE_UPTO(PJRT_LoadedExecutable_Fingerprint_Args, executable_fingerprint_size)

/* ---- buffers ---- */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
} PJRT_Buffer_Destroy_Args, PJRT_Buffer_Delete_Args;
#define PJRT_Buffer_Destroy_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Buffer_Destroy_Args, buffer)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
    PJRT_Buffer_Type type;
} PJRT_Buffer_ElementType_Args;
#define PJRT_Buffer_ElementType_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Buffer_ElementType_Args, type)

/* Dimensions and UnpaddedDimensions: buffer, dims, count. */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
    const int64_t *dims;
    size_t num_dims;
} PJRT_Buffer_Dimensions_Args;
#define PJRT_Buffer_Dimensions_Args_STRUCT_SIZE                                                    \
    PJRT_SIZE_UPTO(PJRT_Buffer_Dimensions_Args, num_dims)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
    const size_t *dynamic_dim_indices;
    size_t num_dynamic_dims;
} PJRT_Buffer_DynamicDimensionIndices_Args;
#define PJRT_Buffer_DynamicDimensionIndices_Args_STRUCT_SIZE                                       \
    PJRT_SIZE_UPTO(PJRT_Buffer_DynamicDimensionIndices_Args, num_dynamic_dims)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *src;
    PJRT_Buffer_MemoryLayout *host_layout;
    void *dst;
    size_t dst_size;
    PJRT_Event *event;
} PJRT_Buffer_ToHostBuffer_Args;
#define PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE                                                  \
    PJRT_SIZE_UPTO(PJRT_Buffer_ToHostBuffer_Args, event)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
    size_t on_device_size_in_bytes;
} PJRT_Buffer_OnDeviceSizeInBytes_Args;
#define PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE                                           \
    PJRT_SIZE_UPTO(PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes)

/* IsDeleted and IsOnCpu: buffer, a flag. */
typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
    bool flag;
} PJRT_Buffer_IsDeleted_Args;
#define PJRT_Buffer_IsDeleted_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Buffer_IsDeleted_Args, flag)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
    PJRT_Device *device;
} PJRT_Buffer_Device_Args;
#define PJRT_Buffer_Device_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Buffer_Device_Args, device)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
    PJRT_Memory *memory;
} PJRT_Buffer_Memory_Args;
#define PJRT_Buffer_Memory_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Buffer_Memory_Args, memory)

typedef struct {
    size_t struct_size;
    void *priv;
    PJRT_Buffer *buffer;
    PJRT_Event *event;
} PJRT_Buffer_ReadyEvent_Args;
#define PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Buffer_ReadyEvent_Args, event)

/* ---- the function table ---- */

/* Every slot, in the interface's order (version 0.33). */
#define PJRT_API_ENTRIES(X)                                                                        \
    X(Error_Destroy)                                                                               \
    X(Error_Message)                                                                               \
    X(Error_GetCode)                                                                               \
    X(Plugin_Initialize)                                                                           \
    X(Plugin_Attributes)                                                                           \
    X(Event_Destroy)                                                                               \
    X(Event_IsReady)                                                                               \
    X(Event_Error)                                                                                 \
    X(Event_Await)                                                                                 \
    X(Event_OnReady)                                                                               \
    X(Client_Create)                                                                               \
    X(Client_Destroy)                                                                              \
    X(Client_PlatformName)                                                                         \
    X(Client_ProcessIndex)                                                                         \
    X(Client_PlatformVersion)                                                                      \
    X(Client_Devices)                                                                              \
    X(Client_AddressableDevices)                                                                   \
    X(Client_LookupDevice)                                                                         \
    X(Client_LookupAddressableDevice)                                                              \
    X(Client_AddressableMemories)                                                                  \
    X(Client_Compile)                                                                              \
    X(Client_DefaultDeviceAssignment)                                                              \
    X(Client_BufferFromHostBuffer)                                                                 \
    X(DeviceDescription_Id)                                                                        \
    X(DeviceDescription_ProcessIndex)                                                              \
    X(DeviceDescription_Attributes)                                                                \
    X(DeviceDescription_Kind)                                                                      \
    X(DeviceDescription_DebugString)                                                               \
    X(DeviceDescription_ToString)                                                                  \
    X(Device_GetDescription)                                                                       \
    X(Device_IsAddressable)                                                                        \
    X(Device_LocalHardwareId)                                                                      \
    X(Device_AddressableMemories)                                                                  \
    X(Device_DefaultMemory)                                                                        \
    X(Device_MemoryStats)                                                                          \
    X(Memory_Id)                                                                                   \
    X(Memory_Kind)                                                                                 \
    X(Memory_DebugString)                                                                          \
    X(Memory_ToString)                                                                             \
    X(Memory_AddressableByDevices)                                                                 \
    X(Executable_Destroy)                                                                          \
    X(Executable_Name)                                                                             \
    X(Executable_NumReplicas)                                                                      \
    X(Executable_NumPartitions)                                                                    \
    X(Executable_NumOutputs)                                                                       \
    X(Executable_SizeOfGeneratedCodeInBytes)                                                       \
    X(Executable_GetCostAnalysis)                                                                  \
    X(Executable_OutputMemoryKinds)                                                                \
    X(Executable_OptimizedProgram)                                                                 \
    X(Executable_Serialize)                                                                        \
    X(LoadedExecutable_Destroy)                                                                    \
    X(LoadedExecutable_GetExecutable)                                                              \
    X(LoadedExecutable_AddressableDevices)                                                         \
    X(LoadedExecutable_Delete)                                                                     \
    X(LoadedExecutable_IsDeleted)                                                                  \
    X(LoadedExecutable_Execute)                                                                    \
    X(Executable_DeserializeAndLoad)                                                               \
    X(LoadedExecutable_Fingerprint)                                                                \
    X(Buffer_Destroy)                                                                              \
    X(Buffer_ElementType)                                                                          \
    X(Buffer_Dimensions)                                                                           \
    X(Buffer_UnpaddedDimensions)                                                                   \
    X(Buffer_DynamicDimensionIndices)                                                              \
    X(Buffer_GetMemoryLayout)                                                                      \
    X(Buffer_OnDeviceSizeInBytes)                                                                  \
    X(Buffer_Device)                                                                               \
    X(Buffer_Memory)                                                                               \
    X(Buffer_Delete)                                                                               \
    X(Buffer_IsDeleted)                                                                            \
    X(Buffer_CopyToDevice)                                                                         \
    X(Buffer_ToHostBuffer)                                                                         \
    X(Buffer_IsOnCpu)                                                                              \
    X(Buffer_ReadyEvent)                                                                           \
    X(Buffer_UnsafePointer)                                                                        \
    X(Buffer_IncreaseExternalReferenceCount)                                                       \
    X(Buffer_DecreaseExternalReferenceCount)                                                       \
    X(Buffer_OpaqueDeviceMemoryDataPointer)                                                        \
    X(CopyToDeviceStream_Destroy)                                                                  \
    X(CopyToDeviceStream_AddChunk)                                                                 \
    X(CopyToDeviceStream_TotalBytes)                                                               \
    X(CopyToDeviceStream_GranuleSize)                                                              \
    X(CopyToDeviceStream_CurrentBytes)                                                             \
    X(TopologyDescription_Create)                                                                  \
    X(TopologyDescription_Destroy)                                                                 \
    X(TopologyDescription_PlatformName)                                                            \
    X(TopologyDescription_PlatformVersion)                                                         \
    X(TopologyDescription_GetDeviceDescriptions)                                                   \
    X(TopologyDescription_Serialize)                                                               \
    X(TopologyDescription_Attributes)                                                              \
    X(Compile)                                                                                     \
    X(Executable_OutputElementTypes)                                                               \
    X(Executable_OutputDimensions)                                                                 \
    X(Buffer_CopyToMemory)                                                                         \
    X(Executable_OutputShardings)

/* Number of slots: 94 in version 0.33. */
#define PJRT_API_NUM_ENTRIES 94

/* All slots but three return PJRT_Error*; Error_Destroy and Error_Message
 * return nothing (Error_GetCode returns PJRT_Error* too). A slot is a
 * function pointer either way; the plugin fills each with a function of the
 * slot's true signature and the caller casts. */
typedef PJRT_Error *(*PJRT_Generic_Fn)(void *args);

typedef struct {
    size_t struct_size;
    void *extension_start;
    PJRT_Api_Version pjrt_api_version;
#define PJRT_SLOT(name) PJRT_Generic_Fn PJRT_##name;
    PJRT_API_ENTRIES(PJRT_SLOT)
#undef PJRT_SLOT
} PJRT_Api;
#define PJRT_Api_STRUCT_SIZE PJRT_SIZE_UPTO(PJRT_Api, PJRT_Executable_OutputShardings)

/* The two slots that return nothing, as their true types. */
typedef void (*PJRT_Error_Destroy_Fn)(PJRT_Error_Destroy_Args *args);
typedef void (*PJRT_Error_Message_Fn)(PJRT_Error_Message_Args *args);
#define PJRT_ERROR_DESTROY(api) ((PJRT_Error_Destroy_Fn)(void (*)(void))(api)->PJRT_Error_Destroy)
#define PJRT_ERROR_MESSAGE(api) ((PJRT_Error_Message_Fn)(void (*)(void))(api)->PJRT_Error_Message)

#endif /* OPENNPU_PJRT_C_API_H */
