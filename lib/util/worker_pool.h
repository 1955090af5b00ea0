/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// A small persistent thread pool shared by the CPU detectors (lib/detect/detector.cc) and
// the mimo_detector block's GPU lanes.

#ifndef INCLUDED_MIMODET_CORE_WORKER_POOL_H
#define INCLUDED_MIMODET_CORE_WORKER_POOL_H

#include "util/tuning.h"
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

/*!
 * Threads for a receiver stage that shares a slot's antennas out (ofdm_sync's core,
 * ofdm_demod): min(n_rx, hardware threads, 4) where the FFT is 1024 points or more (10 MHz
 * and up), else 1: below that a slot's work per antenna costs less than the hand-over.
 * MIMODET_ANTENNA_THREADS=1..8 overrides it (at most n_rx; tuning.h).
 */
inline int antenna_threads(int fft_size, int n_rx)
{
    if (const int n = tuning::antenna_threads())
        return std::min(n, std::max(1, n_rx));
    if (fft_size < 1024)
        return 1;
    const int hw = static_cast<int>(std::thread::hardware_concurrency());
    return std::max(1, std::min({ n_rx, hw, 4 }));
}

/*!
 * Persistent workers: run(n, fn) calls fn(t) once for every t in [0, n) and returns when
 * all are done (rethrowing the first exception, in share order). The caller runs share 0
 * and then, like the workers, takes whichever shares are left, so a worker that is slow
 * to wake (its CPU busy, or not running at all on a virtual machine) holds up only a
 * share it has started, not one set aside for it. Per-share state (a detector kernel, a
 * GPU pipeline) is indexed by t: one thread at a time works on a share, though not
 * always the same thread. Starting and joining std::threads per call cost about as much
 * as the work shared in the CPU detectors' calls. Not reentrant: one run at a time.
 * Workers sleep on a condition variable between runs. A run has no way to stop its
 * shares: fn checks its own cancellation; the caller's poll (run's third argument) is
 * how a caller whose shares are done still notices a request while it waits.
 */
class worker_pool
{
public:
    worker_pool() = default;
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;

    ~worker_pool()
    {
        {
            std::lock_guard<std::mutex> lk(d_mutex);
            d_stop = true;
        }
        d_wake.notify_all();
        for (auto& th : d_threads)
            th.join();
    }

    void run(size_t n, const std::function<void(size_t)>& fn) { run(n, fn, nullptr); }

    /*!
     * As run(n, fn); poll (where non-null) is called on the caller's thread about every
     * poll_period while it waits for the workers' shares (a detector's cancel check,
     * which the shares then see).
     */
    void run(size_t n,
             const std::function<void(size_t)>& fn,
             const std::function<void()>* poll,
             std::chrono::milliseconds poll_period = std::chrono::milliseconds(20))
    {
        if (n <= 1) {
            fn(0);
            return;
        }
        // Created lazily, so a single-threaded detector never owns a thread.
        while (d_threads.size() + 1 < n) {
            uint64_t gen;
            {
                std::lock_guard<std::mutex> lk(d_mutex);
                gen = d_gen;
            }
            d_threads.emplace_back([this, gen] { loop(gen); });
        }
        {
            std::lock_guard<std::mutex> lk(d_mutex);
            d_fn = &fn;
            d_n = n;
            d_next = 1; // share 0 is the caller's
            d_unfinished = n;
            d_errors.assign(n, nullptr);
            ++d_gen;
        }
        d_wake.notify_all();
        finish(0, fn);
        const std::function<void(size_t)>* f;
        size_t t;
        while (claim(f, t))
            finish(t, *f);
        // Always wait: the workers reference fn and the caller's buffers.
        std::vector<std::exception_ptr> errors;
        {
            std::unique_lock<std::mutex> lk(d_mutex);
            const auto all_done = [this] { return d_unfinished == 0; };
            if (poll) {
                while (!d_done.wait_for(lk, poll_period, all_done)) {
                    lk.unlock();
                    (*poll)();
                    lk.lock();
                }
            } else {
                d_done.wait(lk, all_done);
            }
            d_fn = nullptr;
            errors.swap(d_errors);
        }
        for (auto& e : errors)
            if (e)
                std::rethrow_exception(e);
    }

private:
    //! The next share of the current run, if one is left (with the run's function).
    bool claim(const std::function<void(size_t)>*& fn, size_t& t)
    {
        std::lock_guard<std::mutex> lk(d_mutex);
        if (!d_fn || d_next >= d_n)
            return false;
        fn = d_fn;
        t = d_next++;
        return true;
    }

    //! Runs share t and counts it done (the last one wakes the caller).
    void finish(size_t t, const std::function<void(size_t)>& fn)
    {
        std::exception_ptr err;
        try {
            fn(t);
        } catch (...) {
            err = std::current_exception();
        }
        std::lock_guard<std::mutex> lk(d_mutex);
        d_errors[t] = err;
        if (--d_unfinished == 0)
            d_done.notify_one();
    }

    void loop(uint64_t seen)
    {
        for (;;) {
            {
                std::unique_lock<std::mutex> lk(d_mutex);
                d_wake.wait(lk, [&] { return d_stop || d_gen != seen; });
                if (d_stop)
                    return;
                seen = d_gen;
            }
            // A worker that wakes late finds the shares taken (or those of a later run,
            // which it may take as well: claim() hands out the current run's).
            const std::function<void(size_t)>* fn;
            size_t t;
            while (claim(fn, t))
                finish(t, *fn);
        }
    }

    std::mutex d_mutex;
    std::condition_variable d_wake; // workers: a new run or stop
    std::condition_variable d_done; // caller: every share finished
    std::vector<std::thread> d_threads;
    const std::function<void(size_t)>* d_fn = nullptr; // the current run's; null between runs
    std::vector<std::exception_ptr> d_errors;          // per share
    uint64_t d_gen = 0;
    size_t d_n = 0;          // shares of the current run
    size_t d_next = 0;       // the next share to hand out
    size_t d_unfinished = 0; // shares not yet finished
    bool d_stop = false;
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
