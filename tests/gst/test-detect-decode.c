// SPDX-License-Identifier: MIT
/*
 * test-detect-decode.c: unit test of gst/npu-detect-decode.c without
 * GStreamer: YOLOv8, YOLOv5 and SSD layouts with hand-placed boxes, the
 * letterbox undo (expected frame coordinates computed here from the
 * letterbox arithmetic), threshold, per-class and class-agnostic NMS, top-k,
 * bad shapes, NaN values, thousands of candidates, YOLOv8-seg masks, the
 * IoU tracker and classifier top-k.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-detect-decode.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);                             \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define NEAR(a, b) (fabsf((a) - (b)) < 1e-3f)

/* model input 64x64, letterboxed from a 128x64 frame: the frame occupies
 * model rows 16..48 at half scale */
static const struct npu_detect_geometry letterbox = {
  .input_w = 64,.input_h = 64,
  .model_x = 0,.model_y = 16,.model_w = 64,.model_h = 32,
  .frame_x = 0,.frame_y = 0,.frame_w = 128,.frame_h = 64,
  .clip_w = 128,.clip_h = 64,
};

static const struct npu_detect_geometry identity = {
  .input_w = 100,.input_h = 100,
  .model_x = 0,.model_y = 0,.model_w = 100,.model_h = 100,
  .frame_x = 0,.frame_y = 0,.frame_w = 100,.frame_h = 100,
  .clip_w = 100,.clip_h = 100,
};

static struct npu_detect_params
defaults (void)
{
  struct npu_detect_params p = { NPU_DETECT_FORMAT_AUTO, 0.25f, 0.45f, 100, 0 };
  return p;
}

/* a [1, 4+nc, n] YOLOv8 tensor; anchor i gets box b[i] and class scores */
static float *
v8 (int n, int nc, const float (*b)[4], const float *scores /* n x nc */ )
{
  float *d = calloc ((size_t) ((4 + nc) * n), sizeof (float));
  int i, c, k;

  for (i = 0; i < n; i++) {
    for (k = 0; k < 4; k++)
      d[k * n + i] = b[i][k];
    for (c = 0; c < nc; c++)
      d[(4 + c) * n + i] = scores[i * nc + c];
  }
  return d;
}

static struct npu_detect_tensor
tensor3 (const float *d, int64_t a, int64_t b, int64_t c)
{
  struct npu_detect_tensor t = { d, (size_t) (a * b * c), 3, {a, b, c} };
  return t;
}

static int
decode (const struct npu_detect_tensor *t, int nt,
    const struct npu_detect_params *p, const struct npu_detect_geometry *g,
    struct npu_detect_box *out, int cap, enum npu_detect_format *fmt, char *err)
{
  int n = -1;
  enum npu_status st =
      npu_detect_decode (t, nt, p, g, out, cap, &n, fmt, err, 256);
  return st == NPU_OK ? n : -1;
}

