/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The cancellation state of one detector (detector::cancel, set_cancel_poll): a flag any
// thread may set and the calling thread's poll. Workers read the flag between vectors;
// the thread that called detect also runs the poll (at most every poll_interval), so a
// signal check or a thread interruption can end a call that the caller's own thread has
// no other way to reach while it computes or waits.

#ifndef INCLUDED_MIMODET_CORE_CANCELLATION_H
#define INCLUDED_MIMODET_CORE_CANCELLATION_H

#include <atomic>
#include <chrono>
#include <functional>
#include <gnuradio/mimodet/detector.h>
#include <utility>

namespace gr {
namespace mimodet {
namespace core {

class cancel_token
{
public:
    using clock = std::chrono::steady_clock;
    //! How often the calling thread runs the poll during a call: short against the
    //! 100 ms a person notices, long against the cost of a poll (Python: taking the GIL).
    static constexpr std::chrono::milliseconds poll_interval{ 20 };

    //! Any thread.
    void request() noexcept { d_flag.store(true, std::memory_order_release); }
    void clear() noexcept { d_flag.store(false, std::memory_order_release); }
    bool requested() const noexcept { return d_flag.load(std::memory_order_acquire); }

    //! Between calls only (the calling thread reads it without a lock).
    void set_poll(std::function<bool()> poll) { d_poll = std::move(poll); }

    //! The calling thread, at the start of a call: the first poll is due one interval on.
    void begin_call() { d_next_poll = clock::now() + poll_interval; }

    //! The calling thread: runs the poll where it is due (a true result requests
    //! cancellation), then returns requested().
    bool check()
    {
        if (d_poll) {
            const auto now = clock::now();
            if (now >= d_next_poll) {
                d_next_poll = now + poll_interval;
                if (d_poll())
                    request();
            }
        }
        return requested();
    }

    //! Consumes the request, so the detector is usable for the next call, and throws.
    [[noreturn]] void raise()
    {
        clear();
        throw cancelled("mimodet: detection cancelled");
    }

private:
    std::atomic<bool> d_flag{ false };
    std::function<bool()> d_poll;
    clock::time_point d_next_poll{};
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
