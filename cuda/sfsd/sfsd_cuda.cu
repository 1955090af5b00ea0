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
//   2. the N_iter best branches of each vector are selected by rank (one thread per
//      branch counts the branches before it);
//   3. the N_iter * q * (n_tx - T) extension candidates (one bit flipped on one SIC
//      level of a selected path, SIC below) get one thread each and join the list;
//   4. threads per (vector, bit) scan the whole list for the two per-bit minima (a few
//      threads per bit, each a strided part of the list, combined by warp shuffles) and
//      write the max-log LLRs.
// Step 4 replaces per-path folds into shared per-bit minima (24 64-bit atomicMin per
// path at 4x4 64QAM, all of a vector's 172 paths on the same 48 words: the contended
// atomics serialise). Every list entry is read by all threads of a warp at once
// (broadcast), no atomics, and a minimum does not depend on the scan order, so the
// result is deterministic and the minima are those of the atomics: the same set of
// paths, the same comparison (bit patterns of metrics >= 0, where the IEEE order is
// the integer order; a NaN never wins, as with the CPU's "metric < slot").
// Where a vector's whole list does not fit the shared-memory budget (large N_iter), the
// candidates of step 3 come in chunks, step 4 running after each chunk on the minima
// so far (kept in shared memory between chunks).
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
// Most threads per (vector, bit) in step 4 (a power of two: lanes of one warp).
constexpr int k_sfsd_max_seg = 32;

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
 * Folds entries e0, e0 + step, ... < e1 of a list into the two minima of one bit:
 * bit `sh` of the packed labels (k_label_bits * k + q - 1 - b for bit b of level k) is
 * 0: m0, 1: m1, kept as bit patterns. Minima with "<", as sfsd.cc add_candidate (a
 * NaN never wins).
 */
MIMODET_HD inline void fold_bit(const sfsd_entry* list,
                                int e0,
                                int e1,
                                int step,
                                int sh,
                                unsigned long long& m0,
                                unsigned long long& m1)
{
    // Compared as doubles: for metrics >= 0 and +inf the same order as their patterns'
    // (the shuffles and the chunks' minima compare patterns), in one FP64 comparison
    // instead of two on the busier integer pipe.
    for (int e = e0; e < e1; e += step) {
        const sfsd_entry ent = list[e];
        const double x = ent.metric;
        if ((ent.lab >> sh) & 1) {
            if (x < bits_double(m1))
                m1 = double_bits(x);
        } else if (x < bits_double(m0)) {
            m0 = double_bits(x);
        }
    }
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
    int seg = 1;     //!< threads per (vector, bit) in step 4 (power of two <= 32)
    size_t smem = 0; //!< dynamic shared memory per block
};

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
           + sizeof(sfsd_entry) * (static_cast<size_t>(n_paths) + ext_cap) // list
           + (chunked ? sizeof(unsigned long long) * 2 * nt * q : 0) // minima so far
           + sizeof(int) * niter;                                    // selected
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
    // Step 4: spread each bit's scan over more threads while the block has them.
    const int bits = p.vpb * nt * q;
    while (p.seg < k_sfsd_max_seg && 2 * p.seg * bits <= k_sfsd_threads)
        p.seg *= 2;
    return p;
}

// ---------------------------------------------------------------- kernel

