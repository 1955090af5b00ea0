/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// One timed run: the receiver flowgraph of one configuration, its window and results.

#ifndef INCLUDED_MIMODET_FLOWGRAPH_BENCH_RUN_H
#define INCLUDED_MIMODET_FLOWGRAPH_BENCH_RUN_H

#include "machine.h"
#include "options.h"
#include "transmit.h"
#include <cmath>
#include <cstdint>
#include <gnuradio/block.h>
#include <gnuradio/mimodet/cpu_keep_awake.h>
#include <string>
#include <vector>

namespace fg_bench {

struct busy_entry {
    std::string name;
    gr::block_sptr blk;
    double t0 = 0, pct = 0;
};

struct run_result {
    std::string backend, out;
    double slots_per_s = 0, mbit_per_s = 0, p50 = NAN, p99 = NAN, pmax = NAN, ber = NAN;
    double window_s = 0;
    uint64_t slots = 0, lost = 0, bad = 0, est_bad = 0, misaligned = 0, sync_missed = 0;
    uint64_t truncated = 0;     //!< slots with PSD searches cut short by the deadline
    uint64_t late = 0;          //!< slots later than 1 ms (the target's p99 bound)
    int sub_windows = 0;        //!< --sub-window-s: sub-windows of the window
    int sub_held = 0;           //!< ... whose p99 is <= 1 ms
    double sub_p99_worst = NAN; //!< ... the largest of their p99s, ms
    uint64_t stalls = 0;        //!< --stall-ms: stalls the source made during the window
    double steal_pct = NAN;     //!< stolen share of the CPU time wanted in the window
    double cpus = NAN; //!< CPU time of this process in the window / window (cores)
    int first_ns = -1;
    int64_t first_k = -1;
    std::vector<busy_entry> busy;
    std::string bottleneck;
    std::string est_backend; //!< the channel estimator's backend as running
    std::string error;
};

//! What the whole process shares with every run (made in main() before any flowgraph).
struct run_env {
    //! --probe: one for the whole process (building its 64 MiB cycle takes about a
    //! second); null without.
    machine_probe* probe = nullptr;
    //! --awake: the spinners, whose CPU time is left out of the cpus and steal% columns;
    //! null without.
    gr::mimodet::cpu_keep_awake* awake = nullptr;
};

//! The receiver of detector `alg` on `backend` fed by the replayed slots of `tx` at
//! `rate` slots/s (0: unthrottled), measured over the window. A detector or flowgraph
//! that cannot be made or gives no slot comes back with error set.
run_result run_one(const options& o,
                   const run_env& env,
                   const tx_data& tx,
                   int nt,
                   int nr,
                   const std::string& mod,
                   bool freq,
                   const std::string& alg,
                   const std::string& backend,
                   double rate);

} // namespace fg_bench

#endif
