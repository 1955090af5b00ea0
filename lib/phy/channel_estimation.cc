/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "phy/channel_estimation.h"
#include "phy/channel_model.h"
#include "phy/pilot_ratio.h"
#include "util/tuning.h"
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

namespace {
namespace model = channel_model;
constexpr double kPi = model::k_pi;
constexpr double kSubcarrierHz = model::k_subcarrier_hz;
constexpr double kSnrStepDb = model::k_snr_step_db;
constexpr int kWindow = 32;        // pilots per Wiener window
constexpr size_t kMaxFilters = 128; // cache bound (weights: n_sc * kWindow floats each)
constexpr size_t kParallelPilotValues = 3000; // pilots x n_rx of a slot from which the
                                             // per-port phase runs on the threads
constexpr int kNumLags = model::k_lags;
static_assert(kNumLags == channel_estimation::k_lags, "the GPU version sizes its sums by k_lags");

double pos(int k, int n_sc) { return channel_estimation::subcarrier_position(k, n_sc); }

// Frequency correlation of a two-sided exponential PDP exp(-|tau| / b).
double corr(double dk, double b)
{

    const double x = 2.0 * kPi * dk * kSubcarrierHz * b;
    return 1.0 / (1.0 + x * x);
}
} // namespace

channel_estimation::channel_estimation(const lte_numerology& num,
                                       int n_tx,
                                       int n_rx,
                                       int cell_id,
                                       double max_delay_us,
                                       int threads,
                                       double pilot_ratio_db)
    : d_grid(num, n_tx, cell_id),
      d_n_tx(n_tx),
      d_n_rx(n_rx),
      d_max_delay_s(max_delay_us * 1e-6),
      d_pilot_ratio_db(
          pilot_ratio::checked_db(pilot_ratio_db, "mimodet: channel estimation", true)),
      d_estimate_ratio(pilot_ratio::is_estimate(pilot_ratio_db)),
      d_known_h_scale(
          d_estimate_ratio ? 1.0f
                           : static_cast<float>(1.0 / pilot_ratio::amplitude(pilot_ratio_db))),
      d_last_ratio_db(pilot_ratio_db), // estimated: NaN until the first slot
      d_pool(threads >= 1 && threads <= 256
                 ? threads
                 : throw std::invalid_argument("mimodet: channel estimation threads must be "
                                               "1..256, got " +
                                               std::to_string(threads)))
{
    if (!(max_delay_us > 0.0 && max_delay_us <= 100.0))
        throw std::invalid_argument("mimodet: max_delay_us must be in (0, 100], got " +
                                    std::to_string(max_delay_us));
    if (n_rx < 1 || n_rx > 8)
        throw std::invalid_argument("mimodet: receive antennas must be 1..8, got " +
                                    std::to_string(n_rx));
    const int n_sc = num.n_sc;
    const int S = lte_numerology::slots_per_frame;
    d_ports.resize(static_cast<size_t>(S) * n_tx);
    for (int ns = 0; ns < S; ++ns)
        for (int t = 0; t < n_tx; ++t) {
            std::map<int, std::vector<int>> by_k;
            for (int re : d_grid.crs_elements(ns, t))
                by_k[re % n_sc].push_back(re);
            auto& p = d_ports[ns * n_tx + t];
            for (const auto& kv : by_k) {
                p.k.push_back(kv.first);
                p.re.push_back(kv.second);
                std::vector<cf> inv;
                for (int re : kv.second)
                    inv.push_back(cf(1.0f, 0.0f) /
                                  d_grid.crs_value(ns, t, re / n_sc, re % n_sc));
                p.inv_x.push_back(inv);
            }
            if (p.k.empty())
                throw std::logic_error("mimodet: port without CRS in slot " +
                                       std::to_string(ns));
        }
    d_noise_ports = std::min(n_tx, 2);
    // Distinct pilot patterns (same subcarriers and pilot counts share Wiener weights).
    for (auto& p : d_ports) {
        p.pattern = -1;
        for (size_t q = 0; q < d_patterns.size() && p.pattern < 0; ++q) {
            const auto& o = *d_patterns[q];
            if (o.k != p.k)
                continue;
            bool same = true;
            for (size_t i = 0; i < p.k.size() && same; ++i)
                same = o.re[i].size() == p.re[i].size();
            if (same)
                p.pattern = static_cast<int>(q);
        }
        if (p.pattern < 0) {
            p.pattern = static_cast<int>(d_patterns.size());
            d_patterns.push_back(&p);
        }
    }
    // Flattened CRS lists and the index pairs of the per-slot statistics, so that
    // estimate() does no searching and no allocation.
    for (auto& p : d_ports) {
        p.off.push_back(0);
        for (size_t i = 0; i < p.k.size(); ++i) {
            for (size_t e = 0; e < p.re[i].size(); ++e) {
                p.re_flat.push_back(p.re[i][e]);
                p.inv_flat.push_back(p.inv_x[i][e]);
            }
            p.off.push_back(static_cast<int>(p.re_flat.size()));
            p.n_flat.push_back(static_cast<float>(p.re[i].size()));
        }
        const auto& k = p.k;
        for (size_t i = 0; i + 1 < k.size(); ++i)
            if (k[i + 1] - k[i] == (k.size() > 1 ? k[1] - k[0] : 0) &&
                pos(k[i + 1], n_sc) - pos(k[i], n_sc) == k[i + 1] - k[i])
                p.delay_pairs.push_back(static_cast<int>(i));
        p.lag_pairs.resize(kNumLags);
        for (int li = 0; li < kNumLags; ++li) {
            const int L = model::lag(li);
            size_t j = 0;
            for (size_t i = 0; i < k.size(); ++i) {
                while (j < k.size() && k[j] < k[i] + L)
                    ++j;
                if (j == k.size())
                    break;
                if (k[j] == k[i] + L)
                    p.lag_pairs[li].emplace_back(static_cast<int>(i), static_cast<int>(j));
            }
        }
        d_max_pilots = std::max(d_max_pilots, k.size());
    }
    for (int ns = 0; ns < S; ++ns) {
        size_t n = 0;
        for (int t = 0; t < n_tx; ++t)
            n += d_ports[ns * n_tx + t].k.size() * n_rx;
        d_pilot_values.push_back(n);
    }
    const size_t pairs = static_cast<size_t>(n_tx) * n_rx;
    d_ls.resize(pairs * d_max_pilots);
    d_pstride = 4 * ((2 * n_rx + 3) / 4);
    d_lst.assign(static_cast<size_t>(n_tx) * d_max_pilots * d_pstride, 0.0f);
    d_rot.resize(static_cast<size_t>(n_tx) * d_max_pilots);
    d_pair_power.resize(pairs);
    d_pair_delay.resize(pairs);
    d_port_pw.resize(n_tx);
    d_port_lag.resize(static_cast<size_t>(n_tx) * kNumLags);
    d_dsum.resize(pairs * 2);
    d_dcount.resize(pairs * 2);
    d_timeline = call_timeline::make(
        "estimate", { "t0_ns", "ls_ns", "stats_ns", "filter_ns", "wiener_ns" });
}

