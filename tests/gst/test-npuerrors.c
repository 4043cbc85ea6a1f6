/* SPDX-License-Identifier: MIT */
/*
 * test-npuerrors.c: every way npuinfer / npuembed can fail posts one
 * GST_ELEMENT_ERROR in the documented domain with a message naming the
 * cause, and leaves the element usable (it goes NULL -> READY -> NULL again).
 * Leaks on these paths are caught by the leaks tracer and, in the sanitizer
 * build, by LeakSanitizer.
 */
#include <glib/gstdio.h>

#include "npu-gst-test.h"
#include "npu/npu-device.h"
#include "npu/npu-npy.h"
#include "../artifact/npub-rehash.h"

/* Builds @factory with the NULL-terminated name/value string pairs, takes it
 * to PAUSED, expects the state change to fail with one error of @domain
 * (and @code unless -1) whose message or debug text contains @needle. */
static void
expect_start_error (const gchar * factory, GQuark domain, gint code,
    const gchar * needle, ...)
{
  GstElement *e = gst_element_factory_make (factory, NULL);
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  gchar *dbg = NULL;
  const gchar *name;
  va_list ap;
  gint i;

  fail_unless (e != NULL);
  va_start (ap, needle);
  while ((name = va_arg (ap, const gchar *)))
  {
    const gchar *value = va_arg (ap, const gchar *);

    gst_util_set_object_arg (G_OBJECT (e), name, value);
  }
  va_end (ap);

  gst_element_set_bus (e, bus);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error message");
  gst_message_parse_error (msg, &err, &dbg);
  GST_INFO ("error: %s (%s)", err->message, dbg ? dbg : "");
  fail_unless (err->domain == domain, "domain %s, want %s: %s",
      g_quark_to_string (err->domain), g_quark_to_string (domain),
      err->message);
  if (code >= 0)
    fail_unless_equals_int (err->code, code);
  fail_unless (strstr (err->message, needle) || (dbg && strstr (dbg, needle)),
      "\"%s\" not in \"%s\" / \"%s\"", needle, err->message, dbg);
  g_clear_error (&err);
  g_free (dbg);
  gst_message_unref (msg);
  /* exactly one error */
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg == NULL);

  /* still usable */
  for (i = 0; i < 2; i++) {
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
        GST_STATE_CHANGE_SUCCESS);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_NULL),
        GST_STATE_CHANGE_SUCCESS);
  }
  gst_bus_set_flushing (bus, TRUE);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}

/* A model that is not set, missing, a folder, corrupt or not an image model;
 * a backend whose device is absent. */
GST_START_TEST (test_model_errors)
{
  expect_start_error ("npuinfer", GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_NOT_FOUND, "model", NULL);
  expect_start_error ("npuinfer", GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_NOT_FOUND, "does not exist",
      "model", TEST_MODELS_DIR "/no-such-model.onnx", NULL);
  expect_start_error ("npuembed", GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_OPEN_READ, "not a regular file",
      "model", TEST_MODELS_DIR, NULL);
  expect_start_error ("npuinfer", GST_LIBRARY_ERROR, -1, "corrupt.onnx",
      "model", MODEL ("corrupt.onnx"), "backend", "cpu", NULL);
  /* through the compiler (NPU path) as well */
  expect_start_error ("npuembed", GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT,
      "corrupt.onnx", "model", MODEL ("corrupt.onnx"), "backend", "sim", NULL);
  expect_start_error ("npuinfer", GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS, "2 inputs",
      "model", MODEL ("two_inputs.onnx"), "backend", "cpu", NULL);
  expect_start_error ("npuinfer", GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS, "[1,16]",
      "model", MODEL ("vector_input.onnx"), "backend", "cpu", NULL);
  /* Where a device backend cannot open (no NPU on the test machine), the
   * model load fails and the element reports it. The domain follows the
   * status the model library gives (asked directly here): RESOURCE for a
   * missing or inaccessible device, LIBRARY for other refusals. Backends
   * that do open (a board, or the kernel double of tests/kdouble) are
   * skipped: there is nothing to refuse. */
  {
    const gchar *backends[] = { "rknpu", "rocket" };
    guint i;

    for (i = 0; i < G_N_ELEMENTS (backends); i++) {
      struct npu_model_options o = { 0 };
      struct npu_model *m = NULL;
      struct npu_device *dev = NULL;
      enum npu_status st;

      if (npu_device_open (backends[i], &dev) == NPU_OK) {
        npu_device_close (dev);
        continue;
      }
      o.backend = backends[i];
      st = npu_model_load (MODEL ("image_f32.onnx"), &o, &m);
      fail_unless (st != NPU_OK && m == NULL,
          "backend %s opened on a machine without an NPU", backends[i]);
      expect_start_error ("npuinfer", st == NPU_ERR_NO_DEVICE
          || st == NPU_ERR_PERMISSION || st == NPU_ERR_BUSY ?
          GST_RESOURCE_ERROR : GST_LIBRARY_ERROR, -1, backends[i],
          "model", MODEL ("image_f32.onnx"), "backend", backends[i], NULL);
    }
  }
}

