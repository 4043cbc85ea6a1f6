// SPDX-License-Identifier: MIT
/*
 * npu-detect-decode.c: detector and classifier post-processing (see
 * npu-detect-decode.h). Decoding keeps one candidate per anchor (its best
 * class, as ultralytics' NMS does without multi-label), drops candidates
 * below the threshold or with non-finite values, sorts the rest by score and
 * runs greedy NMS against the boxes already kept, so a frame with thousands
 * of candidates costs at most candidates x max_detections IoUs.
 */
#include "npu-detect-decode.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ultralytics caps the boxes entering NMS at 30000 as well */
#define MAX_NMS_CANDIDATES 30000

static enum npu_status
fail (char *err, size_t err_len, const char *fmt, ...)
{
  va_list ap;

  if (err && err_len) {
    va_start (ap, fmt);
    vsnprintf (err, err_len, fmt, ap);
    va_end (ap);
  }
  return NPU_ERR_INVALID;
}

/* The two trailing dims of a [1, A, B] or [A, B] tensor. */
static int
matrix_dims (const struct npu_detect_tensor *t, int64_t * a, int64_t * b)
{
  int64_t n = 1;
  int i;

  if (!t->data || t->ndim < 2 || t->ndim > 3 || (t->ndim == 3
          && t->dims[0] != 1))
    return 0;
  for (i = 0; i < t->ndim; i++) {
    if (t->dims[i] <= 0 || t->dims[i] > ((int64_t) 1 << 31))
      return 0;
    n *= t->dims[i];
  }
  if ((size_t) n != t->numel)
    return 0;
  *a = t->dims[t->ndim - 2];
  *b = t->dims[t->ndim - 1];
  return 1;
}

static void
shape_str (const struct npu_detect_tensor *t, char *buf, size_t len)
{
  size_t o = 0;
  int i;

  o += (size_t) snprintf (buf + o, len - o, "[");
  for (i = 0; i < t->ndim && i < NPU_DETECT_MAX_DIMS && o < len; i++)
    o += (size_t) snprintf (buf + o, len - o, "%s%lld", i ? ", " : "",
        (long long) t->dims[i]);
  if (o < len)
    snprintf (buf + o, len - o, "]");
}

float
npu_detect_iou (const struct npu_detect_box *a, const struct npu_detect_box *b)
{
  float iw = fminf (a->x1, b->x1) - fmaxf (a->x0, b->x0);
  float ih = fminf (a->y1, b->y1) - fmaxf (a->y0, b->y0);
  float inter, uni;

  if (iw <= 0.0f || ih <= 0.0f)
    return 0.0f;
  inter = iw * ih;
  uni =
      (a->x1 - a->x0) * (a->y1 - a->y0) + (b->x1 - b->x0) * (b->y1 - b->y0) -
      inter;
  return uni > 0.0f ? inter / uni : 0.0f;
}

struct cand
{
  struct npu_detect_box box;
  int64_t index;                /* anchor, for a stable order among equal scores */
};

static int
cand_cmp (const void *pa, const void *pb)
{
  const struct cand *a = pa, *b = pb;

  if (a->box.score > b->box.score)
    return -1;
  if (a->box.score < b->box.score)
    return 1;
  return (a->index > b->index) - (a->index < b->index);
}

/* Maps a box in model input pixels to the frame and clips it; 0 if the box
 * is not finite or empty. */
static int
map_box (const struct npu_detect_geometry *g, float mx0, float my0, float mx1,
    float my1, struct npu_detect_box *o)
{
  float sx = g->frame_w / g->model_w, sy = g->frame_h / g->model_h;

  if (!isfinite (mx0) || !isfinite (my0) || !isfinite (mx1) || !isfinite (my1))
    return 0;
  o->x0 = fminf (fmaxf (g->frame_x + (mx0 - g->model_x) * sx, 0.0f), g->clip_w);
  o->y0 = fminf (fmaxf (g->frame_y + (my0 - g->model_y) * sy, 0.0f), g->clip_h);
  o->x1 = fminf (fmaxf (g->frame_x + (mx1 - g->model_x) * sx, 0.0f), g->clip_w);
  o->y1 = fminf (fmaxf (g->frame_y + (my1 - g->model_y) * sy, 0.0f), g->clip_h);
  return o->x1 > o->x0 && o->y1 > o->y0;
}

/* A YOLOv8-seg output pair: which tensor is output0 [1, 4+nc+nm, N] and
 * which the protos [1, nm, mh, mw]; 0 (with the reason) if they are not. */
