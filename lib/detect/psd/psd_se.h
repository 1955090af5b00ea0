/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The PSD's depth-first (Schnorr-Euchner) search, shared by the CPU PSD
// (lib/detect/psd/psd.cc) and the CUDA SE kernel (cuda/psd/psd_se_cuda.cu): __host__
// __device__ under nvcc, plain inline C++ elsewhere. Every operation is explicitly
// rounded (rounded_math.h) and done in the same order on both, so the GPU's decisions and
// node counts equal the CPU's.
//
// The search is a state machine advanced one step at a time (psd_se_step): the GPU runs
// one vector per thread and lets a thread that finishes take the next vector at once, so
// the lanes of a warp stay busy whatever each vector's node count is. The CPU keeps
// running interference sums (psd_se_partials) that give the same values with less work.
// A search can also cover one subtree (psd_se_begin with a prefix) with an outer bound,
// so that the GPU can spread a long search over many threads; psd_se_leaf_key orders the
// leaves as the sequential search visits them, so the subtrees' results combine into its
// decision.

#ifndef INCLUDED_MIMODET_CORE_PSD_SE_H
#define INCLUDED_MIMODET_CORE_PSD_SE_H

#include "detect/rounded_math.h"
#include "util/host_device.h"
#include <cstdint>
#include <type_traits>
#include <utility>

