/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// PSS detection: the time-domain PSS, the DFT of the 62 sync subcarriers and the PSS
// correlation metric over many lags.

#ifndef INCLUDED_MIMODET_LTE_SYNC_PSS_H
#define INCLUDED_MIMODET_LTE_SYNC_PSS_H

#include "phy/lte_sync_common.h"
#include <gnuradio/mimodet/api.h>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace gr {
namespace mimodet {
namespace lte_sync {

//! Time-domain PSS symbol without CP (N = fft_size samples): unitary IFFT of the 62
//! values of lte_grid::make_pss(n_id2) on subcarriers n_sc/2-31 .. n_sc/2+30.
MIMODET_API std::vector<cf> pss_symbol(const lte_numerology& num, int n_id2);

//! Unitary DFT of the N samples at x on the 62 central (PSS/SSS) subcarriers, in single
//! precision (a pruned DFT: 64-point FFTs of the decimated window, then 62 dot products;
//! about 1e-6 of the bins' rms from the exact DFT).
class MIMODET_API sync_dft
{
public:
    explicit sync_dft(const lte_numerology& num);
    ~sync_dft();
    //! out[i] = subcarrier n_sc/2 - 31 + i, i = 0..61.
    void operator()(const cf* x, cf* out);

private:
    struct impl;
    int d_n;
    std::vector<int> d_bins;
    std::unique_ptr<impl> d_impl; //!< FFT plan and buffer
};

/*!
 * PSS correlation metric normalised in the sync band, over many lags:
 *
 *   M(d) = sum_a |sum_n x_a(d+n) p*(n)|^2 / (sum_a E_a(d) * sum_n |p(n)|^2),
 *   E_a(d) = sum_{k in sync band} |X_a,d(k)|^2,
 *
 * X_a,d the unitary N-point DFT of the window x_a[d .. d+N) and the sync band the 62
 * PSS subcarriers. The correlation (FFT overlap-save) only sees those subcarriers, so
 * by Cauchy-Schwarz M is in [0, 1], 1 for a noiseless PSS at the right lag. Normalising
 * by the band's energy instead of the whole window's makes the peak independent of how
 * the channel at the PSS subcarriers compares with the rest of the carrier (a
 * narrowband fade of port 0 at 20 MHz, or 4 ports of which only port 0 sends the PSS):
 * about SNR_b / (1 + SNR_b) x (CFO loss, sinc^2(cfo)) with SNR_b the PSS's SNR per
 * subcarrier. Data and noise give about 1/62 (exponential with one antenna).
 */
class MIMODET_API pss_correlator
{
public:
    pss_correlator(const lte_numerology& num, int n_id2);
    /*!
     * Several PSS at once (cell search: N_ID2 0, 1, 2): metric() with more lags than N
     * writes the metric of n_id2s[k] to out[k n_lags ..], each bit for bit what a
     * correlator of that N_ID2 alone gives, sharing the windows' DFTs and band energies
     * (5 long FFTs per antenna and chunk for three references instead of 9). Fewer lags,
     * reference() and correlate() are those of n_id2s[0].
     */
    pss_correlator(const lte_numerology& num, const std::vector<int>& n_id2s);
    ~pss_correlator();
    //! Number of references (metrics per lag).
    int references() const { return static_cast<int>(d_refs.size()); }
    int length() const { return d_n; }
    const std::vector<cf>& reference() const { return d_ref; }
    //! Metric for lags 0..n_lags-1; each x[a] must hold n_lags + N - 1 samples. Up to
    //! N lags (the timing refinement and the tracking search) the 62 sync bins slide
    //! along the lags (a DFT of the first window, then O(62) per lag, in double); more
    //! lags (the acquisition's blocks) go through the FFT correlation. Both give M as
    //! above to about 1e-6 (float rounding).
    void metric(const std::vector<const cf*>& x, int n_lags, float* out);
    //! Complex correlation sum_n x(n) p*(n) at one lag (direct).
    cf correlate(const cf* x) const;
    /*!
     * Runs the antennas of the sliding metric (up to N lags) concurrently: runner(n, f)
     * must call f(0..n-1), in any order or thread, and return when all are done. Each
     * antenna's sums are kept apart and added in antenna order afterwards, so the metric
     * is the serial one bit for bit. Without a runner the antennas run one by one.
     */
    using runner = std::function<void(size_t, const std::function<void(size_t)>&)>;
    void set_runner(runner r) { d_runner = std::move(r); }

private:
    //! Adds E(d), d = 0..m-1, of one antenna (x: m + N - 1 samples) to impl::band.
    void band_energy(const cf* x, int m);
    //! metric() for n_lags <= N: sliding DFT on the sync bins.
    void metric_sliding(const std::vector<const cf*>& x, int n_lags, float* out);
    struct impl;
    struct antenna_sums;
    int d_n, d_p;
    std::vector<cf> d_ref;               //!< of the first reference
    std::vector<std::vector<cf>> d_refs; //!< all references
    std::unique_ptr<impl> d_impl;
    runner d_runner;
};

} // namespace lte_sync
} // namespace mimodet
} // namespace gr

#endif
