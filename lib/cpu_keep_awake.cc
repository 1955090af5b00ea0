/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <gnuradio/mimodet/cpu_keep_awake.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <pthread.h>
#include <sched.h>
#include <stdexcept>
#include <sys/syscall.h>
#include <sys/types.h>
#include <thread>
#include <unistd.h>

namespace gr {
namespace mimodet {

namespace {

//! The CPU's hint that this is a spin loop (a sibling hyperthread gets the core).
inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

cpu_set_t to_set(const std::vector<int>& cpus)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int c : cpus)
        CPU_SET(c, &s);
    return s;
}

//! Thread ids of this process now (/proc/self/task).
std::vector<pid_t> process_threads()
{
    std::vector<pid_t> tids;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
        const std::string n = e.path().filename().string();
        if (!n.empty() && n.find_first_not_of("0123456789") == std::string::npos)
            tids.push_back(static_cast<pid_t>(std::stol(n)));
    }
    return tids;
}

//! op(tid) (0 or an errno) on every thread of the process; threads that ended meanwhile
//! (ESRCH) are skipped. Returns 0 or the first other errno.
template <typename Op>
int on_every_thread(const Op& op)
{
    for (pid_t tid : process_threads())
        if (const int rc = op(tid); rc != 0 && rc != ESRCH)
            return rc;
    return 0;
}

//! Every thread of the process onto `set`. Returns 0 or errno.
int set_process_affinity(const cpu_set_t& set)
{
    return on_every_thread([&set](pid_t tid) {
        return sched_setaffinity(tid, sizeof set, &set) == 0 ? 0 : errno;
    });
}

// sched_setattr(2)'s argument (glibc 2.36 has no wrapper for it).
struct sched_attr_v1 {
    uint32_t size = sizeof(sched_attr_v1);
    uint32_t policy = 0;
    uint64_t flags = 0;
    int32_t nice = 0;
    uint32_t priority = 0;
    uint64_t runtime = 0, deadline = 0, period = 0; // runtime: a fair thread's slice, ns
    uint32_t util_min = 0, util_max = 0;
};
constexpr uint64_t k_sched_flag_reset_on_fork = 0x01;

//! Thread tid's (0: the caller's) scheduling attributes into a. Returns 0 or errno.
int get_attr(pid_t tid, sched_attr_v1& a)
{
    return syscall(SYS_sched_getattr, tid, &a, sizeof a, 0) == 0 ? 0 : errno;
}

//! Whether a thread has a time slice of its own (SCHED_OTHER or SCHED_BATCH).
bool is_fair(const sched_attr_v1& a)
{
    return a.policy == SCHED_OTHER || a.policy == SCHED_BATCH;
}

//! Thread tid's slice to slice_ns (0: the kernel's default), keeping its policy, nice
//! and reset-on-fork; threads at other policies (the spinners' SCHED_IDLE, real time)
//! are left as they are, and so are those whose slice is not `only_if_ns` where that
//! is given. Returns 0 or errno.
int set_thread_slice(pid_t tid, uint64_t slice_ns, uint64_t only_if_ns = 0)
{
    sched_attr_v1 a;
    if (const int rc = get_attr(tid, a))
        return rc;
    if (!is_fair(a) || (only_if_ns != 0 && a.runtime != only_if_ns))
        return 0;
    a.size = sizeof a;
    a.flags &= k_sched_flag_reset_on_fork;
    a.runtime = slice_ns;
    a.deadline = a.period = 0;
    return syscall(SYS_sched_setattr, tid, &a, 0) == 0 ? 0 : errno;
}

//! Whether the kernel reports slice_ns as the calling thread's slice (true where the
//! thread is not a fair one: its slice is neither set nor reported).
bool own_slice_is(uint64_t slice_ns)
{
    sched_attr_v1 a;
    return get_attr(0, a) == 0 && (!is_fair(a) || a.runtime == slice_ns);
}

} // namespace