namespace gr {
namespace mimodet {
namespace core {

//! Most real levels (2 x 8 antennas).
constexpr int psd_se_max_n = 16;

/*!
 * The CUDA depth-first kernels (cuda/psd/psd_se_cuda.cu) run a search in one thread until
 * it has expanded psd_se_split_nodes nodes, or, once every vector of the launch has its
 * thread (psd_se_drains), psd_se_drain_nodes (psd_se_drain_nodes_sparse where the
 * launch's vectors are fewer than the GPU holds threads; psd_se_drain_count); then the
 * rest of it is spread over tasks, whose node counts depend on the schedule. A search
 * that expands fewer than each has the CPU's counts. MIMODET_PSD_SE_SPLIT and
 * MIMODET_PSD_SE_DRAIN replace them.
 */
constexpr uint32_t psd_se_split_nodes = 128;
constexpr uint32_t psd_se_drain_nodes = 32;
constexpr uint32_t psd_se_drain_nodes_sparse = 16;

/*!
 * The drain rule's count for N real levels of P = 2^log2P levels, where the launch's
 * vectors are fewer than the GPU holds threads (sparse) or not: 24 for both at 4x4 16QAM,
 * else psd_se_drain_nodes_sparse or psd_se_drain_nodes. On an H100 (docs/PERFORMANCE.md)
 * 24 ran 4x4 16QAM 1.035x at 20 dB and 0.99-1.00x at 5, 10, 15 and 25 dB; 2x2 64QAM
 * 0.90-0.95x and 8x8 16QAM 1.00x, which keep 32 and 16.
 */
MIMODET_HD constexpr uint32_t psd_se_drain_count(int N, int log2P, bool sparse)
{
    if (N == 8 && log2P == 2)
        return 24;
    return sparse ? psd_se_drain_nodes_sparse : psd_se_drain_nodes;
}

/*!
 * Whether the CUDA kernels apply psd_se_drain_nodes to N real levels of P = 2^log2P
 * levels: not to trees of at most 256 leaves (4x4 QPSK, 2x2 16QAM), whose searches are
 * short, so that a wave of their rests costs more than it saves (measured on an H100,
 * docs/PERFORMANCE.md).
 */
MIMODET_HD constexpr bool psd_se_drains(int N, int log2P) { return N * log2P > 8; }

/*!
 * Whether the CUDA kernels run a chunk's waves of tasks in one cooperative launch, which
 * ends at the first wave without tasks, rather than a launch per wave: where the drain
 * rule is off, since there searches rarely spread, and the N-1 launches of empty waves
 * took a tenth of 4x4 QPSK's time. Where searches spread, a cooperative launch holds
 * every SM until its last wave ends, whereas a launch per wave lets the other streams'
 * chunks in as its blocks leave: 4x4 16QAM and 64QAM ran 1-10 % slower with it (H200,
 * docs/PERFORMANCE.md). MIMODET_PSD_SE_COOPERATIVE replaces it.
 */
MIMODET_HD constexpr bool psd_se_cooperative_waves(int N, int log2P)
{
    return !psd_se_drains(N, log2P);
}

/*!
 * Whether the CUDA depth-first kernels keep a search's per-row state in shared memory
 * (se_rows_shared in cuda/psd/psd_se_cuda.cu: one code path whatever row each lane is
 * at) rather than in registers (one unrolled code path per row, which lanes at
 * different rows run one after the other), for N real levels of P = 2^log2P levels. On an
 * H100 (docs/PERFORMANCE.md) shared memory was 1.24-1.5x faster at 4x4 16QAM and
 * 64QAM, 1.05-1.23x at 2x2 64QAM and 2.4x at 8x8 16QAM; registers 1.00-1.03x at 4x4 QPSK
 * and 1.15x at 2x2 16QAM (searches without a starting bound). MIMODET_PSD_SE_SHARED_ROWS
 * replaces it.
 */
MIMODET_HD constexpr bool psd_se_shared_rows(int N, int log2P)
{
    return log2P == 3 || (N > 4 && log2P == 2) || N > 8;
}

/*!
 * Whether the CUDA depth-first kernels compute every vector's z = Q^T y in a kernel
 * before the first pass (psd_se_z_kernel, or the first-leaf kernel where that runs:
 * psd_se_first_leaf), for N real levels of P = 2^log2P levels, rather than in the first
 * pass's thread that takes the vector: there a lane that takes a new vector rotates it
 * while the other lanes of its warp, mid-search, wait, and with a few tens of nodes a
 * search that happens in most of a warp's steps. With
 * psd_se_deferred_write, 1.03-1.09x at 4x4 16QAM and 64QAM on an H100
 * (docs/PERFORMANCE.md). MIMODET_PSD_SE_STORED_Z replaces it.
 */
MIMODET_HD constexpr bool psd_se_stored_z(int N, int log2P)
{
    (void)N;
    (void)log2P;
    return true;
}

/*!
 * Whether the CUDA depth-first first pass leaves its vectors' decisions in their
 * per-vector records for the decision kernel to write with the spread ones, rather than
 * mapping labels to bits in the lane that ended the search while its warp waits: alone
 * 1.02-1.04x at 4x4 16QAM and 64QAM on an H100 (docs/PERFORMANCE.md).
 * MIMODET_PSD_SE_DEFERRED_WRITE replaces it.
 */
MIMODET_HD constexpr bool psd_se_deferred_write(int N, int log2P)
{
    (void)N;
    (void)log2P;
    return true;
}

/*!
 * Lanes of a warp of the CUDA depth-first kernels that wait for their next item (a
 * first-pass vector, a wave's task) before they take theirs together, for N real levels
 * of P = 2^log2P levels (cuda/psd/psd_se_cuda.cu, se_refill_gate); 1: no gate, each lane
 * takes its own as its search ends. Taking an item loads its problem and starts its
 * search while the warp's other lanes wait; the gate costs two warp votes a step. On an
 * H100 (docs/PERFORMANCE.md) 8 ran 4x4 64QAM 1.16x at 10 dB and 1.06x at 20 dB, 16QAM
 * 1.04x at 10 dB but 0.98x at 20 dB. MIMODET_PSD_SE_REFILL replaces it.
 */
MIMODET_HD constexpr int psd_se_refill_lanes(int N, int log2P)
{
    return N == 8 && log2P == 3 ? 8 : 1;
}

/*!
 * Whether the CUDA depth-first kernels decide the vectors whose search ends at its first
 * leaf in a kernel of their own before the first pass (psd_se_first_leaf_decides, every
 * lane on the same code), which also computes every vector's z; the first pass then
 * searches the rest. For N real levels of P = 2^log2P levels where the search starts
 * without a bound. On an H100 (docs/PERFORMANCE.md) it ran 4x4 16QAM 1.10x at 20 dB and
 * 0.99x at 5-15 dB, 2x2 64QAM 1.05-1.07x, 8x8 16QAM 1.01x, but 4x4 64QAM 0.98x at 15
 * and 20 dB (1.07x at 25 dB): not at 64QAM with 4 or more antennas.
 * MIMODET_PSD_SE_FIRST_LEAF replaces it.
 */
MIMODET_HD constexpr bool psd_se_first_leaf(int N, int log2P)
{
    return !(log2P == 3 && N >= 8);
}

//! One received vector's problem: z = R s + noise, R upper triangular with R_kk >= 0.
struct psd_se_problem {
    const double* R;     //!< N x N, row-major, element (k, j) at R[k N + j]
    const double* z;     //!< N
    const double* value; //!< the P PAM levels, increasing
    const double* w;     //!< N, psd_se_weight of row k at w[k] (the matrix's)
    int N, P;

