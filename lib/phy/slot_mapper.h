/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Transmit-side resource-grid construction of the LTE-style slot chain
// (docs/SLOT_LAYOUT.md): bits -> per-port grids of one slot (data, CRS, PSS/SSS,
// zeros), and grid symbol -> IFFT input bins. No GNU Radio types: the GNU Radio block
// slot_framer does the IFFT and cyclic prefix with gr::fft; tests and benchmarks can
// build reference grids with this class directly.

#ifndef INCLUDED_MIMODET_CORE_SLOT_MAPPER_H
#define INCLUDED_MIMODET_CORE_SLOT_MAPPER_H

#include <complex>
#include <cstdint>
#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

class MIMODET_API slot_mapper
{
public:
    using cf = std::complex<float>;

    /*!
     * Validates n_tx (1, 2, 4) and cell_id (0..503) through lte_grid, and
     * pilot_ratio_db (finite, -10..10 dB: pilot_ratio.h); throws std::invalid_argument.
     * \param pilot_ratio_db CRS energy per element over the data's mean energy (dB): the
     * CRS values are multiplied by sqrt(10^(pilot_ratio_db / 10)), the data keep unit
     * mean power (no renormalisation, so the SNR per data element is unchanged).
     */
    slot_mapper(const lte_numerology& num,
                int n_tx,
                modulation mod,
                int cell_id,
                double pilot_ratio_db = 0.0);

    const lte_numerology& numerology() const { return d_grid.numerology(); }
    const lte_grid& grid_map() const { return d_grid; }
    int n_tx() const { return d_n_tx; }
    int bits_per_symbol() const { return d_q; }
    //! Elements of one grid: 7 * n_sc.
    int grid_size() const { return d_grid_size; }
    //! Data elements of slot ns (0..19).
    int n_data(int ns) const { return static_cast<int>(d_grid.data_elements(ns).size()); }
    //! Bits one slot consumes: n_data(ns) * n_tx * q.
    int bits_per_slot(int ns) const { return n_data(ns) * d_n_tx * d_q; }
    //! Bits of a whole 20-slot frame.
    long bits_per_frame() const { return d_bits_per_frame; }
    //! The constructor's pilot_ratio_db.
    double pilot_ratio_db() const { return d_pilot_ratio_db; }

    /*!
     * \brief Builds the n_tx grids of slot ns (0..19) from bits_per_slot(ns) bits.
     *
     * grids[t] points to grid_size() elements (element l * n_sc + k). Data element j of
     * lte_grid::data_elements(ns) gets on port t the 36.211 symbol of bits
     * [(j n_tx + t) q, (j n_tx + t + 1) q), b0 first (most significant label bit); each
     * port's CRS elements carry lte_grid::crs_value times the pilot amplitude
     * sqrt(10^(pilot_ratio_db / 10)), port 0 carries PSS/SSS in slots 0
     * and 10, every other element (empty, guard, another port's sync) is zero.
     *
     * Only the low bit of each byte is used; the return value counts the bytes that
     * were neither 0 nor 1 (0 for valid input).
     */
    long map(int ns, const uint8_t* bits, cf* const* grids) const;

    /*!
     * \brief IFFT input of symbol l of a grid: bin lte_numerology::bin(k) gets
     * scale * grid[l * n_sc + k], every other bin (DC, guard band) is zero.
     * \param bins fft_size elements
     */
    void symbol_to_bins(const cf* grid, int l, float scale, cf* bins) const;

private:
    lte_grid d_grid;
    int d_n_tx, d_q, d_grid_size;
    long d_bits_per_frame;
    double d_pilot_ratio_db;
    std::vector<cf> d_points;   //!< constellation points by label, single precision
    std::vector<cf> d_template; //!< [20][n_tx][7 n_sc]: everything but the data
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
