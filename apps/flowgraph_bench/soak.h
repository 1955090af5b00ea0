/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// --sample-every: a long run (a soak) watched while it runs. Every few seconds one line
// with the slots so far, the lost slots, the host's resident memory, the GPU memory in
// use and that stretch's latency percentiles; at the end whether the memory stayed flat
// once the first minute (allocations that settle: buffers, pools, the CUDA context) was
// over, and the spread of the stretches' p99.

#ifndef INCLUDED_MIMODET_FLOWGRAPH_BENCH_SOAK_H
#define INCLUDED_MIMODET_FLOWGRAPH_BENCH_SOAK_H

#include "latency_stats.h"
#include "slot_meter.h"
#include <vector>

namespace fg_bench {

//! GPU memory in use on CUDA device `device` (total - free, every process's), bytes; -1
//! without CUDA or that device. Makes the device current in the calling thread.
double gpu_used_bytes(int device);

struct soak_result {
    latency_histogram all;          //!< every slot of the window
    std::vector<double> window_p99; //!< ms, per stretch between two lines
};

//! Waits out a window of `seconds` while `meter` records (record(true, false): no
//! per-slot times), printing a line every `every` seconds and the summary at the end.
//! gpu_device: the CUDA device the receiver runs on (its memory is sampled); -1: none.
soak_result soak_window(slot_meter& meter, double seconds, double every, int gpu_device);

} // namespace fg_bench

#endif
