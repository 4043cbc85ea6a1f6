/* SPDX-License-Identifier: MIT */
/*
 * test-npuplaybin.c: the elements inside a media player. A short Theora/Ogg
 * file is made at test time with videotestsrc (no media is checked in),
 * then played with `playbin video-filter="npuinfer ..."` (and npuembed) into
 * a fakesink that checks every frame for the metadata.
 */
#include <glib/gstdio.h>

#include "npu-gst-test.h"

#define N_FRAMES 24

static gboolean
run_until_eos (GstElement * pipeline, gchar ** error)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg;
  gboolean ok = FALSE;

  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    *error = g_strdup ("could not start");
  }
  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (!msg) {
    if (!*error)
      *error = g_strdup ("timed out");
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;
    gchar *dbg = NULL;

    gst_message_parse_error (msg, &err, &dbg);
    g_free (*error);
    *error = g_strdup_printf ("%s (%s)", err->message, dbg ? dbg : "");
    g_clear_error (&err);
    g_free (dbg);
  } else {
    ok = TRUE;
  }
  if (msg)
    gst_message_unref (msg);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  return ok;
}

static gchar *
make_clip (void)
{
  gchar *dir = g_dir_make_tmp ("npuplaybin-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "clip.ogg", NULL);
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball ! "
      "video/x-raw,format=I420,width=64,height=48,framerate=24/1 ! "
      "theoraenc ! oggmux ! filesink location=%s", N_FRAMES, path);
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  gchar *error = NULL;

  fail_unless (p != NULL, "cannot build the encoder pipeline: %s",
      err ? err->message : "?");
  fail_unless (run_until_eos (p, &error), "encoding failed: %s", error);
  gst_object_unref (p);
  g_free (desc);
  g_free (dir);
  return path;
}

static void
remove_clip (gchar * path)
{
  gchar *dir = g_path_get_dirname (path);

  g_unlink (path);
  g_rmdir (dir);
  g_free (dir);
  g_free (path);
}

typedef struct
{
  guint frames, with_meta;
  gboolean embed;
} Count;

static void
on_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad, gpointer user)
{
  Count *c = user;

  c->frames++;
  if (c->embed ? gst_buffer_get_npu_embedding_meta (buf) != NULL :
      gst_buffer_get_npu_tensor_meta (buf) != NULL)
    c->with_meta++;
}

static void
play_with_filter (const gchar * clip, const gchar * filter, gboolean embed)
{
  GstElement *playbin = gst_element_factory_make ("playbin", NULL);
  GstElement *vsink = gst_element_factory_make ("fakesink", NULL);
  GstElement *asink = gst_element_factory_make ("fakesink", NULL);
  GstElement *vf;
  GError *err = NULL;
  gchar *uri = gst_filename_to_uri (clip, NULL), *error = NULL;
  Count c = { 0, 0, embed };

  fail_unless (playbin && vsink && asink);
  vf = gst_parse_bin_from_description (filter, TRUE, &err);
  fail_unless (vf != NULL, "%s", err ? err->message : "?");
  g_object_set (vsink, "signal-handoffs", TRUE, "sync", FALSE, NULL);
  g_signal_connect (vsink, "handoff", G_CALLBACK (on_handoff), &c);
  g_object_set (playbin, "uri", uri, "video-filter", vf, "video-sink", vsink,
      "audio-sink", asink, NULL);
  fail_unless (run_until_eos (playbin, &error), "playback failed: %s", error);
  fail_unless_equals_int (c.frames, N_FRAMES);
  fail_unless_equals_int (c.with_meta, N_FRAMES);
  gst_object_unref (playbin);
  g_free (uri);
}

GST_START_TEST (test_playbin_video_filter)
{
  gchar *clip;

  if (!gst_registry_check_feature_version (gst_registry_get (), "theoraenc",
          1, 0, 0)
      || !gst_registry_check_feature_version (gst_registry_get (), "playbin",
          1, 0, 0)) {
    /* setup.sh installs them; say so loudly rather than pass silently */
    fail ("theoraenc/playbin not available: install gstreamer1.0-plugins-base");
  }
  clip = make_clip ();
  play_with_filter (clip,
      "npuinfer backend=cpu model=" MODEL ("image_f32.onnx"), FALSE);
  play_with_filter (clip, "npuembed backend=cpu cores=3 model=" SIGLIP_TINY,
      TRUE);
  remove_clip (clip);
}

GST_END_TEST;

static Suite *
npuplaybin_suite (void)
{
  Suite *s = suite_create ("npuplaybin");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 180);
  tcase_add_test (tc, test_playbin_video_filter);
  return s;
}

GST_CHECK_MAIN (npuplaybin);
