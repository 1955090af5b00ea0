/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Fine timing for the tracking: the fractional PSS position and the fractional-delay
// interpolator that removes a sample-rate offset (slot_sync's tracking, sample clock
// and resampling are in lte_sync_tracking.cc).

#ifndef INCLUDED_MIMODET_LTE_SYNC_TRACKING_H
#define INCLUDED_MIMODET_LTE_SYNC_TRACKING_H

#include "phy/lte_sync_common.h"
#include <gnuradio/mimodet/api.h>
#include <vector>

namespace gr {
namespace mimodet {
namespace lte_sync {

/*!
 * \brief Fractional-delay interpolator for the sample-rate offset correction: y(p) for a
 * real position p from the samples around it, with a Kaiser-windowed sinc (beta 7) of
 * `taps` taps, tabulated at `phases` fractions and interpolated linearly between them.
 * Error below -59 dB (-65 dB at rate 1) for signals within +-0.36 of the sample rate
 * (the widest LTE occupancy is +-0.352 at 3 MHz), at rates within 100 ppm of 1.
 */
class MIMODET_API frac_interp
{
public:
    static constexpr int taps = 16;
    static constexpr int phases = 256;
    frac_interp();
    //! Samples x[-(taps/2 - 1)] .. x[taps/2] around position 0 are read for y(mu), mu in [0, 1].
    static constexpr int before = taps / 2 - 1;
    static constexpr int after = taps / 2;
    /*!
     * out[i] = x(p0 + i * rate), i = 0..n-1, positions relative to x[0] (x must be
     * readable from floor(p0) - before - 1 to floor(p0 + (n - 1) rate) + after + 1). The
     * taps are held over blocks of 4 outputs.
     */
    void resample(const cf* x, double p0, double rate, cf* out, int n) const;

private:
    std::vector<float> d_table; //!< (phases + 1) x taps
};

/*!
 * Fractional timing of a PSS from its 62 subcarriers: pss_bins[a] the sync_dft of the
 * window that starts at the integer PSS position (CFO corrected), and pss its values;
 * Z(k) = Y(k) conj(P(k)) carries exp(-j 2 pi k tau / N), so tau (samples, the signal
 * later than the window for tau > 0) is -N / (2 pi) arg(sum_k Z(k+1) conj(Z(k))) over
 * adjacent subcarriers and antennas. The channel's mean delay adds a constant.
 */
MIMODET_API double pss_fraction(const std::vector<std::vector<cf>>& pss_bins,
                                const std::vector<cf>& pss,
                                int fft_size);

} // namespace lte_sync
} // namespace mimodet
} // namespace gr

#endif