struct cpu_keep_awake::impl {
    std::string mode;
    std::vector<int> cpus;
    int qos_fd = -1;
    bool confined = false;
    cpu_set_t saved_affinity;
    int slice_us = 0;
    bool sliced = false;
    std::vector<std::thread> threads;
    std::vector<clockid_t> clocks;
    std::atomic<bool> stop_flag{ false };
    double final_seconds = 0;
    bool active = false;

    double running_seconds() const
    {
        double s = 0;
        for (const clockid_t c : clocks) {
            timespec ts{};
            if (clock_gettime(c, &ts) == 0)
                s += ts.tv_sec + 1e-9 * ts.tv_nsec;
        }
        return s;
    }

    void start_spinners()
    {
        clocks.assign(cpus.size(), clockid_t{});
        std::vector<int> status(cpus.size(), 0);
        std::atomic<size_t> started{ 0 };
        for (size_t i = 0; i < cpus.size(); ++i)
            threads.emplace_back([this, i, &status, &started] {
                const cpu_set_t one = to_set({ cpus[i] });
                sched_param sp{};
                int rc = pthread_setaffinity_np(pthread_self(), sizeof one, &one);
                if (rc == 0)
                    rc = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
                if (rc == 0)
                    rc = pthread_getcpuclockid(pthread_self(), &clocks[i]);
                status[i] = rc;
                started.fetch_add(1);
                if (rc != 0)
                    return;
                while (!stop_flag.load(std::memory_order_relaxed))
                    cpu_relax();
            });
        // The threads read `status` and `started` on this stack: wait for all of them.
        while (started.load() < cpus.size())
            std::this_thread::yield();
        for (size_t i = 0; i < cpus.size(); ++i)
            if (status[i] != 0) {
                const int cpu = cpus[i], rc = status[i];
                stop();
                throw std::runtime_error("cpu_keep_awake: spin on CPU " +
                                         std::to_string(cpu) + ": " + std::strerror(rc));
            }
    }

    void stop()
    {
        if (!threads.empty()) {
            final_seconds = running_seconds();
            stop_flag = true;
            for (auto& t : threads)
                t.join();
            threads.clear();
            clocks.clear();
        }
        if (qos_fd >= 0) {
            ::close(qos_fd);
            qos_fd = -1;
        }
        if (confined) {
            set_process_affinity(saved_affinity); // best effort: nothing to do on error
            confined = false;
        }
        if (sliced) { // best effort too
            on_every_thread([ns = 1000ull * slice_us](pid_t tid) {
                set_thread_slice(tid, 0, ns);
                return 0; // on to the next thread whatever happened
            });
            sliced = false;
        }
        active = false;
    }

    //! Every SCHED_OTHER thread of the process to slice_us; threads started later
    //! inherit it. runtime_error where the kernel refuses or ignores it.
    void apply_slice()
    {
        const uint64_t ns = 1000ull * slice_us;
        sliced = true;
        if (const int rc =
                on_every_thread([ns](pid_t tid) { return set_thread_slice(tid, ns); })) {
            stop();
            throw std::runtime_error("cpu_keep_awake: slice: sched_setattr: " +
                                     std::string(std::strerror(rc)));
        }
        // Kernels before 6.12 take sched_runtime for a fair thread and ignore it.
        if (!own_slice_is(ns)) {
            stop();
            throw std::runtime_error(
                "cpu_keep_awake: this kernel does not take a time slice per thread "
                "(sched_setattr's sched_runtime; Linux 6.12 or later)");
        }
    }
};