static void
test_yolov8_letterbox (void)
{
  const float boxes[3][4] =
      { {32, 32, 16, 8}, {10, 20, 4, 4}, {33, 32, 16, 8} };
  const float scores[3 * 2] = { 0.1f, 0.9f, 0.2f, 0.1f, 0.05f, 0.8f };
  float *d = v8 (3, 2, boxes, scores);
  struct npu_detect_tensor t = tensor3 (d, 1, 6, 3);
  struct npu_detect_params p = defaults ();
  struct npu_detect_box out[8];
  enum npu_detect_format fmt;
  char err[256] = "";
  int n = decode (&t, 1, &p, &letterbox, out, 8, &fmt, err);

  /* anchor 1 is below the threshold, anchor 2 overlaps anchor 0 (IoU 0.88) */
  CHECK (fmt == NPU_DETECT_FORMAT_YOLOV8, "format %d", fmt);
  CHECK (n == 1, "n %d (%s)", n, err);
  if (n >= 1) {
    /* model (24,28)-(40,36) -> frame ((24-0)*2, (28-16)*2) - (80, 40) */
    CHECK (NEAR (out[0].x0, 48) && NEAR (out[0].y0, 24) && NEAR (out[0].x1, 80)
        && NEAR (out[0].y1, 40), "box %g %g %g %g", out[0].x0, out[0].y0,
        out[0].x1, out[0].y1);
    CHECK (out[0].class_id == 1
        && NEAR (out[0].score, 0.9f), "class %d score %g", out[0].class_id,
        out[0].score);
    CHECK (out[0].track_id == -1, "track %d", out[0].track_id);
  }
  /* a lower threshold keeps anchor 1 too; a box leaving the picture area
   * (model y 18..22 is inside 16..48) maps to frame y 4..12 */
  p.conf_threshold = 0.15f;
  n = decode (&t, 1, &p, &letterbox, out, 8, NULL, err);
  CHECK (n == 2, "n %d", n);
  if (n == 2)
    CHECK (out[1].class_id == 0 && NEAR (out[1].x0, 16) && NEAR (out[1].y0, 4)
        && NEAR (out[1].x1, 24)
        && NEAR (out[1].y1, 12), "box %g %g %g %g", out[1].x0, out[1].y0,
        out[1].x1, out[1].y1);
  /* a looser IoU threshold keeps the overlapping box */
  p.iou_threshold = 0.95f;
  n = decode (&t, 1, &p, &letterbox, out, 8, NULL, err);
  CHECK (n == 3, "n %d", n);
  free (d);
}

/* YOLOv8-seg: output0 [1, 4+1+2, 3] and protos [1, 2, 16, 16] (a quarter of
 * the 64x64 input), letterboxed from 128x64. Prototype 0 is +8 on the left
 * half of the input (proto columns < 8, frame x < 64) and -8 on the right;
 * prototype 1 is +8 everywhere. Anchor 0 (coefficients 1, 0) is a box over
 * both halves whose mask is its left half; anchor 2 (0, -1) has an empty
 * mask; anchor 1 scores below the threshold. */
static float *
seg_protos (void)
{
  float *pr = calloc (2 * 16 * 16, sizeof (float));
  int r, q;

  for (r = 0; r < 16; r++)
    for (q = 0; q < 16; q++) {
      pr[r * 16 + q] = q < 8 ? 8.0f : -8.0f;
      pr[256 + r * 16 + q] = 8.0f;
    }
  return pr;
}

static float *
seg_output0 (void)
{
  /* rows: cx, cy, w, h, score, coef0, coef1; columns: anchors */
  static const float rows[7][3] = {
    {32, 40, 16}, {32, 40, 20}, {48, 8, 8}, {16, 8, 8},
    {0.9f, 0.1f, 0.8f}, {1, 1, 0}, {0, 0, -1},
  };
  float *o = malloc (sizeof (rows));

  memcpy (o, rows, sizeof (rows));
  return o;
}

static struct npu_detect_tensor
tensor4 (const float *d, int64_t a, int64_t b, int64_t c, int64_t e)
{
  struct npu_detect_tensor t = { d, (size_t) (a * b * c * e), 4, {a, b, c, e} };
  return t;
}

