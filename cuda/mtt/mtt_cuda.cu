/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA multi-pass trellis traversal (journal paper, GPU section): the (sorted) QR and
// 1/R(p,p) run once per channel matrix (one lane per column at 4x4, 2x2 and 2 tx x 4 rx,
// else one thread per matrix; qr_device.cuh), then
// every received vector gets Q = 2^q threads, one per trellis vertex, and a block holds
// several vectors (128 threads: 32 QPSK, 8 16QAM or 2 64QAM vectors).
//
// Per stage t (position p = n_tx-1-t of R), thread v is
//   - path v of the reduced survivors: it leaves its metric and residual in shared
//     memory, then extends its path to the last stage with one slicer decision per
//     position (the best outgoing edge, Eqs. 10-11): its path of candidate list L_t;
//   - vertex v of stage t+1: after a barrier it evaluates the Q edges into it from the
//     survivors' metrics and residuals (the edge reduction, Eq. 9) and builds its new
//     survivor's residual from the winning path's.
// The list metrics go to shared memory; 2q columns (bit, hypothesis) of them are
// scanned in pieces by up to M threads and reduced with warp shuffles into the per-bit
// minima, which wait in shared memory until the last stage: then the vector's threads
// write all its LLRs at once, one each (at 16QAM one max-log step a warp instead of one
// a stage), each antenna's at its transmit index.
//
// No Q x Q weight matrix between two stages is kept in shared memory (it would take
// 33 kB per 64QAM vector, one vector per block, for row minima that give the
// extensions): the slicer finds the same edges from the residual alone, so the shared
// memory per vector is a few kB and more vectors are in flight per SM (2.75x the
// kernel throughput at 4x4 64QAM, measured on an H100).
//
// Everything is double precision and every arg-min keeps the first minimum, like the
// CPU, so the paths are the CPU's and the LLRs differ by rounding only.

#include "cuda/common/batch_detector.h"
#include "cuda/common/cuda_memory.h"
#include "cuda/common/qr_device.cuh"
#include "cuda/mtt/mtt_cuda.h"
#include "cuda/mtt/mtt_device.cuh"
#include "detect/backend.h"
#include "detect/fsd/fsd_common.h"
#include "detect/mtt/mtt_common.h"
#include <climits>
#include <complex>
#include <stdexcept>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {

// Threads per detection block. 128 rather than 256: 1.00-1.03x at 20 dB on an H100 (4x4
// every order, 2x2 16QAM and 64QAM; docs/PERFORMANCE.md): fewer vectors share a block and
// its barriers.
constexpr int k_mtt_threads = 128;
// The kernels are compiled for blocks of up to this many threads all the same: bounded by
// k_mtt_threads, the compiler takes up to 115 registers (4x4 64QAM) instead of 64, and
// fewer blocks fit on an SM.
constexpr int k_mtt_bound_threads = 256;

/*!
 * Blocks of k_mtt_bound_threads per SM mtt_detect_kernel asks the compiler to fit: 4 at
 * 4x4 16QAM, which holds it to 64 registers instead of 74 (4 bytes spilled), 50 %
 * occupancy instead of 37.5 %: 1.02-1.03x there on an H100; elsewhere 0, the compiler's
 * own choice (2x2 16QAM with the bound of 4: 0.94x).
 */
template <int NT, int Q>
constexpr int mtt_min_blocks()
{
    return NT == 4 && Q == 4 ? 4 : 0;
}
// Threads (= matrices) per preprocessing block: small, so that the matrices spread over
// every SM.
constexpr int k_mtt_prep_threads = 32;

/*!
 * One thread per channel matrix: the sorted or the plain QR (qr_device.cuh; per-matrix
 * strides n_tx*n_rx for Qc, n_tx^2 for R, k_max_ant for perm) and 1/R(p,p) for the
 * extension slicer (n_tx per matrix, sic_inverse: the FSD's rule).
 */
