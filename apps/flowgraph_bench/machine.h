/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The machine beside the receiver: the threads' scheduler statistics (--trace), a probe
// of the core's and memory's speed (--probe, --probe-only), the CPU time wanted and
// stolen, and the process's memory (--sample-every).

#ifndef INCLUDED_MIMODET_FLOWGRAPH_BENCH_MACHINE_H
#define INCLUDED_MIMODET_FLOWGRAPH_BENCH_MACHINE_H

#include "replay_source.h"
#include <atomic>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace fg_bench {

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
sched_snapshot start_sched_stats();

//! Writes one row per thread: its name and scheduling policy; over the window (from
//! `start`), its CPU time, its time waiting runnable for a CPU and how often it ran
//! (schedstat; a thread that started in the window counts from its start); and, where
//! the kernel keeps scheduler statistics (kernel.sched_schedstats=1; empty without), from
//! /proc/self/task/TID/sched its longest wait for a CPU and its longest stretch on one
//! over the window. A guest's run-queue wait does not include time the host took the
//! vCPU away (that is steal).
bool write_sched_stats(const std::string& path, const sched_snapshot& start);

//! Puts the calling thread back to ordinary time sharing (--rt makes every thread the
//! main thread starts real-time; the measuring threads must not preempt the receiver).
void normal_scheduling();

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
            std::swap(d_next[i],
                      d_next[std::uniform_int_distribution<uint32_t>(0, i - 1)(g)]);
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
                d_samples.push_back(sample{
                    c, static_cast<int32_t>(b - a), static_cast<int32_t>(c - b) });
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
    static constexpr int k_alu_steps = 8000;       // about 10-20 us
    static constexpr int k_mem_steps = 50;         // about 10-30 us
    std::vector<uint32_t> d_next;
    std::vector<sample> d_samples;
    std::atomic<bool> d_stop{ false };
    std::thread d_thread;
    uint64_t d_sink = 0;
};

//! --probe-only: the machine probe for `seconds` with nothing else running in this
//! process. Prints the arithmetic and load times and the clusters of 3 or more slow
//! samples (arithmetic > 3x its median; slow samples < 5 ms apart joined) with their
//! times.
int probe_only(double seconds);

//! Cumulative CPU time over all CPUs from /proc/stat's first line, in clock ticks: the
//! time the CPUs wanted (busy, including steal) and the part of it stolen (the
//! hypervisor ran something else while a virtual CPU of this machine was runnable).
//! Zeros where /proc/stat cannot be read.
struct cpu_ticks {
    double wanted = 0, steal = 0;
};

cpu_ticks read_cpu_ticks();

//! User + system CPU time of this process so far (all threads), in seconds.
double process_cpu_seconds();

//! This process's resident memory (VmRSS of /proc/self/status), bytes; -1 where it
//! cannot be read.
double resident_bytes();

} // namespace fg_bench

#endif