channel_estimation::~channel_estimation() = default;

channel_estimation::pool::pool(int threads) : d_size(threads)
{
    for (int i = 1; i < threads; ++i)
        d_threads.emplace_back([this, i] { worker(i); });
}

channel_estimation::pool::~pool()
{
    {
        std::lock_guard<std::mutex> lk(d_mutex);
        d_stop = true;
        ++d_gen;
    }
    d_cv.notify_all();
    for (auto& t : d_threads)
        t.join();
}

void channel_estimation::pool::run(int n, const std::function<void(int)>& f)
{
    if (d_threads.empty() || n <= 1) {
        for (int i = 0; i < n; ++i)
            f(i);
        return;
    }
    {
        std::lock_guard<std::mutex> lk(d_mutex);
        // A worker that joined the previous job too late to claim a task may still be
        // reading it; workers join only under this mutex, so this wait is short and final.
        while (d_in_flight.load() != 0)
            std::this_thread::yield();
        d_job = &f;
        d_n = n;
        d_next.store(0);
        d_done.store(0);
        ++d_gen;
    }
    d_cv.notify_all();
    // The caller works too: the job finishes even if no worker wakes up in time.
    int mine = 0;
    for (int i; (i = d_next.fetch_add(1)) < n; ++mine)
        f(i);
    d_done.fetch_add(mine);
    // Every task is claimed; wait for those still running on workers (not for workers
    // that join late and find nothing: the next run() waits for those).
    while (d_done.load() < n)
        std::this_thread::yield();
}