template <int NT_C, int NR_C> // compile-time sizes or 0 (qr_device.cuh)
__global__ void __launch_bounds__(k_mtt_prep_threads)
    mtt_preprocess_kernel(const float2* __restrict__ H,
                          int n_mat,
                          int nr,
                          int nt,
                          bool sorted,
                          double2* __restrict__ Qc,
                          double2* __restrict__ R,
                          double* __restrict__ inv_diag,
                          unsigned char* __restrict__ perm)
{
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= n_mat)
        return;
    if (NT_C) {
        nt = NT_C;
        nr = NR_C;
    }
    const size_t mm = static_cast<size_t>(m);
    const float2* hm = H + mm * nr * nt;
    double2* ro = R + mm * nt * nt;
    if (sorted)
        qr_sorted_one<NT_C, NR_C>(hm, nr, nt, Qc + mm * nt * nr, ro, perm + mm * k_max_ant);
    else
        qr_plain_one<NT_C, NR_C>(hm, nr, nt, Qc + mm * nt * nr, ro, perm + mm * k_max_ant);
    double scale = 0.0;
    for (int i = 0; i < nt * nt; ++i)
        scale = fmax(scale, hypot(ro[i].x, ro[i].y));
    for (int k = 0; k < nt; ++k)
        inv_diag[mm * nt + k] = sic_inverse(ro[k * nt + k].x, scale);
}

/*!
 * mtt_preprocess_kernel with one lane per column (NT = 2 or 4 lanes per matrix,
 * qr_device.cuh's lane-parallel QRs): the same values bit for bit.
 */
template <int NT, int NR>
__global__ void __launch_bounds__(k_prep_lane_threads)
    mtt_preprocess_lanes_kernel(const float2* __restrict__ H,
                                int n_mat,
                                bool sorted,
                                double2* __restrict__ Qc,
                                double2* __restrict__ R,
                                double* __restrict__ inv_diag,
                                unsigned char* __restrict__ perm)
{
    static_assert(NT == 2 || NT == 4, "lane groups of 2 or 4 lanes");
    constexpr int k_mats = k_prep_lane_threads / NT;  // matrices per block
    const int c = static_cast<int>(threadIdx.x) % NT; // this lane's column
    const size_t m = static_cast<size_t>(blockIdx.x) * k_mats + threadIdx.x / NT;
    // Lanes past the last matrix work on zeros (they take part in the shuffles) and write
    // nothing.
    const bool live = m < static_cast<size_t>(n_mat);
    double2 v[NR];
    MIMODET_UNROLL
    for (int r = 0; r < NR; ++r) {
        const float2 h = live ? H[m * NR * NT + r * NT + c] : make_float2(0.0f, 0.0f);
        v[r] = make_double2(h.x, h.y);
    }
    double2 Rc[NT];
    int p = c;
    if (sorted) // uniform over the grid: every lane takes part in the same shuffles
        qr_sorted_lanes<NT, NR>(c, v, Rc, p);
    else
        qr_cgs2_lanes<NT, NR>(c, v, Rc);
    double diag;
    const double scale = qr_lanes_store<NT, NR>(c, v, Rc, p, live, m, Qc, R, perm, diag);
    if (live)
        inv_diag[m * NT + c] = sic_inverse(diag, scale);
}

/*!
 * Enqueues the MTT preprocessing of n_mat matrices on stream s (launch checked): the
 * lane-parallel kernel for the shapes it has (4x4, 2x2, 2 tx x 4 rx), one thread per
 * matrix for the others or where one_thread asks for it (the tests' reference).
 */
void launch_mtt_preprocess(cudaStream_t s,
                           const float2* H,
                           size_t n_mat,
                           int nr,
                           int nt,
                           bool sorted,
                           double2* Qc,
                           double2* R,
                           double* inv_diag,
                           unsigned char* perm,
                           bool one_thread = false)
{
    dispatch_prep_shape(nt, nr, [&](auto nt_c, auto nr_c) {
        constexpr int NT_C = decltype(nt_c)::value, NR_C = decltype(nr_c)::value;
        if constexpr (NT_C != 0) {
            if (!one_thread) {
                constexpr size_t mats = k_prep_lane_threads / NT_C;
                const unsigned blocks = static_cast<unsigned>((n_mat + mats - 1) / mats);
                mtt_preprocess_lanes_kernel<NT_C, NR_C>
                    <<<blocks, k_prep_lane_threads, 0, s>>>(
                        H, static_cast<int>(n_mat), sorted, Qc, R, inv_diag, perm);
                return;
            }
        }
        const unsigned blocks =
            static_cast<unsigned>((n_mat + k_mtt_prep_threads - 1) / k_mtt_prep_threads);
        mtt_preprocess_kernel<NT_C, NR_C><<<blocks, k_mtt_prep_threads, 0, s>>>(
            H, static_cast<int>(n_mat), nr, nt, sorted, Qc, R, inv_diag, perm);
    });
    MIMODET_CUDA_CHECK_LAUNCH();
}