static int
seg_layout (const struct npu_detect_tensor *t, int n, int *oi, int *pi,
    int64_t * nc, int64_t * nm, int64_t * n_anchors, int64_t * mh,
    int64_t * mw, char *err, size_t err_len)
{
  const struct npu_detect_tensor *p;
  int64_t a, b, k, numel = 1;
  char s0[96], s1[96];

  if (n != 2) {
    if (n >= 1)
      shape_str (&t[0], s0, sizeof (s0));
    fail (err, err_len,
        "yolov8-seg output must be two tensors, [1, 4+classes+nm, "
        "anchors] and protos [1, nm, mh, mw]; got %d tensor(s)%s%s", n,
        n >= 1 ? ", the first " : "", n >= 1 ? s0 : "");
    return 0;
  }
  *pi = t[0].ndim == 4 ? 0 : 1;
  *oi = 1 - *pi;
  p = &t[*pi];
  shape_str (&t[*oi], s0, sizeof (s0));
  shape_str (p, s1, sizeof (s1));
  if (p->ndim != 4 || p->dims[0] != 1 || !p->data) {
    fail (err, err_len,
        "yolov8-seg protos must be [1, nm, mh, mw]; got %s and %s", s0, s1);
    return 0;
  }
  for (k = 0; k < 4; k++) {
    if (p->dims[k] <= 0 || p->dims[k] > ((int64_t) 1 << 20)) {
      fail (err, err_len, "yolov8-seg protos %s has an empty or huge dim", s1);
      return 0;
    }
    numel *= p->dims[k];
  }
  if ((size_t) numel != p->numel) {
    fail (err, err_len,
        "yolov8-seg protos %s: %zu values, the shape needs %lld", s1, p->numel,
        (long long) numel);
    return 0;
  }
  *nm = p->dims[1];
  *mh = p->dims[2];
  *mw = p->dims[3];
  if (!matrix_dims (&t[*oi], &a, &b) || a < 4 + *nm + 1) {
    fail (err, err_len,
        "yolov8-seg output0 must be [1, 4+classes+%lld, anchors] "
        "(%lld mask coefficients, as the protos %s, and at least one class); got %s",
        (long long) *nm, (long long) *nm, s1, s0);
    return 0;
  }
  *nc = a - 4 - *nm;
  *n_anchors = b;
  return 1;
}

static enum npu_detect_format
pick_format (const struct npu_detect_tensor *t, int n)
{
  int64_t a, b;

  if (n == 2 && (t[0].ndim == 4 || t[1].ndim == 4))
    return NPU_DETECT_FORMAT_YOLOV8_SEG;
  if (n >= 2)
    return NPU_DETECT_FORMAT_SSD;
  if (n == 1 && matrix_dims (&t[0], &a, &b)) {
    int v8 = a >= 5, v5 = b >= 6;

    /* only one layout fits, else the one whose anchor axis is longer
     * (real models have thousands of anchors and few classes) */
    if (v8 != v5)
      return v8 ? NPU_DETECT_FORMAT_YOLOV8 : NPU_DETECT_FORMAT_YOLOV5;
    return a <= b ? NPU_DETECT_FORMAT_YOLOV8 : NPU_DETECT_FORMAT_YOLOV5;
  }
  return NPU_DETECT_FORMAT_YOLOV8;      /* the shape check below explains */
}

