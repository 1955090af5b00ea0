/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The benchmark's source (slot_replay) and the state it shares with the sink and main.

#ifndef INCLUDED_MIMODET_FLOWGRAPH_BENCH_REPLAY_SOURCE_H
#define INCLUDED_MIMODET_FLOWGRAPH_BENCH_REPLAY_SOURCE_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <gnuradio/io_signature.h>
#include <gnuradio/sync_block.h>
#include <memory>
#include <pmt/pmt.h>
#include <stdexcept>
#include <string>
#include <sys/prctl.h>
#include <thread>
#include <vector>

namespace fg_bench {

using steady = std::chrono::steady_clock;

// ------------------------------------------------------------------------------------
// State shared by the source (entry stamps), the sink (exits) and main (the window).

struct shared_state {
    static constexpr size_t cap = 1 << 16;   // slots in flight can never come near this
    std::vector<std::atomic<int64_t>> stamp; //!< entry time (ns, steady) of slot k % cap
    //! When the source's work() call that completed slot k % cap returned it (paced: at
    //! or after its entry time; later when the source's thread ran late).
    std::vector<std::atomic<int64_t>> handed;
    std::atomic<uint64_t> emitted{ 0 }; //!< slots handed to the receiver
    std::atomic<uint64_t> stalls{ 0 };  //!< --stall-ms: stalls the source has made so far
    std::atomic<bool> stop{ false };    //!< the source ends the stream

    shared_state() : stamp(cap), handed(cap) {}
    static int64_t now_ns()
    {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   steady::now().time_since_epoch())
            .count();
    }
};

// ------------------------------------------------------------------------------------
// slot_replay: n_rx outputs, the pre-generated slots in a loop, a "slot" tag (ns) on the
// first item of every slot, entry stamps, optional pacing (whole slots at t0 + k / rate).

class slot_replay : public gr::sync_block
{
public:
    using sptr = std::shared_ptr<slot_replay>;

    //! chunks: pieces per slot handed over one at a time (a radio delivers samples in
    //! packets); items_per_slot % chunks == 0.
    slot_replay(std::shared_ptr<const std::vector<std::vector<gr_complex>>> data,
                int n_slots,
                int items_per_slot,
                int vlen,
                double rate,
                int chunks,
                int spin_us,
                double stall_ms,
                double stall_every_ms,
                shared_state& st)
        : gr::sync_block("slot_replay",
                         gr::io_signature::make(0, 0, 0),
                         gr::io_signature::make(static_cast<int>(data->size()),
                                                static_cast<int>(data->size()),
                                                sizeof(gr_complex) * vlen)),
          d_data(std::move(data)), d_n_slots(n_slots), d_per_slot(items_per_slot),
          d_vlen(vlen), d_chunks(chunks), d_per_chunk(items_per_slot / chunks),
          d_period_ns(rate > 0 ? 1e9 / rate : 0), d_spin_ns(1000ll * spin_us),
          d_stall_ns(static_cast<int64_t>(stall_ms * 1e6)),
          d_stall_every_ns(static_cast<int64_t>(stall_every_ms * 1e6)), d_st(st),
          d_key(pmt::mp("slot")), d_src(pmt::mp("slot_replay"))
    {
        if (chunks < 1 || items_per_slot % chunks != 0)
            throw std::invalid_argument("--chunks must divide the items of a slot (" +
                                        std::to_string(items_per_slot) + ")");
        set_output_multiple(d_per_chunk); // whole chunks per call
        set_tag_propagation_policy(TPP_DONT);
    }

