/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Pilot-based channel and noise estimation of one LTE slot (no GNU Radio types): the
// core of the channel_estimator block.

#ifndef INCLUDED_MIMODET_CORE_CHANNEL_ESTIMATION_H
#define INCLUDED_MIMODET_CORE_CHANNEL_ESTIMATION_H

#include "util/call_timeline.h"
#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <atomic>
#include <complex>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

// cuda/phy/channel_estimation_cuda.cu: the same method on the GPU
class channel_estimation_cuda;

/*!
 * \brief Least-squares CRS channel estimation with linear frequency interpolation and a
 * pilot-residual noise estimate, one H per subcarrier and slot.
 *
 * Per transmit port t and receive antenna r:
 *  1. LS at the port's CRS elements of the slot: h = Y_r(l, k) / X_t(l, k).
 *  2. Time: the channel is taken as constant over the slot (docs/SLOT_LAYOUT.md), so the
 *     pilot symbols of the slot are combined. Ports 0/1 have pilots in symbols 0 and 4 on
 *     subcarriers offset by 3 from each other: merged, they sample the channel every 3
 *     subcarriers (twice the frequency resolution of per-symbol interpolation followed by
 *     averaging, with the same noise averaging). Ports 2/3 have one pilot symbol (spacing
 *     6). Should a port have two pilots on the same subcarrier they are averaged.
 *  3. Frequency: windowed linear MMSE (Wiener) smoothing and interpolation. Every
 *     subcarrier is estimated from the 32 nearest pilots of the port (all of them for
 *     1.4 MHz) with real weights w = r_kp^T (R_pp + nv / (n_i P) I)^-1 (n_i: pilots
 *     merged at subcarrier i), designed per slot for a channel model estimated from the
 *     LS pilots of all (r, t) pairs:
 *       - mean delay: the phase slope theta of the adjacent-pilot correlation of ports
 *         0/1; the pilots are derotated by exp(-j theta f_k) before filtering and the
 *         output rotated back (f_k: physical subcarrier position, the DC gap counted);
 *       - spread: a two-sided exponential PDP exp(-|tau| / b) around the mean delay,
 *         frequency correlation r(df) = 1 / (1 + (2 pi df b)^2); b is fitted from the
 *         measured normalised correlation rho(L) = Re E[g_k* g_(k+L)] / P at the largest
 *         lag L of 6, 12, 24, 48, 96 subcarriers with rho >= 0.3, widened by a safety
 *         factor 1 + min(1, b / 250 ns) (the fit sees the profile's core; the sparse
 *         late taps of EVA/ETU need the wider model), and clamped to [10 ns,
 *         max_delay / 4] (max_delay: maximal expected delay spread, default 4.7 us = the
 *         normal CP, covering ETU's 5 us; b = 1.2 us already passes ETU's 5 us tap with
 *         little loss); b = max_delay / 4 when even rho(6) < 0.3;
 *       - P = mean |g|^2 - nv: the channel power; nv: the slot's noise estimate below.
 *     b is rounded up on a 26 % grid and the SNR P / nv to 1.5 dB (clamped to -15..60
 *     dB); the weights are computed (Cholesky) per (pilot pattern, b, SNR) and cached
 *     (at most 128 sets). Non-finite or all-zero slots use linear interpolation
 *     (interpolate(), kept as a utility) and report NaN.
 *     Measured (loopback, 5 MHz, 4x4, NMSE / noise_var at 10/20/30 dB): EPA 0.05/0.06/0.09,
 *     EVA 0.15/0.26/0.34 (the linear interpolator: 0.59 at every SNR for EPA).
 *     No averaging over slots (one H per slot from that slot's pilots only).
 *
 * Noise variance: the LS estimates of a port form a sequence h_i = H(k_i) + n_i / X_i with
 * E|n_i / X_i|^2 = noise_var (|X| = 1). A difference filter of order d, e_i = sum_j
 * c_j h_(i+j) with binomial coefficients c = (1,-1), (1,-2,1), (1,-3,3,-1), cancels any
 * channel that is a polynomial of degree < d in k, and passes the noise with gain
 * sum c_j^2 = 2, 6, 20 (the smoothing-bias correction). Each order gives
 * noise_var_d = mean |e_i|^2 / sum c_j^2 over every (r, port) sequence; channel
 * curvature can only add energy (in expectation), so the estimator reports the smallest
 * of orders 2 and 3 (order 1 is too sensitive to the channel's slope). Only ports 0/1
 * are used when n_tx >= 2 (their merged pilots are twice as dense as those of ports
 * 2/3, hence far less curvature bias); the noise is the same on every port's pilots.
 * The result is floored at 1e-6 times the mean |h|^2 of those pilots (a 60 dB SNR cap),
 * so a noiseless input still gives a usable positive value. Non-finite input gives NaN
 * (and a NaN in H), and so do all-zero pilots (no signal): the detector block flags
 * such slots.
 *
 * Pilot-to-data power ratio (docs/SLOT_LAYOUT.md): a transmitter may send the CRS with
 * amplitude a = sqrt(10^(ratio / 10)) against the data's unit mean power. Everything
 * above works on the pilots as received (LS against the unit CRS values, so the LS
 * sees the channel a H): the noise variance is that of the grid elements whatever a, and
 * the Wiener model's SNR is the pilots' own. Only the output is scaled: H = (Wiener
 * output) / a, so the detectors see y = H x + n with E|x|^2 = 1. With the ratio known,
 * 1 / a is a constant; with it estimated (pilot_ratio_db NaN), h_scale() measures a^2 per
 * slot from the grids:
 *   a^2 = sum_(r, t) (mean |Y_r|^2 over port t's CRS elements - nv)
 *         / sum_r (mean |Y_r|^2 over the data elements - nv),
 * i.e. the received pilot power per port over the received data power, both without
 * the noise (nv: the slot's estimate above). At a port's CRS element only that port
 * transmits, so the numerator is a^2 sum |H_rt|^2 at the pilots; the data elements carry
 * sum_t |H_rt|^2 E|x|^2 with E|x|^2 = 1 for the random (scrambled) data of a slot; the
 * pilots sample the same band as the data, so the channel cancels. Per slot its spread is
 * 0.05-0.1 dB at 14-20 dB SNR, its bias below 0.1 dB (5 MHz, 2x4, EPA, -6..+9 dB:
 * lib/qa/qa_pilot_ratio.cc). It assumes every data element of the slot is used: empty
 * data elements (a partly allocated slot) would bias it up. The result is clamped to
 * pilot_ratio::k_min_db..k_max_db (last_pilot_ratio_db()).
 * The GPU version applies the same h_scale() (computed on the host) in its Wiener
 * kernel.
 *
 * Speed (docs/PERFORMANCE.md, "Channel estimation"): the per-slot work is split
 * into parallel phases on a persistent pool of threads - 1 workers (the caller is the
 * other): LS with the noise, power and mean-delay sums per (t, r) pair, then the
 * derotation and the spread fit's lag sums per port, then the Wiener filtering per block
 * of subcarriers (all pairs of a subcarrier together, so H is written contiguously).
 * Each partial sum has a fixed extent (a pair, a port) and the partials are added in a
 * fixed order, so H and the noise variance do not depend on the thread count (bit for
 * bit on one build). The Wiener step uses 8-float AVX vectors where the CPU has them and
 * a pilot's antennas fill them (n_rx 3, 4, 7, 8), SSE otherwise: the same operations (no
 * fused multiply-add), so the same H (MIMODET_NO_AVX set: SSE only). A Wiener
 * filter design (cache miss) factorises each distinct pilot-window covariance once (most
 * windows share one: the pilot grid is regular) and solves its subcarriers in parallel.
 * estimate() is not reentrant: one call at a time per object (the block's work()).
 */
