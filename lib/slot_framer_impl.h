/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_SLOT_FRAMER_IMPL_H
#define INCLUDED_MIMODET_SLOT_FRAMER_IMPL_H

#include "phy/slot_mapper.h"
#include <atomic>
#include <gnuradio/fft/fft.h>
#include <gnuradio/mimodet/slot_framer.h>
#include <memory>
#include <vector>

namespace gr {
namespace mimodet {

class slot_framer_impl : public slot_framer
{
public:
    slot_framer_impl(double bandwidth_mhz,
                     int n_tx,
                     const std::string& modulation,
                     int cell_id,
                     bool freq_domain,
                     double pilot_ratio_db);

    int bits_per_slot(int ns) const override;
    int items_per_slot() const override { return d_items_per_slot; }
    int vlen() const override { return d_freq ? d_mapper.grid_size() : 1; }
    uint64_t slots_sent() const override { return d_slots_sent.load(); }
    uint64_t invalid_bits() const override { return d_invalid.load(); }
    double pilot_ratio_db() const override { return d_mapper.pilot_ratio_db(); }

    void forecast(int noutput_items, gr_vector_int& ninput_items_required) override;
    int general_work(int noutput_items,
                     gr_vector_int& ninput_items,
                     gr_vector_const_void_star& input_items,
                     gr_vector_void_star& output_items) override;

private:
    //! IFFT + CP of the n_tx grids in d_grids into out[t] (slot_samples each).
    void modulate(gr_complex* const* out);

    const core::slot_mapper d_mapper;
    const bool d_freq;
    const int d_n_tx;
    const int d_items_per_slot;
    int d_ns = 0; //!< slot index (0..19) of the next slot
    std::atomic<uint64_t> d_slots_sent{ 0 };
    std::atomic<uint64_t> d_invalid{ 0 };
    std::vector<std::vector<gr_complex>> d_grids; //!< time mode: per-port grid scratch
    std::unique_ptr<gr::fft::fft_complex_rev> d_ifft;
    const pmt::pmt_t d_slot_key;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_SLOT_FRAMER_IMPL_H */
