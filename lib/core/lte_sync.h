/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Receiver front end of the LTE-style link without GNU Radio types: PSS correlation,
// CP-based CFO estimation, SSS slot-0/10 decision and the streaming slot synchroniser
// that the ofdm_sync block adapts.

#ifndef INCLUDED_MIMODET_LTE_SYNC_H
#define INCLUDED_MIMODET_LTE_SYNC_H

#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace lte_sync {

using cf = std::complex<float>;
using cd = std::complex<double>;

//! Time-domain PSS symbol without CP (N = fft_size samples): unitary IFFT of the 62
//! values of lte_grid::make_pss(n_id2) on subcarriers n_sc/2-31 .. n_sc/2+30.
MIMODET_API std::vector<cf> pss_symbol(const lte_numerology& num, int n_id2);

//! Unitary DFT of the N samples at x on the 62 central (PSS/SSS) subcarriers.
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
 * Normalised PSS correlation metric over many lags (FFT-based overlap-save):
 *
 *   M(d) = sum_a |sum_n x_a(d+n) p*(n)|^2 / (sum_a sum_n |x_a(d+n)|^2 * sum_n |p(n)|^2)
 *
 * in [0, 1]. With data around the PSS the peak is about 62/n_sc x (CFO loss) and the
 * floor about 1/n_sc, so thresholds are given in units of 1/n_sc.
 */
class MIMODET_API pss_correlator
{
public:
    pss_correlator(const lte_numerology& num, int n_id2);
    ~pss_correlator();
    int length() const { return d_n; }
    const std::vector<cf>& reference() const { return d_ref; }
    //! Metric for lags 0..n_lags-1; each x[a] must hold n_lags + N - 1 samples.
    void metric(const std::vector<const cf*>& x, int n_lags, float* out);
    //! Complex correlation sum_n x(n) p*(n) at one lag (direct).
    cf correlate(const cf* x) const;

private:
    struct impl;
    int d_n, d_p;
    std::vector<cf> d_ref;
    std::unique_ptr<impl> d_impl;
};

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
    explicit cfo_rotator(int fft_size) : d_n(fft_size) {}
    //! Changes the CFO keeping the phase continuous at absolute sample index n.
    void retune(double cfo, int64_t n);
    void reset(double cfo, int64_t n0, double phase0 = 0.0);
    double cfo() const { return d_cfo; }
    double phase(int64_t n) const;
    void apply(int64_t index0, const cf* in, cf* out, int n) const;

private:
    int d_n;
    double d_cfo = 0.0, d_phase0 = 0.0;
    int64_t d_n0 = 0;
};

//! Slot 0 / slot 10 decision from the SSS (frequency domain, coherent with the PSS).
struct sss_decision {
    int ns = -1;          //!< 0 or 10
    double rho0 = 0.0;    //!< normalised coherent correlation with the SSS of slot 0, [-1, 1]
    double rho10 = 0.0;   //!< ... with the SSS of slot 10
    bool confident = false; //!< best rho > 0.4 and ahead of the other by > 0.2
};
/*!
 * pss_bins[a], sss_bins[a]: the 62 sync subcarriers (sync_dft) of the PSS and SSS symbols
 * on antenna a, CFO corrected. The PSS gives the channel; z = Y_sss conj(H_pss) is
 * correlated with both SSS candidates.
 */
MIMODET_API sss_decision detect_sss(const std::vector<std::vector<cf>>& pss_bins,
                                    const std::vector<std::vector<cf>>& sss_bins,
                                    const std::vector<cf>& pss,
                                    const std::vector<cf>& sss0,
                                    const std::vector<cf>& sss10);

//! Parameters of the slot synchroniser.
struct slot_sync_params {
    //! Acquisition: a PSS candidate is a lag whose metric M (above) exceeds
    //! detect_threshold / n_sc and is the largest within +-fft_size/4. The PSS is on port
    //! 0 only, so its peak is about 62/n_tx (x fading, SNR and CFO losses); the threshold
    //! is therefore low (the data/noise floor is about 1, its maximum over a half frame
    //! about 8-10 with one receive antenna) and every candidate must also pass the CFO,
    //! refined-timing and SSS checks before the synchroniser locks. The coarse metric
    //! also carries the CFO loss (sinc^2(cfo): 0.74 at 0.3 subcarrier spacings).
    double detect_threshold = 7.0;
    //! Acquisition: the candidate's metric after CFO correction and timing refinement
    //! (+-fft_size/8) must reach verify_threshold / n_sc.
    double verify_threshold = 8.0;
    //! Acquisition: the SSS must correlate with one of the slot 0/10 sequences with
    //! rho >= sss_min_rho and beat the other by sss_min_margin (rho is in [-1, 1]; about
    //! 0 +- 0.1 on noise or data, 0.8-1 on a real SSS from 10 dB SNR on).
    double sss_min_rho = 0.5;
    double sss_min_margin = 0.3;
    //! Tracking: a PSS counts as found above track_threshold / n_sc.
    double track_threshold = 8.0;
    //! Tracking search half-width in samples (-1: cp_other).
    int track_window = -1;
    //! Weight of a new slot's CP correlation in the smoothed CFO correlation.
    double cfo_alpha = 0.2;
    //! Consecutive missed PSS (2 per frame) after which the lock is dropped and the
    //! synchroniser re-acquires; until then the timing is kept.
    int max_missed = 8;
    //! Consecutive confident SSS decisions contradicting the slot count before relabeling.
    int relabel_after = 2;
    //! Acquisition: at most this many candidates are verified per half frame of lags (a
    //! bound on the work on pathological input).
    int max_candidates = 64;
};