class MIMODET_API channel_estimation
{
public:
    using cf = std::complex<float>;

    /*!
     * \param max_delay_us maximal expected delay spread in microseconds, (0, 100]
     * (default the normal CP length, 4.7 us, covering ETU's 5 us): bounds the model
     * spread of the Wiener smoother (b <= max_delay / 4).
     * \param threads threads that work on one slot, 1..256 (1: the caller alone; more:
     * threads - 1 workers started here, kept until destruction).
     * \param pilot_ratio_db the transmitter's CRS-to-data power ratio in dB (0: pilots
     * and data at the same power; -10..10 dB), or NaN to estimate it per slot (see
     * above). std::invalid_argument otherwise.
     */
    channel_estimation(const lte_numerology& num,
                       int n_tx,
                       int n_rx,
                       int cell_id,
                       double max_delay_us = 4.7,
                       int threads = 1,
                       double pilot_ratio_db = 0.0);
    ~channel_estimation();
    channel_estimation(const channel_estimation&) = delete;
    channel_estimation& operator=(const channel_estimation&) = delete;

    int n_sc() const { return d_grid.numerology().n_sc; }
    int n_tx() const { return d_n_tx; }
    int n_rx() const { return d_n_rx; }
    const lte_grid& grid() const { return d_grid; }
    //! Complex values of one slot's H: n_sc * n_rx * n_tx.
    size_t h_size() const { return static_cast<size_t>(n_sc()) * d_n_rx * d_n_tx; }
    //! Threads working on one slot (the constructor's threads).
    int threads() const { return d_pool.size(); }
    //! The constructor's pilot_ratio_db (NaN: estimated per slot).
    double pilot_ratio_db() const { return d_pilot_ratio_db; }
    //! True where the pilot-to-data ratio is estimated per slot (from the grids).
    bool estimates_pilot_ratio() const { return d_estimate_ratio; }
    //! The ratio (dB) the last estimated slot used: the known one, or the last estimate
    //! (NaN before the first).
    double last_pilot_ratio_db() const { return d_last_ratio_db.load(); }

