/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// slot_sync's acquisition: the PSS metric in blocks of lags, its candidates and their
// verification (CFO, refined timing, SSS) up to the lock.

#include "phy/lte_sync.h"

#include <algorithm>
#include <cmath>

namespace gr {
namespace mimodet {
namespace lte_sync {

using namespace detail;

void slot_sync::acquisition_restart(int64_t lag)
{
    d_m0 = d_next_lag = d_cand = d_win_start = lag; // metric blocks are aligned to lag
    d_metric.clear();
    d_metric_id2.clear();
    d_win_cands.clear();
    d_win_best = 0.0f;
    d_win_tries = 0;
}

void slot_sync::run_acquisition()
{
    const int W = d_cand_half;
    const float thr = static_cast<float>(d_p.detect_threshold);
    auto M = [this](int64_t lag) { return d_metric[static_cast<size_t>(lag - d_m0)]; };
    while (!d_locked) {
        // 1. Candidates whose neighbourhood [L - W, L + W] is known, in lag order. Each
        //    decision only looks at metric values and samples that are complete by now
        //    (try_lock needs up to L + N + N/8 < d_next_lag + N - 1 <= end()).
        while (d_cand + W < d_next_lag) {
            const int64_t L = d_cand++;
            if (L >= d_win_start + d_half) {
                if (d_search && try_candidates())
                    return;
                log(0, fmt("ofdm_sync: no PSS accepted in lags [%lld, %lld) (largest "
                           "metric %.2f, threshold %.2f, %d candidates checked)",
                           static_cast<long long>(d_win_start),
                           static_cast<long long>(d_win_start + d_half),
                           static_cast<double>(d_win_best),
                           d_p.detect_threshold, d_win_tries));
                d_win_start += d_half;
                d_win_best = 0.0f;
                d_win_tries = 0;
            }
            const float v = M(L);
            d_win_best = std::max(d_win_best, v);
            if (!(v >= thr))
                continue;
            // Local maximum: strictly above the earlier lags, not below the later ones.
            bool peak = true;
            for (int64_t j = std::max(d_m0, L - W); j <= L + W && peak; ++j)
                if ((j < L && M(j) >= v) || (j > L && M(j) > v))
                    peak = false;
            if (!peak)
                continue;
            if (d_search) { // verified once the half frame is complete
                d_win_cands.push_back({ L, v, d_metric_id2[static_cast<size_t>(L - d_m0)] });
                continue;
            }
            if (d_win_tries >= d_p.max_candidates)
                continue;
            ++d_win_tries;
            if (try_lock(L, d_n_id2))
                return;
        }
        // 2. Forget what no candidate can need any more.
        const int64_t keep = d_cand - W - 1;
        if (keep > d_m0) {
            d_metric.erase(d_metric.begin(), d_metric.begin() + (keep - d_m0));
            if (d_search)
                d_metric_id2.erase(d_metric_id2.begin(), d_metric_id2.begin() + (keep - d_m0));
            d_m0 = keep;
        }
        // Cell search: the samples of the whole half frame's candidates stay.
        discard_before((d_search ? d_win_start : d_cand) - W - 2 * d_slot);
        // 3. The next block of lags, computed in one call once all its input is there
        //    (blocks are aligned to the search start, so the values do not depend on how the
        //    input arrived).
        if (end() < d_next_lag + d_block + d_n - 1)
            return; // more input needed
        std::vector<const cf*> ptr;
        for (int a = 0; a < d_n_rx; ++a)
            ptr.push_back(at(a, d_next_lag));
        const size_t old = d_metric.size();
        d_metric.resize(old + d_block);
        if (!d_search) {
            corr().metric(ptr, d_block, d_metric.data() + old);
        } else {
            // The largest of the three N_ID2's metrics, and which one it is.
            d_metric_id2.resize(old + d_block);
            d_metric_tmp.resize(3 * static_cast<size_t>(d_block));
            d_search_corr->metric(ptr, d_block, d_metric_tmp.data());
            for (int i = 0; i < d_block; ++i) {
                int best = 0;
                for (int id2 = 1; id2 < 3; ++id2)
                    if (d_metric_tmp[id2 * static_cast<size_t>(d_block) + i] >
                        d_metric_tmp[best * static_cast<size_t>(d_block) + i])
                        best = id2;
                d_metric[old + i] = d_metric_tmp[best * static_cast<size_t>(d_block) + i];
                d_metric_id2[old + i] = static_cast<int8_t>(best);
            }
        }
        d_next_lag += d_block;
    }
}

bool slot_sync::try_candidates()
{
    auto& c = d_win_cands;
    std::stable_sort(c.begin(), c.end(), [](const candidate& a, const candidate& b) {
        return a.metric > b.metric;
    });
    bool ok = false;
    for (const auto& cand : c) {
        if (d_win_tries >= d_p.max_candidates)
            break;
        ++d_win_tries;
        if ((ok = try_lock(cand.lag, cand.n_id2)))
            break;
    }
    c.clear();
    return ok;
}

bool slot_sync::try_lock(int64_t coarse, int n_id2)
{
    const int R = d_n / 8;
    if (d_search)
        use_pss(n_id2);
    // 1. CFO from the CPs of the PSS slot (timing-free search around the coarse start).
    const int64_t s0 = coarse + d_n - d_slot;
    const int64_t th_lo = std::max(d_base, s0 - R);
    const int64_t th_hi = std::min(s0 + R, end() - d_slot);
    if (th_hi < th_lo)
        return false;
    std::vector<const cf*> ptr;
    for (int a = 0; a < d_n_rx; ++a)
        ptr.push_back(at(a, th_lo));
    cd gamma;
    bool gamma_is_coefficient = false;
    cp_search(d_num, ptr, static_cast<int>(th_hi - th_lo + 1), &gamma);
    if (!finite(gamma)) {
        log(3, "ofdm_sync: non-finite input samples around a PSS candidate");
        return false;
    }
    if (std::abs(gamma) == 0.0) {
        log(0, "ofdm_sync: PSS candidate in a silent stretch ignored");
        return false;
    }
    d_rot.reset(cfo_from_correlation(gamma), th_lo);
    d_pss_bins_pos = -1; // the PSS bins depend on the CFO correction
    // 2. Timing on the corrected samples.
    int64_t pss;
    float m;
    if (!refine_pss(coarse, R, &pss, &m) || m < d_p.verify_threshold) {
        log(0, fmt("ofdm_sync: PSS candidate at lag %lld: metric %.2f after CFO "
                   "correction (%.3f), below %.2f",
                   static_cast<long long>(coarse), m, d_rot.cfo(),
                   d_p.verify_threshold));
        return false;
    }
    // 3. The CFO again from the CPs of the slot, now that its timing is known, skipping
    //    the first quarter of every CP like the tracking does: the timing-free search
    //    above may take a window that reaches into the previous symbol's delay spread,
    //    which biased the first slots' CFO by up to 0.007 subcarrier spacings on EPA.
    const int64_t s1 = pss + d_n - d_slot;
    if (s1 >= d_base && s1 + d_slot <= end()) {
        std::vector<const cf*> sp;
        for (int a = 0; a < d_n_rx; ++a)
            sp.push_back(at(a, s1));
        const cd r = cp_coefficient(d_num, sp, d_num.cp_other / 4);
        if (finite(r) && std::abs(r) > 0.0) {
            gamma = r;
            gamma_is_coefficient = true;
            d_rot.reset(cfo_from_correlation(gamma), s1);
            d_pss_bins_pos = -1;
        }
    }
    // 4. Slot 0 or 10 (and with cell search N_ID1) from the SSS.
    double rho_best, rho_other;
    int ns, cell = d_cell_id;
    if (!d_search) {
        const auto sss = check_sss(pss);
        rho_best = std::max(sss.rho0, sss.rho10);
        rho_other = std::min(sss.rho0, sss.rho10);
        ns = sss.ns;
        if (!(rho_best >= d_p.sss_min_rho && rho_best - rho_other >= d_p.sss_min_margin)) {
            log(0, fmt("ofdm_sync: PSS at sample %lld (metric %.2f) but no clear SSS "
                       "(rho0 %.2f, rho10 %.2f)",
                       static_cast<long long>(pss), m, sss.rho0, sss.rho10));
            return false;
        }
    } else {
        cell_decision c;
        if (d_pss_bins_pos != pss)
            pss_bins_at(pss);
        const int64_t sss_pos = pss - d_n - d_num.cp_other;
        if (d_pss_bins_pos == pss && sync_bins(sss_pos, d_sss_bins))
            c = d_hyp[n_id2].detect(d_pss_bins, d_sss_bins);
        rho_best = c.rho;
        rho_other = c.runner_up;
        ns = c.ns;
        if (c.n_id1 < 0 ||
            !(rho_best >= d_p.cell_min_rho && rho_best - rho_other >= d_p.cell_min_margin)) {
            log(0, fmt("ofdm_sync: PSS of N_ID2 %d at sample %lld (metric %.2f) but no clear "
                       "SSS (best rho %.2f for N_ID1 %d, runner-up %.2f)",
                       n_id2, static_cast<long long>(pss), m, rho_best, c.n_id1, rho_other));
            return false;
        }
        cell = 3 * c.n_id1 + n_id2;
        use_cell(cell);
    }
    d_lock = lock_report{ cell, m, rho_best, rho_other, ns, pss };
    int64_t start = pss + d_n - d_slot;
    d_pss_done = start;
    if (start < d_base) { // the slot's beginning is gone: start at the next slot
        start += d_slot;
        ns += 1;
        d_pss_done = -1;
    }
    d_locked = true;
    d_first = true;
    d_level = 0.0; // the new lock's first slot sets it
    if (d_dropped_run > 0)
        log(2, fmt("ofdm_sync: %d slots dropped", d_dropped_run));
    d_dropped_run = 0;
    d_pss_pending.reset();
    d_pss_report = slot_info();
    d_start = start;
    d_ns = ns;
    // Sample clock: output sample 0 is the first emitted slot's first sample.
    d_n_out = 0;
    d_last_start = -1;
    d_sro_valid = false;
    d_resample = false;
    d_clk_hist.clear();
    d_clk_sigma_b = 0.0;
    if (d_p.sro_window > 0)
        clock_update(pss - start, static_cast<double>(pss) + fraction_at(pss),
                     timing_sigma(m));
    // The smoothed CFO holds correlation coefficients (cp_coefficient); the search's
    // plain correlation, where the slot's was not in the buffer, counts as one of
    // magnitude 1.
    d_cfo_corr = gamma_is_coefficient ? gamma : gamma / std::abs(gamma);
    d_cfo_slots = 1;
    d_lock_metric = m;
    d_missed = 0;
    d_mismatch = 0;
    log(1, fmt("ofdm_sync: locked to cell %d at input sample %lld, slot %d, CFO %.4f "
               "subcarrier spacings, PSS metric %.2f, SSS rho %.2f (next best %.2f)",
               cell, static_cast<long long>(start), ns, d_rot.cfo(), d_lock_metric, rho_best,
               rho_other));
    discard_before(d_start - d_track - 1);
    return true;
}

} // namespace lte_sync
} // namespace mimodet
} // namespace gr
