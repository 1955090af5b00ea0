/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// A small persistent thread pool shared by the CPU detectors (lib/core/detector.cc) and
// the mimo_detector block's GPU lanes.

#ifndef INCLUDED_MIMODET_CORE_WORKER_POOL_H
#define INCLUDED_MIMODET_CORE_WORKER_POOL_H

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
 * MIMODET_ANTENNA_THREADS=1..8 overrides it (at most n_rx; a measurement switch, read
 * when a block is made).
 */
inline int antenna_threads(int fft_size, int n_rx)
{
    if (const char* v = std::getenv("MIMODET_ANTENNA_THREADS")) {
        const int n = std::atoi(v);
        if (n >= 1 && n <= 8)
            return std::min(n, std::max(1, n_rx));
    }
    if (fft_size < 1024)
        return 1;
    const int hw = static_cast<int>(std::thread::hardware_concurrency());
    return std::max(1, std::min({ n_rx, hw, 4 }));
}

/*!
 * Persistent workers: run(n, fn) calls fn(t) for t in [0, n), t = 0 on the caller and
 * t >= 1 on worker t, and returns when all are done (rethrowing the first exception).
 * A share index always lands on the same thread, so per-share state (a detector kernel,
 * a GPU pipeline) stays with one thread. Starting and joining std::threads per call cost
 * about as much as the work shared in the CPU detectors' calls. Not reentrant: one run
 * at a time. Workers sleep on a condition variable between runs.
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

    void run(size_t n, const std::function<void(size_t)>& fn)
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
            const size_t t = d_threads.size() + 1;
            d_threads.emplace_back([this, t, gen] { loop(t, gen); });
        }
        {
            std::lock_guard<std::mutex> lk(d_mutex);
            d_fn = &fn;
            d_active = n;
            d_pending = n - 1;
            d_errors.assign(n, nullptr);
            ++d_gen;
        }
        d_wake.notify_all();

        std::exception_ptr mine;
        try {
            fn(0);
        } catch (...) {
            mine = std::current_exception();
        }
        // Always wait: the workers reference fn and the caller's buffers.
        std::vector<std::exception_ptr> errors;
        {
            std::unique_lock<std::mutex> lk(d_mutex);
            d_done.wait(lk, [this] { return d_pending == 0; });
            d_fn = nullptr;
            errors.swap(d_errors);
        }
        if (mine)
            std::rethrow_exception(mine);
        for (auto& e : errors)
            if (e)
                std::rethrow_exception(e);
    }

private:
    void loop(size_t t, uint64_t seen)
    {
        for (;;) {
            const std::function<void(size_t)>* fn;
            {
                std::unique_lock<std::mutex> lk(d_mutex);
                d_wake.wait(lk, [&] { return d_stop || d_gen != seen; });
                if (d_stop)
                    return;
                seen = d_gen;
                // A call that needs fewer threads leaves the higher workers idle; they
                // are not counted in d_pending, so skipping a generation is harmless.
                if (t >= d_active)
                    continue;
                fn = d_fn;
            }
            std::exception_ptr err;
            try {
                (*fn)(t);
            } catch (...) {
                err = std::current_exception();
            }
            {
                std::lock_guard<std::mutex> lk(d_mutex);
                d_errors[t] = err;
                if (--d_pending == 0)
                    d_done.notify_one();
            }
        }
    }

    std::mutex d_mutex;
    std::condition_variable d_wake; // workers: a new generation or stop
    std::condition_variable d_done; // caller: d_pending reached 0
    std::vector<std::thread> d_threads; // worker t is d_threads[t - 1]
    const std::function<void(size_t)>* d_fn = nullptr;
    std::vector<std::exception_ptr> d_errors;
    uint64_t d_gen = 0;
    size_t d_active = 0;
    size_t d_pending = 0;
    bool d_stop = false;
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