    /*!
     * The factor from the pilots' channel to the data's, 1 / a (see above), for slot ns
     * with noise variance nv: the known ratio's (grids may then be null), or
     * (estimates_pilot_ratio()) measured from the n_rx grids (std::logic_error where
     * null). estimate() applies it; the GPU version calls it too.
     */
    float h_scale(int ns, const cf* const* grids, double nv) const;

    /*!
     * Estimates slot ns (0..19). grids[r] points to receive antenna r's grid, 7 * n_sc
     * values (element l * n_sc + k). Writes H[(k * n_rx + r) * n_tx + t] and returns
     * the noise variance per grid element.
     */
    float estimate(int ns, const cf* const* grids, cf* H) const;

    //! Pilot subcarriers of port t in slot ns after combining the pilot symbols (sorted).
    const std::vector<int>& pilot_subcarriers(int ns, int t) const
    {
        return d_ports[ns * d_n_tx + t].k;
    }

    /*!
     * Linear interpolation of values at the increasing subcarriers pk onto 0..n_sc-1,
     * flat beyond the ends; out[k * stride].
     */
    static void interpolate(const std::vector<int>& pk,
                            const cf* values,
                            int n_sc,
                            cf* out,
                            size_t stride);

    /*!
     * Sum of |e_i|^2 / sum c_j^2 and the number of terms, for the order-d difference
     * filter (d = 1..3) over the sequence h[0..n-1] (see the class description).
     */
    static void difference_energy(const cf* h, size_t n, int order, double& sum, size_t& count);

    //! Physical frequency of subcarrier k in subcarrier spacings: the DC subcarrier is
    //! not part of the grid (k = n_sc / 2 is one above DC, n_sc / 2 - 1 one below).
    static double subcarrier_position(int k, int n_sc) { return k < n_sc / 2 ? k : k + 1; }
    //! Number of lags of the spread fit (6, 12, 24, 48, 96 subcarriers).
    static constexpr int k_lags = 5;

private:
    // The GPU version reads the pilot tables, shares the filter cache (its model's
    // decisions are channel_model.h's, as here), and falls back to estimate() for
    // unusable slots.
    friend class channel_estimation_cuda;

    /*!
     * Persistent workers: run(n, f) calls f(0..n-1) on the caller and the workers and
     * returns when all calls are done. Idle workers sleep on a condition variable at
     * once: polling for 200 us after each job cost 1.8-2 cores of CPU time in the 20 MHz
     * 4x4 receiver on the H100 host, for no measurable gain in throughput or latency.
     */
    class pool
    {
    public:
        explicit pool(int threads);
        ~pool();
        int size() const { return d_size; }
        void run(int n, const std::function<void(int)>& f);

