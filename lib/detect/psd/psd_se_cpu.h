/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The depth-first search of psd_se.h for the CPU with N and P known at compile time: the
// same nodes in the same order, the same operations on the same values, hence the same
// decision, counters and stopping points as psd_se_begin and psd_se_step with running
// sums (psd_se_partials), which the CUDA kernels' results are compared against. Faster
// on a CPU because its state lives in local arrays that nothing else can alias, its loops
// have constant bounds, and a row's next child is chosen by integer selects instead of
// branches that a tree search's data makes unpredictable.

#ifndef INCLUDED_MIMODET_CORE_PSD_SE_CPU_H
#define INCLUDED_MIMODET_CORE_PSD_SE_CPU_H

#include "detect/psd/psd_se.h"
#include <cstdint>

namespace gr {
namespace mimodet {
namespace core {

//! Whether psd_se_search_cpu has an instance for N real levels of P levels.
constexpr bool psd_se_cpu_fixed(int N, int P)
{
    return (N == 2 || N == 4 || N == 6 || N == 8) && (P == 2 || P == 4 || P == 8);
}

/*!
 * psd_se_begin(pb, st, N, nullptr, 0, bound, running sums), st.evaluated +=
 * evaluated_before, then psd_se_step until the search ends or, before a step at a row
 * k > 0, stop(st.evaluated) answers true (only called where Checks). Returns false when
 * stopped. Either way st holds what the step loop would have left in it: the best leaf
 * (st.best as given where no leaf was inside the bound), d2, the counters and, where
 * stopped, the rows' state that psd_se_work_left reads. pb.N == N, pb.P == P.
 */
template <int N, int P, bool Checks, class Stop>
inline bool psd_se_search_cpu(const psd_se_problem& pb,
                              psd_se_state<psd_se_max_n>& st,
                              double bound,
                              uint32_t evaluated_before,
                              Stop&& stop)
{
    static_assert(N >= 2 && N <= psd_se_max_n, "psd_se_search_cpu: 2 <= N <= 16");
    static_assert(P >= 2 && P <= 64 && (P & (P - 1)) == 0, "psd_se_search_cpu: P = 2^k");
    constexpr double half_p = 0.5 * P;
    double R[N][N];
    double value[P];
    double w[N];
    for (int k = 0; k < N; ++k) {
        for (int j = k; j < N; ++j)
            R[k][j] = pb.R[k * N + j];
        w[k] = pb.w[k];
    }
    for (int v = 0; v < P; ++v)
        value[v] = pb.value[v];

    // Running sums (psd_se_partials): partial[k][j] = z_k minus R_ki s_i, i = N-1..j.
    double partial[N][N + 1];
    int stale[N];
    for (int k = 0; k < N; ++k) {
        partial[k][N] = pb.z[k];
        stale[k] = N - 1;
    }
    double pm[N], b[N], pos[N], val[N];
    int lo[N], hi[N];
    // ceil(2 pos): psd_se_take's "2 pos <= lo + hi + 1" as an integer comparison.
    int twice_pos[N];
    uint8_t sym[N] = {};
    uint8_t best[N];
    for (int j = 0; j < N; ++j)
        best[j] = st.best[j];
    double d2 = psd_se_inf();
    uint32_t expanded = 0, evaluated = evaluated_before;

    // psd_se_start_level with psd_se_interference's running sums.
    const auto start_level = [&](int k, double parent) {
        double* part = partial[k];
        // stale[N-1] = N only after the top row's one start (the bound says so to the
        // compiler).
        const int from = stale[k] < N - 1 ? stale[k] : N - 1;
        for (int j = from; j > k; --j)
            part[j] = rn_sub(part[j + 1], rn_mul(R[k][j], val[j]));
        if (k > 0 && stale[k - 1] < from)
            stale[k - 1] = from;
        stale[k] = k + 1;
        const double bk = part[k + 1];
        double p = rn_add(rn_mul(bk, w[k]), half_p);
        if (!(p == p))
            p = half_p;
        p = p < -1.0 ? -1.0 : (p > P + 1.0 ? P + 1.0 : p);
        pm[k] = parent;
        b[k] = bk;
        pos[k] = p;
        int nearest = static_cast<int>(p);
        nearest = nearest < 0 ? 0 : (nearest > P - 1 ? P - 1 : nearest);
        lo[k] = nearest;
        hi[k] = nearest + 1;
        const double p2 = rn_add(p, p); // exact, in [-2, 2 P + 2]
        const int t = static_cast<int>(p2);
        twice_pos[k] = t + (static_cast<double>(t) < p2 ? 1 : 0);
        expanded += 1;
        evaluated += static_cast<uint32_t>(P);
    };
    // psd_se_take: row k's next child in sorted order; false when all were taken.
    const auto take = [&](int k, int& idx, double& metric) {
        const int l = lo[k], h = hi[k];
        const bool has_lo = l >= 0, has_hi = h < P;
        const bool take_lo = has_lo & (!has_hi | (twice_pos[k] <= l + h + 1));
        // With neither left, idx = P: the read wraps to level 0 and the result is unused.
        idx = take_lo ? l : h;
        lo[k] = l - (take_lo ? 1 : 0);
        hi[k] = h + (take_lo ? 0 : 1);
        const double e = rn_sub(b[k], rn_mul(R[k][k], value[idx & (P - 1)]));
        metric = rn_add(pm[k], rn_mul(e, e));
        return has_lo | has_hi;
    };

    start_level(N - 1, 0.0);
    int k = N - 1;
    bool stopped = false;
    for (;;) {
        if (Checks && stop(evaluated)) {
            stopped = true;
            break;
        }
        // A step at row k > 0; a descent to row 0 takes its leaf step at once (that step
        // has no check before it).
        int idx;
        double m;
        if (take(k, idx, m) && m < d2 && m <= bound) {
            sym[k] = static_cast<uint8_t>(idx);
            val[k] = value[idx];
            if (k > 1) {
                --k;
                start_level(k, m);
                continue;
            }
            start_level(0, m);
            int leaf;
            double lm;
            take(0, leaf, lm);
            if (lm < d2 && lm <= bound) {
                d2 = lm;
                sym[0] = static_cast<uint8_t>(leaf);
                for (int j = 0; j < N; ++j)
                    best[j] = sym[j];
            }
            // k stays 1: the leaf step returns to row 1.
        } else if (++k >= N) {
            break;
        }
    }

    st.d2 = d2;
    st.bound = bound;
    st.top = N;
    st.k = k;
    st.expanded = expanded;
    st.evaluated = evaluated;
    for (int j = 0; j < N; ++j) {
        st.best[j] = best[j];
        st.sym[j] = sym[j];
    }
    if (stopped)
        for (int j = k; j < N; ++j) {
            st.pm[j] = pm[j];
            st.b[j] = b[j];
            st.pos[j] = pos[j];
            st.lo[j] = static_cast<int8_t>(lo[j]);
            st.hi[j] = static_cast<int8_t>(hi[j]);
        }
    return !stopped;
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CORE_PSD_SE_CPU_H */
