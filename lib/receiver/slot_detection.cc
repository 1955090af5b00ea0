/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detect/detector_internal.h"
#include "detect/finite.h"
#include "detect/vector_flags.h"
#include "receiver/slot_detection.h"
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace gr {
namespace mimodet {
namespace core {

slot_detection::slot_detection(const lte_grid& grid, int n_rx, detector::sptr det)
    : d_grid(grid), d_n_tx(grid.n_ports()), d_n_rx(n_rx), d_det(std::move(det))
{
    if (!d_det)
        throw std::invalid_argument("mimodet: slot_detection needs a detector");
    const auto& cfg = d_det->config();
    if (cfg.n_tx != d_n_tx || cfg.n_rx != n_rx)
        throw std::invalid_argument("mimodet: detector antennas (" + std::to_string(cfg.n_tx) +
                                    "x" + std::to_string(cfg.n_rx) +
                                    ") do not match the grid's");
    d_per_elem = d_det->bits_per_vector();
    const int n_sc = grid.numerology().n_sc;
    d_groups.resize(lte_numerology::slots_per_frame);
    for (int ns = 0; ns < lte_numerology::slots_per_frame; ++ns) {
        const auto& data = grid.data_elements(ns);
        // Per subcarrier, its data elements (increasing l) with their output positions.
        std::vector<std::vector<std::pair<int, int>>> per_k(n_sc);
        for (size_t j = 0; j < data.size(); ++j)
            per_k[data[j] % n_sc].emplace_back(data[j], static_cast<int>(j));
        std::map<int, group> by_count;
        for (int k = 0; k < n_sc; ++k) {
            const int n = static_cast<int>(per_k[k].size());
            if (n == 0)
                continue;
            auto& g = by_count[n];
            g.n_sym = n;
            g.sc.push_back(k);
            for (const auto& e : per_k[k]) { // data elements are in time order
                g.re.push_back(e.first);
                g.pos.push_back(e.second);
            }
        }
        for (auto& kv : by_count)
            d_groups[ns].push_back(std::move(kv.second));
    }
    d_timeline = call_timeline::make(
        "slots", { "t0_ns", "gather_ns", "detect_ns", "scatter_ns", "slots", "vectors" });

    // A backend that gathers on its device gets each slot's layout once: a one-slot call
    // then copies the packed slot (n_rx grids, then H) and the outputs in slot order,
    // and the host neither gathers nor scatters.
    const size_t grid_len = 7 * static_cast<size_t>(n_sc);
    const size_t hm = static_cast<size_t>(d_n_rx) * d_n_tx;
    d_gather = detector_access::gather(*d_det);
    for (int ns = 0; d_gather && ns < lte_numerology::slots_per_frame; ++ns) {
        gather_layout L;
        L.grid_len = grid_len;
        L.packed_len = d_n_rx * grid_len + n_sc * hm;
        for (const auto& g : d_groups[ns]) {
            L.segments.push_back(batch_segment{ g.sc.size(), static_cast<size_t>(g.n_sym) });
            for (int k : g.sc)
                L.h_src.push_back(static_cast<int32_t>(d_n_rx * grid_len + k * hm));
            L.y_src.insert(L.y_src.end(), g.re.begin(), g.re.end());
            L.out_pos.insert(L.out_pos.end(), g.pos.begin(), g.pos.end());
        }
        const int id = d_gather->add_gather_layout(L);
        if (id < 0) {
            d_layout_id.clear();
            break;
        }
        d_layout_id.push_back(id);
    }
    if (!d_layout_id.empty())
        d_packed.resize(d_n_rx * grid_len + n_sc * hm);
}

std::string slot_detection::detect_packed(const slot_input& in,
                                          uint8_t* bits,
                                          float* llr,
                                          vector_stats* stats)
{
    const int ns = in.ns;
    d_t_packed = d_timeline ? call_timeline::now_ns() : 0;
    if (ns < 0 || ns >= lte_numerology::slots_per_frame ||
        !std::isfinite(in.noise_var) || !(in.noise_var > 0.0f))
        return check(ns, in.grids, in.H, in.noise_var);
    const size_t grid_len = 7 * static_cast<size_t>(d_grid.numerology().n_sc);
    const size_t h_len = static_cast<size_t>(d_grid.numerology().n_sc) * d_n_rx * d_n_tx;
    bool finite = true;
    for (int r = 0; r < d_n_rx; ++r)
        finite &= copy_finite(in.grids[r], d_packed.data() + r * grid_len, grid_len);
    finite &= copy_finite(in.H, d_packed.data() + d_n_rx * grid_len, h_len);
    d_t_packed = d_timeline ? call_timeline::now_ns() : 0;
    if (!finite) { // a NaN or Inf somewhere: check() says whether it matters
        const std::string why = check(ns, in.grids, in.H, in.noise_var);
        if (!why.empty())
            return why;
    }
    d_gather->run_gathered(
        d_layout_id[ns], d_packed.data(), in.noise_var, bits, llr, stats);
    return std::string();
}

//! The GPU estimator as the detector's device stage: the model decided on the device
//! (nothing waits), or, for the run again of a slot whose filter was not on the device
//! yet, on the host (estimate_packed, which uploads it).
class estimating_stage : public device_stage
{
public:
    estimating_stage(gpu_channel_estimation& est, int ns) : d_est(est), d_ns(ns) {}
    staged_result run(void* dev_packed, void* stream) override
    {
        d_missed = false;
        if (d_host_model)
            return staged_noise_var(d_est.estimate_packed(d_ns, dev_packed, stream));
        d_dev_nv = d_est.enqueue_packed(d_ns, dev_packed, stream);
        return { staged_outcome::detected, 1.0f }; // the detection reads d_dev_nv
    }
    const float* device_noise_var() const override { return d_host_model ? nullptr : d_dev_nv; }
    //! The estimator's verdict on a slot that went through: retry_on_host where it found
    //! the pilots unusable (or, with the model on the device, the filter missing: see
    //! take_retry), unusable where the H it wrote is not finite.
    staged_result finish(const staged_result& result) override
    {
        const staged_result r =
            d_host_model ? result : staged_noise_var(d_est.packed_result(d_missed));
        if (r.outcome == staged_outcome::detected && !d_est.h_finite())
            return { staged_outcome::unusable, r.noise_var };
        return r;
    }
    /*!
     * True where the last run's filter was not on the device: the slot must run again,
     * and the stage then decides its model on the host.
     */
    bool take_retry()
    {
        if (!d_missed)
            return false;
        d_missed = false;
        d_host_model = true;
        return true;
    }

private:
    gpu_channel_estimation& d_est;
    int d_ns;
    bool d_host_model = false, d_missed = false;
    const float* d_dev_nv = nullptr;
};

namespace {
//! Time-domain input: the GPU demodulator makes the grids on the device, then the
//! estimator's stage runs. retry_on_host (nothing detected) where the samples are not
//! finite: the host demodulates them, and its checks decide.
class demodulation_stage : public estimating_stage
{
public:
    demodulation_stage(gpu_ofdm_demodulation& demod,
                       const std::complex<float>* const* samples,
                       gpu_channel_estimation& est,
                       int ns)
        : estimating_stage(est, ns), d_demod(demod), d_samples(samples)
    {
    }
    staged_result run(void* dev_packed, void* stream) override
    {
        if (!d_demod.demodulate_packed(d_samples, dev_packed, stream))
            return { staged_outcome::retry_on_host, 0.0f };
        return estimating_stage::run(dev_packed, stream);
    }
    staged_result finish(const staged_result& result) override
    {
        const staged_result r = estimating_stage::finish(result);
        // The stream has passed the device's check of samples uploaded straight from
        // registered memory.
        return d_demod.samples_finite()
                   ? r
                   : staged_result{ staged_outcome::retry_on_host, 0.0f };
    }

private:
    gpu_ofdm_demodulation& d_demod;
    const std::complex<float>* const* d_samples;
};
} // namespace

bool slot_detection::check_estimated_call(int ns,
                                          const uint8_t* bits,
                                          const float* llr,
                                          estimated_slot& res) const
{
    if (d_layout_id.empty())
        throw std::logic_error("mimodet: detect_estimated needs a detector that gathers on "
                               "its device");
    if ((bits == nullptr) == (llr == nullptr))
        throw std::invalid_argument("mimodet: detect_estimated needs exactly one output");
    if (llr && !d_det->soft())
        throw std::logic_error("mimodet: detector '" + d_det->config().algorithm +
                               "' gives hard bits only");
    if (ns < 0 || ns >= lte_numerology::slots_per_frame) {
        res.estimated = true; // nothing for the host path to do either
        res.why = "slot index " + std::to_string(ns) + " outside 0..19";
        return false;
    }
    return true;
}

void slot_detection::zero_output(size_t n_out, uint8_t* bits, float* llr)
{
    if (bits)
        std::fill(bits, bits + n_out, uint8_t(0));
    else
        std::fill(llr, llr + n_out, 0.0f);
}

slot_detection::estimated_slot slot_detection::detect_estimated(int ns,
                                                                const cf* const* grids,
                                                                gpu_channel_estimation& est,
                                                                uint8_t* bits,
                                                                float* llr,
                                                                bool count_truncated)
{
    estimated_slot res;
    if (!check_estimated_call(ns, bits, llr, res))
        return res;
    const int64_t t0 = d_timeline ? call_timeline::now_ns() : 0;
    const size_t grid_len = 7 * static_cast<size_t>(d_grid.numerology().n_sc);
    bool finite = true;
    for (int r = 0; r < d_n_rx; ++r)
        finite &= copy_finite(grids[r], d_packed.data() + r * grid_len, grid_len);
    d_t_packed = d_timeline ? call_timeline::now_ns() : 0;
    if (!finite) { // a NaN or Inf somewhere: only the data elements matter here (the
                   // pilots' turn comes in the estimator, which finds them unusable)
        res.why = check_grids(ns, grids);
        if (!res.why.empty()) {
            res.estimated = true;
            zero_output(data_vectors(ns) * d_per_elem, bits, llr);
            return res;
        }
    }
    estimating_stage stage(est, ns);
    return run_estimated(ns, d_packed.data(), stage, bits, llr, count_truncated, t0);
}

slot_detection::estimated_slot
slot_detection::detect_estimated_time(int ns,
                                      const cf* const* samples,
                                      gpu_ofdm_demodulation& demod,
                                      gpu_channel_estimation& est,
                                      uint8_t* bits,
                                      float* llr,
                                      bool count_truncated)
{
    estimated_slot res;
    if (!check_estimated_call(ns, bits, llr, res))
        return res;
    const int64_t t0 = d_timeline ? call_timeline::now_ns() : 0;
    d_t_packed = t0; // the samples are copied in the stage
    demodulation_stage stage(demod, samples, est, ns);
    return run_estimated(ns, nullptr, stage, bits, llr, count_truncated, t0);
}

slot_detection::estimated_slot slot_detection::run_estimated(int ns,
                                                             const cf* packed,
                                                             estimating_stage& stage,
                                                             uint8_t* bits,
                                                             float* llr,
                                                             bool count_truncated,
                                                             int64_t t0)
{
    estimated_slot res;
    const size_t n = data_vectors(ns);
    const size_t n_out = n * d_per_elem;
    auto zeros = [&] { zero_output(n_out, bits, llr); };
    if (count_truncated)
        d_stats.resize(n);
    vector_stats* stats = count_truncated ? d_stats.data() : nullptr;
    staged_result r =
        d_gather->run_staged(d_layout_id[ns], packed, stage, bits, llr, stats);
    if (stage.take_retry()) {
        ++d_filter_retries;
        r = d_gather->run_staged(d_layout_id[ns], packed, stage, bits, llr, stats);
    }
    // The one decision on the slot's fate.
    switch (r.outcome) {
    case staged_outcome::retry_on_host:
        zeros();
        res.why = "pilots unusable";
        return res; // estimated = false: the host path decides
    case staged_outcome::unusable:
        zeros();
        res.estimated = true;
        res.noise_var = r.noise_var;
        res.why = "H contains NaN or Inf";
        return res;
    case staged_outcome::detected:
        break;
    }
    res.estimated = true;
    res.noise_var = r.noise_var;
    if (count_truncated)
        for (size_t j = 0; j < n; ++j)
            res.truncated += d_stats[j].truncated;
    const int64_t t1 = d_timeline ? call_timeline::now_ns() : 0;
    record_call(t0, d_t_packed, t1, 1, n);
    return res;
}

size_t slot_detection::data_vectors(int ns) const
{
    return ns >= 0 && ns < lte_numerology::slots_per_frame ? d_grid.data_elements(ns).size()
                                                           : 0;
}

void slot_detection::record_call(
    int64_t t0, int64_t gathered, int64_t detected, size_t n_slots, size_t n_vec)
{
    if (d_timeline)
        d_timeline->add({ double(t0), double(gathered - t0), double(detected - gathered),
                          double(call_timeline::now_ns() - detected), double(n_slots),
                          double(n_vec) });
}

size_t slot_detection::max_values_per_slot() const
{
    size_t m = 0;
    for (int ns = 0; ns < lte_numerology::slots_per_frame; ++ns)
        m = std::max(m, values_per_slot(ns));
    return m;
}

void slot_detection::gather(
    const group& g, const cf* const* grids, const cf* H, cf* H_batch, cf* y_batch) const
{
    const size_t hm = static_cast<size_t>(d_n_rx) * d_n_tx;
    for (size_t m = 0; m < g.sc.size(); ++m)
        std::copy(H + g.sc[m] * hm, H + (g.sc[m] + 1) * hm, H_batch + m * hm);
    for (size_t i = 0; i < g.re.size(); ++i)
        for (int r = 0; r < d_n_rx; ++r)
            y_batch[i * d_n_rx + r] = grids[r][g.re[i]];
}

size_t slot_detection::degenerate_vectors(int ns, const cf* H, const float* llr) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        return 0;
    const size_t n_sc = d_grid.numerology().n_sc;
    const size_t hm = static_cast<size_t>(d_n_rx) * d_n_tx;
    if (H) {
        d_rank_deficient.resize(n_sc);
        for (size_t k = 0; k < n_sc; ++k)
            d_rank_deficient[k] = rank_deficient(H + k * hm, d_n_rx, d_n_tx);
    }
    const std::vector<int>& el = d_grid.data_elements(ns);
    size_t n = 0;
    for (size_t j = 0; j < el.size(); ++j) {
        bool f = H && d_rank_deficient[static_cast<size_t>(el[j]) % n_sc];
        for (int b = 0; llr && !f && b < d_per_elem; ++b)
            f = std::fabs(llr[j * d_per_elem + b]) >= llr_saturation;
        n += f;
    }
    return n;
}

std::string
slot_detection::check(int ns, const cf* const* grids, const cf* H, float noise_var) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        return "slot index " + std::to_string(ns) + " outside 0..19";
    if (!std::isfinite(noise_var) || !(noise_var > 0.0f))
        return "noise_var " + std::to_string(noise_var) + " is not finite and > 0";
    const size_t hn = static_cast<size_t>(d_grid.numerology().n_sc) * d_n_rx * d_n_tx;
    if (!all_finite(H, hn))
        return "H contains NaN or Inf";
    return check_grids(ns, grids);
}

std::string slot_detection::check_grids(int ns, const cf* const* grids) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        return "slot index " + std::to_string(ns) + " outside 0..19";
    auto bad = [](const cf& v) { return !std::isfinite(v.real()) || !std::isfinite(v.imag()); };
    const size_t grid_len = 7 * static_cast<size_t>(d_grid.numerology().n_sc);
    for (int r = 0; r < d_n_rx; ++r) {
        // Fast path: the whole grid; only data elements count, so look closer on a miss.
        if (all_finite(grids[r], grid_len))
            continue;
        for (int re : d_grid.data_elements(ns))
            if (bad(grids[r][re]))
                return "grid of antenna " + std::to_string(r) + " contains NaN or Inf";
    }
    return std::string();
}

