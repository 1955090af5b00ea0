/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The streaming slot synchroniser (slot_sync) but for its acquisition
// (lte_sync_acquisition.cc) and tracking (lte_sync_tracking.cc): construction, the input
// buffer, the CFO-corrected samples, sync bins and PSS refinement both use, and the slot
// output.

#include "phy/lte_sync.h"
#include "util/worker_pool.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace lte_sync {

using namespace detail;

namespace {
//! slot_sync: pushes from this many samples copy the antennas in parallel (smaller ones
//! cost less than waking the pool).
constexpr int k_parallel_push = 4096;
//! slot_sync: phasor blocks (cfo_rotator::block) per thread at least when derotating.
constexpr int k_min_blocks = 2;
} // namespace

std::string detail::fmt(const char* f, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

// ---------------------------------------------------------------------------------
// Streaming synchroniser

slot_sync::slot_sync(const lte_numerology& num,
                     int n_rx,
                     int cell_id,
                     const slot_sync_params& params,
                     int threads)
    : d_num(num),
      d_n_rx(n_rx),
      d_cell_id(cell_id),
      d_search(cell_id == -1),
      d_n_id2(0),
      d_p(params),
      d_dft(num),
      d_rot(num.fft_size)
{
    if (n_rx < 1 || n_rx > 8)
        throw std::invalid_argument("mimodet: ofdm_sync needs 1..8 receive antennas, got " +
                                    std::to_string(n_rx));
    if (cell_id < -1 || cell_id > 503)
        throw std::invalid_argument("mimodet: cell_id must be 0..503, or -1 to search it; got " +
                                    std::to_string(cell_id));
    if (params.cfo_alpha <= 0.0 || params.cfo_alpha > 1.0)
        throw std::invalid_argument("mimodet: cfo_alpha must be in (0, 1]");
    d_n = num.fft_size;
    d_slot = num.slot_samples();
    d_half = 10 * d_slot;
    d_track = params.track_window < 0 ? num.cp_other : params.track_window;
    if (d_track < 1 || d_track > d_n / 4)
        throw std::invalid_argument("mimodet: track_window must be 1..fft_size/4");
    if (params.max_candidates < 1)
        throw std::invalid_argument("mimodet: max_candidates must be >= 1");
    if (params.sro_window < 0 || params.sro_window == 1)
        throw std::invalid_argument("mimodet: sro_window must be 0 (off) or >= 2");
    if (!(params.sro_resample_drift > 0.0) || !(params.sro_max_ppm > 0.0) ||
        params.sro_max_ppm > 1e4)
        throw std::invalid_argument("mimodet: sro_resample_drift must be > 0 and "
                                    "sro_max_ppm in (0, 1e4]");
    if (threads < 1)
        throw std::invalid_argument("mimodet: slot_sync needs threads >= 1");
    d_threads = std::min(threads, n_rx);
    if (d_search) {
        d_hyp.reserve(3);
        for (int id2 = 0; id2 < 3; ++id2) {
            d_corrs[id2] = std::make_unique<pss_correlator>(num, id2);
            d_hyp.emplace_back(id2);
        }
        d_search_corr = std::make_unique<pss_correlator>(num, std::vector<int>{ 0, 1, 2 });
        use_pss(0);
    } else {
        d_corrs[cell_id % 3] = std::make_unique<pss_correlator>(num, cell_id % 3);
        use_cell(cell_id);
    }
    if (d_threads > 1) {
        d_pool = std::make_unique<core::worker_pool>();
        // The tracking search's metric, one antenna per thread (the same values).
        for (auto& c : d_corrs)
            if (c)
                c->set_runner([this](size_t n, const std::function<void(size_t)>& f) {
                    const int t = static_cast<int>(std::min<size_t>(d_threads, n));
                    parallel(t, [&](size_t k) {
                        for (size_t a = k; a < n; a += static_cast<size_t>(t))
                            f(a);
                    });
                });
    }
    d_block = 3 * d_n;
    d_cand_half = d_n / 4;
    d_buf.resize(n_rx);
    d_raw.assign(n_rx, std::vector<cf>(d_slot));
    d_ph.resize(d_slot);
    d_cor.resize(n_rx);
    d_cp_sums.resize(static_cast<size_t>(n_rx) * lte_numerology::symbols_per_slot);
    d_cp_energy.resize(d_cp_sums.size());
    d_pss_bins.assign(n_rx, std::vector<cf>(k_sync_len));
    d_sss_bins.assign(n_rx, std::vector<cf>(k_sync_len));
    acquisition_restart(0);
}

void slot_sync::use_pss(int n_id2)
{
    d_n_id2 = n_id2;
    d_pss = lte_grid::make_pss(n_id2);
}

void slot_sync::use_cell(int cell_id)
{
    use_pss(cell_id % 3);
    d_cell_id = cell_id;
    d_sss0 = lte_grid::make_sss(cell_id, 0);
    d_sss10 = lte_grid::make_sss(cell_id, 10);
}

slot_sync::~slot_sync() = default;

double slot_sync::cfo() const { return d_rot.cfo(); }

void slot_sync::push(const std::vector<const cf*>& in, int n)
{
    if (static_cast<int>(in.size()) != d_n_rx)
        throw std::invalid_argument("mimodet: slot_sync::push: wrong number of antennas");
    // A slot of input is a few hundred kB: one copy per antenna in parallel.
    const int t = n >= k_parallel_push ? d_threads : 1;
    parallel(t, [&](size_t k) {
        for (int a = static_cast<int>(k); a < d_n_rx; a += t)
            d_buf[a].insert(d_buf[a].end(), in[a], in[a] + n);
    });
}

void slot_sync::parallel(int n, const std::function<void(size_t)>& fn)
{
    if (n > 1)
        d_pool->run(static_cast<size_t>(n), fn);
    else
        fn(0);
}

void slot_sync::discard_before(int64_t n)
{
    if (n <= d_base)
        return;
    const int64_t k = std::min<int64_t>(n - d_base, d_buf[0].size());
    for (auto& b : d_buf)
        b.erase(b.begin(), b.begin() + k);
    d_base += k;
}

int64_t slot_sync::input_needed() const
{
    if (!d_locked)
        return d_next_lag + d_block + d_n - 1; // the next block of metric lags
    return d_pss_pending ? pss_input_end() : slot_input_end();
}

int64_t slot_sync::samples_wanted() const
{
    return std::max<int64_t>(1, input_needed() - end());
}

void slot_sync::corrected(int64_t start, int len)
{
    d_ptr.clear();
    d_optr.clear();
    for (int a = 0; a < d_n_rx; ++a) {
        if (static_cast<int>(d_cor[a].size()) < len)
            d_cor[a].resize(len);
        d_ptr.push_back(at(a, start));
        d_optr.push_back(d_cor[a].data());
    }
    derotate(start, d_ptr, d_optr.data(), len);
}

void slot_sync::derotate(int64_t start,
                         const std::vector<const cf*>& in,
                         cf* const* out,
                         int len)
{
    if (static_cast<int>(d_ph.size()) < len)
        d_ph.resize(len);
    // Whole phasor blocks per thread, so that every thread's phasors are the values of
    // one phasors() call over the whole range; the phasors stay in cache for the antennas.
    constexpr int B = cfo_rotator::block;
    const int blocks = (len + B - 1) / B;
    const int t = std::max(1, std::min(d_threads, blocks / k_min_blocks));
    parallel(t, [&](size_t k) {
        const int i0 = static_cast<int>(blocks * k / t) * B;
        const int i1 = std::min(len, static_cast<int>(blocks * (k + 1) / t) * B);
        d_rot.phasors(start + i0, d_ph.data() + i0, i1 - i0);
        for (int a = 0; a < d_n_rx; ++a)
            cfo_rotator::multiply(in[a] + i0, d_ph.data() + i0, out[a] + i0, i1 - i0);
    });
}

bool slot_sync::sync_bins(int64_t pos, std::vector<std::vector<cf>>& bins)
{
    if (pos < d_base || pos + d_n > end())
        return false;
    corrected(pos, d_n);
    for (int a = 0; a < d_n_rx; ++a)
        d_dft(d_cor[a].data(), bins[a].data());
    return true;
}

void slot_sync::pss_bins_at(int64_t pss_pos)
{
    d_pss_bins_pos = sync_bins(pss_pos, d_pss_bins) ? pss_pos : -1;
}

bool slot_sync::refine_pss(int64_t expected, int half_width, int64_t* found, float* metric)
{
    const int64_t lo = std::max(d_base, expected - half_width);
    const int64_t hi = std::min(expected + half_width, end() - d_n); // inclusive
    if (hi < lo)
        return false;
    const int n_lags = static_cast<int>(hi - lo + 1);
    corrected(lo, n_lags + d_n - 1);
    d_ptr.clear(); // corrected() used it for its input
    for (const auto& v : d_cor)
        d_ptr.push_back(v.data());
    auto& m = d_refine;
    m.resize(n_lags);
    corr().metric(d_ptr, n_lags, m.data()); // d_ptr: the corrected samples
    int best = -1;
    float bv = -1.0f;
    for (int i = 0; i < n_lags; ++i)
        if (m[i] > bv) {
            bv = m[i];
            best = i;
        }
    if (best < 0)
        return false;
    *found = lo + best;
    *metric = bv;
    return true;
}

sss_decision slot_sync::check_sss(int64_t pss_pos)
{
    const int64_t sss_pos = pss_pos - d_n - d_num.cp_other;
    if (sss_pos < d_base || pss_pos + d_n > end())
        return sss_decision();
    if (d_pss_bins_pos != pss_pos)
        pss_bins_at(pss_pos);
    sync_bins(sss_pos, d_sss_bins);
    return detect_sss(d_pss_bins, d_sss_bins, d_pss, d_sss0, d_sss10);
}

bool slot_sync::pop_slot(const std::vector<cf*>& out, slot_info& info)
{
    for (;;) {
        const slot_step r = next_slot(out, info);
        if (r != slot_step::dropped)
            return r == slot_step::out;
    }
}

slot_sync::slot_step slot_sync::next_slot(const std::vector<cf*>& out, slot_info& info)
{
    if (d_locked && d_pss_pending) {
        if (end() < pss_input_end())
            return slot_step::wait;
        track_pss(); // before the next slot: its timing, clock and number depend on it
    }
    if (!d_locked) {
        run_acquisition();
        if (!d_locked)
            return slot_step::wait;
    }
    if (end() < slot_input_end())
        return slot_step::wait;
    info = slot_info();
    if (lte_grid::has_sync(d_ns) && d_pss_done == d_start) {
        info.pss_checked = true; // the lock's PSS, in this slot
        info.pss_found = true;
        info.pss_ns = d_ns;
        info.pss_metric = d_lock_metric;
    } else if (lte_grid::has_sync(d_ns)) {
        // Searched once this slot is out (pss_input_end): the timing, sample clock and
        // slot count it gives apply from the next slot on.
        const int64_t n_pss = d_n_out + d_slot - d_n; // output index of the PSS
        d_pss_pending = pss_search{
            d_resample ? std::llround(clock_pos(n_pss)) : d_start + d_slot - d_n, n_pss, d_ns
        };
    }
    if (d_pss_report.pss_checked) { // the search after the previous slot
        info.pss_checked = true;
        info.pss_found = d_pss_report.pss_found;
        info.pss_ns = d_pss_report.pss_ns;
        info.pss_metric = d_pss_report.pss_metric;
        d_pss_report = slot_info();
    }
    // The slot's samples before CFO correction: as they are, or resampled onto the
    // transmitter's sample clock (positions clock_pos(d_n_out + i)).
    // (Without resampling they are read in place from the input buffer.)
    int64_t start = d_start;
    const double p0 = clock_pos(d_n_out);
    if (d_resample)
        start = std::llround(p0);
    auto& ptr = d_ptr;
    ptr.clear();
    for (int a = 0; a < d_n_rx; ++a)
        ptr.push_back(d_resample ? d_raw[a].data() : at(a, start));
    // CFO: smoothed CP correlation (skipping the first quarter of every CP, where the
    // previous symbol's delay spread lands); its per-antenna sums go with the
    // resampling, on the threads when resampling (too little work alone).
    constexpr int L = lte_numerology::symbols_per_slot;
    const int t = d_resample ? d_threads : 1;
    parallel(t, [&](size_t k) {
        for (int a = static_cast<int>(k); a < d_n_rx; a += t) {
            if (d_resample)
                d_interp.resample(at(a, start), p0 - start, d_clk_b, d_raw[a].data(), d_slot);
            cp_symbol_sums(d_num,
                           ptr[a],
                           d_num.cp_other / 4,
                           &d_cp_sums[a * L],
                           &d_cp_energy[a * L]);
        }
    });
    cd r = 0.0; // cp_correlation's order of additions
    double energy = 0.0;
    for (size_t i = 0; i < d_cp_sums.size(); ++i) {
        r += d_cp_sums[i];
        energy += d_cp_energy[i];
    }
    if (energy > 0.0)
        r /= energy; // cp_coefficient: the slot's weight does not follow its level
    // Not the transmitter's signal where the slot's cyclic prefixes do not repeat its
    // symbols' ends (SNR / (1 + SNR) for the signal, about 0 for noise, zeros, a timing
    // that is off): a slot far above the signal's level (a burst of interference, an ADC
    // at full scale), or one after a missed PSS (the signal gone, or the timing lost).
    // Its bits would be noise that nothing downstream could tell from data: it is
    // dropped (the slot numbers after it say so) and counted as lost.
    const bool burst = d_level > 0.0 && energy > d_p.burst_ratio * d_level;
    if (finite(r) && std::isfinite(energy) && (burst || d_missed > 0) &&
        std::abs(r) < d_p.drop_max_coef) {
        if (d_dropped_run++ == 0)
            log(2,
                fmt("ofdm_sync: slot %d dropped: %s (CP correlation %.2f)",
                    d_ns,
                    burst ? fmt("%.0f dB above the signal's level",
                                10.0 * std::log10(energy / d_level))
                                .c_str()
                          : "no signal after a missed PSS",
                    std::abs(r)));
        ++d_lost_pending;
        ++d_slots_lost_total;
        if (info.pss_checked) // reported with the next slot out instead
            d_pss_report = info;
        advance_slot(start);
        return slot_step::dropped;
    }
    if (d_dropped_run > 0)
        log(2, fmt("ofdm_sync: %d slots dropped", d_dropped_run));
    d_dropped_run = 0;
    if (std::isfinite(energy) && energy > 0.0) // the signal's level: a slow average
        d_level = d_level > 0.0 ? 0.9 * d_level + 0.1 * energy : energy;
    if (finite(r)) {
        // A plain mean over the first 1/cfo_alpha slots after the lock, then exponential.
        const double w = std::max(d_p.cfo_alpha, 1.0 / (++d_cfo_slots));
        d_cfo_corr = (1.0 - w) * d_cfo_corr + w * r;
        // The CP gives the CFO modulo 1 subcarrier spacing: take the value nearest the
        // current one, so that a CFO at or drifting across +-0.5 is followed, not flipped.
        const double c = cfo_from_correlation(d_cfo_corr);
        d_rot.retune(c + std::round(d_rot.cfo() - c), start);
        d_pss_bins_pos = -1;
        d_nonfinite = false;
    } else {
        info.nonfinite = true;
        if (!d_nonfinite)
            log(3, fmt("ofdm_sync: non-finite input samples in slot %d (passed on, CFO kept)",
                       d_ns));
        d_nonfinite = true;
    }
    // One set of phasors for all antennas (the same values as d_rot.apply per antenna).
    derotate(start, ptr, out.data(), d_slot);
    info.ns = d_ns;
    info.input_start = start;
    info.timing_step = d_last_start < 0 ? 0 : static_cast<int>(start - d_last_start - d_slot);
    info.cfo = d_rot.cfo();
    info.first = d_first;
    info.sro_ppm = sro_ppm();
    info.resampled = d_resample;
    info.cell_id = d_cell_id;
    info.slots_lost = d_lost_pending;
    d_lost_pending = 0;
    if (d_first && d_last_end >= 0) {
        // A re-lock: the input between the last slot out and this one was never put out.
        // Whole slots of it (on the receiver's clock: the offset is at most ppm).
        const int64_t n = std::max<int64_t>(
            0, std::llround(static_cast<double>(start - d_last_end) / d_slot));
        info.slots_lost += n;
        d_slots_lost_total += static_cast<uint64_t>(n);
        if (n > 0)
            log(1,
                fmt("ofdm_sync: %lld slots lost while unlocked",
                    static_cast<long long>(n)));
    }
    d_first = false;
    advance_slot(start);
    return slot_step::out;
}

void slot_sync::advance_slot(int64_t start)
{
    d_last_start = start;
    d_last_end = d_resample ? std::llround(clock_pos(d_n_out + d_slot)) : start + d_slot;
    d_ns = (d_ns + 1) % lte_numerology::slots_per_frame;
    d_n_out += d_slot;
    d_start = d_resample ? static_cast<int64_t>(std::floor(clock_pos(d_n_out)))
                         : d_start + d_slot;
    int64_t keep = d_start - d_track - frac_interp::taps;
    if (d_pss_pending) // its search window, and the SSS symbol before the PSS
        keep = std::min(keep, d_pss_pending->expected - d_track - d_n - d_num.cp_other);
    discard_before(keep);
}

} // namespace lte_sync
} // namespace mimodet
} // namespace gr