static void
test_yolov8_seg (void)
{
  float *o = seg_output0 (), *pr = seg_protos ();
  struct npu_detect_tensor t[2] = { tensor3 (o, 1, 7, 3),
    tensor4 (pr, 1, 2, 16, 16)
  }, sw[2];
  struct npu_detect_params p = defaults ();
  struct npu_detect_box out[8];
  enum npu_detect_format fmt = NPU_DETECT_FORMAT_AUTO;
  char err[256] = "";
  uint8_t *m = malloc (96 * 32);
  int n, k, x, y, bad;

  n = decode (t, 2, &p, &letterbox, out, 8, &fmt, err);
  CHECK (fmt == NPU_DETECT_FORMAT_YOLOV8_SEG, "format %d", fmt);
  CHECK (n == 2, "n %d (%s)", n, err);
  if (n == 2) {
    /* model (8,24)-(56,40) -> frame (16,16)-(112,48) */
    CHECK (NEAR (out[0].x0, 16) && NEAR (out[0].y0, 16) && NEAR (out[0].x1, 112)
        && NEAR (out[0].y1, 48), "box %g %g %g %g", out[0].x0, out[0].y0,
        out[0].x1, out[0].y1);
    CHECK (out[0].anchor == 0 && out[1].anchor == 2, "anchors %d %d",
        out[0].anchor, out[1].anchor);
    CHECK (npu_detect_seg_mask (t, 2, &out[0], &letterbox, 16, 16, 96, 32, m,
            err, sizeof (err)) == NPU_OK, "%s", err);
    /* left of frame x 60 inside, right of 68 outside (the bilinear
     * transition spans the proto pixels either side of column 8, frame
     * x 60..68); the box's corners are rounded off as ultralytics' crop then
     * bilinear upsampling does: at frame (16, 16) only 0.5625^2 of the
     * sample lies in the box (0.316, out), at (19, 16) 0.5625 x 0.97 (in) */
    bad = 0;
    for (y = 0; y < 32; y++)
      for (x = 0; x < 96; x++) {
        int fx = 16 + x, fy = 16 + y;
        int corner = (fx < 19 || fx >= 61) && (fy < 19 || fy >= 45);

        if ((fx < 60 && !corner && m[y * 96 + x] != 255) || (fx >= 68
                && m[y * 96 + x] != 0))
          bad++;
      }
    CHECK (m[0] == 0 && m[31 * 96] == 0 && m[3] == 255 && m[3 * 96] == 255,
        "corners %d %d, next to them %d %d", m[0], m[31 * 96], m[3], m[3 * 96]);
    CHECK (bad == 0, "%d mask pixels wrong", bad);
    /* anchor 2: coefficients (0, -1), nothing */
    CHECK (npu_detect_seg_mask (t, 2, &out[1], &letterbox, 24, 0, 16, 16, m,
            err, sizeof (err)) == NPU_OK, "%s", err);
    for (k = 0, bad = 0; k < 16 * 16; k++)
      bad += m[k] != 0;
    CHECK (bad == 0, "anchor 2: %d pixels set", bad);
  }

  /* protos first works the same */
  sw[0] = t[1];
  sw[1] = t[0];
  n = decode (sw, 2, &p, &letterbox, out, 8, &fmt, err);
  CHECK (n == 2 && fmt == NPU_DETECT_FORMAT_YOLOV8_SEG, "swapped: n %d", n);
  if (n == 2)
    CHECK (npu_detect_seg_mask (sw, 2, &out[0], &letterbox, 16, 16, 96, 32, m,
            err, sizeof (err)) == NPU_OK && m[4 * 96 + 4] == 255
        && m[4 * 96 + 95] == 0, "swapped mask");

  /* a NaN coefficient: an empty mask, no crash */
  o[5 * 3 + 0] = NAN;
  n = decode (t, 2, &p, &letterbox, out, 8, NULL, err);
  CHECK (n == 2, "nan: n %d", n);
  if (n == 2) {
    CHECK (npu_detect_seg_mask (t, 2, &out[0], &letterbox, 16, 16, 96, 32, m,
            err, sizeof (err)) == NPU_OK, "%s", err);
    for (k = 0, bad = 0; k < 96 * 32; k++)
      bad += m[k] != 0;
    CHECK (bad == 0, "nan: %d pixels set", bad);
  }

  /* bad shapes: a clear error each */
  p.format = NPU_DETECT_FORMAT_YOLOV8_SEG;
  n = decode (t, 1, &p, &letterbox, out, 8, NULL, err);
  CHECK (n < 0 && strstr (err, "two tensors"), "one tensor: %s", err);
  sw[0] = t[0];
  sw[1] = tensor3 (pr, 1, 2, 256);
  n = decode (sw, 2, &p, &letterbox, out, 8, NULL, err);
  CHECK (n < 0 && strstr (err, "protos"), "3-d protos: %s", err);
  sw[1] = tensor4 (pr, 1, 3, 16, 16);   /* 768 values claimed, 512 there */
  sw[1].numel = 512;
  n = decode (sw, 2, &p, &letterbox, out, 8, NULL, err);
  CHECK (n < 0 && strstr (err, "the shape needs"), "short protos: %s", err);
  sw[1] = tensor4 (pr, 1, 3, 16, 8 + 8);
  sw[1].numel = 3 * 16 * 16;
  {
    float *big = calloc (3 * 16 * 16, sizeof (float));

    sw[1].data = big;
    /* nm 3: output0 has 4 + 3 rows for coefficients alone, no class */
    n = decode (sw, 2, &p, &letterbox, out, 8, NULL, err);
    CHECK (n < 0 && strstr (err, "at least one class"), "nm 3: %s", err);
    free (big);
  }
  p.format = NPU_DETECT_FORMAT_AUTO;
  out[0].anchor = 3;
  CHECK (npu_detect_seg_mask (t, 2, &out[0], &letterbox, 16, 16, 96, 32, m,
          err, sizeof (err)) == NPU_ERR_INVALID
      && strstr (err, "anchor 3"), "anchor: %s", err);
  free (m);
  free (o);
  free (pr);
}