size_t slot_detection::gather_slots(const std::vector<slot_input>& slots,
                                    std::vector<std::string>& why)
{
    const size_t hm = static_cast<size_t>(d_n_rx) * d_n_tx;
    size_t n_mat = 0, n_vec = 0;
    why.assign(slots.size(), std::string());
    // check() reads every grid and H in order before gather() picks elements out of
    // them: that also brings them into the cache (one pass that copies and checks
    // together, in gather()'s scattered order, is 3x slower: measured on the H100 host).
    for (size_t i = 0; i < slots.size(); ++i) {
        const auto& in = slots[i];
        why[i] = check(in.ns, in.grids, in.H, in.noise_var);
        if (!why[i].empty())
            continue;
        for (const auto& g : d_groups[in.ns]) {
            n_mat += g.sc.size();
            n_vec += g.re.size();
        }
    }
    d_H.resize(n_mat * hm);
    d_y.resize(n_vec * d_n_rx);
    d_nv.resize(n_mat);
    d_segments.clear();
    size_t m0 = 0, v0 = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
        if (!why[i].empty())
            continue;
        const auto& in = slots[i];
        for (const auto& g : d_groups[in.ns]) {
            const size_t n = g.sc.size();
            gather(g, in.grids, in.H, d_H.data() + m0 * hm, d_y.data() + v0 * d_n_rx);
            std::fill(d_nv.begin() + m0, d_nv.begin() + m0 + n, in.noise_var);
            d_segments.push_back(batch_segment{ n, static_cast<size_t>(g.n_sym) });
            m0 += n;
            v0 += g.re.size();
        }
    }
    return n_vec;
}