void channel_estimation::pool::worker(int id)
{
    uint64_t seen = 0;
    for (;;) {
        const std::function<void(int)>* job;
        int n;
        {
            std::unique_lock<std::mutex> lk(d_mutex);
            d_cv.wait(lk, [&] { return d_gen.load() != seen; });
            if (d_stop)
                return;
            seen = d_gen.load();
            // A job of n tasks needs at most n - 1 workers besides the caller; the others
            // stay out (joining costs a turn at the mutex).
            if (id >= d_n)
                continue;
            ++d_in_flight;
            job = d_job;
            n = d_n;
        }
        int done = 0;
        for (int i; (i = d_next.fetch_add(1)) < n; ++done)
            (*job)(i);
        d_done.fetch_add(done);
        --d_in_flight;
    }
}

std::shared_ptr<const channel_estimation::wiener_filter>
channel_estimation::filter(int pattern, int b_idx, int snr_idx) const
{
    const auto key = std::make_tuple(pattern, b_idx, snr_idx);
    auto it = d_filters.find(key);
    if (it != d_filters.end())
        return it->second;
    const port_pilots& p = *d_patterns[pattern];
    const int P = static_cast<int>(p.k.size());
    const int M = std::min(kWindow, P);
    const int n_sc = this->n_sc();
    const double b = model::b_of_idx(b_idx);
    const double inv_snr = std::pow(10.0, -kSnrStepDb * snr_idx / 10.0);
    auto f = std::make_shared<wiener_filter>();
    f->M = M;
    f->start.resize(n_sc);
    f->w.resize(static_cast<size_t>(n_sc) * M);
    // The window covariance R depends only on the window's pilot offsets (relative to its
    // first pilot, the DC gap counted) and pilot counts; on the regular pilot grid most
    // windows share one R. Factorise each distinct R once: the same numbers as a
    // factorisation per subcarrier, since corr() sees the same (integer) offsets.
    std::map<std::vector<int>, int> distinct; // offsets and counts -> factor index
    std::vector<int> factor_of_start(P, -1), first_start;
    for (int k = 0; k < n_sc; ++k) {
        const int c = static_cast<int>(std::lower_bound(p.k.begin(), p.k.end(), k) - p.k.begin());
        const int s = std::max(0, std::min(c - M / 2, P - M));
        f->start[k] = s;
        if (factor_of_start[s] >= 0)
            continue;
        std::vector<int> sig(2 * M);
        for (int i = 0; i < M; ++i) {
            sig[i] = static_cast<int>(pos(p.k[s + i], n_sc) - pos(p.k[s], n_sc));
            sig[M + i] = static_cast<int>(p.re[s + i].size());
        }
        const auto ins = distinct.emplace(std::move(sig), static_cast<int>(first_start.size()));
        if (ins.second)
            first_start.push_back(s);
        factor_of_start[s] = ins.first->second;
    }
    const size_t MM = static_cast<size_t>(M) * M;
    std::vector<double> Ls(first_start.size() * MM);
    d_pool.run(static_cast<int>(first_start.size()), [&](int fi) {
        const int s = first_start[fi];
        std::vector<double> R(MM);
        double* L = &Ls[fi * MM];
        for (int i = 0; i < M; ++i) {
            for (int j = 0; j < M; ++j)
                R[i * M + j] = corr(pos(p.k[s + i], n_sc) - pos(p.k[s + j], n_sc), b);
            R[i * M + i] += inv_snr / static_cast<double>(p.re[s + i].size());
        }
        // Cholesky R = L L^T.
        for (int i = 0; i < M; ++i)
            for (int j = 0; j <= i; ++j) {
                double v = R[i * M + j];
                for (int q = 0; q < j; ++q)
                    v -= L[i * M + q] * L[j * M + q];
                if (i == j)
                    L[i * M + i] = std::sqrt(std::max(v, 1e-12));
                else
                    L[i * M + j] = v / L[j * M + j];
            }
    });
    // Per subcarrier: L y = rhs, L^T w = y. Subcarriers at the same offset from windows
    // with the same R have the same rhs, hence the same weights: solve one of each
    // (in parallel) and copy the rest.
    std::map<std::pair<int, int>, int> solved; // (factor, offset of k) -> representative
    std::vector<int> rep_of(n_sc), reps;
    for (int k = 0; k < n_sc; ++k) {
        const int s = f->start[k];
        const auto key2 = std::make_pair(factor_of_start[s],
                                         static_cast<int>(pos(k, n_sc) - pos(p.k[s], n_sc)));
        const auto ins = solved.emplace(key2, k);
        if (ins.second)
            reps.push_back(k);
        rep_of[k] = ins.first->second;
    }
    const int block = 8;
    const int n_reps = static_cast<int>(reps.size());
    d_pool.run((n_reps + block - 1) / block, [&](int bi) {
        std::vector<double> rhs(M), y(M);
        for (int ri = bi * block; ri < std::min(n_reps, (bi + 1) * block); ++ri) {
            const int k = reps[ri];
            const int s = f->start[k];
            const double* L = &Ls[factor_of_start[s] * MM];
            float* w = &f->w[static_cast<size_t>(k) * M];
            for (int i = 0; i < M; ++i)
                rhs[i] = corr(pos(k, n_sc) - pos(p.k[s + i], n_sc), b);
            for (int i = 0; i < M; ++i) {
                double v = rhs[i];
                for (int q = 0; q < i; ++q)
                    v -= L[i * M + q] * y[q];
                y[i] = v / L[i * M + i];
            }
            // The back substitution uses the already rounded (float) weights, as the
            // original per-subcarrier code did.
            for (int i = M - 1; i >= 0; --i) {
                double v = y[i];
                for (int q = i + 1; q < M; ++q)
                    v -= L[q * M + i] * w[q];
                w[i] = static_cast<float>(v / L[i * M + i]);
            }
        }
    });
    for (int k = 0; k < n_sc; ++k)
        if (rep_of[k] != k)
            std::memcpy(&f->w[static_cast<size_t>(k) * M],
                        &f->w[static_cast<size_t>(rep_of[k]) * M],
                        M * sizeof(float));
    if (d_filters.size() >= kMaxFilters)
        d_filters.clear(); // callers hold shared pointers, which stay valid
    return d_filters.emplace(key, std::move(f)).first->second;
}

