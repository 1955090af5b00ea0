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
#include "replay_source.h"
#include "slot_meter.h"
#include "transmit.h"
#include <cmath>
#include <cstdint>
#include <gnuradio/block.h>
#include <gnuradio/mimodet/channel_estimator.h>
#include <gnuradio/mimodet/cpu_keep_awake.h>
#include <gnuradio/mimodet/mimo_detector.h>
#include <gnuradio/mimodet/mimo_receiver.h>
#include <gnuradio/mimodet/ofdm_demod.h>
#include <gnuradio/mimodet/ofdm_sync.h>
#include <gnuradio/top_block.h>
#include <string>
#include <vector>

namespace fg_bench {

//! One point of the sweep: detector, backend, modulation, domain ("freq" or "time"),
//! antennas, SNR, offered rate (0: unthrottled).
struct run_config {
    std::string alg, backend, mod, dom;
    int nt = 0, nr = 0;
    double snr = 0, rate = 0;
    int carrier = -1; //!< --carriers: which one (0..K-1); -1: the one receiver
};

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
    int device = 0;          //!< the CUDA device of its GPU blocks (--devices)
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
//! One carrier's blocks in a flowgraph: the replay source, ofdm_sync and ofdm_demod in
//! the time domain, the receiver (mimo_receiver, or channel_estimator + mimo_detector
//! with --receiver chain) and the meter.
struct receiver_chain {
    std::shared_ptr<slot_replay> src;
    gr::mimodet::ofdm_sync::sptr sync;
    gr::mimodet::ofdm_demod::sptr demod;
    gr::mimodet::channel_estimator::sptr est;
    gr::mimodet::mimo_detector::sptr det;
    gr::mimodet::mimo_receiver::sptr rxb;
    std::shared_ptr<slot_meter> meter;

    std::string backend() const { return rxb ? rxb->backend() : det->backend(); }
    //! The fused receiver's estimator follows its backend.
    std::string est_backend() const { return est ? est->backend() : rxb->backend(); }
    uint64_t bad_slots() const { return rxb ? rxb->bad_slots() : det->bad_slots(); }
    uint64_t truncated_slots() const
    {
        return rxb ? rxb->truncated_slots() : det->truncated_slots();
    }
    uint64_t est_bad_slots() const { return est ? est->bad_slots() : 0; }
};

//! Makes one carrier's receiver for tx (cell cell_id, its GPU blocks on CUDA device
//! `device`) and connects it in tb, its source and meter sharing st. Throws
//! std::invalid_argument / std::runtime_error where the blocks refuse the configuration.
receiver_chain build_chain(const options& o,
                           gr::top_block_sptr tb,
                           const tx_data& tx,
                           shared_state& st,
                           int cell_id,
                           int device,
                           const run_config& c);

//! The run's counts, rates and BER from the meter's counters at the window's start (c0)
//! and end (c1), its latency percentiles and late slots from lat_ms (reordered; empty:
//! left as they are) and its sub-windows from their p99s. r.window_s must be set.
void set_meter_results(run_result& r,
                       const slot_meter& meter,
                       const slot_meter::snapshot& c0,
                       const slot_meter::snapshot& c1,
                       std::vector<double>& lat_ms,
                       const std::vector<double>& sub_p99);

//! Ends the streams of states, then stop() + wait() on tb; if that takes over 30 s,
//! reports it and exits.
void stop_and_wait(gr::top_block_sptr tb, const std::vector<shared_state*>& states);

run_result
run_one(const options& o, const run_env& env, const tx_data& tx, const run_config& c);

//! --carriers K: K receivers in one flowgraph, carrier k on txs[k] (cell o.cell_id + k);
//! one result per carrier (the per-block busy shares, probe, trace and soak are not
//! taken).
std::vector<run_result> run_carriers(const options& o,
                                     const run_env& env,
                                     const std::vector<tx_data>& txs,
                                     const run_config& c);

} // namespace fg_bench

#endif