static void
test_nms_classes_topk (void)
{
  /* two overlapping boxes of different classes, four separate ones */
  const float boxes[6][4] =
      { {20, 20, 10, 10}, {21, 20, 10, 10}, {60, 60, 10, 10},
  {80, 20, 10, 10}, {20, 80, 10, 10}, {80, 80, 10, 10}
  };
  const float scores[6 * 2] =
      { 0.9f, 0, 0, 0.8f, 0.7f, 0, 0.6f, 0, 0, 0.5f, 0.4f, 0 };
  float *d = v8 (6, 2, boxes, scores);
  struct npu_detect_tensor t = tensor3 (d, 1, 6, 6);
  struct npu_detect_params p = defaults ();
  struct npu_detect_box out[8];
  char err[256] = "";
  int n;

  p.conf_threshold = 0.3f;
  n = decode (&t, 1, &p, &identity, out, 8, NULL, err);
  CHECK (n == 6, "per-class NMS keeps both classes: %d", n);
  p.class_agnostic = 1;
  n = decode (&t, 1, &p, &identity, out, 8, NULL, err);
  CHECK (n == 5, "class-agnostic NMS drops the class-1 box: %d", n);
  CHECK (n == 5 && out[0].class_id == 0 && NEAR (out[1].score, 0.7f), "order");
  p.max_detections = 2;
  n = decode (&t, 1, &p, &identity, out, 8, NULL, err);
  CHECK (n == 2 && NEAR (out[0].score, 0.9f)
      && NEAR (out[1].score, 0.7f), "top-2: %d", n);
  /* capacity smaller than max_detections */
  p.max_detections = 100;
  n = decode (&t, 1, &p, &identity, out, 3, NULL, err);
  CHECK (n == 3, "cap 3: %d", n);
  free (d);
}

static void
test_yolov5 (void)
{
  /* [1, 3, 5+2]: objectness times class score */
  const float d[3 * 7] = {
    50, 50, 20, 20, 0.9f, 0.1f, 0.8f,   /* 0.72, class 1 */
    10, 10, 4, 4, 0.2f, 0.9f, 0.1f,     /* 0.18: below 0.25 */
    90, 90, 10, 10, 1.0f, 0.5f, 0.3f,   /* 0.5, class 0 */
  };
  struct npu_detect_tensor t = tensor3 (d, 1, 3, 7);
  struct npu_detect_params p = defaults ();
  struct npu_detect_box out[4];
  enum npu_detect_format fmt;
  char err[256] = "";
  int n = decode (&t, 1, &p, &identity, out, 4, &fmt, err);

  CHECK (fmt == NPU_DETECT_FORMAT_YOLOV5, "format %d", fmt);
  CHECK (n == 2, "n %d (%s)", n, err);
  if (n == 2) {
    CHECK (NEAR (out[0].score, 0.72f)
        && out[0].class_id == 1, "score %g", out[0].score);
    CHECK (NEAR (out[0].x0, 40) && NEAR (out[0].y1, 60), "box");
    CHECK (NEAR (out[1].score, 0.5f) && NEAR (out[1].x1, 95)
        && NEAR (out[1].y1, 95), "box2");
  }
}