template <typename T>
void slot_detection::scatter_slots(const std::vector<slot_input>& slots,
                                   const std::vector<std::string>& why,
                                   const T* batch,
                                   T* out) const
{
    for (size_t i = 0; i < slots.size(); ++i) {
        const int ns = slots[i].ns;
        if (!why[i].empty()) {
            // ns may be invalid here: check() refused it, nothing of it was detected.
            if (ns >= 0 && ns < lte_numerology::slots_per_frame) {
                std::fill(out, out + values_per_slot(ns), T(0));
                out += values_per_slot(ns);
            }
            continue;
        }
        for (const auto& g : d_groups[ns]) {
            scatter(g, batch, out);
            batch += g.re.size() * d_per_elem;
        }
        out += values_per_slot(ns);
    }
}

std::vector<std::string> slot_detection::detect_bits(const std::vector<slot_input>& slots,
                                                     uint8_t* out,
                                                     std::vector<size_t>* truncated)
{
    std::vector<std::string> why;
    if (truncated)
        truncated->assign(slots.size(), 0);
    const int64_t t0 = d_timeline ? call_timeline::now_ns() : 0;
    if (slots.size() == 1 && !d_layout_id.empty()) {
        const size_t n = data_vectors(slots[0].ns);
        if (truncated)
            d_stats.resize(n); // run_gathered writes every vector's stats
        why.push_back(
            detect_packed(slots[0], out, nullptr, truncated ? d_stats.data() : nullptr));
        if (!why[0].empty())
            std::fill(out, out + n * d_per_elem, uint8_t(0));
        else if (truncated)
            for (size_t j = 0; j < n; ++j)
                (*truncated)[0] += d_stats[j].truncated;
        const int64_t t1 = d_timeline ? call_timeline::now_ns() : 0;
        record_call(t0, d_t_packed, t1, 1, why[0].empty() ? n : 0);
        return why;
    }
    const size_t n_vec = gather_slots(slots, why);
    const int64_t t1 = d_timeline ? call_timeline::now_ns() : 0;
    d_bits.resize(n_vec * d_per_elem);
    if (n_vec > 0) {
        // gather_slots checked the inputs: the detector need not scan the batch again.
        if (truncated)
            d_stats.assign(n_vec, vector_stats{});
        detector_access::detect_checked(*d_det,
                                        d_H.data(),
                                        d_y.data(),
                                        d_segments,
                                        d_nv.data(),
                                        d_bits.data(),
                                        nullptr,
                                        truncated ? d_stats.data() : nullptr);
        if (truncated) {
            // The batch holds the usable slots one after another.
            size_t v = 0;
            for (size_t i = 0; i < slots.size(); ++i) {
                if (!why[i].empty())
                    continue;
                const size_t n = d_grid.data_elements(slots[i].ns).size();
                for (size_t j = 0; j < n; ++j)
                    (*truncated)[i] += d_stats[v + j].truncated;
                v += n;
            }
        }
    }
    const int64_t t2 = d_timeline ? call_timeline::now_ns() : 0;
    scatter_slots(slots, why, d_bits.data(), out);
    record_call(t0, t1, t2, slots.size(), n_vec);
    return why;
}

