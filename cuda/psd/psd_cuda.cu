/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Longer than the project's 800-line guide: Algorithm 3's traversal (psd_search), its two
// device executors (the block and warp kernels) and the host executor that replays it in
// the tests are one template family, instantiated in this translation unit; the
// preprocessing section (the QR kernels) is the part that could move to a file of its own.
//
// CUDA parallel sphere detector (PSD paper, Algorithm 3 and Sections 5-6): exact ML,
// hard bits, the CPU PSD's algorithm (lib/detect/psd/psd.cc) and parameters
// (psd_params.h).
//
// Preprocessing (one lane per real column of a channel matrix, N lanes per matrix; one
// thread per matrix for shapes without a compile-time kernel, with the same results bit
// for bit): the real-valued model (Eq. 3) and its QR in double, R with a positive
// diagonal. sorted_qr = 0: classical Gram-Schmidt with one re-orthogonalisation pass
// (CGS2), which gives the CPU's Householder R to working precision (R with positive
// diagonal is unique); sorted_qr = 1: qr.cc's qr_sorted (modified Gram-Schmidt picking
// the least residual norm) step for step.
//
// Block variant (psd_detect_kernel): one block of tt threads per symbol vector at a
// time. Blocks fetch vectors from a global counter (dynamic work distribution, paper
// Fig. 6), so a vector with a long search does not hold up the vectors behind it. The block runs Algorithm 3's
// traversal; every Expand-and-Evaluate (Fig. 3) is three stages separated by barriers:
//   1. preparatory: per parent, its path metric and z_r minus the interference of its
//      symbols on the new rows (the parents' symbols are not stored but recovered from
//      the (parent, combination) index chain of the level buffers);
//   2. evaluate: entry e = (parent p, combination c) with c's base-|Omega| digits the new
//      rows (top row most significant, the CPU's enumeration order), metric from the
//      stored parent metric; the thread/entry mapping plays the role of vt/vb (Eqs. 9-10);
//   3. intermediate levels: CUB BlockRadixSort of (metric, entry), stable, into the
//      level's buffer; leaf level: CUB BlockReduce arg-min (lowest entry on ties, as the
//      CPU's scan) and the radius update d^2.
// The control state (level, offsets, counts, d^2) is uniform: every thread keeps the
// same copy and decides from the same shared values, so no extra barriers are needed.
//
// tt (threads per block) = the largest eval_x rounded up to a power of two, 32..1024;
// the block sort holds tt * ipt items (ipt in 1, 2, 4, 8, 12), so an intermediate level
// of up to 12288 entries fits. Shared memory: the sorted metrics (double) and entry
// indices (uint16) of the intermediate levels, R, z, the per-parent interference terms,
// plus CUB's temporary storage (static); the leaf level needs no buffer (its metrics go
// straight into the arg-min).
//
// Warp variant (psd_warp_kernel, used when every level has at most
// psd_cuda_warp_max_sorted = 512 entries and the slices fit): the same traversal
// (psd_search) with a warp as executor. Each warp of a block (4 per block) owns one
// vector at a time (lane 0 takes it from the counter, __shfl_sync broadcasts it) and its
// own slice of the dynamic shared memory (the same layout as a block's, L.bytes per
// warp); stages are separated by __syncwarp only. Sorted levels of up to 128 entries:
// rank sort (each lane ranks its metrics against all of the level's, by (metric, entry),
// and scatters them); up to 512: cub::WarpMergeSort::StableSort. Both produce the stable
// order of the block's radix sort, so results and node counts are the block's. The leaf
// minimum: strided scan per lane, shuffle butterfly with psd_min_op (lowest entry on ties).
//
// Everything is double precision with explicitly rounded operations (no FMA
// contraction) in the CPU's order, so the metrics equal the CPU's up to the QR's
// rounding: float pruning could lose the ML vector where two metrics differ by more
// than the test's tolerance. The traversal is written against an "executor" (block on
// the device, a plain loop on the host), so its control flow can be run on the host.
//
// Deadline (cfg.psd_deadline_us > 0): a budget per detect call on the GPU's
// %globaltimer. The call's start is the first detection block's (warp's) start: the
// host zeroes a device word before the call's first chunk (and makes the other streams'
// detection kernels wait for that), and every block or warp of the call does
// atomicCAS(word, 0, now) once: the first one sets the start, the others read it. So
// all chunks of a call share one deadline (start + budget), whatever stream runs them;
// the copies and the QR before the first block are outside the budget. The search
// (psd_search) reads the timer at the start of each vector and every k_psd_check_evals
// path metrics of its block/warp (one thread reads, the decision is made uniform with
// __syncthreads_or / __any_sync); once it has seen the deadline pass, the block (warp)
// reads it no more. A vector whose search is running then stops there: with an
// incumbent leaf it outputs that leaf, flagged (vector_stats::truncated) only when
// candidates inside the sphere were left, so unflagged vectors are exact ML; without a
// leaf yet it takes the fallback. Every vector the block (warp) takes after that skips
// the search and takes the fallback: the SIC (Babai) point of its QR and ordering,
// psd_sic of lib/detect/psd/psd_common.h (the CPU PSD's code), always flagged, with
// expanded = 0 and evaluated = N (one interrupted before its first leaf keeps its
// counters and adds N evaluated); from then on each thread (lane) of the block (warp)
// takes a vector of its own (psd_fallback_rest), so the call's remaining vectors are done
// in parallel. Without a deadline (budget 0) the timer is never read and the traversal is
// unchanged, bit for bit.
//
// Node budget (L.node_budget, psd_node_budget): checked where the deadline is, against
// the vector's own path-metric count; a vector that reaches it ends as at the deadline
// (the next vector searches as usual). The CPU's generic search checks at the same points,
// so both backends stop a vector at the same count with the same flagged decision.

#include "cuda/common/batch_detector.h"
#include "cuda/common/dependent_launch.cuh"
#include "cuda/common/device_math.cuh"
#include "cuda/psd/psd_cuda.h"
#include "cuda/psd/psd_device.cuh"
#include "detect/backend.h"
#include "detect/psd/psd_common.h"
#include "detect/psd/psd_params.h"
#include "detect/psd/psd_se.h"
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_merge_sort.cuh>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr int k_psd_max_levels = k_psd_max_n + 1; // lvl_0..lvl_nr
// Matrices per preprocessing block (one thread each): small blocks spread a slot's
// 1200 matrices over ~38 SMs, as fsd and mtt do (ncu, H100: 64.5 us in blocks of 128).
constexpr int k_psd_prep_threads = 32;
constexpr double k_psd_inf = HUGE_VAL;            // host and device (k_psd_inf is not)
constexpr int k_psd_warp = 32;                    // lanes of the warp variant
constexpr int k_psd_warps_per_block = 4;          // most warps (vectors) per warp-variant block
// Deadline: path metrics between two timer reads of one block/warp. A read costs one
// barrier (block) or vote (warp), an Expand and Evaluate of that many metrics several
// of them, so the check costs a few percent at most.
constexpr uint32_t k_psd_check_evals = 512;
// Warp variant: rank sort up to 32 * this many entries, cub::WarpMergeSort above. A
// compile-time knob so the two can be timed against each other (docs/PERFORMANCE.md).
#ifndef MIMODET_PSD_RANK_SORT_MAX_IPT
#define MIMODET_PSD_RANK_SORT_MAX_IPT 4
#endif
constexpr int k_psd_rank_sort_max_ipt = MIMODET_PSD_RANK_SORT_MAX_IPT;

// rn_mul / rn_add / rn_sub / rn_div (explicitly rounded, lib/detect/rounded_math.h) and
// psd_sic (the deadline fallback) come from lib/detect/psd/psd_common.h, shared with the
// CPU PSD.

// ---------------------------------------------------------------- parameters

/*!
 * Everything the detection kernel needs to know about the parameter set, computed once
 * on the host. Levels are indexed as in the paper: x = 1..nr are the evaluated levels
 * (x = 0 the root); the rows (0-based) appended by level x are lvl_x - 1 .. lvl_(x-1) - 2.
 */
struct psd_layout {
    int nt, nrx, N, P, log2P, q, nr;
    int lvl[k_psd_max_levels];
    int exp[k_psd_max_levels];    //!< exp_x, x = 0..nr-1
    int eval[k_psd_max_levels];   //!< eval_x, x = 1..nr
    int combos[k_psd_max_levels]; //!< |Omega|^(lvl_(x-1) - lvl_x), x = 1..nr
    // Byte offsets into the dynamic shared memory; CUB's temporary storage first (it
    // exceeds the 48 KB of static shared memory for the large sorts).
    int temp_bytes;
    int off_R, off_z, off_value, off_base, off_pm, off_best;
    int off_metric[k_psd_max_levels], off_entry[k_psd_max_levels];
    int bytes;
    double value[8]; //!< PAM levels, increasing
    int label[8];    //!< PAM label of value[j]
    uint32_t node_budget; //!< path metrics per vector (psd_node_budget); 0: none
};