GST_END_TEST;

/* A damaged copy of image_meta.npub (made by npuc, with a PROPS section)
 * written to @dir/@name: @edit(bytes, len, props offset, strings size) then
 * the checksums recomputed unless @keep_hashes. */
typedef void (*NpubEdit) (guint8 * b, gsize len, guint64 props, guint64 pool);

static gchar *
damaged_npub (const gchar * dir, const gchar * name, NpubEdit edit,
    gboolean keep_hashes)
{
  gchar *path = g_build_filename (dir, name, NULL), *data = NULL;
  gsize len = 0;
  guint64 psize = 0, ssize = 0, props, pool;

  fail_unless (g_file_get_contents (MODEL ("image_meta.npub"), &data, &len,
          NULL));
  props = npub_section ((guint8 *) data, len, SEC_PROPS, &psize);
  pool = npub_section ((guint8 *) data, len, SEC_STRINGS, &ssize);
  fail_unless (props && psize == 5 * PROP_BYTES && pool);
  edit ((guint8 *) data, len, props, ssize);
  if (!keep_hashes)
    npub_rehash ((guint8 *) data, len, 0);
  fail_unless (g_file_set_contents (path, data, len, NULL));
  g_free (data);
  return path;
}

static void
edit_key_outside (guint8 * b, gsize len, guint64 props, guint64 pool)
{
  put32 (b + props + PR_KEY, (guint32) pool);
}

static void
edit_key_repeated (guint8 * b, gsize len, guint64 props, guint64 pool)
{
  put32 (b + props + PROP_BYTES + PR_KEY, get32 (b + props + PR_KEY));
}

static void
edit_format (guint8 * b, gsize len, guint64 props, guint64 pool)
{
  put32 (b + H_FORMAT, 9);
}

static void
edit_value_bit (guint8 * b, gsize len, guint64 props, guint64 pool)
{
  b[props + PR_VALUE] ^= 0x10;
}

/* Artifacts: a metadata section whose records are wrong (checksums made to
 * fit, so the record checks are what refuses it), a damaged byte caught by
 * the checksums, a format from the future, and an .npub on the cpu backend
 * (which runs only .onnx). */
GST_START_TEST (test_npub_errors)
{
  gchar *dir = g_dir_make_tmp ("npuinfer-npub-XXXXXX", NULL);
  gchar *outside = damaged_npub (dir, "outside.npub", edit_key_outside, FALSE);
  gchar *repeated = damaged_npub (dir, "repeated.npub", edit_key_repeated,
      FALSE);
  gchar *future = damaged_npub (dir, "future.npub", edit_format, FALSE);
  gchar *bit = damaged_npub (dir, "bit.npub", edit_value_bit, TRUE);

  expect_start_error ("npuinfer", GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT,
      "metadata entry 0: string reference",
      "model", outside, "backend", "sim", NULL);
  expect_start_error ("npuembed", GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT,
      "metadata entries 0 and 1 have the same key 'opennpu.mean'",
      "model", repeated, "backend", "sim", NULL);
  expect_start_error ("npuinfer", GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT,
      "format version 9", "model", future, "backend", "sim", NULL);
  expect_start_error ("npuinfer", GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT,
      "checksum", "model", bit, "backend", "sim", NULL);
  expect_start_error ("npuinfer", GST_LIBRARY_ERROR, -1, "not on cpu",
      "model", MODEL ("image_meta.npub"), "backend", "cpu", NULL);

  g_unlink (outside);
  g_unlink (repeated);
  g_unlink (future);
  g_unlink (bit);
  g_rmdir (dir);
  g_free (outside);
  g_free (repeated);
  g_free (future);
  g_free (bit);
  g_free (dir);
}

GST_END_TEST;

/* npuembed's own settings: a missing output, missing or mismatched label
 * files. */
