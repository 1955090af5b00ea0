/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The benchmark's sink (slot_meter): slots, bit errors and latencies.

#ifndef INCLUDED_MIMODET_FLOWGRAPH_BENCH_SLOT_METER_H
#define INCLUDED_MIMODET_FLOWGRAPH_BENCH_SLOT_METER_H

#include "replay_source.h"
#include <mutex>

namespace fg_bench {

// ------------------------------------------------------------------------------------
// slot_meter: the detector's output; slots from the "slot" tags, bit errors against the
// transmitted bits of the slot, latency exit - entry once a slot is complete.

class slot_meter : public gr::sync_block
{
public:
    using sptr = std::shared_ptr<slot_meter>;

    slot_meter(bool soft,
               std::vector<int> items_per_ns, // detector output items per slot, ns 0..19
               std::shared_ptr<const std::vector<uint8_t>> tx_bits,
               std::vector<size_t> slot_start, // offset of slot k's bits in tx_bits
               int n_slots,
               shared_state& st)
        : gr::sync_block(
              "slot_meter",
              gr::io_signature::make(1, 1, soft ? sizeof(float) : sizeof(uint8_t)),
              gr::io_signature::make(0, 0, 0)),
          d_soft(soft), d_items(std::move(items_per_ns)), d_tx(std::move(tx_bits)),
          d_start(std::move(slot_start)), d_n_slots(n_slots), d_st(st),
          d_key(pmt::mp("slot"))
    {
    }

    struct snapshot {
        uint64_t slots = 0, lost = 0, errors = 0, bits = 0, misaligned = 0;
    };
    snapshot counters() const
    {
        std::lock_guard<std::mutex> g(d_mutex);
        return d_count;
    }
    //! Start (clear) or stop recording latencies; keep_times: also each slot's entry
    //! and exit (entry_exit()).
    void record(bool on, bool keep_times = true)
    {
        std::lock_guard<std::mutex> g(d_mutex);
        if (on) {
            d_lat_ms.clear();
            d_entry_exit.clear();
        }
        d_recording = on;
        d_keep_times = keep_times;
    }
    //! Moves the latencies recorded since the last call (or record(true)) into out; the
    //! two vectors swap their memory, so a long recording drained regularly does not
    //! grow.
    void drain_latencies(std::vector<double>& out)
    {
        out.clear();
        std::lock_guard<std::mutex> g(d_mutex);
        d_lat_ms.swap(out);
    }
    //! A recorded slot: entry and exit (steady-clock ns), and its place among all the
    //! slots this block has received since it started (0 = the receiver's first output
    //! slot), which maps it to the receiver call that put it out (call timelines).
    struct slot_times {
        int64_t entry_ns, exit_ns;
        uint64_t ordinal;
        int64_t handed_ns; //!< when the source handed the slot's last chunk over
    };
    std::vector<slot_times> entry_exit() const
    {
        std::lock_guard<std::mutex> g(d_mutex);
        return d_entry_exit;
    }
    std::vector<double> latencies_ms() const
    {
        std::lock_guard<std::mutex> g(d_mutex);
        return d_lat_ms;
    }
    uint64_t slots_out() const { return d_done.load(); }
    int first_ns() const { return d_first_ns; }
    int64_t first_k() const { return d_first_k; }

    int work(int noutput_items,
             gr_vector_const_void_star& input_items,
             gr_vector_void_star&) override
    {
        // A slot has left the receiver when its last item reaches this block: its exit
        // time is this call's start, before the bit-error count below (the benchmark's
        // bookkeeping, not the receiver's work).
        d_call_ns = shared_state::now_ns();
        const uint64_t base = nitems_read(0);
        d_tags.clear();
        get_tags_in_range(d_tags, 0, base, base + noutput_items, d_key);
        std::sort(d_tags.begin(), d_tags.end(), gr::tag_t::offset_compare);
        size_t ti = 0;
        int i = 0;
        while (i < noutput_items) {
            while (ti < d_tags.size() && d_tags[ti].offset < base + i)
                ++ti;
            if (ti < d_tags.size() && d_tags[ti].offset == base + i) {
                const long v = pmt::is_integer(d_tags[ti].value)
                                   ? pmt::to_long(d_tags[ti].value)
                                   : -1;
                ++ti;
                if (d_open)
                    d_open = false; // a slot cut short: not counted
                if (v >= 0 && v < 20)
                    open_slot(static_cast<int>(v));
            }
            const int end = ti < d_tags.size()
                                ? static_cast<int>(d_tags[ti].offset - base)
                                : noutput_items;
            if (!d_open) { // items outside a slot (never from mimo_detector): skip
                i = end;
                continue;
            }
            const int take = std::min(end - i, d_need - d_pos);
            feed(input_items[0], i, take);
            i += take;
            if (d_pos == d_need)
                close_slot();
        }
        return noutput_items;
    }

private:
    void open_slot(int ns)
    {
        d_open = true;
        d_ns = ns;
        d_pos = 0;
        d_need = d_items[ns];
        d_err = 0;
        if (d_first_k >= 0) {
            d_k = d_prev_k + ((ns - d_prev_ns + 19) % 20) + 1;
            d_lost_pending = d_k - d_prev_k - 1;
        } else {
            d_k = -1; // decided from the content when the slot is complete
            d_first_bits.clear();
        }
    }

