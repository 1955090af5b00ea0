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
//         (--demod receiver: slot_replay -> ofdm_sync -> mimo_receiver, time-domain
//         input)
//   freq: slot_replay (grids) ----------------------> channel_estimator -> mimo_detector
//                                                      -> slot_meter
//
// slot_replay (replay_source.h) is the cycling source; it also stamps each slot k with
// the steady_clock time at which the slot becomes available to the receiver: when its
// work() call hands the slot's items downstream (unpaced), or the slot's scheduled
// arrival time t0 + k / rate (paced with --rate, as a radio would deliver it, so that a
// receiver falling behind shows up as growing latency rather than as a slower source).
// slot_meter (slot_meter.h) is the sink: it follows the detector's "slot" tags, maps each
// output slot back to its input slot k (ns steps; the first slot by content, since
// ofdm_sync starts at the first PSS it accepts), counts bit errors against the
// transmitted bits and, once the slot's last bit or LLR has arrived, records exit -
// entry, exit being the start of the work() call that received that last item (the error
// count is not the receiver's).
//
// Throughput is measured over --seconds after --warmup seconds (counted from the first
// slot out). GNU Radio's performance counters give each block's busy fraction in the
// same window (work() time / wall time): the block near 100 % is the bottleneck. The
// steal% column is the share of the CPU time the machine wanted in the window that the
// hypervisor gave to others (/proc/stat): on a shared virtual machine, a latency tail
// that comes with steal is the host's, not the receiver's. cpus is the process's CPU
// time in the window over its length: the cores the receiver keeps busy.
//
// The files: options (the command line), replay_source and slot_meter (the two
// benchmark blocks), transmit (the slots), run (one timed run), latency_stats,
// machine (scheduler statistics, the machine probe, CPU time, memory), soak
// (--sample-every), report (the table and the CSV).

#include "../bench_cli.h"
#include "options.h"
#include "report.h"
#include "run.h"
#include "transmit.h"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gnuradio/logger.h>
#include <gnuradio/mimodet/cpu_keep_awake.h>
#include <gnuradio/prefs.h>
#include <gnuradio/realtime.h>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

using namespace fg_bench;

int main(int argc, char** argv)
{
    options o;
    if (const auto status = bench_cli::command_line("mimodet_flowgraph_bench",
                                                    [&] { return parse(argc, argv, o); }))
        return *status;
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
    std::unique_ptr<machine_probe> probe;
    if (o.probe)
        probe = std::make_unique<machine_probe>();
    if (o.rt && gr::enable_realtime_scheduling() != gr::RT_OK) {
        std::cerr << "mimodet_flowgraph_bench: --rt: real-time scheduling could not be "
                     "enabled (it needs CAP_SYS_NICE or an rtprio limit)\n";
        return 2;
    }
    std::unique_ptr<gr::mimodet::cpu_keep_awake> awake;
    if (o.awake != "none" || o.slice_us != 0) {
        try {
            awake = std::make_unique<gr::mimodet::cpu_keep_awake>(
                o.awake, std::vector<int>{}, false, o.slice_us);
        } catch (const std::exception& e) {
            std::cerr << "mimodet_flowgraph_bench: --awake/--slice-us " << e.what()
                      << "\n";
            return 2;
        }
    }
    std::ofstream csv;
    if (!bench_cli::open_csv("mimodet_flowgraph_bench", o.csv, csv_header(), csv))
        return 2;
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

    print_table_header(o);
    const run_env env{ probe.get(), awake.get() };
    int failures = 0;
    for (const auto& dom : o.domains)
        for (int nt : o.n_tx)
            for (const auto& mod : o.mods)
                for (double snr : o.snrs) {
                    const int nr = o.n_rx > 0 ? o.n_rx : nt;
                    const bool freq = dom == "freq";
                    // Carrier k: cell id + k and seed + k (its own bits, fading and
                    // noise).
                    std::vector<tx_data> txs;
                    try {
                        for (int k = 0; k < std::max(o.carriers, 1); ++k) {
                            options ok = o;
                            ok.cell_id = (o.cell_id + k) % 504;
                            ok.seed = o.seed + k;
                            txs.push_back(generate(ok, nt, nr, mod, snr, freq));
                        }
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
                    const tx_data& tx = txs[0];
                    std::printf("# %dx%d %s %s %g dB: %d slots generated in %.2f s%s\n",
                                nt,
                                nr,
                                mod.c_str(),
                                dom.c_str(),
                                snr,
                                tx.n_slots,
                                tx.seconds,
                                o.carriers > 0 ? " (carrier 0)" : "");
                    std::fflush(stdout);
                    for (const auto& alg : o.detectors)
                        for (const auto& backend : o.backends)
                            for (double rate : o.rates) {
                                const run_config c{ alg, backend, mod, dom,
                                                    nt,  nr,      snr, rate };
                                if (o.carriers > 0) {
                                    failures += report_carriers(
                                        o, c, run_carriers(o, env, txs, c), csv);
                                    continue;
                                }
                                run_result r;
                                try {
                                    r = run_one(o, env, tx, c);
                                } catch (const std::exception& e) {
                                    r.error = e.what();
                                }
                                failures += !r.error.empty();
                                print_row(o, c, r);
                                if (csv)
                                    write_csv_row(csv, o, c, r);
                            }
                }
    return failures ? 1 : 0;
}