    MIMODET_HD double r(int k, int j) const { return R[k * N + j]; }
    MIMODET_HD double zk(int k) const { return z[k]; }
    MIMODET_HD double wk(int k) const
    {
#ifdef __CUDA_ARCH__
        return __ldg(w + k); // global, read-only: the GPU's w is the matrix's, not copied
#else
        return w[k];
#endif
    }
};

/*!
 * Row k's weight, once per matrix: w_k = 0.5 / (scale R_kk) (inv_scale = 1 / scale), so
 * that b w_k + P/2 is the unconstrained estimate b / R_kk in level positions (PAM level
 * j, (2j - P + 1) scale, at j + 1/2) with a multiplication instead of a division per
 * node. 0 where R_kk is not a positive finite number: the search then starts at the
 * middle level.
 */
MIMODET_HD inline double psd_se_weight(double r_kk, double inv_scale)
{
    const bool usable = r_kk > 0.0 && r_kk < __builtin_huge_val();
    return usable ? rn_div(0.5 * inv_scale, r_kk) : 0.0;
}

//! The per-row part of a search's state, in the state itself: registers on the GPU
//! where every index is a compile-time constant (psd_se_step's unrolled form).
template <int NMAX>
struct psd_se_rows {
    double pm[NMAX];     //!< metric of the partial vector above row k
    double b[NMAX];      //!< z_k minus the interference of the symbols above
    double pos[NMAX];    //!< unconstrained estimate of row k in level positions
    int8_t lo[NMAX];     //!< zig-zag: next candidate below pos
    int8_t hi[NMAX];     //!< next candidate above
    uint8_t sym[NMAX];   //!< current path: sorted-PAM index per row
};

//! Whether a state's rows hold the PAM level of each row's symbol (val).
template <class Rows, class = void>
struct psd_se_has_values : std::false_type {
};
template <class Rows>
struct psd_se_has_values<Rows, std::void_t<decltype(std::declval<Rows&>().val)>>
    : std::true_type {
};

//! Row j's PAM level on the current path.
template <class State>
MIMODET_HD inline double psd_se_level(const psd_se_problem& pb, const State& st, int j)
{
    if constexpr (psd_se_has_values<State>::value)
        return st.val[j];
    else
        return pb.value[st.sym[j]];
}

//! Sets row j's symbol (and its level where the rows hold it).
template <class State>
MIMODET_HD inline void psd_se_set(const psd_se_problem& pb, State& st, int j, int idx)
{
    st.sym[j] = static_cast<uint8_t>(idx);
    if constexpr (psd_se_has_values<State>::value)
        st.val[j] = pb.value[idx];
}

//! Search state; NMAX >= N. Rows: psd_se_rows<NMAX>, or the CUDA kernels' rows in
//! shared memory (their arrays indexed by row, each with val, the row's PAM level).
template <int NMAX, class Rows = psd_se_rows<NMAX>>
struct psd_se_state : Rows {
    uint8_t best[NMAX];  //!< best leaf so far
    double d2;           //!< metric of the best leaf (the radius); +inf before the first
    double bound;        //!< children with a metric above this are pruned (+inf: none)
    int k;               //!< row whose children are being enumerated (0: a leaf next)
    int top;             //!< rows top..N-1 are fixed (the subtree's root)
    uint32_t expanded;   //!< nodes whose children were generated
    uint32_t evaluated;  //!< path metrics (|Omega| per expanded node)
};

/*!
 * The CPU's running interference sums (Ghasemmehdi and Agrell's recursion): row k's
 * partial[k][j] = z_k minus R_ki s_i for i = N-1 down to j, the same operations in the
 * same order as psd_se_start_level's direct sum, so a start recomputes only the rows
 * whose symbols changed since its row was last started (usually one) and the values are
 * bit for bit the GPU's. The GPU recomputes the sum (psd_se_no_partials), which keeps
 * its state in registers.
 */
template <int NMAX>
struct psd_se_partials {
    double partial[NMAX][NMAX + 1];
    int8_t stale[NMAX]; //!< partial[k][j] is out of date for j <= stale[k]
};

//! No running sums: every start computes its row's interference from the top row.
struct psd_se_no_partials {
};

//! +inf without <cmath>'s constexpr questions on the device.
MIMODET_HD inline double psd_se_inf() { return __builtin_huge_val(); }

// Loops over rows run to NMAX with a guard on N, so that with a row index known at
// compile time (psd_se_step_unrolled) every state access has a constant index and the
// GPU keeps the state in registers; the CPU (NMAX = psd_se_max_n) runs them as plain
// loops. Either way the same operations in the same order.

//! z_k minus the interference of rows k+1..N-1, subtracted from the top row down.
template <int NMAX, class Rows>
MIMODET_HD inline double psd_se_interference(const psd_se_problem& pb,
                                             const psd_se_state<NMAX, Rows>& st,
                                             int k,
                                             psd_se_no_partials&)
{
    double b = pb.zk(k);
    for (int j = NMAX - 1; j > k; --j)
        if (j < pb.N)
            b = rn_sub(b, rn_mul(pb.r(k, j), psd_se_level(pb, st, j)));
    return b;
}

//! The same value from the running sums; marks the row below as stale where this row's
//! symbols above changed.
template <int NMAX, class Rows>
inline double psd_se_interference(const psd_se_problem& pb,
                                  const psd_se_state<NMAX, Rows>& st,
                                  int k,
                                  psd_se_partials<NMAX>& ps)
{
    double* partial = ps.partial[k];
    const int stale = ps.stale[k];
    for (int j = stale; j > k; --j)
        partial[j] = rn_sub(partial[j + 1], rn_mul(pb.r(k, j), psd_se_level(pb, st, j)));
    if (k > 0 && ps.stale[k - 1] < stale)
        ps.stale[k - 1] = static_cast<int8_t>(stale);
    // Row k is started again only after a new child at row k+1.
    ps.stale[k] = static_cast<int8_t>(k + 1);
    return partial[k + 1];
}

//! Running sums at the start of a (sub)tree search: every row stale.
template <int NMAX>
MIMODET_HD inline void psd_se_reset(const psd_se_problem&, psd_se_no_partials&)
{
}
template <int NMAX>
inline void psd_se_reset(const psd_se_problem& pb, psd_se_partials<NMAX>& ps)
{
    for (int k = 0; k < NMAX && k < pb.N; ++k) {
        ps.partial[k][pb.N] = pb.zk(k);
        ps.stale[k] = static_cast<int8_t>(pb.N - 1);
    }
}

//! Row k's children, sorted by metric: |b - r v|^2 = r^2 (b / r - v)^2 grows with the
//! distance of v's position from pos, so they alternate outwards from the nearest level.
template <int NMAX, class Partials = psd_se_no_partials, class Rows>
MIMODET_HD inline void psd_se_start_level(const psd_se_problem& pb,
                                          psd_se_state<NMAX, Rows>& st,
                                          int k,
                                          double parent,
                                          Partials&& ps = Partials{})
{
    const double b = psd_se_interference(pb, st, k, ps);
    const double half_p = 0.5 * pb.P;
    double pos = rn_add(rn_mul(b, pb.wk(k)), half_p);
    // NaN (non-finite inputs, or 0 x inf) takes the middle. Beyond the outermost levels
    // only the side matters; the clamp keeps the conversion in int range.
    if (!(pos == pos))
        pos = half_p;
    pos = pos < -1.0 ? -1.0 : (pos > pb.P + 1.0 ? pb.P + 1.0 : pos);
    st.pm[k] = parent;
    st.b[k] = b;
    st.pos[k] = pos;
    // The nearest level's index, pos rounded down. Truncation rounds down wherever the
    // clamp below keeps the result, and is one instruction where the host's baseline
    // instruction set has no floor.
    int nearest = static_cast<int>(pos);
    nearest = nearest < 0 ? 0 : (nearest > pb.P - 1 ? pb.P - 1 : nearest);
    st.lo[k] = static_cast<int8_t>(nearest);
    st.hi[k] = static_cast<int8_t>(nearest + 1);
    st.expanded += 1;
    st.evaluated += static_cast<uint32_t>(pb.P); // Algorithm 3 evaluates all |Omega| children
}

//! Next child of a row in sorted order (lo/hi advanced); false when all were taken.
MIMODET_HD inline bool psd_se_take(const psd_se_problem& pb,
                                      const double pos,
                                      const double b,
                                      const double pm,
                                      const double r,
                                      int8_t& lo,
                                      int8_t& hi,
                                      int& idx,
                                      double& metric)
{
    const bool has_lo = lo >= 0, has_hi = hi < pb.P;
    if (!has_lo && !has_hi)
        return false;
    // Level j sits at position j + 1/2, hi's above pos. Where lo's is below pos, lo is
    // the nearer (a tie: lo) exactly when 2 pos <= lo + hi + 1, exact in double; where it
    // is above (lo the nearest level), that holds as well.
    const bool take_lo = has_lo && (!has_hi || rn_add(pos, pos) <= lo + hi + 1);
    idx = take_lo ? lo-- : hi++;
    const double e = rn_sub(b, rn_mul(r, pb.value[idx]));
    metric = rn_add(pm, rn_mul(e, e));
    return true;
}

template <int NMAX, class Rows>
MIMODET_HD inline bool psd_se_next(
    const psd_se_problem& pb, psd_se_state<NMAX, Rows>& st, int k, int& idx, double& m)
{
    return psd_se_take(
        pb, st.pos[k], st.b[k], st.pm[k], pb.r(k, k), st.lo[k], st.hi[k], idx, m);
}

//! A child that may be taken: inside the radius and the bound (false for NaN).
template <int NMAX, class Rows>
MIMODET_HD inline bool psd_se_inside(const psd_se_state<NMAX, Rows>& st, double m)
{
    return m < st.d2 && m <= st.bound;
}

/*!
 * Calls f(K) with K = k as a compile-time constant (std::integral_constant), for k in
 * 0..NMAX-1: code inside f indexes the state with a constant.
 */
template <int NMAX, int K = 0, class F>
MIMODET_HD inline auto psd_se_dispatch(int k, F&& f)
{
    if constexpr (K + 1 < NMAX) {
        if (k != K)
            return psd_se_dispatch<NMAX, K + 1>(k, f);
    }
    return f(std::integral_constant<int, K>{});
}

/*!
 * Starts a search of the subtree below rows top..N-1, which hold prefix[0..N-top) (row
 * N-1 first) with path metric prefix_metric; top = N searches the whole tree (no
 * prefix). Children with a metric above bound are pruned. top >= 1. unrolled: the row
 * index as a compile-time constant (GPU).
 */
template <int NMAX,
          bool unrolled = false,
          class Partials = psd_se_no_partials,
          class Rows>
MIMODET_HD inline void psd_se_begin(const psd_se_problem& pb,
                                    psd_se_state<NMAX, Rows>& st,
                                    int top,
                                    const uint8_t* prefix,
                                    double prefix_metric,
                                    double bound,
                                    Partials&& ps = Partials{})
{
    st.d2 = psd_se_inf();
    st.bound = bound;
    st.top = top;
    st.expanded = 0;
    st.evaluated = 0;
    for (int j = 0; j < NMAX && j < pb.N; ++j)
        if (j >= top)
            psd_se_set(pb, st, j, prefix[pb.N - 1 - j]);
    st.k = top - 1;
    psd_se_reset<NMAX>(pb, ps);
    if constexpr (unrolled)
        psd_se_dispatch<NMAX>(
            st.k, [&](auto K) { psd_se_start_level(pb, st, K(), prefix_metric, ps); });
    else
        psd_se_start_level(pb, st, st.k, prefix_metric, ps);
}

//! psd_se_step's work at row k (k = st.k).
template <int NMAX, class Partials, class Rows>
MIMODET_HD inline void psd_se_step_at(const psd_se_problem& pb,
                                      psd_se_state<NMAX, Rows>& st,
                                      int k,
                                      Partials& ps)
{
    int idx = 0;
    double m = 0.0;
    if (k == 0) {
        // Leaf level: the first sorted child is the minimum.
        psd_se_next(pb, st, 0, idx, m);
        if (psd_se_inside(st, m)) {
            st.d2 = m;
            st.sym[0] = static_cast<uint8_t>(idx);
            MIMODET_UNROLL
            for (int j = 0; j < NMAX; ++j)
                if (j < pb.N)
                    st.best[j] = st.sym[j];
        }
        st.k = 1;
    } else if (psd_se_next(pb, st, k, idx, m) && psd_se_inside(st, m)) {
        psd_se_set(pb, st, k, idx);
        st.k = k - 1;
        psd_se_start_level(pb, st, k - 1, m, ps);
    } else {
        st.k = k + 1;
    }
}

/*!
 * One step: the next child of the current row; a leaf updates the best, an inner node
 * inside the sphere is descended into, else the row is left (its remaining children are
 * no better). Returns false once the subtree is done (best/d2 hold the answer, d2 = +inf
 * when no leaf was inside the bound). unrolled: the row index as a compile-time constant
 * (GPU), the same operations.
 */
template <int NMAX,
          bool unrolled = false,
          class Partials = psd_se_no_partials,
          class Rows>
MIMODET_HD inline bool psd_se_step(const psd_se_problem& pb,
                                   psd_se_state<NMAX, Rows>& st,
                                   Partials&& ps = Partials{})
{
    if constexpr (unrolled)
        psd_se_dispatch<NMAX>(st.k, [&](auto K) { psd_se_step_at(pb, st, K(), ps); });
    else
        psd_se_step_at(pb, st, st.k, ps);
    return st.k < st.top;
}

/*!
 * The first 2N - 1 steps of psd_se_begin(pb, st, N, nullptr, 0.0, +inf) and psd_se_step
 * in straight-line form: the descent to the search's first leaf (the SIC point) and, at
 * rows 1..N-1, the next child in sorted order. True where that leaf's metric is finite
 * and none of those children lies below it: the search then ends with that leaf
 * (written to best), N nodes expanded and N P metrics evaluated, and nothing else. False:
 * the search decides. Every lane runs the same code, so a warp decides 32 such vectors at
 * once (the CUDA first-leaf kernel), where the search's steps run the lanes at different
 * rows one after the other.
 */
template <int NMAX>
MIMODET_HD inline bool psd_se_first_leaf_decides(const psd_se_problem& pb,
                                                 uint8_t (&best)[NMAX])
{
    psd_se_state<NMAX> st;
    st.expanded = 0;
    st.evaluated = 0;
    double m = 0.0; // the path's metric
    MIMODET_UNROLL
    for (int k = NMAX - 1; k >= 0; --k) {
        if (k >= pb.N)
            continue;
        psd_se_start_level(pb, st, k, m);
        int idx = 0;
        psd_se_next(pb, st, k, idx, m);
        // Not inside an infinite radius (NaN, +inf): the search turns back here.
        if (!(m < psd_se_inf()))
            return false;
        psd_se_set(pb, st, k, idx);
    }
    MIMODET_UNROLL
    for (int k = 1; k < NMAX; ++k) {
        if (k >= pb.N)
            continue;
        int idx = 0;
        double next = 0.0;
        if (psd_se_next(pb, st, k, idx, next) && next < m)
            return false;
    }
    MIMODET_UNROLL
    for (int j = 0; j < NMAX; ++j)
        if (j < pb.N)
            best[j] = st.sym[j];
    return true;
}

/*!
 * Rows whose every combination psd_se_start_bound takes by default, for N real levels of
 * P = 2^log2P levels on the CUDA backend (gpu) or the CPU (0: none, the search starts
 * with an infinite radius). On the H100 (docs/PERFORMANCE.md) 2x2 and 4x4 QPSK and 2x2
 * 16QAM take every row: the enumeration (psd_se_enumerate) decides nearly every vector
 * without a search, faster than the search. Elsewhere, and on the CPU, a bound costs
 * about what it prunes, or more.
 */
MIMODET_HD constexpr int psd_se_start_rows(int N, int log2P, bool gpu)
{
    const bool enumerated = (log2P == 1 && (N == 4 || N == 8)) || (log2P == 2 && N == 4);
    return gpu && enumerated ? N : 0;
}

//! Most paths psd_se_start_bound may take (P^rows).
constexpr int psd_se_max_start_paths = 512;

/*!
 * A starting bound for the search of the whole tree: the least metric among the P^rows
 * leaves that take each combination of rows N-1..N-rows and, below, each row's nearest
 * level (the search's first child: successive interference cancellation), a
 * fixed-complexity sphere decoder's candidates. Every metric is computed with the
 * search's operations in its order, so it equals the metric the search gives that leaf,
 * and the bound (psd_se_begin's, children above it pruned) prunes only nodes above a
 * leaf the search reaches anyway: the decision is the unbounded search's, ties included.
 * The leaf of least metric goes to best; the metrics it computed are added to evaluated.
 * +inf where no metric is a number (non-finite inputs) or rows is 0. 0 <= rows <= N.
 * unrolled: loops to NMAX with guards, for constant indices (GPU), the same operations.
 */
template <int NMAX, bool unrolled = false>
MIMODET_HD inline double psd_se_start_bound(const psd_se_problem& pb,
                                            int rows,
                                            uint8_t (&best)[NMAX],
                                            uint32_t& evaluated)
{
    const int N = pb.N, P = pb.P;
    int paths = rows > 0 ? 1 : 0;
    for (int i = 0; i < rows; ++i)
        paths *= P;
    const double half_p = 0.5 * P;
    double bound = psd_se_inf();
    for (int c = 0; c < paths; ++c) {
        uint8_t sym[NMAX];
        double val[NMAX]; // the PAM level of each row fixed so far
        double pm = 0.0;
        int digits = c;
        // Row k of the path: its level (the path's digit, or the nearest), its metric.
        const auto row = [&](int k, double b) {
            int idx;
            if (k >= N - rows) {
                idx = digits % P;
                digits /= P;
            } else {
                // psd_se_start_level's nearest level (its first child), written out: a
                // helper shared with psd_se_start_level changed the first pass's register
                // allocation and measured 1-4 % slower on an H100.
                double pos = rn_add(rn_mul(b, pb.wk(k)), half_p);
                if (!(pos == pos))
                    pos = half_p;
                pos = pos < -1.0 ? -1.0 : (pos > P + 1.0 ? P + 1.0 : pos);
                idx = static_cast<int>(pos);
                idx = idx < 0 ? 0 : (idx > P - 1 ? P - 1 : idx);
            }
            sym[k] = static_cast<uint8_t>(idx);
            val[k] = pb.value[idx];
            const double e = rn_sub(b, rn_mul(pb.r(k, k), val[k]));
            pm = rn_add(pm, rn_mul(e, e));
        };
        // The interference subtracted from the top row down, as psd_se_interference.
        if constexpr (unrolled) {
            for (int k = NMAX - 1; k >= 0; --k) {
                if (k >= N)
                    continue;
                double b = pb.zk(k);
                for (int j = NMAX - 1; j > k; --j)
                    if (j < N)
                        b = rn_sub(b, rn_mul(pb.r(k, j), val[j]));
                row(k, b);
            }
        } else {
            for (int k = N - 1; k >= 0; --k) {
                double b = pb.zk(k);
                for (int j = N - 1; j > k; --j)
                    b = rn_sub(b, rn_mul(pb.r(k, j), val[j]));
                row(k, b);
            }
        }
        if (pm < bound) {
            bound = pm;
            for (int j = 0; j < NMAX && j < N; ++j)
                best[j] = sym[j];
        }
    }
    // One metric per row of every path, less those the paths share above.
    uint32_t metrics = 0;
    for (int i = 1, level = P; i <= rows; ++i, level *= P)
        metrics += static_cast<uint32_t>(level);
    metrics += static_cast<uint32_t>(paths) * static_cast<uint32_t>(N - rows);
    evaluated += metrics;
    return bound;
}

//! Most leaves psd_se_enumerate visits (P^N).
constexpr int psd_se_max_enumerated_leaves = 256;

//! P^N, the leaves of N real levels of P levels (P^N <= 2^16 where it is asked).
MIMODET_HD constexpr unsigned psd_se_leaves(int N, int P)
{
    unsigned n = 1;
    for (int k = 0; k < N; ++k)
        n *= static_cast<unsigned>(P);
    return n;
}

/*!
 * Whether a search of N real levels of P levels, with a starting bound of `rows` rows,
 * first enumerates the leaves (psd_se_enumerate): a bound over every row, rows = N, of at
 * most psd_se_max_enumerated_leaves leaves (4x4 QPSK, 2x2 16QAM, 1x1 64QAM).
 */
MIMODET_HD constexpr bool psd_se_enumerates(int N, int P, int rows)
{
    return rows == N && N >= 1 && N <= 8 && (P == 2 || P == 4 || P == 8) &&
           psd_se_leaves(N, P) <= static_cast<unsigned>(psd_se_max_enumerated_leaves);
}

/*!
 * psd_se_enumerate's guard band, relative to a bound on every leaf's metric: far above
 * the rounding of its P^N - 1 incremental updates (about 1e-13 of it) and of the order in
 * which the search takes children at near-ties, far below the gap between the two best
 * leaves of a realistic vector.
 */
constexpr double psd_se_enumerate_guard = 1e-9;

// The P-ary reflected Gray code, P = 2^log2P, by shifts: written so that nvcc folds them
// to constants in the unrolled loop (with divisions and a loop over powers of P it kept
// the steps' direction as a run-time branch, 1.2x slower at 4x4 QPSK).

//! Step g (1 <= g < P^N) of the code changes the digit of g's lowest non-zero base-P
//! digit.
MIMODET_HD constexpr int psd_se_gray_digit(unsigned g, int log2P)
{
    int bit = 0;
    while (!((g >> bit) & 1u))
        ++bit;
    return bit / log2P;
}

//! Whether step g raises that digit (one level up) rather than lowering it.
MIMODET_HD constexpr bool psd_se_gray_up(unsigned g, int log2P)
{
    return ((g >> (log2P * (psd_se_gray_digit(g, log2P) + 1))) & 1u) == 0;
}

//! Digit k (row k's level index) of the code's g-th word.
MIMODET_HD constexpr int psd_se_gray_level(unsigned g, int k, int log2P)
{
    const unsigned q = g >> (log2P * k);
    const int d = static_cast<int>(q & ((1u << log2P) - 1u));
    return ((q >> log2P) & 1u) == 0 ? d : (1 << log2P) - 1 - d;
}

/*!
 * The decision of the search of the whole tree, found without the search when one leaf
 * stands out: every leaf's metric, in Gray-code order (P-ary, reflected: from one leaf
 * to the next one row's level moves one step, the PAM levels being equally spaced: one
 * column of R), each updated from the one before, with explicitly rounded operations
 * (the same values on the CPU and the GPU). Where the least of them is below every
 * other by more than the guard band (psd_se_enumerate_guard of a bound on any leaf's
 * metric), that leaf has the least metric with the search's own arithmetic too, and
 * every other leaf's is above it by more than the search's rounding can reorder
 * children. That makes it the search's decision: the search passes a leaf over only
 * where a node on its path fails the radius, or where a sibling taken before it (its
 * row's order comes from the rounded estimate, not from the metrics) fails it or is the
 * leaf level's one child; either way the decision's metric is at most the least plus
 * that rounding, inside the band, where only this leaf lies. Returns true and writes it
 * to best (sorted-PAM index per row); false where a second leaf lies inside the band
 * (ties: a degenerate channel) or a value is not finite, and the search decides.
 */
template <int N, int P>
MIMODET_HD inline bool psd_se_enumerate(const psd_se_problem& pb, uint8_t* best)
{
    static_assert(N >= 1 && P >= 2 && psd_se_leaves(N, P) <= psd_se_max_enumerated_leaves,
                  "psd_se_enumerate: at most 256 leaves");
    constexpr unsigned leaves = psd_se_leaves(N, P);
    constexpr int log2P = P == 2 ? 1 : (P == 4 ? 2 : 3);
    static_assert(1 << log2P == P, "psd_se_enumerate: P is 2, 4 or 8");
    const double low = pb.value[0];
    const double step = rn_sub(pb.value[1], low); // one level up
    const double a_low = low < 0.0 ? -low : low;
    const double a_high = pb.value[P - 1] < 0.0 ? -pb.value[P - 1] : pb.value[P - 1];
    const double largest = a_low > a_high ? a_low : a_high;
    // Column j of R times step, rows 0..j, at col[j (j + 1) / 2 + i]; its squared norm.
    double col[N * (N + 1) / 2];
    double norm2[N];
    MIMODET_UNROLL
    for (int j = 0; j < N; ++j) {
        double s = 0.0;
        MIMODET_UNROLL
        for (int i = 0; i < N; ++i)
            if (i <= j) {
                const double c = rn_mul(pb.r(i, j), step);
                col[j * (j + 1) / 2 + i] = c;
                s = rn_add(s, rn_mul(c, c));
            }
        norm2[j] = s;
    }
    // The residual of the leaf of every row at level 0, its metric, and the bound on any
    // leaf's metric: the sum over rows of (|z_k| + sum_j |R_kj| max |level|)^2.
    double e[N];
    double metric = 0.0, size = 0.0;
    MIMODET_UNROLL
    for (int k = N - 1; k >= 0; --k) {
        double b = pb.zk(k);
        double mag = b < 0.0 ? -b : b;
        MIMODET_UNROLL
        for (int j = N - 1; j >= 0; --j)
            if (j >= k) {
                const double r = pb.r(k, j);
                b = rn_sub(b, rn_mul(r, low));
                mag = rn_add(mag, rn_mul(r < 0.0 ? -r : r, largest));
            }
        e[k] = b;
        metric = rn_add(metric, rn_mul(b, b));
        size = rn_add(size, rn_mul(mag, mag));
    }
    // Every value below is bounded by size: finite where it is.
    if (!(size < psd_se_inf()))
        return false;
    // The two least metrics and the word of the least, by selects (no branches); each
    // step's metric takes one addition after the last, so the steps' products and sums
    // overlap.
    double least = metric, second = psd_se_inf();
    unsigned at_least = 0;
    MIMODET_UNROLL
    for (unsigned g = 1; g < leaves; ++g) {
        const int j = psd_se_gray_digit(g, log2P);
        const bool up =
            psd_se_gray_up(g, log2P); // one level up: the residual loses the column
        // Rows 0..j, as loops to N with a guard: nvcc left a loop to j unrolled where j
        // was N-1, which put every array in local memory.
        double dot = rn_mul(e[0], col[j * (j + 1) / 2]);
        MIMODET_UNROLL
        for (int i = 1; i < N; ++i)
            if (i <= j)
                dot = rn_add(dot, rn_mul(e[i], col[j * (j + 1) / 2 + i]));
        MIMODET_UNROLL
        for (int i = 0; i < N; ++i)
            if (i <= j)
                e[i] = up ? rn_sub(e[i], col[j * (j + 1) / 2 + i])
                          : rn_add(e[i], col[j * (j + 1) / 2 + i]);
        // |e -+ c|^2 = |e|^2 -+ 2 e.c + |c|^2
        const double twice = rn_add(dot, dot);
        metric = rn_add(metric, up ? rn_sub(norm2[j], twice) : rn_add(norm2[j], twice));
        const bool below = metric < least;
        const double other = below ? least : metric; // the larger of the two
        second = other < second ? other : second;
        least = below ? metric : least;
        at_least = below ? g : at_least;
    }
    if (!(second > rn_add(least, rn_mul(psd_se_enumerate_guard, size))))
        return false;
    MIMODET_UNROLL
    for (int k = 0; k < N; ++k)
        best[k] = static_cast<uint8_t>(psd_se_gray_level(at_least, k, log2P));
    return true;
}

//! psd_se_enumerate for N and P known at run time (psd_se_enumerates(N, P, N)).
MIMODET_HD inline bool psd_se_enumerate_n(const psd_se_problem& pb, uint8_t* best)
{
    switch (pb.P * 16 + pb.N) {
    case 2 * 16 + 1:
        return psd_se_enumerate<1, 2>(pb, best);
    case 2 * 16 + 2:
        return psd_se_enumerate<2, 2>(pb, best);
    case 2 * 16 + 3:
        return psd_se_enumerate<3, 2>(pb, best);
    case 2 * 16 + 4:
        return psd_se_enumerate<4, 2>(pb, best);
    case 2 * 16 + 5:
        return psd_se_enumerate<5, 2>(pb, best);
    case 2 * 16 + 6:
        return psd_se_enumerate<6, 2>(pb, best);
    case 2 * 16 + 7:
        return psd_se_enumerate<7, 2>(pb, best);
    case 2 * 16 + 8:
        return psd_se_enumerate<8, 2>(pb, best);
    case 4 * 16 + 1:
        return psd_se_enumerate<1, 4>(pb, best);
    case 4 * 16 + 2:
        return psd_se_enumerate<2, 4>(pb, best);
    case 4 * 16 + 3:
        return psd_se_enumerate<3, 4>(pb, best);
    case 4 * 16 + 4:
        return psd_se_enumerate<4, 4>(pb, best);
    case 8 * 16 + 1:
        return psd_se_enumerate<1, 8>(pb, best);
    case 8 * 16 + 2:
        return psd_se_enumerate<2, 8>(pb, best);
    default:
        return false; // not psd_se_enumerates: the search decides
    }
}

//! A vector psd_se_enumerate decided: every inner node expanded, every leaf evaluated.
MIMODET_HD constexpr uint32_t psd_se_enumerated_expanded(int N, int P)
{
    return (psd_se_leaves(N, P) - 1u) / static_cast<uint32_t>(P - 1);
}
MIMODET_HD constexpr uint32_t psd_se_enumerated_evaluated(int N, int P)
{
    return psd_se_leaves(N, P);
}

//! Whether a stopped search left candidates inside the sphere (the truncated flag).
template <int NMAX, class Rows>
MIMODET_HD inline bool psd_se_work_left(const psd_se_problem& pb,
                                        const psd_se_state<NMAX, Rows>& st)
{
    for (int j = 0; j < NMAX; ++j) {
        if (j < st.k || j >= st.top)
            continue;
        int8_t lo = st.lo[j], hi = st.hi[j];
        int idx = 0;
        double m = 0.0;
        if (psd_se_take(pb, st.pos[j], st.b[j], st.pm[j], pb.r(j, j), lo, hi, idx, m) &&
            psd_se_inside(st, m))
            return true;
    }
    return false;
}

/*!
 * Position of the current leaf in the search's visiting order, as an integer: the rank
 * of the path's child among its siblings' sorted order at each row, row N-1 most
 * significant (log2P bits a row). Rows top..N-1 come from prefix_key (the subtree
 * root's ranks, the same packing). The sequential search's decision is the leaf of least
 * metric, the least key among equal metrics (the first one it visits).
 */
template <int NMAX, class Rows>
MIMODET_HD inline uint64_t
psd_se_leaf_key(const psd_se_state<NMAX, Rows>& st, int log2P, uint64_t prefix_key)
{
    uint64_t key = prefix_key;
    for (int j = 0; j < NMAX; ++j) {
        if (j >= st.top)
            continue;
        // The path's child at row j is the last one taken there.
        const uint64_t rank = static_cast<uint64_t>(st.hi[j] - st.lo[j] - 2);
        key |= rank << (log2P * j);
    }
    return key;
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CORE_PSD_SE_H */
