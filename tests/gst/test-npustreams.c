/* SPDX-License-Identifier: MIT */
/*
 * test-npustreams.c: several streams in one process. Four npuinfer
 * instances on the sim backend, each fed by its own thread, share the NPU
 * device's core scheduler (gst/gstnpusched.c): the checks are that every
 * instance's device-core-jobs counts the frames of all four (one scheduler
 * for the device, not one per instance), that no core is starved, and that
 * every stream's outputs are its own frames, in order. How evenly racing
 * threads split the frames depends on the host's scheduling (a thread
 * preempted with a frame in flight keeps its core busy, and the others take
 * more), so the fair share is checked where it is exact: the four instances
 * fed in turn, one frame at a time, go round robin over the three cores.
 */
#include "npu-gst-test.h"

#define N_STREAMS 4
/* 31 frames per stream, 124 in all. */
#define N_FRAMES 31

#define INFER_DESC "npuinfer backend=sim normalization=scale-offset " \
  "scale=<1,1,1> offset=<0,0,0> model=" MODEL ("image_f32.onnx")

static void
px_const (gint x, gint y, guint8 rgb[3], gpointer user)
{
  memcpy (rgb, user, 3);
}

/* The grey level of frame @i of stream @s. */
static guint8
frame_value (guint s, guint i)
{
  return (guint8) ((s * 61 + i * 7) % 256);
}

typedef struct
{
  GstHarness *h;
  guint stream;
  gfloat got[N_FRAMES];         /* first "pixels" value of each output */
  GstClockTime pts[N_FRAMES];
  guint n_out;
} Stream;

static gpointer
stream_thread (gpointer data)
{
  Stream *st = data;
  guint i;

  for (i = 0; i < N_FRAMES; i++) {
    guint8 c[3];
    GstBuffer *in, *out;
    GstNpuTensorMeta *meta;
    const GstNpuTensor *t;

    c[0] = c[1] = c[2] = frame_value (st->stream, i);
    in = make_frame (GST_VIDEO_FORMAT_RGB, 4, 4, px_const, c);
    GST_BUFFER_PTS (in) = gst_util_uint64_scale (i, GST_SECOND, 30);
    out = gst_harness_push_and_pull (st->h, in);
    if (!out)
      break;
    st->pts[i] = GST_BUFFER_PTS (out);
    st->got[i] = -1.0f;
    meta = gst_buffer_get_npu_tensor_meta (out);
    t = meta ? gst_npu_tensor_meta_get_by_name (meta, "pixels") : NULL;
    if (t)
      st->got[i] = ((const gfloat *) gst_npu_tensor_get_data (t, NULL))[0];
    gst_buffer_unref (out);
    st->n_out++;
  }
  return NULL;
}

GST_START_TEST (test_four_streams_share_cores)
{
  Stream st[N_STREAMS];
  GThread *th[N_STREAMS];
  guint64 per_core[3] = { 0, 0, 0 }, total = 0;
  guint s, i, c;

  for (s = 0; s < N_STREAMS; s++) {
    memset (&st[s], 0, sizeof (st[s]));
    st[s].stream = s;
    st[s].h = gst_harness_new_parse (INFER_DESC);
    gst_harness_set_src_caps_str (st[s].h,
        "video/x-raw,format=RGB,width=4,height=4,framerate=30/1");
  }
  for (s = 0; s < N_STREAMS; s++)
    th[s] = g_thread_new ("stream", stream_thread, &st[s]);
  for (s = 0; s < N_STREAMS; s++)
    g_thread_join (th[s]);

  for (s = 0; s < N_STREAMS; s++) {
    GstElement *e = gst_harness_find_element (st[s].h, "npuinfer");

    fail_unless_equals_int (st[s].n_out, N_FRAMES);
    for (i = 0; i < N_FRAMES; i++) {
      fail_unless_equals_float (st[s].got[i], frame_value (s, i));
      fail_unless_equals_uint64 (st[s].pts[i],
          gst_util_uint64_scale (i, GST_SECOND, 30));
    }
    fail_unless_equals_uint64 (stats_get (e, "completed"), N_FRAMES);
    for (c = 0; c < 3; c++)
      per_core[c] += stats_core_jobs (e, c);
    gst_object_unref (e);
  }
  for (c = 0; c < 3; c++)
    total += per_core[c];
  fail_unless_equals_uint64 (total, N_STREAMS * N_FRAMES);
  for (c = 0; c < 3; c++) {
    /* The scheduler prefers the core with the fewest frames in flight, so
     * with four threads racing the split depends on timing (a load of 30
     * has given one core 57 of the 124); a core that is never busy for
     * long takes frames, so none may be starved. The exact fair share is
     * test_four_streams_round_robin's. */
    GST_INFO ("core %u: %" G_GUINT64_FORMAT " frames", c, per_core[c]);
    fail_unless (per_core[c] > 0, "core %u ran none of %" G_GUINT64_FORMAT
        " frames", c, total);
  }
  /* One scheduler for the device: every instance's stats see the frames of
   * all four (per-instance schedulers would each count only their own). */
  for (s = 0; s < N_STREAMS; s++) {
    GstElement *e = gst_harness_find_element (st[s].h, "npuinfer");
    GstStructure *stats = NULL;
    const GValue *dev;
    guint64 seen = 0;

    g_object_get (e, "stats", &stats, NULL);
    dev = gst_structure_get_value (stats, "device-core-jobs");
    fail_unless (dev && gst_value_array_get_size (dev) == 3);
    for (c = 0; c < 3; c++) {
      guint64 n = g_value_get_uint64 (gst_value_array_get_value (dev, c));

      fail_unless_equals_uint64 (n, per_core[c]);
      seen += n;
    }
    fail_unless_equals_uint64 (seen, total);
    gst_structure_free (stats);
    gst_object_unref (e);
  }
  for (s = 0; s < N_STREAMS; s++)
    gst_harness_teardown (st[s].h);
}

