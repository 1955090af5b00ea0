/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Latency statistics: percentiles of recorded latencies, the p99 of sub-windows, and a
// fixed-size histogram for runs too long to keep every slot (--sample-every).

#ifndef INCLUDED_MIMODET_FLOWGRAPH_BENCH_LATENCY_STATS_H
#define INCLUDED_MIMODET_FLOWGRAPH_BENCH_LATENCY_STATS_H

#include "slot_meter.h"
#include <cmath>
#include <cstdint>
#include <vector>

namespace fg_bench {

//! Nearest rank: the smallest value with at least a fraction p of the values <= it; NaN
//! for none. Reorders v.
double percentile(std::vector<double>& v, double p);

//! p99 latency (ms) of each consecutive sub-window of `sub_s` seconds of the recording
//! (from `start_ns`, `span_ns` long), by exit time; a remainder shorter than a sub-window
//! joins the last one. So one long run also gives the statistic of several short windows.
std::vector<double> sub_window_p99s(const std::vector<slot_meter::slot_times>& slots,
                                    int64_t start_ns,
                                    int64_t span_ns,
                                    double sub_s);

//! Latencies in 1 us bins up to 10 ms and bins 0.1 % wide above (to 1000 s), the
//! largest kept exactly: the statistics of any number of slots in under 100 kB
//! allocated once.
class latency_histogram
{
public:
    latency_histogram();
    void add(double ms);
    void add(const std::vector<double>& ms)
    {
        for (double x : ms)
            add(x);
    }
    uint64_t count() const { return d_n; }
    //! Nearest rank, to the bin's upper edge (at most the largest value); NaN for none.
    double percentile(double p) const;
    double max() const { return d_n ? d_max : NAN; }
    //! Latencies above `ms`, to the bin.
    uint64_t above(double ms) const;

private:
    static int bin(double ms);
    static double upper_edge(int b);
    std::vector<uint32_t> d_bins;
    uint64_t d_n = 0;
    double d_max = 0;
};

} // namespace fg_bench

#endif
