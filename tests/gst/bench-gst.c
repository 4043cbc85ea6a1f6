/* SPDX-License-Identifier: MIT */
/*
 * bench-gst.c: throughput and overhead of the opennpu elements (suite
 * 'bench', a meson benchmark: `meson test -C build --benchmark --suite
 * bench`). Prints figures, asserts nothing about speed.
 *
 *  1. frames per second of videotestsrc ! npuembed (tiny SigLIP) ! fakesink
 *     with cores=1 and cores=7, and their ratio;
 *  2. per-frame cost of npuinfer with a trivially small model against
 *     identity in the same pipeline, in microseconds, and how much of it is
 *     npu_session_run itself.
 *
 * The backend is NPU_BENCH_BACKEND (default "sim"); if that backend cannot
 * load the model, the run falls back to "cpu" and says so. On an NPU
 * backend each model is compiled once here into a private compile cache,
 * with the options the elements use, and the program's partition (steps on
 * the NPU, on the CPU, conversions) is printed; the elements then load that
 * same cache entry, so the figures belong to the printed partition (the
 * partitioner measures CPU kernels, so two compiles could differ).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib/gstdio.h>
#include <gst/gst.h>

#include "npu/npu-exec.h"
#include "npu/npu-model.h"
#include "npu/npu-program.h"
#include "npu/npu-timing.h"

typedef struct
{
  gdouble seconds;
  gdouble cpu_seconds;          /* process CPU time, all threads */
  guint64 frames;
  gdouble run_us;               /* mean npu_session_run, from the stats */
  gboolean ok;
} Run;

static gdouble
cpu_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static Run
run_pipeline (const gchar * desc)
{
  gdouble c0;
  Run r = { 0 };
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err), *e;
  GstBus *bus;
  GstMessage *m;
  gint64 t0;

  if (!p) {
    fprintf (stderr, "cannot build %s: %s\n", desc, err->message);
    g_clear_error (&err);
    return r;
  }
  bus = gst_element_get_bus (p);
  /* preroll first: the model is loaded (and compiled) before timing */
  if (gst_element_set_state (p, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE
      || gst_element_get_state (p, NULL, NULL, 600 * GST_SECOND) ==
      GST_STATE_CHANGE_FAILURE) {
    m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    if (m) {
      gst_message_parse_error (m, &err, NULL);
      fprintf (stderr, "  (%s)\n", err->message);
      g_clear_error (&err);
      gst_message_unref (m);
    }
    goto out;
  }
  t0 = g_get_monotonic_time ();
  c0 = cpu_now ();
  gst_element_set_state (p, GST_STATE_PLAYING);
  m = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  r.seconds = (g_get_monotonic_time () - t0) / 1e6;
  r.cpu_seconds = cpu_now () - c0;
  r.ok = GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS;
  if (!r.ok) {
    gst_message_parse_error (m, &err, NULL);
    fprintf (stderr, "  error: %s\n", err->message);
    g_clear_error (&err);
  }
  gst_message_unref (m);

  e = gst_bin_get_by_name (GST_BIN (p), "npu");
  if (e) {
    GstStructure *s;

    g_object_get (e, "stats", &s, NULL);
    gst_structure_get_uint64 (s, "frames", &r.frames);
    gst_structure_get_double (s, "mean-run-us", &r.run_us);
    gst_structure_free (s);
    gst_object_unref (e);
  }

out:
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (p);
  return r;
}

/* Compiles @model into @cache_dir as the elements will load it (backend,
 * one CPU thread per session) and prints where its steps run. */