std::vector<std::string> slot_detection::detect_llr(const std::vector<slot_input>& slots,
                                                    float* out)
{
    if (!d_det->soft())
        throw std::logic_error("mimodet: detector '" + d_det->config().algorithm +
                               "' gives hard bits only");
    std::vector<std::string> why;
    const int64_t t0 = d_timeline ? call_timeline::now_ns() : 0;
    if (slots.size() == 1 && !d_layout_id.empty()) {
        const size_t n = data_vectors(slots[0].ns);
        why.push_back(detect_packed(slots[0], nullptr, out, nullptr));
        if (!why[0].empty())
            std::fill(out, out + n * d_per_elem, 0.0f);
        const int64_t t1 = d_timeline ? call_timeline::now_ns() : 0;
        record_call(t0, d_t_packed, t1, 1, why[0].empty() ? n : 0);
        return why;
    }
    const size_t n_vec = gather_slots(slots, why);
    const int64_t t1 = d_timeline ? call_timeline::now_ns() : 0;
    d_llr.resize(n_vec * d_per_elem);
    if (n_vec > 0)
        detector_access::detect_checked(*d_det,
                                        d_H.data(),
                                        d_y.data(),
                                        d_segments,
                                        d_nv.data(),
                                        nullptr,
                                        d_llr.data(),
                                        nullptr);
    const int64_t t2 = d_timeline ? call_timeline::now_ns() : 0;
    scatter_slots(slots, why, d_llr.data(), out);
    record_call(t0, t1, t2, slots.size(), n_vec);
    return why;
}

