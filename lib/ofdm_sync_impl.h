/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_OFDM_SYNC_IMPL_H
#define INCLUDED_MIMODET_OFDM_SYNC_IMPL_H

#include "phy/lte_sync.h"
#include "util/call_timeline.h"
#include <gnuradio/mimodet/ofdm_sync.h>
#include <atomic>
#include <vector>

namespace gr {
namespace mimodet {

class ofdm_sync_impl : public ofdm_sync
{
public:
    ofdm_sync_impl(double bandwidth_mhz, int n_rx, int cell_id);

    double cfo() const override { return d_cfo.load(); }
    bool locked() const override { return d_locked.load(); }
    uint64_t slots_out() const override { return d_slots.load(); }
    uint64_t pss_missed() const override { return d_missed.load(); }
    uint64_t slots_lost() const override { return d_lost.load(); }
    double sro_ppm() const override { return d_sro.load(); }
    bool resampling() const override { return d_resampling.load(); }
    int cell_id() const override { return d_cell.load(); }

    void forecast(int noutput_items, gr_vector_int& ninput_items_required) override;
    int general_work(int noutput_items,
                     gr_vector_int& ninput_items,
                     gr_vector_const_void_star& input_items,
                     gr_vector_void_star& output_items) override;

private:
    const lte_numerology d_num;
    const int d_n_rx;
    const int d_slot;
    lte_sync::slot_sync d_sync;
    const pmt::pmt_t d_slot_key, d_cell_key;
    //! The lock's cell id to the "cell_id" message port.
    void publish_lock();
    const bool d_take_ahead; //!< the next step's input taken in when a slot goes out
    bool d_idle_call = false; //!< the last call took no input and put nothing out
    std::atomic<double> d_cfo{ 0.0 };
    std::atomic<bool> d_locked{ false };
    std::atomic<uint64_t> d_slots{ 0 };
    std::atomic<uint64_t> d_missed{ 0 };
    std::atomic<uint64_t> d_lost{ 0 };
    std::atomic<double> d_sro{ 0.0 };
    std::atomic<bool> d_resampling{ false };
    std::atomic<int> d_cell{ -1 };
    //! MIMODET_CALL_TIMELINE only: per general_work() call, start, duration, slots out.
    std::unique_ptr<core::call_timeline> d_timeline;
    std::vector<const gr_complex*> d_in;
    std::vector<gr_complex*> d_out;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_OFDM_SYNC_IMPL_H */