//! Pointers into one block's (warp variant: one warp's) shared memory, or the host
//! simulation's buffer. The level buffers are found through the layout's offsets (kernel
//! parameter space, indexed by the uniform level), not a pointer array: that array would
//! live in local memory.
struct psd_smem {
    double* R;     //!< N x N, row-major
    double* z;     //!< N
    double* value; //!< P
    double* base;  //!< [parent][new row]: z_r minus the parent's interference
    double* pm;    //!< [parent]: its path metric
    uint8_t* best; //!< N: best vector so far, sorted-PAM index per row
    unsigned char* mem;     //!< start of the buffer
    const int* off_metric; //!< the layout's off_metric
    const int* off_entry;  //!< the layout's off_entry

    //! Sorted metrics of intermediate level x.
    MIMODET_HD double* metric(int x) const
    {
        return reinterpret_cast<double*>(mem + off_metric[x]);
    }
    //! Entry index of each sorted position of level x.
    MIMODET_HD uint16_t* entry(int x) const
    {
        return reinterpret_cast<uint16_t*>(mem + off_entry[x]);
    }
};

MIMODET_HD inline psd_smem psd_bind(const psd_layout& L, unsigned char* base)
{
    psd_smem S;
    S.R = reinterpret_cast<double*>(base + L.off_R);
    S.z = reinterpret_cast<double*>(base + L.off_z);
    S.value = reinterpret_cast<double*>(base + L.off_value);
    S.base = reinterpret_cast<double*>(base + L.off_base);
    S.pm = reinterpret_cast<double*>(base + L.off_pm);
    S.best = base + L.off_best;
    S.mem = base;
    S.off_metric = L.off_metric;
    S.off_entry = L.off_entry;
    return S;
}

struct psd_candidate {
    double metric;
    int entry;
};

//! Metric order of the warp merge sort (stable: ties keep the entry order).
struct psd_less {
    MIMODET_HD bool operator()(double a, double b) const { return a < b; }
};

//! Least metric, then lowest entry: the CPU's first minimum of its leaf scan.
struct psd_min_op {
    MIMODET_HD psd_candidate operator()(const psd_candidate& a, const psd_candidate& b) const
    {
        return (b.metric < a.metric || (b.metric == a.metric && b.entry < a.entry)) ? b : a;
    }
};

//! Traversal state; every thread of a block holds the same copy.
struct psd_state {
    int off[k_psd_max_levels];   //!< processing offset in the sorted buffer of level x
    int count[k_psd_max_levels]; //!< entries of the last fill of level x
    int from[k_psd_max_levels];  //!< sorted position (level x-1) of that fill's 1st parent
    double d2;                   //!< squared sphere radius
    uint32_t expanded, evaluated;
    uint32_t truncated; //!< 1: stopped by the deadline with candidates left
};

//! Deadline state of one block (warp variant: one warp), uniform like psd_state; kept
//! across the vectors the block processes in one launch.
struct psd_deadline {
    unsigned long long at = 0; //!< %globaltimer deadline; 0: none (exact search)
    bool expired = false;      //!< the deadline has been seen to pass
    uint64_t work = 0;         //!< path metrics of the block's finished vectors
    uint64_t next_check = 0;   //!< read the timer when the block's metrics reach this
};

// ---------------------------------------------------------------- block algorithm

/*!
 * Symbols of entry e of level x and of all its ancestors (rows lvl_x - 1 .. N-1) into
 * sym. Entry e = parent * combos_x + combination; the parent is the partial vector at
 * sorted position from_x + parent of level x-1, whose buffer is unchanged while level x
 * is alive.
 */
MIMODET_HD inline void
psd_path(const psd_layout& L, const psd_smem& S, const int* from, int x, int e, uint8_t* sym)
{
    for (;;) {
        const int combos = L.combos[x];
        const int p = e / combos;
        int code = e - p * combos;
        for (int r = L.lvl[x] - 1; r <= L.lvl[x - 1] - 2; ++r) {
            sym[r] = static_cast<uint8_t>(code & (L.P - 1));
            code >>= L.log2P;
        }
        if (x == 1)
            return;
        e = S.entry(x - 1)[from[x] + p];
        --x;
    }
}

//! Stage 1 (preparatory block): parent p's metric and its interference on the new rows.
struct psd_prep_fn {
    const psd_layout& L;
    const psd_smem& S;
    const int* from;
    int x, first;

    MIMODET_HD void operator()(int p) const
    {
        const int N = L.N;
        const int top = L.lvl[x - 1] - 2, bottom = L.lvl[x] - 1;
        const int depth = top - bottom + 1;
        uint8_t sym[k_psd_max_n];
        double pm = 0.0;
        if (x > 1) {
            const int pos = first + p;
            pm = S.metric(x - 1)[pos];
            psd_path(L, S, from, x - 1, S.entry(x - 1)[pos], sym);
        }
        for (int r = bottom; r <= top; ++r) {
            double b = S.z[r];
            for (int k = top + 1; k < N; ++k)
                b = rn_sub(b, rn_mul(S.R[r * N + k], S.value[sym[k]]));
            S.base[p * depth + (r - bottom)] = b;
        }
        S.pm[p] = pm;
    }
};

//! Stage 2: path metric of entry e of level x (the CPU's enumerate, same operations).
struct psd_metric_fn {
    const psd_layout& L;
    const psd_smem& S;
    int x;

    MIMODET_HD double operator()(int e) const
    {
        const int N = L.N;
        const int top = L.lvl[x - 1] - 2, bottom = L.lvl[x] - 1;
        const int depth = top - bottom + 1;
        const int combos = L.combos[x];
        const int p = e / combos;
        int code = e - p * combos;
        double v[k_psd_max_n];
        for (int r = bottom; r <= top; ++r) {
            v[r] = S.value[code & (L.P - 1)];
            code >>= L.log2P;
        }
        const double* base = S.base + p * depth;
        double m = S.pm[p];
        for (int r = top; r >= bottom; --r) {
            double b = base[r - bottom];
            for (int k = r + 1; k <= top; ++k)
                b = rn_sub(b, rn_mul(S.R[r * N + k], v[k]));
            const double d = rn_sub(b, rn_mul(S.R[r * N + r], v[r]));
            m = rn_add(m, rn_mul(d, d));
        }
        return m;
    }
};

//! Radius update: the leaf entry's full vector becomes the best one (one thread).
struct psd_best_fn {
    const psd_layout& L;
    const psd_smem& S;
    const int* from;
    int entry;

    MIMODET_HD void operator()() const { psd_path(L, S, from, L.nr, entry, S.best); }
};

/*!
 * Expand and Evaluate (Fig. 3) of level x from the n parents at sorted positions
 * first.. of level x-1 (the root for x = 1): sorts level x, or on the leaf level finds
 * its minimum and updates d^2. Ends with a barrier, so its buffers are readable by all.
 */
template <class Exec>
MIMODET_HD void psd_expand_evaluate(
    Exec& ex, const psd_layout& L, const psd_smem& S, psd_state& T, int x, int first, int n)
{
    T.from[x] = first;
    T.count[x] = n * L.combos[x];
    T.expanded += n;
    T.evaluated += static_cast<uint32_t>(T.count[x]);
    const psd_prep_fn prep{ L, S, T.from, x, first };
    ex.for_each(n, prep);
    ex.sync();
    const psd_metric_fn metric{ L, S, x };
    if (x == L.nr) {
        const psd_candidate c = ex.argmin(T.count[x], metric);
        if (c.metric < T.d2) {
            T.d2 = c.metric;
            const psd_best_fn best{ L, S, T.from, c.entry };
            ex.single(best);
        }
    } else {
        ex.sort(T.count[x], metric, S.metric(x), S.entry(x));
    }
    ex.sync();
}

//! The deadline fallback (one thread): the SIC point of the vector into S.best.
struct psd_sic_fn {
    const psd_layout& L;
    const psd_smem& S;

    MIMODET_HD void operator()() const { psd_sic(S.R, S.z, S.value, L.N, L.P, S.best); }
};

//! Deadline fallback of the vector in S (the same in every thread): the SIC point into
//! S.best (one thread, then a barrier), flagged, N more path metrics counted.
template <class Exec>
MIMODET_HD void psd_fallback(Exec& ex, const psd_layout& L, const psd_smem& S, psd_state& T)
{
    const psd_sic_fn sic{ L, S };
    ex.single(sic);
    ex.sync();
    T.evaluated += static_cast<uint32_t>(L.N);
    T.truncated = 1;
}

//! Has the deadline passed (uniform)? Reads the timer when the block's metrics, the
//! current vector's included, have reached D.next_check, then never again once passed.
template <class Exec>
MIMODET_HD bool psd_out_of_time(Exec& ex, psd_deadline& D, uint32_t evaluated)
{
    if (D.at == 0)
        return false;
    if (!D.expired && D.work + evaluated >= D.next_check) {
        D.next_check = D.work + evaluated + k_psd_check_evals;
        D.expired = ex.time_is_up(D.at);
    }
    return D.expired;
}

/*!
 * Algorithm 3 for one vector (R, z and the PAM values already in shared memory): the
 * CPU's search_generic, the same visiting order, radius updates and counters. Returns
 * with S.best holding the ML vector (after a barrier); with a deadline, see the top of
 * the file.
 */
