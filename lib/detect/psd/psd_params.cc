/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detect/psd/psd_params.h"
#include "detect/psd/psd_se.h"
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gr {
namespace mimodet {
namespace core {

namespace {

[[noreturn]] void reject(const psd_params& p, int n_tx, int omega, const std::string& why)
{
    // Valid sets for this system, so that the message shows what to write.
    std::string examples;
    if (n_tx >= 1 && n_tx <= 8 && omega >= 2) {
        const psd_params df = psd_cpu_tuned(n_tx), t5 = psd_preset(n_tx, omega);
        examples = "; valid for this system are e.g. lvl=" + psd_to_string(df.lvl) +
                   " exp=" + psd_to_string(df.exp) + " (the depth-first default) or lvl=" +
                   psd_to_string(t5.lvl) + " exp=" + psd_to_string(t5.exp) +
                   " (the PSD paper's Table 5 set), or leave both empty";
    }
    throw std::invalid_argument("mimodet: psd parameters lvl=" + psd_to_string(p.lvl) +
                                " exp=" + psd_to_string(p.exp) + " for n_tx=" +
                                std::to_string(n_tx) + ", |Omega|=" +
                                std::to_string(omega) + ": " + why + examples);
}

// omega^e, saturated at psd_max_eval + 1 so callers can compare without overflow.
int64_t bounded_pow(int omega, int e)
{
    int64_t r = 1;
    for (int i = 0; i < e; ++i) {
        r *= omega;
        if (r > psd_max_eval)
            return psd_max_eval + 1;
    }
    return r;
}

} // namespace

std::string psd_to_string(const std::vector<int>& v)
{
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "}";
}

int64_t psd_deadline_ns(double deadline_us)
{
    if (!std::isfinite(deadline_us) || deadline_us < 0.0 || deadline_us > psd_max_deadline_us)
        throw std::invalid_argument(
            "mimodet: psd_deadline_us must be finite and between 0 (no deadline) and " +
            std::to_string(psd_max_deadline_us) + " microseconds, got " +
            std::to_string(deadline_us));
    return static_cast<int64_t>(std::ceil(deadline_us * 1e3));
}

uint32_t psd_default_node_budget(int n_tx, int omega)
{
    // Measured with apps/mimodet_psd_tail, 10^6 Rayleigh vectors per point
    // (docs/RELIABILITY.md). 4x4 64QAM at 10 dB: one vector in 10^5 needs about 2.2 M
    // path metrics (near-singular channels; the largest 6.2 M), so 64QAM from 3 antennas
    // gets 3 x 2^20, which 5 in 10^6 reach and which one core runs through in a few
    // milliseconds. Every other measured tail ends below 70 000 (4x4 16QAM at 5 dB: 49 480 for
    // the depth-first set, 69 696 for Algorithm 3's H100 set; 2x2 64QAM at 10 dB: 3 888),
    // and 2^18 leaves them a wide margin while ending a hostile vector within about 2 ms
    // of one core.
    return omega >= 8 && n_tx >= 3 ? uint32_t(3) << 20 : uint32_t(1) << 18;
}

uint32_t psd_node_budget(int64_t requested, int n_tx, int omega)
{
    if (requested < -1 || requested > psd_max_node_budget)
        throw std::invalid_argument(
            "mimodet: psd_node_budget must be -1 (the default), 0 (none: the unbounded "
            "exact search) or a path-metric count up to " +
            std::to_string(psd_max_node_budget) + ", got " + std::to_string(requested));
    if (requested == -1)
        return psd_default_node_budget(n_tx, omega);
    return static_cast<uint32_t>(requested);
}

std::vector<int64_t> psd_eval(const psd_params& p, int omega)
{
    std::vector<int64_t> eval;
    for (size_t x = 1; x < p.lvl.size() && x - 1 < p.exp.size(); ++x) {
        const int64_t e = p.exp[x - 1] * bounded_pow(omega, p.lvl[x - 1] - p.lvl[x]);
        eval.push_back(e > psd_max_eval ? psd_max_eval + 1 : e);
    }
    return eval;
}

void validate_psd_params(const psd_params& p, int n_tx, int omega)
{
    if (n_tx < 1)
        reject(p, n_tx, omega, "n_tx must be >= 1");
    if (omega < 2)
        reject(p, n_tx, omega, "|Omega| must be >= 2");
    const int N = 2 * n_tx;
    const int nr = static_cast<int>(p.lvl.size()) - 1;
    if (nr < 1 || nr > N)
        reject(p, n_tx, omega,
               "lvl must hold lvl_0..lvl_nr with 0 < lvl_nr <= N = " + std::to_string(N) +
                   ", i.e. 2 to N+1 entries");
    if (p.lvl[0] != N + 1)
        reject(p, n_tx, omega,
               "lvl_0 must be N+1 = " + std::to_string(N + 1) + " (the root)");
    for (int x = 1; x <= nr; ++x)
        if (p.lvl[x] >= p.lvl[x - 1])
            reject(p, n_tx, omega,
                   "lvl must be strictly decreasing (lvl_x > lvl_x+1), but lvl_" +
                       std::to_string(x - 1) + " = " + std::to_string(p.lvl[x - 1]) +
                       " <= lvl_" + std::to_string(x) + " = " + std::to_string(p.lvl[x]));
    if (p.lvl[nr] != 1)
        reject(p, n_tx, omega, "the last level lvl_nr must be 1 (the leaves)");
    if (static_cast<int>(p.exp.size()) != nr)
        reject(p, n_tx, omega,
               "exp must hold exp_0..exp_(nr-1), one per lvl entry but the last (" +
                   std::to_string(nr) + " entries)");
    if (p.exp[0] != 1)
        reject(p, n_tx, omega, "exp_0 must be 1 (only the root is expanded)");
    const auto eval = psd_eval(p, omega);
    for (int x = 1; x <= nr; ++x) {
        if (eval[x - 1] > psd_max_eval)
            reject(p, n_tx, omega,
                   "eval_" + std::to_string(x) + " = exp_" + std::to_string(x - 1) +
                       " * |Omega|^(lvl_" + std::to_string(x - 1) + " - lvl_" +
                       std::to_string(x) + ") exceeds the buffer limit " +
                       std::to_string(psd_max_eval));
        if (x < nr && (p.exp[x] < 1 || p.exp[x] > eval[x - 1]))
            reject(p, n_tx, omega,
                   "exp_" + std::to_string(x) + " = " + std::to_string(p.exp[x]) +
                       " must satisfy 1 <= exp_x <= eval_x = " +
                       std::to_string(eval[x - 1]) + " (the partial vectors level lvl_x holds)");
    }
}

// Table 2 of the paper, lvl_0..lvl_nr and exp_0..exp_(nr-1) as printed ("symbol set
// size" = |Omega|, antennas n x n). The printed eval rows have two typos that the
// lvl/exp rows do not share: configuration 3 prints eval_1 = 256 where
// 1 * 8^(5-2) = 512, and configuration 5 prints eval_3 = 768 where 3 * 8^(6-3) = 1536
// (its sum 1104 repeats the typo). We keep lvl/exp as printed; all six sets are valid.
const std::vector<psd_paper_set>& psd_table2_configurations()
{
    static const std::vector<psd_paper_set> sets = {
        { "table2-config1", 2, 2, { { 5, 2, 1 }, { 1, 4 } } },
        { "table2-config2", 2, 4, { { 5, 2, 1 }, { 1, 4 } } },
        { "table2-config3", 2, 8, { { 5, 2, 1 }, { 1, 4 } } },
        { "table2-config4", 4, 4, { { 9, 6, 4, 1 }, { 1, 4, 2 } } },
        { "table2-config5", 4, 8, { { 9, 7, 6, 3, 1 }, { 1, 2, 3, 4 } } },
        { "table2-config6", 4, 8, { { 9, 7, 6, 2, 1 }, { 1, 2, 3, 4 } } },
    };
    return sets;
}

// Table 5 of the paper (optimised for 20 dB). The extracted table lists lvl_0..lvl_4 and
// exp_lvl0..exp_lvl3 with 0 for unused entries. Uncertainty: the 2x2 |Omega| = 4 row
// prints exp_lvl1 = 1 although lvl_nr = 1 (a single evaluated level, the leaves), so
// exp_1 has no meaning there and is dropped; the 2x2 |Omega| = 2 row (also lvl_nr = 1)
// prints exp_lvl1 = 0, consistent with that reading. The last row prints exp_lvl3 = 2
// for lvl_nr = 4, i.e. exp_0..exp_3 = 1, 4, 4, 2 (eval = 64, 256, 256, 128).
const std::vector<psd_paper_set>& psd_table5_presets()
{
    static const std::vector<psd_paper_set> sets = {
        { "table5-2x2-omega2", 2, 2, { { 5, 1 }, { 1 } } },
        { "table5-2x2-omega4", 2, 4, { { 5, 1 }, { 1 } } },
        { "table5-2x2-omega8", 2, 8, { { 5, 3, 1 }, { 1, 1 } } },
        { "table5-4x4-omega2", 4, 2, { { 9, 7, 1 }, { 1, 1 } } },
        { "table5-4x4-omega4", 4, 4, { { 9, 6, 4, 1 }, { 1, 4, 1 } } },
        { "table5-4x4-omega8", 4, 8, { { 9, 7, 5, 3, 1 }, { 1, 4, 4, 2 } } },
    };
    return sets;
}

psd_params psd_default_params(int n_tx)
{
    psd_params p;
    for (int l = 2 * n_tx + 1; l >= 1; l -= 2)
        p.lvl.push_back(l);
    p.exp.assign(p.lvl.size() - 1, 1);
    return p;
}

psd_params psd_preset(int n_tx, int omega)
{
    for (const auto& s : psd_table5_presets())
        if (s.n_tx == n_tx && s.omega == omega)
            return s.params;
    return psd_default_params(n_tx);
}

const std::vector<psd_paper_set>& psd_gpu_presets()
{
    // H100 (sm_90), CUDA warp/block kernels, 4 slots of 1200 subcarriers x 7 symbols,
    // 20 dB, kernel time (docs/PERFORMANCE.md: every 2x2 set, 200-300 random 4x4 sets).
    static const std::vector<psd_paper_set> sets = {
        { "h100-2x2-omega2", 2, 2, { { 5, 1 }, { 1 } } },
        { "h100-2x2-omega4", 2, 4, { { 5, 3, 1 }, { 1, 4 } } },
        { "h100-2x2-omega8", 2, 8, { { 5, 3, 2, 1 }, { 1, 8, 16 } } },
        { "h100-4x4-omega2", 4, 2, { { 9, 5, 1 }, { 1, 4 } } },
        { "h100-4x4-omega4", 4, 4, { { 9, 6, 4, 3, 1 }, { 1, 4, 8, 16 } } },
        { "h100-4x4-omega8", 4, 8, { { 9, 6, 4, 3, 1 }, { 1, 8, 16, 2 } } },
    };
    return sets;
}

psd_params psd_gpu_preset(int n_tx, int omega)
{
    for (const auto& s : psd_gpu_presets())
        if (s.n_tx == n_tx && s.omega == omega)
            return s.params;
    return psd_preset(n_tx, omega);
}

psd_params psd_cpu_tuned(int n_tx)
{
    psd_params p;
    for (int l = 2 * n_tx + 1; l >= 1; --l)
        p.lvl.push_back(l);
    p.exp.assign(p.lvl.size() - 1, 1);
    return p;
}

bool psd_uses_sorted_qr(int sorted_qr, const psd_params& p)
{
    return sorted_qr == 1 || (sorted_qr == -1 && psd_is_depth_first(p));
}

bool psd_is_depth_first(const psd_params& p)
{
    for (size_t x = 1; x < p.lvl.size(); ++x)
        if (p.lvl[x] != p.lvl[x - 1] - 1)
            return false;
    for (int e : p.exp)
        if (e != 1)
            return false;
    return true;
}

int psd_start_rows(int requested, int n_tx, int omega, bool gpu)
{
    if (requested < -1 || requested > psd_max_start_rows)
        throw std::invalid_argument(
            "mimodet: psd_start_rows must be -1 (the backend's default) or 0.." +
            std::to_string(psd_max_start_rows) + ", got " + std::to_string(requested));
    const int N = 2 * n_tx;
    int log2P = 0;
    while ((1 << log2P) < omega)
        ++log2P;
    int rows = std::min(requested >= 0 ? requested : psd_se_start_rows(N, log2P, gpu), N);
    while (rows > 0 && (1 << (log2P * rows)) > psd_se_max_start_paths)
        --rows;
    return rows;
}

double psd_radius(double requested, bool gpu)
{
    if (requested == -1.0)
        return gpu ? 0.0 : psd_cpu_radius;
    if (!(requested >= 0.0) || std::isinf(requested))
        throw std::invalid_argument("mimodet: psd_radius must be -1 (the backend's "
                                    "default), 0 (none) or finite and > 0, got " +
                                    std::to_string(requested));
    return requested;
}

psd_params
psd_resolve(const std::vector<int>& lvl, const std::vector<int>& exp, int n_tx, int omega)
{
    psd_params p;
    if (lvl.empty() && exp.empty())
        p = psd_cpu_tuned(n_tx);
    else if (lvl.empty() || exp.empty())
        throw std::invalid_argument(
            "mimodet: psd_lvl and psd_exp must be given together (or both left empty "
            "for the default depth-first search)");
    else
        p = { lvl, exp };
    validate_psd_params(p, n_tx, omega);
    return p;
}

} // namespace core
} // namespace mimodet
} // namespace gr