/* Collects the candidates above the threshold; returns their count or -1. */
static int64_t
collect (const struct npu_detect_tensor *t, int n_tensors,
    enum npu_detect_format fmt, const struct npu_detect_params *p,
    const struct npu_detect_geometry *g, struct cand **out, char *err,
    size_t err_len)
{
  int64_t a, b, n_anchors, nc, i, c, n = 0;
  const float *boxes = NULL, *scores = NULL;
  const struct npu_detect_tensor *y = &t[0];    /* the YOLO output */
  struct cand *cands;
  char s0[96], s1[96];
  int normalized = 0;

  shape_str (&t[0], s0, sizeof (s0));
  switch (fmt) {
    case NPU_DETECT_FORMAT_YOLOV8:
      if (n_tensors != 1 || !matrix_dims (&t[0], &a, &b) || a < 5) {
        fail (err, err_len,
            "yolov8 output must be one tensor [1, 4+classes, anchors] with at least one "
            "class; got %d tensor(s), the first %s", n_tensors, s0);
        return -1;
      }
      n_anchors = b;
      nc = a - 4;
      break;
    case NPU_DETECT_FORMAT_YOLOV8_SEG:{
      int oi, pi;
      int64_t nm, mh, mw;

      if (!seg_layout (t, n_tensors, &oi, &pi, &nc, &nm, &n_anchors, &mh, &mw,
              err, err_len))
        return -1;
      y = &t[oi];
      break;
    }
    case NPU_DETECT_FORMAT_YOLOV5:
      if (n_tensors != 1 || !matrix_dims (&t[0], &a, &b) || b < 6) {
        fail (err, err_len,
            "yolov5 output must be one tensor [1, anchors, 5+classes] with at least one "
            "class; got %d tensor(s), the first %s", n_tensors, s0);
        return -1;
      }
      n_anchors = a;
      nc = b - 5;
      break;
    case NPU_DETECT_FORMAT_SSD:{
      int64_t a1, b1;
      int bi = 0, si = 1;

      if (n_tensors != 2 || !matrix_dims (&t[0], &a, &b)
          || !matrix_dims (&t[1], &a1, &b1)) {
        fail (err, err_len,
            "ssd output must be two tensors, boxes [1, N, 4] and scores [1, N, classes]; "
            "got %d tensor(s), the first %s", n_tensors, s0);
        return -1;
      }
      if (b != 4 && b1 == 4) {
        bi = 1;
        si = 0;
      }
      if (!matrix_dims (&t[bi], &a, &b) || !matrix_dims (&t[si], &a1, &b1)
          || b != 4 || a != a1) {
        shape_str (&t[1], s1, sizeof (s1));
        fail (err, err_len,
            "ssd output must be boxes [1, N, 4] and scores [1, N, classes] with the same N; "
            "got %s and %s", s0, s1);
        return -1;
      }
      boxes = t[bi].data;
      scores = t[si].data;
      n_anchors = a;
      nc = b1;
      /* boxes in 0..1 are fractions of the model input, else its pixels */
      normalized = 1;
      for (i = 0; i < 4 * n_anchors && normalized; i++)
        if (isfinite (boxes[i]) && fabsf (boxes[i]) > 1.5f)
          normalized = 0;
      break;
    }
    default:
      fail (err, err_len, "unknown detection format %d", (int) fmt);
      return -1;
  }

  cands = malloc (sizeof (*cands) * (size_t) (n_anchors > 0 ? n_anchors : 1));
  if (!cands) {
    fail (err, err_len, "out of memory for %lld candidates",
        (long long) n_anchors);
    return -1;
  }
  for (i = 0; i < n_anchors; i++) {
    float best = -INFINITY, x0, y0, x1, y1;
    int best_c = -1;
    struct cand *cd = &cands[n];

    for (c = 0; c < nc; c++) {
      float s;

      if (fmt == NPU_DETECT_FORMAT_YOLOV8
          || fmt == NPU_DETECT_FORMAT_YOLOV8_SEG)
        s = y->data[(4 + c) * n_anchors + i];
      else if (fmt == NPU_DETECT_FORMAT_YOLOV5)
        s = t[0].data[i * (5 + nc) + 5 + c];
      else
        s = scores[i * nc + c];
      if (s > best) {           /* NaN never wins */
        best = s;
        best_c = (int) c;
      }
    }
    if (fmt == NPU_DETECT_FORMAT_YOLOV5)
      best *= t[0].data[i * (5 + nc) + 4];
    if (best_c < 0 || !(best >= p->conf_threshold) || !isfinite (best))
      continue;
    if (fmt == NPU_DETECT_FORMAT_SSD) {
      float fw = normalized ? g->input_w : 1.0f, fh =
          normalized ? g->input_h : 1.0f;

      x0 = boxes[4 * i] * fw;
      y0 = boxes[4 * i + 1] * fh;
      x1 = boxes[4 * i + 2] * fw;
      y1 = boxes[4 * i + 3] * fh;
    } else {
      float cx, cy, w, h;

      if (fmt == NPU_DETECT_FORMAT_YOLOV8
          || fmt == NPU_DETECT_FORMAT_YOLOV8_SEG) {
        cx = y->data[i];
        cy = y->data[n_anchors + i];
        w = y->data[2 * n_anchors + i];
        h = y->data[3 * n_anchors + i];
      } else {
        const float *r = t[0].data + i * (5 + nc);
        cx = r[0];
        cy = r[1];
        w = r[2];
        h = r[3];
      }
      x0 = cx - w / 2;
      y0 = cy - h / 2;
      x1 = cx + w / 2;
      y1 = cy + h / 2;
    }
    if (!map_box (g, x0, y0, x1, y1, &cd->box))
      continue;
    cd->box.score = best;
    cd->box.class_id = best_c;
    cd->box.track_id = -1;
    cd->box.anchor = (int) i;
    cd->index = i;
    n++;
  }
  *out = cands;
  return n;
}