GST_END_TEST;

/* The four instances fed in turn, one frame at a time (each done before the
 * next is handed out): the device's one scheduler goes round robin over all
 * of them, so each core runs exactly a third of the frames, and every
 * instance's device-core-jobs says so (a scheduler that sends ties to one
 * core gives 24, 0, 0; schedulers per instance would each count 2, 2, 2). */
#define N_TURNS 6

GST_START_TEST (test_four_streams_round_robin)
{
  GstHarness *h[N_STREAMS];
  GstElement *e;
  guint s, i, c;

  for (s = 0; s < N_STREAMS; s++) {
    h[s] = gst_harness_new_parse (INFER_DESC);
    gst_harness_set_src_caps_str (h[s],
        "video/x-raw,format=RGB,width=4,height=4,framerate=30/1");
  }
  for (i = 0; i < N_TURNS; i++)
    for (s = 0; s < N_STREAMS; s++) {
      guint8 v[3];
      GstBuffer *out;

      v[0] = v[1] = v[2] = frame_value (s, i);
      out = gst_harness_push_and_pull (h[s],
          make_frame (GST_VIDEO_FORMAT_RGB, 4, 4, px_const, v));
      fail_unless (out != NULL);
      gst_buffer_unref (out);
    }
  for (s = 0; s < N_STREAMS; s++) {
    GstStructure *stats = NULL;
    const GValue *dev;

    e = gst_harness_find_element (h[s], "npuinfer");
    g_object_get (e, "stats", &stats, NULL);
    dev = gst_structure_get_value (stats, "device-core-jobs");
    fail_unless (dev && gst_value_array_get_size (dev) == 3);
    for (c = 0; c < 3; c++)
      fail_unless_equals_uint64 (g_value_get_uint64
          (gst_value_array_get_value (dev, c)), N_STREAMS * N_TURNS / 3);
    gst_structure_free (stats);
    gst_object_unref (e);
  }
  for (s = 0; s < N_STREAMS; s++)
    gst_harness_teardown (h[s]);
}

GST_END_TEST;

/* An instance restricted to cores 0 and 2 (cores=5) next to one on all
 * three: the restricted one only has those two slots, and the device's
 * scheduler gives the unrestricted one more of core 1, so that each core
 * runs 4 of the 12 frames (a shared cursor alone would give 6, 1, 5). */
GST_START_TEST (test_core_mask_respected)
{
  GstHarness *h[2];
  GstElement *e, *e1;
  guint s, i;

  h[0] = gst_harness_new_parse (INFER_DESC " cores=5");
  h[1] = gst_harness_new_parse (INFER_DESC);
  for (s = 0; s < 2; s++)
    gst_harness_set_src_caps_str (h[s],
        "video/x-raw,format=RGB,width=4,height=4,framerate=30/1");
  for (i = 0; i < 6; i++)
    for (s = 0; s < 2; s++) {
      guint8 c[3] = { 1, 2, 3 };
      GstBuffer *out = gst_harness_push_and_pull (h[s],
          make_frame (GST_VIDEO_FORMAT_RGB, 4, 4, px_const, c));

      fail_unless (out != NULL);
      gst_buffer_unref (out);
    }
  /* cores=5: two slots, on cores 0 and 2 */
  e = gst_harness_find_element (h[0], "npuinfer");
  e1 = gst_harness_find_element (h[1], "npuinfer");
  fail_unless_equals_uint64 (stats_core_jobs (e, 0) + stats_core_jobs (e, 1),
      6);
  fail_unless_equals_uint64 (stats_core_jobs (e, 0) + stats_core_jobs (e1, 0),
      4);
  fail_unless_equals_uint64 (stats_core_jobs (e1, 1), 4);
  fail_unless_equals_uint64 (stats_core_jobs (e, 1) + stats_core_jobs (e1, 2),
      4);
  gst_object_unref (e);
  gst_object_unref (e1);
  for (s = 0; s < 2; s++)
    gst_harness_teardown (h[s]);
}

GST_END_TEST;

static Suite *
npustreams_suite (void)
{
  Suite *s = suite_create ("npustreams");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_four_streams_share_cores);
  tcase_add_test (tc, test_four_streams_round_robin);
  tcase_add_test (tc, test_core_mask_respected);
  return s;
}

GST_CHECK_MAIN (npustreams);
