/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// --carriers K: K independent receivers (cells) in one flowgraph, as a base station
// runs many carriers in one process on one GPU, or spread over several (--devices:
// carrier k on the k % len-th). Each carrier has its own replayed slots, source,
// receiver and meter; all run in the one top block at once, measured over the same
// window.

#include "latency_stats.h"
#include "machine.h"
#include "run.h"
#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <unistd.h>

namespace fg_bench {

using namespace gr::mimodet;

std::vector<run_result> run_carriers(const options& o,
                                     const run_env& env,
                                     const std::vector<tx_data>& txs,
                                     const run_config& rc)
{
    const size_t k_carriers = txs.size();
    std::vector<run_result> res(k_carriers);
    const bool soft = o.soft && detector_algorithm_soft(rc.alg);
    for (auto& r : res)
        r.out = soft ? "llr" : "bits";
    auto tb = gr::make_top_block("mimodet_flowgraph_bench_carriers");
    std::vector<std::unique_ptr<shared_state>> states;
    std::vector<shared_state*> state_ptrs;
    std::vector<receiver_chain> chains;
    for (size_t k = 0; k < k_carriers; ++k) {
        states.push_back(std::make_unique<shared_state>());
        state_ptrs.push_back(states.back().get());
        res[k].device = o.devices[k % o.devices.size()];
        try {
            chains.push_back(build_chain(o,
                                         tb,
                                         txs[k],
                                         *states.back(),
                                         (o.cell_id + static_cast<int>(k)) % 504,
                                         res[k].device,
                                         rc));
        } catch (const std::invalid_argument& e) {
            res[k].error = e.what();
        } catch (const std::runtime_error& e) { // e.g. GPU memory for the K-th receiver
            res[k].error = e.what();
        }
        if (!res[k].error.empty()) {
            for (auto& r : res)
                if (r.error.empty())
                    r.error = "carrier " + std::to_string(k) + ": " + res[k].error;
            return res;
        }
        res[k].backend = chains.back().backend();
        res[k].est_backend = chains.back().est_backend();
    }

    tb->start();
    // Every carrier's first slot out (CUDA contexts, synchronisation), then the warm-up.
    const auto t_start = steady::now();
    for (const auto& c : chains)
        while (c.meter->slots_out() == 0) {
            if (std::chrono::duration<double>(steady::now() - t_start).count() >
                o.first_slot_timeout) {
                for (auto& r : res)
                    r.error = "a carrier put out no slot within " +
                              std::to_string(o.first_slot_timeout) + " s";
                stop_and_wait(tb, state_ptrs);
                return res;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));

    std::vector<slot_meter::snapshot> c0, c1;
    std::vector<uint64_t> bad0, trunc0, est_bad0, missed0;
    for (auto& c : chains)
        c.meter->record(true);
    const int64_t rec0_ns = shared_state::now_ns();
    for (auto& c : chains) {
        c0.push_back(c.meter->counters());
        bad0.push_back(c.bad_slots());
        trunc0.push_back(c.truncated_slots());
        est_bad0.push_back(c.est_bad_slots());
        missed0.push_back(c.sync ? c.sync->pss_missed() : 0);
    }
    const cpu_ticks k0 = read_cpu_ticks();
    const double spin0 = env.awake ? env.awake->spinner_cpu_seconds() : 0.0;
    const double cpu0 = process_cpu_seconds();
    const auto t0 = steady::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    for (auto& c : chains)
        c1.push_back(c.meter->counters());
    const auto t1 = steady::now();
    const cpu_ticks k1 = read_cpu_ticks();
    const double cpu1 = process_cpu_seconds();
    const double spin_s = (env.awake ? env.awake->spinner_cpu_seconds() : 0.0) - spin0;
    const int64_t rec1_ns = shared_state::now_ns();
    const double window_s = std::chrono::duration<double>(t1 - t0).count();
    const double wanted = k1.wanted - k0.wanted - spin_s * sysconf(_SC_CLK_TCK);
    for (size_t k = 0; k < k_carriers; ++k) {
        auto& c = chains[k];
        auto& r = res[k];
        c.meter->record(false);
        r.window_s = window_s;
        // The process's CPU time and steal are the carriers' together.
        r.cpus = (cpu1 - cpu0 - spin_s) / window_s;
        if (wanted > 0)
            r.steal_pct = 100.0 * (k1.steal - k0.steal) / wanted;
        r.bad = c.bad_slots() - bad0[k];
        r.truncated = c.truncated_slots() - trunc0[k];
        r.est_bad = c.est_bad_slots() - est_bad0[k];
        r.sync_missed = c.sync ? c.sync->pss_missed() - missed0[k] : 0;
        auto lat = c.meter->latencies_ms();
        set_meter_results(
            r,
            *c.meter,
            c0[k],
            c1[k],
            lat,
            sub_window_p99s(
                c.meter->entry_exit(), rec0_ns, rec1_ns - rec0_ns, o.sub_window_s));
    }
    stop_and_wait(tb, state_ptrs);
    return res;
}

} // namespace fg_bench
