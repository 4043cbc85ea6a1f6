/* SPDX-License-Identifier: MIT */
/*
 * test-npusched.c: the device core scheduler's policy (gst/gstnpusched.c)
 * without a pipeline: one instance alone goes round robin, a core that
 * finishes early takes the next frame, counts break ties, masks are
 * honoured, cancelled frames give their core back, and schedulers are per
 * device. The four-stream pipeline case is in test-npustreams.c.
 */
#include <glib.h>

#include "gstnpusched.h"

static void
test_round_robin_alone (void)
{
  GstNpuSched *s = gst_npu_sched_acquire ("rr");
  gint i;

  /* each frame finishes before the next is picked: 0, 1, 2, 0, ... */
  for (i = 0; i < 9; i++) {
    gint c = gst_npu_sched_pick (s, 0x7);

    g_assert_cmpint (c, ==, i % 3);
    gst_npu_sched_done (s, c);
  }
  for (i = 0; i < 3; i++) {
    g_assert_cmpuint (gst_npu_sched_core_jobs (s, i), ==, 3);
    g_assert_cmpuint (gst_npu_sched_core_busy (s, i), ==, 0);
  }
  gst_npu_sched_release (s);
}

static void
test_free_core_first (void)
{
  GstNpuSched *s = gst_npu_sched_acquire ("busy");

  g_assert_cmpint (gst_npu_sched_pick (s, 0x7), ==, 0);
  g_assert_cmpint (gst_npu_sched_pick (s, 0x7), ==, 1);
  g_assert_cmpint (gst_npu_sched_pick (s, 0x7), ==, 2);
  /* core 1 finishes first: it takes the next frame although the cursor
   * points at core 0 */
  gst_npu_sched_done (s, 1);
  g_assert_cmpint (gst_npu_sched_pick (s, 0x7), ==, 1);
  g_assert_cmpuint (gst_npu_sched_core_busy (s, 1), ==, 1);
  /* all busy once: the fewest frames in all (0 and 2 have 1, core 1 has 2),
   * then the cursor (past core 1: core 2) */
  g_assert_cmpint (gst_npu_sched_pick (s, 0x7), ==, 2);
  g_assert_cmpint (gst_npu_sched_pick (s, 0x7), ==, 0);
  /* a mask: only core 1 allowed, however busy */
  g_assert_cmpint (gst_npu_sched_pick (s, 0x2), ==, 1);
  g_assert_cmpint (gst_npu_sched_pick (s, 0x0), ==, -1);
  /* given back (ran or cancelled): never below zero, out of range ignored */
  gst_npu_sched_done (s, 0);
  gst_npu_sched_done (s, 0);
  gst_npu_sched_done (s, 0);
  gst_npu_sched_done (s, 7);
  gst_npu_sched_done (s, -1);
  g_assert_cmpuint (gst_npu_sched_core_busy (s, 0), ==, 0);
  g_assert_cmpint (gst_npu_sched_pick (s, 0x7), ==, 0);
  gst_npu_sched_release (s);
}

static void
test_per_device (void)
{
  GstNpuSched *a = gst_npu_sched_acquire ("dev-a");
  GstNpuSched *a2 = gst_npu_sched_acquire ("dev-a");
  GstNpuSched *b = gst_npu_sched_acquire ("dev-b");

  g_assert_true (a == a2);
  g_assert_true (a != b);
  g_assert_cmpint (gst_npu_sched_pick (a, 0x7), ==, 0);
  g_assert_cmpint (gst_npu_sched_pick (a2, 0x7), ==, 1);
  g_assert_cmpint (gst_npu_sched_pick (b, 0x7), ==, 0);
  gst_npu_sched_release (a2);
  /* still alive through a */
  g_assert_cmpuint (gst_npu_sched_core_jobs (a, 1), ==, 1);
  gst_npu_sched_release (a);
  gst_npu_sched_release (b);
  gst_npu_sched_release (NULL);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/npusched/round-robin-alone", test_round_robin_alone);
  g_test_add_func ("/npusched/free-core-first", test_free_core_first);
  g_test_add_func ("/npusched/per-device", test_per_device);
  return g_test_run ();
}
