/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detect/algorithm_registry.h"
#include "detect/backend.h"
#include "detect/finite.h"
#include "detect/kernel.h"
#include "detect/psd/psd_params.h"
#include "detect/vector_flags.h"
#include "util/cancellation.h"
#include "util/worker_pool.h"
#include <gnuradio/mimodet/detector.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace gr {
namespace mimodet {

namespace core {
void check_device_index(int device, const std::string& who)
{
    if (device < 0)
        throw std::invalid_argument(who +
                                    ": device must be >= 0 (a CUDA device index), got " +
                                    std::to_string(device));
}

std::string cuda_device_problem(int device)
{
    const int devices = cuda_device_count();
    if (devices == 0)
        return std::string("no CUDA device is available") +
               (cuda_built() ? "" : " (built without CUDA)");
    if (device < 0 || device >= devices)
        return "CUDA device " + std::to_string(device) + " does not exist (" +
               std::to_string(devices) + " device" + (devices == 1 ? "" : "s") +
               " present: 0.." + std::to_string(devices - 1) + ")";
    return {};
}
} // namespace core

namespace {

std::mutex g_log_mutex;
log_handler g_log_handler;

// Below this many vectors per call waking a worker costs more than it saves.
constexpr size_t k_min_vectors_per_thread = 64;
// Most vectors of one matrix between two cancel checks: a slot's subcarrier (up to 7
// vectors) stays one kernel call; a matrix with thousands of vectors is still cut short.
constexpr size_t k_vectors_per_check = 16;

class cpu_detector : public detector
{
public:
    explicit cpu_detector(const detector_config& cfg) : detector(cfg)
    {
        int n = cfg.threads > 0 ? cfg.threads
                                : static_cast<int>(std::thread::hardware_concurrency());
        n = std::max(n, 1);
        // Build one kernel now: it validates the algorithm parameters at construction.
        d_kernels.push_back(core::make_cpu_kernel(cfg));
        d_max_threads = n;
        d_soft = detector_algorithm_soft(cfg.algorithm);
    }

