/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// mimodet_flowgraph_bench: the LTE-style receiver as a GNU Radio flowgraph (C++ only, no
// Python), run at full speed or at a paced slot rate, measuring sustained slots/s and
// the latency of every slot from entering the receiver to its bits or LLRs leaving.
//
// Per configuration (bandwidth, antennas, modulation, SNR, domain) the transmit side
// runs ONCE, before any timing: random bits -> slot_framer -> mimo_channel into vector
// sinks, --slots slots (whole frames). The timed flowgraph replays those samples in a
// loop into the receiver:
//
//   time: slot_replay -> ofdm_sync -> ofdm_demod -> channel_estimator -> mimo_detector
//         (--demod receiver: slot_replay -> ofdm_sync -> mimo_receiver, time-domain input)
//   freq: slot_replay (grids) ----------------------> channel_estimator -> mimo_detector
//                                                      -> slot_meter
//
// slot_replay (this file) is the cycling source; it also stamps each slot k with the
// steady_clock time at which the slot becomes available to the receiver: when its work()
// call hands the slot's items downstream (unpaced), or the slot's scheduled arrival
// time t0 + k / rate (paced with --rate, as a radio would deliver it, so that a receiver
// falling behind shows up as growing latency rather than as a slower source). slot_meter
// (this file) is the sink: it follows the detector's "slot" tags, maps each output slot
// back to its input slot k (ns steps; the first slot by content, since ofdm_sync starts
// at the first PSS it accepts), counts bit errors against the transmitted bits and, once
// the slot's last bit or LLR has arrived, records exit - entry, exit being the start of
// the work() call that received that last item (the error count is not the receiver's).
//
// Throughput is measured over --seconds after --warmup seconds (counted from the first
// slot out). GNU Radio's performance counters give each block's busy fraction in the
// same window (work() time / wall time): the block near 100 % is the bottleneck. The
// steal% column is the share of the CPU time the machine wanted in the window that the
// hypervisor gave to others (/proc/stat): on a shared virtual machine, a latency tail
// that comes with steal is the host's, not the receiver's. cpus is the process's CPU
// time in the window over its length: the cores the receiver keeps busy.

#include "bench_cli.h"
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gnuradio/blocks/vector_sink.h>
#include <gnuradio/blocks/vector_source.h>
#include <gnuradio/high_res_timer.h>
#include <gnuradio/io_signature.h>
#include <gnuradio/logger.h>
#include <gnuradio/mimodet/channel_estimator.h>
#include <gnuradio/mimodet/cpu_keep_awake.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/mimodet/mimo_channel.h>
#include <gnuradio/mimodet/mimo_detector.h>
#include <gnuradio/mimodet/mimo_receiver.h>
#include <gnuradio/mimodet/ofdm_demod.h>
#include <gnuradio/mimodet/ofdm_sync.h>
#include <gnuradio/mimodet/slot_framer.h>
#include <gnuradio/prefs.h>
#include <gnuradio/realtime.h>
#include <gnuradio/sync_block.h>
#include <gnuradio/top_block.h>
#include <iostream>
#include <mutex>
#include <map>
#include <memory>
#include <pmt/pmt.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <unistd.h>
#include <vector>

using namespace gr::mimodet;
using steady = std::chrono::steady_clock;

