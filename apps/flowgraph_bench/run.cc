/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "run.h"
#include "latency_stats.h"
#include "slot_meter.h"
#include "soak.h"
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gnuradio/high_res_timer.h>
#include <gnuradio/mimodet/channel_estimator.h>
#include <gnuradio/mimodet/mimo_detector.h>
#include <gnuradio/mimodet/mimo_receiver.h>
#include <gnuradio/mimodet/ofdm_demod.h>
#include <gnuradio/mimodet/ofdm_sync.h>
#include <gnuradio/top_block.h>
#include <iostream>
#include <mutex>
#include <sched.h>
#include <thread>
#include <unistd.h>

namespace fg_bench {

using namespace gr::mimodet;

void stop_and_wait(gr::top_block_sptr tb, const std::vector<shared_state*>& states)
{
    for (auto* st : states)
        st->stop = true;
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

void set_meter_results(run_result& r,
                       const slot_meter& meter,
                       const slot_meter::snapshot& c0,
                       const slot_meter::snapshot& c1,
                       std::vector<double>& lat_ms,
                       const std::vector<double>& sub_p99)
{
    r.slots = c1.slots - c0.slots;
    r.lost = c1.lost - c0.lost;
    r.misaligned = c1.misaligned - c0.misaligned;
    r.slots_per_s = r.slots / r.window_s;
    r.mbit_per_s = (c1.bits - c0.bits) / r.window_s / 1e6;
    r.ber = c1.bits > c0.bits ? double(c1.errors - c0.errors) / (c1.bits - c0.bits) : NAN;
    r.first_ns = meter.first_ns();
    r.first_k = meter.first_k();
    if (!lat_ms.empty()) {
        r.p50 = percentile(lat_ms, 0.50);
        r.p99 = percentile(lat_ms, 0.99);
        r.pmax = *std::max_element(lat_ms.begin(), lat_ms.end());
        r.late = static_cast<uint64_t>(std::count_if(
            lat_ms.begin(), lat_ms.end(), [](double ms) { return ms > 1.0; }));
    }
    r.sub_windows = static_cast<int>(sub_p99.size());
    for (double p : sub_p99) {
        r.sub_held += p <= 1.0;
        if (!(p <= r.sub_p99_worst))
            r.sub_p99_worst = p;
    }
}

receiver_chain build_chain(const options& o,
                           gr::top_block_sptr tb,
                           const tx_data& tx,
                           shared_state& st,
                           int cell_id,
                           int device,
                           const run_config& rc)
{
    const int nr = rc.nr;
    const bool freq = rc.dom == "freq";
    const std::string& alg = rc.alg;
    receiver_chain c;
    const bool soft = o.soft && detector_algorithm_soft(alg);
    // The receiver's back end: channel_estimator -> mimo_detector (chain), or both in
    // one mimo_receiver (fused).
    const bool fused = o.receiver == "fused";
    // Time domain with --demod receiver: mimo_receiver takes ofdm_sync's slots.
    const bool rx_demod = !freq && fused && o.demod == "receiver";
    detector_config cfg = block_detector_config(alg, rc.nt, nr, rc.mod, rc.backend);
    if (alg == "psd") {
        cfg.psd_lvl = o.psd_lvl;
        cfg.psd_exp = o.psd_exp;
        cfg.psd_deadline_us = o.deadline_us;
    }
    if (alg == "psd" || alg == "mtt")
        cfg.sorted_qr = o.sorted_qr;
    cfg.threads = o.threads;
    cfg.device = device;
    if (fused)
        c.rxb = mimo_receiver::make(cfg,
                                    o.bandwidth,
                                    cell_id,
                                    soft,
                                    o.est_threads,
                                    rx_demod,
                                    -1,
                                    0.0,
                                    o.slot_limit_us);
    else
        c.det = mimo_detector::make(cfg, o.bandwidth, cell_id, soft, o.slot_limit_us);
    std::vector<int> items(20);
    for (int ns = 0; ns < 20; ++ns) {
        items[ns] = fused ? c.rxb->items_per_slot(ns) : c.det->items_per_slot(ns);
        if (items[ns] != tx.bits_per_ns[ns])
            throw std::logic_error("detector and framer disagree on bits per slot");
    }
    c.src = std::make_shared<slot_replay>(tx.rx,
                                          tx.n_slots,
                                          tx.items_per_slot,
                                          tx.vlen,
                                          rc.rate,
                                          freq ? 1 : o.chunks,
                                          o.src_spin_us,
                                          o.stall_ms,
                                          o.stall_every_ms,
                                          st);
    if (o.src_buffer_slots > 0)
        c.src->set_min_output_buffer(static_cast<long>(o.src_buffer_slots) *
                                     tx.items_per_slot);
    if (!fused)
        c.est = channel_estimator::make(
            o.bandwidth, rc.nt, nr, cell_id, o.est_threads, o.est_backend, 0.0, device);
    c.meter =
        std::make_shared<slot_meter>(soft, items, tx.bits, tx.slot_start, tx.n_slots, st);
    gr::basic_block_sptr grids = c.src;
    if (!freq) {
        c.sync = ofdm_sync::make(o.bandwidth, nr, cell_id);
        for (int r = 0; r < nr; ++r)
            tb->connect(c.src, r, c.sync, r);
        grids = c.sync;
        if (!rx_demod) {
            c.demod = ofdm_demod::make(o.bandwidth, nr);
            for (int r = 0; r < nr; ++r)
                tb->connect(c.sync, r, c.demod, r);
            grids = c.demod;
        }
    }
    if (fused) {
        for (int r = 0; r < nr; ++r)
            tb->connect(grids, r, c.rxb, r);
        tb->connect(c.rxb, 0, c.meter, 0);
    } else {
        for (int r = 0; r < nr; ++r) {
            tb->connect(grids, r, c.est, r);
            tb->connect(grids, r, c.det, r);
        }
        tb->connect(c.est, 0, c.det, nr);
        tb->connect(c.est, 1, c.det, nr + 1);
        tb->connect(c.det, 0, c.meter, 0);
    }
    return c;
}

run_result
run_one(const options& o, const run_env& env, const tx_data& tx, const run_config& rc)
{
    const int nr = rc.nr;
    const bool freq = rc.dom == "freq";
    const std::string& alg = rc.alg;
    const std::string& mod = rc.mod;
    const double rate = rc.rate;
    run_result res;
    const bool soft = o.soft && detector_algorithm_soft(alg);
    res.out = soft ? "llr" : "bits";
    const bool fused = o.receiver == "fused";
    shared_state st;
    auto tb = gr::make_top_block("mimodet_flowgraph_bench");
    receiver_chain chain;
    try {
        chain = build_chain(o, tb, tx, st, o.cell_id, o.devices[0], rc);
    } catch (const std::invalid_argument& e) {
        res.error = e.what();
        return res;
    } catch (const std::runtime_error& e) {
        res.error = e.what();
        return res;
    }
    res.backend = chain.backend();
    res.est_backend = chain.est_backend();
    res.device = o.devices[0];
    auto& src = chain.src;
    auto& meter = chain.meter;
    auto& rxb = chain.rxb;
    auto& det = chain.det;
    auto& est = chain.est;
    auto& sync = chain.sync;
    auto& demod = chain.demod;
    auto bad_slots = [&] { return chain.bad_slots(); };
    auto truncated_slots = [&] { return chain.truncated_slots(); };
    auto est_bad_slots = [&] { return chain.est_bad_slots(); };

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
        main_cpus.armed =
            sched_getaffinity(0, sizeof main_cpus.saved, &main_cpus.saved) == 0;
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
            stop_and_wait(tb, { &st });
            return res;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));