static void
test_ssd (void)
{
  /* normalised boxes and pixel boxes, scores [1, 2, 3] */
  const float nb[2 * 4] = { 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.5f, 0.9f, 0.9f };
  const float pb[2 * 4] = { 10, 20, 30, 40, 50, 50, 90, 90 };
  const float sc[2 * 3] = { 0.1f, 0.7f, 0.2f, 0.05f, 0.05f, 0.9f };
  struct npu_detect_tensor t[2] =
      { tensor3 (nb, 1, 2, 4), tensor3 (sc, 1, 2, 3) };
  struct npu_detect_params p = defaults ();
  struct npu_detect_box out[4];
  enum npu_detect_format fmt;
  char err[256] = "";
  int n = decode (t, 2, &p, &identity, out, 4, &fmt, err);

  CHECK (fmt == NPU_DETECT_FORMAT_SSD, "format %d", fmt);
  CHECK (n == 2 && out[0].class_id == 2 && NEAR (out[0].x0, 50)
      && NEAR (out[1].y1, 40), "normalised: n %d (%s)", n, err);
  t[0] = tensor3 (pb, 1, 2, 4);
  n = decode (t, 2, &p, &identity, out, 4, NULL, err);
  CHECK (n == 2 && NEAR (out[1].x0, 10)
      && NEAR (out[1].y0, 20), "pixels: n %d", n);
  /* scores first, boxes second */
  t[1] = t[0];
  t[0] = tensor3 (sc, 1, 2, 3);
  n = decode (t, 2, &p, &identity, out, 4, NULL, err);
  CHECK (n == 2, "swapped order: n %d", n);
}

static void
test_bad_shapes (void)
{
  float d[64] = { 0 };
  struct npu_detect_tensor t[2];
  struct npu_detect_params p = defaults ();
  struct npu_detect_box out[4];
  char err[256];
  int n;

  /* rank 4 */
  t[0] = (struct npu_detect_tensor) { d, 16, 4, {1, 2, 2, 4} };
  err[0] = 0;
  n = decode (t, 1, &p, &identity, out, 4, NULL, err);
  CHECK (n == -1 && strstr (err, "[1, 2, 2, 4]"), "rank 4: %d '%s'", n, err);
  /* yolov8 with no class rows */
  t[0] = tensor3 (d, 1, 4, 16);
  p.format = NPU_DETECT_FORMAT_YOLOV8;
  n = decode (t, 1, &p, &identity, out, 4, NULL, err);
  CHECK (n == -1 && strstr (err, "yolov8"), "4 rows: '%s'", err);
  /* element count that does not match the dims */
  t[0] = (struct npu_detect_tensor) { d, 10, 3, {1, 6, 2} };
  n = decode (t, 1, &p, &identity, out, 4, NULL, err);
  CHECK (n == -1, "numel mismatch");
  /* batch 2 */
  t[0] = tensor3 (d, 2, 6, 2);
  n = decode (t, 1, &p, &identity, out, 4, NULL, err);
  CHECK (n == -1, "batch 2");
  /* ssd with different N */
  p.format = NPU_DETECT_FORMAT_SSD;
  t[0] = tensor3 (d, 1, 3, 4);
  t[1] = tensor3 (d, 1, 2, 3);
  n = decode (t, 2, &p, &identity, out, 4, NULL, err);
  CHECK (n == -1 && strstr (err, "same N"), "ssd N: '%s'", err);
  n = decode (t, 1, &p, &identity, out, 4, NULL, err);
  CHECK (n == -1 && strstr (err, "two tensors"), "ssd one tensor: '%s'", err);
  /* yolov5 needs 5+nc columns */
  p.format = NPU_DETECT_FORMAT_YOLOV5;
  t[0] = tensor3 (d, 1, 8, 5);
  n = decode (t, 1, &p, &identity, out, 4, NULL, err);
  CHECK (n == -1 && strstr (err, "yolov5"), "yolov5 5 cols: '%s'", err);
  /* empty geometry */
  p = defaults ();
  t[0] = tensor3 (d, 1, 6, 2);
  {
    struct npu_detect_geometry g = identity;
    g.model_w = 0;
    n = decode (t, 1, &p, &g, out, 4, NULL, err);
    CHECK (n == -1 && strstr (err, "empty"), "geometry: '%s'", err);
  }
  /* all zero: valid, no detections */
  n = decode (t, 1, &p, &identity, out, 4, NULL, err);
  CHECK (n == 0, "zeros: %d", n);
}