namespace {

using bench_cli::check_in;
using bench_cli::split;
using bench_cli::split_map;
using bench_cli::to_double;
using bench_cli::to_int;

// ------------------------------------------------------------------------------------
// Options

struct options {
    double bandwidth = 20;
    std::vector<int> n_tx = { 4 };
    int n_rx = 0; // 0: = n_tx
    std::vector<std::string> mods = { "64qam" };
    std::vector<std::string> detectors = { "psd", "fsd", "sfsd", "mtt", "mmse", "zf" };
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
    int slots = 40;
    int threads = 0;
    double deadline_us = 0; // psd only
    int est_threads = 0;
    std::string est_backend = "auto"; // channel_estimator's backend (as --backend)
    std::string receiver = "fused";   // fused: mimo_receiver; chain: channel_estimator -> mimo_detector
    std::string demod = "block";      // time domain: ofdm_demod block, or in mimo_receiver
    std::string gpu_wait = "spin";    // how the receiver's host thread waits for the GPU
    int antenna_threads = 0;          // ofdm_sync's and ofdm_demod's threads; 0: default
    int gpu_lanes = 0;                // GPU receivers' lanes; 0: the blocks' default
    int sync_ahead = -1;              // ofdm_sync takes the next slot's input in early; -1: default
    bool input_copy = false;          // time domain on the GPU: copy slots, not register
    int chunks = 1; // time domain: pieces per slot the source hands over
    int sorted_qr = -1;
    std::vector<int> psd_lvl, psd_exp;
    int cell_id = 1;
    bool soft = false;
    bool perf = true;
    bool verbose = false;
    uint64_t seed = 1;
    std::string csv;
    std::string trace; // file prefix: per-slot and per-block timelines of each run
    bool probe = false; // with trace: time fixed CPU and memory work beside the receiver
    bool probe_only = false; // the probe alone for --seconds, no flowgraph
    bool rt = false;    // real-time scheduling for the flowgraph's threads
    std::string awake = "none"; // keep the CPUs out of idle: none, qos or spin
    int slice_us = 0;           // time slice for every thread, us (0: the kernel's)
    int src_spin_us = 200;      // paced source: spin this long before a hand-over
    int src_buffer_slots = 0;   // the source's output buffer, slots (0: GNU Radio's size)
    double stall_ms = 0;        // paced source: hold the hand-overs this long, now and then
    double stall_every_ms = 500; // ... at this period
    bool pin = false;           // each block on CPUs of its own (GRC's Core Affinity)
};

constexpr double k_realtime_slots_per_s = 2000; // LTE: one slot per 0.5 ms

void usage()
{
    std::cout
        << "usage: mimodet_flowgraph_bench [options]\n"
           "Receiver flowgraph benchmark: replays pre-generated received slots (framer "
           "+\n"
           "channel run once, untimed) into the receiver blocks and measures sustained\n"
           "slots/s and per-slot latency (receiver input -> detector output).\n"
           "  --bandwidth MHZ    1.4, 3, 5, 10, 15 or 20 (default 20)\n"
           "  --ntx LIST         transmit antennas: 1, 2, 4 (default 4)\n"
           "  --nrx N            receive antennas, n_tx..8 (default = n_tx)\n"
           "  --mod LIST         qpsk, 16qam, 64qam (default 64qam)\n"
           "  --detectors LIST   psd, fsd, sfsd, mtt, mmse, zf, ml (default "
           "psd,fsd,sfsd,mtt,mmse,zf)\n"
           "  --backend LIST     cpu, cuda, auto (default auto: CUDA where the detector "
           "has\n"
           "                     a CUDA implementation and a GPU exists, else the CPU)\n"
           "  --threads N        CPU detector threads (default 0: all cores)\n"
           "  --est-threads N    channel estimator threads (default 0: the block's "
           "default)\n"
           "  --est-backend B    channel estimator backend: cpu, cuda or auto (default "
           "auto:\n"
           "                     the GPU where one exists)\n"
           "  --receiver R       fused (default): mimo_receiver, estimation and detection\n"
           "                     in one block (on the GPU back to back on the device; its\n"
           "                     estimator follows --backend, --est-backend is not used);\n"
           "                     chain: channel_estimator -> mimo_detector (two blocks)\n"
           "  --demod D          time domain: block (default): an ofdm_demod block between\n"
           "                     ofdm_sync and the receiver; receiver: mimo_receiver takes\n"
           "                     ofdm_sync's slots and demodulates them itself (on the GPU\n"
           "                     with cuFFT); needs --receiver fused\n"
           "  --gpu-wait W       spin (default, CUDA's polling) or block: the host thread\n"
           "                     sleeps while the GPU works (MIMODET_GPU_WAIT, for the\n"
           "                     whole run)\n"
           "  --antenna-threads N  ofdm_sync's and ofdm_demod's threads per slot, 1..8\n"
           "                     (MIMODET_ANTENNA_THREADS; default 0: min(n_rx, 4) from\n"
           "                     10 MHz)\n"
           "  --gpu-lanes N      lanes of a GPU receiver or detector, 1..4\n"
           "                     (MIMODET_GPU_LANES; default 0: 2; --receiver chain: 1 with\n"
           "                     a PSD deadline)\n"
           "  --sync-ahead 0|1   time domain: whether ofdm_sync takes the next slot's input\n"
           "                     in the call that puts a slot out (MIMODET_SYNC_AHEAD;\n"
           "                     default: the block's, 1; 0: only in the call that puts\n"
           "                     that slot out)\n"
           "  --input-copy       time domain, demodulation in the receiver on the GPU: copy\n"
           "                     each slot to page-locked memory instead of uploading it\n"
           "                     from the registered input buffers (MIMODET_INPUT_REGISTER=0)\n"
           "  --chunks N         time domain: the source hands each slot over in N equal\n"
           "                     pieces (a radio delivers packets; default 1: whole "
           "slots);\n"
           "                     a slot's entry time is its last piece's arrival\n"
           "  --deadline-us X    PSD real-time budget per slot in microseconds (default "
           "0:\n"
           "                     exact ML); the block then detects one slot per call\n"
           "  --sorted-qr N      -1 the algorithm's default, 0 plain QR, 1 sorted QR "
           "(psd, mtt)\n"
           "  --psd-lvl LIST     PSD lvl parameters (default: the preset)\n"
           "  --psd-exp LIST     PSD exp parameters (default: the preset)\n"
           "  --snr LIST         SNR per data element in dB (default 20)\n"
           "  --domain LIST      freq (grids: estimator + detector) or time (ofdm_sync "
           "+\n"
           "                     ofdm_demod + estimator + detector) (default freq)\n"
           "  --channel M        epa, eva, etu, rayleigh, awgn (default epa)\n"
           "  --doppler HZ       maximum Doppler of epa/eva/etu (default: the model's)\n"
           "  --cfo X            CFO in subcarrier spacings, |X| < 0.5, time domain only "
           "(default 0)\n"
           "  --slots N          slots generated and replayed in a loop, a multiple of "
           "20\n"
           "                     (default 40)\n"
           "  --rate LIST        offered load in slots/s; 0 = unthrottled (default 0);\n"
           "                     e.g. 0,2000: each configuration at full speed and "
           "paced\n"
           "                     at the LTE real-time rate (paced, the source hands each\n"
           "                     slot over at its arrival time: it copies it out first,\n"
           "                     then sleeps and spins the last 0.2 ms, so it shows busy)\n"
           "  --pin              each block's thread on CPUs of its own, as GRC's Core\n"
           "                     Affinity sets them, from the CPUs the process may use in\n"
           "                     order: the source 1, ofdm_sync and ofdm_demod one per\n"
           "                     receive antenna (their antenna workers start on the\n"
           "                     block's thread and keep its CPUs), the receiver 2 (its GPU\n"
           "                     lanes), the sink 1; the rest of the process (main thread,\n"
           "                     probe, CUDA's threads) on the CPUs left over (fused only)\n"
           "  --src-spin-us N    the paced source's spin before each hand-over, us\n"
           "                     (0..1000, default 200); 0: it sleeps to the hand-over\n"
           "                     time (timer slack 1 ns), as a driver woken by its radio\n"
           "  --src-buffer-slots N  the source's output buffer in slots (0..64, default 0:\n"
           "                     GNU Radio's size, about two slots in the time domain), as\n"
           "                     the Min Output Buffer of a radio source in GRC: the samples\n"
           "                     a stalled receiver left behind wait there, to be taken\n"
           "                     in larger pieces\n"
           "  --stall-ms X       paced source: every --stall-every-ms (default 500) it holds\n"
           "                     its hand-overs for X ms (0..1000, default 0: never), as a\n"
           "                     radio driver's thread the host does not run: the slots\n"
           "                     due meanwhile come late, all at once, and the table's\n"
           "                     late_slots / stalls column gives the late slots each\n"
           "                     stall costs while the receiver catches up\n"
           "  --seconds S        measured window per run (default 3)\n"
           "  --sub-window-s S   also split each window into consecutive sub-windows of S\n"
           "                     seconds (by exit time; the last takes the remainder) and\n"
           "                     report how many held p99 <= 1 ms and the worst p99\n"
           "                     (default 3)\n"
           "  --warmup S         seconds after the first slot out before measuring "
           "(default 1)\n"
           "  --first-timeout S  give up on a run whose first slot is not out after S "
           "seconds\n"
           "                     (default 120)\n"
           "  --soft             LLR output for the soft detectors (zf, mmse, sfsd, mtt, "
           "ml);\n"
           "                     psd and fsd always give bits\n"
           "  --no-perf          do not enable GNU Radio's performance counters (busy "
           "%)\n"
           "  --verbose          keep GNU Radio's log lines below error level (lock, "
           "buffer "
           "sizes)\n"
           "  --cell-id N        physical cell id 0..503 (default 1)\n"
           "  --seed N           bits, fading and noise seed, >= 1 (default 1)\n"
           "  --csv FILE         write one CSV row per run to FILE (busy_det: the\n"
           "                     detector block, or mimo_receiver with --receiver fused)\n"
           "  --trace PREFIX     per run, PREFIX_<det>_<dom>_<rate>_slots.csv (each\n"
           "                     measured slot's entry and exit time, its place in the\n"
           "                     receiver's output since the start, and when the source\n"
           "                     handed it over) and _blocks.csv\n"
           "                     (every 0.2 ms: each block's items out and work() time\n"
           "                     so far), to find which block a latency spike waits on,\n"
           "                     and _sched.csv (each thread's time waiting for a CPU\n"
           "                     over the window, where the kernel counts it: sysctl\n"
           "                     kernel.task_delayacct=1 or kernel.sched_schedstats=1)\n"
           "  --probe            with --trace: a probe thread times a fixed arithmetic\n"
           "                     chain and a fixed chain of DRAM loads every 0.2 ms\n"
           "                     (PREFIX_..._probe.csv): if they slow down with the\n"
           "                     receiver, the machine slowed down, not a block\n"
           "  --probe-only       the probe alone for --seconds, without a flowgraph: its\n"
           "                     slow samples (arithmetic > 3x its median) and their\n"
           "                     clusters, to tell the machine's slowdowns from the\n"
           "                     receiver's\n"
           "  --rt               real-time scheduling (SCHED_FIFO) for the flowgraph's\n"
           "                     threads, as GRC's \"Realtime Scheduling\" option does\n"
           "  --awake MODE       keep the CPUs out of idle while the flowgraphs run, as a\n"
           "                     host tuned for real time does (idle=poll): none\n"
           "                     (default), qos (hold /dev/cpu_dma_latency at 0, as\n"
           "                     cyclictest does) or spin (a SCHED_IDLE thread spinning on\n"
           "                     each CPU the process may run on; their CPU time is left\n"
           "                     out of the cpus and steal% columns, but time stolen from\n"
           "                     them stays in steal%). Confine the run with taskset -c\n"
           "                     (as mimodet_keep_awake beside a flowgraph)\n"
           "  --slice-us N       ask the kernel for an N us time slice (100..100000) for\n"
           "                     every thread of the process (Linux 6.12+, no privileges):\n"
           "                     a thread woken onto a CPU another one runs on waits about\n"
           "                     that long instead of the default slice (about 3 ms)\n"
           "Real time: 20 MHz LTE is 2000 slots/s; the target is every detector >= 2000\n"
           "slots/s unthrottled and p99 latency <= 1 ms at 20 MHz 4x4 64QAM, 20 dB.\n";
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return bench_cli::value_after(a, argc, argv, i); };
        if (a == "--bandwidth")
            o.bandwidth = to_double(a, next());
        else if (a == "--ntx")
            o.n_tx = split_map(a, next(), [](const std::string& n, const std::string& v) {
                return static_cast<int>(to_int(n, v));
            });
        else if (a == "--nrx")
            o.n_rx = static_cast<int>(to_int(a, next()));
        else if (a == "--mod")
            o.mods = split(next());
        else if (a == "--detectors")
            o.detectors = split(next());
        else if (a == "--backend")
            o.backends = split(next());
        else if (a == "--threads")
            o.threads = static_cast<int>(to_int(a, next()));
        else if (a == "--chunks")
            o.chunks = static_cast<int>(to_int(a, next()));
        else if (a == "--est-threads")
            o.est_threads = static_cast<int>(to_int(a, next()));
        else if (a == "--receiver") {
            o.receiver = next();
            if (o.receiver != "chain" && o.receiver != "fused")
                throw std::invalid_argument("--receiver must be chain or fused");
        } else if (a == "--demod") {
            o.demod = next();
            if (o.demod != "block" && o.demod != "receiver")
                throw std::invalid_argument("--demod must be block or receiver");
        } else if (a == "--gpu-wait") {
            o.gpu_wait = next();
            if (o.gpu_wait != "spin" && o.gpu_wait != "block")
                throw std::invalid_argument("--gpu-wait must be spin or block");
        } else if (a == "--antenna-threads") {
            o.antenna_threads = static_cast<int>(to_int(a, next()));
            if (o.antenna_threads < 0 || o.antenna_threads > 8)
                throw std::invalid_argument("--antenna-threads must be 0..8");
        } else if (a == "--gpu-lanes") {
            o.gpu_lanes = static_cast<int>(to_int(a, next()));
            if (o.gpu_lanes < 0 || o.gpu_lanes > 4)
                throw std::invalid_argument("--gpu-lanes must be 0..4");
        } else if (a == "--sync-ahead") {
            o.sync_ahead = static_cast<int>(to_int(a, next()));
            if (o.sync_ahead < 0 || o.sync_ahead > 1)
                throw std::invalid_argument("--sync-ahead must be 0 or 1");
        } else if (a == "--est-backend") {
            o.est_backend = next();
            if (o.est_backend != "cpu" && o.est_backend != "cuda" && o.est_backend != "auto")
                throw std::invalid_argument("--est-backend must be cpu, cuda or auto");
        }
        else if (a == "--deadline-us")
            o.deadline_us = to_double(a, next());
        else if (a == "--sorted-qr")
            o.sorted_qr = static_cast<int>(to_int(a, next()));
        else if (a == "--psd-lvl" || a == "--psd-exp")
            (a == "--psd-lvl" ? o.psd_lvl : o.psd_exp) =
                split_map(a, next(), [](const std::string& n, const std::string& v) {
                    return static_cast<int>(to_int(n, v));
                });
        else if (a == "--snr")
            o.snrs = split_map(a, next(), to_double);
        else if (a == "--domain")
            o.domains = split(next());
        else if (a == "--channel")
            o.channel = next();
        else if (a == "--doppler")
            o.doppler = to_double(a, next());
        else if (a == "--cfo")
            o.cfo = to_double(a, next());
        else if (a == "--slots")
            o.slots = static_cast<int>(to_int(a, next()));
        else if (a == "--rate")
            o.rates = split_map(a, next(), to_double);
        else if (a == "--seconds")
            o.seconds = to_double(a, next());
        else if (a == "--sub-window-s")
            o.sub_window_s = to_double(a, next());
        else if (a == "--warmup")
            o.warmup = to_double(a, next());
        else if (a == "--first-timeout")
            o.first_slot_timeout = to_double(a, next());
        else if (a == "--soft")
            o.soft = true;
        else if (a == "--no-perf")
            o.perf = false;
        else if (a == "--verbose")
            o.verbose = true;
        else if (a == "--cell-id")
            o.cell_id = static_cast<int>(to_int(a, next()));
        else if (a == "--seed")
            o.seed = static_cast<uint64_t>(to_int(a, next()));
        else if (a == "--csv")
            o.csv = next();
        else if (a == "--trace")
            o.trace = next();
        else if (a == "--probe")
            o.probe = true;
        else if (a == "--probe-only")
            o.probe_only = true;
        else if (a == "--rt")
            o.rt = true;
        else if (a == "--awake")
            o.awake = next();
        else if (a == "--input-copy")
            o.input_copy = true;
        else if (a == "--pin")
            o.pin = true;
        else if (a == "--src-spin-us")
            o.src_spin_us = static_cast<int>(to_int(a, next()));
        else if (a == "--src-buffer-slots")
            o.src_buffer_slots = static_cast<int>(to_int(a, next()));
        else if (a == "--stall-ms")
            o.stall_ms = to_double(a, next());
        else if (a == "--stall-every-ms")
            o.stall_every_ms = to_double(a, next());
        else if (a == "--slice-us")
            o.slice_us = static_cast<int>(to_int(a, next()));
        else if (a == "-h" || a == "--help") {
            usage();
            std::exit(0);
        } else
            throw std::invalid_argument("unknown option " + a);
    }
    try {
        lte_numerology::from_bandwidth(o.bandwidth);
    } catch (const std::exception&) {
        throw std::invalid_argument("--bandwidth must be 1.4, 3, 5, 10, 15 or 20");
    }
    for (int nt : o.n_tx)
        if (nt != 1 && nt != 2 && nt != 4)
            throw std::invalid_argument("--ntx: values must be 1, 2 or 4");
    if (o.n_rx != 0)
        for (int nt : o.n_tx)
            if (o.n_rx < nt || o.n_rx > 8)
                throw std::invalid_argument("--nrx must be between n_tx and 8");
    check_in("--mod", o.mods, { "qpsk", "16qam", "64qam" });
    check_in("--detectors", o.detectors, detector_algorithms());
    check_in("--backend", o.backends, { "cpu", "cuda", "auto" });
    check_in("--domain", o.domains, { "freq", "time" });
    check_in("--channel", { o.channel }, { "epa", "eva", "etu", "rayleigh", "awgn" });
    if (o.threads < 0)
        throw std::invalid_argument("--threads must be >= 0");
    if (o.slots < 20 || o.slots % 20 != 0 || o.slots > 2000)
        throw std::invalid_argument(
            "--slots must be a multiple of 20 (whole frames), 20..2000");
    for (double r : o.rates)
        if (r < 0 || r > 1e6)
            throw std::invalid_argument("--rate: values must be 0 (unthrottled) .. 1e6");
    if (o.seconds <= 0 || o.seconds > 3600)
        throw std::invalid_argument("--seconds must be in (0, 3600]");
    if (!(o.sub_window_s > 0) || o.sub_window_s > 3600)
        throw std::invalid_argument("--sub-window-s must be in (0, 3600]");
    if (o.warmup < 0 || o.warmup > 600)
        throw std::invalid_argument("--warmup must be in [0, 600]");
    if (o.first_slot_timeout <= 0 || o.first_slot_timeout > 3600)
        throw std::invalid_argument("--first-timeout must be in (0, 3600]");
    if (std::fabs(o.cfo) >= 0.5)
        throw std::invalid_argument("--cfo must be within (-0.5, 0.5) subcarrier "
                                    "spacings (ofdm_sync estimates the fractional CFO)");
    if (o.cfo != 0 &&
        std::find(o.domains.begin(), o.domains.end(), "freq") != o.domains.end())
        throw std::invalid_argument("--cfo applies to --domain time only");
    if (o.doppler != -1 && o.doppler < 0)
        throw std::invalid_argument("--doppler must be >= 0");
    if (o.cell_id < 0 || o.cell_id > 503)
        throw std::invalid_argument("--cell-id must be 0..503");
    if (o.seed < 1 || o.seed > 2147483646)
        throw std::invalid_argument("--seed must be 1..2147483646");
    for (double s : o.snrs)
        if (s < -20 || s > 100)
            throw std::invalid_argument("--snr: values must be within -20 .. 100 dB");
    if (o.probe && o.trace.empty())
        throw std::invalid_argument("--probe needs --trace (it writes PREFIX_..._probe.csv)");
    check_in("--awake", { o.awake }, { "none", "qos", "spin" });
    // --slice-us is checked where it is used (cpu_keep_awake, in main()).
    if (o.pin && o.receiver != "fused")
        throw std::invalid_argument("--pin needs --receiver fused");
    if (o.demod == "receiver" && o.receiver != "fused")
        throw std::invalid_argument("--demod receiver needs --receiver fused");
    if (o.src_spin_us < 0 || o.src_spin_us > 1000)
        throw std::invalid_argument("--src-spin-us must be 0..1000");
    if (o.src_buffer_slots < 0 || o.src_buffer_slots > 64)
        throw std::invalid_argument("--src-buffer-slots must be 0..64");
    if (!(o.stall_ms >= 0 && o.stall_ms <= 1000))
        throw std::invalid_argument("--stall-ms must be 0..1000");
    if (!(o.stall_every_ms > o.stall_ms && o.stall_every_ms <= 60000))
        throw std::invalid_argument("--stall-every-ms must be above --stall-ms, at most 60000");
    if (o.stall_ms > 0)
        for (double r : o.rates)
            if (r == 0)
                throw std::invalid_argument("--stall-ms needs a paced source (--rate > 0)");
    return o;
}