void channel_estimation::interpolate(
    const std::vector<int>& pk, const cf* values, int n_sc, cf* out, size_t stride)
{
    const size_t P = pk.size();
    if (P == 0)
        return;
    for (int k = 0; k <= pk[0] && k < n_sc; ++k)
        out[k * stride] = values[0];
    for (size_t i = 0; i + 1 < P; ++i) {
        const int k0 = pk[i], k1 = pk[i + 1];
        const cf h0 = values[i], h1 = values[i + 1];
        const float inv = 1.0f / static_cast<float>(k1 - k0);
        for (int k = k0 + 1; k <= k1; ++k) {
            const float w = static_cast<float>(k - k0) * inv;
            out[k * stride] = (1.0f - w) * h0 + w * h1;
        }
    }
    for (int k = pk[P - 1] + 1; k < n_sc; ++k)
        out[k * stride] = values[P - 1];
}

void channel_estimation::difference_energy(
    const cf* h, size_t n, int order, double& sum, size_t& count)
{
    static const double coef[4][4] = {
        { 1, 0, 0, 0 }, { 1, -1, 0, 0 }, { 1, -2, 1, 0 }, { 1, -3, 3, -1 }
    };
    static const double gain[4] = { 1, 2, 6, 20 };
    if (order < 1 || order > 3)
        throw std::invalid_argument("mimodet: difference order must be 1..3");
    sum = 0.0;
    count = 0;
    if (n < static_cast<size_t>(order) + 1)
        return;
    for (size_t i = 0; i + order < n; ++i) {
        std::complex<double> e = 0.0;
        for (int j = 0; j <= order; ++j)
            e += coef[order][j] * std::complex<double>(h[i + j]);
        sum += std::norm(e) / gain[order];
        ++count;
    }
}

