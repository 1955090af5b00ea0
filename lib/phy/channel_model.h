/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The channel estimator's model decisions (lib/phy/channel_estimation.cc): the slot's
// noise variance from the pilots' difference energies, and the Wiener filter's grid
// cell (delay spread b, SNR) from the spread fit's lag sums. Plain C++ apart from the
// __host__ __device__ marks: the CPU estimator and the GPU one
// (cuda/phy/channel_estimation_cuda.cu, which decides on the device in
// cuda/phy/channel_estimation_device.cuh) share this code.

#ifndef INCLUDED_MIMODET_CORE_CHANNEL_MODEL_H
#define INCLUDED_MIMODET_CORE_CHANNEL_MODEL_H

#include <cmath>
#include <cstddef>
#include <limits>

#include "util/host_device.h"

namespace gr {
namespace mimodet {
namespace core {
namespace channel_model {

constexpr double k_subcarrier_hz = 15e3;
constexpr double k_pi = 3.14159265358979323846;
constexpr double k_b_min = 10e-9;    //!< smallest model spread b (s)
constexpr double k_b_step = 1.26;    //!< b grid ratio
constexpr double k_snr_step_db = 1.5; //!< SNR grid step
constexpr double k_b_ref = 250e-9;   //!< spread above which the margin is 2x
constexpr int k_snr_idx_min = -10;   //!< SNR grid cells: -15 dB ...
constexpr int k_snr_idx_max = 40;    //!< ... 60 dB
constexpr int k_snr_cells = k_snr_idx_max - k_snr_idx_min + 1;
constexpr int k_lags = 5; //!< lags of the spread fit

//! Lag li of the spread fit in subcarriers: 6, 12, 24, 48, 96.
MIMODET_HD inline int lag(int li) { return 6 << li; }

//! b of grid cell i.
inline double b_of_idx(int i) { return k_b_min * std::pow(k_b_step, i); }

MIMODET_HD inline bool is_finite(double x)
{
#ifdef __CUDA_ARCH__
    return isfinite(x);
#else
    return std::isfinite(x);
#endif
}

//! The grid cell of spread b (b_min <= b).
MIMODET_HD inline int b_index(double b)
{
    return static_cast<int>(ceil(log(b / k_b_min) / log(k_b_step) - 1e-9));
}

//! Spread cells for a maximal model spread b_max: b_index(b_max) + 1.
MIMODET_HD inline int b_cells(double b_max) { return b_index(b_max) + 1; }

/*!
 * The slot's noise variance from the ports 0/1 pairs' sums (difference energies of
 * orders 2 and 3 in sum[2..3] / count[2..3], the pilot power over n_power pilots),
 * floored at a 60 dB SNR; NaN when the slot is unusable (non-finite or zero).
 */
MIMODET_HD inline double
noise_variance(const double* sum, const size_t* count, double power, size_t n_power)
{
    double nv = std::numeric_limits<double>::infinity();
    for (int d = 2; d <= 3; ++d)
        if (count[d] > 0) {
            const double q = sum[d] / count[d];
            nv = q < nv ? q : nv; // std::min(nv, q)
        }
    if (!(is_finite(power) && is_finite(nv)))
        return std::numeric_limits<double>::quiet_NaN();
    const double floor = 1e-6 * (n_power ? power / n_power : 0.0);
    nv = nv < floor ? floor : nv; // std::max(nv, floor)
    return nv > 0.0 ? nv : std::numeric_limits<double>::quiet_NaN();
}

/*!
 * The Wiener filter's grid cell (spread b_idx, SNR snr_idx) from the derotated pilots'
 * power pw over n_pw values, the spread fit's lag sums (count_lag terms each), the noise
 * variance nv and the largest spread b_max (s).
 */
MIMODET_HD inline void grid_cell(double pw,
                                size_t n_pw,
                                const double* sum_lag,
                                const size_t* count_lag,
                                double nv,
                                double b_max,
                                int& b_idx,
                                int& snr_idx)
{
    // Spread: the measured correlation at growing lags, two-sided exponential fit.
    const double p_signal = pw / n_pw - nv;
    const double P = p_signal < 1e-3 * nv ? 1e-3 * nv : p_signal;
    double b = b_max;
    for (int li = 0; li < k_lags; ++li) {
        const int L = lag(li);
        const double sL = sum_lag[li];
        const size_t cL = count_lag[li];
        if (cL < 8)
            break;
        const double rho = sL / (cL * P);
        if (rho < 0.3)
            break;
        b = rho >= 1.0 ? 0.0 : sqrt(1.0 / rho - 1.0) / (2.0 * k_pi * k_subcarrier_hz * L);
    }
    // Safety margin: the fit sees the core of the profile; long profiles (EVA, ETU) have
    // sparse late taps it under-weights, so their b is widened up to 2x.
    const double ratio = b / k_b_ref;
    b = (1.0 + (ratio < 1.0 ? ratio : 1.0)) * b;
    b = b < k_b_min ? k_b_min : b;
    b = b_max < b ? b_max : b;
    b_idx = b_index(b);
    const double snr_db = 10.0 * log10(P / nv);
    const int s = static_cast<int>(lround(snr_db / k_snr_step_db));
    snr_idx = s < k_snr_idx_min ? k_snr_idx_min : (s > k_snr_idx_max ? k_snr_idx_max : s);
}

} // namespace channel_model
} // namespace core
} // namespace mimodet
} // namespace gr

#endif
