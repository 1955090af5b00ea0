/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA multi-pass trellis traversal (journal paper, GPU section): the (sorted) QR runs
// once per channel matrix (one thread per matrix, qr_device.cuh), then every received
// vector gets Q = 2^q threads, one per trellis vertex, and a block holds several
// vectors (QPSK: 8 per warp, 16QAM: 2 per warp, 64QAM: one vector of two warps).
//
// Per stage t (position p = n_tx-1-t of R), thread v is
//   - path v of the reduced survivors: it computes the Q weights of its outgoing edges
//     into position p-1 (one row of the Q x Q matrix in shared memory) and takes their
//     minimum: the first extension of candidate list L_t;
//   - vertex v of stage t+1: after a barrier it takes the minimum of column v (the edge
//     reduction) and builds its survivor's residual from the winning path's residual,
//     which that path's thread left in shared memory.
// So the Q^2 weights between two stages are computed once and serve both the reduction
// and the extension. The remaining extensions of L_t are thread-local (each path picks
// its best edge). The list metrics go to shared memory, and q threads of the vector
// take the per-bit minima and write the antenna's LLRs at its transmit index.
//
// Everything is double precision and every arg-min keeps the first minimum, like the
// CPU, so the paths are the CPU's and the LLRs differ by rounding only.

#include "../lib/core/mtt_common.h"
#include "batch_detector.h"
#include "mtt_cuda.h"
#include "mtt_device.cuh"
#include "qr_device.cuh"
#include <climits>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr int k_mtt_max_threads = 256;     // threads per detection block, at most
constexpr size_t k_mtt_max_shared = 49152; // dynamic shared memory without opt-in

//! Shared memory of one vector: weights M x (M+1) (padded row: the row-wise writes of
//! the M threads fall in different banks), two list-metric buffers of M (alternating
//! stages, so one barrier per stage protects them), the survivors' residuals M x rows
//! and y' = Q^H y.
size_t mtt_shared_per_vector(int nt, int M)
{
    const int rows = nt > 1 ? nt - 1 : 1;
    return sizeof(double) * (static_cast<size_t>(M) * (M + 1) + 2 * M) +
           sizeof(double2) * (static_cast<size_t>(M) * rows + nt);
}

/*!
 * Block = vpb vectors x M threads (M = 2^q). Dynamic shared memory, per block:
 * s_w [vpb][M][M+1], s_d [vpb][2][M] (double), s_res [vpb][M][rows], s_z [vpb][NT]
 * (double2); vpb * M * (M + 3) doubles is even, so the double2 part stays aligned.
 * NT is a template argument so that the residuals of a thread stay in registers (all
 * stage loops unroll).
 */