template <class Exec>
MIMODET_HD void
psd_search(Exec& ex, const psd_layout& L, const psd_smem& S, psd_state& T, psd_deadline& D)
{
    T.d2 = k_psd_inf;
    T.expanded = 0;
    T.evaluated = 0;
    T.truncated = 0;
    if (psd_out_of_time(ex, D, 0)) {
        psd_fallback(ex, L, S, T); // started after the deadline: no search
        return;
    }
    psd_expand_evaluate(ex, L, S, T, 1, 0, 1);
    if (L.nr == 1)
        return;
    for (int x = 0; x < k_psd_max_levels; ++x)
        T.off[x] = 0;
    // i is the level to fill next, level i-1 its source.
    int i = 2;
    while (i > 1) {
        // Node budget and deadline; every condition is uniform. The budget ends this
        // vector's search only, as on the CPU (the same counts, the same check points).
        const bool over = L.node_budget != 0 && T.evaluated >= L.node_budget;
        if (over || psd_out_of_time(ex, D, T.evaluated)) {
            if (!(T.d2 < k_psd_inf)) {
                psd_fallback(ex, L, S, T); // no leaf yet
                return;
            }
            // Flag only if the traversal would have gone on: a candidate inside the
            // sphere is left in an active source level 1..i-1 (the buffers were made
            // readable by the last Expand and Evaluate's barrier).
            for (int x = 1; x < i; ++x)
                if (T.off[x] < T.count[x] && S.metric(x)[T.off[x]] < T.d2)
                    T.truncated = 1;
            return;
        }
        const int src = i - 1;
        if (T.off[src] < T.count[src] && S.metric(src)[T.off[src]] < T.d2) {
            const int left = T.count[src] - T.off[src];
            const int n = L.exp[i - 1] < left ? L.exp[i - 1] : left;
            psd_expand_evaluate(ex, L, S, T, i, T.off[src], n);
            T.off[src] += n;
            if (i < L.nr) {
                T.off[i] = 0;
                ++i;
            }
        } else {
            // Exhausted, or the next sorted candidate is outside the sphere: so are the
            // rest of this buffer.
            T.off[src] = 0;
            --i;
        }
    }
}

//! Hard bits of the best vector (psd_device.cuh's psd_bits_of, the layout's labels).
MIMODET_HD inline void
psd_write_bits(const psd_layout& L, const uint8_t* best, const uint8_t* perm, uint8_t* out)
{
    psd_bits_of(L.N, L.nt, L.q, L.label, best, perm, out);
}

// ---------------------------------------------------------------- preprocessing

/*!
 * Real-valued model of hm (row-major n_rx x n_tx) and its QR. Outputs Ro (N x N,
 * row-major, zeros below the diagonal), Qto (N x 2 n_rx, row k = column k of Q) and pm
 * (N entries: column k of Q R is column pm[k] of H_r).
 *
 * NT_C / NRX_C: the antenna counts as compile-time constants (0: nt / nrx at run time).
 * With constants every loop unrolls and every array index is static, so q and R live in
 * registers instead of a 4 KB local-memory frame (ptxas); the pivot swap is written as
 * a loop over the candidates for that reason. The arithmetic, and so the result, is the
 * same either way.
 */
template <int NT_C = 0, int NRX_C = 0>
MIMODET_HD_INLINE void psd_preprocess_one(const float2* hm,
                                          int nrx_rt,
                                          int nt_rt,
                                          bool sorted,
                                          double* Ro,
                                          double* Qto,
                                          uint8_t* pm,
                                          double* wo,
                                          double inv_scale)
{
    constexpr int NMAX = NT_C ? 2 * NT_C : k_psd_max_n;  // array bounds
    constexpr int MMAX = NRX_C ? 2 * NRX_C : k_psd_max_n;
    const int nt = NT_C ? NT_C : nt_rt, nrx = NRX_C ? NRX_C : nrx_rt;
    const int N = 2 * nt, M = 2 * nrx;
    // q[c][r]: column c of H_r, then of Q. H_r = [Re H, -Im H; Im H, Re H].
    double q[NMAX][MMAX];
    double R[NMAX][NMAX];
    int perm[NMAX];
    MIMODET_UNROLL
    for (int r = 0; r < nrx; ++r)
        MIMODET_UNROLL
        for (int c = 0; c < nt; ++c) {
            const float2 h = hm[r * nt + c];
            q[c][r] = h.x;
            q[c][nrx + r] = h.y;
            q[nt + c][r] = -static_cast<double>(h.y);
            q[nt + c][nrx + r] = h.x;
        }
    MIMODET_UNROLL
    for (int i = 0; i < N; ++i) {
        perm[i] = i;
        MIMODET_UNROLL
        for (int j = 0; j < N; ++j)
            R[i][j] = 0.0;
    }
    if (sorted) {
        // qr.cc qr_sorted: modified Gram-Schmidt, least residual norm first.
        double norm2[NMAX];
        MIMODET_UNROLL
        for (int k = 0; k < N; ++k) {
            double s = 0.0;
            MIMODET_UNROLL
            for (int r = 0; r < M; ++r)
                s = rn_add(s, rn_mul(q[k][r], q[k][r]));
            norm2[k] = s;
        }
        MIMODET_UNROLL
        for (int i = 0; i < N; ++i) {
            int k = i;
            MIMODET_UNROLL
            for (int j = i + 1; j < N; ++j)
                if (norm2[j] < norm2[k])
                    k = j;
            MIMODET_UNROLL
            for (int j = i + 1; j < N; ++j) {
                if (j != k)
                    continue;
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r) {
                    const double t = q[i][r];
                    q[i][r] = q[j][r];
                    q[j][r] = t;
                }
                MIMODET_UNROLL
                for (int r = 0; r < N; ++r) {
                    const double t = R[r][i];
                    R[r][i] = R[r][j];
                    R[r][j] = t;
                }
                const double t = norm2[i];
                norm2[i] = norm2[j];
                norm2[j] = t;
                const int p = perm[i];
                perm[i] = perm[j];
                perm[j] = p;
            }
            const double nrm = sqrt(fmax(norm2[i], 0.0));
            R[i][i] = nrm;
            MIMODET_UNROLL
            for (int r = 0; r < M; ++r)
                q[i][r] = nrm > 0.0 ? q[i][r] / nrm : 0.0;
            MIMODET_UNROLL
            for (int l = i + 1; l < N; ++l) {
                double d = 0.0;
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r)
                    d = rn_add(d, rn_mul(q[i][r], q[l][r]));
                R[i][l] = d;
                double s = 0.0;
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r) {
                    q[l][r] = rn_sub(q[l][r], rn_mul(d, q[i][r]));
                    s = rn_add(s, rn_mul(q[l][r], q[l][r]));
                }
                norm2[l] = s;
            }
        }
    } else {
        // CGS2: orthogonal to working precision like Householder; the positive diagonal
        // makes R the CPU's (unique) R up to rounding.
        MIMODET_UNROLL
        for (int i = 0; i < N; ++i) {
            MIMODET_UNROLL
            for (int pass = 0; pass < 2; ++pass)
                MIMODET_UNROLL
                for (int j = 0; j < i; ++j) {
                    double c = 0.0;
                    MIMODET_UNROLL
                    for (int r = 0; r < M; ++r)
                        c = rn_add(c, rn_mul(q[j][r], q[i][r]));
                    R[j][i] = rn_add(R[j][i], c);
                    MIMODET_UNROLL
                    for (int r = 0; r < M; ++r)
                        q[i][r] = rn_sub(q[i][r], rn_mul(c, q[j][r]));
                }
            double s = 0.0;
            MIMODET_UNROLL
            for (int r = 0; r < M; ++r)
                s = rn_add(s, rn_mul(q[i][r], q[i][r]));
            const double nrm = sqrt(s);
            R[i][i] = nrm;
            // Rank-deficient: R(i,i) = 0 and the column carries nothing.
            MIMODET_UNROLL
            for (int r = 0; r < M; ++r)
                q[i][r] = nrm > 0.0 ? q[i][r] / nrm : 0.0;
        }
    }
    MIMODET_UNROLL
    for (int i = 0; i < N; ++i) {
        MIMODET_UNROLL
        for (int j = 0; j < N; ++j)
            Ro[i * N + j] = R[i][j];
        MIMODET_UNROLL
        for (int r = 0; r < M; ++r)
            Qto[i * M + r] = q[i][r];
        pm[i] = static_cast<uint8_t>(perm[i]);
        if (wo)
            wo[i] = psd_se_weight(R[i][i], inv_scale);
    }
}

//! One thread per matrix; NT_C / NRX_C as in psd_preprocess_one.
template <int NT_C, int NRX_C>
__global__ void __launch_bounds__(k_psd_prep_threads)
    psd_preprocess_kernel(const float2* __restrict__ H,
                          int n_mat,
                          int nrx,
                          int nt,
                          bool sorted,
                          double* __restrict__ R,
                          double* __restrict__ Qt,
                          uint8_t* __restrict__ perm,
                          double* __restrict__ w,
                          double inv_scale)
{
    dependent_launch_allow(); // the depth-first search's kernels follow
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= n_mat)
        return;
    const size_t N = 2 * nt, M = 2 * nrx;
    psd_preprocess_one<NT_C, NRX_C>(H + static_cast<size_t>(m) * nrx * nt,
                                    nrx,
                                    nt,
                                    sorted,
                                    R + m * N * N,
                                    Qt + m * N * M,
                                    perm + m * k_psd_max_n,
                                    w ? w + m * N : nullptr,
                                    inv_scale);
}