// ------------------------------------------------------------------------------------
// State shared by the source (entry stamps), the sink (exits) and main (the window).

struct shared_state {
    static constexpr size_t cap = 1 << 16;   // slots in flight can never come near this
    std::vector<std::atomic<int64_t>> stamp; //!< entry time (ns, steady) of slot k % cap
    //! When the source's work() call that completed slot k % cap returned it (paced: at
    //! or after its entry time; later when the source's thread ran late).
    std::vector<std::atomic<int64_t>> handed;
    std::atomic<uint64_t> emitted{ 0 }; //!< slots handed to the receiver
    std::atomic<uint64_t> stalls{ 0 };  //!< --stall-ms: stalls the source has made so far
    std::atomic<bool> stop{ false };    //!< the source ends the stream

    shared_state() : stamp(cap), handed(cap) {}
    static int64_t now_ns()
    {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   steady::now().time_since_epoch())
            .count();
    }
};

// ------------------------------------------------------------------------------------
// slot_replay: n_rx outputs, the pre-generated slots in a loop, a "slot" tag (ns) on the
// first item of every slot, entry stamps, optional pacing (whole slots at t0 + k / rate).

class slot_replay : public gr::sync_block
{
public:
    using sptr = std::shared_ptr<slot_replay>;

    //! chunks: pieces per slot handed over one at a time (a radio delivers samples in
    //! packets); items_per_slot % chunks == 0.
    slot_replay(std::shared_ptr<const std::vector<std::vector<gr_complex>>> data,
                int n_slots,
                int items_per_slot,
                int vlen,
                double rate,
                int chunks,
                int spin_us,
                double stall_ms,
                double stall_every_ms,
                shared_state& st)
        : gr::sync_block("slot_replay",
                         gr::io_signature::make(0, 0, 0),
                         gr::io_signature::make(static_cast<int>(data->size()),
                                                static_cast<int>(data->size()),
                                                sizeof(gr_complex) * vlen)),
          d_data(std::move(data)), d_n_slots(n_slots), d_per_slot(items_per_slot),
          d_vlen(vlen), d_chunks(chunks), d_per_chunk(items_per_slot / chunks),
          d_period_ns(rate > 0 ? 1e9 / rate : 0), d_spin_ns(1000ll * spin_us),
          d_stall_ns(static_cast<int64_t>(stall_ms * 1e6)),
          d_stall_every_ns(static_cast<int64_t>(stall_every_ms * 1e6)), d_st(st),
          d_key(pmt::mp("slot")),
          d_src(pmt::mp("slot_replay"))
    {
        if (chunks < 1 || items_per_slot % chunks != 0)
            throw std::invalid_argument("--chunks must divide the items of a slot (" +
                                        std::to_string(items_per_slot) + ")");
        set_output_multiple(d_per_chunk); // whole chunks per call
        set_tag_propagation_policy(TPP_DONT);
    }

    int work(int noutput_items,
             gr_vector_const_void_star&,
             gr_vector_void_star& output_items) override
    {
        if (d_st.stop.load())
            return WORK_DONE;
        int n = noutput_items / d_per_chunk;
        const uint64_t c0 = d_chunk; // chunks handed over so far
        const double chunk_ns = d_period_ns / d_chunks;
        // Paced: when the next chunk is not due yet, it is copied out first and handed
        // over at its arrival time (a radio's samples are in memory when they arrive),
        // with a sleep to shortly before that time and a spin for the rest: a sleep alone
        // wakes 50-150 us late, which would count as the receiver's latency.
        int64_t hand_over_at = 0;
        if (d_period_ns > 0) {
            if (d_t0 < 0) {
                d_t0 = shared_state::now_ns();
                d_next_stall = d_t0 + d_stall_every_ns;
                // This thread's sleeps end on time (default slack: up to 50 us late).
                prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
            }
            if (d_stall_ns > 0 && shared_state::now_ns() >= d_next_stall) {
                // --stall-ms: this thread does not run for a while; what falls due
                // meanwhile is handed over afterwards, as fast as the buffer takes it.
                if (!wait_until(d_next_stall + d_stall_ns))
                    return WORK_DONE;
                d_st.stalls.fetch_add(1);
                while (d_next_stall <= shared_state::now_ns())
                    d_next_stall += d_stall_every_ns;
            }
            const int64_t now = shared_state::now_ns();
            const int64_t due = static_cast<int64_t>(std::floor((now - d_t0) / chunk_ns)) +
                                1 - static_cast<int64_t>(c0);
            if (due > 0)
                n = static_cast<int>(std::min<int64_t>(n, due));
            else {
                n = 1;
                hand_over_at = d_t0 + static_cast<int64_t>(c0 * chunk_ns);
            }
        }
        const size_t chunk_len = static_cast<size_t>(d_per_chunk) * d_vlen;
        const size_t slot_len = static_cast<size_t>(d_per_slot) * d_vlen;
        const int64_t now = shared_state::now_ns();
        d_completed.clear();
        for (int j = 0; j < n; ++j) {
            const uint64_t q = c0 + j;
            const uint64_t k = q / d_chunks; // slot
            const uint64_t part = q % d_chunks;
            const size_t src = static_cast<size_t>(k % d_n_slots) * slot_len + part * chunk_len;
            for (size_t a = 0; a < d_data->size(); ++a) {
                auto* out = static_cast<gr_complex*>(output_items[a]) + j * chunk_len;
                std::memcpy(
                    out, (*d_data)[a].data() + src, chunk_len * sizeof(gr_complex));
                if (part == 0)
                    add_item_tag(static_cast<unsigned>(a),
                                 nitems_written(a) + static_cast<uint64_t>(j) * d_per_chunk,
                                 d_key,
                                 pmt::from_long(static_cast<long>(k % 20)),
                                 d_src);
            }
            if (part + 1 == static_cast<uint64_t>(d_chunks)) {
                // Entry time: the moment the slot's last chunk is available downstream
                // (when paced: its scheduled arrival, so that backlog counts as latency).
                const int64_t t = d_period_ns > 0 ? d_t0 + static_cast<int64_t>(q * chunk_ns)
                                                  : now;
                d_st.stamp[k % shared_state::cap].store(t);
                d_completed.push_back(k);
            }
        }
        if (hand_over_at > 0 && !wait_until(hand_over_at))
            return WORK_DONE;
        const int64_t handed = shared_state::now_ns();
        for (const uint64_t k : d_completed) {
            d_st.handed[k % shared_state::cap].store(handed);
            d_st.emitted.store(k + 1);
        }
        d_chunk = c0 + n;
        return n * d_per_chunk;
    }

private:
    //! Returns at time t_ns (false when the run stops first): sleeps in steps of at most
    //! 1 ms that check the stop flag until d_spin_ns before t_ns, then spins. (Returning 0
    //! from work() instead would be wrong: GNU Radio's thread-per-block scheduler then
    //! parks a source in its blocked-on-input wait, up to 250 ms, until a neighbour
    //! signals.)
    bool wait_until(int64_t t_ns) const
    {
        for (;;) {
            if (d_st.stop.load())
                return false;
            const int64_t left = t_ns - shared_state::now_ns();
            if (left <= 0)
                return true;
            if (left > d_spin_ns)
                std::this_thread::sleep_for(
                    std::chrono::nanoseconds(std::min<int64_t>(left - d_spin_ns, 1000000)));
#if defined(__x86_64__) || defined(__i386__)
            else
                __builtin_ia32_pause(); // spin politely (a hyperthread sibling runs on)
#endif
        }
    }