namespace {
// Four and eight floats, for the Wiener filtering below (GCC/Clang vector extension:
// element-wise IEEE arithmetic; SSE on x86-64 without extra flags, AVX where the CPU has
// it). The unaligned variants load from any float address.
typedef float v4 __attribute__((vector_size(16)));
typedef float v4u __attribute__((vector_size(16), aligned(4)));
#if defined(__x86_64__) && defined(__GNUC__)
#define MIMODET_WIENER_AVX 1
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));
#endif

//! One port's Wiener weights: per subcarrier the window start and M weights.
struct wiener_port {
    int M;
    const int* start;
    const float* w;
};

//! What the Wiener step reads besides the weights.
struct wiener_input {
    const wiener_port* ports; //!< [n_tx]
    int n_tx;
    const float* lst;         //!< derotated LS, [t][pilot][pstride]
    size_t port_floats;       //!< floats per port in lst
    int n_sc;
    double theta;             //!< mean-delay phase slope
    float scale;              //!< h_scale(): the pilots' channel to the data's
};

// Wiener filtering of subcarriers k0..k1-1 of every port, for NR receive antennas, with
// vectors V of W floats: per subcarrier all antennas at once (the weights are the same
// for all of them); a pilot's antennas are W * NV floats (antenna r's re, im at 2r,
// 2r + 1), KB subcarriers advance together. Each (subcarrier, antenna) sum runs over j in
// the serial code's order (no reassociation, no fused multiply-add: lanes are independent
// sums), so the result is that of one std::complex accumulation per antenna, whatever W;
// the KB * NV independent vectors hide the latency of an addition.
template <int NR, typename V, typename VU>
inline __attribute__((always_inline)) void
wiener_range(const wiener_input& in, int k0, int k1, std::complex<float>* H)
{
    constexpr int W = sizeof(V) / sizeof(float);
    constexpr int NV = (2 * NR + W - 1) / W;
    constexpr int KB = NV >= 4 ? 1 : NV >= 2 ? 2 : 4;
    const int n_tx = in.n_tx;
    std::complex<float> rot[KB];
    for (int k = k0; k < k1; k += KB) {
        const int nk = std::min(KB, k1 - k);
        for (int b = 0; b < nk; ++b)
            rot[b] =
                std::polar(in.scale, static_cast<float>(in.theta * pos(k + b, in.n_sc)));
        for (int t = 0; t < n_tx; ++t) {
            const wiener_port& f = in.ports[t];
            const int M = f.M;
            const float* base = in.lst + static_cast<size_t>(t) * in.port_floats;
            const float* w[KB];
            const float* g[KB];
            for (int b = 0; b < KB; ++b) {
                const int kb = k + std::min(b, nk - 1); // the tail repeats its last subcarrier
                w[b] = f.w + static_cast<size_t>(kb) * M;
                g[b] = base + static_cast<size_t>(f.start[kb]) * W * NV;
            }
            V a[KB][NV];
            for (int b = 0; b < KB; ++b)
                for (int v = 0; v < NV; ++v)
                    a[b][v] = V{};
            for (int j = 0; j < M; ++j)
                for (int b = 0; b < KB; ++b) {
                    const float wj = w[b][j];
                    const float* gj = g[b] + j * W * NV;
                    for (int v = 0; v < NV; ++v)
                        a[b][v] += wj * *reinterpret_cast<const VU*>(gj + W * v);
                }
            for (int b = 0; b < nk; ++b) {
                float o[W * NV];
                std::memcpy(o, a[b], sizeof(o));
                for (int r = 0; r < NR; ++r)
                    H[(static_cast<size_t>(k + b) * NR + r) * n_tx + t] =
                        std::complex<float>(o[2 * r], o[2 * r + 1]) * rot[b];
            }
        }
    }
}

template <int NR>
void wiener_sse(const wiener_input& in, int k0, int k1, std::complex<float>* H)
{
    wiener_range<NR, v4, v4u>(in, k0, k1, H);
}

#ifdef MIMODET_WIENER_AVX
// The same operations on eight lanes (AVX without FMA: bit-identical to wiener_sse).
// Used where a pilot's antennas fill whole 8-float vectors (n_rx 3, 4, 7, 8).
template <int NR>
__attribute__((target("avx"))) void
wiener_avx(const wiener_input& in, int k0, int k1, std::complex<float>* H)
{
    wiener_range<NR, v8, v8u>(in, k0, k1, H);
}