void slot_detection::prepare(int max_slots)
{
    if (max_slots < 1)
        return;
    // Slot 1 carries no synchronisation signals: the most data elements of the frame.
    int largest = 0;
    for (int ns = 0; ns < lte_numerology::slots_per_frame; ++ns)
        if (values_per_slot(ns) > values_per_slot(largest))
            largest = ns;
    const size_t n_sc = d_grid.numerology().n_sc;
    const std::vector<cf> grid(7 * n_sc, cf(0.0f, 0.0f));
    std::vector<cf> H(n_sc * d_n_rx * d_n_tx, cf(0.0f, 0.0f));
    for (size_t k = 0; k < n_sc; ++k)
        for (int t = 0; t < d_n_tx; ++t)
            H[(k * d_n_rx + t) * d_n_tx + t] = cf(1.0f, 0.0f);
    const std::vector<const cf*> grids(d_n_rx, grid.data());
    const std::vector<slot_input> slots(max_slots,
                                        slot_input{ largest, grids.data(), H.data(), 1.0f });
    std::vector<float> out(values_per_slot(largest) * static_cast<size_t>(max_slots));
    if (d_det->soft())
        detect_llr(slots, out.data());
    std::vector<size_t> truncated; // with stats: the PSD's stats buffers too
    detect_bits(slots, reinterpret_cast<uint8_t*>(out.data()), &truncated);
    if (max_slots > 1 && !d_layout_id.empty()) { // the one-slot (device gather) path too
        const std::vector<slot_input> one(1, slots[0]);
        if (d_det->soft())
            detect_llr(one, out.data());
        detect_bits(one, reinterpret_cast<uint8_t*>(out.data()), &truncated);
    }
}

void slot_detection::detect_bits(int ns,
                                 const cf* const* grids,
                                 const cf* H,
                                 float noise_var,
                                 uint8_t* out,
                                 size_t* truncated)
{
    std::vector<size_t> t;
    const auto why =
        detect_bits({ slot_input{ ns, grids, H, noise_var } }, out, truncated ? &t : nullptr);
    if (!why[0].empty())
        throw std::invalid_argument("mimodet: slot " + std::to_string(ns) + ": " + why[0]);
    if (truncated)
        *truncated = t[0];
}

void slot_detection::detect_llr(
    int ns, const cf* const* grids, const cf* H, float noise_var, float* out)
{
    const auto why = detect_llr({ slot_input{ ns, grids, H, noise_var } }, out);
    if (!why[0].empty())
        throw std::invalid_argument("mimodet: slot " + std::to_string(ns) + ": " + why[0]);
}

} // namespace core
} // namespace mimodet
} // namespace gr