//! Threads per block of the lane-parallel preprocessing (N lanes per matrix).
constexpr int k_psd_prep_lane_threads = 64;

//! Double shuffle within the warp (every lane takes part; src is a lane of the warp).
__device__ __forceinline__ double psd_shfl(double x, int src)
{
    return __shfl_sync(0xffffffffu, x, src);
}

//! One CGS2 update of column q against the finished column u, in psd_preprocess_one's
//! order: c = u . q (summed in row order), r += c, q -= c u.
template <int M>
__device__ __forceinline__ void psd_gs_update(const double (&u)[M], double (&q)[M], double& r)
{
    double c = 0.0;
    MIMODET_UNROLL
    for (int k = 0; k < M; ++k)
        c = rn_add(c, rn_mul(u[k], q[k]));
    r = rn_add(r, c);
    MIMODET_UNROLL
    for (int k = 0; k < M; ++k)
        q[k] = rn_sub(q[k], rn_mul(c, u[k]));
}

/*!
 * psd_preprocess_one with one lane per real column: N lanes per matrix (N = 4 or 8, so
 * 32 / N matrices per warp). Lane c holds column c of H_r (then of Q) and column c of R.
 * Every value is computed by the same operations in the same order as in
 * psd_preprocess_one, so the outputs are equal bit for bit (qa_gpu_psd checks it); what
 * changes is who computes what. Step i finishes column i (CGS2: its second pass over
 * the finished columns; sorted: the pivot and the swap), then every later column takes
 * its update from column i at once instead of one after another. One thread per matrix
 * takes about 37 us for a 20 MHz slot's 1200 4x4 matrices on an H100 (ncu), all
 * of it the latency of that chain in 38 warps.
 */
template <int NT_C, int NRX_C>
__global__ void __launch_bounds__(k_psd_prep_lane_threads)
    psd_preprocess_lanes_kernel(const float2* __restrict__ H,
                                int n_mat,
                                bool sorted,
                                double* __restrict__ Ro,
                                double* __restrict__ Qto,
                                uint8_t* __restrict__ pm,
                                double* __restrict__ wo,
                                double inv_scale)
{
    dependent_launch_allow(); // the depth-first search's kernels follow
    constexpr int nt = NT_C, nrx = NRX_C, N = 2 * nt, M = 2 * nrx;
    static_assert(N == 4 || N == 8, "lane groups of 4 or 8 lanes");
    const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int c = lane % N;    // this lane's column
    const int base = lane - c; // the group's first lane
    const size_t m = tid / N;
    // Lanes past the last matrix work on zeros (the shuffles need every lane) and write
    // nothing.
    const bool live = m < static_cast<size_t>(n_mat);
    double q[M];
    double Rc[N];
    int perm = c;
    {
        const float2* hm = H + m * nrx * nt;
        const int t = c % nt;
        MIMODET_UNROLL
        for (int r = 0; r < nrx; ++r) {
            const float2 h = live ? hm[r * nt + t] : make_float2(0.0f, 0.0f);
            // H_r = [Re H, -Im H; Im H, Re H], as psd_preprocess_one.
            q[r] = c < nt ? static_cast<double>(h.x) : -static_cast<double>(h.y);
            q[nrx + r] = c < nt ? static_cast<double>(h.y) : static_cast<double>(h.x);
        }
    }
    MIMODET_UNROLL
    for (int i = 0; i < N; ++i)
        Rc[i] = 0.0;
    if (sorted) {
        // qr.cc qr_sorted: modified Gram-Schmidt, least residual norm first.
        double norm2 = 0.0;
        MIMODET_UNROLL
        for (int r = 0; r < M; ++r)
            norm2 = rn_add(norm2, rn_mul(q[r], q[r]));
        MIMODET_UNROLL
        for (int i = 0; i < N; ++i) {
            // The pivot: the serial scan over columns i+1.. in every lane.
            double nk = psd_shfl(norm2, base + i);
            int k = i;
            MIMODET_UNROLL
            for (int j = i + 1; j < N; ++j) {
                const double nj = psd_shfl(norm2, base + j);
                if (nj < nk) {
                    nk = nj;
                    k = j;
                }
            }
            // Columns i and k swap lanes' contents (q, R's column, norm, permutation).
            if (__any_sync(0xffffffffu, k != i)) {
                const int src = base + (c == i ? k : (c == k ? i : c));
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r)
                    q[r] = psd_shfl(q[r], src);
                MIMODET_UNROLL
                for (int r = 0; r < N; ++r)
                    Rc[r] = psd_shfl(Rc[r], src);
                norm2 = psd_shfl(norm2, src);
                perm = __shfl_sync(0xffffffffu, perm, src);
            }
            const double nrm = sqrt(fmax(psd_shfl(norm2, base + i), 0.0));
            double qi[M];
            MIMODET_UNROLL
            for (int r = 0; r < M; ++r) {
                const double x = psd_shfl(q[r], base + i);
                qi[r] = nrm > 0.0 ? x / nrm : 0.0;
            }
            if (c == i) {
                Rc[i] = nrm;
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r)
                    q[r] = qi[r];
            } else if (c > i) {
                double d = 0.0;
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r)
                    d = rn_add(d, rn_mul(qi[r], q[r]));
                Rc[i] = d;
                double s = 0.0;
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r) {
                    q[r] = rn_sub(q[r], rn_mul(d, qi[r]));
                    s = rn_add(s, rn_mul(q[r], q[r]));
                }
                norm2 = s;
            }
        }
    } else {
        // CGS2, psd_preprocess_one's order per column: pass 0 over the finished columns
        // j < i is done at step j (below), pass 1 at step i.
        MIMODET_UNROLL
        for (int i = 0; i < N; ++i) {
            MIMODET_UNROLL
            for (int j = 0; j < i; ++j) {
                double qj[M];
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r)
                    qj[r] = psd_shfl(q[r], base + j);
                if (c == i)
                    psd_gs_update(qj, q, Rc[j]);
            }
            if (c == i) {
                double s = 0.0;
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r)
                    s = rn_add(s, rn_mul(q[r], q[r]));
                const double nrm = sqrt(s);
                Rc[i] = nrm;
                MIMODET_UNROLL
                for (int r = 0; r < M; ++r)
                    q[r] = nrm > 0.0 ? q[r] / nrm : 0.0;
            }
            double qi[M];
            MIMODET_UNROLL
            for (int r = 0; r < M; ++r)
                qi[r] = psd_shfl(q[r], base + i);
            if (c > i)
                psd_gs_update(qi, q, Rc[i]);
        }
    }
    if (!live)
        return;
    double diag = 0.0; // R(c, c), picked with constant indices (Rc stays in registers)
    MIMODET_UNROLL
    for (int i = 0; i < N; ++i) {
        Ro[m * N * N + i * N + c] = Rc[i];
        diag = i == c ? Rc[i] : diag;
    }
    MIMODET_UNROLL
    for (int r = 0; r < M; ++r)
        Qto[m * N * M + c * M + r] = q[r];
    pm[m * k_psd_max_n + c] = static_cast<uint8_t>(perm);
    if (wo)
        wo[m * N + c] = psd_se_weight(diag, inv_scale);
}

// ---------------------------------------------------------------- detection kernel

//! The block as executor of the traversal: stages spread over the tt threads.
template <int TT, int IPT>
struct psd_block_exec {
    using sort_t = cub::BlockRadixSort<double, TT, IPT, uint16_t>;
    using reduce_t = cub::BlockReduce<psd_candidate, TT>;
    union temp_t {
        typename sort_t::TempStorage sort;
        typename reduce_t::TempStorage reduce;
    };
    temp_t& temp;
    psd_candidate& leaf;

    MIMODET_HD void sync() const
    {
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
    }

    template <class F>
    MIMODET_HD void for_each(int n, const F& f) const
    {
#ifdef __CUDA_ARCH__
        for (int j = threadIdx.x; j < n; j += TT)
            f(j);
#endif
    }

    template <class F>
    MIMODET_HD void single(const F& f) const
    {
#ifdef __CUDA_ARCH__
        if (threadIdx.x == 0)
            f();
#endif
    }

    //! Deadline passed? Thread 0 reads the timer; the barrier-or gives every thread its
    //! answer, so the traversal stays uniform.
    MIMODET_HD bool time_is_up(unsigned long long at) const
    {
#ifdef __CUDA_ARCH__
        return __syncthreads_or(threadIdx.x == 0 && psd_globaltimer() >= at) != 0;
#else
        (void)at;
        return false;
#endif
    }

    //! Metrics of entries 0..count-1 sorted (stable) into metric / entry; padded with +inf.
    template <class F>
    MIMODET_HD void sort(int count, const F& f, double* metric, uint16_t* entry) const
    {
#ifdef __CUDA_ARCH__
        double keys[IPT];
        uint16_t vals[IPT];
#pragma unroll
        for (int k = 0; k < IPT; ++k) {
            const int e = threadIdx.x * IPT + k;
            keys[k] = e < count ? f(e) : k_psd_inf;
            vals[k] = static_cast<uint16_t>(e);
        }
        sort_t(temp.sort).Sort(keys, vals);
#pragma unroll
        for (int k = 0; k < IPT; ++k) {
            const int pos = threadIdx.x * IPT + k;
            if (pos < count) {
                metric[pos] = keys[k];
                entry[pos] = vals[k];
            }
        }
#endif
    }