// MIMODET_NO_AVX (any value) keeps the SSE code: the tests compare both.
bool cpu_has_avx()
{
    static const bool has = __builtin_cpu_supports("avx") && !tuning::no_avx();
    return has;
}
#endif

void wiener_dispatch(int n_rx, const wiener_input& in, int k0, int k1, std::complex<float>* H)
{
#ifdef MIMODET_WIENER_AVX
    if (cpu_has_avx())
        switch (n_rx) {
        case 3: return wiener_avx<3>(in, k0, k1, H);
        case 4: return wiener_avx<4>(in, k0, k1, H);
        case 7: return wiener_avx<7>(in, k0, k1, H);
        case 8: return wiener_avx<8>(in, k0, k1, H);
        default: break;
        }
#endif
    switch (n_rx) {
    case 1: return wiener_sse<1>(in, k0, k1, H);
    case 2: return wiener_sse<2>(in, k0, k1, H);
    case 3: return wiener_sse<3>(in, k0, k1, H);
    case 4: return wiener_sse<4>(in, k0, k1, H);
    case 5: return wiener_sse<5>(in, k0, k1, H);
    case 6: return wiener_sse<6>(in, k0, k1, H);
    case 7: return wiener_sse<7>(in, k0, k1, H);
    default: return wiener_sse<8>(in, k0, k1, H);
    }
}
} // namespace

float channel_estimation::h_scale(int ns, const cf* const* grids, double nv) const
{
    if (!d_estimate_ratio)
        return d_known_h_scale;
    if (!grids)
        throw std::logic_error("mimodet: an estimated pilot ratio needs the grids");
    // Received power per port's CRS elements (only that port sends there) and over the
    // data elements, each less the noise, summed over the antennas (and ports).
    const auto& data = d_grid.data_elements(ns);
    double pilots = 0.0, payload = 0.0;
    for (int r = 0; r < d_n_rx; ++r) {
        const cf* y = grids[r];
        for (int t = 0; t < d_n_tx; ++t) {
            const auto& crs = d_grid.crs_elements(ns, t);
            double s = 0.0;
            for (int e : crs)
                s += std::norm(y[e]);
            pilots += s / static_cast<double>(crs.size()) - nv;
        }
        double s = 0.0;
        for (int e : data)
            s += std::norm(y[e]);
        payload += s / static_cast<double>(data.size()) - nv;
    }
    // Clamped to the range a known ratio may take; a slot with no power above the noise
    // on one side gets that side's bound, one with none on either side (or non-finite
    // data) 0 dB.
    double ratio_db = 0.0;
    if (pilots > 0.0 && payload > 0.0)
        ratio_db = std::min(
            pilot_ratio::k_max_db,
            std::max(pilot_ratio::k_min_db, 10.0 * std::log10(pilots / payload)));
    else if (payload > 0.0)
        ratio_db = pilot_ratio::k_min_db;
    else if (pilots > 0.0)
        ratio_db = pilot_ratio::k_max_db;
    d_last_ratio_db.store(ratio_db);
    return static_cast<float>(1.0 / pilot_ratio::amplitude(ratio_db));
}