enum npu_status
npu_detect_decode (const struct npu_detect_tensor *tensors, int n_tensors,
    const struct npu_detect_params *params,
    const struct npu_detect_geometry *geom, struct npu_detect_box *out,
    int cap, int *n_out, enum npu_detect_format *format_used,
    char *err, size_t err_len)
{
  enum npu_detect_format fmt;
  struct cand *cands = NULL;
  int64_t n, i;
  int kept = 0, limit, j;

  if (n_out)
    *n_out = 0;
  if (!tensors || n_tensors <= 0 || !params || !geom || !n_out || (cap > 0
          && !out))
    return fail (err, err_len, "no output tensors to decode");
  if (!(geom->model_w > 0) || !(geom->model_h > 0) || !(geom->frame_w > 0) ||
      !(geom->frame_h > 0) || !(geom->input_w > 0) || !(geom->input_h > 0))
    return fail (err, err_len,
        "model region %gx%g or frame region %gx%g is empty",
        (double) geom->model_w, (double) geom->model_h, (double) geom->frame_w,
        (double) geom->frame_h);
  if (!(params->iou_threshold >= 0.0f) || params->max_detections < 1)
    return fail (err, err_len, "bad iou threshold or max detections");

  fmt =
      params->format == NPU_DETECT_FORMAT_AUTO ? pick_format (tensors,
      n_tensors)
      : params->format;
  if (format_used)
    *format_used = fmt;
  n = collect (tensors, n_tensors, fmt, params, geom, &cands, err, err_len);
  if (n < 0)
    return NPU_ERR_INVALID;
  qsort (cands, (size_t) n, sizeof (*cands), cand_cmp);
  if (n > MAX_NMS_CANDIDATES)
    n = MAX_NMS_CANDIDATES;

  limit = params->max_detections < cap ? params->max_detections : cap;
  for (i = 0; i < n && kept < limit; i++) {
    int suppressed = 0;

    for (j = 0; j < kept && !suppressed; j++) {
      if (!params->class_agnostic && out[j].class_id != cands[i].box.class_id)
        continue;
      if (npu_detect_iou (&out[j], &cands[i].box) > params->iou_threshold)
        suppressed = 1;
    }
    if (!suppressed)
      out[kept++] = cands[i].box;
  }
  free (cands);
  *n_out = kept;
  return NPU_OK;
}

/* ---- YOLOv8-seg masks ------------------------------------------------------- */