    //! Least (metric, entry) over entries 0..count-1, the same in every thread.
    template <class F>
    MIMODET_HD psd_candidate argmin(int count, const F& f) const
    {
        psd_candidate best{ k_psd_inf, INT_MAX };
#ifdef __CUDA_ARCH__
        // Increasing e with strict "<": each thread keeps its first minimum.
        for (int e = threadIdx.x; e < count; e += TT) {
            const double m = f(e);
            if (m < best.metric)
                best = psd_candidate{ m, e };
        }
        best = reduce_t(temp.reduce).Reduce(best, psd_min_op());
        if (threadIdx.x == 0)
            leaf = best;
        __syncthreads();
        best = leaf;
#endif
        return best;
    }
};

//! After this block (warp) has seen the deadline pass, every vector it takes would get
//! psd_fallback without a search: its threads (lanes) then take the call's remaining
//! vectors one each, with no barrier, and write the same SIC point, bits and stats as
//! psd_fallback would (expanded 0, evaluated N, truncated). One thread per vector instead
//! of one vector per block keeps the deadline's tail short.
__device__ void psd_fallback_rest(const float2* __restrict__ y,
                                  const double* __restrict__ R,
                                  const double* __restrict__ Qt,
                                  const uint8_t* __restrict__ perm,
                                  const psd_layout& L,
                                  const double* value,
                                  int n_vec,
                                  const segment_map& map,
                                  unsigned int* __restrict__ counter,
                                  uint8_t* __restrict__ bits,
                                  vector_stats* __restrict__ stats)
{
    const int N = L.N, M = 2 * L.nrx, nb = L.nt * L.q;
    for (;;) {
        const int v = static_cast<int>(atomicAdd(counter, 1u));
        if (v >= n_vec)
            return;
        const size_t m = static_cast<size_t>(map.matrix_of(v));
        double z[k_psd_max_n];
        uint8_t best[k_psd_max_n];
        for (int k = 0; k < N; ++k)
            z[k] = psd_rotate(Qt + (m * N + k) * M, y + static_cast<size_t>(v) * L.nrx, L.nrx);
        psd_sic(R + m * N * N, z, value, N, L.P, best);
        psd_write_bits(L, best, perm + m * k_psd_max_n, bits + static_cast<size_t>(v) * nb);
        if (stats) {
            vector_stats st;
            st.expanded = 0;
            st.evaluated = static_cast<uint32_t>(N);
            st.truncated = 1;
            stats[v] = st;
        }
    }
}

template <int TT, int IPT>
__global__ void __launch_bounds__(TT)
    psd_detect_kernel(const float2* __restrict__ y,
                      const double* __restrict__ R,
                      const double* __restrict__ Qt,
                      const uint8_t* __restrict__ perm,
                      const __grid_constant__ psd_layout L,
                      int n_vec,
                      const __grid_constant__ segment_map map,
                      unsigned int* __restrict__ counter,
                      uint8_t* __restrict__ bits,
                      vector_stats* __restrict__ stats,
                      unsigned long long budget_ns,
                      unsigned long long* __restrict__ call_start)
{
    using exec_t = psd_block_exec<TT, IPT>;
    extern __shared__ __align__(16) unsigned char s_dyn[];
    __shared__ psd_candidate s_leaf;
    __shared__ int s_vec;

    // The host sized the temporary storage with its own sizeof; never run on a mismatch.
    if (sizeof(typename exec_t::temp_t) > static_cast<size_t>(L.temp_bytes))
        __trap();
    const psd_smem S = psd_bind(L, s_dyn);
    const exec_t ex{ *reinterpret_cast<typename exec_t::temp_t*>(s_dyn), s_leaf };
    const int N = L.N, M = 2 * L.nrx, nb = L.nt * L.q;
    for (int j = threadIdx.x; j < L.P; j += TT)
        S.value[j] = L.value[j];
    psd_deadline D;
    if (budget_ns != 0) {
        // The call's start: set by the first block of the call (the word was zeroed
        // before the call's first chunk), read by all others.
        __shared__ unsigned long long s_start;
        if (threadIdx.x == 0)
            s_start = psd_call_start(call_start);
        __syncthreads();
        D.at = s_start + budget_ns;
    }

    for (;;) {
        if (D.expired) { // uniform: the block's barriers end here
            psd_fallback_rest(y, R, Qt, perm, L, S.value, n_vec, map, counter, bits, stats);
            return;
        }
        // Dynamic work distribution: the next unprocessed vector of this launch.
        if (threadIdx.x == 0)
            s_vec = static_cast<int>(atomicAdd(counter, 1u));
        __syncthreads();
        const int v = s_vec;
        if (v >= n_vec)
            break;
        const size_t m = static_cast<size_t>(map.matrix_of(v));
        for (int j = threadIdx.x; j < N * N; j += TT)
            S.R[j] = R[m * N * N + j];
        for (int k = threadIdx.x; k < N; k += TT)
            S.z[k] = psd_rotate(Qt + (m * N + k) * M, y + static_cast<size_t>(v) * L.nrx, L.nrx);
        __syncthreads();

        psd_state T;
        psd_search(ex, L, S, T, D);
        D.work += T.evaluated;

        if (threadIdx.x == 0) {
            psd_write_bits(L, S.best, perm + m * k_psd_max_n, bits + static_cast<size_t>(v) * nb);
            if (stats) {
                vector_stats st;
                st.expanded = T.expanded;
                st.evaluated = T.evaluated;
                st.truncated = T.truncated;
                stats[v] = st;
            }
        }
        __syncthreads(); // s_vec, R and best are rewritten for the next vector
    }
}

using psd_detect_fn = void (*)(const float2*,
                               const double*,
                               const double*,
                               const uint8_t*,
                               const psd_layout,
                               int,
                               const segment_map,
                               unsigned int*,
                               uint8_t*,
                               vector_stats*,
                               unsigned long long,
                               unsigned long long*);

struct psd_kernel_choice {
    psd_detect_fn fn;
    int temp_bytes; //!< CUB temporary storage of that instantiation
};

template <int TT, int IPT>
psd_kernel_choice psd_choice()
{
    return { psd_detect_kernel<TT, IPT>,
             static_cast<int>(sizeof(typename psd_block_exec<TT, IPT>::temp_t)) };
}

//! The instantiated (tt, ipt) pairs; fn = nullptr for others.
psd_kernel_choice psd_pick_kernel(int tt, int ipt)
{
    if (ipt == 1) {
        switch (tt) {
        case 32:
            return psd_choice<32, 1>();
        case 64:
            return psd_choice<64, 1>();
        case 128:
            return psd_choice<128, 1>();
        case 256:
            return psd_choice<256, 1>();
        case 512:
            return psd_choice<512, 1>();
        case 1024:
            return psd_choice<1024, 1>();
        default:
            return { nullptr, 0 };
        }
    }
    if (tt != psd_cuda_max_threads)
        return { nullptr, 0 };
    switch (ipt) {
    case 2:
        return psd_choice<1024, 2>();
    case 4:
        return psd_choice<1024, 4>();
    case 8:
        return psd_choice<1024, 8>();
    case 12:
        return psd_choice<1024, 12>();
    default:
        return { nullptr, 0 };
    }
}

// ---------------------------------------------------------------- warp kernel

/*!
 * NaN metrics become +inf before sorting, so the sort keys are totally ordered. Neither
 * is ever expanded ("metric < d^2" is false for both, d^2 is never NaN) nor chosen as the
 * leaf minimum, so the traversal is the same as with the NaN kept.
 */
MIMODET_HD inline double psd_key(double m) { return m == m ? m : k_psd_inf; }

/*!
 * Ranks of the metrics m[0..n) (entries e[0..n)) among ms[0..count) (entry j at index j):
 * the number of entries before each in the stable sort by metric, i.e. by (metric,
 * entry). One pass over ms for all n, the loads shared.
 */
template <int n>
MIMODET_HD inline void
psd_rank(const double* ms, int count, const double (&m)[n], const int (&e)[n], int (&rank)[n])
{
#pragma unroll
    for (int k = 0; k < n; ++k)
        rank[k] = 0;
#pragma unroll 4
    for (int j = 0; j < count; ++j) {
        const double mj = ms[j];
#pragma unroll
        for (int k = 0; k < n; ++k)
            rank[k] += (mj < m[k]) | ((mj == m[k]) & (j < e[k]));
    }
}

/*!
 * One warp as executor of the traversal (the warp variant): the same psd_search as the
 * block, its stages spread over the 32 lanes, __syncwarp as the barrier. Sorted levels
 * hold up to 32 * IPT entries. IPT <= k_psd_rank_sort_max_ipt: rank sort (every lane
 * ranks its IPT metrics against all of the level's metrics, staged in shared memory,
 * and scatters them to their sorted positions: no sorting network, count broadcast
 * loads per lane); larger IPT: cub::WarpMergeSort (StableSort). Both give the stable
 * order by metric of the block's radix sort. The leaf minimum: a strided scan per lane
 * and a shuffle butterfly with psd_min_op.
 */