    std::shared_ptr<const std::vector<std::vector<gr_complex>>> d_data;
    int d_n_slots, d_per_slot, d_vlen, d_chunks, d_per_chunk;
    double d_period_ns;
    int64_t d_spin_ns;
    int64_t d_stall_ns, d_stall_every_ns;
    int64_t d_next_stall = 0;
    int64_t d_t0 = -1;
    uint64_t d_chunk = 0;
    std::vector<uint64_t> d_completed; //!< slots whose last chunk this call hands over
    shared_state& d_st;
    pmt::pmt_t d_key, d_src;
};

// ------------------------------------------------------------------------------------
// slot_meter: the detector's output; slots from the "slot" tags, bit errors against the
// transmitted bits of the slot, latency exit - entry once a slot is complete.

class slot_meter : public gr::sync_block
{
public:
    using sptr = std::shared_ptr<slot_meter>;

    slot_meter(bool soft,
               std::vector<int> items_per_ns, // detector output items per slot, ns 0..19
               std::shared_ptr<const std::vector<uint8_t>> tx_bits,
               std::vector<size_t> slot_start, // offset of slot k's bits in tx_bits
               int n_slots,
               shared_state& st)
        : gr::sync_block(
              "slot_meter",
              gr::io_signature::make(1, 1, soft ? sizeof(float) : sizeof(uint8_t)),
              gr::io_signature::make(0, 0, 0)),
          d_soft(soft), d_items(std::move(items_per_ns)), d_tx(std::move(tx_bits)),
          d_start(std::move(slot_start)), d_n_slots(n_slots), d_st(st),
          d_key(pmt::mp("slot"))
    {
    }

    struct snapshot {
        uint64_t slots = 0, lost = 0, errors = 0, bits = 0, misaligned = 0;
    };
    snapshot counters() const
    {
        std::lock_guard<std::mutex> g(d_mutex);
        return d_count;
    }
    //! Start (clear) or stop recording latencies.
    void record(bool on)
    {
        std::lock_guard<std::mutex> g(d_mutex);
        if (on) {
            d_lat_ms.clear();
            d_entry_exit.clear();
        }
        d_recording = on;
    }
    //! A recorded slot: entry and exit (steady-clock ns), and its place among all the
    //! slots this block has received since it started (0 = the receiver's first output
    //! slot), which maps it to the receiver call that put it out (call timelines).
    struct slot_times {
        int64_t entry_ns, exit_ns;
        uint64_t ordinal;
        int64_t handed_ns; //!< when the source handed the slot's last chunk over
    };
    std::vector<slot_times> entry_exit() const
    {
        std::lock_guard<std::mutex> g(d_mutex);
        return d_entry_exit;
    }
    std::vector<double> latencies_ms() const
    {
        std::lock_guard<std::mutex> g(d_mutex);
        return d_lat_ms;
    }
    uint64_t slots_out() const { return d_done.load(); }
    int first_ns() const { return d_first_ns; }
    int64_t first_k() const { return d_first_k; }

    int work(int noutput_items,
             gr_vector_const_void_star& input_items,
             gr_vector_void_star&) override
    {
        // A slot has left the receiver when its last item reaches this block: its exit
        // time is this call's start, before the bit-error count below (the benchmark's
        // bookkeeping, not the receiver's work).
        d_call_ns = shared_state::now_ns();
        const uint64_t base = nitems_read(0);
        d_tags.clear();
        get_tags_in_range(d_tags, 0, base, base + noutput_items, d_key);
        std::sort(d_tags.begin(), d_tags.end(), gr::tag_t::offset_compare);
        size_t ti = 0;
        int i = 0;
        while (i < noutput_items) {
            while (ti < d_tags.size() && d_tags[ti].offset < base + i)
                ++ti;
            if (ti < d_tags.size() && d_tags[ti].offset == base + i) {
                const long v = pmt::is_integer(d_tags[ti].value)
                                   ? pmt::to_long(d_tags[ti].value)
                                   : -1;
                ++ti;
                if (d_open)
                    d_open = false; // a slot cut short: not counted
                if (v >= 0 && v < 20)
                    open_slot(static_cast<int>(v));
            }
            const int end = ti < d_tags.size()
                                ? static_cast<int>(d_tags[ti].offset - base)
                                : noutput_items;
            if (!d_open) { // items outside a slot (never from mimo_detector): skip
                i = end;
                continue;
            }
            const int take = std::min(end - i, d_need - d_pos);
            feed(input_items[0], i, take);
            i += take;
            if (d_pos == d_need)
                close_slot();
        }
        return noutput_items;
    }

private:
    void open_slot(int ns)
    {
        d_open = true;
        d_ns = ns;
        d_pos = 0;
        d_need = d_items[ns];
        d_err = 0;
        if (d_first_k >= 0) {
            d_k = d_prev_k + ((ns - d_prev_ns + 19) % 20) + 1;
            d_lost_pending = d_k - d_prev_k - 1;
        } else {
            d_k = -1; // decided from the content when the slot is complete
            d_first_bits.clear();
        }
    }

    template <typename T>
    static uint64_t count_errors(const T* x, const uint8_t* ref, int n, bool soft)
    {
        uint64_t e = 0;
        if (soft)
            for (int j = 0; j < n; ++j)
                e += static_cast<uint8_t>(x[j] < 0) != ref[j];
        else
            for (int j = 0; j < n; ++j)
                e += static_cast<uint8_t>(x[j]) != ref[j];
        return e;
    }

    void feed(const void* in, int offset, int n)
    {
        if (n <= 0)
            return;
        if (d_k < 0) {
            for (int j = 0; j < n; ++j)
                d_first_bits.push_back(
                    d_soft ? static_cast<uint8_t>(
                                 static_cast<const float*>(in)[offset + j] < 0)
                           : static_cast<const uint8_t*>(in)[offset + j]);
        } else {
            const uint8_t* ref = d_tx->data() + d_start[d_k % d_n_slots] + d_pos;
            d_err +=
                d_soft
                    ? count_errors(static_cast<const float*>(in) + offset, ref, n, true)
                    : count_errors(
                          static_cast<const uint8_t*>(in) + offset, ref, n, false);
        }
        d_pos += n;
    }

    void close_slot()
    {
        const int64_t exit_ns = d_call_ns;
        d_open = false;
        if (d_k < 0) {
            // First slot: ofdm_sync starts at the first PSS it accepts (slot 0 or 10 of
            // some frame); the replayed slots k = ns + 20 m (m < n_slots / 20) differ in
            // content, so the fewest bit errors pick k (up to multiples of n_slots: the
            // receiver locks within the first replay cycle).
            uint64_t best = ~0ull;
            for (int64_t k = d_ns; k < d_n_slots; k += 20) {
                const uint64_t e = count_errors(
                    d_first_bits.data(), d_tx->data() + d_start[k], d_need, false);
                if (e < best) {
                    best = e;
                    d_k = k;
                }
            }
            d_err = best;
            d_first_k = d_k;
            d_first_ns = d_ns;
            d_lost_pending = 0;
        }
        d_prev_k = d_k;
        d_prev_ns = d_ns;
        const bool in_stream = static_cast<uint64_t>(d_k) < d_st.emitted.load();
        const int64_t entry =
            d_st.stamp[static_cast<uint64_t>(d_k) % shared_state::cap].load();
        {
            std::lock_guard<std::mutex> g(d_mutex);
            d_count.slots++;
            d_count.lost += static_cast<uint64_t>(d_lost_pending);
            d_count.errors += d_err;
            d_count.bits += static_cast<uint64_t>(d_need);
            if (!in_stream)
                d_count.misaligned++;
            else if (d_recording) {
                d_lat_ms.push_back((exit_ns - entry) * 1e-6);
                d_entry_exit.push_back(
                    { entry,
                      exit_ns,
                      d_done.load(),
                      d_st.handed[static_cast<uint64_t>(d_k) % shared_state::cap].load() });
            }
        }
        d_done.fetch_add(1);
    }

    bool d_soft;
    std::vector<int> d_items;
    std::shared_ptr<const std::vector<uint8_t>> d_tx;
    std::vector<size_t> d_start;
    int d_n_slots;
    shared_state& d_st;
    pmt::pmt_t d_key;
    std::vector<gr::tag_t> d_tags;
    int64_t d_call_ns = 0; //!< start of the current work() call
    // The slot being received.
    bool d_open = false;
    int d_ns = 0, d_pos = 0, d_need = 0;
    int64_t d_k = -1, d_lost_pending = 0;
    uint64_t d_err = 0;
    std::vector<uint8_t> d_first_bits;
    int64_t d_first_k = -1, d_prev_k = -1;
    int d_first_ns = -1, d_prev_ns = 0;
    // Read by main.
    mutable std::mutex d_mutex;
    snapshot d_count;
    bool d_recording = false;
    std::vector<double> d_lat_ms;
    std::vector<slot_times> d_entry_exit;
    std::atomic<uint64_t> d_done{ 0 };
};

// ------------------------------------------------------------------------------------
// Transmit side, run once per (n_tx, n_rx, modulation, SNR, domain).

struct tx_data {
    std::shared_ptr<std::vector<std::vector<gr_complex>>> rx; //!< per receive antenna
    std::shared_ptr<std::vector<uint8_t>> bits;
    std::vector<size_t> slot_start; //!< bit offset of slot k (k < n_slots)
    std::vector<int> bits_per_ns;
    int items_per_slot = 0, vlen = 0, n_slots = 0;
    double seconds = 0;
};