static void
print_partition (const gchar * what, const gchar * model, const gchar * backend,
    const gchar * cache_dir)
{
  struct npu_model_options o = {.backend = backend,.cache_dir = cache_dir,
    .cpu_threads = 1
  };
  struct npu_model *m = NULL;
  const struct npu_program *p;
  gint s, cpu = 0, jobs = 0, conv = 0;
  guint tasks = 0;
  gdouble modeled = 0;

  if (npu_model_load (model, &o, &m) != NPU_OK) {
    printf ("  %s: cannot load %s on %s\n", what, model, backend);
    return;
  }
  p = npu_model_program (m);
  if (!p) {
    printf ("  %s: backend %s, CPU executor (no NPU program)\n", what,
        npu_model_backend (m));
    npu_model_free (m);
    return;
  }
  for (s = 0; s < p->n_steps; s++) {
    cpu += p->steps[s].kind == NPU_STEP_CPU;
    jobs += p->steps[s].kind == NPU_STEP_NPU_JOB;
    conv += p->steps[s].kind == NPU_STEP_CONVERT;
  }
  for (s = 0; s < p->n_jobs; s++) {
    tasks += p->jobs[s].n_tasks;
    modeled += p->jobs[s].modeled_s;
  }
  printf ("  %s: backend %s, partition (NPU_PARTITION=%s): %d NPU job(s) "
      "with %u task(s), %d CPU step(s), %d conversion(s); NPU %.3f ms per "
      "frame modeled (%s)\n", what, npu_model_backend (m),
      g_getenv ("NPU_PARTITION") ? g_getenv ("NPU_PARTITION") : "cost", jobs,
      tasks, cpu, conv, modeled * 1e3, npu_timing_model ()->label);
  npu_model_free (m);
}

/* The backend to use: @want if it loads the model, else "cpu". */
static const gchar *
pick_backend (const gchar * want, const gchar * model)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=2 ! npuembed "
      "backend=%s model=%s ! fakesink", want, model);
  Run r = run_pipeline (desc);

  g_free (desc);
  if (r.ok)
    return want;
  printf ("backend %s cannot run %s; using backend cpu\n", want, model);
  return "cpu";
}