    template <typename T>
    static uint64_t count_errors(const T* x, const uint8_t* ref, int n, bool soft)
    {
        uint64_t e = 0;
        if (soft)
            for (int j = 0; j < n; ++j)
                e += static_cast<uint8_t>(x[j] < 0) != ref[j];
        else
            for (int j = 0; j < n; ++j)
                e += static_cast<uint8_t>(x[j]) != ref[j];
        return e;
    }

    void feed(const void* in, int offset, int n)
    {
        if (n <= 0)
            return;
        if (d_k < 0) {
            for (int j = 0; j < n; ++j)
                d_first_bits.push_back(
                    d_soft ? static_cast<uint8_t>(
                                 static_cast<const float*>(in)[offset + j] < 0)
                           : static_cast<const uint8_t*>(in)[offset + j]);
        } else {
            const uint8_t* ref = d_tx->data() + d_start[d_k % d_n_slots] + d_pos;
            d_err +=
                d_soft
                    ? count_errors(static_cast<const float*>(in) + offset, ref, n, true)
                    : count_errors(
                          static_cast<const uint8_t*>(in) + offset, ref, n, false);
        }
        d_pos += n;
    }

    void close_slot()
    {
        const int64_t exit_ns = d_call_ns;
        d_open = false;
        if (d_k < 0) {
            // First slot: ofdm_sync starts at the first PSS it accepts (slot 0 or 10 of
            // some frame); the replayed slots k = ns + 20 m (m < n_slots / 20) differ in
            // content, so the fewest bit errors pick k (up to multiples of n_slots: the
            // receiver locks within the first replay cycle).
            uint64_t best = ~0ull;
            for (int64_t k = d_ns; k < d_n_slots; k += 20) {
                const uint64_t e = count_errors(
                    d_first_bits.data(), d_tx->data() + d_start[k], d_need, false);
                if (e < best) {
                    best = e;
                    d_k = k;
                }
            }
            d_err = best;
            d_first_k = d_k;
            d_first_ns = d_ns;
            d_lost_pending = 0;
        }
        d_prev_k = d_k;
        d_prev_ns = d_ns;
        const bool in_stream = static_cast<uint64_t>(d_k) < d_st.emitted.load();
        const int64_t entry =
            d_st.stamp[static_cast<uint64_t>(d_k) % shared_state::cap].load();
        {
            std::lock_guard<std::mutex> g(d_mutex);
            d_count.slots++;
            d_count.lost += static_cast<uint64_t>(d_lost_pending);
            d_count.errors += d_err;
            d_count.bits += static_cast<uint64_t>(d_need);
            if (!in_stream)
                d_count.misaligned++;
            else if (d_recording) {
                d_lat_ms.push_back((exit_ns - entry) * 1e-6);
                if (d_keep_times)
                    d_entry_exit.push_back(
                        { entry,
                          exit_ns,
                          d_done.load(),
                          d_st.handed[static_cast<uint64_t>(d_k) % shared_state::cap]
                              .load() });
            }
        }
        d_done.fetch_add(1);
    }

    bool d_soft;
    std::vector<int> d_items;
    std::shared_ptr<const std::vector<uint8_t>> d_tx;
    std::vector<size_t> d_start;
    int d_n_slots;
    shared_state& d_st;
    pmt::pmt_t d_key;
    std::vector<gr::tag_t> d_tags;
    int64_t d_call_ns = 0; //!< start of the current work() call
    // The slot being received.
    bool d_open = false;
    int d_ns = 0, d_pos = 0, d_need = 0;
    int64_t d_k = -1, d_lost_pending = 0;
    uint64_t d_err = 0;
    std::vector<uint8_t> d_first_bits;
    int64_t d_first_k = -1, d_prev_k = -1;
    int d_first_ns = -1, d_prev_ns = 0;
    // Read by main.
    mutable std::mutex d_mutex;
    snapshot d_count;
    bool d_recording = false;
    bool d_keep_times = true;
    std::vector<double> d_lat_ms;
    std::vector<slot_times> d_entry_exit;
    std::atomic<uint64_t> d_done{ 0 };
};

} // namespace fg_bench

#endif
