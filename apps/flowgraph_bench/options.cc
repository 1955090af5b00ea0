/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "options.h"
#include "../bench_cli.h"
#include <algorithm>
#include <cmath>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <stdexcept>

namespace fg_bench {

std::vector<std::string> default_detectors()
{
    return { "psd", "fsd", "sfsd", "mtt", "mmse", "zf" };
}

namespace {

void declare(bench_cli::parser& p, options& o)
{
    constexpr double big = 2147483646;
    p.number("--bandwidth", o.bandwidth, "MHZ", "1.4, 3, 5, 10, 15 or 20", 1.4, 20)
        .numbers("--ntx", o.n_tx, "LIST", "transmit antennas: 1, 2, 4", 1, 4)
        .number("--nrx", o.n_rx, "N", "receive antennas, n_tx..8 (0: = n_tx)", 0, 8)
        .words("--mod", o.mods, "LIST", "qpsk, 16qam, 64qam", bench_cli::k_modulations)
        .words("--detectors",
               o.detectors,
               "LIST",
               "of " + bench_cli::join(gr::mimodet::detector_algorithms()),
               gr::mimodet::detector_algorithms())
        .words("--backend",
               o.backends,
               "LIST",
               "cpu, cuda, auto (auto: CUDA where the detector has\n"
               "a CUDA implementation and a GPU exists, else the CPU)",
               { "cpu", "cuda", "auto" })
        .number(
            "--threads", o.threads, "N", "CPU detector threads (0: all cores)", 0, 4096)
        .number("--est-threads",
                o.est_threads,
                "N",
                "channel estimator threads (0: the block's default)",
                0,
                256)
        .text("--est-backend",
              o.est_backend,
              "B",
              "channel estimator backend (auto: the GPU where one exists)",
              { "cpu", "cuda", "auto" })
        .text("--receiver",
              o.receiver,
              "R",
              "fused: mimo_receiver, estimation and detection\n"
              "in one block (on the GPU back to back on the device; its\n"
              "estimator follows --backend, --est-backend is not used);\n"
              "chain: channel_estimator -> mimo_detector (two blocks)",
              { "fused", "chain" })
        .text("--demod",
              o.demod,
              "D",
              "time domain: block: an ofdm_demod block between\n"
              "ofdm_sync and the receiver; receiver: mimo_receiver takes\n"
              "ofdm_sync's slots and demodulates them itself (on the GPU\n"
              "with cuFFT); needs --receiver fused",
              { "block", "receiver" })
        .text("--gpu-wait",
              o.gpu_wait,
              "W",
              "spin (CUDA's polling) or block: the host thread\n"
              "sleeps while the GPU works (MIMODET_GPU_WAIT, for the\n"
              "whole run)",
              { "spin", "block" })
        .number("--antenna-threads",
                o.antenna_threads,
                "N",
                "ofdm_sync's and ofdm_demod's threads per slot, 1..8\n"
                "(MIMODET_ANTENNA_THREADS; 0: min(n_rx, 4) from 10 MHz)",
                0,
                8)
        .number("--gpu-lanes",
                o.gpu_lanes,
                "N",
                "lanes of a GPU receiver or detector, 1..4\n"
                "(MIMODET_GPU_LANES; 0: 2; --receiver chain: 1 with\n"
                "a PSD deadline)",
                0,
                4)
        .number("--sync-ahead",
                o.sync_ahead,
                "0|1",
                "time domain: whether ofdm_sync takes the next slot's input\n"
                "in the call that puts a slot out (MIMODET_SYNC_AHEAD;\n"
                "-1: the block's, 1; 0: only in the call that puts\n"
                "that slot out)",
                -1,
                1)
        .flag("--input-copy",
              o.input_copy,
              "time domain, demodulation in the receiver on the GPU: copy\n"
              "each slot to page-locked memory instead of uploading it\n"
              "from the registered input buffers (MIMODET_INPUT_REGISTER=0)")
        .number("--chunks",
                o.chunks,
                "N",
                "time domain: the source hands each slot over in N equal\n"
                "pieces (a radio delivers packets; 1: whole slots);\n"
                "a slot's entry time is its last piece's arrival",
                1,
                1e6)
        .number("--deadline-us",
                o.deadline_us,
                "X",
                "PSD real-time budget per slot in microseconds (0:\n"
                "exact ML); the block then detects one slot per call",
                0,
                1e9)
        .number("--slot-limit-us",
                o.slot_limit_us,
                "X",
                "psd without a deadline: the blocks' stall bound, the\n"
                "most microseconds a slot's detection may take (the\n"
                "blocks' default 2500; 0: none, the exact search\n"
                "whatever a slot costs)",
                0,
                1e9)
        .number("--sorted-qr",
                o.sorted_qr,
                "N",
                "-1 the algorithm's default, 0 plain QR, 1 sorted QR (psd, mtt)",
                -1,
                1)
        .numbers("--psd-lvl",
                 o.psd_lvl,
                 "LIST",
                 "PSD lvl parameters (default: the preset)",
                 -big,
                 big)
        .numbers("--psd-exp",
                 o.psd_exp,
                 "LIST",
                 "PSD exp parameters (default: the preset)",
                 -big,
                 big)
        .numbers("--snr", o.snrs, "LIST", "SNR per data element in dB", -20, 100)
        .words("--domain",
               o.domains,
               "LIST",
               "freq (grids: estimator + detector) or time (ofdm_sync +\n"
               "ofdm_demod + estimator + detector)",
               { "freq", "time" })
        .text("--channel",
              o.channel,
              "M",
              "fading model",
              { "epa", "eva", "etu", "rayleigh", "awgn" })
        .number("--doppler",
                o.doppler,
                "HZ",
                "maximum Doppler of epa/eva/etu (-1: the model's)",
                -1,
                1e6)
        .number("--cfo",
                o.cfo,
                "X",
                "CFO in subcarrier spacings, |X| < 0.5, time domain only",
                -0.5,
                0.5)
        .number("--slots",
                o.slots,
                "N",
                "slots generated and replayed in a loop, a multiple of 20",
                20,
                2000)
        .numbers("--rate",
                 o.rates,
                 "LIST",
                 "offered load in slots/s; 0 = unthrottled;\n"
                 "e.g. 0,2000: each configuration at full speed and paced\n"
                 "at the LTE real-time rate (paced, the source hands each\n"
                 "slot over at its arrival time: it copies it out first,\n"
                 "then sleeps and spins the last 0.2 ms, so it shows busy)",
                 0,
                 1e6)
        .flag("--pin",
              o.pin,
              "each block's thread on CPUs of its own, as GRC's Core\n"
              "Affinity sets them, from the CPUs the process may use in\n"
              "order: the source 1, ofdm_sync and ofdm_demod one per\n"
              "receive antenna (their antenna workers start on the\n"
              "block's thread and keep its CPUs), the receiver 2 (its GPU\n"
              "lanes), the sink 1; the rest of the process (main thread,\n"
              "probe, CUDA's threads) on the CPUs left over (fused only)")
        .number("--src-spin-us",
                o.src_spin_us,
                "N",
                "the paced source's spin before each hand-over, us;\n"
                "0: it sleeps to the hand-over time (timer slack 1 ns), as a\n"
                "driver woken by its radio",
                0,
                1000)
        .number("--src-buffer-slots",
                o.src_buffer_slots,
                "N",
                "the source's output buffer in slots (0:\n"
                "GNU Radio's size, about two slots in the time domain), as\n"
                "the Min Output Buffer of a radio source in GRC: the samples\n"
                "a stalled receiver left behind wait there, to be taken\n"
                "in larger pieces",
                0,
                64)
        .number("--stall-ms",
                o.stall_ms,
                "X",
                "paced source: every --stall-every-ms it holds\n"
                "its hand-overs for X ms (0: never), as a\n"
                "radio driver's thread the host does not run: the slots\n"
                "due meanwhile come late, all at once, and the table's\n"
                "late_slots / stalls column gives the late slots each\n"
                "stall costs while the receiver catches up",
                0,
                1000)
        .number("--stall-every-ms",
                o.stall_every_ms,
                "X",
                "the period of --stall-ms, above it",
                0,
                60000)
        .number("--seconds", o.seconds, "S", "measured window per run", 0.001, 3600)
        .number("--sub-window-s",
                o.sub_window_s,
                "S",
                "also split each window into consecutive sub-windows of S\n"
                "seconds (by exit time; the last takes the remainder) and\n"
                "report how many held p99 <= 1 ms and the worst p99",
                0.001,
                3600)
        .number("--sample-every",
                o.sample_every,
                "S",
                "soak: every S seconds of the window print one line\n"
                "(elapsed time, slots, lost slots, host RSS, GPU memory\n"
                "in use, that window's p50/p99 latency) and at the end\n"
                "whether RSS and GPU memory stayed flat after the first\n"
                "minute; the latencies are kept in a fixed histogram, so\n"
                "the run's own memory does not grow (0: off; not with\n"
                "--trace)",
                0,
                3600)
        .number("--warmup",
                o.warmup,
                "S",
                "seconds after the first slot out before measuring",
                0,
                600)
        .number("--first-timeout",
                o.first_slot_timeout,
                "S",
                "give up on a run whose first slot is not out after S seconds",
                0.001,
                3600)
        .flag("--soft",
              o.soft,
              "LLR output for the soft detectors (zf, mmse, sfsd, mtt, ml);\n"
              "psd and fsd always give bits")
        .flag("--no-perf",
              o.perf,
              "do not enable GNU Radio's performance counters (busy %)",
              false)
        .flag("--verbose",
              o.verbose,
              "keep GNU Radio's log lines below error level (lock, buffer sizes)")
        .number("--cell-id", o.cell_id, "N", "physical cell id", 0, 503)
        .number("--carriers",
                o.carriers,
                "K",
                "K independent receivers in one flowgraph (one process),\n"
                "carrier k with cell id + k, seed + k and its own replayed\n"
                "slots at --rate each: a row per carrier and a summary of\n"
                "whether all K hold real time (not with --trace, --pin,\n"
                "--stall-ms, --sample-every; 0: one receiver, no summary)",
                0,
                64)
        .numbers("--devices",
                 o.devices,
                 "LIST",
                 "CUDA devices of the GPU blocks (backend cuda or auto):\n"
                 "carrier k runs on device LIST[k % len]; e.g. 0,1\n"
                 "spreads the carriers over two GPUs",
                 0,
                 63)
        .number("--seed", o.seed, "N", "bits, fading and noise seed", 1, big)
        .text("--csv",
              o.csv,
              "FILE",
              "write one CSV row per run to FILE (busy_det: the\n"
              "detector block, or mimo_receiver with --receiver fused)")
        .text("--trace",
              o.trace,
              "PREFIX",
              "per run, PREFIX_<det>_<dom>_<rate>_slots.csv (each\n"
              "measured slot's entry and exit time, its place in the\n"
              "receiver's output since the start, and when the source\n"
              "handed it over) and _blocks.csv\n"
              "(every 0.2 ms: each block's items out and work() time\n"
              "so far), to find which block a latency spike waits on,\n"
              "and _sched.csv (each thread's time waiting for a CPU\n"
              "over the window, where the kernel counts it: sysctl\n"
              "kernel.task_delayacct=1 or kernel.sched_schedstats=1)")
        .flag("--probe",
              o.probe,
              "with --trace: a probe thread times a fixed arithmetic\n"
              "chain and a fixed chain of DRAM loads every 0.2 ms\n"
              "(PREFIX_..._probe.csv): if they slow down with the\n"
              "receiver, the machine slowed down, not a block")
        .flag("--probe-only",
              o.probe_only,
              "the probe alone for --seconds, without a flowgraph: its\n"
              "slow samples (arithmetic > 3x its median) and their\n"
              "clusters, to tell the machine's slowdowns from the\n"
              "receiver's")
        .flag("--rt",
              o.rt,
              "real-time scheduling (SCHED_FIFO) for the flowgraph's\n"
              "threads, as GRC's \"Realtime Scheduling\" option does")
        .text("--awake",
              o.awake,
              "MODE",
              "keep the CPUs out of idle while the flowgraphs run, as a\n"
              "host tuned for real time does (idle=poll): none,\n"
              "qos (hold /dev/cpu_dma_latency at 0, as\n"
              "cyclictest does) or spin (a SCHED_IDLE thread spinning on\n"
              "each CPU the process may run on; their CPU time is left\n"
              "out of the cpus and steal% columns, but time stolen from\n"
              "them stays in steal%). Confine the run with taskset -c\n"
              "(as mimodet_keep_awake beside a flowgraph)",
              { "none", "qos", "spin" })
        // The slice's own range (100..100000) is cpu_keep_awake's check, in main().
        .number("--slice-us",
                o.slice_us,
                "N",
                "ask the kernel for an N us time slice (100..100000) for\n"
                "every thread of the process (Linux 6.12+, no privileges):\n"
                "a thread woken onto a CPU another one runs on waits about\n"
                "that long instead of the default slice (about 3 ms)",
                0,
                1e9)
        .epilog(
            "Real time: 20 MHz LTE is 2000 slots/s; the target is every detector >= "
            "2000\n"
            "slots/s unthrottled and p99 latency <= 1 ms at 20 MHz 4x4 64QAM, 20 dB.\n");
}

//! The checks that involve more than one option.
void validate(const options& o)
{
    try {
        gr::mimodet::lte_numerology::from_bandwidth(o.bandwidth);
    } catch (const std::exception&) {
        throw std::invalid_argument("--bandwidth must be 1.4, 3, 5, 10, 15 or 20");
    }
    for (int nt : o.n_tx)
        if (nt != 1 && nt != 2 && nt != 4)
            throw std::invalid_argument("--ntx: values must be 1, 2 or 4");
    if (o.n_rx != 0)
        for (int nt : o.n_tx)
            if (o.n_rx < nt)
                throw std::invalid_argument("--nrx must be between n_tx and 8");
    if (o.slots % 20 != 0)
        throw std::invalid_argument(
            "--slots must be a multiple of 20 (whole frames), 20..2000");
    if (std::fabs(o.cfo) >= 0.5)
        throw std::invalid_argument("--cfo must be within (-0.5, 0.5) subcarrier "
                                    "spacings (ofdm_sync estimates the fractional CFO)");
    if (o.cfo != 0 &&
        std::find(o.domains.begin(), o.domains.end(), "freq") != o.domains.end())
        throw std::invalid_argument("--cfo applies to --domain time only");
    if (o.probe && o.trace.empty())
        throw std::invalid_argument(
            "--probe needs --trace (it writes PREFIX_..._probe.csv)");
    if (o.pin && o.receiver != "fused")
        throw std::invalid_argument("--pin needs --receiver fused");
    if (o.demod == "receiver" && o.receiver != "fused")
        throw std::invalid_argument("--demod receiver needs --receiver fused");
    if (!(o.stall_every_ms > o.stall_ms))
        throw std::invalid_argument(
            "--stall-every-ms must be above --stall-ms, at most 60000");
    if (o.stall_ms > 0)
        for (double r : o.rates)
            if (r == 0)
                throw std::invalid_argument(
                    "--stall-ms needs a paced source (--rate > 0)");
    if (o.carriers > 0 &&
        (!o.trace.empty() || o.pin || o.stall_ms > 0 || o.sample_every > 0))
        throw std::invalid_argument(
            "--carriers excludes --trace, --pin, --stall-ms and --sample-every");
    if (o.devices.empty())
        throw std::invalid_argument("--devices needs at least one CUDA device index");
    if (o.sample_every > 0 && !o.trace.empty())
        throw std::invalid_argument(
            "--sample-every and --trace exclude each other (the trace keeps every slot)");
}

} // namespace

bool parse(int argc, char** argv, options& o)
{
    o.detectors = default_detectors();
    bench_cli::parser p(
        "mimodet_flowgraph_bench",
        "Receiver flowgraph benchmark: replays pre-generated received slots (framer +\n"
        "channel run once, untimed) into the receiver blocks and measures sustained\n"
        "slots/s and per-slot latency (receiver input -> detector output).");
    declare(p, o);
    if (!p.parse(argc, argv))
        return false;
    validate(o);
    return true;
}

} // namespace fg_bench
