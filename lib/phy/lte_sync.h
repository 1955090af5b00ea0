/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Receiver front end of the LTE-style link without GNU Radio types: the streaming slot
// synchroniser that the ofdm_sync block adapts, on the PSS correlation
// (lte_sync_pss.h), the CP-based CFO estimation (lte_sync_cfo.h), the SSS slot-0/10 and
// cell decision (lte_sync_sss.h) and the fine timing (lte_sync_tracking.h). Its code:
// lte_sync.cc (buffers, slot output), lte_sync_acquisition.cc (search and lock),
// lte_sync_tracking.cc (PSS tracking, sample clock).

#ifndef INCLUDED_MIMODET_LTE_SYNC_H
#define INCLUDED_MIMODET_LTE_SYNC_H

#include "phy/lte_sync_cfo.h"
#include "phy/lte_sync_common.h"
#include "phy/lte_sync_pss.h"
#include "phy/lte_sync_sss.h"
#include "phy/lte_sync_tracking.h"
#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {
class worker_pool;
}
namespace lte_sync {

//! Parameters of the slot synchroniser.
struct slot_sync_params {
    //! Acquisition: a PSS candidate is a lag whose metric M (pss_correlator, in [0, 1])
    //! reaches detect_threshold and is the largest within +-fft_size/4. Noise and data
    //! give M of about 1/62, whose maximum over a half frame is 0.15-0.19 with one
    //! receive antenna (1.4 to 20 MHz; less with more antennas); the PSS gives about
    //! SNR_b / (1 + SNR_b) x sinc^2(cfo) (0.74 at 0.3 subcarrier spacings and high SNR),
    //! whatever the number of transmit ports and however the PSS subcarriers fade relative
    //! to the rest of the band. Every candidate must also pass the CFO, refined-timing and
    //! SSS checks before the synchroniser locks.
    double detect_threshold = 0.2;
    //! Acquisition: the candidate's metric after CFO correction and timing refinement
    //! (+-fft_size/8) must reach verify_threshold.
    double verify_threshold = 0.25;
    //! Acquisition: the SSS must correlate with one of the slot 0/10 sequences with
    //! rho >= sss_min_rho and beat the other by sss_min_margin (rho is in [-1, 1]; about
    //! 0 +- 0.1 on noise or data, 0.8-1 on a real SSS from 10 dB SNR on).
    double sss_min_rho = 0.5;
    double sss_min_margin = 0.3;
    //! Cell search (cell_id -1): the best of the 336 hypotheses (sss_hypotheses) must
    //! reach cell_min_rho and beat the runner-up, the largest of the 335 others, by
    //! cell_min_margin. On noise those are about 0 +- 0.1 each (0 +- 0.07 with 2
    //! antennas), the largest about 0.3 and the gap between the two largest about 0.03
    //! on average (exponential-like: a gap of 0.15 about once in 150), so a false cell
    //! needs both improbable events on a candidate that passed the PSS checks.
    double cell_min_rho = 0.4;
    double cell_min_margin = 0.15;
    //! Tracking: a PSS counts as found from a metric of track_threshold on (noise within
    //! the +-track_window search stays below about 0.1).
    double track_threshold = 0.25;
    //! Tracking search half-width in samples (-1: cp_other).
    int track_window = -1;
    //! Weight of a new slot's CP correlation in the smoothed CFO correlation (after the
    //! first 1/cfo_alpha slots, which are averaged with equal weights).
    double cfo_alpha = 0.2;
    //! Consecutive missed PSS (2 per frame) after which the lock is dropped and the
    //! synchroniser re-acquires; until then the timing is kept.
    int max_missed = 8;
    //! Consecutive confident SSS decisions contradicting the slot count before relabeling.
    int relabel_after = 2;
    //! Acquisition: at most this many candidates are verified per half frame of lags (a
    //! bound on the work on pathological input).
    int max_candidates = 64;
    //! Sample-rate offset: the fractional positions (pss_fraction) of the last sro_window
    //! PSS, the lock's included (a weighted least-squares line through them), give the
    //! receiver's input samples per transmitted sample. A PSS off the line by more than
    //! max(1.5 samples, 75 ns) is held back; if the next one agrees with it, the line
    //! moves to them (a timing jump) keeping its slope. Once the drift it implies reaches
    //! sro_resample_drift samples per slot and the estimate is 3 standard errors from 0,
    //! the output is resampled (frac_interp) to remove it; below half that drift or 2
    //! standard errors it is not. 0 turns the correction off (the timing then only
    //! follows the PSS in whole samples).
    int sro_window = 16;
    double sro_resample_drift = 0.01;
    //! Largest sample-rate offset accepted from the first two PSS after the lock (a
    //! larger timing change between them is a clock jump: the line restarts there).
    double sro_max_ppm = 1000.0;
    //! Slots dropped (not put out, counted in slots_lost) as not the transmitter's: a
    //! CP correlation coefficient below drop_max_coef (the signal has SNR / (1 + SNR),
    //! noise about 1 / sqrt(CP samples): 0.07 at 1.4 MHz with 2 antennas, 0.1 with one;
    //! 0.3 is a signal at -3.7 dB per sample) and either an energy above burst_ratio
    //! times the signal's level (a slow average over the slots put out since the lock:
    //! a burst of interference, an ADC at full scale) or a missed PSS since the last one
    //! found (the signal gone, or the timing lost, until the lock is dropped).
    double drop_max_coef = 0.3;
    double burst_ratio = 1000.0;
};

//! What pop_slot returns besides the samples.
struct slot_info {
    int ns = 0;              //!< slot index 0..19
    int64_t input_start = 0; //!< absolute input index of the slot's first sample
    double cfo = 0.0;        //!< CFO used for this slot, subcarrier spacings
    bool first = false;      //!< first slot after (re-)acquisition
    //! A PSS search to report: the lock's PSS (on the lock's slot), or the tracking search
    //! of the slot 0/10 before this slot (it runs once that slot is out: slot_sync).
    bool pss_checked = false;
    bool pss_found = false;
    int pss_ns = -1;         //!< the slot (0 or 10) whose PSS pss_checked reports
    int timing_step = 0;     //!< timing correction applied at this slot (samples)
    float pss_metric = 0.0f; //!< PSS metric M in [0, 1] of that PSS
    bool nonfinite = false;  //!< the slot holds NaN/inf samples (passed on as they are)
    double sro_ppm = 0.0;    //!< sample-rate offset estimate (0 until a PSS is tracked)
    bool resampled = false;  //!< the slot was resampled to remove the sample-rate offset
    int cell_id = -1;        //!< the cell whose PSS/SSS the slot timing follows
    //! Slots never put out just before this one: at a re-lock the input between the end
    //! of the last slot out before the lock was dropped and this slot's start (whole
    //! slots), and the slots dropped as bursts (slot_sync_params::burst_ratio).
    int64_t slots_lost = 0;
};

//! The last lock of a slot_sync: the cell found and how clearly.
struct lock_report {
    int cell_id = -1;         //!< -1: no lock yet
    float pss_metric = 0.0f;  //!< PSS metric M at the lock
    double sss_rho = 0.0;     //!< SSS correlation of the cell (and slot) decided on
    double sss_runner_up = 0.0; //!< best other hypothesis: the other slot's SSS (given
                                //!< cell) or the best of the other 335 (cell search)
    int ns = -1;              //!< slot (0 or 10) of the lock's PSS
    int64_t pss_pos = 0;      //!< input index of the lock's PSS
};

/*!
 * \brief Streaming slot synchroniser (PSS timing, CP CFO, SSS slot number, sample-rate
 * offset).
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
 * every slot. The fractional PSS positions give the sample clock (a line through them,
 * slot_sync_params::sro_window); when its slope, the sample-rate offset, makes the
 * timing drift noticeably within a slot, the slots are resampled onto the
 * transmitter's clock (frac_interp) instead of cut at whole samples.
 *
 * The tracking search of a slot 0/10 runs after that slot is out: its window reaches
 * track_window samples past the slot's end, and it is most of such a slot's work, so
 * the slot would otherwise wait for the next slot's first samples and for the search.
 * Its timing step, sample clock, slot count and lock decisions apply from the next slot
 * on, which is emitted only after the search; its outcome is reported in that slot's
 * slot_info (pss_checked, pss_ns).
 *
 * Cell search (cell_id -1): acquisition correlates with the PSS of all three N_ID2
 * (the metric of a lag is the largest of the three) and collects the candidates of a
 * whole half frame of lags, in which every cell on the air sends its PSS once. They are
 * verified strongest first; the SSS then decides among the 336 hypotheses of the
 * candidate's N_ID2 (sss_hypotheses): the first candidate whose best hypothesis is
 * clear gives the lock and the cell id, which tracking then follows as with a given
 * cell id. The strongest cell is found, not the first in time, at the price of up to a
 * half frame (5 ms) more before the lock; after a lost lock the search starts again.
 */
class MIMODET_API slot_sync
{
public:
    using log_fn = std::function<void(int level, const std::string& msg)>; // 0 debug .. 3 error

