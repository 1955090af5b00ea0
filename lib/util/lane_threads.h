/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// One thread per detector lane, for a block that keeps slots in flight across its
// general_work() calls (mimo_receiver on the GPU).

#ifndef INCLUDED_MIMODET_CORE_LANE_THREADS_H
#define INCLUDED_MIMODET_CORE_LANE_THREADS_H

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

/*!
 * n lanes, each with its own thread that runs one job at a time: a lane is idle or
 * running (post() gave it a job). A job hands its results over itself (a flag it sets
 * last); the lane is idle again once the job has returned, and on_finish (where set) is
 * then called on the lane's thread: a block's wake-up (wait_all() waits for it too).
 * finishes() counts the jobs returned, so a caller that reads it before checking its
 * slots can wait for the next without missing one. Jobs must not throw (one that does is
 * counted as returned; the exception is dropped). The destructor waits for running jobs.
 */
class lane_threads
{
public:
    explicit lane_threads(size_t n) : d_running(n, false), d_jobs(n)
    {
        d_threads.reserve(n);
        for (size_t l = 0; l < n; ++l)
            d_threads.emplace_back([this, l] { loop(l); });
    }
    lane_threads(const lane_threads&) = delete;
    lane_threads& operator=(const lane_threads&) = delete;

    ~lane_threads()
    {
        {
            std::lock_guard<std::mutex> lk(d_mutex);
            d_stop = true;
        }
        d_wake.notify_all();
        for (auto& th : d_threads)
            th.join();
    }

    size_t size() const { return d_running.size(); }

    //! Called on a lane's thread after each of its jobs (null: none).
    void set_on_finish(std::function<void()> fn)
    {
        std::lock_guard<std::mutex> lk(d_mutex);
        d_on_finish = std::move(fn);
    }

    //! Lane l (idle) runs job on its thread.
    void post(size_t l, std::function<void()> job)
    {
        {
            std::lock_guard<std::mutex> lk(d_mutex);
            if (d_running.at(l))
                throw std::logic_error("lane_threads: post to a running lane");
            d_jobs[l] = std::move(job);
            d_running[l] = true;
        }
        d_wake.notify_all();
    }

    //! An idle lane, or size() where none is.
    size_t idle_lane() const
    {
        std::lock_guard<std::mutex> lk(d_mutex);
        for (size_t l = 0; l < d_running.size(); ++l)
            if (!d_running[l])
                return l;
        return d_running.size();
    }

    //! Jobs returned so far.
    uint64_t finishes() const
    {
        std::lock_guard<std::mutex> lk(d_mutex);
        return d_finishes;
    }

    //! Waits up to period for finishes() to pass seen; true where it has.
    bool wait_finish(uint64_t seen, std::chrono::milliseconds period)
    {
        std::unique_lock<std::mutex> lk(d_mutex);
        return d_done.wait_for(lk, period, [&] { return d_finishes > seen; });
    }

    //! Waits until no lane is running (nor in on_finish).
    void wait_all()
    {
        std::unique_lock<std::mutex> lk(d_mutex);
        d_done.wait(lk, [this] {
            for (const bool r : d_running)
                if (r)
                    return false;
            return d_in_on_finish == 0;
        });
    }

private:
    void loop(size_t l)
    {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock<std::mutex> lk(d_mutex);
                d_wake.wait(lk, [&] { return d_stop || d_jobs[l]; });
                if (!d_jobs[l])
                    return; // stopping, with nothing left to run
                job.swap(d_jobs[l]);
            }
            try {
                job();
            } catch (...) {
            }
            std::function<void()> on_finish;
            {
                std::lock_guard<std::mutex> lk(d_mutex);
                d_running[l] = false;
                ++d_finishes;
                on_finish = d_on_finish;
                d_in_on_finish += on_finish ? 1 : 0;
            }
            d_done.notify_all();
            if (on_finish) {
                on_finish();
                {
                    std::lock_guard<std::mutex> lk(d_mutex);
                    --d_in_on_finish;
                }
                d_done.notify_all();
            }
        }
    }

    mutable std::mutex d_mutex;
    std::condition_variable d_wake; // lanes: a job or stop
    std::condition_variable d_done; // callers: a job returned
    std::vector<bool> d_running;
    std::vector<std::function<void()>> d_jobs; // posted, not yet taken
    std::function<void()> d_on_finish;
    uint64_t d_finishes = 0;
    int d_in_on_finish = 0; // lanes calling on_finish
    bool d_stop = false;
    // Last member: the threads start once the state above exists.
    std::vector<std::thread> d_threads;
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