template <int IPT>
struct psd_warp_exec {
    static constexpr bool k_rank = IPT <= k_psd_rank_sort_max_ipt;
    using sort_t = cub::WarpMergeSort<double, IPT, k_psd_warp, uint16_t>;
    union temp_t {
        typename sort_t::TempStorage sort;
        double scratch[k_psd_warp * IPT]; //!< rank sort: the level's unsorted metrics
    };
    temp_t& temp;
    int lane;

    MIMODET_HD void sync() const
    {
#ifdef __CUDA_ARCH__
        __syncwarp();
#endif
    }

    template <class F>
    MIMODET_HD void for_each(int n, const F& f) const
    {
#ifdef __CUDA_ARCH__
        for (int j = lane; j < n; j += k_psd_warp)
            f(j);
#endif
    }

    template <class F>
    MIMODET_HD void single(const F& f) const
    {
#ifdef __CUDA_ARCH__
        if (lane == 0)
            f();
#endif
    }

    //! Deadline passed? Lane 0 reads the timer, the vote makes the answer the warp's.
    MIMODET_HD bool time_is_up(unsigned long long at) const
    {
#ifdef __CUDA_ARCH__
        return __any_sync(0xffffffffu, lane == 0 && psd_globaltimer() >= at) != 0;
#else
        (void)at;
        return false;
#endif
    }

    //! Metrics of entries 0..count-1 (count <= 32 * IPT) sorted (stable) into metric / entry.
    template <class F>
    MIMODET_HD void sort(int count, const F& f, double* metric, uint16_t* entry) const
    {
#ifdef __CUDA_ARCH__
        if constexpr (k_rank) {
            double m[IPT];
            int e[IPT], rank[IPT];
#pragma unroll
            for (int k = 0; k < IPT; ++k) {
                e[k] = lane + k * k_psd_warp; // striped: conflict-free stores
                m[k] = e[k] < count ? psd_key(f(e[k])) : k_psd_inf;
                if (e[k] < count)
                    temp.scratch[e[k]] = m[k];
            }
            __syncwarp();
            psd_rank(temp.scratch, count, m, e, rank);
#pragma unroll
            for (int k = 0; k < IPT; ++k)
                if (e[k] < count) {
                    metric[rank[k]] = m[k];
                    entry[rank[k]] = static_cast<uint16_t>(e[k]);
                }
        } else {
            double keys[IPT];
            uint16_t vals[IPT];
#pragma unroll
            for (int k = 0; k < IPT; ++k) {
                const int e = lane * IPT + k; // blocked: the input order is the entry order
                keys[k] = e < count ? psd_key(f(e)) : k_psd_inf;
                vals[k] = static_cast<uint16_t>(e);
            }
            sort_t(temp.sort).StableSort(keys, vals, psd_less());
#pragma unroll
            for (int k = 0; k < IPT; ++k) {
                const int pos = lane * IPT + k;
                if (pos < count) {
                    metric[pos] = keys[k];
                    entry[pos] = vals[k];
                }
            }
        }
#endif
    }

    //! Least (metric, entry) over entries 0..count-1 (any count), the same in every lane.
    template <class F>
    MIMODET_HD psd_candidate argmin(int count, const F& f) const
    {
        psd_candidate best{ k_psd_inf, INT_MAX };
#ifdef __CUDA_ARCH__
        for (int e = lane; e < count; e += k_psd_warp) {
            const double m = f(e);
            if (m < best.metric)
                best = psd_candidate{ m, e };
        }
#pragma unroll
        for (int o = k_psd_warp / 2; o > 0; o /= 2) {
            const psd_candidate other{ __shfl_xor_sync(0xffffffffu, best.metric, o),
                                       __shfl_xor_sync(0xffffffffu, best.entry, o) };
            best = psd_min_op()(best, other);
        }
#endif
        return best;
    }
};

/*!
 * Warp variant: each warp of the block (blockDim.x / 32 of them, up to
 * k_psd_warps_per_block) runs its own vectors, fetched by lane 0 from the global counter;
 * L.bytes is one warp's slice of the dynamic shared memory (its R, z, PAM values, level
 * buffers and sort storage). No block barrier anywhere.
 */
template <int IPT>
__global__ void __launch_bounds__(k_psd_warp* k_psd_warps_per_block)
    psd_warp_kernel(const float2* __restrict__ y,
                    const double* __restrict__ R,
                    const double* __restrict__ Qt,
                    const uint8_t* __restrict__ perm,
                    const __grid_constant__ psd_layout L,
                    int n_vec,
                    const __grid_constant__ segment_map map,
                    unsigned int* __restrict__ counter,
                    uint8_t* __restrict__ bits,
                    vector_stats* __restrict__ stats,
                    unsigned long long budget_ns,
                    unsigned long long* __restrict__ call_start)
{
    using exec_t = psd_warp_exec<IPT>;
    extern __shared__ __align__(16) unsigned char s_dyn[];
    if (sizeof(typename exec_t::temp_t) > static_cast<size_t>(L.temp_bytes))
        __trap();
    const int lane = static_cast<int>(threadIdx.x) & (k_psd_warp - 1);
    unsigned char* slice = s_dyn + static_cast<size_t>(threadIdx.x / k_psd_warp) * L.bytes;
    const psd_smem S = psd_bind(L, slice);
    const exec_t ex{ *reinterpret_cast<typename exec_t::temp_t*>(slice), lane };
    const int N = L.N, M = 2 * L.nrx, nb = L.nt * L.q;
    for (int j = lane; j < L.P; j += k_psd_warp)
        S.value[j] = L.value[j];
    psd_deadline D;
    if (budget_ns != 0) {
        // The call's start, as in the block kernel: each warp claims or reads it.
        unsigned long long start = 0;
        if (lane == 0)
            start = psd_call_start(call_start);
        D.at = __shfl_sync(0xffffffffu, start, 0) + budget_ns;
    }

    for (;;) {
        if (D.expired) { // uniform in the warp
            psd_fallback_rest(y, R, Qt, perm, L, S.value, n_vec, map, counter, bits, stats);
            return;
        }
        unsigned int got = 0;
        if (lane == 0)
            got = atomicAdd(counter, 1u);
        const int v = static_cast<int>(__shfl_sync(0xffffffffu, got, 0));
        if (v >= n_vec)
            break;
        const size_t m = static_cast<size_t>(map.matrix_of(v));
        for (int j = lane; j < N * N; j += k_psd_warp)
            S.R[j] = R[m * N * N + j];
        for (int k = lane; k < N; k += k_psd_warp)
            S.z[k] = psd_rotate(Qt + (m * N + k) * M, y + static_cast<size_t>(v) * L.nrx, L.nrx);
        __syncwarp();

        psd_state T;
        psd_search(ex, L, S, T, D);
        D.work += T.evaluated;

        if (lane == 0) {
            psd_write_bits(L, S.best, perm + m * k_psd_max_n, bits + static_cast<size_t>(v) * nb);
            if (stats) {
                vector_stats st;
                st.expanded = T.expanded;
                st.evaluated = T.evaluated;
                st.truncated = T.truncated;
                stats[v] = st;
            }
        }
        __syncwarp(); // R, z and best are rewritten for the next vector
    }
}

template <int IPT>
psd_kernel_choice psd_warp_choice()
{
    return { psd_warp_kernel<IPT>,
             static_cast<int>(sizeof(typename psd_warp_exec<IPT>::temp_t)) };
}

//! The instantiated warp kernels (32 * ipt sorted entries); fn = nullptr for others.
psd_kernel_choice psd_pick_warp_kernel(int ipt)
{
    switch (ipt) {
    case 1:
        return psd_warp_choice<1>();
    case 2:
        return psd_warp_choice<2>();
    case 4:
        return psd_warp_choice<4>();
    case 8:
        return psd_warp_choice<8>();
    case 16:
        return psd_warp_choice<16>();
    default:
        return { nullptr, 0 };
    }
}

// ---------------------------------------------------------------- host side

int psd_align(int bytes) { return (bytes + 15) & ~15; }

enum class psd_variant { block, warp };

const char* psd_variant_name(psd_variant v) { return v == psd_variant::warp ? "warp" : "block"; }

//! Launch geometry of one variant for one parameter set.
struct psd_geometry {
    psd_variant variant = psd_variant::block;
    int ipt = 0;     //!< sorted items per thread
    int threads = 0; //!< threads per block
    int vectors = 1; //!< vectors a block works on at once (warps per block for the warp variant)
    int smem = 0;    //!< dynamic shared memory per block
    psd_detect_fn fn = nullptr;
};

/*!
 * Kernel geometry of variant v for (cfg, p): ipt, threads, the shared-memory layout
 * (L.bytes: per block for the block variant, per warp for the warp variant). Returns an
 * empty string, or why the variant cannot (forced = false: should not) run these
 * parameters. The warp variant takes sorted levels of up to psd_cuda_warp_max_sorted
 * entries; unless forced, also only leaf levels of up to that size (larger leaves go to
 * the block, whose threads share the scan).
 */