template <int NT>
__global__ void __launch_bounds__(k_mtt_max_threads)
    mtt_detect_kernel(const float2* __restrict__ y,
                      const double2* __restrict__ Qc,
                      const double2* __restrict__ R,
                      const unsigned char* __restrict__ perm,
                      const float* __restrict__ noise_var,
                      int n_vec,
                      int n_sym,
                      int nr,
                      int q,
                      int vpb,
                      float clip,
                      float* __restrict__ llr)
{
    constexpr int RR = mtt_rows<NT>::value;
    extern __shared__ double s_mem[];
    const int M = 1 << q;
    const int stride = M + 1;
    double* const s_w_all = s_mem;
    double* const s_d_all = s_w_all + vpb * M * stride;
    double2* const s_res_all = reinterpret_cast<double2*>(s_d_all + vpb * 2 * M);
    double2* const s_z_all = s_res_all + vpb * M * RR;

    const long long vbase = static_cast<long long>(blockIdx.x) * vpb;

    // y' = Q^H y, one entry per thread.
    for (int idx = threadIdx.x; idx < vpb * NT; idx += blockDim.x) {
        const int lv = idx / NT, k = idx % NT;
        const long long gv = vbase + lv;
        double2 acc = make_double2(0.0, 0.0);
        if (gv < n_vec) {
            const long long m = gv / n_sym;
            acc = rotate_entry(Qc + (m * NT + k) * nr, y + gv * nr, nr);
        }
        s_z_all[idx] = acc;
    }
    __syncthreads();

    // Threads of a vector past the end still run (with matrix 0 and y' = 0): they take
    // part in the barriers, and write nothing.
    const int lv = threadIdx.x >> q;
    const int v = threadIdx.x & (M - 1);
    const long long gv = vbase + lv;
    const bool valid = gv < n_vec;
    const long long m = valid ? gv / n_sym : 0;
    const double2* const Rm = R + m * NT * NT;
    const double2* const pts = c_points + points_offset(q);
    const double2* const z = s_z_all + lv * NT;
    double* const s_w = s_w_all + lv * M * stride;
    double* const s_d = s_d_all + lv * 2 * M;
    double2* const s_res = s_res_all + lv * M * RR;
    const double inv_nv = valid ? 1.0 / static_cast<double>(noise_var[m]) : 0.0;
    const unsigned char* const pm = perm + m * k_max_ant;

    // Stage 0: one edge from the root per vertex; every vertex keeps its single path.
    double2 res[NT]; // residual of the survivor through vertex v (rows < position)
    double d = mtt_root<NT>(z, Rm, pts[v], res);

#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const int p = NT - 1 - t;
        double list_d = d; // the last stage's list is the reduced survivors
        if (t < NT - 1) {
            const int pn = p - 1;
            // Row v of the weights (path v's outgoing edges); its minimum is the first
            // extension of L_t. The residual goes to shared memory for the reduction.
            int best_q;
            double ext_d = mtt_edge_row(
                res[pn], d, Rm[pn * NT + pn], pts, M, s_w + v * stride, best_q);
#pragma unroll
            for (int r = 0; r < RR; ++r)
                if (r < pn)
                    s_res[v * RR + r] = res[r];
            __syncthreads();

            // Column v: the edge reduction into vertex v of position pn.
            int k_arg;
            const double new_d = mtt_column_min(s_w, stride, v, M, k_arg);
            double2 ext[NT];
            mtt_cancel<NT>(res, Rm, pn, pts[best_q], ext);
            double2 from[NT];
#pragma unroll
            for (int r = 0; r < NT; ++r)
                if (r < pn)
                    from[r] = s_res[k_arg * RR + r];
            mtt_cancel<NT>(from, Rm, pn, pts[v], res);
            d = new_d;

            // Remaining extensions of L_t, thread-local.
#pragma unroll
            for (int ps = pn - 1; ps >= 0; --ps)
                ext_d += mtt_extend_step<NT>(ext, Rm, ps, pts, M);
            list_d = ext_d;
        }

        // Per-bit minima over L_t: the vector's first q threads, one bit each. The two
        // s_d buffers alternate, so the writes of stage t+1 cannot overtake the reads of
        // stage t (there is a barrier between t+1 and t+2 in any case).
        double* const sd = s_d + (t & 1) * M;
        sd[v] = list_d;
        __syncthreads();
        if (valid && v < q) {
            double m0, m1;
            mtt_bit_minima(sd, M, q, v, m0, m1);
            llr[(gv * NT + pm[p]) * q + v] = maxlog_llr(m0, m1, inv_nv, clip);
        }
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
        const size_t per_vec = mtt_shared_per_vector(cfg.n_tx, M);
        int vpb = 1;
        while (2 * vpb * M <= k_mtt_max_threads && 2 * vpb * per_vec <= k_mtt_max_shared)
            vpb *= 2;
        d_vpb = vpb;
        d_shared = vpb * per_vec;
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
        launch_qr_preprocess(s,
                             c.H,
                             c.n_mat,
                             nr,
                             nt,
                             d_params.sorted_qr ? qr_kind::sorted : qr_kind::plain,
                             Q,
                             R,
                             perm);
        const unsigned blocks = static_cast<unsigned>((c.n_vec + d_vpb - 1) / d_vpb);
        dispatch_nt(nt, "mtt", [&](auto nt_c) {
            launch_nt<decltype(nt_c)::value>(blocks, s, c, Q, R, perm);
        });
    }

    vector_stats host_stats() const override { return d_stats; }

private:
    template <int NT>
    void launch_nt(unsigned blocks,
                   cudaStream_t s,
                   const chunk& c,
                   const double2* Q,
                   const double2* R,
                   const unsigned char* perm)
    {
        const int q = static_cast<int>(d_cfg.mod);
        const unsigned threads = static_cast<unsigned>(d_vpb << q);
        mtt_detect_kernel<NT><<<blocks, threads, d_shared, s>>>(c.y,
                                                                Q,
                                                                R,
                                                                perm,
                                                                c.noise_var,
                                                                static_cast<int>(c.n_vec),
                                                                c.n_sym,
                                                                d_cfg.n_rx,
                                                                q,
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
    device_buffer<unsigned char> d_perm;
};

} // namespace

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
    else if (mtt_shared_per_vector(cfg.n_tx, 1 << static_cast<int>(cfg.mod)) >
             k_mtt_max_shared)
        why = "vectors whose trellis fits one block's shared memory";
    if (!why.empty()) {
        if (cfg.backend == "auto")
            return nullptr; // the CPU takes it
        throw std::invalid_argument("mimodet: mtt on CUDA supports " + why +
                                    " (use backend 'cpu' or 'auto')");
    }
    return std::make_shared<mtt_cuda_detector>(cfg, p);
}

} // namespace core
} // namespace mimodet
} // namespace gr