tx_data
generate(const options& o, int nt, int nr, const std::string& mod, double snr, bool freq)
{
    const auto t0 = steady::now();
    tx_data d;
    d.n_slots = o.slots;
    auto framer = slot_framer::make(o.bandwidth, nt, mod, o.cell_id, freq);
    d.items_per_slot = framer->items_per_slot();
    d.vlen = framer->vlen();
    for (int ns = 0; ns < 20; ++ns)
        d.bits_per_ns.push_back(framer->bits_per_slot(ns));
    size_t total = 0;
    for (int k = 0; k < o.slots; ++k) {
        d.slot_start.push_back(total);
        total += d.bits_per_ns[k % 20];
    }
    d.bits = std::make_shared<std::vector<uint8_t>>(total);
    std::mt19937_64 rng(o.seed * 7919 + static_cast<uint64_t>(nt) * 131 +
                        std::hash<std::string>()(mod));
    for (auto& b : *d.bits)
        b = static_cast<uint8_t>(rng() & 1);

    auto tb = gr::make_top_block("mimodet_flowgraph_bench_tx");
    auto src = gr::blocks::vector_source<uint8_t>::make(*d.bits, false);
    auto chan = mimo_channel::make(nt,
                                   nr,
                                   o.channel,
                                   snr,
                                   o.bandwidth,
                                   o.doppler,
                                   freq ? 0.0 : o.cfo,
                                   0,
                                   freq,
                                   static_cast<int>(o.seed));
    tb->connect(src, 0, framer, 0);
    for (int t = 0; t < nt; ++t)
        tb->connect(framer, t, chan, t);
    std::vector<gr::blocks::vector_sink<gr_complex>::sptr> sinks;
    for (int r = 0; r < nr; ++r) {
        sinks.push_back(gr::blocks::vector_sink<gr_complex>::make(
            d.vlen, d.items_per_slot * o.slots));
        tb->connect(chan, r, sinks.back(), 0);
    }
    tb->run();
    d.rx = std::make_shared<std::vector<std::vector<gr_complex>>>();
    const size_t want = static_cast<size_t>(d.items_per_slot) * d.vlen * o.slots;
    for (auto& s : sinks) {
        d.rx->push_back(s->data());
        if (d.rx->back().size() != want)
            throw std::runtime_error(
                "transmit side produced " + std::to_string(d.rx->back().size()) +
                " values per antenna, expected " + std::to_string(want));
    }
    d.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    return d;
}

// ------------------------------------------------------------------------------------
// --trace: the kernel's scheduler statistics of every thread over the window.

//! The thread ids of this process (/proc/self/task).
std::vector<std::string> own_thread_ids()
{
    std::vector<std::string> tids;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec))
        tids.push_back(e.path().filename().string());
    return tids;
}

//! A thread's /proc/self/task/TID/schedstat: ns on a CPU, ns waiting runnable for one
//! (both counted where the kernel keeps task delay accounting or scheduler statistics:
//! sysctl kernel.task_delayacct=1), and how many times it ran.
struct sched_sample {
    double run_ns = 0, wait_ns = 0, runs = 0;
};
using sched_snapshot = std::map<std::string, sched_sample>;

//! Every thread's schedstat now. With schedstats on, also clears every thread's
//! statistics in /proc/self/task/TID/sched (writing 0), so that their maxima cover the
//! window only. Threads that ended are skipped.
sched_snapshot start_sched_stats()
{
    sched_snapshot snap;
    for (const auto& tid : own_thread_ids()) {
        const std::string dir = "/proc/self/task/" + tid;
        sched_sample x;
        if (std::ifstream(dir + "/schedstat") >> x.run_ns >> x.wait_ns >> x.runs)
            snap[tid] = x;
        std::ofstream(dir + "/sched") << "0\n";
    }
    return snap;
}

//! Writes one row per thread: its name and scheduling policy; over the window (from
//! `start`), its CPU time, its time waiting runnable for a CPU and how often it ran
//! (schedstat; a thread that started in the window counts from its start); and, where
//! the kernel keeps scheduler statistics (kernel.sched_schedstats=1; empty without), from
//! /proc/self/task/TID/sched its longest wait for a CPU and its longest stretch on one
//! over the window. A guest's run-queue wait does not include time the host took the
//! vCPU away (that is steal).
bool write_sched_stats(const std::string& path, const sched_snapshot& start)
{
    std::ofstream out(path);
    out << "tid,comm,policy,run_ms,wait_ms,runs,wait_max_ms,exec_max_ms\n";
    for (const auto& tid : own_thread_ids()) {
        const std::string dir = "/proc/self/task/" + tid;
        sched_sample now;
        if (!(std::ifstream(dir + "/schedstat") >> now.run_ns >> now.wait_ns >> now.runs))
            continue; // the thread ended
        const auto it = start.find(tid);
        const sched_sample from = it == start.end() ? sched_sample{} : it->second;
        std::ifstream f(dir + "/sched");
        std::string first, line, policy, wait_max, exec_max;
        std::getline(f, first);
        // "comm (tid, #threads: n)": the name may hold spaces; cut at the last " (".
        std::string comm = first.substr(0, first.rfind(" ("));
        std::replace(comm.begin(), comm.end(), ',', ';');
        while (std::getline(f, line)) {
            const auto colon = line.find(':');
            if (colon == std::string::npos)
                continue;
            std::string key = line.substr(0, colon);
            key.erase(key.find_last_not_of(' ') + 1);
            const auto dot = key.rfind('.'); // stats.wait_max, se.statistics.wait_max, ...
            if (dot != std::string::npos)
                key = key.substr(dot + 1);
            std::string val = line.substr(colon + 1);
            val.erase(0, val.find_first_not_of(' '));
            if (key == "policy")
                policy = val; // 5: SCHED_IDLE (the --awake spinners)
            else if (key == "wait_max")
                wait_max = val;
            else if (key == "exec_max")
                exec_max = val;
        }
        out << tid << ',' << comm << ',' << policy << ','
            << (now.run_ns - from.run_ns) * 1e-6 << ',' << (now.wait_ns - from.wait_ns) * 1e-6
            << ',' << now.runs - from.runs << ',' << wait_max << ',' << exec_max << '\n';
    }
    return static_cast<bool>(out);
}

// ------------------------------------------------------------------------------------
// --probe: fixed work timed beside the receiver.

//! Puts the calling thread back to ordinary time sharing (--rt makes every thread the
//! main thread starts real-time; the measuring threads must not preempt the receiver).
void normal_scheduling()
{
    sched_param sp{};
    sp.sched_priority = 0;
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
}

//! Every 0.2 ms, times two fixed pieces of work: a chain of dependent integer
//! multiply-adds (it needs nothing but the core's cycles) and a chain of dependent loads
//! through a random cycle over 64 MiB (each one a DRAM round trip). When the receiver's
//! blocks all slow down at once, these say whether the core was given fewer cycles
//! (both slower), memory became slower (loads only), or neither (the receiver itself).
class machine_probe
{
public:
    struct sample {
        int64_t t_ns; //!< end of the sample
        int32_t alu_ns, mem_ns;
    };

    machine_probe() : d_next(k_words)
    {
        // Sattolo's shuffle: a single cycle through every word, so the chain never
        // settles into a cached loop.
        for (uint32_t i = 0; i < k_words; ++i)
            d_next[i] = i;
        std::mt19937 g(7);
        for (uint32_t i = k_words - 1; i > 0; --i)
            std::swap(d_next[i], d_next[std::uniform_int_distribution<uint32_t>(0, i - 1)(g)]);
        d_samples.reserve(1 << 16);
    }
    ~machine_probe() { stop(); }

