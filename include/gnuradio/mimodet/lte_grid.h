/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_LTE_GRID_H
#define INCLUDED_MIMODET_LTE_GRID_H

#include <gnuradio/mimodet/api.h>
#include <complex>
#include <cstdint>
#include <vector>

namespace gr {
namespace mimodet {

/*!
 * \brief LTE numerology with normal cyclic prefix (3GPP TS 36.211 6.2, 6.12).
 *
 * A slot is 0.5 ms: 7 OFDM symbols, the first with the longer CP (160 samples at FFT
 * 2048, the others 144, scaled to the FFT size). Subcarriers k = 0 .. n_sc-1 are the
 * 12 n_rb used ones in increasing frequency; the DC bin between k = n_sc/2 - 1 and
 * k = n_sc/2 stays empty.
 */
struct MIMODET_API lte_numerology {
    double bandwidth_mhz;
    int n_rb;           //!< resource blocks: 6, 15, 25, 50, 75, 100
    int n_sc;           //!< used subcarriers = 12 n_rb
    int fft_size;       //!< 128 .. 2048
    double sample_rate; //!< fft_size x 15 kHz
    int cp_first;       //!< CP of symbol 0 of a slot, in samples
    int cp_other;       //!< CP of symbols 1..6

    static constexpr int symbols_per_slot = 7;
    static constexpr int slots_per_frame = 20;

    //! Presets 1.4, 3, 5, 10, 15, 20 MHz; throws std::invalid_argument otherwise.
    static lte_numerology from_bandwidth(double mhz);
    //! Samples in one slot (= sample_rate / 2000).
    int slot_samples() const { return symbols_per_slot * fft_size + cp_first + 6 * cp_other; }
    int cp_length(int l) const { return l == 0 ? cp_first : cp_other; }
    //! FFT bin of subcarrier k (DC bin unused).
    int bin(int k) const { return k < n_sc / 2 ? fft_size - n_sc / 2 + k : k - n_sc / 2 + 1; }
};

//! What a resource element of a slot carries.
enum class re_kind : uint8_t {
    data = 0,  //!< QAM data on every port
    crs = 1,   //!< this port's cell-specific reference signal
    empty = 2, //!< another port's CRS position: nothing sent on this port
    pss = 3,   //!< primary synchronisation signal (port 0 only; empty elsewhere)
    sss = 4,   //!< secondary synchronisation signal (port 0 only; empty elsewhere)
    guard = 5, //!< unused subcarriers around PSS/SSS
};

/*!
 * \brief Resource grid map of an LTE-style cell: CRS of ports 0..n_ports-1 (36.211
 * 6.10.1: ports 0/1 in symbols 0 and 4, ports 2/3 in symbol 1 of every slot, shift
 * v_shift = cell_id mod 6, Gold-sequence QPSK values), PSS and SSS in the last two
 * symbols of slots 0 and 10 (central 62 subcarriers, 5 guard subcarriers each side),
 * data in every other element. Slot indices are 0..19 within a frame.
 */
class MIMODET_API lte_grid
{
public:
    lte_grid(const lte_numerology& num, int n_ports, int cell_id);

    const lte_numerology& numerology() const { return d_num; }
    int n_ports() const { return d_ports; }
    int cell_id() const { return d_cell_id; }

    //! Kind of element (l, k) of slot ns on antenna port p.
    re_kind kind(int ns, int port, int l, int k) const;
    //! Data elements of slot ns as indices l * n_sc + k, in time-then-frequency order
    //! (symbol by symbol, increasing k): the order data symbols are mapped in.
    const std::vector<int>& data_elements(int ns) const;
    //! CRS value at (l, k) of slot ns on port p (valid where kind() == crs).
    std::complex<float> crs_value(int ns, int port, int l, int k) const;
    //! CRS elements of port p in slot ns: indices l * n_sc + k.
    const std::vector<int>& crs_elements(int ns, int port) const;

    //! PSS of N_ID^(2) = cell_id mod 3: 62 values for subcarriers n_sc/2-31 .. n_sc/2+30.
    const std::vector<std::complex<float>>& pss() const { return d_pss; }
    //! SSS of slot 0 (ns = 0) or slot 10 (ns = 10): 62 values as above.
    const std::vector<std::complex<float>>& sss(int ns) const;
    static constexpr int pss_symbol = 6; //!< last symbol of slots 0 and 10
    static constexpr int sss_symbol = 5;
    static bool has_sync(int ns) { return ns == 0 || ns == 10; }

    //! 36.211 7.2 pseudo-random sequence c(n), n = 0..len-1, for c_init.
    static std::vector<uint8_t> gold_sequence(uint32_t c_init, int len);
    //! PSS for N_ID^(2) in 0..2 (Zadoff-Chu roots 25, 29, 34).
    static std::vector<std::complex<float>> make_pss(int n_id2);
    //! SSS for cell_id in slot 0 or 10 (36.211 6.11.2).
    static std::vector<std::complex<float>> make_sss(int cell_id, int ns);

private:
    int index(int ns, int port, int l, int k) const;
    lte_numerology d_num;
    int d_ports, d_cell_id;
    std::vector<re_kind> d_kind; //!< [20][ports][7][n_sc]
    std::vector<std::complex<float>> d_crs; //!< same layout; zero where not CRS
    std::vector<std::vector<int>> d_data;   //!< per slot
    std::vector<std::vector<int>> d_crs_res; //!< per slot and port
    std::vector<std::complex<float>> d_pss, d_sss0, d_sss10;
};

} // namespace mimodet
} // namespace gr

#endif