    const bool soak = o.sample_every > 0;
    meter->record(true, !soak);
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
                    trace_v.push_back(
                        b.name == "sink" ? static_cast<double>(b.blk->nitems_read(0))
                                         : static_cast<double>(b.blk->nitems_written(0)));
                    trace_v.push_back(o.perf ? b.blk->pc_work_time_total() / tps : 0.0);
                }
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
    machine_probe* probe = env.probe;
    if (probe)
        probe->start();
    const sched_snapshot sched0 =
        o.trace.empty() ? sched_snapshot{} : start_sched_stats();
    const cpu_ticks k0 = read_cpu_ticks();
    const double spin0 = env.awake ? env.awake->spinner_cpu_seconds() : 0.0;
    const double cpu0 = process_cpu_seconds();
    const auto t0 = steady::now();
    soak_result soaked;
    if (soak)
        soaked = soak_window(
            *meter,
            o.seconds,
            o.sample_every,
            res.backend == "cuda" || res.est_backend == "cuda" ? res.device : -1);
    else
        std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    const auto c1 = meter->counters();
    const auto t1 = steady::now();
    res.stalls = st.stalls.load() - stalls0;
    const cpu_ticks k1 = read_cpu_ticks();
    // The threads' statistics are read before the flowgraph stops (its tag is made
    // below).
    const std::string sched_tmp = o.trace.empty() ? "" : o.trace + "_sched.tmp";
    const bool sched_ok = sched_tmp.empty() || write_sched_stats(sched_tmp, sched0);
    const double cpu1 = process_cpu_seconds();
    // --awake spin: the spinners' time is neither the receiver's nor the machine's
    // demand.
    const double spin_s = (env.awake ? env.awake->spinner_cpu_seconds() : 0.0) - spin0;
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
            std::cerr << "mimodet_flowgraph_bench: cannot write the trace files "
                      << o.trace << tag << "_{slots,blocks,sched"
                      << (probe ? ",probe" : "") << "}.csv\n";
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
    // --sample-every: the stretches between its lines are the sub-windows.
    const auto sub_p99 =
        soak ? soaked.window_p99
             : sub_window_p99s(
                   meter->entry_exit(), rec0_ns, rec1_ns - rec0_ns, o.sub_window_s);
    stop_and_wait(tb, { &st });

    if (soak) {
        soaked.all.add(lat); // the last stretch's remainder
        lat.clear();
    }
    set_meter_results(res, *meter, c0, c1, lat, sub_p99);
    if (soak) {
        res.p50 = soaked.all.percentile(0.50);
        res.p99 = soaked.all.percentile(0.99);
        res.pmax = soaked.all.max();
        res.late = soaked.all.above(1.0);
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

} // namespace fg_bench