std::string psd_plan(const detector_config& cfg,
                     const psd_params& p,
                     psd_variant v,
                     bool forced,
                     psd_layout& L,
                     psd_geometry& g)
{
    const constellation& c = constellation::get(cfg.mod);
    L = psd_layout{};
    g = psd_geometry{};
    g.variant = v;
    L.nt = cfg.n_tx;
    L.nrx = cfg.n_rx;
    L.N = 2 * cfg.n_tx;
    L.P = c.pam_order();
    L.log2P = c.bits_per_symbol() / 2;
    L.q = c.bits_per_symbol();
    L.nr = static_cast<int>(p.lvl.size()) - 1;
    if (cfg.n_tx < 1 || cfg.n_tx > k_max_ant || cfg.n_rx < 1 || cfg.n_rx > k_max_ant)
        return "n_tx and n_rx must be 1.." + std::to_string(k_max_ant);
    const auto eval = psd_eval(p, L.P);
    int64_t max_eval = 1, max_sorted = 0;
    for (int x = 0; x <= L.nr; ++x)
        L.lvl[x] = p.lvl[x];
    for (int x = 0; x < L.nr; ++x)
        L.exp[x] = p.exp[x];
    for (int x = 1; x <= L.nr; ++x) {
        L.eval[x] = static_cast<int>(eval[x - 1]);
        L.combos[x] = 1 << (L.log2P * (p.lvl[x - 1] - p.lvl[x]));
        max_eval = std::max<int64_t>(max_eval, eval[x - 1]);
        if (x < L.nr)
            max_sorted = std::max<int64_t>(max_sorted, eval[x - 1]);
    }
    psd_kernel_choice kc{ nullptr, 0 };
    if (v == psd_variant::warp) {
        if (max_sorted > psd_cuda_warp_max_sorted)
            return "an intermediate (sorted) level buffer holds " +
                   std::to_string(max_sorted) + " partial vectors; the warp sort holds at most " +
                   std::to_string(psd_cuda_warp_max_sorted);
        if (!forced && max_eval > psd_cuda_warp_max_sorted)
            return "a leaf level of " + std::to_string(max_eval) +
                   " partial vectors (more than " + std::to_string(psd_cuda_warp_max_sorted) +
                   ") is left to the block kernel";
        g.ipt = 1;
        while (static_cast<int64_t>(k_psd_warp) * g.ipt < max_sorted)
            g.ipt *= 2;
        g.threads = k_psd_warp * k_psd_warps_per_block;
        g.vectors = k_psd_warps_per_block;
        kc = psd_pick_warp_kernel(g.ipt);
        if (!kc.fn)
            return "no warp kernel for " + std::to_string(g.ipt) + " sorted items per lane";
    } else {
        if (max_sorted > psd_cuda_max_sorted)
            return "an intermediate (sorted) level buffer holds " +
                   std::to_string(max_sorted) +
                   " partial vectors; the block sort holds at most " +
                   std::to_string(psd_cuda_max_sorted);
        int tt = 32;
        while (tt < max_eval && tt < psd_cuda_max_threads)
            tt *= 2;
        int ipt = 1;
        while (static_cast<int64_t>(tt) * ipt < max_sorted)
            ipt = ipt < 2 ? 2 : ipt < 4 ? 4 : ipt < 8 ? 8 : 12;
        g.threads = tt;
        g.ipt = ipt;
        g.vectors = 1;
        kc = psd_pick_kernel(tt, ipt);
        if (!kc.fn)
            return "no kernel for " + std::to_string(tt) + " threads x " +
                   std::to_string(ipt) + " sorted items";
    }
    g.fn = kc.fn;

    // Per-parent terms: exp_(x-1) parents times the rows they append.
    int max_parents = 1, max_base = 1;
    for (int x = 1; x <= L.nr; ++x) {
        max_parents = std::max(max_parents, L.exp[x - 1]);
        max_base = std::max(max_base, L.exp[x - 1] * (p.lvl[x - 1] - p.lvl[x]));
    }
    L.temp_bytes = kc.temp_bytes;
    int off = 0;
    auto place = [&off](int bytes) {
        const int at = off;
        off += psd_align(bytes);
        return at;
    };
    (void)place(L.temp_bytes);
    L.off_R = place(L.N * L.N * 8);
    L.off_z = place(L.N * 8);
    L.off_value = place(8 * 8);
    L.off_base = place(max_base * 8);
    L.off_pm = place(max_parents * 8);
    L.off_best = place(k_psd_max_n);
    for (int x = 1; x < L.nr; ++x) {
        L.off_metric[x] = place(L.eval[x] * 8);
        L.off_entry[x] = place(L.eval[x] * 2);
    }
    L.bytes = off; // a multiple of 16: warp slices stay aligned
    g.smem = L.bytes * g.vectors;

    // PAM levels in increasing order (the Gray labels are not monotone), as the CPU.
    const auto& pam = c.pam_levels();
    std::vector<int> order(L.P);
    for (int j = 0; j < L.P; ++j)
        order[j] = j;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return pam[a] < pam[b]; });
    for (int j = 0; j < L.P; ++j) {
        L.value[j] = pam[order[j]];
        L.label[j] = order[j];
    }
    L.node_budget = psd_node_budget(cfg.psd_node_budget, cfg.n_tx, L.P);
    return {};
}

class psd_cuda_detector : public cuda_batch_detector
{
public:
    psd_cuda_detector(const detector_config& cfg,
                      const psd_layout& L,
                      const psd_geometry& g,
                      int blocks_per_sm,
                      int sms,
                      bool sorted)
        : cuda_batch_detector(cfg, false),
          d_L(L),
          d_g(g),
          d_max_grid(static_cast<size_t>(blocks_per_sm) * sms),
          d_sorted(sorted),
          d_clock(static_cast<unsigned long long>(psd_deadline_ns(cfg.psd_deadline_us)))
    {
        d_counters.reserve(k_counters);
    }

protected:
    void reserve_scratch(size_t n_mat, size_t n_vec) override
    {
        (void)n_vec;
        const size_t N = d_L.N, M = 2 * d_L.nrx;
        d_R.reserve(n_mat * N * N);
        d_Qt.reserve(n_mat * N * M);
        d_perm.reserve(n_mat * k_psd_max_n);
    }

    void launch(cudaStream_t s, const chunk& c) override
    {
        if (c.n_vec > static_cast<size_t>(INT_MAX) - d_max_grid * d_g.vectors)
            throw std::invalid_argument("mimodet: psd cuda: chunk too large");
        const size_t N = d_L.N, M = 2 * d_L.nrx;
        double* R = d_R.get() + c.m0 * N * N;
        double* Qt = d_Qt.get() + c.m0 * N * M;
        uint8_t* perm = d_perm.get() + c.m0 * k_psd_max_n;
        launch_psd_preprocess(
            s, c.H, static_cast<int>(c.n_mat), d_L.nrx, d_L.nt, d_sorted, R, Qt, perm,
            nullptr, 0.0);
        MIMODET_CUDA_CHECK_LAUNCH();
        // One counter per stream: launches on a stream run in order, so resetting it
        // on the stream before each launch is safe while other streams run.
        unsigned int* counter = d_counters.get() + d_clock.stream_index(s, k_counters);
        MIMODET_CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned int), s));
        d_clock.arm(s, c.m0 == 0);
        const size_t per_block = static_cast<size_t>(d_g.vectors);
        const unsigned grid = static_cast<unsigned>(
            std::min((c.n_vec + per_block - 1) / per_block, d_max_grid));
        d_g.fn<<<grid, d_g.threads, d_g.smem, s>>>(c.y,
                                                   R,
                                                   Qt,
                                                   perm,
                                                   d_L,
                                                   static_cast<int>(c.n_vec),
                                                   c.map,
                                                   counter,
                                                   c.bits,
                                                   c.stats,
                                                   d_clock.budget_ns(),
                                                   d_clock.start());
        MIMODET_CUDA_CHECK_LAUNCH();
    }

    bool kernels_write_stats() const override { return true; }

private:
    static constexpr int k_counters = 8;

    const psd_layout d_L;
    const psd_geometry d_g;
    const size_t d_max_grid;
    const bool d_sorted;
    psd_call_clock d_clock; //!< the deadline's clock and the streams' counters
    device_buffer<unsigned int> d_counters;
    device_buffer<double> d_R, d_Qt;
    device_buffer<uint8_t> d_perm;
};

/*!
 * Fits geometry g to the current device: shared memory (the warp variant drops warps per
 * block until its slices fit), opt-in above 48 KB, occupancy. Returns why it cannot run.
 */