float channel_estimation::estimate(int ns, const cf* const* grids, cf* H) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        throw std::invalid_argument("mimodet: slot index must be 0..19, got " +
                                    std::to_string(ns));
    const int n_sc = this->n_sc();
    const size_t stride = static_cast<size_t>(d_n_rx) * d_n_tx;
    const int n_pairs = d_n_tx * d_n_rx;
    const size_t Pm = d_max_pilots;
    const port_pilots* ports = &d_ports[static_cast<size_t>(ns) * d_n_tx];
    const int64_t t_start = d_timeline ? call_timeline::now_ns() : 0;
    double sum[4] = { 0, 0, 0, 0 }, power = 0.0;
    size_t count[4] = { 0, 0, 0, 0 }, n_power = 0;
    // 1. LS at the pilots, d_ls[(t * n_rx + r) * Pm + i], one (t, r) pair per task, and
    // the pair's shares of the noise estimate's sums (difference energies, pilot power,
    // the adjacent-pilot correlation of the mean delay; ports 0/1 only).
    d_pool.run(n_pairs, [&](int pair) {
        const int t = pair / d_n_rx, r = pair % d_n_rx;
        const port_pilots& p = ports[t];
        cf* v = &d_ls[pair * Pm];
        const cf* y = grids[r];
        const size_t P = p.k.size();
        for (size_t i = 0; i < P; ++i) {
            cf acc(0.0f, 0.0f);
            for (int e = p.off[i]; e < p.off[i + 1]; ++e)
                acc += y[p.re_flat[e]] * p.inv_flat[e];
            v[i] = acc / p.n_flat[i];
        }
        if (t >= d_noise_ports)
            return;
        for (int d = 2; d <= 3; ++d)
            difference_energy(v, P, d, d_dsum[pair * 2 + d - 2], d_dcount[pair * 2 + d - 2]);
        double pp = 0.0;
        for (size_t i = 0; i < P; ++i)
            pp += std::norm(v[i]);
        d_pair_power[pair] = pp;
        std::complex<double> c = 0.0;
        for (int i : p.delay_pairs)
            c += std::conj(std::complex<double>(v[i])) * std::complex<double>(v[i + 1]);
        d_pair_delay[pair] = c;
    });
    const int64_t t_ls = d_timeline ? call_timeline::now_ns() : 0;
    // The pairs' shares combined in the order (t, r): every partial sum has a fixed
    // extent, so no thread count changes a result.
    std::complex<double> s1 = 0.0;
    for (int t = 0; t < d_noise_ports; ++t)
        for (int r = 0; r < d_n_rx; ++r) {
            const int pair = t * d_n_rx + r;
            for (int d = 2; d <= 3; ++d) {
                sum[d] += d_dsum[pair * 2 + d - 2];
                count[d] += d_dcount[pair * 2 + d - 2];
            }
            power += d_pair_power[pair];
            n_power += ports[t].k.size();
            s1 += d_pair_delay[pair];
        }
    const double nv = model::noise_variance(sum, count, power, n_power);
    const bool ok = !std::isnan(nv);
    if (!ok) {
        // Unusable slot: plain interpolation (propagates NaN / zeros), NaN noise.
        for (int t = 0; t < d_n_tx; ++t)
            for (int r = 0; r < d_n_rx; ++r)
                interpolate(ports[t].k,
                            &d_ls[(t * d_n_rx + r) * Pm],
                            n_sc,
                            H + r * d_n_tx + t,
                            stride);
        return std::numeric_limits<float>::quiet_NaN();
    }

    // 2. Mean delay: phase slope of the adjacent-pilot correlation (ports 0/1).
    const int d0 = ports[0].k.size() > 1 ? ports[0].k[1] - ports[0].k[0] : 1;
    const double theta = std::abs(s1) > 0.0 ? std::arg(s1) / d0 : 0.0;
    // 3. One task per port: the pilots derotated by the mean-delay phase (and stored
    // for the Wiener step, a pilot's antennas together), their power, and the spread
    // fit's correlation sums at every lag. The lags advance together, each lag's sum in
    // the order (r, pair), so their chains of dependent double additions overlap.
    const auto port_task = [&](int t) {
        const auto& k = ports[t].k;
        cf* rot = &d_rot[t * Pm];
        for (size_t i = 0; i < k.size(); ++i)
            rot[i] = std::polar(1.0f, static_cast<float>(theta * pos(k[i], n_sc)));
        double pw_t = 0.0;
        for (int r = 0; r < d_n_rx; ++r) {
            cf* v = &d_ls[(t * d_n_rx + r) * Pm];
            float* vt = &d_lst[t * Pm * d_pstride + 2 * r];
            for (size_t i = 0; i < k.size(); ++i) {
                v[i] *= std::conj(rot[i]);
                pw_t += std::norm(v[i]);
                vt[i * d_pstride] = v[i].real();
                vt[i * d_pstride + 1] = v[i].imag();
            }
        }
        d_port_pw[t] = pw_t;
        // The lag sums: pair j of a lag goes to partial sum j % 4 (four independent
        // chains of double additions), antenna after antenna; a fixed split, so the
        // result does not depend on the threads.
        double sum_lag[kNumLags];
        for (int li = 0; li < kNumLags; ++li) {
            const std::pair<int, int>* lp = ports[t].lag_pairs[li].data();
            const size_t n = ports[t].lag_pairs[li].size();
            double part[4] = { 0.0, 0.0, 0.0, 0.0 };
            for (int r = 0; r < d_n_rx; ++r) {
                const cf* v = &d_ls[(t * d_n_rx + r) * Pm];
                // Re(conj(x) y) in double, as x.re y.re + x.im y.im: the same value.
                const auto re_xy = [&](size_t j) {
                    const cf x = v[lp[j].first], y = v[lp[j].second];
                    return static_cast<double>(x.real()) * static_cast<double>(y.real()) +
                           static_cast<double>(x.imag()) * static_cast<double>(y.imag());
                };
                size_t j = 0;
                for (; j + 4 <= n; j += 4) {
                    part[0] += re_xy(j);
                    part[1] += re_xy(j + 1);
                    part[2] += re_xy(j + 2);
                    part[3] += re_xy(j + 3);
                }
                for (; j < n; ++j)
                    part[j & 3] += re_xy(j);
            }
            sum_lag[li] = (part[0] + part[1]) + (part[2] + part[3]);
        }
        for (int li = 0; li < kNumLags; ++li)
            d_port_lag[t * kNumLags + li] = sum_lag[li];
    };
    // A small phase (2x2 at 20 MHz: 1600 pilot values) is done sooner by the caller
    // alone than by waking the workers for it (development machine, 2 threads).
    if (d_pilot_values[ns] >= kParallelPilotValues)
        d_pool.run(d_n_tx, port_task);
    else
        for (int t = 0; t < d_n_tx; ++t)
            port_task(t);
    double pw = 0.0;
    size_t n_pw = 0;
    double sum_lag[kNumLags] = {};
    size_t count_lag[kNumLags] = {};
    for (int t = 0; t < d_n_tx; ++t) {
        pw += d_port_pw[t];
        n_pw += ports[t].k.size() * d_n_rx;
        for (int li = 0; li < kNumLags; ++li) {
            sum_lag[li] += d_port_lag[t * kNumLags + li];
            count_lag[li] += ports[t].lag_pairs[li].size() * d_n_rx;
        }
    }
    int b_idx = 0, snr_idx = 0;
    model::grid_cell(pw, n_pw, sum_lag, count_lag, nv, d_max_delay_s / 4.0, b_idx, snr_idx);

    // 4. Wiener smoothing / interpolation, then the mean-delay phase back; blocks of
    // subcarriers in parallel, all pairs of a subcarrier together (contiguous in H).
    const int64_t t_stats = d_timeline ? call_timeline::now_ns() : 0;
    std::shared_ptr<const wiener_filter> keep[4];
    const wiener_filter* filt[4];
    for (int t = 0; t < d_n_tx; ++t) {
        keep[t] = filter(ports[t].pattern, b_idx, snr_idx);
        filt[t] = keep[t].get();
    }
    const int64_t t_filter = d_timeline ? call_timeline::now_ns() : 0;
    wiener_port wp[4];
    for (int t = 0; t < d_n_tx; ++t)
        wp[t] = { filt[t]->M, filt[t]->start.data(), filt[t]->w.data() };
    const wiener_input in{
        wp, d_n_tx, d_lst.data(), Pm * d_pstride, n_sc, theta, h_scale(ns, grids, nv)
    };
    const int chunk = std::max(16, (n_sc + 4 * d_pool.size() - 1) / (4 * d_pool.size()));
    const int n_chunks = (n_sc + chunk - 1) / chunk;
    d_pool.run(n_chunks, [&](int ci) {
        const int k0 = ci * chunk, k1 = std::min(n_sc, k0 + chunk);
        wiener_dispatch(d_n_rx, in, k0, k1, H);
    });
    if (d_timeline)
        d_timeline->add({ double(t_start),
                          double(t_ls - t_start),
                          double(t_stats - t_ls),
                          double(t_filter - t_stats),
                          double(call_timeline::now_ns() - t_filter) });
    return static_cast<float>(nv);
}

} // namespace core
} // namespace mimodet
} // namespace gr