    int work(int noutput_items,
             gr_vector_const_void_star&,
             gr_vector_void_star& output_items) override
    {
        if (d_st.stop.load())
            return WORK_DONE;
        int n = noutput_items / d_per_chunk;
        const uint64_t c0 = d_chunk; // chunks handed over so far
        const double chunk_ns = d_period_ns / d_chunks;
        // Paced: when the next chunk is not due yet, it is copied out first and handed
        // over at its arrival time (a radio's samples are in memory when they arrive),
        // with a sleep to shortly before that time and a spin for the rest: a sleep alone
        // wakes 50-150 us late, which would count as the receiver's latency.
        int64_t hand_over_at = 0;
        if (d_period_ns > 0) {
            if (d_t0 < 0) {
                d_t0 = shared_state::now_ns();
                d_next_stall = d_t0 + d_stall_every_ns;
                // This thread's sleeps end on time (default slack: up to 50 us late).
                prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
            }
            if (d_stall_ns > 0 && shared_state::now_ns() >= d_next_stall) {
                // --stall-ms: this thread does not run for a while; what falls due
                // meanwhile is handed over afterwards, as fast as the buffer takes it.
                if (!wait_until(d_next_stall + d_stall_ns))
                    return WORK_DONE;
                d_st.stalls.fetch_add(1);
                while (d_next_stall <= shared_state::now_ns())
                    d_next_stall += d_stall_every_ns;
            }
            const int64_t now = shared_state::now_ns();
            const int64_t due =
                static_cast<int64_t>(std::floor((now - d_t0) / chunk_ns)) + 1 -
                static_cast<int64_t>(c0);
            if (due > 0)
                n = static_cast<int>(std::min<int64_t>(n, due));
            else {
                n = 1;
                hand_over_at = d_t0 + static_cast<int64_t>(c0 * chunk_ns);
            }
        }
        const size_t chunk_len = static_cast<size_t>(d_per_chunk) * d_vlen;
        const size_t slot_len = static_cast<size_t>(d_per_slot) * d_vlen;
        const int64_t now = shared_state::now_ns();
        d_completed.clear();
        for (int j = 0; j < n; ++j) {
            const uint64_t q = c0 + j;
            const uint64_t k = q / d_chunks; // slot
            const uint64_t part = q % d_chunks;
            const size_t src =
                static_cast<size_t>(k % d_n_slots) * slot_len + part * chunk_len;
            for (size_t a = 0; a < d_data->size(); ++a) {
                auto* out = static_cast<gr_complex*>(output_items[a]) + j * chunk_len;
                std::memcpy(
                    out, (*d_data)[a].data() + src, chunk_len * sizeof(gr_complex));
                if (part == 0)
                    add_item_tag(static_cast<unsigned>(a),
                                 nitems_written(a) +
                                     static_cast<uint64_t>(j) * d_per_chunk,
                                 d_key,
                                 pmt::from_long(static_cast<long>(k % 20)),
                                 d_src);
            }
            if (part + 1 == static_cast<uint64_t>(d_chunks)) {
                // Entry time: the moment the slot's last chunk is available downstream
                // (when paced: its scheduled arrival, so that backlog counts as latency).
                const int64_t t =
                    d_period_ns > 0 ? d_t0 + static_cast<int64_t>(q * chunk_ns) : now;
                d_st.stamp[k % shared_state::cap].store(t);
                d_completed.push_back(k);
            }
        }
        if (hand_over_at > 0 && !wait_until(hand_over_at))
            return WORK_DONE;
        const int64_t handed = shared_state::now_ns();
        for (const uint64_t k : d_completed) {
            d_st.handed[k % shared_state::cap].store(handed);
            d_st.emitted.store(k + 1);
        }
        d_chunk = c0 + n;
        return n * d_per_chunk;
    }

private:
    //! Returns at time t_ns (false when the run stops first): sleeps in steps of at most
    //! 1 ms that check the stop flag until d_spin_ns before t_ns, then spins. (Returning
    //! 0 from work() instead would be wrong: GNU Radio's thread-per-block scheduler then
    //! parks a source in its blocked-on-input wait, up to 250 ms, until a neighbour
    //! signals.)
    bool wait_until(int64_t t_ns) const
    {
        for (;;) {
            if (d_st.stop.load())
                return false;
            const int64_t left = t_ns - shared_state::now_ns();
            if (left <= 0)
                return true;
            if (left > d_spin_ns)
                std::this_thread::sleep_for(std::chrono::nanoseconds(
                    std::min<int64_t>(left - d_spin_ns, 1000000)));
#if defined(__x86_64__) || defined(__i386__)
            else
                __builtin_ia32_pause(); // spin politely (a hyperthread sibling runs on)
#endif
        }
    }

    std::shared_ptr<const std::vector<std::vector<gr_complex>>> d_data;
    int d_n_slots, d_per_slot, d_vlen, d_chunks, d_per_chunk;
    double d_period_ns;
    int64_t d_spin_ns;
    int64_t d_stall_ns, d_stall_every_ns;
    int64_t d_next_stall = 0;
    int64_t d_t0 = -1;
    uint64_t d_chunk = 0;
    std::vector<uint64_t> d_completed; //!< slots whose last chunk this call hands over
    shared_state& d_st;
    pmt::pmt_t d_key, d_src;
};

} // namespace fg_bench

#endif