std::string psd_fit_device(const psd_layout& L, psd_geometry& g, int& blocks_per_sm, int& sms)
{
    int dev = 0;
    MIMODET_CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    MIMODET_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    cudaFuncAttributes fa;
    MIMODET_CUDA_CHECK(cudaFuncGetAttributes(&fa, g.fn));
    const size_t optin = prop.sharedMemPerBlockOptin;
    if (g.variant == psd_variant::warp)
        while (g.vectors > 1 && fa.sharedSizeBytes + static_cast<size_t>(g.smem) > optin) {
            --g.vectors;
            g.threads = k_psd_warp * g.vectors;
            g.smem = L.bytes * g.vectors;
        }
    const size_t total = fa.sharedSizeBytes + static_cast<size_t>(g.smem);
    if (total > optin)
        return std::string("the level buffers and the ") + psd_variant_name(g.variant) +
               " sort need " + std::to_string(total) +
               " bytes of shared memory; the device allows " + std::to_string(optin) +
               " per block";
    if (fa.maxThreadsPerBlock < g.threads)
        return "the kernel allows " + std::to_string(fa.maxThreadsPerBlock) +
               " threads per block, " + std::to_string(g.threads) + " needed";
    // Above the 48 KB default the kernel must opt in. Only ever raised: detectors with
    // other parameters may share this kernel and need more.
    if (g.smem > fa.maxDynamicSharedSizeBytes)
        MIMODET_CUDA_CHECK(
            cudaFuncSetAttribute(g.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, g.smem));
    MIMODET_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, g.fn, g.threads, g.smem));
    sms = prop.multiProcessorCount;
    if (blocks_per_sm < 1)
        return "no block of " + std::to_string(g.threads) + " threads fits an SM";
    return {};
}

} // namespace

psd_call_clock::psd_call_clock(unsigned long long budget_ns) : d_budget_ns(budget_ns)
{
    if (d_budget_ns != 0) {
        d_start.reserve(1);
        MIMODET_CUDA_CHECK(cudaEventCreateWithFlags(&d_armed, cudaEventDisableTiming));
    }
}

psd_call_clock::~psd_call_clock()
{
    // Destruction is deferred by CUDA until work recorded on it completes.
    if (d_armed)
        (void)cudaEventDestroy(d_armed);
}

void psd_call_clock::arm(cudaStream_t s, bool first)
{
    if (d_budget_ns == 0)
        return;
    if (first) {
        MIMODET_CUDA_CHECK(cudaMemsetAsync(d_start.get(), 0, sizeof(unsigned long long), s));
        MIMODET_CUDA_CHECK(cudaEventRecord(d_armed, s));
    } else {
        MIMODET_CUDA_CHECK(cudaStreamWaitEvent(s, d_armed, 0));
    }
}

int psd_call_clock::stream_index(cudaStream_t s, int max)
{
    for (size_t i = 0; i < d_streams.size(); ++i)
        if (d_streams[i] == s)
            return static_cast<int>(i);
    if (d_streams.size() >= static_cast<size_t>(max))
        throw std::logic_error("mimodet: psd cuda: more streams than scratch slots");
    d_streams.push_back(s);
    return static_cast<int>(d_streams.size() - 1);
}

//! The preprocessing for nt x nrx: the lane-parallel kernel for the shapes of
//! dispatch_prep_shape (4x4, 2x2, 2x4), one thread per matrix otherwise. one_thread: the
//! one-thread kernel for every shape (the reference of qa_gpu_psd's bit-for-bit check).
void launch_psd_preprocess(cudaStream_t s,
                           const float2* H,
                           int n_mat,
                           int nrx,
                           int nt,
                           bool sorted,
                           double* R,
                           double* Qt,
                           uint8_t* perm,
                           double* w,
                           double inv_scale,
                           bool one_thread)
{
    if (n_mat <= 0)
        return;
    dispatch_prep_shape(nt, nrx, [&](auto nt_c, auto nrx_c) {
        constexpr int NT = decltype(nt_c)::value, NRX = decltype(nrx_c)::value;
        if constexpr (NT != 0) {
            if (!one_thread) {
                const size_t lanes = static_cast<size_t>(n_mat) * 2 * NT;
                const unsigned blocks = static_cast<unsigned>(
                    (lanes + k_psd_prep_lane_threads - 1) / k_psd_prep_lane_threads);
                psd_preprocess_lanes_kernel<NT, NRX>
                    <<<blocks, k_psd_prep_lane_threads, 0, s>>>(
                        H, n_mat, sorted, R, Qt, perm, w, inv_scale);
                return;
            }
        }
        const unsigned blocks =
            static_cast<unsigned>((n_mat + k_psd_prep_threads - 1) / k_psd_prep_threads);
        psd_preprocess_kernel<NT, NRX><<<blocks, k_psd_prep_threads, 0, s>>>(
            H, n_mat, nrx, nt, sorted, R, Qt, perm, w, inv_scale);
    });
}

size_t psd_cuda_preprocess_differences(
    const std::complex<float>* H, int n_mat, int n_rx, int n_tx, bool sorted)
{
    if (n_mat < 1 || n_rx < 1 || n_tx < 1 || n_tx > k_max_ant || n_rx > k_max_ant)
        throw std::invalid_argument("mimodet: psd_cuda_preprocess_differences: bad shape");
    if (cuda_device_count() == 0)
        throw std::runtime_error("mimodet: psd_cuda_preprocess_differences: no CUDA device");
    const size_t N = 2 * static_cast<size_t>(n_tx), M = 2 * static_cast<size_t>(n_rx);
    const size_t n_h = static_cast<size_t>(n_mat) * n_rx * n_tx;
    const size_t n_r = n_mat * N * N, n_q = n_mat * N * M, n_p = n_mat * k_psd_max_n;
    const size_t n_w = n_mat * N;
    device_buffer<float2> d_h;
    d_h.reserve(n_h);
    MIMODET_CUDA_CHECK(cudaMemcpy(d_h.get(), H, n_h * sizeof(float2), cudaMemcpyHostToDevice));
    std::vector<double> r[2], q[2], w[2];
    std::vector<uint8_t> p[2];
    for (int k = 0; k < 2; ++k) {
        device_buffer<double> d_r, d_q, d_w;
        device_buffer<uint8_t> d_p;
        d_r.reserve(n_r);
        d_q.reserve(n_q);
        d_w.reserve(n_w);
        d_p.reserve(n_p);
        // Unwritten entries (the permutation's tail) compare equal.
        MIMODET_CUDA_CHECK(cudaMemset(d_p.get(), 0, n_p));
        // The depth-first search's weights too (any scale: the same on both).
        launch_psd_preprocess(nullptr,
                              d_h.get(),
                              n_mat,
                              n_rx,
                              n_tx,
                              sorted,
                              d_r.get(),
                              d_q.get(),
                              d_p.get(),
                              d_w.get(),
                              1.0,
                              /*one_thread=*/k == 1);
        MIMODET_CUDA_CHECK_LAUNCH();
        r[k] = download(d_r, n_r);
        q[k] = download(d_q, n_q);
        w[k] = download(d_w, n_w);
        p[k] = download(d_p, n_p);
    }
    return count_bit_differences(r[0], r[1]) + count_bit_differences(q[0], q[1]) +
           count_bit_differences(w[0], w[1]) + count_bit_differences(p[0], p[1]);
}

detector::sptr make_psd_cuda_detector(const detector_config& cfg)
{
    const constellation& c = constellation::get(cfg.mod);
    // One place for the PSD rules (Table 1 checks, the default set).
    const psd_params p = psd_resolve(cfg.psd_lvl, cfg.psd_exp, cfg.n_tx, c.pam_order());
    (void)psd_deadline_ns(cfg.psd_deadline_us); // the shared check, before any device work
    if (psd_radius(cfg.psd_radius, /*gpu=*/true) > 0.0)
        throw cuda_unsupported("mimodet: psd on CUDA: psd_radius > 0 (got " +
                               std::to_string(cfg.psd_radius) +
                               ") is implemented by the CPU backend only; use 0 or -1");
    // Algorithm 3's variant: the warp kernel where it takes the parameters, else the block
    // kernel; MIMODET_PSD_KERNEL=warp|block forces one (tests, measurements).
    std::vector<psd_variant> order = { psd_variant::warp, psd_variant::block };
    bool forced = false;
    if (const std::string k = tuning::psd_kernel(); const char* env = k.empty() ? nullptr : k.c_str()) {
        const std::string want = env;
        if (want == "warp" || want == "block") {
            order = { want == "warp" ? psd_variant::warp : psd_variant::block };
            forced = true;
        } else if (!want.empty() && want != "auto") {
            throw std::invalid_argument("mimodet: MIMODET_PSD_KERNEL='" + want +
                                        "': expected warp, block or auto");
        }
    }
    // The depth-first set runs on its own kernels (psd_se_cuda.cu) unless a variant of
    // Algorithm 3 is forced.
    if (!forced && psd_is_depth_first(p))
        return make_psd_se_cuda_detector(cfg);
    std::string why;
    for (const psd_variant v : order) {
        psd_layout L;
        psd_geometry g;
        int blocks_per_sm = 0, sms = 0;
        std::string w = psd_plan(cfg, p, v, forced, L, g);
        if (w.empty())
            w = psd_fit_device(L, g, blocks_per_sm, sms);
        if (w.empty())
            return std::make_shared<psd_cuda_detector>(
                cfg, L, g, blocks_per_sm, sms, psd_uses_sorted_qr(cfg.sorted_qr, p));
        why += (why.empty() ? "" : "; ") + std::string(psd_variant_name(v)) + " kernel: " + w;
    }
    throw cuda_unsupported(
        "mimodet: psd on CUDA: parameters lvl=" + psd_to_string(p.lvl) +
        " exp=" + psd_to_string(p.exp) + " for n_tx=" + std::to_string(cfg.n_tx) + ", " +
        to_string(cfg.mod) + ": " + why +
        " (use other psd_lvl / psd_exp, or backend 'cpu' or 'auto')");
}

} // namespace core
} // namespace mimodet
} // namespace gr