GST_START_TEST (test_embed_setting_errors)
{
  gchar *dir = g_dir_make_tmp ("npuembed-XXXXXX", NULL);
  gchar *labels = g_build_filename (dir, "labels.txt", NULL);
  gchar *npy = g_build_filename (dir, "labels.npy", NULL);
  gchar *bad = g_build_filename (dir, "bad.npy", NULL);
  gfloat data[3 * 64] = { 0 };
  struct npu_tensor t = { 0 };

  fail_unless (g_file_set_contents (labels, "a\nb\nc\n", -1, NULL));
  t.dtype = NPU_DTYPE_FP32;
  t.ndim = 2;
  t.dims[0] = 3;
  t.dims[1] = 64;
  t.data = data;
  fail_unless_equals_int (npu_npy_write (npy, &t), NPU_OK);
  t.dims[1] = 32;               /* wrong embedding size */
  fail_unless_equals_int (npu_npy_write (bad, &t), NPU_OK);

  expect_start_error ("npuembed", GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS, "no-such-output",
      "model", SIGLIP_TINY, "backend", "cpu", "output-name", "no-such-output",
      NULL);
  expect_start_error ("npuembed", GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_NOT_FOUND, "missing.txt",
      "model", SIGLIP_TINY, "backend", "cpu",
      "labels-file", TEST_MODELS_DIR "/missing.txt", NULL);
  expect_start_error ("npuembed", GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_SETTINGS, "[3, 64]",
      "model", SIGLIP_TINY, "backend", "cpu", "labels-file", labels,
      "label-embeddings", bad, NULL);
  expect_start_error ("npuembed", GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_SETTINGS, "labels-file",
      "model", SIGLIP_TINY, "backend", "cpu", "label-embeddings", npy, NULL);
  /* a std of 0 (it divides) and a two-number mean refuse to start
   * (issue 17: they were replaced by 1 / ignored with a debug warning) */
  expect_start_error ("npuembed", GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS, "std <0, 0, 0> has a zero value",
      "model", SIGLIP_TINY, "backend", "cpu", "std", "<0,0,0>", NULL);
  expect_start_error ("npuinfer", GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS, "std <0.5, 0, 0.5> has a zero value",
      "model", SIGLIP_TINY, "backend", "cpu", "std", "<0.5,0,0.5>", NULL);
  expect_start_error ("npuembed", GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS, "mean needs 1 or 3 numbers, got 2",
      "model", SIGLIP_TINY, "backend", "cpu", "mean", "<0.5,0.5>", NULL);

  g_unlink (labels);
  g_unlink (npy);
  g_unlink (bad);
  g_rmdir (dir);
  g_free (labels);
  g_free (npy);
  g_free (bad);
  g_free (dir);
}

GST_END_TEST;

/* The first error message on @bus within 10 s. */
static void
expect_bus_error (GstBus * bus, GQuark domain, gint code, const gchar * needle)
{
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND,
      GST_MESSAGE_ERROR);
  GError *err = NULL;
  gchar *dbg = NULL;

  fail_unless (msg != NULL, "no error posted");
  gst_message_parse_error (msg, &err, &dbg);
  fail_unless (err->domain == domain, "domain %s: %s",
      g_quark_to_string (err->domain), err->message);
  if (code >= 0)
    fail_unless_equals_int (err->code, code);
  fail_unless (strstr (err->message, needle) || (dbg && strstr (dbg, needle)),
      "\"%s\" not in \"%s\" / \"%s\"", needle, err->message, dbg);
  g_clear_error (&err);
  g_free (dbg);
  gst_message_unref (msg);
}

static GstHarness *
harness_with_bus (const gchar * desc, GstBus ** bus)
{
  GstHarness *h = gst_harness_new_parse (desc);

  *bus = gst_bus_new ();
  gst_element_set_bus (h->element, *bus);
  return h;
}