//! Doubles of a vector's per-bit minima: both hypotheses of the q bits of each stage.
inline int mtt_minima_per_vector(int nt, int q) { return 2 * nt * q; }

//! Shared memory of one vector: the survivors' reduction keys M, two list-metric buffers
//! of M (alternating stages, so one barrier per stage protects them), 1/R(p,p), the
//! per-bit minima of every stage, the survivors' residuals M x rows and y' = Q^H y.
size_t mtt_shared_per_vector(int nt, int M, int q)
{
    const int rows = nt > 1 ? nt - 1 : 1;
    const size_t doubles = 3 * static_cast<size_t>(M) + nt + mtt_minima_per_vector(nt, q);
    return sizeof(double) * doubles + sizeof(double2) * (static_cast<size_t>(M) * rows + nt);
}

/*!
 * Barrier of a vector's M = 2^Q threads, the only ones that use its shared arrays in the
 * stage loop: a warp barrier where they are lanes of one warp (QPSK, 16QAM), so that no
 * vector waits for the block's others (1.03-1.04x at 4x4 and 2x2 on an H100); the
 * block's at 64QAM, two warps a vector (a named barrier per vector took 4 more registers,
 * 3 blocks per SM instead of 4: 0.98x).
 */
template <int Q>
__device__ inline void mtt_vector_sync()
{
    if constexpr ((1 << Q) <= 32)
        __syncwarp();
    else
        __syncthreads();
}

/*!
 * Block = vpb vectors x M threads (M = 2^q). Dynamic shared memory, per block:
 * s_w [vpb][M], s_l [vpb][2][M], s_inv [vpb][NT], s_bm [vpb][NT * q][2] (double; minima
 * of bit b at stage t in entry t * q + b, hypotheses 0 and 1), then s_res [vpb][M][rows],
 * s_z [vpb][NT] (double2); statically, the constellation. NT is a template argument so
 * that the residuals of a thread stay in registers (all stage loops unroll), Q (bits per
 * symbol) so that the edge reduction, the slicer and the bit scans unroll.
 */
