/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_CPU_KEEP_AWAKE_H
#define INCLUDED_MIMODET_CPU_KEEP_AWAKE_H

#include <gnuradio/mimodet/api.h>
#include <memory>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {

/*!
 * \brief Keeps CPUs out of their idle state while it lives, for low latency between a
 * flowgraph's threads.
 * \ingroup mimodet
 *
 * \details
 * Each slot passes from one block's thread to the next. A thread that waits for input
 * sleeps; the thread upstream wakes it with an interrupt to the CPU it will run on. An
 * idle CPU has halted first, and on a virtual machine a halted CPU has given its time
 * back to the host: the wake-up then waits until the host runs it again (milliseconds on
 * a busy host). Hosts tuned for real time keep their CPUs out of idle (kernel
 * `idle=poll`); this does it from user space:
 *   - "spin": one thread per CPU, pinned there, at SCHED_IDLE, spinning. It runs only
 *     when nothing else wants that CPU, and a thread that wakes there preempts it at
 *     once. No privileges needed. The CPUs stay busy: idle time and power go up.
 *   - "qos": holds /dev/cpu_dma_latency at 0 us, as cyclictest does (needs write access,
 *     and a cpuidle driver to act on it).
 *   - "none": nothing (a switch for flowgraphs).
 * With `confine`, every thread of the process, and so every thread they start later
 * (a top block's, when it starts after this), is confined to `cpus`, as `taskset -c`
 * would; at stop(), every thread of the process gets back the CPUs the constructing
 * thread had. On the H100 machines, spin with the flowgraph confined held the receiver's
 * p99 under 1 ms in every window measured on screened machines, where spin on every CPU
 * did not (docs/PERFORMANCE.md, "Keeping the CPUs awake, and how many").
 *
 * With `slice_us`, every thread of the process, and every thread they start later, asks
 * the kernel for a time slice of that many microseconds (sched_setattr's sched_runtime
 * for SCHED_OTHER threads; Linux 6.12 and later, EEVDF; no privileges needed). A thread
 * woken onto a CPU where another thread runs can wait up to that thread's slice (2.8 ms
 * by default on the 16-CPU machines); a shorter slice is meant to shorten that wait. The
 * spinners do not count here (SCHED_IDLE yields at once); this is for CPUs shared by the
 * flowgraph's own threads, such as stages that share a slot's antennas out on several
 * threads. Any mode takes it; at stop() those threads get the kernel's default back.
 * On the H100 machines a 100 us slice made no measurable difference to the receiver
 * (docs/PERFORMANCE.md, "Keeping the CPUs awake, and how many").
 *
 * Bad arguments (a mode other than these, a CPU this process may not use, confine
 * without spin, a slice outside 100..100000 us) throw std::invalid_argument at
 * construction; a system refusal (qos without access, a kernel without per-thread
 * slices) throws std::runtime_error.
 */
class MIMODET_API cpu_keep_awake
{
public:
    /*!
     * \param mode "spin", "qos" or "none".
     * \param cpus CPUs to spin on (spin only); empty: every CPU this process may run on.
     * \param confine confine the process's threads to those CPUs (spin only).
     * \param slice_us time slice for the process's threads in us (100..100000), 0: the
     *        kernel's default.
     */
    explicit cpu_keep_awake(const std::string& mode = "spin",
                            const std::vector<int>& cpus = {},
                            bool confine = false,
                            int slice_us = 0);
    ~cpu_keep_awake();
    cpu_keep_awake(const cpu_keep_awake&) = delete;
    cpu_keep_awake& operator=(const cpu_keep_awake&) = delete;

    //! Stops the spinners, lets go of /dev/cpu_dma_latency, gives every thread the CPUs
    //! the constructing thread had before confine and the kernel's default slice; the
    //! destructor does it too. Idempotent.
    void stop();
    //! Whether it is keeping CPUs awake (false after stop(), and with mode "none").
    bool active() const;
    const std::string& mode() const;
    //! The CPUs with a spinning thread (empty unless mode is spin).
    const std::vector<int>& cpus() const;
    //! The time slice asked for the process's threads, in us (0: none asked).
    int slice_us() const;
    //! CPU time the spinning threads have used so far, in seconds (their total at
    //! stop() once stopped; 0 without spin).
    double spinner_cpu_seconds() const;

    //! The CPUs this process may run on (the calling thread's affinity), ascending.
    static std::vector<int> allowed_cpus();
    //! "0-5,8" -> {0, 1, 2, 3, 4, 5, 8}, taskset's list form; "" -> {}.
    //! std::invalid_argument for anything else or a CPU listed twice.
    static std::vector<int> parse_cpu_list(const std::string& list);

private:
    struct impl;
    std::unique_ptr<impl> d_impl;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CPU_KEEP_AWAKE_H */
