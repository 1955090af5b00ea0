/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// mimodet_keep_awake: keeps CPUs out of their idle state while a flowgraph runs beside
// it, so that the hand-overs between its blocks' threads do not wait for a halted CPU to
// wake (gr::mimodet::cpu_keep_awake says why; docs/PERFORMANCE.md, "Keeping the CPUs
// awake, and how many", measures it). With the flowgraph confined to the same CPUs:
//
//     taskset -c 0-7 mimodet_keep_awake &
//     taskset -c 0-7 python3 my_flowgraph.py
//
// Runs until SIGINT or SIGTERM, or for --seconds.

#include "bench_cli.h"
#include <csignal>
#include <cstdio>
#include <gnuradio/mimodet/cpu_keep_awake.h>
#include <iostream>
#include <string>

int main(int argc, char** argv)
{
    std::string mode = "spin";
    std::string cpu_list;
    double seconds = 0;
    try {
        bench_cli::parser p(
            "mimodet_keep_awake",
            "Keeps CPUs out of idle while a flowgraph runs beside it, as a host\n"
            "tuned for real time does (kernel idle=poll).");
        p.text("--mode",
               mode,
               "MODE",
               "spin: one thread per CPU at SCHED_IDLE, spinning:\n"
               "it runs only when nothing else wants the CPU, and any\n"
               "thread that wakes there preempts it at once. No\n"
               "privileges needed. qos: hold /dev/cpu_dma_latency at\n"
               "0 us, as cyclictest does (needs write access to it, and\n"
               "a cpuidle driver)",
               { "spin", "qos" })
            .text("--cpus",
                  cpu_list,
                  "LIST",
                  "CPUs to spin on, as taskset's list (0-5,8); default:\n"
                  "every CPU this process may run on, so that\n"
                  "`taskset -c 0-5 mimodet_keep_awake` spins on 0-5")
            .number("--seconds",
                    seconds,
                    "S",
                    "stop after S seconds (0: at SIGINT or SIGTERM)",
                    0,
                    1e7)
            .epilog(
                "Confine the flowgraph to the same CPUs (taskset -c LIST), so that its\n"
                "threads wake on CPUs kept awake. Those CPUs stay busy: idle time and\n"
                "power go up.\n");
        if (!p.parse(argc, argv))
            return 0;
        if (!cpu_list.empty() && mode != "spin")
            throw std::invalid_argument("--cpus applies to --mode spin only");
    } catch (const std::exception& e) {
        std::cerr << "mimodet_keep_awake: " << e.what() << " (--help for usage)\n";
        return 2;
    }

    // SIGINT and SIGTERM are taken with sigtimedwait below: blocked here, before any
    // spinner starts, so that every thread inherits the mask and none is interrupted.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    try {
        const std::vector<int> cpus =
            gr::mimodet::cpu_keep_awake::parse_cpu_list(cpu_list);
        gr::mimodet::cpu_keep_awake keeper(mode, cpus);
        if (mode == "spin") {
            std::string list;
            for (int c : keeper.cpus())
                list += (list.empty() ? "" : ",") + std::to_string(c);
            std::printf("mimodet_keep_awake: spinning at SCHED_IDLE on %zu CPUs (%s)\n",
                        keeper.cpus().size(),
                        list.c_str());
        } else
            std::printf("mimodet_keep_awake: holding /dev/cpu_dma_latency at 0 us\n");
        std::fflush(stdout);
        timespec limit{};
        limit.tv_sec = static_cast<time_t>(seconds);
        limit.tv_nsec =
            static_cast<long>((seconds - static_cast<double>(limit.tv_sec)) * 1e9);
        int sig;
        do
            sig = seconds > 0 ? sigtimedwait(&stop_signals, nullptr, &limit)
                              : sigwaitinfo(&stop_signals, nullptr);
        while (sig < 0 && errno == EINTR);
        if (mode == "spin")
            std::printf(
                "mimodet_keep_awake: stopped; the spinners used %.2f CPU seconds\n",
                keeper.spinner_cpu_seconds());
        else
            std::printf("mimodet_keep_awake: stopped\n");
    } catch (const std::exception& e) {
        std::cerr << "mimodet_keep_awake: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
