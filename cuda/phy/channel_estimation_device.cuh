/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The device side of channel_estimation_cuda.cu: the kernels (ls_kernel, port_kernel,
// wiener_kernel), the layout of their tables and sums, and the slot's model as the
// device decides it (decide_cell, decide_model, on channel_model.h's code). The file
// comment of channel_estimation_cuda.cu tells how a slot runs through them.

#ifndef INCLUDED_MIMODET_CUDA_CHANNEL_ESTIMATION_DEVICE_CUH
#define INCLUDED_MIMODET_CUDA_CHANNEL_ESTIMATION_DEVICE_CUH

#include "cuda/phy/float_math.cuh"
#include "phy/channel_estimation.h"
#include "phy/channel_model.h"
#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>
#include <cstddef>

namespace gr {
namespace mimodet {
namespace core {

namespace { // included by channel_estimation_cuda.cu only
constexpr int kThreads = 256;
constexpr int kLags = channel_estimation::k_lags;
constexpr int kMaxPorts = 4;
constexpr int kPairSums = 5;            // order-2 and order-3 energies, power, corr re, im
constexpr int kPortSums = 1 + kLags;    // derotated power, lag sums

//! One port of one slot: offsets into the shared tables.
struct port_table {
    int P;         //!< pilot subcarriers
    int E;         //!< CRS elements
    int first_off; //!< into first[] (P + 1 entries: each pilot's first element)
    int off;       //!< into nrm[] and pos[] (P entries)
    int eoff;      //!< into inv[] and row_re[] (E entries)
    int delay_off, n_delay;
    int lag_off[kLags], n_lag[kLags];
};

//! Sums of N doubles, reduced together.
template <int N>
struct dsums {
    double v[N];
};
template <int N>
struct dsums_add {
    __device__ dsums<N> operator()(const dsums<N>& a, const dsums<N>& b) const
    {
        dsums<N> c;
#pragma unroll
        for (int i = 0; i < N; ++i)
            c.v[i] = __dadd_rn(a.v[i], b.v[i]);
        return c;
    }
};

//! The block's sum of every thread's s, written by thread 0 to out[0..N-1].
template <int N>
__device__ inline void block_sum_store(const dsums<N>& s, double* out)
{
    using reduce_t = cub::BlockReduce<dsums<N>, kThreads>;
    __shared__ typename reduce_t::TempStorage tmp;
    const dsums<N> total = reduce_t(tmp).Reduce(s, dsums_add<N>());
    if (threadIdx.x == 0)
        for (int q = 0; q < N; ++q)
            out[q] = total.v[q];
}

// std::polar(1.0f, float(theta * pos)).
__device__ inline float2 phasor(double theta, double pos)
{
    float s, c;
    sincosf(__double2float_rn(__dmul_rn(theta, pos)), &s, &c);
    return make_float2(c, s);
}

// One block per (t, r) pair.
__global__ void __launch_bounds__(kThreads) ls_kernel(const port_table* __restrict__ ports,
                                                      int n_rx,
                                                      int noise_ports,
                                                      const int* __restrict__ first,
                                                      const float* __restrict__ nrm,
                                                      const float2* __restrict__ inv,
                                                      const int* __restrict__ row_re,
                                                      int rows_len,
                                                      const int* __restrict__ delay,
                                                      const float2* __restrict__ y,
                                                      float2* __restrict__ ls,
                                                      int Pm,
                                                      double* __restrict__ pair_sums)
{
    const int pair = blockIdx.x, t = pair / n_rx, r = pair % n_rx;
    const port_table p = ports[t];
    const float2* yr = y + static_cast<size_t>(r) * rows_len; // antenna r's CRS rows
    float2* v = ls + static_cast<size_t>(pair) * Pm;
    for (int i = threadIdx.x; i < p.P; i += blockDim.x) {
        float2 acc = make_float2(0.0f, 0.0f);
        const int e1 = first[p.first_off + i + 1];
        for (int e = first[p.first_off + i]; e < e1; ++e) {
            const float2 m = cmul_rn(yr[row_re[p.eoff + e]], inv[p.eoff + e]);
            acc = make_float2(__fadd_rn(acc.x, m.x), __fadd_rn(acc.y, m.y));
        }
        const float n = nrm[p.off + i];
        v[i] = make_float2(__fdiv_rn(acc.x, n), __fdiv_rn(acc.y, n));
    }
    if (t >= noise_ports)
        return; // the whole block
    __syncthreads();
    dsums<kPairSums> s = {};
    for (int i = threadIdx.x; i < p.P; i += blockDim.x) {
        s.v[2] = __dadd_rn(s.v[2], static_cast<double>(cnorm_rn(v[i])));
        // Difference energies (channel_estimation::difference_energy): e = sum_j c_j h_(i+j)
        // in complex double, in the order j = 0..d, then |e|^2 / gain.
        if (i + 2 < p.P) {
            double er = 0.0, ei = 0.0;
            const double c2[3] = { 1.0, -2.0, 1.0 };
            for (int j = 0; j < 3; ++j) {
                er = __dadd_rn(er, __dmul_rn(c2[j], static_cast<double>(v[i + j].x)));
                ei = __dadd_rn(ei, __dmul_rn(c2[j], static_cast<double>(v[i + j].y)));
            }
            s.v[0] = __dadd_rn(s.v[0],
                               __ddiv_rn(__dadd_rn(__dmul_rn(er, er), __dmul_rn(ei, ei)), 6.0));
        }
        if (i + 3 < p.P) {
            double er = 0.0, ei = 0.0;
            const double c3[4] = { 1.0, -3.0, 3.0, -1.0 };
            for (int j = 0; j < 4; ++j) {
                er = __dadd_rn(er, __dmul_rn(c3[j], static_cast<double>(v[i + j].x)));
                ei = __dadd_rn(ei, __dmul_rn(c3[j], static_cast<double>(v[i + j].y)));
            }
            s.v[1] = __dadd_rn(s.v[1],
                               __ddiv_rn(__dadd_rn(__dmul_rn(er, er), __dmul_rn(ei, ei)), 20.0));
        }
    }
    // Adjacent-pilot correlation conj(v_i) v_(i+1) (the mean delay).
    for (int j = threadIdx.x; j < p.n_delay; j += blockDim.x) {
        const int i = delay[p.delay_off + j];
        const double xr = v[i].x, xi = -static_cast<double>(v[i].y);
        const double yr = v[i + 1].x, yi = v[i + 1].y;
        s.v[3] = __dadd_rn(s.v[3], __dsub_rn(__dmul_rn(xr, yr), __dmul_rn(xi, yi)));
        s.v[4] = __dadd_rn(s.v[4], __dadd_rn(__dmul_rn(xr, yi), __dmul_rn(xi, yr)));
    }
    block_sum_store(s, pair_sums + pair * kPairSums);
}

// A block per (port t, part y): part 0 derotates the port's pilots into the Wiener
// step's layout and sums their power; part 1 + li sums lag li's products. The lag parts
// derotate the pilots they read themselves (the same values as part 0's), so the six run
// side by side instead of one after another in one block (17.6 us on the H100 for
// 20 MHz 4x4, Nsight Compute). Each sum is taken by the same threads in the same order
// and reduced by the same block reduction in whichever block takes it.
__global__ void __launch_bounds__(kThreads) port_kernel(const port_table* __restrict__ ports,
                                                        int n_rx,
                                                        int noise_pairs,
                                                        int d0,
                                                        const double* __restrict__ pos,
                                                        const int2* __restrict__ lag,
                                                        const float2* __restrict__ ls,
                                                        int Pm,
                                                        float* __restrict__ lst,
                                                        const double* __restrict__ pair_sums,
                                                        double* __restrict__ port_sums,
                                                        double* __restrict__ theta_out)
{
    __shared__ double s_theta;
    if (threadIdx.x == 0) {
        // The pairs' correlations added in the order (t, r), as on the CPU.
        double cr = 0.0, ci = 0.0;
        for (int q = 0; q < noise_pairs; ++q) {
            cr = __dadd_rn(cr, pair_sums[q * kPairSums + 3]);
            ci = __dadd_rn(ci, pair_sums[q * kPairSums + 4]);
        }
        const double theta = (cr != 0.0 || ci != 0.0) ? atan2(ci, cr) / d0 : 0.0;
        s_theta = theta;
        if (blockIdx.x == 0 && blockIdx.y == 0)
            *theta_out = theta;
    }
    __syncthreads();
    const double theta = s_theta;
    const int t = blockIdx.x, part = blockIdx.y;
    const port_table p = ports[t];
    // Pilot i of antenna r, derotated: LS times conj(polar(1, theta pos_i)).
    auto derotated = [&](int r, int i) {
        const float2 rot = phasor(theta, pos[p.off + i]);
        return cmul_rn(ls[static_cast<size_t>(t * n_rx + r) * Pm + i],
                       make_float2(rot.x, -rot.y));
    };
    dsums<1> s = {};
    if (part == 0) {
        const int stride = 2 * n_rx;
        for (int i = threadIdx.x; i < p.P; i += blockDim.x) {
            float* out = lst + (static_cast<size_t>(t) * Pm + i) * stride;
            for (int r = 0; r < n_rx; ++r) {
                const float2 v = derotated(r, i);
                s.v[0] = __dadd_rn(s.v[0], static_cast<double>(cnorm_rn(v)));
                out[2 * r] = v.x;
                out[2 * r + 1] = v.y;
            }
        }
    } else {
        const int li = part - 1, n = p.n_lag[li];
        const int2* lp = lag + p.lag_off[li];
        for (int q = threadIdx.x; q < n * n_rx; q += blockDim.x) {
            const int r = q / n, j = q - r * n;
            const float2 x = derotated(r, lp[j].x), y = derotated(r, lp[j].y);
            s.v[0] = __dadd_rn(
                s.v[0],
                __dadd_rn(__dmul_rn(static_cast<double>(x.x), static_cast<double>(y.x)),
                          __dmul_rn(static_cast<double>(x.y), static_cast<double>(y.y))));
        }
    }
    block_sum_store(s, port_sums + t * kPortSums + part);
}

struct filter_ref {
    int M; //!< 0: no filter (a table entry not uploaded yet)
    const int* start;
    const float* w;
};
struct filter_set {
    filter_ref f[kMaxPorts];
};

//! A slot's constants of the model (channel_estimation::estimate()'s counts).
struct slot_model_counts {
    size_t count[4];       //!< difference terms of orders 0..3
    size_t n_power, n_pw;  //!< pilot values of the noise ports, of all ports
    size_t count_lag[kLags];
    int pattern[kMaxPorts]; //!< each port's pilot pattern
};

enum model_status : int { model_ok = 0, model_unusable = 1, model_no_filter = 2 };

//! The device's model of a slot, copied back with the slot's outputs.
struct device_model {
    double nv;        //!< noise variance (NaN: unusable)
    float nv_detect;  //!< what the detection reads: nv, or 1 where the slot is not estimated
    int b_idx, snr_idx;
    int status;       //!< model_status
};

//! What wiener_kernel needs to decide the model itself (enqueue_packed()).
struct device_model_args {
    const slot_model_counts* counts; //!< this slot's
    const double* sums;              //!< pairs * kPairSums, then n_tx * kPortSums
    int n_pairs, noise_pairs;
    const filter_ref* table; //!< [pattern][b cell][SNR cell]
    int b_cells;
    double b_max;
    device_model* out;
};

/*!
 * The slot's model, as channel_estimation::estimate() decides it, from the kernels' sums
 * (pairs * kPairSums, then n_tx * kPortSums): the pairs' and the ports' sums combined in
 * the order (t, r) and t, then channel_model's decisions. The host path (enqueue(), on
 * the sums copied back) and the device path (wiener_kernel) both call it. Sets nv (NaN:
 * unusable; then b_idx and snr_idx are not set).
 */
__host__ __device__ inline void decide_cell(const double* sums,
                                            int n_pairs,
                                            int noise_pairs,
                                            int n_tx,
                                            const slot_model_counts& c,
                                            double b_max,
                                            double& nv,
                                            int& b_idx,
                                            int& snr_idx)
{
    double sum[4] = { 0, 0, 0, 0 }, power = 0.0;
    for (int pair = 0; pair < noise_pairs; ++pair) {
        sum[2] += sums[pair * kPairSums];
        sum[3] += sums[pair * kPairSums + 1];
        power += sums[pair * kPairSums + 2];
    }
    nv = channel_model::noise_variance(sum, c.count, power, c.n_power);
    if (!(nv > 0.0))
        return; // NaN
    const double* ps = sums + n_pairs * kPairSums;
    double pw = 0.0, sum_lag[kLags] = {};
    for (int t = 0; t < n_tx; ++t) {
        pw += ps[t * kPortSums];
        for (int li = 0; li < kLags; ++li)
            sum_lag[li] += ps[t * kPortSums + 1 + li];
    }
    channel_model::grid_cell(pw, c.n_pw, sum_lag, c.count_lag, nv, b_max, b_idx, snr_idx);
}

//! decide_cell() on the device, and the slot's filters from the table.
__device__ device_model decide_model(const device_model_args& a, int n_tx, filter_set& fs)
{
    device_model m{};
    m.nv_detect = 1.0f;
    decide_cell(a.sums, a.n_pairs, a.noise_pairs, n_tx, *a.counts, a.b_max, m.nv, m.b_idx,
                m.snr_idx);
    if (!(m.nv > 0.0)) {
        m.status = model_unusable;
        return m;
    }
    m.status = model_no_filter;
    if (m.b_idx < 0 || m.b_idx >= a.b_cells)
        return m; // the host path decides such a slot (the CPU's arithmetic)
    for (int t = 0; t < n_tx; ++t) {
        fs.f[t] = a.table[(static_cast<size_t>(a.counts->pattern[t]) * a.b_cells + m.b_idx) *
                              channel_model::k_snr_cells +
                          (m.snr_idx - channel_model::k_snr_idx_min)];
        if (fs.f[t].M == 0)
            return m;
    }
    m.status = model_ok;
    m.nv_detect = __double2float_rn(m.nv);
    return m;
}

// One thread per element of H, (k * n_rx + r) * n_tx + t. The sum over the window runs
// in the CPU's order (wiener_range: a += w_j * g_j, no fused multiply-add), then the
// mean-delay phase back times scale (channel_estimation::h_scale(), as the CPU's
// std::polar(scale, phase)). With model (non-null), each block's first thread decides
// the model and finds the filters (a few us, where a kernel of its own would add a
// launch); block 0 writes it out. A slot that
// is unusable or lacks a filter gets a zero H.
__global__ void __launch_bounds__(kThreads) wiener_kernel(filter_set filters,
                                                          const device_model_args* model,
                                                          int n_tx,
                                                          int n_rx,
                                                          int n_sc,
                                                          int Pm,
                                                          const float* __restrict__ lst,
                                                          const double* __restrict__ pos_sc,
                                                          const double* __restrict__ theta_in,
                                                          float scale,
                                                          float2* __restrict__ H,
                                                          int* __restrict__ nonfinite)
{
    __shared__ filter_set s_filters;
    __shared__ int s_status;
    if (model) {
        if (threadIdx.x == 0) {
            const device_model m = decide_model(*model, n_tx, s_filters);
            s_status = m.status;
            if (blockIdx.x == 0)
                *model->out = m;
        }
        __syncthreads();
    }
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n_sc * n_rx * n_tx)
        return;
    if (model && s_status != model_ok) {
        // No H for this slot: zeros, so that the detection, whose outputs are dropped,
        // runs on defined values (the buffer would hold the last slot's H, or nothing).
        H[idx] = make_float2(0.0f, 0.0f);
        return;
    }
    const int t = idx % n_tx, r = (idx / n_tx) % n_rx, k = idx / (n_tx * n_rx);
    const filter_ref f = model ? s_filters.f[t] : filters.f[t];
    const int stride = 2 * n_rx;
    const float* w = f.w + static_cast<size_t>(k) * f.M;
    const float* g = lst + (static_cast<size_t>(t) * Pm + f.start[k]) * stride + 2 * r;
    float ar = 0.0f, ai = 0.0f;
    for (int j = 0; j < f.M; ++j) {
        const float wj = w[j];
        ar = __fadd_rn(ar, __fmul_rn(wj, g[j * stride]));
        ai = __fadd_rn(ai, __fmul_rn(wj, g[j * stride + 1]));
    }
    const float2 p = phasor(*theta_in, pos_sc[k]);
    const float2 h = cmul_rn(make_float2(ar, ai),
                             make_float2(__fmul_rn(scale, p.x), __fmul_rn(scale, p.y)));
    H[idx] = h;
    if (nonfinite && !(isfinite(h.x) && isfinite(h.y)))
        *nonfinite = 1; // the fused receiver flags the slot (the detector would have)
}
} // namespace

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