static void
harness_teardown_with_bus (GstHarness * h, GstBus * bus)
{
  gst_bus_set_flushing (bus, TRUE);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

/* Caps the element does not support are refused at negotiation (the core
 * then fails the push with NOT_NEGOTIATED before the element sees data); a
 * buffer that reaches the element without any caps gets NOT_NEGOTIATED and a
 * CORE/NEGOTIATION error. */
GST_START_TEST (test_unsupported_caps)
{
  GstBus *bus;
  GstHarness *h = harness_with_bus ("npuinfer backend=cpu model="
      MODEL ("image_f32.onnx"), &bus);
  GstCaps *caps = gst_caps_from_string ("video/x-raw,format=GRAY16_LE,"
      "width=4,height=4,framerate=30/1");
  GstElement *e = harness_npu_element (h);
  GstPad *sink = gst_element_get_static_pad (e, "sink");

  fail_if (gst_pad_query_accept_caps (sink, caps));
  /* (the harness stores the refused sticky caps on its own pad) */
  gst_harness_set_src_caps (h, caps);
  fail_unless_equals_int (gst_harness_push (h,
          gst_buffer_new_allocate (NULL, 32, NULL)), GST_FLOW_NOT_NEGOTIATED);
  gst_object_unref (sink);
  gst_object_unref (e);
  harness_teardown_with_bus (h, bus);

  /* data without caps: only a broken upstream does that, so feed the sink
   * pad directly */
  h = harness_with_bus ("npuinfer backend=cpu model="
      MODEL ("image_f32.onnx"), &bus);
  e = harness_npu_element (h);
  sink = gst_element_get_static_pad (e, "sink");
  {
    GstSegment seg;

    gst_segment_init (&seg, GST_FORMAT_TIME);
    fail_unless (gst_pad_send_event (sink,
            gst_event_new_stream_start ("no-caps")));
    fail_unless (gst_pad_send_event (sink, gst_event_new_segment (&seg)));
  }
  fail_unless_equals_int (gst_pad_chain (sink, gst_buffer_new_allocate (NULL,
              32, NULL)), GST_FLOW_NOT_NEGOTIATED);
  gst_object_unref (sink);
  gst_object_unref (e);
  expect_bus_error (bus, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION, "caps");
  harness_teardown_with_bus (h, bus);
}

GST_END_TEST;

/* A job that does not finish within `timeout` ms fails the stream with
 * STREAM/FAILED naming the frame and core; later pushes get ERROR; the
 * element still shuts down promptly. */
GST_START_TEST (test_job_timeout)
{
  GstBus *bus;
  GstHarness *h;
  GstBuffer *b;
  gint64 t0;

  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "5000000", TRUE);
  h = harness_with_bus ("npuinfer backend=cpu timeout=100 model="
      MODEL ("image_f32.onnx"), &bus);
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=4,height=4,"
      "framerate=30/1");
  b = gst_buffer_new_allocate (NULL, 4 * 4 * 3 + 4 * 3, NULL);
  gst_buffer_memset (b, 0, 0, gst_buffer_get_size (b));
  fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
  expect_bus_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
      "timed out");
  b = gst_buffer_new_allocate (NULL, 4 * 4 * 3 + 4 * 3, NULL);
  fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_ERROR);

  t0 = g_get_monotonic_time ();
  harness_teardown_with_bus (h, bus);
  /* the injected 5 s wait is interrupted by the shutdown */
  fail_unless (g_get_monotonic_time () - t0 < 2 * G_USEC_PER_SEC);
}

GST_END_TEST;

/* The device failing (NPU_SIM_FAULT: the simulator backend's first submit
 * fails as a driver error would): the frame fails the stream with an error
 * naming it; a new start of the element runs again and outputs the frame. */
GST_START_TEST (test_device_fault)
{
  GstBus *bus;
  GstHarness *h;
  GstBuffer *b;
  gint round;

  g_setenv ("NPU_PARTITION", "supported", TRUE);
  for (round = 0; round < 2; round++) {
    if (round == 0)
      g_setenv ("NPU_SIM_FAULT", "submit:1", TRUE);
    else
      g_unsetenv ("NPU_SIM_FAULT");
    h = harness_with_bus ("npuinfer backend=sim model=" SIGLIP_TINY, &bus);
    gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=8,"
        "height=8,framerate=30/1");
    b = gst_buffer_new_allocate (NULL, 8 * 8 * 3, NULL);
    gst_buffer_memset (b, 0, 0x40, gst_buffer_get_size (b));
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    if (round == 0) {
      expect_bus_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
          "i/o error");
    } else {
      b = gst_harness_pull (h);
      fail_unless (b != NULL);
      gst_buffer_unref (b);
    }
    harness_teardown_with_bus (h, bus);
  }
  g_unsetenv ("NPU_PARTITION");
}

GST_END_TEST;

/* A buffer smaller than its caps say fails the frame with a STREAM error
 * instead of reading past its end. */
GST_START_TEST (test_short_buffer)
{
  GstBus *bus;
  GstHarness *h = harness_with_bus ("npuinfer backend=cpu model="
      MODEL ("image_f32.onnx"), &bus);

  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=64,"
      "height=64,framerate=30/1");
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_allocate (NULL,
              10, NULL)), GST_FLOW_OK);
  expect_bus_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
      "smaller than the caps");
  harness_teardown_with_bus (h, bus);
}

GST_END_TEST;

static Suite *
npuerrors_suite (void)
{
  Suite *s = suite_create ("npuerrors");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_model_errors);
  tcase_add_test (tc, test_npub_errors);
  tcase_add_test (tc, test_embed_setting_errors);
  tcase_add_test (tc, test_unsupported_caps);
  tcase_add_test (tc, test_job_timeout);
  tcase_add_test (tc, test_short_buffer);
  tcase_add_test (tc, test_device_fault);
  return s;
}

GST_CHECK_MAIN (npuerrors);
