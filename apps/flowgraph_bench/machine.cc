/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "machine.h"
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

namespace fg_bench {

namespace {
//! The thread ids of this process (/proc/self/task).
std::vector<std::string> own_thread_ids()
{
    std::vector<std::string> tids;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec))
        tids.push_back(e.path().filename().string());
    return tids;
}
} // namespace

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
            const auto dot =
                key.rfind('.'); // stats.wait_max, se.statistics.wait_max, ...
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
            << (now.run_ns - from.run_ns) * 1e-6 << ','
            << (now.wait_ns - from.wait_ns) * 1e-6 << ',' << now.runs - from.runs << ','
            << wait_max << ',' << exec_max << '\n';
    }
    return static_cast<bool>(out);
}

void normal_scheduling()
{
    sched_param sp{};
    sp.sched_priority = 0;
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
}

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
    std::printf(
        "probe alone, %.1f s: %zu samples; arithmetic p50 %.1f p99 %.1f max %.1f us; "
        "loads p50 %.1f p99 %.1f max %.1f us\n",
        seconds,
        smp.size(),
        alu[0],
        alu[1],
        alu[2],
        mem[0],
        mem[1],
        mem[2]);
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
                        (c_start - t0) * 1e-6,
                        (c_end - t0) * 1e-6,
                        c_n,
                        c_max);
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

double resident_bytes()
{
    std::ifstream f("/proc/self/status");
    for (std::string line; std::getline(f, line);)
        if (line.compare(0, 6, "VmRSS:") == 0) {
            // "VmRSS:     12345 kB"
            return 1024.0 * std::strtod(line.c_str() + 6, nullptr);
        }
    return -1;
}

} // namespace fg_bench
