/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The CPUs kept out of their idle state, for mimodet_flowgraph_bench --awake and the
// mimodet_keep_awake tool.
//
// A block's thread that waits for input sleeps; the block upstream wakes it with an
// inter-processor interrupt to the CPU it will run on. An idle CPU has halted first, and
// on a virtual machine a halted virtual CPU has given its time back to the host: the
// wake-up then waits until the host runs that CPU again. Hosts tuned for real time keep
// their CPUs out of idle (kernel `idle=poll`, or the PM QoS request cyclictest holds on
// /dev/cpu_dma_latency). This does the same from user space:
//   qos   holds /dev/cpu_dma_latency at 0 us while the object lives (the kernel's cpuidle
//         driver then polls instead of halting; needs write access to it, and a cpuidle
//         driver: without one, as on the GPU machines of docs/PERFORMANCE.md, it does
//         nothing);
//   spin  one thread per CPU, pinned there, at SCHED_IDLE: it runs only when nothing else
//         wants that CPU, and a thread that wakes there preempts it at once. The CPUs
//         stay busy, so the machine's idle time and power go up.

#ifndef INCLUDED_MIMODET_APPS_CPU_KEEP_AWAKE_H
#define INCLUDED_MIMODET_APPS_CPU_KEEP_AWAKE_H

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace cpu_awake {

//! The CPUs this process may run on (its affinity mask), in ascending order.
inline std::vector<int> allowed_cpus()
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        throw std::runtime_error(std::string("sched_getaffinity: ") +
                                 std::strerror(errno));
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed))
            cpus.push_back(c);
    return cpus;
}

//! "0-5,8" -> {0, 1, 2, 3, 4, 5, 8} (taskset's list form); std::invalid_argument on
//! anything else, a CPU number outside 0 .. CPU_SETSIZE - 1, or a repeated CPU.
inline std::vector<int> parse_cpu_list(const std::string& s)
{
    auto bad = [&](const std::string& why) {
        return std::invalid_argument("CPU list '" + s + "': " + why);
    };
    auto number = [&](const std::string& t) {
        if (t.empty() || t.size() > 5 ||
            t.find_first_not_of("0123456789") != std::string::npos)
            throw bad("'" + t + "' is not a CPU number");
        const int c = std::stoi(t);
        if (c >= CPU_SETSIZE)
            throw bad("CPU " + t + " is beyond " + std::to_string(CPU_SETSIZE - 1));
        return c;
    };
    std::vector<int> cpus;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t end = std::min(s.find(',', start), s.size());
        const std::string item = s.substr(start, end - start);
        const size_t dash = item.find('-');
        const int lo = number(item.substr(0, dash));
        const int hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
        if (hi < lo)
            throw bad("range '" + item + "' runs backwards");
        for (int c = lo; c <= hi; ++c) {
            for (int have : cpus)
                if (have == c)
                    throw bad("CPU " + std::to_string(c) + " appears twice");
            cpus.push_back(c);
        }
        start = end + 1;
    }
    return cpus;
}

//! The CPU's hint that this is a spin loop (a sibling hyperthread gets the core).
inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

class keeper
{
public:
    //! mode: none, qos or spin; cpus: where spin runs (empty: every CPU this process may
    //! run on). Throws std::invalid_argument for a bad mode or a CPU this process may
    //! not use, std::runtime_error where the system refuses.
    keeper(const std::string& mode, std::vector<int> cpus = {})
    {
        if (mode == "qos") {
            d_qos_fd = ::open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
            const int32_t zero = 0;
            if (d_qos_fd < 0 || ::write(d_qos_fd, &zero, sizeof zero) != sizeof zero) {
                const std::string why = std::strerror(errno);
                if (d_qos_fd >= 0)
                    ::close(d_qos_fd);
                throw std::runtime_error("qos: cannot hold /dev/cpu_dma_latency at 0 (" +
                                         why + ")");
            }
        } else if (mode == "spin") {
            const std::vector<int> allowed = allowed_cpus();
            if (cpus.empty())
                cpus = allowed;
            for (int c : cpus) {
                bool ok = false;
                for (int a : allowed)
                    ok = ok || a == c;
                if (!ok)
                    throw std::invalid_argument("spin: CPU " + std::to_string(c) +
                                                " is not one this process may run on");
            }
            start_spinners(cpus);
        } else if (mode != "none")
            throw std::invalid_argument("mode must be none, qos or spin, not '" + mode +
                                        "'");
    }
    ~keeper()
    {
        stop();
        if (d_qos_fd >= 0)
            ::close(d_qos_fd);
    }
    keeper(const keeper&) = delete;
    keeper& operator=(const keeper&) = delete;

    //! CPU time the spinning threads have used so far, in seconds (0 without spin).
    double spinner_cpu_seconds() const
    {
        double s = 0;
        for (const clockid_t c : d_clocks) {
            timespec ts{};
            if (clock_gettime(c, &ts) == 0)
                s += ts.tv_sec + 1e-9 * ts.tv_nsec;
        }
        return s;
    }
    //! The CPUs with a spinning thread.
    const std::vector<int>& spinning_cpus() const { return d_cpus; }

private:
    void start_spinners(const std::vector<int>& cpus)
    {
        d_cpus = cpus;
        d_clocks.assign(cpus.size(), clockid_t{});
        std::vector<int> status(cpus.size(), 0);
        std::atomic<size_t> started{ 0 };
        for (size_t i = 0; i < cpus.size(); ++i)
            d_threads.emplace_back([this, i, &status, &started] {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(d_cpus[i], &one);
                sched_param sp{};
                int rc = pthread_setaffinity_np(pthread_self(), sizeof one, &one);
                if (rc == 0)
                    rc = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
                if (rc == 0)
                    rc = pthread_getcpuclockid(pthread_self(), &d_clocks[i]);
                status[i] = rc;
                started.fetch_add(1);
                if (rc != 0)
                    return;
                while (!d_stop.load(std::memory_order_relaxed))
                    cpu_relax();
            });
        while (started.load() < cpus.size())
            std::this_thread::yield();
        for (size_t i = 0; i < cpus.size(); ++i)
            if (status[i] != 0) {
                const int cpu = cpus[i], rc = status[i];
                stop();
                throw std::runtime_error("spin: CPU " + std::to_string(cpu) + ": " +
                                         std::strerror(rc));
            }
    }
    void stop()
    {
        d_stop = true;
        for (auto& t : d_threads)
            if (t.joinable())
                t.join();
        d_threads.clear();
        d_clocks.clear();
    }

    int d_qos_fd = -1;
    std::vector<int> d_cpus;
    std::vector<clockid_t> d_clocks;
    std::vector<std::thread> d_threads;
    std::atomic<bool> d_stop{ false };
};

} // namespace cpu_awake

#endif