static void
test_nan_inf (void)
{
  const float boxes[4][4] =
      { {20, 20, 10, 10}, {NAN, 20, 10, 10}, {60, 60, INFINITY, 10},
  {80, 80, 10, 10}
  };
  const float scores[4] = { NAN, 0.9f, 0.9f, INFINITY };
  float *d = v8 (4, 1, boxes, scores);
  struct npu_detect_tensor t = tensor3 (d, 1, 5, 4);
  struct npu_detect_params p = defaults ();
  struct npu_detect_box out[4];
  char err[256] = "";
  int n = decode (&t, 1, &p, &identity, out, 4, NULL, err);

  CHECK (n == 0, "NaN/inf boxes and scores are skipped: %d", n);
  free (d);
}

static void
test_thousands (void)
{
  /* 8400 anchors x 80 classes, every anchor confident: a grid of 10x10
   * boxes, 84 anchors on each of 100 cells */
  const int n = 8400, nc = 80;
  float *d = calloc ((size_t) (84 * n), sizeof (float));
  struct npu_detect_tensor t = tensor3 (d, 1, 84, n);
  struct npu_detect_params p = defaults ();
  struct npu_detect_box *out = calloc (300, sizeof (*out));
  char err[256] = "";
  int i, got;

  for (i = 0; i < n; i++) {
    int cell = i % 100;
    d[i] = 10.0f * (float) (cell % 10) + 5;
    d[n + i] = 10.0f * (float) (cell / 10) + 5;
    d[2 * n + i] = 8;
    d[3 * n + i] = 8;
    d[(4 + i % nc) * n + i] = 0.3f + 0.6f * (float) i / (float) n;
  }
  p.max_detections = 300;
  got = decode (&t, 1, &p, &identity, out, 300, NULL, err);
  /* per-class NMS: each (cell, class) pair once; 8400 anchors, 100 cells,
   * 80 classes: pairs present = all anchors distinct up to 300 kept */
  CHECK (got == 300, "per-class: %d", got);
  p.class_agnostic = 1;
  got = decode (&t, 1, &p, &identity, out, 300, NULL, err);
  CHECK (got == 100, "class-agnostic: one per cell, %d", got);
  p.max_detections = 7;
  got = decode (&t, 1, &p, &identity, out, 300, NULL, err);
  CHECK (got == 7, "top-7: %d", got);
  free (out);
  free (d);
}

static struct npu_detect_box
box (float x, float y, float w, float h, int cls)
{
  struct npu_detect_box b = { x, y, x + w, y + h, 0.9f, cls, -1 };
  return b;
}