/*!
 * Block of k_sfsd_threads for vpb vectors; every step is a loop over the block's work
 * items (branches, candidates, bits) with that stride, so any M^T (1..1024) and any
 * N_iter fit the same block. Dynamic shared memory, per block (cap = P + ext_cap):
 *   s_z[vpb][NT]          y' = Q^H y
 *   s_list[vpb][cap]      the vector's list: FSD branches [0, P), then the current
 *                         chunk of extension candidates
 *   s_min[vpb][2][NT*q]   per-bit minima so far (bit patterns, ordered levels); only
 *                         with chunks (ext_cap < n_extra)
 *   s_sel[vpb][niter]     indices of the N_iter best branches, best first
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
    double2* s_z = s_mem;
    sfsd_entry* s_list = reinterpret_cast<sfsd_entry*>(s_z + vpb * NT);
    unsigned long long* s_min = reinterpret_cast<unsigned long long*>(s_list + vpb * cap);
    int* s_sel = reinterpret_cast<int*>(s_min + (chunked ? vpb * 2 * nb : 0));

    const long long vbase = static_cast<long long>(blockIdx.x) * vpb;
    const double2* pts = s_pts;
    const double* pam = c_pam + pam_offset(q);

    // --- 0: y' = Q^H y, selection cleared (every entry defined).
    for (int idx = threadIdx.x; idx < vpb * NT; idx += k_sfsd_threads) {
        const int lv = idx / NT, k = idx % NT;
        const long long gv = vbase + lv;
        double2 acc = make_double2(0.0, 0.0);
        if (gv < n_vec) {
            const long long m = map.matrix_of(gv);
            acc = rotate_entry(Qc + (m * NT + k) * nr, y + gv * nr, nr);
        }
        s_z[idx] = acc;
    }
    for (int idx = threadIdx.x; idx < vpb * niter; idx += k_sfsd_threads)
        s_sel[idx] = 0;
    load_points<Q>(s_pts);
    __syncthreads();

    // --- 1: the FSD branches, one per work item (consecutive threads, same vector).
    for (int idx = threadIdx.x; idx < vpb * n_paths; idx += k_sfsd_threads) {
        const int lv = idx / n_paths, p = idx % n_paths;
        const long long gv = vbase + lv;
        if (gv >= n_vec)
            continue;
        const long long m = map.matrix_of(gv);
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
        // Counting stops at niter, so most branches stop early.
        for (int idx = threadIdx.x; idx < vpb * n_paths; idx += k_sfsd_threads) {
            const int lv = idx / n_paths, p = idx % n_paths;
            if (vbase + lv >= n_vec)
                continue;
            const sfsd_entry* lst = s_list + lv * cap;
            const double mp = lst[p].metric;
            int rank = 0;
            for (int o = 0; o < n_paths && rank < niter; ++o)
                rank += sfsd_path_before(lst[o].metric, o, mp, p) ? 1 : 0;
            if (rank < niter)
                s_sel[lv * niter + rank] = p;
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
                const long long m = map.matrix_of(gv);
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

        // --- 4: per-bit minima over this pass's entries (all of the list the first
        // time, then the new chunk), seg threads per bit on interleaved entries (a
        // warp reads a few neighbouring entries at once: broadcasts without bank
        // conflicts), combined by shuffles within the seg aligned lanes. The last pass
        // writes the LLRs in transmit order.
        const int e0 = c0 == 0 ? 0 : n_paths;
        const int e1 = n_paths + max(cnt, 0);
        const int n_items = vpb * nb * seg;
        for (int base = 0; base < n_items; base += k_sfsd_threads) { // uniform
            const int idx = base + threadIdx.x;
            const int s = idx % seg, vj = idx / seg;
            const int lv = vj / nb, j = vj % nb;
            const long long gv = vbase + lv;
            const bool valid = idx < n_items && gv < n_vec;
            const int k = j / q, b = j % q;
            unsigned long long m0 = k_inf_bits, m1 = k_inf_bits;
            if (valid)
                fold_bit(s_list + lv * cap,
                         e0 + s,
                         e1,
                         seg,
                         k_label_bits * k + (q - 1 - b),
                         m0,
                         m1);
            for (int off = 1; off < seg; off <<= 1) { // every lane of the warp
                const unsigned long long o0 = __shfl_xor_sync(0xffffffffu, m0, off);
                const unsigned long long o1 = __shfl_xor_sync(0xffffffffu, m1, off);
                m0 = o0 < m0 ? o0 : m0;
                m1 = o1 < m1 ? o1 : m1;
            }
            if (!valid || s != 0)
                continue;
            unsigned long long* mins = s_min + lv * 2 * nb;
            if (chunked && c0 != 0) { // the earlier passes' minima
                m0 = mins[j] < m0 ? mins[j] : m0;
                m1 = mins[nb + j] < m1 ? mins[nb + j] : m1;
            }
            if (!last) {
                mins[j] = m0;
                mins[nb + j] = m1;
                continue;
            }
            const long long m = map.matrix_of(gv);
            const double inv_nv = 1.0 / static_cast<double>(noise_var[m]);
            // The minima only ever go down from k_inf_bits: each is +inf or a metric.
            llr[gv * nb + perm[m * k_max_ant + k] * q + b] =
                maxlog_llr(bits_double(m0), bits_double(m1), inv_nv, llr_clip);
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