template <int NT, int Q>
__global__ void __launch_bounds__(k_mtt_bound_threads, mtt_min_blocks<NT, Q>())
    mtt_detect_kernel(const float2* __restrict__ y,
                      const double2* __restrict__ Qc,
                      const double2* __restrict__ R,
                      const double* __restrict__ inv_diag,
                      const unsigned char* __restrict__ perm,
                      const float* __restrict__ noise_var,
                      int n_vec,
                      const __grid_constant__ segment_map map,
                      int nr,
                      int vpb,
                      float clip,
                      float* __restrict__ llr)
{
    constexpr int RR = mtt_rows<NT>::value;
    constexpr int q = Q;
    extern __shared__ double s_mem[];
    __shared__ double2 s_pts[1 << Q];
    const int M = 1 << q;
    double* const s_w_all = s_mem;
    double* const s_l_all = s_w_all + vpb * M;
    double* const s_inv_all = s_l_all + vpb * 2 * M;
    double* const s_bm_all = s_inv_all + vpb * NT;
    constexpr int n_bm = 2 * NT * q; // mtt_minima_per_vector
    // (3 M + NT + n_bm) doubles per vector: an odd count only if NT is odd and vpb is
    // odd; round up so that the double2 part stays 16-byte aligned.
    const int n_dbl = (vpb * (3 * M + NT + n_bm) + 1) & ~1;
    double2* const s_res_all = reinterpret_cast<double2*>(s_w_all + n_dbl);
    double2* const s_z_all = s_res_all + vpb * M * RR;

    const long long vbase = static_cast<long long>(blockIdx.x) * vpb;

    // y' = Q^H y and 1/R(p,p), one entry per thread.
    for (int idx = threadIdx.x; idx < vpb * NT; idx += blockDim.x) {
        const int lv = idx / NT, k = idx % NT;
        const long long gv = vbase + lv;
        double2 acc = make_double2(0.0, 0.0);
        double inv = 0.0;
        if (gv < n_vec) {
            const long long m = map.matrix_of(gv);
            acc = rotate_entry(Qc + (m * NT + k) * nr, y + gv * nr, nr);
            inv = inv_diag[m * NT + k];
        }
        s_z_all[idx] = acc;
        s_inv_all[idx] = inv;
    }
    load_points<Q>(s_pts);
    __syncthreads();

    // Threads of a vector past the end still run (with matrix 0 and y' = 0): they take
    // part in the barriers, and write nothing.
    const int lv = threadIdx.x >> q;
    const int v = threadIdx.x & (M - 1);
    const long long gv = vbase + lv;
    const bool valid = gv < n_vec;
    const long long m = valid ? map.matrix_of(gv) : 0;
    const double2* const Rm = R + m * NT * NT;
    const double2* const pts = s_pts;
    const double* const pam = c_pam + pam_offset(q);
    const double2* const z = s_z_all + lv * NT;
    const double* const inv = s_inv_all + lv * NT;
    double* const s_w = s_w_all + lv * M;
    double* const s_l = s_l_all + lv * 2 * M;
    double2* const s_res = s_res_all + lv * M * RR;
    double* const s_bm = s_bm_all + lv * n_bm;
    const double inv_nv = valid ? 1.0 / static_cast<double>(noise_var[m]) : 0.0;
    const unsigned char* const pm = perm + m * k_max_ant;
    const int chunks = mtt_bit_chunks(q);
    const int per_chunk = (M / 2) / chunks;

    // Stage 0: one edge from the root per vertex; every vertex keeps its single path.
    double2 res[NT]; // residual of the survivor through vertex v (rows < position)
    double d = mtt_root<NT>(z, Rm, pts[v], res);

#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const int p = NT - 1 - t;
        double list_d = d; // the last stage's list is the reduced survivors
        if (t < NT - 1) {
            const int pn = p - 1;
            // Survivor v's reduction key and residual rows 0..pn, for the reduction.
            s_w[v] = mtt_reduce_key(d, res[pn]);
#pragma unroll
            for (int r = 0; r < RR; ++r)
                if (r <= pn)
                    s_res[v * RR + r] = res[r];

            // L_t's path through vertex v: survivor v extended to the last stage.
            double2 ext[NT];
#pragma unroll
            for (int r = 0; r < NT; ++r)
                ext[r] = res[r];
            double ext_d = d;
#pragma unroll
            for (int ps = pn; ps >= 0; --ps)
                ext_d += mtt_extend_step<NT>(ext, Rm, ps, inv[ps], pts, pam, q);
            list_d = ext_d;
            mtt_vector_sync<Q>();

            // Vertex v of position pn: the edge reduction, then its survivor's residual.
            int k_arg;
            d = mtt_reduce(s_w, s_res + pn, RR, Rm[pn * NT + pn], pts[v], M, k_arg);
            double2 from[NT];
#pragma unroll
            for (int r = 0; r < NT; ++r)
                if (r < pn)
                    from[r] = s_res[k_arg * RR + r];
            mtt_cancel<NT>(from, Rm, pn, pts[v], res);
        }

        // Per-bit minima over L_t (split as mtt_bit_chunks says), reduced over the
        // pieces of a column with warp shuffles; the column's first thread pairs them
        // with the other hypothesis's and keeps them for the LLRs. The two s_l buffers
        // alternate, so the writes of stage t+1 cannot overtake the reads of stage t;
        // the survivors' buffers are rewritten only after this barrier, when every
        // reduction of stage t has read them.
        double* const sl = s_l + (t & 1) * M;
        sl[v] = list_d;
        mtt_vector_sync<Q>();
        const int col = v / chunks, piece = v % chunks;
        double part = INFINITY;
        if (col < 2 * q)
            part = mtt_bit_partial(sl, q, col >> 1, col & 1, piece * per_chunk, per_chunk);
        // Every thread of the block takes part in the shuffles (full mask).
        for (int o = 1; o < chunks; o <<= 1) {
            const double x = __shfl_xor_sync(0xffffffffu, part, o);
            part = x < part ? x : part;
        }
        const double other = __shfl_xor_sync(0xffffffffu, part, chunks); // column c ^ 1
        if (col < 2 * q && (col & 1) == 0 && piece == 0) {
            s_bm[2 * (t * q + (col >> 1))] = part;
            s_bm[2 * (t * q + (col >> 1)) + 1] = other;
        }
    }

    // The LLRs, one per thread: bit b of stage t (position NT-1-t) from entry t q + b.
    mtt_vector_sync<Q>();
    if (!valid)
        return;
    for (int j = v; j < NT * q; j += M) {
        const int t = j / q, b = j % q;
        llr[(gv * NT + pm[NT - 1 - t]) * q + b] =
            maxlog_llr(s_bm[2 * j], s_bm[2 * j + 1], inv_nv, clip);
    }
}

