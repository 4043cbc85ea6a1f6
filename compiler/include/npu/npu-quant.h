/* SPDX-License-Identifier: MIT */
/*
 * npu-quant.h: the post-training quantiser (compiler/quant, docs/quantisation.md).
 * It works on the graph after the front-end passes: it runs the fp32 graph on
 * the CPU executor over calibration samples, collecting per-tensor statistics,
 * picks int8 ranges with one of four algorithms, and rewrites every Conv /
 * MatMul / Gemm with constant weights that the NPU's integer pipeline takes
 * into QuantizeLinear -> QLinearConv / QLinearMatMul -> DequantizeLinear
 * (weights int8, symmetric, per output channel by default; activations int8
 * with scale and zero point; int32 bias). A chain of quantised layers passes
 * int8 from one to the next; everything else stays float (fp16 on the NPU or
 * on the CPU, as the partition decides). Hybrid mode keeps the layers whose
 * single-layer cosine is under a threshold, or that the user names, float.
 * The accuracy analysis compares each layer with fp32, "entire" (the
 * quantised graph run through) and "single" (the layer fed fp32 inputs).
 */
#ifndef NPU_QUANT_H
#define NPU_QUANT_H

#include <stdbool.h>
#include <stdio.h>

#include "npu/npu-ir.h"

#ifdef __cplusplus
extern "C" {
#endif

enum npu_quant_mode {
    NPU_QUANT_W8A8 = 0, /* every layer the NPU takes in int8 */
    NPU_QUANT_HYBRID,   /* w8a8, but layers under the threshold or named stay float */
    NPU_QUANT_W16A16I,  /* int16 weights and activations, symmetric (the int16 CNA path) */
};

enum npu_quant_algo {
    NPU_QUANT_MINMAX = 0, /* the observed range */
    NPU_QUANT_PERCENTILE, /* 0.01 % and 99.99 % of the histogram */
    NPU_QUANT_MSE,        /* the clip range of least expected squared error */
    NPU_QUANT_KL,         /* the clip of least KL divergence (entropy calibration) */
};

/* Fewest calibration samples the quantiser accepts. */
#define NPU_QUANT_MIN_SAMPLES 4
/* Default weight granularity: one scale per tensor when that multiplies the weights'
 * rounding noise by at most this much over one scale per output channel (else per channel) */
#define NPU_QUANT_TENSOR_NOISE 4.0

/* Calibration samples: nsamples x ninputs tensors, sample s input i at
 * t[s * ninputs + i], in the graph's input order. */
struct npu_quant_dataset {
    int nsamples, ninputs;
    struct npu_tensor *t;
};

/* Reads LIST (one sample per line: the .npy files of the model's inputs in
 * input order, separated by spaces; relative paths are relative to LIST's
 * folder; blank lines and lines starting with '#' are skipped) and checks
 * every file against g's inputs (count, dtype, shape). Errors name the line,
 * the file and the problem. */
enum npu_status npu_quant_dataset_load(const char *list, const struct npu_graph *g,
                                       struct npu_quant_dataset **out);
void npu_quant_dataset_free(struct npu_quant_dataset *d);

struct npu_quant_options {
    enum npu_quant_mode mode;
    enum npu_quant_algo algo;
    bool per_layer; /* one weight scale per tensor (default: per output channel) */
    /* every layer's weights per output channel; without it (and without per_layer) a layer
     * whose per-tensor weight scale adds little quantisation noise (NPU_QUANT_TENSOR_NOISE)
     * gets one scale, which lets the NPU fold its DequantizeLinear (docs/quantisation.md) */
    bool per_channel;
    double hybrid_threshold; /* single-layer cosine under which hybrid keeps a layer float;
                              * <= 0: 0.999 */
    const char *keep_float;  /* comma list of node names kept float (any mode) */
    int threads;             /* CPU threads for calibration (0: all) */
    bool accuracy;           /* fill the report's "entire" figures too */
    const struct npu_quant_dataset *data;
    /* graph outputs that dequantise a quantised layer stay int8 / int16 with their
     * scale and zero point on the tensor (npu_tensor qscale / qzero, the .npub and
     * GstNpuTensor scale / zero_point); default false: float outputs */
    bool quantised_outputs;
};

/* One layer of the report. */
struct npu_quant_layer {
    char name[128]; /* the node's name */
    char op[24];    /* its source op */
    bool quantised;
    char why[160];                 /* when float: why (named, hybrid threshold, NPU refusal) */
    double single_cos, single_rel; /* < -1: not measured */
    double entire_cos, entire_rel;
};

struct npu_quant_report {
    struct npu_quant_layer *layers;
    int nlayers;
    int nquantised;
    /* the graph outputs, entire */
    double out_cos, out_rel;
    double calib_s, total_s; /* wall time of calibration and of the whole quantiser */
    const char *algo, *mode;
    int quantised_outputs; /* outputs left integer (quantised_outputs) */
};

/* Quantises g in place (after npu_compile). rep may be NULL. */
enum npu_status npu_quantize(struct npu_graph *g, const struct npu_quant_options *o,
                             struct npu_quant_report *rep);
void npu_quant_report_free(struct npu_quant_report *rep);
/* Prints the per-layer table, worst entire (else single) cosine first. */
void npu_quant_report_print(const struct npu_quant_report *rep, FILE *f);
/* Writes the report as JSON. */
enum npu_status npu_quant_report_write_json(const struct npu_quant_report *rep, const char *path);

/* Writes a quantised graph (after npu_quantize) as a QDQ ONNX model: the
 * QLinear products as DequantizeLinear -> Conv / MatMul -> QuantizeLinear,
 * OpenNPU's fused ops as standard ONNX ops (opset 17), the same arithmetic. */
enum npu_status npu_quant_emit_qdq(const struct npu_graph *g, const char *path);

/* Parse helpers for command lines: NPU_ERR_INVALID for an unknown name. */
enum npu_status npu_quant_mode_parse(const char *s, enum npu_quant_mode *out);
enum npu_status npu_quant_algo_parse(const char *s, enum npu_quant_algo *out);
const char *npu_quant_algo_name(enum npu_quant_algo a);
const char *npu_quant_mode_name(enum npu_quant_mode m);

#ifdef __cplusplus
}
#endif

#endif /* NPU_QUANT_H */