    //! cell_id: 0..503, or -1 to search the cell (above).
    //! threads > 1: a slot's per-antenna work (input copies, resampling, CP sums) and its
    //! CFO correction are shared among min(threads, n_rx) threads (a persistent pool);
    //! the output is bit-identical to threads = 1.
    slot_sync(const lte_numerology& num,
              int n_rx,
              int cell_id,
              const slot_sync_params& params = slot_sync_params(),
              int threads = 1);
    ~slot_sync();

    void set_logger(log_fn f) { d_log = std::move(f); }
    //! Appends n samples of every antenna.
    void push(const std::vector<const cf*>& in, int n);
    //! Next slot into out[a] (slot_samples each) if ready.
    //! A slot dropped as not the transmitter's (slot_sync_params::burst_ratio) is
    //! skipped: the next one is returned, its slot_info::slots_lost counting the drop.
    bool pop_slot(const std::vector<cf*>& out, slot_info& info);
    //! Input samples the synchroniser wants before it can make progress (>= 1).
    int64_t samples_wanted() const;
    //! True when the input of the next step (an acquisition block, a tracking search or
    //! a slot) is all in: pop_slot() makes progress without another push().
    bool step_ready() const { return input_needed() <= end(); }
    bool locked() const { return d_locked; }
    //! The cell id followed: the given one, or the one found by the last lock (-1 until
    //! the first lock with cell search).
    int cell_id() const { return d_cell_id; }
    //! Whether the synchroniser searches the cell (made with cell_id -1).
    bool cell_search() const { return d_search; }
    const lock_report& last_lock() const { return d_lock; }
    //! Tracking searches that found no PSS, so far (also those that dropped the lock,
    //! which the next slot's slot_info does not report: that slot is the new lock's).
    uint64_t pss_missed() const { return d_pss_missed_total; }
    //! Slots lost so far, the sum of slot_info::slots_lost: the input never put out
    //! between a dropped lock and the next one (the slots put out while the PSS was
    //! missing, before the lock was dropped, are not in it), and the slots dropped as
    //! bursts (slot_sync_params::burst_ratio).
    uint64_t slots_lost() const { return d_slots_lost_total; }
    double cfo() const;
    //! Sample-rate offset estimate in ppm (receiver samples per transmitted sample - 1);
    //! 0 until it is known (the first tracked PSS after the lock).
    double sro_ppm() const { return d_sro_valid ? (d_clk_b - 1.0) * 1e6 : 0.0; }
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
    bool try_lock(int64_t coarse, int n_id2);
    //! Cell search: the candidates of the half frame of lags just finished, strongest first.
    bool try_candidates();
    //! The PSS/SSS references (and the tracking correlator) of N_ID2 / the cell.
    void use_pss(int n_id2);
    void use_cell(int cell_id);
    pss_correlator& corr() { return *d_corrs[d_n_id2]; }
    bool refine_pss(int64_t expected, int half_width, int64_t* found, float* metric);
    //! CFO-corrected samples [start, start + len) of every antenna into d_cor (one set
    //! of phasors for all antennas).
    void corrected(int64_t start, int len);
    //! out[a][i] = in[a][i] exp(-j phase(start + i)), i < len, phasors in d_ph; split
    //! in time (whole phasor blocks) over the threads when long enough.
    void derotate(int64_t start, const std::vector<const cf*>& in, cf* const* out, int len);
    //! fn(0 .. n-1), on the pool when n > 1.
    void parallel(int n, const std::function<void(size_t)>& fn);
    //! sync_dft of the CFO-corrected N samples at pos on every antenna into bins; false
    //! (nothing computed) when they are not all in the buffer.
    bool sync_bins(int64_t pos, std::vector<std::vector<cf>>& bins);
    //! The sync bins of the PSS at pss_pos into d_pss_bins (d_pss_bins_pos = pss_pos, or
    //! -1 when not in the buffer). check_sss and fraction_at call it unless the bins of
    //! that position are there already; every change of d_rot invalidates them.
    void pss_bins_at(int64_t pss_pos);
    sss_decision check_sss(int64_t pss_pos);
    double fraction_at(int64_t pss_pos);
    // Sample clock model: input position of output sample n (counted from the lock) is
    // d_clk_a + d_clk_b n.
    double timing_sigma(float metric) const; //!< spread of a PSS position, samples
    double jump_tolerance() const;           //!< PSS off the clock line by more: outlier
    void clock_reset(int64_t n, double t, double sigma);
    void clock_fit();
    //! Adds the PSS at input position t (spread sigma) of output sample n. Returns 0 (on
    //! the line, used), 1 (off the line: held back as an outlier) or 2 (a timing jump:
    //! the second PSS in a row off the line the same way; the line moved to it).
    int clock_update(int64_t n, double t, double sigma);
    double clock_pos(int64_t n) const { return d_clk_a + d_clk_b * static_cast<double>(n); }
    int64_t input_needed() const;   //!< input the next step needs (exclusive end)
    int64_t slot_input_end() const; //!< input needed to emit the next slot (exclusive)
    //! The pending PSS search: the input it needs (exclusive), and running it (it may drop
    //! the lock).
    int64_t pss_input_end() const;
    void track_pss();
    void set_resampling();
    enum class slot_step { out, dropped, wait };
    //! One step of pop_slot: a slot out, a slot dropped, or more input needed.
    slot_step next_slot(const std::vector<cf*>& out, slot_info& info);
    //! The state of the next slot, once the slot at input position start is out or
    //! dropped.
    void advance_slot(int64_t start);