    void start()
    {
        d_samples.clear();
        d_stop = false;
        d_thread = std::thread([this] {
            normal_scheduling();
            uint64_t x = 1;
            uint32_t at = 0;
            while (!d_stop.load(std::memory_order_relaxed)) {
                const int64_t a = shared_state::now_ns();
                for (int i = 0; i < k_alu_steps; ++i) {
                    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                    asm volatile("" : "+r"(x)); // keep every step of the chain
                }
                const int64_t b = shared_state::now_ns();
                for (int i = 0; i < k_mem_steps; ++i)
                    at = d_next[at];
                const int64_t c = shared_state::now_ns();
                d_samples.push_back(sample{ c, static_cast<int32_t>(b - a),
                                            static_cast<int32_t>(c - b) });
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
            d_sink = x + at;
        });
    }
    void stop()
    {
        d_stop = true;
        if (d_thread.joinable())
            d_thread.join();
    }
    //! Valid after stop().
    const std::vector<sample>& samples() const { return d_samples; }

private:
    static constexpr uint32_t k_words = 16u << 20; // 64 MiB of indices
    static constexpr int k_alu_steps = 8000;        // about 10-20 us
    static constexpr int k_mem_steps = 50;          // about 10-30 us
    std::vector<uint32_t> d_next;
    std::vector<sample> d_samples;
    std::atomic<bool> d_stop{ false };
    std::thread d_thread;
    uint64_t d_sink = 0;
};

//! --probe: one for the whole process (building its 64 MiB cycle takes about a second),
//! made in main() before any flowgraph runs.
std::unique_ptr<machine_probe> g_probe;

//! --probe-only: the machine probe for `seconds` with nothing else running in this
//! process. Prints the arithmetic and load times and the clusters of 3 or more slow
//! samples (arithmetic > 3x its median; slow samples < 5 ms apart joined) with their
//! times.
int probe_only(double seconds)
{
    machine_probe probe;
    const int64_t t0 = shared_state::now_ns();
    probe.start();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    probe.stop();
    const auto& smp = probe.samples();
    if (smp.empty()) {
        std::cerr << "mimodet_flowgraph_bench: --probe-only: no samples\n";
        return 1;
    }
    auto stats = [&](bool alu) {
        std::vector<double> v;
        for (const auto& x : smp)
            v.push_back((alu ? x.alu_ns : x.mem_ns) * 1e-3);
        std::sort(v.begin(), v.end());
        return std::array<double, 3>{ v[v.size() / 2], v[v.size() * 99 / 100], v.back() };
    };
    const auto alu = stats(true), mem = stats(false);
    std::printf("probe alone, %.1f s: %zu samples; arithmetic p50 %.1f p99 %.1f max %.1f us; "
                "loads p50 %.1f p99 %.1f max %.1f us\n",
                seconds, smp.size(), alu[0], alu[1], alu[2], mem[0], mem[1], mem[2]);
    size_t slow = 0, clusters = 0;
    int64_t c_start = -1, c_end = -1;
    size_t c_n = 0;
    double c_max = 0;
    auto close = [&] {
        if (c_start < 0)
            return;
        if (c_n >= 3) { // a lone slow sample is an interrupt, not an episode
            ++clusters;
            std::printf("  slow %.1f .. %.1f ms: %zu samples, arithmetic up to %.1f us\n",
                        (c_start - t0) * 1e-6, (c_end - t0) * 1e-6, c_n, c_max);
        }
        c_start = -1;
    };
    for (const auto& x : smp) {
        const double a = x.alu_ns * 1e-3;
        if (!(a > 3 * alu[0]))
            continue;
        ++slow;
        if (c_start >= 0 && x.t_ns - c_end > 5000000)
            close();
        if (c_start < 0) {
            c_start = x.t_ns;
            c_n = 0;
            c_max = 0;
        }
        c_end = x.t_ns;
        ++c_n;
        c_max = std::max(c_max, a);
    }
    close();
    std::printf("  %zu slow samples, %zu clusters of 3 or more\n", slow, clusters);
    return 0;
}


//! --awake: one for the whole process (gr::mimodet::cpu_keep_awake), made in main()
//! before any flowgraph runs; its spinners' CPU time is left out of the cpus and steal%
//! columns.
std::unique_ptr<cpu_keep_awake> g_awake;


// ------------------------------------------------------------------------------------
// One timed run.

struct busy_entry {
    std::string name;
    gr::block_sptr blk;
    double t0 = 0, pct = 0;
};

//! Cumulative CPU time over all CPUs from /proc/stat's first line, in clock ticks: the
//! time the CPUs wanted (busy, including steal) and the part of it stolen (the
//! hypervisor ran something else while a virtual CPU of this machine was runnable).
//! Zeros where /proc/stat cannot be read.
struct cpu_ticks {
    double wanted = 0, steal = 0;
};

cpu_ticks read_cpu_ticks()
{
    cpu_ticks t;
    std::ifstream f("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
           steal = 0;
    if (f >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal &&
        cpu == "cpu") {
        t.wanted = user + nice + system + irq + softirq + steal;
        t.steal = steal;
    }
    return t;
}

//! User + system CPU time of this process so far (all threads), in seconds.
double process_cpu_seconds()
{
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return NAN;
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

struct run_result {
    std::string backend, out;
    double slots_per_s = 0, mbit_per_s = 0, p50 = NAN, p99 = NAN, pmax = NAN, ber = NAN;
    double window_s = 0;
    uint64_t slots = 0, lost = 0, bad = 0, est_bad = 0, misaligned = 0, sync_missed = 0;
    uint64_t truncated = 0; //!< slots with PSD searches cut short by the deadline
    uint64_t late = 0;      //!< slots later than 1 ms (the target's p99 bound)
    int sub_windows = 0;      //!< --sub-window-s: sub-windows of the window
    int sub_held = 0;         //!< ... whose p99 is <= 1 ms
    double sub_p99_worst = NAN; //!< ... the largest of their p99s, ms
    uint64_t stalls = 0;    //!< --stall-ms: stalls the source made during the window
    double steal_pct = NAN; //!< stolen share of the CPU time wanted in the window
    double cpus = NAN;      //!< CPU time of this process in the window / window (cores)
    int first_ns = -1;
    int64_t first_k = -1;
    std::vector<busy_entry> busy;
    std::string bottleneck;
    std::string est_backend; //!< the channel estimator's backend as running
    std::string error;
};

//! Runs stop() + wait() on the top block; if that takes over 30 s, reports it and exits.
void stop_and_wait(gr::top_block_sptr tb, shared_state& st)
{
    st.stop = true;
    std::mutex m;
    std::condition_variable cv;
    bool finished = false;
    std::thread watchdog([&] {
        std::unique_lock<std::mutex> l(m);
        if (!cv.wait_for(l, std::chrono::seconds(30), [&] { return finished; })) {
            std::fprintf(
                stderr,
                "mimodet_flowgraph_bench: the flowgraph did not stop within 30 s; "
                "exiting\n");
            std::fflush(stdout);
            std::_Exit(3);
        }
    });
    tb->stop();
    tb->wait();
    {
        std::lock_guard<std::mutex> l(m);
        finished = true;
    }
    cv.notify_all();
    watchdog.join();
}

double percentile(std::vector<double>& v, double p)
{
    if (v.empty())
        return NAN;
    // Nearest rank: the smallest value with at least a fraction p of the values <= it.
    const double rank = std::ceil(p * static_cast<double>(v.size()));
    const size_t i =
        static_cast<size_t>(std::max(1.0, std::min<double>(rank, v.size()))) - 1;
    std::nth_element(v.begin(), v.begin() + i, v.end());
    return v[i];
}

//! p99 latency (ms) of each consecutive sub-window of `sub_s` seconds of the recording
//! (from `start_ns`, `span_ns` long), by exit time; a remainder shorter than a sub-window
//! joins the last one. So one long run also gives the statistic of several short windows.
std::vector<double> sub_window_p99s(const std::vector<slot_meter::slot_times>& slots,
                                    int64_t start_ns,
                                    int64_t span_ns,
                                    double sub_s)
{
    // The small allowance keeps a span of exactly k sub-windows (plus the recording's
    // overhead) at k, not k - 1.
    const size_t n =
        std::max<size_t>(1, static_cast<size_t>(span_ns * 1e-9 / sub_s + 0.01));
    std::vector<std::vector<double>> lat(n);
    for (const auto& s : slots) {
        const double t_s = std::max<int64_t>(0, s.exit_ns - start_ns) * 1e-9;
        lat[std::min(n - 1, static_cast<size_t>(t_s / sub_s))].push_back(
            (s.exit_ns - s.entry_ns) * 1e-6);
    }
    std::vector<double> p99s;
    // A sub-window that no slot left counts as missed.
    for (auto& l : lat)
        p99s.push_back(l.empty() ? INFINITY : percentile(l, 0.99));
    return p99s;
}

run_result run_one(const options& o,
                   const tx_data& tx,
                   int nt,
                   int nr,
                   const std::string& mod,
                   bool freq,
                   const std::string& alg,
                   const std::string& backend,
                   double rate)
{
    run_result res;
    const bool soft = o.soft && detector_algorithm_soft(alg);
    res.out = soft ? "llr" : "bits";
    // The receiver's back end: channel_estimator -> mimo_detector (chain), or both in
    // one mimo_receiver (fused).
    const bool fused = o.receiver == "fused";
    // Time domain with --demod receiver: mimo_receiver takes ofdm_sync's slots.
    const bool rx_demod = !freq && fused && o.demod == "receiver";
    mimo_detector::sptr det;
    mimo_receiver::sptr rxb;
    try {
        const std::vector<int> lvl = alg == "psd" ? o.psd_lvl : std::vector<int>();
        const std::vector<int> exp = alg == "psd" ? o.psd_exp : std::vector<int>();
        const int sorted_qr = alg == "psd" || alg == "mtt" ? o.sorted_qr : -1;
        const double deadline = alg == "psd" ? o.deadline_us : 0.0;
        if (fused)
            rxb = mimo_receiver::make(alg, o.bandwidth, nt, nr, mod, o.cell_id, backend, soft,
                                      lvl, exp, -1, -1, sorted_qr, 0.0f, o.threads, true,
                                      deadline, o.est_threads, rx_demod);
        else
            det = mimo_detector::make(alg, o.bandwidth, nt, nr, mod, o.cell_id, backend, soft,
                                      lvl, exp, -1, -1, sorted_qr, 0.0f, o.threads, true,
                                      deadline);
    } catch (const std::exception& e) {
        res.error = e.what();
        return res;
    }
    res.backend = fused ? rxb->backend() : det->backend();
    std::vector<int> items(20);
    for (int ns = 0; ns < 20; ++ns) {
        items[ns] = fused ? rxb->items_per_slot(ns) : det->items_per_slot(ns);
        if (items[ns] != tx.bits_per_ns[ns])
            throw std::logic_error("detector and framer disagree on bits per slot");
    }

    shared_state st;
    auto tb = gr::make_top_block("mimodet_flowgraph_bench");
    auto src = std::make_shared<slot_replay>(
        tx.rx, tx.n_slots, tx.items_per_slot, tx.vlen, rate, freq ? 1 : o.chunks,
        o.src_spin_us, o.stall_ms, o.stall_every_ms, st);
    if (o.src_buffer_slots > 0)
        src->set_min_output_buffer(static_cast<long>(o.src_buffer_slots) * tx.items_per_slot);
    channel_estimator::sptr est;
    if (!fused) {
        est = channel_estimator::make(
            o.bandwidth, nt, nr, o.cell_id, o.est_threads, o.est_backend);
        res.est_backend = est->backend();
    } else {
        res.est_backend = rxb->backend(); // the receiver's estimator follows its backend
    }
    auto meter =
        std::make_shared<slot_meter>(soft, items, tx.bits, tx.slot_start, tx.n_slots, st);
    ofdm_sync::sptr sync;
    ofdm_demod::sptr demod;
    gr::basic_block_sptr grids = src;
    if (!freq) {
        sync = ofdm_sync::make(o.bandwidth, nr, o.cell_id);
        for (int r = 0; r < nr; ++r)
            tb->connect(src, r, sync, r);
        grids = sync;
        if (!rx_demod) {
            demod = ofdm_demod::make(o.bandwidth, nr);
            for (int r = 0; r < nr; ++r)
                tb->connect(sync, r, demod, r);
            grids = demod;
        }
    }
    if (fused) {
        for (int r = 0; r < nr; ++r)
            tb->connect(grids, r, rxb, r);
        tb->connect(rxb, 0, meter, 0);
    } else {
        for (int r = 0; r < nr; ++r) {
            tb->connect(grids, r, est, r);
            tb->connect(grids, r, det, r);
        }
        tb->connect(est, 0, det, nr);
        tb->connect(est, 1, det, nr + 1);
        tb->connect(det, 0, meter, 0);
    }
    auto bad_slots = [&] { return fused ? rxb->bad_slots() : det->bad_slots(); };
    auto truncated_slots = [&] { return fused ? rxb->truncated_slots() : det->truncated_slots(); };
    auto est_bad_slots = [&] { return fused ? uint64_t(0) : est->bad_slots(); };

    res.busy.push_back({ "src", src });
    if (!freq) {
        res.busy.push_back({ "sync", sync });
        if (demod)
            res.busy.push_back({ "demod", demod });
    }
    if (fused) {
        res.busy.push_back({ "rx", rxb });
    } else {
        res.busy.push_back({ "est", est });
        res.busy.push_back({ "det", det });
    }
    res.busy.push_back({ "sink", meter });

    // --pin: block threads on disjoint CPU sets; this thread (and so the probe and the
    // tracer it starts) on what is left, given back when the run returns.
    struct affinity_restore {
        cpu_set_t saved;
        bool armed = false;
        ~affinity_restore()
        {
            if (armed)
                sched_setaffinity(0, sizeof saved, &saved);
        }
    } main_cpus;
    if (o.pin) {
        const std::vector<int> cpus = cpu_keep_awake::allowed_cpus();
        std::vector<std::pair<gr::block_sptr, int>> plan{ { src, 1 } };
        if (!freq) {
            plan.push_back({ sync, nr });
            if (demod)
                plan.push_back({ demod, nr });
        }
        plan.push_back({ rxb, 2 });
        plan.push_back({ meter, 1 });
        size_t next = 0;
        for (const auto& [blk, n] : plan) {
            if (next + n >= cpus.size()) { // at least one CPU must be left over
                res.error = "--pin: " + std::to_string(cpus.size()) + " CPUs are too few";
                return res;
            }
            blk->set_processor_affinity(
                std::vector<int>(cpus.begin() + next, cpus.begin() + next + n));
            next += n;
        }
        main_cpus.armed = sched_getaffinity(0, sizeof main_cpus.saved, &main_cpus.saved) == 0;
        cpu_set_t rest;
        CPU_ZERO(&rest);
        for (size_t i = next; i < cpus.size(); ++i)
            CPU_SET(cpus[i], &rest);
        sched_setaffinity(0, sizeof rest, &rest);
    }

    const double tps = static_cast<double>(gr::high_res_timer_tps());
    tb->start();
    // First slot out (CUDA context, synchronisation), then the warm-up.
    const auto t_start = steady::now();
    while (meter->slots_out() == 0) {
        if (std::chrono::duration<double>(steady::now() - t_start).count() >
            o.first_slot_timeout) {
            char msg[64];
            std::snprintf(
                msg, sizeof msg, "no slot out within %g s", o.first_slot_timeout);
            res.error = msg;
            stop_and_wait(tb, st);
            return res;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));

    meter->record(true);
    const int64_t rec0_ns = shared_state::now_ns();
    const auto c0 = meter->counters();
    const uint64_t stalls0 = st.stalls.load();
    const uint64_t bad0 = bad_slots(), est_bad0 = est_bad_slots();
    const uint64_t trunc0 = truncated_slots();
    const uint64_t missed0 = sync ? sync->pss_missed() : 0;
    for (auto& b : res.busy)
        b.t0 = o.perf ? b.blk->pc_work_time_total() : 0;
    // --trace: a sampler thread records every block's progress through the window.
    std::vector<int64_t> trace_t;
    std::vector<double> trace_v; // per sample: items out, then work() seconds, per block
    std::atomic<bool> trace_stop{ false };
    std::thread sampler;
    if (!o.trace.empty())
        sampler = std::thread([&] {
            normal_scheduling();
            while (!trace_stop.load()) {
                trace_t.push_back(shared_state::now_ns());
                for (auto& b : res.busy) {
                    // Racy reads of counters the block's thread updates: good enough
                    // for a timeline, never used for the results.
                    trace_v.push_back(b.name == "sink"
                                          ? static_cast<double>(b.blk->nitems_read(0))
                                          : static_cast<double>(b.blk->nitems_written(0)));
                    trace_v.push_back(o.perf ? b.blk->pc_work_time_total() / tps : 0.0);
                }
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
    machine_probe* probe = g_probe.get();
    if (probe)
        probe->start();
    const sched_snapshot sched0 = o.trace.empty() ? sched_snapshot{} : start_sched_stats();
    const cpu_ticks k0 = read_cpu_ticks();
    const double spin0 = g_awake ? g_awake->spinner_cpu_seconds() : 0.0;
    const double cpu0 = process_cpu_seconds();
    const auto t0 = steady::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    const auto c1 = meter->counters();
    const auto t1 = steady::now();
    res.stalls = st.stalls.load() - stalls0;
    const cpu_ticks k1 = read_cpu_ticks();
    // The threads' statistics are read before the flowgraph stops (its tag is made below).
    const std::string sched_tmp = o.trace.empty() ? "" : o.trace + "_sched.tmp";
    const bool sched_ok = sched_tmp.empty() || write_sched_stats(sched_tmp, sched0);
    const double cpu1 = process_cpu_seconds();
    // --awake spin: the spinners' time is neither the receiver's nor the machine's demand.
    const double spin_s = (g_awake ? g_awake->spinner_cpu_seconds() : 0.0) - spin0;
    if (probe)
        probe->stop();
    if (sampler.joinable()) {
        trace_stop = true;
        sampler.join();
        char tag[96];
        std::snprintf(tag,
                      sizeof tag,
                      "_%s_%s_%s_%g",
                      alg.c_str(),
                      freq ? "freq" : "time",
                      mod.c_str(),
                      rate);
        std::ofstream fs(o.trace + tag + "_slots.csv");
        fs << "entry_ns,exit_ns,ordinal,handed_ns\n";
        for (const auto& ee : meter->entry_exit())
            fs << ee.entry_ns << ',' << ee.exit_ns << ',' << ee.ordinal << ','
               << ee.handed_ns << '\n';
        std::ofstream fb(o.trace + tag + "_blocks.csv");
        fb << "t_ns";
        for (const auto& b : res.busy)
            fb << ',' << b.name << "_items," << b.name << "_work_s";
        fb << '\n';
        const size_t w = 2 * res.busy.size();
        for (size_t i = 0; i < trace_t.size(); ++i) {
            fb << trace_t[i];
            for (size_t j = 0; j < w; ++j)
                fb << ',' << trace_v[i * w + j];
            fb << '\n';
        }
        bool probe_ok = true;
        if (probe) {
            std::ofstream fp(o.trace + tag + "_probe.csv");
            fp << "t_ns,alu_ns,mem_ns\n";
            for (const auto& ps : probe->samples())
                fp << ps.t_ns << ',' << ps.alu_ns << ',' << ps.mem_ns << '\n';
            probe_ok = static_cast<bool>(fp);
        }
        std::error_code ec;
        std::filesystem::rename(sched_tmp, o.trace + tag + "_sched.csv", ec);
        if (!fs || !fb || !probe_ok || !sched_ok || ec)
            std::cerr << "mimodet_flowgraph_bench: cannot write the trace files " << o.trace
                      << tag << "_{slots,blocks,sched" << (probe ? ",probe" : "")
                      << "}.csv\n";
    }
    const double wanted = k1.wanted - k0.wanted - spin_s * sysconf(_SC_CLK_TCK);
    if (wanted > 0)
        res.steal_pct = 100.0 * (k1.steal - k0.steal) / wanted;
    meter->record(false);
    const int64_t rec1_ns = shared_state::now_ns();
    res.window_s = std::chrono::duration<double>(t1 - t0).count();
    res.cpus = (cpu1 - cpu0 - spin_s) / res.window_s;
    for (auto& b : res.busy)
        b.pct = o.perf ? 100.0 * (b.blk->pc_work_time_total() - b.t0) / tps / res.window_s
                       : NAN;
    res.bad = bad_slots() - bad0;
    res.truncated = truncated_slots() - trunc0;
    res.est_bad = est_bad_slots() - est_bad0;
    res.sync_missed = sync ? sync->pss_missed() - missed0 : 0;
    auto lat = meter->latencies_ms();
    const auto sub_p99 =
        sub_window_p99s(meter->entry_exit(), rec0_ns, rec1_ns - rec0_ns, o.sub_window_s);
    stop_and_wait(tb, st);

    res.slots = c1.slots - c0.slots;
    res.lost = c1.lost - c0.lost;
    res.misaligned = c1.misaligned - c0.misaligned;
    res.slots_per_s = res.slots / res.window_s;
    res.mbit_per_s = (c1.bits - c0.bits) / res.window_s / 1e6;
    res.ber =
        c1.bits > c0.bits ? double(c1.errors - c0.errors) / (c1.bits - c0.bits) : NAN;
    res.first_ns = meter->first_ns();
    res.first_k = meter->first_k();
    if (!lat.empty()) {
        res.p50 = percentile(lat, 0.50);
        res.p99 = percentile(lat, 0.99);
        res.pmax = *std::max_element(lat.begin(), lat.end());
        res.late = static_cast<uint64_t>(
            std::count_if(lat.begin(), lat.end(), [](double ms) { return ms > 1.0; }));
    }
    res.sub_windows = static_cast<int>(sub_p99.size());
    for (double p : sub_p99) {
        res.sub_held += p <= 1.0;
        if (!(p <= res.sub_p99_worst))
            res.sub_p99_worst = p;
    }
    if (o.perf) {
        // The receiver block with the largest busy fraction (the source sleeps when paced
        // and the sink only counts, so they are left out).
        double best = -1;
        for (const auto& b : res.busy)
            if (b.name != "src" && b.name != "sink" && b.pct > best) {
                best = b.pct;
                res.bottleneck = b.name;
            }
    }
    return res;
}

} // namespace

int main(int argc, char** argv)
{
    options o;
    try {
        o = parse(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "mimodet_flowgraph_bench: " << e.what() << "\n";
        usage();
        return 2;
    }
    if (!o.trace.empty()) {
        // The trace files are written after each run: refuse a prefix whose folder is not
        // there before spending minutes on runs whose traces would be lost.
        const auto dir = std::filesystem::path(o.trace).parent_path();
        std::error_code ec;
        if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
            std::cerr << "mimodet_flowgraph_bench: --trace " << o.trace << ": no folder "
                      << dir.string() << "\n";
            return 2;
        }
    }
    if (o.probe_only)
        return probe_only(o.seconds);
    // Measurement switches the library reads from the environment (at the first GPU wait,
    // or when a block is made): set before any of that. An empty value leaves one unset.
    const std::pair<const char*, std::string> switches[] = {
        { "MIMODET_ANTENNA_THREADS",
          o.antenna_threads > 0 ? std::to_string(o.antenna_threads) : "" },
        { "MIMODET_GPU_LANES", o.gpu_lanes > 0 ? std::to_string(o.gpu_lanes) : "" },
        { "MIMODET_SYNC_AHEAD", o.sync_ahead >= 0 ? std::to_string(o.sync_ahead) : "" },
        { "MIMODET_INPUT_REGISTER", o.input_copy ? "0" : "" },
        { "MIMODET_GPU_WAIT", o.gpu_wait },
    };
    for (const auto& [name, value] : switches)
        if (!value.empty() && setenv(name, value.c_str(), 1) != 0) {
            std::cerr << "mimodet_flowgraph_bench: setenv " << name << " failed\n";
            return 2;
        }
    if (o.probe)
        g_probe = std::make_unique<machine_probe>();
    if (o.rt && gr::enable_realtime_scheduling() != gr::RT_OK) {
        std::cerr << "mimodet_flowgraph_bench: --rt: real-time scheduling could not be "
                     "enabled (it needs CAP_SYS_NICE or an rtprio limit)\n";
        return 2;
    }
    if (o.awake != "none" || o.slice_us != 0) {
        try {
            g_awake = std::make_unique<cpu_keep_awake>(
                o.awake, std::vector<int>{}, false, o.slice_us);
        } catch (const std::exception& e) {
            std::cerr << "mimodet_flowgraph_bench: --awake/--slice-us " << e.what()
                      << "\n";
            return 2;
        }
    }
    std::ofstream csv;
    if (!o.csv.empty()) {
        csv.open(o.csv);
        if (!csv) {
            std::cerr << "mimodet_flowgraph_bench: cannot write " << o.csv << "\n";
            return 2;
        }
        csv << "detector,backend,output,n_tx,n_rx,modulation,snr_db,bandwidth_mhz,domain,"
               "channel,cpu_threads,rate,window_s,slots,slots_per_s,realtime_x,mbit_per_"
               "s,"
               "latency_p50_ms,latency_p99_ms,latency_max_ms,ber,bad_slots,est_bad_slots,"
               "lost_slots,misaligned,pss_missed,first_ns,first_k,busy_src,busy_sync,"
               "busy_demod,busy_est,busy_det,busy_sink,bottleneck,deadline_us,truncated_"
               "slots,chunks,steal_pct,cpus,est_backend,receiver,awake,slice_us,src_spin_"
               "us,pin,demod,gpu_wait,antenna_threads,gpu_lanes,input_copy,src_buffer_slots,late_slots,"
               "stalls,stall_ms,sync_ahead,sub_window_s,sub_windows,sub_windows_held,"
               "sub_p99_worst_ms,error\n";
    }
    // Per-block busy time comes from GNU Radio's performance counters, read by the
    // block executors when the flowgraph starts.
    // Wall time in work() (GNU Radio's default "thread" clock counts the block thread's
    // CPU time only, which misses a detector waiting for its workers or the GPU).
    gr::prefs::singleton()->set_bool("PerfCounters", "on", o.perf);
    gr::prefs::singleton()->set_string("PerfCounters", "clock", "monotonic");
    // The table stays readable: only errors from the blocks unless --verbose (missed PSS
    // and bad slots are counted in the table anyway).
    if (!o.verbose)
        gr::logging::singleton().set_default_level(gr::log_level::err);

    std::printf("# mimodet_flowgraph_bench: %g MHz, channel %s, %d replayed slots, CPU "
                "detector threads %d (0: all), window %g s after %g s warm-up; latency = "
                "receiver input -> detector output; time-domain source pieces per slot "
                "%d\n",
                o.bandwidth,
                o.channel.c_str(),
                o.slots,
                o.threads,
                o.seconds,
                o.warmup,
                o.chunks);
    std::printf("%-5s %-4s %-4s %-5s %-5s %-4s %5s %6s %9s %6s %9s %8s %8s %8s %9s %4s "
                "%4s %6s %5s %-6s %s\n",
                "det",
                "bk",
                "out",
                "ant",
                "mod",
                "dom",
                "snr",
                "rate",
                "slots/s",
                "xRT",
                "Mbit/s",
                "p50_ms",
                "p99_ms",
                "max_ms",
                "BER",
                "bad",
                "lost",
                "steal%",
                "cpus",
                "limit",
                "busy % (work time / wall time)");
    std::fflush(stdout);
    int failures = 0;
    for (const auto& dom : o.domains)
        for (int nt : o.n_tx)
            for (const auto& mod : o.mods)
                for (double snr : o.snrs) {
                    const int nr = o.n_rx > 0 ? o.n_rx : nt;
                    const bool freq = dom == "freq";
                    tx_data tx;
                    try {
                        tx = generate(o, nt, nr, mod, snr, freq);
                    } catch (const std::exception& e) {
                        std::printf("transmit side failed (%dx%d %s %s): %s\n",
                                    nt,
                                    nr,
                                    mod.c_str(),
                                    dom.c_str(),
                                    e.what());
                        ++failures;
                        continue;
                    }
                    std::printf("# %dx%d %s %s %g dB: %d slots generated in %.2f s\n",
                                nt,
                                nr,
                                mod.c_str(),
                                dom.c_str(),
                                snr,
                                tx.n_slots,
                                tx.seconds);
                    std::fflush(stdout);
                    for (const auto& alg : o.detectors)
                        for (const auto& backend : o.backends)
                            for (double rate : o.rates) {
                                run_result r;
                                try {
                                    r = run_one(
                                        o, tx, nt, nr, mod, freq, alg, backend, rate);
                                } catch (const std::exception& e) {
                                    r.error = e.what();
                                }
                                char ant[16], rate_s[16];
                                std::snprintf(ant, sizeof ant, "%dx%d", nt, nr);
                                if (rate > 0)
                                    std::snprintf(rate_s, sizeof rate_s, "%g", rate);
                                else
                                    std::snprintf(rate_s, sizeof rate_s, "max");
                                if (!r.error.empty()) {
                                    std::printf(
                                        "%-5s %-4s skipped (%s, %s, %s, %s): %s\n",
                                        alg.c_str(),
                                        backend.c_str(),
                                        ant,
                                        mod.c_str(),
                                        dom.c_str(),
                                        rate_s,
                                        r.error.c_str());
                                    ++failures;
                                } else {
                                    std::string busy = " est:" + r.est_backend +
                                                       (o.receiver == "fused" ? " fused" : "") +
                                                       (o.awake != "none" ? " awake:" + o.awake : "") +
                                                       (o.slice_us ? " slice:" + std::to_string(o.slice_us) : "") +
                                                       (o.pin ? " pin" : "") +
                                                       (dom == "time" && o.demod == "receiver" ? " demod:rx" : "") +
                                                       (o.gpu_wait == "block" ? " wait:block" : "") +
                                                       (o.antenna_threads ? " ant-threads:" + std::to_string(o.antenna_threads) : "") +
                                                       (o.gpu_lanes ? " lanes:" + std::to_string(o.gpu_lanes) : "") +
                                                       (o.sync_ahead >= 0 && dom == "time" ? " sync-ahead:" + std::to_string(o.sync_ahead) : "") +
                                                       (o.input_copy ? " input-copy" : "") +
                                                       (o.src_buffer_slots ? " srcbuf:" + std::to_string(o.src_buffer_slots) : "") +
                                                       (o.stall_ms > 0 && rate > 0 ? " stall:" + std::to_string(static_cast<int>(o.stall_ms)) : "");
                                    char buf[64];
                                    for (const auto& b : r.busy) {
                                        std::snprintf(buf,
                                                      sizeof buf,
                                                      " %s %.0f",
                                                      b.name.c_str(),
                                                      b.pct);
                                        busy += buf;
                                    }
                                    std::printf(
                                        "%-5s %-4s %-4s %-5s %-5s %-4s %5.1f %6s "
                                        "%9.1f %6.2f %9.1f %8.3f %8.3f %8.3f %9.3e "
                                        "%4llu %4llu %6.1f %5.2f %-6s%s\n",
                                        alg.c_str(),
                                        r.backend.c_str(),
                                        r.out.c_str(),
                                        ant,
                                        mod.c_str(),
                                        dom.c_str(),
                                        snr,
                                        rate_s,
                                        r.slots_per_s,
                                        r.slots_per_s / k_realtime_slots_per_s,
                                        r.mbit_per_s,
                                        r.p50,
                                        r.p99,
                                        r.pmax,
                                        r.ber,
                                        static_cast<unsigned long long>(r.bad),
                                        static_cast<unsigned long long>(r.lost),
                                        r.steal_pct,
                                        r.cpus,
                                        r.bottleneck.c_str(),
                                        busy.c_str());
                                    if (r.stalls)
                                        std::printf("      note: %llu stalls of %g ms, %llu "
                                                    "slots later than 1 ms (%.1f a stall)\n",
                                                    static_cast<unsigned long long>(r.stalls),
                                                    o.stall_ms,
                                                    static_cast<unsigned long long>(r.late),
                                                    double(r.late) / r.stalls);
                                    if (r.sub_windows > 1)
                                        std::printf("      note: %d of %d sub-windows of %g s "
                                                    "held p99 <= 1 ms (worst p99 %.3f ms), "
                                                    "%llu slots later than 1 ms\n",
                                                    r.sub_held,
                                                    r.sub_windows,
                                                    o.sub_window_s,
                                                    r.sub_p99_worst,
                                                    static_cast<unsigned long long>(r.late));
                                    if (r.truncated)
                                        std::printf("      note: %llu slots truncated by "
                                                    "the %g us deadline\n",
                                                    static_cast<unsigned long long>(
                                                        r.truncated),
                                                    o.deadline_us);
                                    if (r.misaligned || r.est_bad || r.sync_missed)
                                        std::printf(
                                            "      note: %llu slots not mapped to an "
                                            "input slot, %llu bad estimator slots, "
                                            "%llu PSS missed\n",
                                            static_cast<unsigned long long>(r.misaligned),
                                            static_cast<unsigned long long>(r.est_bad),
                                            static_cast<unsigned long long>(
                                                r.sync_missed));
                                }
                                std::fflush(stdout);
                                if (csv) {
                                    auto busy_of = [&](const char* n) -> std::string {
                                        for (const auto& b : r.busy)
                                            if (b.name == n)
                                                return std::to_string(b.pct);
                                        return "";
                                    };
                                    std::string err = r.error;
                                    std::replace(err.begin(), err.end(), ',', ';');
                                    std::replace(err.begin(), err.end(), '\n', ' ');
                                    csv << alg << ',' << r.backend << ',' << r.out << ','
                                        << nt << ',' << nr << ',' << mod << ',' << snr
                                        << ',' << o.bandwidth << ',' << dom << ','
                                        << o.channel << ',' << o.threads << ',' << rate
                                        << ',' << r.window_s << ',' << r.slots << ','
                                        << r.slots_per_s << ','
                                        << r.slots_per_s / k_realtime_slots_per_s << ','
                                        << r.mbit_per_s << ',' << r.p50 << ',' << r.p99
                                        << ',' << r.pmax << ',' << r.ber << ',' << r.bad
                                        << ',' << r.est_bad << ',' << r.lost << ','
                                        << r.misaligned << ',' << r.sync_missed << ','
                                        << r.first_ns << ',' << r.first_k << ','
                                        << busy_of("src") << ',' << busy_of("sync") << ','
                                        << busy_of("demod") << ',' << busy_of("est")
                                        << ',' << busy_of(o.receiver == "fused" ? "rx" : "det") << ','
                                        << busy_of("sink")
                                        << ',' << r.bottleneck << ','
                                        << (alg == "psd" ? o.deadline_us : 0.0) << ','
                                        << r.truncated << ','
                                        << (dom == "time" ? o.chunks : 1) << ','
                                        << r.steal_pct << ',' << r.cpus << ','
                                        << r.est_backend << ',' << o.receiver << ','
                                        << o.awake << ',' << o.slice_us << ','
                                        << (rate > 0 ? o.src_spin_us : 0) << ','
                                        << (o.pin ? 1 : 0) << ','
                                        << (dom == "time" ? o.demod : "none") << ','
                                        << o.gpu_wait << ',' << o.antenna_threads << ','
                                        << o.gpu_lanes << ',' << (o.input_copy ? 1 : 0) << ','
                                        << o.src_buffer_slots << ',' << r.late << ','
                                        << r.stalls << ',' << (rate > 0 ? o.stall_ms : 0.0)
                                        << ',' << o.sync_ahead << ',' << o.sub_window_s
                                        << ',' << r.sub_windows << ',' << r.sub_held << ','
                                        << r.sub_p99_worst << ',' << err
                                        << '\n';
                                    csv.flush();
                                }
                            }
                }
    return failures ? 1 : 0;
}
