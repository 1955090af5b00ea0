/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_SLOT_FRAMER_H
#define INCLUDED_MIMODET_SLOT_FRAMER_H

#include <cstdint>
#include <gnuradio/block.h>
#include <gnuradio/mimodet/api.h>
#include <string>

namespace gr {
namespace mimodet {

/*!
 * \brief LTE-style MIMO-OFDM transmitter: bits -> n_tx slot streams
 * (docs/SLOT_LAYOUT.md). \ingroup mimodet
 *
 * \details
 * Input: one byte stream of bits (0 or 1). Slot ns (a counter 0, 1, ... 19, 0, ...
 * starting at 0) consumes exactly n_data(ns) * n_tx * q bits, q the bits per symbol:
 * lte_grid::data_elements(ns) element j carries on transmit antenna t the 36.211 symbol
 * of bits [(j n_tx + t) q, (j n_tx + t + 1) q) of the slot (spatial multiplexing, no
 * precoding). Each port also carries its CRS; port 0 carries PSS/SSS in slots 0 and 10;
 * empty and guard elements are zero. Only whole slots are sent: leftover bits at the end
 * of the stream that do not fill a slot are dropped.
 *
 * Outputs: n_tx complex streams.
 * - freq_domain = false (time): each OFDM symbol is the unitary IFFT (1/sqrt(fft_size))
 *   of its subcarriers (subcarrier k in bin lte_numerology::bin(k), others zero),
 *   preceded by its cyclic prefix; a slot is slot_samples() samples per output.
 * - freq_domain = true: one item per slot and output, the grid as a vector of
 *   7 * n_sc gr_complex (element l * n_sc + k).
 *
 * Pilot power: each port's CRS elements carry lte_grid::crs_value times
 * sqrt(10^(pilot_ratio_db / 10)) (36.213's rho_A / rho_B as one ratio for every data
 * element); the data keep unit mean power and nothing is renormalised, so the SNR per
 * data element (docs/CONVENTIONS.md) is the same for every ratio. A receiver must be
 * told the ratio (or estimate it): channel_estimator's pilot_ratio_db.
 *
 * Every output gets a tag "slot" (value: long ns) on the first item of each slot.
 * Input tags are not propagated.
 *
 * Invalid input: a byte other than 0 or 1 is used as its low bit (byte & 1); the first
 * one logs an error, and all are counted in invalid_bits().
 */
class MIMODET_API slot_framer : virtual public gr::block
{
public:
    typedef std::shared_ptr<slot_framer> sptr;

    /*!
     * \param bandwidth_mhz LTE bandwidth: 1.4, 3, 5, 10, 15 or 20 (MHz).
     * \param n_tx transmit antennas (ports and outputs): 1, 2 or 4.
     * \param modulation "qpsk", "16qam" or "64qam".
     * \param cell_id physical cell id 0..503 (CRS shift and sequence, PSS/SSS).
     * \param freq_domain emit grids (one vector item per slot) instead of time samples.
     * \param pilot_ratio_db CRS energy per element over the data's mean energy, in dB:
     * -10..10, default 0 (pilots and data at the same power).
     *
     * Throws std::invalid_argument for any other value.
     */
    static sptr make(double bandwidth_mhz,
                     int n_tx,
                     const std::string& modulation,
                     int cell_id,
                     bool freq_domain = false,
                     double pilot_ratio_db = 0.0);

    //! Bits consumed by slot ns (0..19): n_data(ns) * n_tx * q.
    virtual int bits_per_slot(int ns) const = 0;
    //! Output items per slot and output: slot_samples (time) or 1 (freq_domain).
    virtual int items_per_slot() const = 0;
    //! Vector length of an output item: 1 (time) or 7 * n_sc (freq_domain).
    virtual int vlen() const = 0;
    //! Slots produced so far.
    virtual uint64_t slots_sent() const = 0;
    //! Input bytes so far that were neither 0 nor 1 (each used as byte & 1).
    virtual uint64_t invalid_bits() const = 0;
    //! The constructor's pilot_ratio_db.
    virtual double pilot_ratio_db() const = 0;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_SLOT_FRAMER_H */
