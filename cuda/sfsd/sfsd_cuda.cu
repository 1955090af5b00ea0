/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA soft-output fixed-complexity sphere decoder (Roger et al. 2012, Sections 3-4,
// Algorithms 2-3). The FSD ordering and QR run once per channel matrix (the FSD's
// preprocessing kernel, fsd_device.cuh); then one kernel does, per block of received
// vectors, what the paper splits into two kernels, so that the list never leaves shared
// memory:
//   1. every one of the M^T FSD branches of every vector gets a thread (fsd_branch, as
//      the hard FSD); metric and labels go to the vector's list in shared memory;
//   2. the N_iter best branches of each vector are selected by rank: each branch
//      counts, by warp shuffles, the branches before it in its segment of up to 32
//      (the lanes of one warp); with several segments, a segment's N_iter best then
//      add how many of each other segment's best come before them;
//   3. the N_iter * q * (n_tx - T) extension candidates (one bit flipped on one SIC
//      level of a selected path, SIC below) get one thread each and join the list;
//   4. the per-bit minima, in two parts: (a) each vector's best entry (a few threads
//      per vector, each a strided part of the list, combined by warp shuffles); (b)
//      threads per (vector, level) scan the list once for the level's q bits, keeping
//      per bit only the least metric of the entries whose bit differs from the best
//      entry's (the counter-hypothesis); the best entry's metric is the other minimum.
//      Then the max-log LLRs.
// Step 4 replaces per-path folds into shared per-bit minima (24 64-bit atomicMin per
// path at 4x4 64QAM, all of a vector's 172 paths on the same 48 words: the contended
// atomics serialise). Every list entry is read by all threads of a warp at once
// (broadcast), no atomics, and a minimum does not depend on the scan order, so the
// result is deterministic and the minima are those of the atomics: the same set of
// paths, the same comparison ("<" on metrics >= 0, +inf at the start; a NaN never wins,
// as with the CPU's "metric < slot"). One load of an entry serves the q bits of a
// level, and a bit costs one test and one comparison instead of choosing between two
// minima. Which of several equal best entries is taken does not matter: where they
// differ in a bit, that bit's counter-hypothesis minimum is the same metric.
// Where a vector's whole list does not fit the shared-memory budget (large N_iter), the
// candidates of step 3 come in chunks, step 4 running after each chunk (with the
// chunk's own best entry) on the minima so far (kept in shared memory between chunks).
//
// The algorithm is the CPU's (lib/detect/sfsd/sfsd.cc): same list, same summation order
// of the PEDs, same LLR rule (llr.h maxlog_llr: clipping, missing counter-hypotheses),
// all in double precision so that the LLRs match to rounding and their signs (the hard
// bits) are the CPU's. Ties among the N_iter best: the lower branch index (the CPU's
// depth-first enumeration order) comes first.

#include "cuda/fsd/fsd_device.cuh"
#include "cuda/sfsd/sfsd_cuda.h"
#include "detect/llr.h"
#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

namespace {

// Threads per detection block (always). 128 rather than 256: fewer vectors share a
// block's barriers; on an H100 at 20 dB 1.04x at 4x4 64QAM, 0.99-1.01x elsewhere
// (docs/PERFORMANCE.md).
constexpr int k_sfsd_threads = 128;
// The kernel is compiled for blocks of up to this many threads all the same: the register
// budget it was measured with (a bound of 128 lets the compiler take more registers, as
// mtt_cuda.cu found for its kernel).
constexpr int k_sfsd_bound_threads = 256;
// Shared memory per block kept at or below this. ptxas gives the kernel 40-80 registers
// per thread on sm_90 (60 at n_tx = 4): registers allow 6-12 blocks of 128 threads per
// SM, and 24 kB per block lets 9 fit. Only large lists (M^T or N_iter) get fewer vectors
// per block for it, then candidate chunks (one vector's FSD list with its selection
// always fits: M^T <= 1024 is ~21 kB).
constexpr size_t k_sfsd_smem_target = 24 * 1024;
// Bit pattern of +inf: the initial per-bit minimum, above every finite metric.
constexpr unsigned long long k_inf_bits = 0x7ff0000000000000ULL;
// Most threads per vector in step 4a and per (vector, level) in step 4b (a power of two:
// lanes of one warp).
constexpr int k_sfsd_max_seg = 32;
// Least list entries a thread of step 4a and of step 4b scans: fewer lanes where the list
// is short, so that the shuffles that combine them stay a small part of the scan.
constexpr int k_sfsd_best_scan = 8;
constexpr int k_sfsd_level_scan = 16;

// ---------------------------------------------------------------- per-vector math

MIMODET_HD inline unsigned long long double_bits(double x)
{
#ifdef __CUDA_ARCH__
    return static_cast<unsigned long long>(__double_as_longlong(x));
#else
    unsigned long long u;
    std::memcpy(&u, &x, sizeof u);
    return u;
#endif
}

MIMODET_HD inline double bits_double(unsigned long long u)
{
#ifdef __CUDA_ARCH__
    return __longlong_as_double(static_cast<long long>(u));
#else
    double x;
    std::memcpy(&x, &u, sizeof x);
    return x;
#endif
}

//! One complete path of a vector's list: 16 bytes, so that one shared-memory load
//! (a broadcast to the warp) reads both.
struct alignas(16) sfsd_entry {
    double metric;          //!< sum of the PEDs (>= 0, or NaN)
    unsigned long long lab; //!< labels, 6 bits per ordered level
};

/*!
 * x & mask != 0. Through PTX so that ptxas makes it one LOP3 with a predicate result;
 * written in C++, each bit test of step 4b became a shift, an AND and a compare (SASS
 * on sm_90), a third of the scan's instructions.
 */
__device__ __forceinline__ bool bit_set(unsigned x, unsigned mask)
{
    unsigned r;
    asm("and.b32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(mask));
    return r != 0;
}

//! Label of level k in a path's packed labels (k_label_bits per level).
template <int NT>
MIMODET_HD inline unsigned level_label(unsigned long long lab, int k)
{
    if constexpr (k_label_bits * NT <= 32) // one 32-bit shift where the labels fit
        return (static_cast<unsigned>(lab) >> (k_label_bits * k)) & 63u;
    else
        return static_cast<unsigned>(lab >> (k_label_bits * k)) & 63u;
}

/*!
 * Extension candidate (sfsd.cc extend_list): the base path's labels above level l, its
 * label at l with bit b flipped, SIC below l. The PED is accumulated from the top level
 * down in the CPU's order (base PEDs, then the flipped level, then the SIC levels), so
 * the metric is the CPU's to rounding. lab gets the candidate's labels.
 */
template <int NT>
MIMODET_HD inline double sfsd_extension(const double2* z,
                                        const double2* Rm,
                                        const double* inv,
                                        const double2* pts,
                                        const double* pam,
                                        int q,
                                        unsigned long long base_lab,
                                        int l,
                                        int b,
                                        unsigned long long& lab)
{
    double2 sym[NT];
    lab = 0;
    double metric = 0.0;
#pragma unroll
    for (int k = NT - 1; k >= 0; --k) {
        double2 res = z[k];
#pragma unroll
        for (int j = k + 1; j < NT; ++j)
            res = csub(res, cmul(Rm[k * NT + j], sym[j]));
        const double rkk = Rm[k * NT + k].x;
        const int base = static_cast<int>((base_lab >> (k_label_bits * k)) & 63);
        int label;
        if (k > l)
            label = base;
        else if (k == l)
            label = base ^ (1 << (q - 1 - b));
        else
            label = slice(cscale(res, inv[k]), pam, q);
        sym[k] = pts[label];
        metric += cnorm(csub(res, cscale(sym[k], rkk)));
        lab |= static_cast<unsigned long long>(label) << (k_label_bits * k);
    }
    return metric;
}

//! Block geometry of sfsd_detect_kernel for one configuration (host side).
struct sfsd_plan {
    int vpb = 1;     //!< vectors per block
    int ext_cap = 0; //!< extension candidates in the list at once (n_extra: no chunks)
    int best_lanes = 1; //!< threads per vector in step 4a (power of two <= 32)
    int seg = 1;     //!< threads per (vector, level) in step 4b (power of two <= 32)
    size_t smem = 0; //!< dynamic shared memory per block
};

//! Branches per segment of step 2 (lanes of one warp; M^T is a power of two).
MIMODET_HD inline int sfsd_segment_paths(int n_paths)
{
    return n_paths < 32 ? n_paths : 32;
}

//! Bests kept per segment in step 2: min(N_iter, the segment's branches).
MIMODET_HD inline int sfsd_segment_top(int n_paths, int niter)
{
    const int seg_paths = sfsd_segment_paths(n_paths);
    return niter < seg_paths ? niter : seg_paths;
}

//! Entries of a vector's segment bests in step 2: none with a single segment.
MIMODET_HD inline int sfsd_segment_tops(int n_paths, int niter)
{
    const int n_segs = n_paths / sfsd_segment_paths(n_paths);
    return n_segs > 1 ? n_segs * sfsd_segment_top(n_paths, niter) : 0;
}

/*!
 * Bytes of dynamic shared memory per vector of a block (layout in sfsd_detect_kernel):
 * the list of n_paths + ext_cap entries, plus the per-bit minima when the extension
 * candidates come in chunks (ext_cap < n_extra).
 */
inline size_t
sfsd_smem_per_vector(int nt, int q, int n_paths, int niter, int n_extra, int ext_cap)
{
    const bool chunked = ext_cap < n_extra;
    return sizeof(double2) * nt                                            // y'
           + sizeof(sfsd_entry)                                     // the pass's best
           + sizeof(sfsd_entry) * (static_cast<size_t>(n_paths) + ext_cap) // list
           + (chunked ? sizeof(unsigned long long) * 2 * nt * q : 0) // minima so far
           + sizeof(double)                                          // 1 / noise var.
           + sizeof(int) * niter                                     // selected
           + sizeof(int) * sfsd_segment_tops(n_paths, niter)         // segments' best
           + sizeof(int)                                             // its matrix
           + sizeof(int) * nt;                                       // LLR positions
}

inline sfsd_plan make_sfsd_plan(int nt, int q, int n_paths, int niter, int n_extra)
{
    sfsd_plan p;
    // About one branch per thread; fewer vectors where shared memory would limit the
    // blocks per SM.
    p.vpb = std::max(1, k_sfsd_threads / n_paths);
    p.ext_cap = n_extra;
    auto per_vec = [&]() {
        return sfsd_smem_per_vector(nt, q, n_paths, niter, n_extra, p.ext_cap);
    };
    while (p.vpb > 1 && p.vpb * per_vec() > k_sfsd_smem_target)
        p.vpb /= 2;
    if (p.vpb == 1 && per_vec() > k_sfsd_smem_target) {
        // One vector whose list does not fit: the candidates in chunks (the rest of the
        // budget, at least 32 at a time; M^T <= 1024 leaves a few hundred).
        p.ext_cap = 0; // per_vec(): everything but the chunk, minima included
        const size_t fixed = per_vec();
        const size_t room = fixed < k_sfsd_smem_target
                                ? (k_sfsd_smem_target - fixed) / sizeof(sfsd_entry)
                                : 0;
        p.ext_cap = std::min(n_extra, std::max(32, static_cast<int>(room)));
    }
    p.smem = p.vpb * per_vec();
    // Step 4: spread each scan over more threads while the block has them and each
    // thread keeps a few entries (the first pass's list is the longest).
    const int list = n_paths + p.ext_cap;
    while (p.best_lanes < k_sfsd_max_seg && 2 * p.best_lanes * p.vpb <= k_sfsd_threads &&
           2 * p.best_lanes * k_sfsd_best_scan <= list)
        p.best_lanes *= 2;
    const int levels = p.vpb * nt;
    while (p.seg < k_sfsd_max_seg && 2 * p.seg * levels <= k_sfsd_threads &&
           2 * p.seg * k_sfsd_level_scan <= list)
        p.seg *= 2;
    return p;
}

// ---------------------------------------------------------------- kernel

/*!
 * Block of k_sfsd_threads for vpb vectors; every step is a loop over the block's work
 * items (branches, candidates, bits) with that stride, so any M^T (1..1024) and any
 * N_iter fit the same block. Dynamic shared memory, per block (cap = P + ext_cap):
 *   s_z[vpb][NT]          y' = Q^H y
 *   s_best[vpb]           the best entry of the current pass (step 4a)
 *   s_list[vpb][cap]      the vector's list: FSD branches [0, P), then the current
 *                         chunk of extension candidates
 *   s_min[vpb][2][NT*q]   per-bit minima so far (bit patterns, ordered levels); only
 *                         with chunks (ext_cap < n_extra)
 *   s_inv_nv[vpb]         1 / noise variance of the vector's matrix
 *   s_sel[vpb][niter]     indices of the N_iter best branches, best first
 *   s_top[vpb][G][top]    with G > 1 segments of step 2: each segment's best (by
 *                         rank within it, top = min(niter, 32))
 *   s_mat[vpb]            the vector's channel matrix (chunk-relative; n_vec <= INT_MAX)
 *   s_pos[vpb][NT]        where the LLRs of ordered level k go: perm[k] * q
 * and, statically, the constellation. NT is a template argument so that the symbol paths
 * stay in registers, Q (bits per symbol) so that the slicer and the label loops unroll.
 */
template <int NT, int Q>
__global__ void __launch_bounds__(k_sfsd_bound_threads)
    sfsd_detect_kernel(const float2* __restrict__ y,
                       const double2* __restrict__ Qc,
                       const double2* __restrict__ R,
                       const double* __restrict__ inv_diag,
                       const unsigned char* __restrict__ perm,
                       const float* __restrict__ noise_var,
                       int n_vec,
                       const __grid_constant__ segment_map map,
                       int nr,
                       int full_levels,
                       int n_paths,
                       int niter,
                       int vpb,
                       int ext_cap,
                       int best_lanes,
                       int seg,
                       float llr_clip,
                       float* __restrict__ llr)
{
    constexpr int q = Q;
    extern __shared__ double2 s_mem[];
    __shared__ double2 s_pts[1 << Q];
    const int nb = NT * q;
    const int first_se = NT - 1 - full_levels; // highest SIC level (-1: none)
    const int per_path = q * (first_se + 1);   // candidates per selected path
    const int n_extra = niter * per_path;
    const bool chunked = ext_cap < n_extra;
    const int cap = n_paths + ext_cap; // list entries per vector
    const int paths_log2 = __ffs(n_paths) - 1; // M^T: a power of two
    double2* s_z = s_mem;
    sfsd_entry* s_best = reinterpret_cast<sfsd_entry*>(s_z + vpb * NT);
    sfsd_entry* s_list = s_best + vpb;
    unsigned long long* s_min = reinterpret_cast<unsigned long long*>(s_list + vpb * cap);
    double* s_inv_nv =
        reinterpret_cast<double*>(s_min + (chunked ? vpb * 2 * nb : 0));
    int* s_sel = reinterpret_cast<int*>(s_inv_nv + vpb);
    const int seg_paths = sfsd_segment_paths(n_paths);
    const int n_segs = n_paths / seg_paths;
    const int top = sfsd_segment_top(n_paths, niter);
    int* s_top = s_sel + vpb * niter;
    int* s_mat = s_top + (n_segs > 1 ? vpb * n_segs * top : 0); // sfsd_segment_tops
    int* s_pos = s_mat + vpb;
    const int best_log2 = __ffs(best_lanes) - 1, seg_log2 = __ffs(seg) - 1;

    const long long vbase = static_cast<long long>(blockIdx.x) * vpb;
    const double2* pts = s_pts;
    const double* pam = c_pam + pam_offset(q);

    // --- 0: y' = Q^H y; what the later steps need of the vector's matrix, looked up
    // once (not per work item); selection cleared (every entry defined).
    for (int idx = threadIdx.x; idx < vpb * NT; idx += k_sfsd_threads) {
        const int lv = idx / NT, k = idx % NT;
        const long long gv = vbase + lv;
        double2 acc = make_double2(0.0, 0.0);
        if (gv < n_vec) {
            const long long m = map.matrix_of(gv);
            acc = rotate_entry(Qc + (m * NT + k) * nr, y + gv * nr, nr);
            s_pos[idx] = perm[m * k_max_ant + k] * q;
            if (k == 0) {
                s_mat[lv] = static_cast<int>(m);
                s_inv_nv[lv] = 1.0 / static_cast<double>(noise_var[m]);
            }
        }
        s_z[idx] = acc;
    }
    for (int idx = threadIdx.x; idx < vpb * niter; idx += k_sfsd_threads)
        s_sel[idx] = 0;
    load_points<Q>(s_pts);
    __syncthreads();

    // --- 1: the FSD branches, one per work item (consecutive threads, same vector).
    for (int idx = threadIdx.x; idx < vpb * n_paths; idx += k_sfsd_threads) {
        const int lv = idx >> paths_log2, p = idx & (n_paths - 1);
        const long long gv = vbase + lv;
        if (gv >= n_vec)
            continue;
        const long long m = s_mat[lv];
        sfsd_entry ent;
        ent.metric = fsd_branch<NT>(s_z + lv * NT,
                                    R + m * NT * NT,
                                    inv_diag + m * NT,
                                    pts,
                                    pam,
                                    q,
                                    full_levels,
                                    p,
                                    ent.lab);
        s_list[lv * cap + p] = ent;
    }
    __syncthreads();

    if (n_extra > 0) { // uniform over the grid
        // --- 2: rank of each branch among its vector's; the first niter are kept.
        // The order is sfsd_path_before's, as integer keys (sfsd_rank_key,
        // sfsd_key_before). First the rank within the branch's segment, by shuffles
        // within its seg_paths aligned lanes (every lane of the warp takes part).
        const int segment_log2 = __ffs(seg_paths) - 1;
        for (int base = 0; base < vpb * n_paths; base += k_sfsd_threads) { // uniform
            const int idx = base + threadIdx.x;
            const int lv = idx >> paths_log2, p = idx & (n_paths - 1);
            const bool active = idx < vpb * n_paths && vbase + lv < n_vec;
            const uint64_t kp = active ? sfsd_rank_key(s_list[lv * cap + p].metric) : 0;
            const int ps = p & (seg_paths - 1); // position in the segment
            int rank = 0;
            for (int o = 0; o < seg_paths; ++o) {
                const uint64_t ko = __shfl_sync(0xffffffffu, kp, o, seg_paths);
                rank += sfsd_key_before(ko, o, kp, ps) ? 1 : 0;
            }
            if (!active || rank >= top)
                continue;
            if (n_segs == 1)
                s_sel[lv * niter + rank] = p;
            else
                s_top[(lv * n_segs + (p >> segment_log2)) * top + rank] = p;
        }
        if (n_segs > 1) { // uniform
            __syncthreads();
            // Each segment's best add, per other segment, its best that come before
            // them: in rank order, so the count stops at the first that does not. A
            // branch among the vector's niter best has all the other segments'
            // branches before it among their segments' best.
            const int n_top = vpb * n_segs * top;
            for (int idx = threadIdx.x; idx < n_top; idx += k_sfsd_threads) {
                const int lv = idx / (n_segs * top), gr = idx % (n_segs * top);
                if (vbase + lv >= n_vec)
                    continue;
                const int g = gr / top;
                const int* tops = s_top + lv * n_segs * top;
                const sfsd_entry* lst = s_list + lv * cap;
                const int p = tops[gr];
                const uint64_t kp = sfsd_rank_key(lst[p].metric);
                int rank = gr % top;
                for (int h = 0; h < n_segs && rank < niter; ++h) {
                    if (h == g)
                        continue;
                    for (int r = 0; r < top && rank < niter; ++r) {
                        const int o = tops[h * top + r];
                        if (!sfsd_key_before(sfsd_rank_key(lst[o].metric), o, kp, p))
                            break;
                        ++rank;
                    }
                }
                if (rank < niter)
                    s_sel[lv * niter + rank] = p;
            }
        }
        __syncthreads();
    }

    // Steps 3 and 4 per chunk of candidates: one pass (c0 = 0) unless chunked, and
    // exactly one pass without extension (n_extra = 0). The loop is uniform over the
    // block, so every thread reaches every barrier.
    for (int c0 = 0;; c0 += ext_cap) {
        const int cnt = min(ext_cap, n_extra - c0); // <= 0 only when n_extra = 0

        // --- 3: extension candidates c0 .. c0+cnt-1: path i of the selection, level
        // l, bit b; entry n_paths + (c - c0) of the list.
        if (cnt > 0) {
            for (int idx = threadIdx.x; idx < vpb * cnt; idx += k_sfsd_threads) {
                const int lv = idx / cnt, c = c0 + idx % cnt;
                const long long gv = vbase + lv;
                if (gv >= n_vec)
                    continue;
                const long long m = s_mat[lv];
                const int i = c / per_path, r = c % per_path;
                const int l = first_se - r / q, b = r % q;
                const sfsd_entry* lst = s_list + lv * cap;
                sfsd_entry ent;
                ent.metric = sfsd_extension<NT>(s_z + lv * NT,
                                                R + m * NT * NT,
                                                inv_diag + m * NT,
                                                pts,
                                                pam,
                                                q,
                                                lst[s_sel[lv * niter + i]].lab,
                                                l,
                                                b,
                                                ent.lab);
                s_list[lv * cap + n_paths + (c - c0)] = ent;
            }
            __syncthreads();
        }
        const bool last = c0 + cnt >= n_extra;

        // --- 4a: the best entry of this pass's entries (all of the list the first
        // time, then the new chunk), best_lanes threads per vector on interleaved
        // entries, combined by shuffles within the aligned lanes.
        const int e0 = c0 == 0 ? 0 : n_paths;
        const int e1 = n_paths + max(cnt, 0);
        const int n_best = vpb * best_lanes;
        for (int base = 0; base < n_best; base += k_sfsd_threads) { // uniform
            const int idx = base + threadIdx.x;
            const int s = idx & (best_lanes - 1), lv = idx >> best_log2;
            const bool valid = idx < n_best && vbase + lv < n_vec;
            double bm = bits_double(k_inf_bits);
            unsigned long long blab = 0;
            if (valid) {
                const sfsd_entry* lst = s_list + lv * cap;
                for (int e = e0 + s; e < e1; e += best_lanes) {
                    const sfsd_entry ent = lst[e];
                    if (ent.metric < bm) {
                        bm = ent.metric;
                        blab = ent.lab;
                    }
                }
            }
            for (int off = 1; off < best_lanes; off <<= 1) { // every lane of the warp
                const double om = __shfl_xor_sync(0xffffffffu, bm, off);
                const unsigned long long ol = __shfl_xor_sync(0xffffffffu, blab, off);
                if (om < bm) {
                    bm = om;
                    blab = ol;
                }
            }
            if (valid && s == 0)
                s_best[lv] = sfsd_entry{bm, blab};
        }
        __syncthreads();

        // --- 4b: per level, the least metric of the entries whose bit differs from the
        // best entry's, seg threads per (vector, level) on interleaved entries (a warp
        // reads a few neighbouring entries at once: broadcasts without bank conflicts),
        // combined by butterfly shuffles, after which each of the seg lanes holds them
        // all and takes bits s, s + seg, ... The last pass writes the LLRs in transmit
        // order.
        const int n_items = vpb * NT * seg;
        for (int base = 0; base < n_items; base += k_sfsd_threads) { // uniform
            const int idx = base + threadIdx.x;
            const int s = idx & (seg - 1), vk = idx >> seg_log2;
            const int lv = vk / NT, k = vk % NT;
            const long long gv = vbase + lv;
            const bool valid = idx < n_items && gv < n_vec;
            const sfsd_entry best = valid ? s_best[lv] : sfsd_entry{0.0, 0};
            const unsigned best_label = level_label<NT>(best.lab, k);
            double counter[Q];
#pragma unroll
            for (int b = 0; b < Q; ++b)
                counter[b] = bits_double(k_inf_bits);
            if (valid) {
                const sfsd_entry* lst = s_list + lv * cap;
                for (int e = e0 + s; e < e1; e += seg) {
                    const sfsd_entry ent = lst[e];
                    const unsigned differ = level_label<NT>(ent.lab, k) ^ best_label;
#pragma unroll
                    for (int b = 0; b < Q; ++b) {
                        const bool take = bit_set(differ, 1u << (q - 1 - b)) &
                                          (ent.metric < counter[b]);
                        counter[b] = take ? ent.metric : counter[b];
                    }
                }
            }
            for (int off = 1; off < seg; off <<= 1) { // every lane of the warp
#pragma unroll
                for (int b = 0; b < Q; ++b) {
                    const double o = __shfl_xor_sync(0xffffffffu, counter[b], off);
                    counter[b] = o < counter[b] ? o : counter[b];
                }
            }
            if (!valid)
                continue;
            unsigned long long* mins = s_min + lv * 2 * nb;
            for (int b = s; b < Q; b += seg) {
                double cb = counter[0]; // counter[b], registers only
#pragma unroll
                for (int t = 1; t < Q; ++t)
                    cb = t == b ? counter[t] : cb;
                const int j = k * q + b;
                const bool one = (best_label >> (q - 1 - b)) & 1u;
                // Bit patterns: metrics >= 0 and +inf order like their patterns.
                unsigned long long m0 = double_bits(one ? cb : best.metric);
                unsigned long long m1 = double_bits(one ? best.metric : cb);
                if (chunked && c0 != 0) { // the earlier passes' minima
                    m0 = mins[j] < m0 ? mins[j] : m0;
                    m1 = mins[nb + j] < m1 ? mins[nb + j] : m1;
                }
                if (!last) {
                    mins[j] = m0;
                    mins[nb + j] = m1;
                    continue;
                }
                // The minima only ever go down from k_inf_bits: each is +inf or a metric.
                llr[gv * nb + s_pos[lv * NT + k] + b] = maxlog_llr(
                    bits_double(m0), bits_double(m1), s_inv_nv[lv], llr_clip);
            }
        }
        if (last)
            break;
        __syncthreads(); // the next chunk overwrites this one's candidates
    }
}

// ---------------------------------------------------------------- detector

class sfsd_cuda_detector : public fsd_cuda_detector_base
{
public:
    sfsd_cuda_detector(const detector_config& cfg, const fsd_params& p)
        : fsd_cuda_detector_base(cfg, true, p),
          d_plan(make_sfsd_plan(cfg.n_tx,
                                static_cast<int>(cfg.mod),
                                static_cast<int>(p.n_paths),
                                p.niter,
                                p.n_extra))
    {
    }

protected:
    void launch(cudaStream_t s, const chunk& c) override
    {
        if (c.n_vec > static_cast<size_t>(INT_MAX))
            throw std::invalid_argument("mimodet: sfsd cuda: chunk too large");
        const fsd_prep m = preprocess(s, c);
        const unsigned blocks =
            static_cast<unsigned>((c.n_vec + d_plan.vpb - 1) / d_plan.vpb);
        dispatch_nt_q(
            d_cfg.n_tx, static_cast<int>(d_cfg.mod), "sfsd", [&](auto nt_c, auto q_c) {
                launch_nt<decltype(nt_c)::value, decltype(q_c)::value>(blocks, s, c, m);
            });
    }

private:
    template <int NT, int Q>
    void launch_nt(unsigned blocks, cudaStream_t s, const chunk& c, const fsd_prep& m)
    {
        sfsd_detect_kernel<NT, Q><<<blocks, k_sfsd_threads, d_plan.smem, s>>>(
            c.y,
            m.Q,
            m.R,
            m.inv,
            m.perm,
            c.noise_var,
            static_cast<int>(c.n_vec),
            c.map,
            d_cfg.n_rx,
            d_params.full_levels,
            static_cast<int>(d_params.n_paths),
            d_params.niter,
            d_plan.vpb,
            d_plan.ext_cap,
            d_plan.best_lanes,
            d_plan.seg,
            d_cfg.llr_clip,
            c.llr);
        MIMODET_CUDA_CHECK_LAUNCH();
    }

    const sfsd_plan d_plan; //!< vectors per block, chunking, shared memory
};

} // namespace

detector::sptr make_sfsd_cuda_detector(const detector_config& cfg)
{
    const int q = static_cast<int>(cfg.mod);
    // One place for the SFSD rules: T and N_iter defaults and ranges, M^T's CPU limit.
    const fsd_params p =
        resolve_fsd_params(cfg.n_tx, q, cfg.fsd_full_levels, cfg.sfsd_niter, true);
    if (p.n_paths > sfsd_cuda_max_paths) {
        throw cuda_unsupported(
            "mimodet: sfsd on CUDA supports at most " +
            std::to_string(sfsd_cuda_max_paths) +
            " branches M^T per vector; T = " + std::to_string(p.full_levels) + " with " +
            to_string(cfg.mod) + " gives " + std::to_string(p.n_paths) +
            " (use a smaller fsd_full_levels, or backend 'cpu' or 'auto')");
    }
    return std::make_shared<sfsd_cuda_detector>(cfg, p);
}

} // namespace core
} // namespace mimodet
} // namespace gr