static void
test_tracker (void)
{
  struct npu_iou_tracker tr;
  struct npu_detect_box f[3];
  int id_a, id_b, frame;

  npu_iou_tracker_init (&tr, 0.3f, 1, 0);
  f[0] = box (10, 10, 20, 20, 0);
  f[1] = box (60, 60, 20, 20, 1);
  CHECK (npu_iou_tracker_update (&tr, f, 2) == NPU_OK, "update");
  id_a = f[0].track_id;
  id_b = f[1].track_id;
  CHECK (id_a == 1 && id_b == 2, "ids %d %d", id_a, id_b);
  /* both move a little for five frames, in swapped order */
  for (frame = 1; frame <= 5; frame++) {
    f[0] = box (60 + 2.0f * frame, 60, 20, 20, 1);
    f[1] = box (10 + 2.0f * frame, 10 + frame, 20, 20, 0);
    npu_iou_tracker_update (&tr, f, 2);
    CHECK (f[0].track_id == id_b
        && f[1].track_id == id_a, "frame %d: %d %d", frame, f[0].track_id,
        f[1].track_id);
  }
  /* a third object appears; a box of another class on top of A is new */
  f[0] = box (20, 15, 20, 20, 0);
  f[1] = box (150, 150, 10, 10, 2);
  f[2] = box (20, 15, 20, 20, 3);
  npu_iou_tracker_update (&tr, f, 3);
  CHECK (f[0].track_id == id_a && f[1].track_id == 3
      && f[2].track_id == 4, "new %d %d %d", f[0].track_id, f[1].track_id,
      f[2].track_id);
  /* A missing one frame (max_age 1) keeps its id, two frames loses it */
  npu_iou_tracker_update (&tr, NULL, 0);
  f[0] = box (20, 15, 20, 20, 0);
  npu_iou_tracker_update (&tr, f, 1);
  CHECK (f[0].track_id == id_a, "after one missed frame %d", f[0].track_id);
  npu_iou_tracker_update (&tr, NULL, 0);
  npu_iou_tracker_update (&tr, NULL, 0);
  npu_iou_tracker_update (&tr, f, 1);
  CHECK (f[0].track_id == 5, "after two missed frames a new id: %d",
      f[0].track_id);
  /* a far jump is a new track */
  f[0] = box (200, 200, 20, 20, 0);
  npu_iou_tracker_update (&tr, f, 1);
  CHECK (f[0].track_id == 6, "jump: %d", f[0].track_id);
  npu_iou_tracker_clear (&tr);
}

static void
test_classify (void)
{
  const float logits[4] = { 1.0f, 3.0f, 2.0f, 3.0f };
  const float nan_logits[3] = { 0.0f, NAN, 1.0f };
  int ids[4], n;
  float sc[4];
  char err[256] = "";
  double z = exp (1.0) + 2 * exp (3.0) + exp (2.0);

  CHECK (npu_classify_topk (logits, 4, NPU_CLASSIFY_SCORE_SOFTMAX, 3, ids, sc,
          &n, err, 256) == NPU_OK, "%s", err);
  CHECK (n == 3 && ids[0] == 1 && ids[1] == 3
      && ids[2] == 2, "order %d %d %d", ids[0], ids[1], ids[2]);
  CHECK (fabs (sc[0] - exp (3.0) / z) < 1e-6
      && fabs (sc[2] - exp (2.0) / z) < 1e-6, "softmax %g", sc[0]);
  npu_classify_topk (logits, 4, NPU_CLASSIFY_SCORE_SIGMOID, 9, ids, sc, &n, err,
      256);
  CHECK (n == 4
      && fabs (sc[3] - 1.0 / (1.0 + exp (-1.0))) < 1e-6, "sigmoid n %d", n);
  npu_classify_topk (logits, 4, NPU_CLASSIFY_SCORE_NONE, 1, ids, sc, &n, err,
      256);
  CHECK (n == 1 && sc[0] == 3.0f, "none");
  CHECK (npu_classify_topk (nan_logits, 3, NPU_CLASSIFY_SCORE_SOFTMAX, 1, ids,
          sc, &n, err, 256) == NPU_ERR_INVALID && strstr (err, "class 1")
      && n == 0, "NaN: '%s'", err);
}

int
main (void)
{
  test_yolov8_letterbox ();
  test_yolov8_seg ();
  test_nms_classes_topk ();
  test_yolov5 ();
  test_ssd ();
  test_bad_shapes ();
  test_nan_inf ();
  test_thousands ();
  test_tracker ();
  test_classify ();
  if (failures) {
    fprintf (stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf ("detect-decode: all checks passed\n");
  return 0;
}