    lte_numerology d_num;
    int d_n_rx, d_cell_id;
    bool d_search; //!< cell search (cell_id -1)
    int d_n_id2;   //!< N_ID2 of d_pss and corr()
    slot_sync_params d_p;
    std::vector<cf> d_pss, d_sss0, d_sss10; //!< the cell's sync sequences
    //! PSS correlators by N_ID2: the given cell's only, or all three (cell search).
    std::unique_ptr<pss_correlator> d_corrs[3];
    //! Cell search: the acquisition's metric of all three N_ID2 in one pass.
    std::unique_ptr<pss_correlator> d_search_corr;
    std::vector<sss_hypotheses> d_hyp; //!< cell search: by N_ID2
    lock_report d_lock;
    sync_dft d_dft;
    cfo_rotator d_rot;
    log_fn d_log;
    int d_n, d_slot, d_half, d_track;
    int d_threads;                           //!< 1: no pool
    std::unique_ptr<core::worker_pool> d_pool;

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
    std::vector<int8_t> d_metric_id2; //!< cell search: N_ID2 of each d_metric value
    std::vector<float> d_metric_tmp;  //!< cell search: one N_ID2's block
    struct candidate {
        int64_t lag;
        float metric;
        int n_id2;
    };
    std::vector<candidate> d_win_cands; //!< cell search: the half frame's candidates
    int d_block;             //!< metric block length (lags)
    int d_cand_half;         //!< candidate neighbourhood half-width (lags)

