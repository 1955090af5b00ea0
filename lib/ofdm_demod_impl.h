/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_OFDM_DEMOD_IMPL_H
#define INCLUDED_MIMODET_OFDM_DEMOD_IMPL_H

#include "phy/ofdm_demodulation.h"
#include "slot_aligner.h"
#include "util/call_timeline.h"
#include "util/worker_pool.h"
#include <gnuradio/fft/fft.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/mimodet/ofdm_demod.h>
#include <atomic>
#include <memory>
#include <vector>

namespace gr {
namespace mimodet {

class ofdm_demod_impl : public ofdm_demod
{
public:
    ofdm_demod_impl(double bandwidth_mhz, int n_rx, int fft_backoff, bool compensate_backoff);

    int fft_backoff() const override { return d_demod.backoff(); }
    int vlen() const override { return d_vlen; }
    uint64_t slots_out() const override { return d_slots.load(); }

    void forecast(int noutput_items, gr_vector_int& ninput_items_required) override;
    int general_work(int noutput_items,
                     gr_vector_int& ninput_items,
                     gr_vector_const_void_star& input_items,
                     gr_vector_void_star& output_items) override;

private:
    const core::ofdm_demodulation d_demod; //!< the tables and the per-antenna FFTs
    const int d_n_rx;
    const int d_slot;
    const int d_vlen;
    // One FFT per antenna; the antennas of a slot are demodulated on d_threads threads
    // (the block's own and d_pool's workers).
    std::vector<std::unique_ptr<core::ofdm_demodulation::fft_type>> d_ffts;
    int d_threads = 1;
    core::worker_pool d_pool;
    const pmt::pmt_t d_slot_key, d_cell_key;
    std::vector<tag_t> d_cell_tags; //!< reused by general_work()
    slot_aligner d_aligner;
    bool d_warned_missing = false;
    std::atomic<uint64_t> d_slots{ 0 };
    //! MIMODET_CALL_TIMELINE only: per general_work() call, start, duration, slots.
    std::unique_ptr<core::call_timeline> d_timeline;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_OFDM_DEMOD_IMPL_H */
