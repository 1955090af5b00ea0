/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CFO: its estimate from the cyclic prefixes and its correction (cfo_rotator).

#ifndef INCLUDED_MIMODET_LTE_SYNC_CFO_H
#define INCLUDED_MIMODET_LTE_SYNC_CFO_H

#include "phy/lte_sync_common.h"
#include <gnuradio/mimodet/api.h>
#include <cstdint>
#include <vector>

namespace gr {
namespace mimodet {
namespace lte_sync {

//! CP correlation of the slot starting at x[a][0] (slot_samples + skip... samples
//! available): sum_a sum_l sum_{n in CP_l, n >= CP start + skip} conj(x(n)) x(n+N).
//! Its argument is 2 pi cfo (cfo in subcarrier spacings).
MIMODET_API cd cp_correlation(const lte_numerology& num,
                              const std::vector<const cf*>& x,
                              int skip);
//! CFO in subcarrier spacings from a CP correlation: arg(r) / (2 pi), in (-0.5, 0.5].
MIMODET_API double cfo_from_correlation(cd r);

/*!
 * Timing-free CP search: for slot starts theta = 0..n_theta-1 (relative to x), the CP
 * correlation Gamma(theta) over the 7 symbols (the last cp_other samples of every CP);
 * returns the theta maximising |Gamma| and Gamma there. Each x[a] must hold
 * n_theta + slot_samples samples.
 */
MIMODET_API int cp_search(const lte_numerology& num,
                          const std::vector<const cf*>& x,
                          int n_theta,
                          cd* gamma);

//! Rotates out[i] = in[i] exp(-j phase(index0 + i)), phase(n) = phase0 + 2 pi cfo (n - n0) / N.
class MIMODET_API cfo_rotator
{
public:
    //! phasors() starts every `block` samples from the exact phase, so phasors(index0 +
    //! k block, ph + k block, m) continues phasors(index0, ph, n) bit for bit.
    static constexpr int block = 1024;
    explicit cfo_rotator(int fft_size) : d_n(fft_size) {}
    //! Changes the CFO keeping the phase continuous at absolute sample index n.
    void retune(double cfo, int64_t n);
    void reset(double cfo, int64_t n0, double phase0 = 0.0);
    double cfo() const { return d_cfo; }
    double phase(int64_t n) const;
    void apply(int64_t index0, const cf* in, cf* out, int n) const;
    /*!
     * The n phasors exp(-j phase(index0 + i)) that apply() multiplies with, in single
     * precision (exactly apply()'s values: a double recursion re-anchored every 1024
     * samples), so that several antennas with the same index0 share them:
     * apply(index0, in, out, n) == multiply(in, ph, out, n).
     */
    void phasors(int64_t index0, cf* ph, int n) const;
    //! out[i] = in[i] ph[i] (single precision, apply()'s rounding; in may be out).
    static void multiply(const cf* in, const cf* ph, cf* out, int n);

private:
    int d_n;
    double d_cfo = 0.0, d_phase0 = 0.0;
    int64_t d_n0 = 0;
};

} // namespace lte_sync
} // namespace mimodet
} // namespace gr

#endif