cpu_keep_awake::cpu_keep_awake(const std::string& mode,
                               const std::vector<int>& cpus,
                               bool confine,
                               int slice_us)
    : d_impl(std::make_unique<impl>())
{
    impl& d = *d_impl;
    if (mode != "spin" && mode != "qos" && mode != "none")
        throw std::invalid_argument(
            "cpu_keep_awake: mode must be spin, qos or none, not '" + mode + "'");
    if (mode != "spin" && (confine || !cpus.empty()))
        throw std::invalid_argument(
            "cpu_keep_awake: cpus and confine apply to mode spin only");
    if (slice_us != 0 && (slice_us < 100 || slice_us > 100000))
        throw std::invalid_argument(
            "cpu_keep_awake: slice_us must be 0 (the kernel's default) or 100..100000, "
            "not " +
            std::to_string(slice_us));
    const std::vector<int> allowed = allowed_cpus();
    for (size_t i = 0; i < cpus.size(); ++i) {
        if (std::find(allowed.begin(), allowed.end(), cpus[i]) == allowed.end())
            throw std::invalid_argument("cpu_keep_awake: CPU " + std::to_string(cpus[i]) +
                                        " is not one this process may run on");
        if (std::find(cpus.begin(), cpus.begin() + i, cpus[i]) != cpus.begin() + i)
            throw std::invalid_argument("cpu_keep_awake: CPU " + std::to_string(cpus[i]) +
                                        " is listed twice");
    }
    d.mode = mode;
    d.slice_us = slice_us;
    // Before the spinners: they set their own policy (SCHED_IDLE) and need no slice.
    if (slice_us != 0)
        d.apply_slice();
    if (mode == "qos") {
        d.qos_fd = ::open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
        const int32_t zero = 0;
        if (d.qos_fd < 0 || ::write(d.qos_fd, &zero, sizeof zero) != sizeof zero) {
            const std::string why = std::strerror(errno);
            if (d.qos_fd >= 0)
                ::close(d.qos_fd);
            d.qos_fd = -1;
            d.stop(); // the slice, where one was given
            throw std::runtime_error(
                "cpu_keep_awake: cannot hold /dev/cpu_dma_latency at 0 (" + why + ")");
        }
        d.active = true;
    } else if (mode == "spin") {
        d.cpus = cpus.empty() ? allowed : cpus;
        if (confine) {
            if (sched_getaffinity(0, sizeof d.saved_affinity, &d.saved_affinity) != 0) {
                const std::string why = std::strerror(errno);
                d.stop();
                throw std::runtime_error("cpu_keep_awake: sched_getaffinity: " + why);
            }
            d.confined = true;
            if (const int rc = set_process_affinity(to_set(d.cpus))) {
                d.stop();
                throw std::runtime_error("cpu_keep_awake: confine: " +
                                         std::string(std::strerror(rc)));
            }
        }
        d.start_spinners();
        d.active = true;
    }
}

cpu_keep_awake::~cpu_keep_awake() { d_impl->stop(); }

void cpu_keep_awake::stop() { d_impl->stop(); }

bool cpu_keep_awake::active() const { return d_impl->active; }

const std::string& cpu_keep_awake::mode() const { return d_impl->mode; }

const std::vector<int>& cpu_keep_awake::cpus() const { return d_impl->cpus; }

int cpu_keep_awake::slice_us() const { return d_impl->slice_us; }

double cpu_keep_awake::spinner_cpu_seconds() const
{
    return d_impl->threads.empty() ? d_impl->final_seconds : d_impl->running_seconds();
}

std::vector<int> cpu_keep_awake::allowed_cpus()
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        throw std::runtime_error(std::string("cpu_keep_awake: sched_getaffinity: ") +
                                 std::strerror(errno));
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed))
            cpus.push_back(c);
    return cpus;
}

std::vector<int> cpu_keep_awake::parse_cpu_list(const std::string& list)
{
    auto bad = [&](const std::string& why) {
        return std::invalid_argument("CPU list '" + list + "': " + why);
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
    if (list.empty())
        return cpus;
    size_t start = 0;
    while (start <= list.size()) {
        const size_t end = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, end - start);
        const size_t dash = item.find('-');
        const int lo = number(item.substr(0, dash));
        const int hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
        if (hi < lo)
            throw bad("range '" + item + "' runs backwards");
        for (int c = lo; c <= hi; ++c) {
            if (std::find(cpus.begin(), cpus.end(), c) != cpus.end())
                throw bad("CPU " + std::to_string(c) + " appears twice");
            cpus.push_back(c);
        }
        start = end + 1;
    }
    return cpus;
}

} // namespace mimodet
} // namespace gr