enum npu_status
npu_detect_seg_mask (const struct npu_detect_tensor *tensors, int n_tensors,
    const struct npu_detect_box *box, const struct npu_detect_geometry *g,
    int x, int y, int w, int h, uint8_t * mask, char *err, size_t err_len)
{
  const struct npu_detect_tensor *o, *p;
  int64_t nc, nm, n_anchors, mh, mw, k, a;
  int oi, pi, rx0, ry0, rx1, ry1, r, q, fx, fy;
  float cx, cy, bw, bh, px0, py0, px1, py1, coef[256];
  float sx, sy, *win = NULL;
  size_t plane;

  if (!tensors || !box || !g || !mask || w < 0 || h < 0)
    return fail (err, err_len, "no mask to compute");
  if (!seg_layout (tensors, n_tensors, &oi, &pi, &nc, &nm, &n_anchors, &mh,
          &mw, err, err_len))
    return NPU_ERR_INVALID;
  if (nm > 256)
    return fail (err, err_len,
        "yolov8-seg: %lld mask coefficients, at most 256", (long long) nm);
  if (box->anchor < 0 || box->anchor >= n_anchors)
    return fail (err, err_len, "yolov8-seg: anchor %d outside the %lld anchors",
        box->anchor, (long long) n_anchors);
  if (!(g->model_w > 0) || !(g->model_h > 0) || !(g->frame_w > 0)
      || !(g->frame_h > 0) || !(g->input_w > 0) || !(g->input_h > 0))
    return fail (err, err_len, "model region or frame region is empty");
  if ((size_t) w * (size_t) h == 0)
    return NPU_OK;
  o = &tensors[oi];
  p = &tensors[pi];
  a = box->anchor;
  for (k = 0; k < nm; k++)
    coef[k] = o->data[(4 + nc + k) * n_anchors + a];
  /* the box in model input pixels, then in protos pixels (crop_mask keeps
   * the protos pixels r with x0 <= r < x1) */
  cx = o->data[a];
  cy = o->data[n_anchors + a];
  bw = o->data[2 * n_anchors + a];
  bh = o->data[3 * n_anchors + a];
  sx = (float) mw / g->input_w;
  sy = (float) mh / g->input_h;
  px0 = (cx - bw / 2) * sx;
  px1 = (cx + bw / 2) * sx;
  py0 = (cy - bh / 2) * sy;
  py1 = (cy + bh / 2) * sy;
  memset (mask, 0, (size_t) w * (size_t) h);
  if (!(px1 > px0) || !(py1 > py0) || !isfinite (px0 + px1 + py0 + py1))
    return NPU_OK;
  rx0 = (int) fmaxf (ceilf (px0), 0.0f);
  ry0 = (int) fmaxf (ceilf (py0), 0.0f);
  rx1 = (int) fminf (ceilf (px1), (float) mw);  /* exclusive */
  ry1 = (int) fminf (ceilf (py1), (float) mh);
  if (rx1 <= rx0 || ry1 <= ry0)
    return NPU_OK;
  /* sigmoid(coef . protos) on the protos pixels inside the box */
  win = malloc (sizeof (float) * (size_t) (rx1 - rx0) * (size_t) (ry1 - ry0));
  if (!win)
    return fail (err, err_len, "out of memory for a %dx%d mask", rx1 - rx0,
        ry1 - ry0);
  plane = (size_t) mh *(size_t) mw;
  for (r = ry0; r < ry1; r++)
    for (q = rx0; q < rx1; q++) {
      double acc = 0.0;

      for (k = 0; k < nm; k++)
        acc += (double) coef[k] * p->data[(size_t) k * plane + (size_t) r *
            (size_t) mw + (size_t) q];
      win[(size_t) (r - ry0) * (size_t) (rx1 - rx0) + (size_t) (q - rx0)] =
          (float) (1.0 / (1.0 + exp (-acc)));
    }
  /* each frame pixel: its centre in the model input, then in the protos
   * (align_corners=False: pixel i's centre is at i + 0.5), bilinear with
   * the edges clamped, zero outside the box */
  for (fy = 0; fy < h; fy++) {
    float v = g->model_y + ((float) (y + fy) + 0.5f - g->frame_y) * g->model_h
        / g->frame_h;
    float pv = v * sy - 0.5f;
    int r0 = (int) floorf (pv);
    float ty = pv - (float) r0;

    for (fx = 0; fx < w; fx++) {
      float u = g->model_x + ((float) (x + fx) + 0.5f - g->frame_x) *
          g->model_w / g->frame_w;
      float pu = u * sx - 0.5f;
      int q0 = (int) floorf (pu);
      float tx = pu - (float) q0, val = 0.0f;
      int dy, dx;

      for (dy = 0; dy < 2; dy++)
        for (dx = 0; dx < 2; dx++) {
          int rr = r0 + dy, qq = q0 + dx;
          float wgt = (dy ? ty : 1.0f - ty) * (dx ? tx : 1.0f - tx), m = 0.0f;

          rr = rr < 0 ? 0 : rr >= mh ? (int) mh - 1 : rr;
          qq = qq < 0 ? 0 : qq >= mw ? (int) mw - 1 : qq;
          if (rr >= ry0 && rr < ry1 && qq >= rx0 && qq < rx1)
            m = win[(size_t) (rr - ry0) * (size_t) (rx1 - rx0) +
                (size_t) (qq - rx0)];
          val += wgt * m;
        }
      if (val > 0.5f)
        mask[(size_t) fy * (size_t) w + (size_t) fx] = 255;
    }
  }
  free (win);
  return NPU_OK;
}

/* ---- IoU tracker ---------------------------------------------------------- */

void
npu_iou_tracker_init (struct npu_iou_tracker *t, float iou_threshold,
    int max_age, int class_agnostic)
{
  memset (t, 0, sizeof (*t));
  t->next_id = 1;
  t->iou_threshold = iou_threshold;
  t->max_age = max_age;
  t->class_agnostic = class_agnostic;
}

void
npu_iou_tracker_clear (struct npu_iou_tracker *t)
{
  free (t->tracks);
  t->tracks = NULL;
  t->n_tracks = t->cap_tracks = 0;
}