// ---------------------------------------------------------------- detector

class mtt_cuda_detector : public cuda_batch_detector
{
public:
    mtt_cuda_detector(const detector_config& cfg, const mtt::params& p)
        : cuda_batch_detector(cfg, true), d_params(p)
    {
        upload_tables(device());
        const int q = static_cast<int>(cfg.mod);
        const int M = 1 << q;
        // Vectors per block: as many as the thread and shared-memory limits allow, a
        // power of two (the factory made sure that one vector fits).
        d_vpb = k_mtt_threads / M;
        d_shared = d_vpb * mtt_shared_per_vector(cfg.n_tx, M, q) + sizeof(double);
        d_stats.evaluated = mtt::edge_weights_per_vector(cfg.n_tx, M);
        d_stats.expanded = mtt::vertex_expansions_per_vector(cfg.n_tx, M);
    }

protected:
    void reserve_scratch(size_t n_mat, size_t n_vec) override
    {
        (void)n_vec;
        const size_t nr = d_cfg.n_rx, nt = d_cfg.n_tx;
        d_Q.reserve(n_mat * nr * nt);
        d_R.reserve(n_mat * nt * nt);
        d_inv.reserve(n_mat * nt);
        d_perm.reserve(n_mat * k_max_ant);
    }

    void launch(cudaStream_t s, const chunk& c) override
    {
        const int nr = d_cfg.n_rx, nt = d_cfg.n_tx;
        if (c.n_vec > static_cast<size_t>(INT_MAX) ||
            c.n_mat > static_cast<size_t>(INT_MAX))
            throw std::invalid_argument("mimodet: mtt cuda: chunk too large");
        double2* Q = d_Q.get() + c.m0 * nr * nt;
        double2* R = d_R.get() + c.m0 * nt * nt;
        unsigned char* perm = d_perm.get() + c.m0 * k_max_ant;
        double* inv = d_inv.get() + c.m0 * nt;
        launch_mtt_preprocess(
            s, c.H, c.n_mat, nr, nt, d_params.sorted_qr, Q, R, inv, perm);
        const unsigned blocks = static_cast<unsigned>((c.n_vec + d_vpb - 1) / d_vpb);
        dispatch_nt_q(nt, static_cast<int>(d_cfg.mod), "mtt", [&](auto nt_c, auto q_c) {
            launch_nt<decltype(nt_c)::value, decltype(q_c)::value>(
                blocks, s, c, Q, R, inv, perm);
        });
    }

    vector_stats host_stats() const override { return d_stats; }

private:
    template <int NT, int Q>
    void launch_nt(unsigned blocks,
                   cudaStream_t s,
                   const chunk& c,
                   const double2* Qc,
                   const double2* R,
                   const double* inv,
                   const unsigned char* perm)
    {
        const unsigned threads = static_cast<unsigned>(d_vpb << Q); // k_mtt_threads
        mtt_detect_kernel<NT, Q>
            <<<blocks, threads, d_shared, s>>>(c.y,
                                               Qc,
                                               R,
                                               inv,
                                               perm,
                                               c.noise_var,
                                               static_cast<int>(c.n_vec),
                                               c.map,
                                               d_cfg.n_rx,
                                               d_vpb,
                                               d_cfg.llr_clip,
                                               c.llr);
        MIMODET_CUDA_CHECK_LAUNCH();
    }