//! What pop_slot returns besides the samples.
struct slot_info {
    int ns = 0;              //!< slot index 0..19
    int64_t input_start = 0; //!< absolute input index of the slot's first sample
    double cfo = 0.0;        //!< CFO used for this slot, subcarrier spacings
    bool first = false;      //!< first slot after (re-)acquisition
    bool pss_checked = false; //!< slot 0/10: PSS searched
    bool pss_found = false;
    int timing_step = 0;     //!< timing correction applied at this slot (samples)
    float pss_metric = 0.0f; //!< PSS metric x n_sc (slots 0/10)
    bool nonfinite = false;  //!< the slot holds NaN/inf samples (passed on as they are)
};

/*!
 * \brief Streaming slot synchroniser (PSS timing, CP CFO, SSS slot number).
 *
 * push() appends samples of all antennas; pop_slot() returns the next CFO-corrected
 * slot (slot_samples per antenna) once enough input is there. Acquisition computes the
 * PSS metric in fixed blocks of lags (aligned to where the search started, so the values
 * do not depend on how the input was pushed) and examines the candidates (local maxima
 * above detect_threshold) in lag order: for each, the CFO from the CPs of the PSS slot,
 * the timing refined on the corrected samples and slot 0/10 from the SSS; the first
 * candidate with a confident SSS gives the lock. Every decision waits until the input it
 * looks at is complete, so the lock point does not depend on the push() sizes. Tracking
 * re-searches the PSS at every slot 0/10 within +-track_window and smooths the CFO
 * every slot.
 */
class MIMODET_API slot_sync
{
public:
    using log_fn = std::function<void(int level, const std::string& msg)>; // 0 debug .. 3 error

    slot_sync(const lte_numerology& num,
              int n_rx,
              int cell_id,
              const slot_sync_params& params = slot_sync_params());
    ~slot_sync();

    void set_logger(log_fn f) { d_log = std::move(f); }
    //! Appends n samples of every antenna.
    void push(const std::vector<const cf*>& in, int n);
    //! Next slot into out[a] (slot_samples each) if ready.
    bool pop_slot(const std::vector<cf*>& out, slot_info& info);
    //! Input samples the synchroniser wants before it can make progress (>= 1).
    int64_t samples_wanted() const;
    bool locked() const { return d_locked; }
    double cfo() const;
    int64_t samples_in() const { return d_base + static_cast<int64_t>(d_buf[0].size()); }
    const lte_numerology& numerology() const { return d_num; }

private:
    void log(int level, const std::string& m) const
    {
        if (d_log)
            d_log(level, m);
    }
    const cf* at(int a, int64_t n) const { return d_buf[a].data() + (n - d_base); }
    int64_t end() const { return samples_in(); }
    void discard_before(int64_t n);
    void run_acquisition();
    bool try_lock(int64_t coarse);
    bool refine_pss(int64_t expected, int half_width, int64_t* found, float* metric);
    sss_decision check_sss(int64_t pss_pos);
    std::vector<std::vector<cf>> corrected(int64_t start, int len) const;

    lte_numerology d_num;
    int d_n_rx, d_cell_id;
    slot_sync_params d_p;
    lte_grid d_grid;
    pss_correlator d_corr;
    sync_dft d_dft;
    cfo_rotator d_rot;
    log_fn d_log;
    int d_n, d_slot, d_half, d_track;

    std::vector<std::vector<cf>> d_buf;
    int64_t d_base = 0;

    // acquisition
    void acquisition_restart(int64_t lag);
    int64_t d_m0 = 0;       //!< lag of d_metric[0]
    int64_t d_next_lag = 0; //!< metric known for lags [d_m0, d_next_lag)
    int64_t d_cand = 0;     //!< next lag to examine as a candidate
    int64_t d_win_start = 0; //!< start of the current half frame of lags (log, budget)
    float d_win_best = 0.0f;
    int d_win_tries = 0;
    std::vector<float> d_metric;
    int d_block;             //!< metric block length (lags)
    int d_cand_half;         //!< candidate neighbourhood half-width (lags)

    // tracking
    bool d_locked = false, d_first = false;
    int64_t d_start = 0; //!< absolute input index of the next slot
    int d_ns = 0;
    int64_t d_pss_done = -1; //!< slot start whose PSS was already checked at lock
    cd d_cfo_corr = 0.0;
    float d_lock_metric = 0.0f;
    int d_missed = 0, d_mismatch = 0;
    bool d_nonfinite = false;
};

} // namespace lte_sync
} // namespace mimodet
} // namespace gr

#endif