    // tracking
    bool d_locked = false, d_first = false;
    int64_t d_start = 0; //!< absolute input index of the next slot
    int d_ns = 0;
    int64_t d_pss_done = -1; //!< slot start whose PSS was already checked at lock
    //! A slot 0/10 that is out and whose PSS is still to be searched.
    struct pss_search {
        int64_t expected; //!< input position where its PSS should start
        int64_t n_pss;    //!< output sample index of the PSS
        int ns;           //!< the slot's number
    };
    std::optional<pss_search> d_pss_pending;
    //! The finished search for the next slot's slot_info (pss_checked: one to report).
    slot_info d_pss_report;
    uint64_t d_pss_missed_total = 0;
    cd d_cfo_corr = 0.0;
    int d_cfo_slots = 0; //!< slots in d_cfo_corr since the lock
    float d_lock_metric = 0.0f;
    int d_missed = 0, d_mismatch = 0;
    bool d_nonfinite = false;

    // scratch (no allocation per slot)
    std::vector<cf> d_ph;                     //!< phasors of one corrected() or slot
    std::vector<std::vector<cf>> d_cor;       //!< corrected() output per antenna
    std::vector<float> d_refine;              //!< refine_pss metric
    std::vector<std::vector<cf>> d_pss_bins;  //!< sync bins of the PSS at d_pss_bins_pos
    std::vector<std::vector<cf>> d_sss_bins;
    int64_t d_pss_bins_pos = -1;              //!< -1: d_pss_bins not valid
    std::vector<const cf*> d_ptr;
    std::vector<cf*> d_optr;
    std::vector<cd> d_cp_sums;                //!< CP sums per antenna and symbol
    std::vector<double> d_cp_energy;          //!< their samples' energy (cp_coefficient)