    const mtt::params d_params;
    vector_stats d_stats;
    int d_vpb = 1;
    size_t d_shared = 0;
    device_buffer<double2> d_Q, d_R;
    device_buffer<double> d_inv;
    device_buffer<unsigned char> d_perm;
};

} // namespace

size_t mtt_cuda_preprocess_differences(
    const std::complex<float>* H, int n_mat, int n_rx, int n_tx, bool sorted)
{
    if (n_mat < 1 || n_rx < 1 || n_tx < 1 || n_tx > k_max_ant || n_rx > k_max_ant)
        throw std::invalid_argument(
            "mimodet: mtt_cuda_preprocess_differences: bad shape");
    if (cuda_device_count() == 0)
        throw std::runtime_error(
            "mimodet: mtt_cuda_preprocess_differences: no CUDA device");
    const size_t nt = static_cast<size_t>(n_tx), nr = static_cast<size_t>(n_rx);
    const size_t n_h = n_mat * nr * nt, n_q = n_mat * nt * nr, n_r = n_mat * nt * nt;
    const size_t n_i = n_mat * nt, n_p = n_mat * static_cast<size_t>(k_max_ant);
    device_buffer<float2> d_h;
    d_h.reserve(n_h);
    MIMODET_CUDA_CHECK(
        cudaMemcpy(d_h.get(), H, n_h * sizeof(float2), cudaMemcpyHostToDevice));
    std::vector<double2> q[2], r[2];
    std::vector<double> inv[2];
    std::vector<unsigned char> p[2];
    for (int k = 0; k < 2; ++k) {
        device_buffer<double2> d_q, d_r;
        device_buffer<double> d_i;
        device_buffer<unsigned char> d_p;
        d_q.reserve(n_q);
        d_r.reserve(n_r);
        d_i.reserve(n_i);
        d_p.reserve(n_p);
        // Unwritten entries (the permutation's tail) compare equal.
        MIMODET_CUDA_CHECK(cudaMemset(d_p.get(), 0, n_p));
        launch_mtt_preprocess(nullptr,
                              d_h.get(),
                              n_mat,
                              n_rx,
                              n_tx,
                              sorted,
                              d_q.get(),
                              d_r.get(),
                              d_i.get(),
                              d_p.get(),
                              /*one_thread=*/k == 1);
        q[k] = download(d_q, n_q);
        r[k] = download(d_r, n_r);
        inv[k] = download(d_i, n_i);
        p[k] = download(d_p, n_p);
    }
    // double2 compares as one 16-byte pattern: a difference in either half counts once.
    return count_bit_differences(q[0], q[1]) + count_bit_differences(r[0], r[1]) +
           count_bit_differences(inv[0], inv[1]) + count_bit_differences(p[0], p[1]);
}

detector::sptr make_mtt_cuda_detector(const detector_config& cfg)
{
    // One place for the MTT rules (n_tx, order, sorted_qr default).
    const mtt::params p = mtt::resolve_params(cfg);
    std::string why;
    if (cfg.n_tx < 1 || cfg.n_tx > k_max_ant)
        why = "1 to " + std::to_string(k_max_ant) + " transmit antennas, got " +
              std::to_string(cfg.n_tx);
    else if (cfg.n_rx < cfg.n_tx || cfg.n_rx > k_max_ant)
        why = "n_tx to " + std::to_string(k_max_ant) + " receive antennas, got " +
              std::to_string(cfg.n_rx);
    else if (cfg.mod != modulation::qpsk && cfg.mod != modulation::qam16 &&
             cfg.mod != modulation::qam64)
        why = "QPSK, 16QAM and 64QAM only";
    if (!why.empty()) {
        throw cuda_unsupported("mimodet: mtt on CUDA supports " + why +
                                    " (use backend 'cpu' or 'auto')");
    }
    return std::make_shared<mtt_cuda_detector>(cfg, p);
}

} // namespace core
} // namespace mimodet
} // namespace gr