    private:
        void worker(int id);
        int d_size;
        std::vector<std::thread> d_threads;
        std::mutex d_mutex;
        std::condition_variable d_cv;
        bool d_stop = false;
        std::atomic<uint64_t> d_gen{ 0 };         //!< job generation, bumped per run()
        const std::function<void(int)>* d_job = nullptr;
        int d_n = 0;
        std::atomic<int> d_next{ 0 };      //!< next task index to claim
        std::atomic<int> d_done{ 0 };      //!< tasks finished
        std::atomic<int> d_in_flight{ 0 }; //!< workers inside the current job
    };

    struct port_pilots {
        std::vector<int> k;              //!< distinct pilot subcarriers, increasing
        std::vector<std::vector<int>> re; //!< per k: its CRS elements l * n_sc + k
        std::vector<std::vector<cf>> inv_x; //!< per k and element: 1 / X
        int pattern;                     //!< index into d_patterns (same k and counts)
        // The same, flattened for the per-slot LS loop (no nested vectors).
        std::vector<int> off;       //!< per k: first element in re_flat (size + 1)
        std::vector<int> re_flat;   //!< CRS elements, grouped by k
        std::vector<cf> inv_flat;   //!< 1 / X of re_flat
        std::vector<float> n_flat;  //!< per k: float(number of elements), the LS divisor
        //! Per lag of the spread fit: the pilot index pairs (i, j) with k_j = k_i + L, in
        //! the order the fit sums them.
        std::vector<std::vector<std::pair<int, int>>> lag_pairs;
        //! Indices i whose (i, i + 1) enter the mean-delay correlation.
        std::vector<int> delay_pairs;
    };

    //! Wiener weights of one pilot pattern: per subcarrier the window start and M weights.
    struct wiener_filter {
        int M;
        std::vector<int> start;
        std::vector<float> w;
    };
    //! Cached (the shared pointer stays valid when the cache is cleared).
    std::shared_ptr<const wiener_filter> filter(int pattern, int b_idx, int snr_idx) const;
    lte_grid d_grid;
    int d_n_tx, d_n_rx;
    double d_max_delay_s;
    double d_pilot_ratio_db;
    bool d_estimate_ratio;
    float d_known_h_scale; //!< 1 / a of the known ratio (1 where estimated)
    mutable std::atomic<double> d_last_ratio_db; //!< read by other threads (getters)
    std::vector<const port_pilots*> d_patterns; //!< distinct pilot patterns
    mutable std::map<std::tuple<int, int, int>, std::shared_ptr<const wiener_filter>> d_filters;
    std::vector<port_pilots> d_ports; //!< [20][n_tx]
    int d_noise_ports;                //!< ports used for the noise estimate
    size_t d_max_pilots = 0;          //!< most pilots of any port and slot
    std::vector<size_t> d_pilot_values; //!< [slot] pilots of all ports times n_rx
    mutable pool d_pool;
    //! MIMODET_CALL_TIMELINE only: per estimate(), its start and the times of its phases
    //! (LS with the pairs' sums, the statistics, the filter lookup, Wiener).
    std::unique_ptr<call_timeline> d_timeline;
    // Per-slot scratch, allocated once (estimate() is not reentrant).
    mutable std::vector<cf> d_ls;   //!< [t * n_rx + r][d_max_pilots] LS (then derotated)
    //! [t][i][d_pstride]: the same, a pilot's antennas together (re, im of antenna r
    //! at 2r, 2r + 1; padded to whole vectors of 4 floats)
    mutable std::vector<float> d_lst;
    int d_pstride = 0;
    mutable std::vector<cf> d_rot;  //!< [t][d_max_pilots] mean-delay phase at the pilots
    mutable std::vector<double> d_pair_power;               //!< [pair] sum |LS|^2
    mutable std::vector<std::complex<double>> d_pair_delay; //!< [pair] adjacent-pilot corr.
    mutable std::vector<double> d_port_pw;  //!< [t] sum |derotated LS|^2
    mutable std::vector<double> d_port_lag; //!< [t][lag] spread-fit correlation sums
    mutable std::vector<double> d_dsum; //!< [pair][2]: difference energies of orders 2, 3
    mutable std::vector<size_t> d_dcount;
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
