/* SPDX-License-Identifier: MIT */
/* bench-peak.h: the in-program fp32 peak probe of bench-peak.c. */
#ifndef BENCH_PEAK_H
#define BENCH_PEAK_H

/* Sustained fp32 GFLOP/s of `nthreads` threads each running a register-resident FMA loop
 * in the widest vectors this CPU has; *isa names them. */
double bench_peak_gflops(int nthreads, const char **isa);
/* The same, quickly (best of three ~30 ms runs): the capacity available right now. */
double bench_peak_now(int nthreads);

#endif