    // sample-rate offset
    frac_interp d_interp;
    std::vector<std::vector<cf>> d_raw; //!< the slot before CFO correction
    int64_t d_n_out = 0;                //!< output sample index of the next slot
    double d_clk_a = 0.0, d_clk_b = 1.0;
    struct clock_point {
        int64_t n; //!< output sample index of a PSS
        double t;  //!< its input position
        double w;  //!< weight 1 / sigma^2
    };
    std::vector<clock_point> d_clk_hist; //!< tracked PSS since the lock or the last jump
    std::optional<clock_point> d_clk_pending; //!< the last PSS off the line
    int d_clk_outliers = 0;                   //!< PSS off the line in a row
    double d_clk_sigma_b = 0.0;          //!< standard error of d_clk_b
    bool d_sro_valid = false;            //!< d_clk_b estimated (>= 2 PSS)
    bool d_resample = false;
    int64_t d_last_start = -1; //!< input_start of the previous slot (timing_step)
    int64_t d_last_end = -1;   //!< input position after the last slot out (slots_lost)
    uint64_t d_slots_lost_total = 0;
    int64_t d_lost_pending = 0; //!< slots dropped since the last slot out
    int d_dropped_run = 0;      //!< slots dropped in a row (one log line per run)
    double d_level = 0.0; //!< the signal's CP energy per slot (0: none since the lock)
};

} // namespace lte_sync
} // namespace mimodet
} // namespace gr

#endif