int
main (int argc, char **argv)
{
  const gchar *want = g_getenv ("NPU_BENCH_BACKEND");
  const gchar *siglip = argc > 1 ? argv[1] : NULL;
  const gchar *tiny = argc > 2 ? argv[2] : NULL;
  const gchar *backend;
  guint n_embed = 1000, n_over = 3000, cores[2] = { 1, 7 }, i, rep;
  gdouble fps[2] = { 0, 0 };
  gchar *desc, *cache;
  Run id = { 0 }, inf = { 0 };

  gst_init (&argc, &argv);
  if (!siglip || !tiny) {
    fprintf (stderr, "usage: bench-gst SIGLIP.onnx TINY.onnx\n");
    return 2;
  }
  if (g_getenv ("NPU_BENCH_FRAMES"))
    n_embed = (guint) atoi (g_getenv ("NPU_BENCH_FRAMES"));

  backend = pick_backend (want ? want : "sim", siglip);
  cache = g_dir_make_tmp ("bench-gst-XXXXXX", NULL);
  printf ("== programs (compiled once into %s; the elements load them)\n",
      cache);
  print_partition ("tiny SigLIP", siglip, backend, cache);
  print_partition ("1x3x4x4 model", tiny, backend, cache);
  printf ("== npuembed, tiny SigLIP (32x32 input), 320x240 RGB test frames, "
      "backend %s, %u frames, %u host CPUs\n", backend, n_embed,
      g_get_num_processors ());
  /* cpu-threads=1: each session runs its CPU ops on its own worker thread,
   * so the comparison measures the core slots, not a thread pool */
  for (i = 0; i < 2; i++) {
    gdouble best = 0, run_us = 0;

    desc = g_strdup_printf ("videotestsrc num-buffers=%u ! "
        "video/x-raw,format=RGB,width=320,height=240,framerate=30/1 ! "
        "npuembed name=npu backend=%s cores=%u cpu-threads=1 mean=<0.5> "
        "std=<0.5> cache-dir=%s model=%s ! fakesink name=sink sync=false",
        n_embed, backend, cores[i], cache, siglip);
    for (rep = 0; rep < 3; rep++) {
      Run r = run_pipeline (desc);

      if (!r.ok)
        return 1;
      if (r.frames / r.seconds > best) {
        best = r.frames / r.seconds;
        run_us = r.run_us;
      }
    }
    g_free (desc);
    fps[i] = best;
    printf ("  cores=%u: %8.1f frames/s  (npu_session_run %.0f us/frame; "
        "best of 3)\n", cores[i], fps[i], run_us);
  }
  printf ("  cores=7 / cores=1: %.2fx\n", fps[1] / fps[0]);

  /* The same with every job also waiting 2 ms (test hook), the way a job
   * waits for the NPU while the host CPU is free: what the core slots can
   * overlap when the device, not the host, is the bottleneck. Emulated
   * latency, not a measurement of any NPU. */
  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "2000", TRUE);
  printf ("== the same, each job waiting an emulated 2 ms device latency "
      "(GST_NPU_TEST_JOB_DELAY_US=2000), 300 frames\n");
  for (i = 0; i < 2; i++) {
    Run r;

    desc = g_strdup_printf ("videotestsrc num-buffers=300 ! "
        "video/x-raw,format=RGB,width=320,height=240,framerate=30/1 ! "
        "npuembed name=npu backend=%s cores=%u cpu-threads=1 mean=<0.5> "
        "std=<0.5> cache-dir=%s model=%s ! fakesink name=sink sync=false",
        backend, cores[i], cache, siglip);
    r = run_pipeline (desc);
    g_free (desc);
    if (!r.ok)
      return 1;
    fps[i] = r.frames / r.seconds;
    printf ("  cores=%u: %8.1f frames/s\n", cores[i], fps[i]);
  }
  printf ("  cores=7 / cores=1: %.2fx\n", fps[1] / fps[0]);
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");

  printf ("== per-frame overhead, npuinfer (1x3x4x4 model) vs identity, "
      "320x240 RGB, backend %s, %u frames\n", backend, n_over);
  /* best of 3 for each, interleaved so both see the same machine load */
  id.seconds = inf.seconds = G_MAXDOUBLE;
  id.ok = inf.ok = TRUE;
  for (rep = 0; rep < 3 && id.ok && inf.ok; rep++) {
    Run r;

    desc = g_strdup_printf ("videotestsrc num-buffers=%u ! "
        "video/x-raw,format=RGB,width=320,height=240,framerate=30/1 ! "
        "identity ! fakesink name=sink sync=false", n_over);
    r = run_pipeline (desc);
    g_free (desc);
    id.ok = r.ok;
    if (r.ok && r.seconds < id.seconds)
      id = r;
    desc = g_strdup_printf ("videotestsrc num-buffers=%u ! "
        "video/x-raw,format=RGB,width=320,height=240,framerate=30/1 ! "
        "npuinfer name=npu backend=%s cpu-threads=1 cache-dir=%s model=%s ! "
        "fakesink name=sink sync=false", n_over, backend, cache, tiny);
    r = run_pipeline (desc);
    g_free (desc);
    inf.ok = r.ok;
    if (r.ok && r.seconds < inf.seconds)
      inf = r;
  }
  if (!id.ok || !inf.ok)
    return 1;
  printf ("  identity: %7.1f us/frame wall, %7.1f us/frame CPU (best of 3)\n",
      id.seconds * 1e6 / n_over, id.cpu_seconds * 1e6 / n_over);
  printf ("  npuinfer: %7.1f us/frame wall, %7.1f us/frame CPU (best of 3)\n",
      inf.seconds * 1e6 / n_over, inf.cpu_seconds * 1e6 / n_over);
  printf ("  overhead: %7.1f us/frame wall, %7.1f us/frame CPU "
      "(npu_session_run itself: %.1f us, on worker threads)\n",
      (inf.seconds - id.seconds) * 1e6 / n_over,
      (inf.cpu_seconds - id.cpu_seconds) * 1e6 / n_over, inf.run_us);
  {
    GDir *d = g_dir_open (cache, 0, NULL);
    const gchar *f;

    while (d && (f = g_dir_read_name (d))) {
      gchar *path = g_build_filename (cache, f, NULL);

      g_unlink (path);
      g_free (path);
    }
    if (d)
      g_dir_close (d);
    g_rmdir (cache);
  }
  g_free (cache);
  gst_deinit ();
  return 0;
}