    bool soft() const override { return d_soft; }

protected:
    void run(const cf* H,
             const cf* y,
             const batch_segment* segments,
             size_t n_seg,
             const float* noise_var,
             uint8_t* bits,
             float* llr,
             vector_stats* stats) override
    {
        // Matrix m of the call lies in segment seg_of(m); its H, y, outputs and stats
        // start at the segment's offsets plus its index within the segment.
        d_seg_mat0.assign(n_seg + 1, 0);
        d_seg_vec0.assign(n_seg + 1, 0);
        for (size_t i = 0; i < n_seg; ++i) {
            d_seg_mat0[i + 1] = d_seg_mat0[i] + segments[i].n_mat;
            d_seg_vec0[i + 1] = d_seg_vec0[i] + segments[i].n_mat * segments[i].n_sym;
        }
        const size_t n_mat = d_seg_mat0[n_seg], n_vec = d_seg_vec0[n_seg];
        // The kernels write the counters they keep (the linear ones none, only the PSD
        // the truncation flag): every other field of every vector is zero, as
        // vector_stats promises, whatever the caller's buffer held.
        if (stats)
            std::fill(stats, stats + n_vec, vector_stats{});
        const size_t by_work = std::max<size_t>(1, n_vec / k_min_vectors_per_thread);
        const size_t n_threads =
            std::min({ static_cast<size_t>(d_max_threads), n_mat, by_work });
        while (d_kernels.size() < n_threads)
            d_kernels.push_back(core::make_cpu_kernel(d_cfg));
        // One reference time for the whole call, shared by the worker threads (the PSD's
        // deadline is a budget per call, not per thread, matrix or segment).
        const auto call_start = std::chrono::steady_clock::now();
        for (size_t t = 0; t < n_threads; ++t)
            d_kernels[t]->begin_call(call_start);

        const int nb = bits_per_vector();
        // Cancellation: the calling thread also runs the cancel poll (cancel_check);
        // the workers only read the flag.
        const std::thread::id caller = std::this_thread::get_id();
        auto stop = [&] {
            return std::this_thread::get_id() == caller ? cancel_check()
                                                        : cancel_requested();
        };
        auto work = [&](size_t t, size_t begin, size_t end) {
            core::cpu_kernel& k = *d_kernels[t];
            const std::function<bool()> kernel_stop = stop;
            k.set_stop(&kernel_stop);
            const int nr = d_cfg.n_rx, nt = d_cfg.n_tx;
            // The kernel's preprocessing group: its matrices are converted, then handed
            // to preprocess() together, then detected one by one.
            const size_t group = static_cast<size_t>(std::max(1, k.preprocess_group()));
            std::vector<core::MatC> Hg(group, core::MatC(nr, nt));
            std::vector<const core::MatC*> Hp(group);
            std::vector<core::cd> yv;
            std::vector<float> llr_tmp;
            size_t seg = std::upper_bound(d_seg_mat0.begin(), d_seg_mat0.end(), begin) -
                         d_seg_mat0.begin() - 1;
            for (size_t m = begin; m < end; ++m) {
                const size_t g = (m - begin) % group;
                if (g == 0) {
                    const size_t n_group = std::min(group, end - m);
                    for (size_t i = 0; i < n_group; ++i) {
                        const cf* h = H + (m + i) * nr * nt;
                        core::MatC& Hi = Hg[i];
                        for (int r = 0; r < nr; ++r)
                            for (int c = 0; c < nt; ++c)
                                Hi(r, c) = core::cd(h[r * nt + c]);
                        Hp[i] = &Hi;
                    }
                    if (group > 1)
                        k.preprocess(Hp.data(), static_cast<int>(n_group));
                }
                const core::MatC& Hm = Hg[g];
                while (m >= d_seg_mat0[seg + 1])
                    ++seg;
                const size_t n_sym = segments[seg].n_sym;
                // First vector of matrix m in the call.
                const size_t v = d_seg_vec0[seg] + (m - d_seg_mat0[seg]) * n_sym;
                const cf* ym = y + v * nr;
                yv.resize(n_sym * nr);
                for (size_t i = 0; i < n_sym * nr; ++i)
                    yv[i] = core::cd(ym[i]);
                const double nv = noise_var[m];
                // The matrix's vectors in pieces, with a cancel check before each: a
                // batch may give one matrix any number of vectors.
                for (size_t s0 = 0; s0 < n_sym; s0 += k_vectors_per_check) {
                    if (stop())
                        return;
                    const size_t ns = std::min(k_vectors_per_check, n_sym - s0);
                    const size_t vs = v + s0; // first vector of the piece in the call
                    const core::cd* yp = yv.data() + s0 * nr;
                    vector_stats* st = stats ? stats + vs : nullptr;
                    if (d_soft) {
                        if (bits && !llr)
                            llr_tmp.resize(ns * nb);
                        float* out = llr ? llr + vs * nb : llr_tmp.data();
                        k.detect(Hm, yp, static_cast<int>(ns), nv, nullptr, out, st);
                        if (bits) {
                            uint8_t* b = bits + vs * nb;
                            for (size_t i = 0; i < ns * nb; ++i)
                                b[i] = out[i] < 0.0f ? 1 : 0;
                        }
                    } else {
                        k.detect(Hm,
                                 yp,
                                 static_cast<int>(ns),
                                 nv,
                                 bits + vs * nb,
                                 nullptr,
                                 st);
                    }
                }
            }
        };

        if (n_threads <= 1) {
            work(0, 0, n_mat);
            return;
        }
        // Same contiguous chunks and kernel per share index as with per-call threads;
        // every matrix is detected independently, so the outputs do not depend on the
        // split anyway.
        const size_t chunk = (n_mat + n_threads - 1) / n_threads;
        const std::function<void()> poll = [&] { cancel_check(); };
        d_pool.run(
            n_threads,
            [&](size_t t) {
                const size_t b = std::min(n_mat, t * chunk), e = std::min(n_mat, b + chunk);
                work(t, b, e);
            },
            &poll);
    }

private:
    std::vector<std::unique_ptr<core::cpu_kernel>> d_kernels;
    int d_max_threads = 1;
    bool d_soft = false;
    std::vector<size_t> d_seg_mat0, d_seg_vec0; //!< segment offsets of the current call
    // Last member: destroyed (workers joined) before the kernels they use.
    core::worker_pool d_pool;
};

//! Checks cfg; returns its algorithm's registry row.
const core::algorithm_info& validate_config(const detector_config& cfg)
{
    const core::algorithm_info& alg = core::find_algorithm(cfg.algorithm);
    if (cfg.n_tx < 1 || cfg.n_tx > 8)
        throw std::invalid_argument("mimodet: n_tx must be between 1 and 8, got " +
                                    std::to_string(cfg.n_tx));
    if (cfg.n_rx < cfg.n_tx || cfg.n_rx > 8)
        throw std::invalid_argument("mimodet: n_rx must be between n_tx (" +
                                    std::to_string(cfg.n_tx) + ") and 8, got " +
                                    std::to_string(cfg.n_rx));
    to_string(cfg.mod); // throws on an invalid enum value
    to_string(cfg.backend); // throws on an invalid enum value
    if (cfg.threads < 0)
        throw std::invalid_argument("mimodet: threads must be >= 0 (0 = all cores)");
    core::check_device_index(cfg.device, "mimodet");
    if (cfg.sorted_qr < -1 || cfg.sorted_qr > 1)
        throw std::invalid_argument("mimodet: sorted_qr must be -1 (the algorithm's "
                                    "default), 0 (plain QR) or 1 (sorted QR), got " +
                                    std::to_string(cfg.sorted_qr));
    if (!(cfg.llr_clip >= 0.0f) || std::isinf(cfg.llr_clip))
        throw std::invalid_argument("mimodet: llr_clip must be finite and >= 0");
    // The PSD is the only detector whose work depends on the channel and the noise; the
    // others' is fixed by their parameters, so a budget there would silently do nothing.
    if (core::psd_deadline_ns(cfg.psd_deadline_us) != 0 && !alg.uses_deadline)
        throw std::invalid_argument("mimodet: psd_deadline_us applies to algorithm 'psd' "
                                    "only (got " +
                                    std::to_string(cfg.psd_deadline_us) + " for '" +
                                    cfg.algorithm + "')");
    if (cfg.psd_node_budget != -1 && cfg.psd_node_budget != 0 && !alg.uses_deadline)
        throw std::invalid_argument("mimodet: psd_node_budget applies to algorithm 'psd' "
                                    "only (got " +
                                    std::to_string(cfg.psd_node_budget) + " for '" +
                                    cfg.algorithm + "')");
    if (cfg.psd_start_rows != -1 && !alg.uses_deadline)
        throw std::invalid_argument("mimodet: psd_start_rows applies to algorithm 'psd' "
                                    "only (got " +
                                    std::to_string(cfg.psd_start_rows) + " for '" +
                                    cfg.algorithm + "')");
    if (cfg.psd_radius != -1.0 && !alg.uses_deadline)
        throw std::invalid_argument("mimodet: psd_radius applies to algorithm 'psd' "
                                    "only (got " +
                                    std::to_string(cfg.psd_radius) + " for '" +
                                    cfg.algorithm + "')");
    // Each algorithm validates its own parameters when its kernel is built.
    (void)alg.make_cpu(cfg);
    return alg;
}

} // namespace

void set_log_handler(log_handler handler)
{
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_log_handler = std::move(handler);
}

void log_message(const std::string& level, const std::string& msg)
{
    std::lock_guard<std::mutex> lock(g_log_mutex);
    if (g_log_handler)
        g_log_handler(level, msg);
    else
        std::cerr << "mimodet " << level << ": " << msg << std::endl;
}

detector::detector(const detector_config& cfg)
    : d_cfg(cfg), d_cancel(std::make_unique<core::cancel_token>())
{
}
detector::~detector() = default;

void detector::cancel() noexcept { d_cancel->request(); }
void detector::clear_cancel() noexcept { d_cancel->clear(); }
void detector::set_cancel_poll(std::function<bool()> poll) { d_cancel->set_poll(std::move(poll)); }
bool detector::cancel_check() { return d_cancel->check(); }
bool detector::cancel_requested() const noexcept { return d_cancel->requested(); }

double detector::kernel_seconds(int)
{
    throw std::logic_error("mimodet: kernel_seconds is defined for the CUDA backend only");
}

std::string detector::backend() const { return to_string(d_cfg.backend); }

int detector::bits_per_vector() const
{
    return d_cfg.n_tx * static_cast<int>(d_cfg.mod);
}

namespace {
//! One vector through a new CUDA detector, so that a device that cannot run it (its
//! memory held by another process, no room for a context) shows at construction, where
//! "auto" can still take the CPU, and not in the middle of a stream. Throws what the
//! backend throws (std::runtime_error for CUDA errors).
void first_detection(detector& d)
{
    const detector_config& c = d.config();
    std::vector<detector::cf> H(static_cast<size_t>(c.n_rx) * c.n_tx), y(c.n_rx);
    for (int i = 0; i < c.n_tx; ++i)
        H[static_cast<size_t>(i) * c.n_tx + i] = 1.0f;
    const float noise_var = 1.0f;
    std::vector<uint8_t> bits(d.bits_per_vector());
    d.detect_bits(H.data(), y.data(), 1, 1, &noise_var, bits.data());
}
} // namespace

// The one place that decides between the backends: a CUDA factory builds its detector
// or throws (cuda_unsupported for a configuration beyond its kernels, std::runtime_error
// where the device cannot run it), whatever cfg.backend says.
detector::sptr detector::make(const detector_config& cfg)
{
    const core::algorithm_info& alg = validate_config(cfg);
    if (cfg.backend == backend_kind::cpu)
        return std::make_shared<cpu_detector>(cfg);

    const std::string no_device = core::cuda_device_problem(cfg.device);
    if (cfg.backend == backend_kind::cuda) {
        if (!no_device.empty())
            throw std::runtime_error("mimodet: backend 'cuda' requested but " +
                                     no_device);
        if (!alg.make_cuda)
            throw std::invalid_argument("mimodet: algorithm '" + cfg.algorithm +
                                        "' has no CUDA implementation in this build (" +
                                        core::cuda_missing_reason(alg) + ")");
        try {
            detector::sptr d = alg.make_cuda(cfg);
            first_detection(*d);
            return d;
        } catch (const std::runtime_error& e) {
            throw std::runtime_error("mimodet: backend 'cuda': the device cannot run '" +
                                     cfg.algorithm + "': " + e.what());
        }
    }
    // auto
    if (!no_device.empty()) {
        log_message("info", "backend 'auto': " + no_device + ", using the CPU");
    } else if (!alg.make_cuda) {
        log_message("info",
                    "backend 'auto': no CUDA implementation of '" + cfg.algorithm +
                        "' (" + core::cuda_missing_reason(alg) + "), using the CPU");
    } else {
        try {
            detector::sptr d = alg.make_cuda(cfg);
            first_detection(*d);
            return d;
        } catch (const core::cuda_unsupported& e) {
            log_message("info",
                        std::string("backend 'auto': ") + e.what() + "; using the CPU");
        } catch (const std::runtime_error& e) {
            log_message("warn",
                        "backend 'auto': the CUDA device cannot run '" + cfg.algorithm +
                            "' (" + e.what() + "), using the CPU");
        }
    }
    detector_config c = cfg;
    c.backend = backend_kind::cpu;
    return std::make_shared<cpu_detector>(c);
}

std::vector<batch_segment>
detector::validate_inputs(const cf* H,
                          const cf* y,
                          const std::vector<batch_segment>& segments,
                          const float* noise_var,
                          bool inputs_checked) const
{
    std::vector<batch_segment> used;
    size_t n_mat = 0, n_vec = 0; // n_mat: every segment's matrices occupy H, noise_var
    for (const auto& g : segments) {
        n_mat += g.n_mat;
        n_vec += g.n_mat * g.n_sym;
        if (g.n_mat > 0 && g.n_sym > 0)
            used.push_back(g);
    }
    if (used.empty())
        return used;
    if (!H || !y || !noise_var)
        throw std::invalid_argument("mimodet: null input buffer");
    if (inputs_checked)
        return used;
    const size_t nr = d_cfg.n_rx, nt = d_cfg.n_tx;
    // In pieces with a cancel check between them: the scan of a batch of millions of
    // vectors takes a large part of a second, longer than a cancelled call may take.
    const auto finite = [this](const cf* v, size_t n) {
        constexpr size_t piece = size_t(1) << 20;
        for (size_t i = 0; i < n; i += piece) {
            if (d_cancel->check())
                d_cancel->raise();
            if (!core::all_finite(v + i, std::min(piece, n - i)))
                return false;
        }
        return true;
    };
    if (!finite(H, n_mat * nr * nt))
        throw std::invalid_argument("mimodet: H contains NaN or Inf");
    if (!finite(y, n_vec * nr))
        throw std::invalid_argument("mimodet: y contains NaN or Inf");
    for (size_t m = 0; m < n_mat; ++m)
        if (!std::isfinite(noise_var[m]) || !(noise_var[m] > 0.0f))
            throw std::invalid_argument(
                "mimodet: noise_var must be finite and > 0 (got " +
                std::to_string(noise_var[m]) + " for matrix " + std::to_string(m) + ")");
    return used;
}

void detector::run_checked(const cf* H,
                           const cf* y,
                           const std::vector<batch_segment>& segments,
                           const float* noise_var,
                           uint8_t* bits,
                           float* llr,
                           vector_stats* stats,
                           bool llr_call,
                           bool inputs_checked)
{
    if (llr_call && !soft())
        throw std::logic_error("mimodet: detector '" + d_cfg.algorithm +
                               "' gives hard bits only; use detect_bits (soft "
                               "detectors: " +
                               core::soft_algorithm_names() + ")");
    // A request made between calls is this call's.
    d_cancel->begin_call();
    const std::vector<batch_segment> used =
        validate_inputs(H, y, segments, noise_var, inputs_checked);
    if (used.empty())
        return;
    if (llr_call ? !llr : !bits)
        throw std::invalid_argument("mimodet: null output buffer");
    if (d_cancel->requested())
        d_cancel->raise();
    // A segment with matrices but no vectors still occupies H and noise_var: the
    // backends see only the non-empty segments, so drop its matrices from copies.
    std::vector<cf> H_used;
    std::vector<float> nv_used;
    bool compact = false;
    for (const auto& g : segments)
        compact |= g.n_mat > 0 && g.n_sym == 0;
    if (compact) {
        const size_t hm = static_cast<size_t>(d_cfg.n_rx) * d_cfg.n_tx;
        size_t m0 = 0;
        for (const auto& g : segments) {
            if (g.n_sym > 0) {
                H_used.insert(H_used.end(), H + m0 * hm, H + (m0 + g.n_mat) * hm);
                nv_used.insert(nv_used.end(), noise_var + m0, noise_var + m0 + g.n_mat);
            }
            m0 += g.n_mat;
        }
        H = H_used.data();
        noise_var = nv_used.data();
    }
    run(H, y, used.data(), used.size(), noise_var, bits, llr, stats);
    // The backends return early, their workers joined, once they see a request.
    if (d_cancel->requested())
        d_cancel->raise();
    if (stats) // the same rule for every backend, on the host
        core::flag_vectors(H,
                           d_cfg.n_rx,
                           d_cfg.n_tx,
                           used.data(),
                           used.size(),
                           llr,
                           bits_per_vector(),
                           stats);
    if (llr && !d_cfg.llr_scaled) {
        // One place for every algorithm and backend: undo the 1/noise_var scaling.
        const size_t nb = static_cast<size_t>(bits_per_vector());
        size_t m0 = 0;
        float* l = llr;
        for (const auto& g : used)
            for (size_t m = 0; m < g.n_mat; ++m) {
                const float nv = noise_var[m0++];
                for (size_t i = 0; i < g.n_sym * nb; ++i, ++l)
                    *l = core::saturate_llr(double(*l) * nv);
            }
    }
}

void detector::detect_bits(const cf* H,
                           const cf* y,
                           size_t n_mat,
                           size_t n_sym,
                           const float* noise_var,
                           uint8_t* bits,
                           vector_stats* stats)
{
    run_checked(H, y, { batch_segment{ n_mat, n_sym } }, noise_var, bits, nullptr, stats, false);
}

void detector::detect_llr(const cf* H,
                          const cf* y,
                          size_t n_mat,
                          size_t n_sym,
                          const float* noise_var,
                          float* llr,
                          vector_stats* stats)
{
    run_checked(H, y, { batch_segment{ n_mat, n_sym } }, noise_var, nullptr, llr, stats, true);
}

void detector::detect_bits(const cf* H,
                           const cf* y,
                           const std::vector<batch_segment>& segments,
                           const float* noise_var,
                           uint8_t* bits,
                           vector_stats* stats)
{
    run_checked(H, y, segments, noise_var, bits, nullptr, stats, false);
}

void detector::detect_llr(const cf* H,
                          const cf* y,
                          const std::vector<batch_segment>& segments,
                          const float* noise_var,
                          float* llr,
                          vector_stats* stats)
{
    run_checked(H, y, segments, noise_var, nullptr, llr, stats, true);
}

} // namespace mimodet
} // namespace gr