enum npu_status
npu_iou_tracker_update (struct npu_iou_tracker *t, struct npu_detect_box *boxes,
    int n)
{
  char *used = NULL;
  int i, k, n_old = t->n_tracks;

  if (n < 0 || (n > 0 && !boxes))
    return NPU_ERR_INVALID;
  if (n_old > 0) {
    used = calloc ((size_t) n_old, 1);
    if (!used)
      return NPU_ERR_NOMEM;
  }
  /* greedy: boxes best first (the decoder's order), each takes the free
   * track it overlaps most */
  for (i = 0; i < n; i++) {
    float best = t->iou_threshold;
    int best_k = -1;

    boxes[i].track_id = -1;
    for (k = 0; k < n_old; k++) {
      float iou;

      if (used[k] ||
          (!t->class_agnostic
              && t->tracks[k].box.class_id != boxes[i].class_id))
        continue;
      iou = npu_detect_iou (&t->tracks[k].box, &boxes[i]);
      if (iou >= best) {
        best = iou;
        best_k = k;
      }
    }
    if (best_k >= 0) {
      used[best_k] = 1;
      boxes[i].track_id = t->tracks[best_k].id;
      t->tracks[best_k].box = boxes[i];
      t->tracks[best_k].age = 0;
    }
  }
  /* age the unmatched tracks, drop the old ones */
  k = 0;
  for (i = 0; i < n_old; i++) {
    if (!used[i] && ++t->tracks[i].age > t->max_age)
      continue;
    t->tracks[k++] = t->tracks[i];
  }
  t->n_tracks = k;
  free (used);
  /* new tracks for the unmatched boxes */
  for (i = 0; i < n; i++) {
    if (boxes[i].track_id >= 0)
      continue;
    if (t->n_tracks == t->cap_tracks) {
      int nc = t->cap_tracks ? 2 * t->cap_tracks : 16;
      struct npu_iou_track *nt =
          realloc (t->tracks, sizeof (*nt) * (size_t) nc);

      if (!nt)
        return NPU_ERR_NOMEM;
      t->tracks = nt;
      t->cap_tracks = nc;
    }
    boxes[i].track_id = t->next_id++;
    t->tracks[t->n_tracks].box = boxes[i];
    t->tracks[t->n_tracks].id = boxes[i].track_id;
    t->tracks[t->n_tracks].age = 0;
    t->n_tracks++;
  }
  return NPU_OK;
}

/* ---- classification -------------------------------------------------------- */

enum npu_status
npu_classify_topk (const float *logits, int n, enum npu_classify_score fn,
    int k, int *top_ids, float *top_scores, int *n_top, char *err,
    size_t err_len)
{
  double *s, mx = -INFINITY, sum = 0.0;
  int i, j;

  if (n_top)
    *n_top = 0;
  if (!logits || n <= 0 || k <= 0 || !top_ids || !top_scores || !n_top)
    return fail (err, err_len, "no classes to score");
  for (i = 0; i < n; i++)
    if (isnan (logits[i]))
      return fail (err, err_len, "class %d's value is NaN", i);
  s = malloc (sizeof (*s) * (size_t) n);
  if (!s)
    return fail (err, err_len, "out of memory for %d classes", n);
  for (i = 0; i < n; i++)
    mx = fmax (mx, logits[i]);
  for (i = 0; i < n; i++) {
    switch (fn) {
      case NPU_CLASSIFY_SCORE_SOFTMAX:
        /* an infinite maximum: the infinite classes share the mass */
        s[i] =
            isinf (mx) ? (logits[i] ==
            mx ? 1.0 : 0.0) : exp ((double) logits[i] - mx);
        sum += s[i];
        break;
      case NPU_CLASSIFY_SCORE_SIGMOID:
        s[i] = 1.0 / (1.0 + exp (-(double) logits[i]));
        break;
      default:
        s[i] = logits[i];
        break;
    }
  }
  if (fn == NPU_CLASSIFY_SCORE_SOFTMAX)
    for (i = 0; i < n; i++)
      s[i] /= sum;
  if (k > n)
    k = n;
  /* selection of the k best: k is small (top-5) */
  for (j = 0; j < k; j++) {
    int best = -1;

    for (i = 0; i < n; i++) {
      int taken = 0, m;

      for (m = 0; m < j && !taken; m++)
        taken = top_ids[m] == i;
      if (!taken && (best < 0 || s[i] > s[best]))
        best = i;
    }
    top_ids[j] = best;
    top_scores[j] = (float) s[best];
  }
  free (s);
  *n_top = k;
  return NPU_OK;
}
