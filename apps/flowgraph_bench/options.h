/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// mimodet_flowgraph_bench's options: what to run and how to measure it.

#ifndef INCLUDED_MIMODET_FLOWGRAPH_BENCH_OPTIONS_H
#define INCLUDED_MIMODET_FLOWGRAPH_BENCH_OPTIONS_H

#include <cstdint>
#include <string>
#include <vector>

namespace fg_bench {

struct options {
    double bandwidth = 20;
    std::vector<int> n_tx = { 4 };
    int n_rx = 0; // 0: = n_tx
    std::vector<std::string> mods = { "64qam" };
    std::vector<std::string> detectors; // default_detectors()
    std::vector<std::string> backends = { "auto" };
    std::vector<double> snrs = { 20 };
    std::vector<std::string> domains = { "freq" };
    std::vector<double> rates = { 0 }; // slots/s; 0 = unthrottled
    std::string channel = "epa";
    double doppler = -1;
    double cfo = 0;
    double seconds = 3;
    double sub_window_s = 3; // p99 also over consecutive sub-windows of this length
    double warmup = 1;
    double first_slot_timeout = 120;
    double sample_every = 0; // soak: a line every this many seconds of the window; 0: off
    int slots = 40;
    int threads = 0;
    double deadline_us = 0;      // psd only
    double slot_limit_us = 2500; // psd without a deadline: the blocks' stall bound
    int carriers = 0; // --carriers: receivers (cells) in one flowgraph; 0: one, run alone
    std::vector<int> devices = { 0 }; // CUDA devices; carrier k on devices[k % size]
    int est_threads = 0;
    std::string est_backend = "auto"; // channel_estimator's backend (as --backend)
    std::string receiver =
        "fused"; // fused: mimo_receiver; chain: channel_estimator -> mimo_detector
    std::string demod = "block";   // time domain: ofdm_demod block, or in mimo_receiver
    std::string gpu_wait = "spin"; // how the receiver's host thread waits for the GPU
    int antenna_threads = 0;       // ofdm_sync's and ofdm_demod's threads; 0: default
    int gpu_lanes = 0;             // GPU receivers' lanes; 0: the blocks' default
    int sync_ahead = -1; // ofdm_sync takes the next slot's input in early; -1: default
    bool input_copy = false; // time domain on the GPU: copy slots, not register
    int chunks = 1;          // time domain: pieces per slot the source hands over
    int sorted_qr = -1;
    std::vector<int> psd_lvl, psd_exp;
    int cell_id = 1;
    bool soft = false;
    bool perf = true;
    bool verbose = false;
    uint64_t seed = 1;
    std::string csv;
    std::string trace;  // file prefix: per-slot and per-block timelines of each run
    bool probe = false; // with trace: time fixed CPU and memory work beside the receiver
    bool probe_only = false;    // the probe alone for --seconds, no flowgraph
    bool rt = false;            // real-time scheduling for the flowgraph's threads
    std::string awake = "none"; // keep the CPUs out of idle: none, qos or spin
    int slice_us = 0;           // time slice for every thread, us (0: the kernel's)
    int src_spin_us = 200;      // paced source: spin this long before a hand-over
    int src_buffer_slots = 0;   // the source's output buffer, slots (0: GNU Radio's size)
    double stall_ms = 0; // paced source: hold the hand-overs this long, now and then
    double stall_every_ms = 500; // ... at this period
    bool pin = false;            // each block on CPUs of its own (GRC's Core Affinity)
};

constexpr double k_realtime_slots_per_s = 2000; // LTE: one slot per 0.5 ms

//! The detectors a run measures unless --detectors names others.
std::vector<std::string> default_detectors();

//! The options from the command line, checked; false after --help (printed). Throws
//! std::invalid_argument with a message that names the option.
bool parse(int argc, char** argv, options& o);

} // namespace fg_bench

#endif
