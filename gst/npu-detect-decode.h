/* SPDX-License-Identifier: MIT */
/*
 * npu-detect-decode.h: post-processing of object detector and classifier
 * outputs, in plain C (no GStreamer or GLib types) so that it can be unit
 * tested on its own: YOLOv8/v11 ([1, 4+nc, N]), YOLOv5 ([1, N, 5+nc]) and
 * SSD-style (boxes [1, N, 4] + scores [1, N, nc]) decoding, the mapping from
 * model input pixels back to frame pixels, confidence threshold, greedy NMS
 * (per class or class-agnostic), top-k; a small IoU tracker; and
 * softmax/sigmoid top-k for classifiers. npudetect and npuclassify
 * (gstnpudetect.c, gstnpuclassify.c) wrap it.
 */
#ifndef NPU_DETECT_DECODE_H
#define NPU_DETECT_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* AUTO: SSD with two or more tensors; with one [1, A, B] tensor the YOLO
 * layout that fits (v8 needs A >= 5, v5 needs B >= 6), and when both fit, v8
 * if A <= B (the anchor axis is the longer one) else v5. */
enum npu_detect_format {
    NPU_DETECT_FORMAT_AUTO = 0,
    NPU_DETECT_FORMAT_YOLOV8 = 1, /* [1, 4+nc, N]: cx, cy, w, h, class scores */
    NPU_DETECT_FORMAT_YOLOV5 = 2, /* [1, N, 5+nc]: cx, cy, w, h, objectness, class scores */
    NPU_DETECT_FORMAT_SSD = 3,    /* [1, N, 4] x0, y0, x1, y1 + [1, N, nc] scores */
    /* ultralytics YOLOv8/YOLO11 -seg: output0 [1, 4+nc+nm, N] (boxes, class scores, nm
     * mask coefficients) + output1 protos [1, nm, mh, mw], in either order */
    NPU_DETECT_FORMAT_YOLOV8_SEG = 4,
};

#define NPU_DETECT_MAX_DIMS 8

/* One output tensor of the model, already converted to float. */
struct npu_detect_tensor {
    const float *data;
    size_t numel; /* number of floats at data; must equal the product of dims */
    int ndim;
    int64_t dims[NPU_DETECT_MAX_DIMS];
};

/* One detection, in frame pixels (x0, y0) top-left, (x1, y1) bottom-right. */
struct npu_detect_box {
    float x0, y0, x1, y1;
    float score;
    int class_id;
    int track_id; /* -1 without tracking */
    int anchor;   /* the anchor (row of the output) it was decoded from */
};

struct npu_detect_params {
    enum npu_detect_format format;
    float conf_threshold; /* boxes scoring below are dropped */
    float iou_threshold;  /* NMS: a box overlapping a kept one more is dropped */
    int max_detections;   /* top-k after NMS (>= 1) */
    int class_agnostic;   /* NMS across classes, else only within a class */
};

/* Where the model's input region lies in the frame: model input pixel
 * (model_x + u, model_y + v) shows frame pixel
 * (frame_x + u * frame_w / model_w, frame_y + v * frame_h / model_h).
 * Boxes are clipped to [0, clip_w] x [0, clip_h] (the whole frame).
 * input_w x input_h is the whole model input (SSD boxes in 0..1 are
 * fractions of it). */
struct npu_detect_geometry {
    float input_w, input_h;
    float model_x, model_y, model_w, model_h;
    float frame_x, frame_y, frame_w, frame_h;
    float clip_w, clip_h;
};

/* Decodes @n_tensors outputs into at most params->max_detections boxes
 * written to @out (capacity @cap), best first; *n_out receives the count.
 * NaN or infinite values and empty boxes are skipped, never reported.
 * NPU_ERR_INVALID with a reason in @err (@err_len bytes) when the tensors do
 * not have the layout of the format; *format_used (may be NULL) receives the
 * format auto picked. */
enum npu_status npu_detect_decode(const struct npu_detect_tensor *tensors, int n_tensors,
                                  const struct npu_detect_params *params,
                                  const struct npu_detect_geometry *geom, struct npu_detect_box *out,
                                  int cap, int *n_out, enum npu_detect_format *format_used,
                                  char *err, size_t err_len);

/* YOLOv8-seg: the mask of a box decoded from these tensors (format YOLOV8_SEG) over
 * the frame rectangle [x, x+w) x [y, y+h) (the caller's rounding of the box), written
 * to mask (w * h bytes, row-major): 255 where the object is, else 0. As ultralytics'
 * process_mask: sigmoid(coefficients . protos) at the protos' resolution, zero outside
 * the box scaled to it, sampled bilinearly (align_corners=False) at each frame pixel's
 * centre mapped into the model input (undoing letterbox and crop), above 0.5.
 * (ultralytics resamples twice, protos -> model input -> frame; this does it once.)
 * NPU_ERR_INVALID with a reason when the tensors are not a -seg output or the box's
 * anchor is outside them. */
enum npu_status npu_detect_seg_mask(const struct npu_detect_tensor *tensors, int n_tensors,
                                    const struct npu_detect_box *box,
                                    const struct npu_detect_geometry *geom, int x, int y, int w,
                                    int h, uint8_t *mask, char *err, size_t err_len);

/* Intersection over union of two boxes (0 for empty boxes). */
float npu_detect_iou(const struct npu_detect_box *a, const struct npu_detect_box *b);

/* IoU tracker: a box of this frame continues the track of the previous
 * frame's box it overlaps most (IoU >= iou_threshold, same class unless
 * class_agnostic); a box continuing no track starts a new one. A track not
 * seen for more than max_age frames ends. Ids start at 1 and never repeat. */
struct npu_iou_track {
    struct npu_detect_box box;
    int id;
    int age; /* frames since last matched */
};

struct npu_iou_tracker {
    struct npu_iou_track *tracks;
    int n_tracks, cap_tracks;
    int next_id;
    float iou_threshold;
    int max_age;
    int class_agnostic;
};

void npu_iou_tracker_init(struct npu_iou_tracker *t, float iou_threshold, int max_age,
                          int class_agnostic);
void npu_iou_tracker_clear(struct npu_iou_tracker *t);
/* Sets boxes[i].track_id for the @n boxes of one frame. */
enum npu_status npu_iou_tracker_update(struct npu_iou_tracker *t, struct npu_detect_box *boxes,
                                       int n);

enum npu_classify_score {
    NPU_CLASSIFY_SCORE_SOFTMAX = 0,
    NPU_CLASSIFY_SCORE_SIGMOID = 1,
    NPU_CLASSIFY_SCORE_NONE = 2, /* the values as they are (already probabilities) */
};

/* Scores @n logits with @fn and writes the best @k (at most n) class ids to
 * @top_ids and their scores to @top_scores, best first (ties: lower id
 * first). NPU_ERR_INVALID if a logit is NaN (@err says which). */
enum npu_status npu_classify_topk(const float *logits, int n, enum npu_classify_score fn, int k,
                                  int *top_ids, float *top_scores, int *n_top, char *err,
                                  size_t err_len);

#ifdef __cplusplus
}
#endif

#endif /* NPU_DETECT_DECODE_H */
