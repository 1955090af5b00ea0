/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Channel estimation on the GPU: the method of lib/core/channel_estimation.cc with its
// tables, filter cache and model decisions (channel_model.h, filter()), so that the
// algorithm stays in one place. Per slot, on one stream:
//   host: copy the grids' OFDM symbols that hold CRS into page-locked memory (whole rows:
//     sequential, where a gather of the CRS elements alone took 50 us on the H100 host);
//   ls_kernel (a block per antenna pair): LS at the pilots; for ports 0/1 the pair's
//     difference energies, pilot power and adjacent-pilot correlation;
//   port_kernel (a block per port and part): the mean-delay phase, the derotated pilots
//     in the Wiener step's layout and their power, and the spread fit's lag sums;
//   the model (noise variance, filter grid cell) and the filter's weights, then
//   wiener_kernel (a thread per H element): the filter, then the phase back.
// The model is decided in one of two places:
//   - on the host (estimate(), estimate_packed()): the sums are copied back and waited
//     for; the host's filter() makes the weights, uploaded once per cached filter;
//   - on the device (enqueue_packed(), the fused receiver's path): every block of
//     wiener_kernel decides it from the sums (channel_model.h's code) and looks its
//     weights up in a table of the filters uploaded so far, so nothing waits between
//     the kernels. A slot whose filter is not in the table yet is not estimated there
//     (packed_result() says so); the caller runs it again through estimate_packed(),
//     which uploads the filter. Channels change slowly, so that is a slot now and then.
// Every product and sum of a single value is the CPU's (IEEE single or double, rounded
// as the CPU rounds it: no fused multiply-add); the sums over pilots are block
// reductions, whose order differs from the CPU's, and the phases use the GPU's sinf,
// cosf and atan2 (and the device model its log, log10 and sqrt). So H and the noise
// variance agree with the CPU up to float rounding, except where a slot's model lies on
// the edge of a filter grid cell.

#include "../lib/core/backend.h"
#include "../lib/core/call_timeline.h"
#include "../lib/core/channel_estimation.h"
#include "../lib/core/channel_model.h"
#include "cuda_check.h"
#include "cuda_memory.h"
#include "float_math.cuh"
#include "stream_wait.h"
#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {
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

void check_slot_index(int ns)
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        throw std::invalid_argument("mimodet: slot index must be 0..19, got " +
                                    std::to_string(ns));
}

template <typename T>
void upload(device_buffer<T>& d, const std::vector<T>& h)
{
    d.reserve(std::max<size_t>(1, h.size()));
    if (!h.empty())
        MIMODET_CUDA_CHECK(cudaMemcpy(d.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}
} // namespace

class channel_estimation_cuda : public gpu_channel_estimation
{
public:
    using cf = std::complex<float>;

    explicit channel_estimation_cuda(const channel_estimation& cpu);
    ~channel_estimation_cuda() override
    {
        if (d_stream)
            (void)cudaStreamDestroy(d_stream);
    }
    float estimate(int ns, const cf* const* grids, cf* H) override;
    float estimate_packed(int ns, void* dev_packed, void* stream) override;
    const float* enqueue_packed(int ns, void* dev_packed, void* stream) override;
    float packed_result(bool& filter_missing) const override;
    bool h_finite() const override { return *h_flag.get() == 0; }

private:
    /*!
     * The kernels and the model on stream s: CRS rows from y (antenna r at r * rows_len,
     * element e of the CRS tables at row_re[e]), H into dev_H; waits for the statistics
     * only. Returns the noise variance, NaN for an unusable slot (nothing enqueued then).
     * flag: non-null, set where an H value is not finite. host_grids: the slot's grids
     * on the host (estimate()), from which an estimated pilot ratio is measured; null on
     * the packed paths, which take a known ratio only. Timeline: d_t_stats, d_t_model.
     */
    double enqueue(int ns,
                   const float2* y,
                   int rows_len,
                   const int* row_re,
                   float2* dev_H,
                   int* flag,
                   cudaStream_t s,
                   const cf* const* host_grids);
    struct device_filter {
        std::shared_ptr<const channel_estimation::wiener_filter> host;
        device_buffer<int> start;
        device_buffer<float> w;
        filter_ref ref; //!< what wiener_kernel reads: M and the device arrays
    };
    //! The filter's weights on the device, uploaded (and entered in the device's
    //! table) where they are not yet.
    const filter_ref& device_filter_for(int pattern, int b_idx, int snr_idx);
    //! Drops every device filter and empties the table; nothing in flight may use them.
    void clear_filters();
    //! The packed paths' start: checks ns, clears the H flag on s; dev_packed as float2.
    float2* begin_packed(int ns, void* dev_packed, cudaStream_t s)
    {
        check_slot_index(ns);
        if (d_cpu.estimates_pilot_ratio()) // the estimate reads the grids on the host
            throw std::logic_error("mimodet: an estimated pilot ratio needs the host's "
                                   "grids (estimate()), not a packed slot");
        MIMODET_CUDA_CHECK(cudaMemsetAsync(d_flag.get(), 0, sizeof(int), s));
        return static_cast<float2*>(dev_packed);
    }
    //! ls_kernel and port_kernel on stream s (enqueue()'s arguments).
    void enqueue_statistics(int ns, const float2* y, int rows_len, const int* row_re, cudaStream_t s);

    const channel_estimation& d_cpu;
    const int d_n_tx, d_n_rx, d_n_sc, d_pm, d_noise_ports;
    cudaStream_t d_stream = nullptr;
    stream_waiter d_stats_wait; //!< estimate_packed's wait for the statistics
    std::vector<port_table> d_host_ports; //!< [20][n_tx]
    device_buffer<port_table> d_ports;
    device_buffer<int> d_first, d_delay;
    device_buffer<float> d_nrm;
    device_buffer<double> d_pos, d_pos_sc;
    device_buffer<float2> d_inv;
    device_buffer<int2> d_lag;
    std::vector<int> d_rows;  //!< OFDM symbols with CRS of any port and slot, increasing
    device_buffer<int> d_row_re; //!< per CRS element: its place in the copied rows
    device_buffer<int> d_re;     //!< per CRS element: its place in a grid (l * n_sc + k)
    device_buffer<int> d_flag;   //!< estimate_packed: an H value was not finite
    pinned_buffer<int> h_flag;
    std::vector<slot_model_counts> h_model_counts; //!< [slot]
    std::vector<int> d_d0;                  //!< [slot]: port 0's pilot spacing
    pinned_buffer<float2> h_y;
    device_buffer<float2> d_y, d_ls, d_H;
    device_buffer<float> d_lst;
    device_buffer<double> d_sums; //!< pairs * kPairSums, n_tx * kPortSums, theta
    pinned_buffer<double> h_sums;
    pinned_buffer<float2> h_H;
    std::map<std::tuple<int, int, int>, std::unique_ptr<device_filter>> d_filters;
    // The device model's filter table: [pattern][b cell][SNR cell], M = 0 where no filter
    // is uploaded; the host's copy says which are.
    int d_b_cells = 0;
    double d_b_max = 0.0;
    std::vector<filter_ref> h_table;
    device_buffer<filter_ref> d_table;
    device_buffer<slot_model_counts> d_model_counts; //!< [slot]
    device_buffer<device_model_args> d_model_args;   //!< [slot]
    device_buffer<device_model> d_model;
    pinned_buffer<device_model> h_model;
    //! MIMODET_CALL_TIMELINE only: per estimate(), its start and the times of its parts
    //! (gather and copy up, the LS and statistics kernels with their wait, the host's
    //! model and filter lookup, the Wiener kernel with the copy back and its wait, the
    //! copy into H).
    std::unique_ptr<call_timeline> d_timeline;
    int64_t d_t_stats = 0, d_t_model = 0; //!< timeline: when enqueue() had them
};

channel_estimation_cuda::channel_estimation_cuda(const channel_estimation& cpu)
    : d_cpu(cpu),
      d_n_tx(cpu.n_tx()),
      d_n_rx(cpu.n_rx()),
      d_n_sc(cpu.n_sc()),
      d_pm(static_cast<int>(cpu.d_max_pilots)),
      d_noise_ports(cpu.d_noise_ports)
{
    if (d_n_tx > kMaxPorts)
        throw std::invalid_argument("mimodet: GPU channel estimation supports up to 4 ports");
    MIMODET_CUDA_CHECK(cudaStreamCreateWithFlags(&d_stream, cudaStreamNonBlocking));
    const int S = lte_numerology::slots_per_frame;
    std::vector<int> first, delay;
    std::vector<float> nrm;
    std::vector<double> pos;
    std::vector<float2> inv;
    std::vector<int2> lag;
    // The symbols that hold CRS (the same in every slot of the normal CP: 0, 1, 4).
    std::vector<int> row_of(7, -1);
    for (const auto& p : cpu.d_ports)
        for (int re : p.re_flat)
            row_of[re / d_n_sc] = 0;
    for (int l = 0; l < 7; ++l)
        if (row_of[l] >= 0) {
            row_of[l] = static_cast<int>(d_rows.size());
            d_rows.push_back(l);
        }
    std::vector<int> row_re, grid_re;
    h_model_counts.assign(S, slot_model_counts{});
    for (int ns = 0; ns < S; ++ns) {
        slot_model_counts& c = h_model_counts[ns];
        for (int t = 0; t < d_n_tx; ++t) {
            const auto& p = cpu.d_ports[static_cast<size_t>(ns) * d_n_tx + t];
            port_table pt{};
            pt.P = static_cast<int>(p.k.size());
            pt.E = static_cast<int>(p.re_flat.size());
            pt.first_off = static_cast<int>(first.size());
            pt.off = static_cast<int>(nrm.size());
            pt.eoff = static_cast<int>(inv.size());
            pt.delay_off = static_cast<int>(delay.size());
            pt.n_delay = static_cast<int>(p.delay_pairs.size());
            first.insert(first.end(), p.off.begin(), p.off.end());
            nrm.insert(nrm.end(), p.n_flat.begin(), p.n_flat.end());
            for (int k : p.k)
                pos.push_back(channel_estimation::subcarrier_position(k, d_n_sc));
            for (const cf& x : p.inv_flat)
                inv.push_back(make_float2(x.real(), x.imag()));
            for (int re : p.re_flat) {
                row_re.push_back(row_of[re / d_n_sc] * d_n_sc + re % d_n_sc);
                grid_re.push_back(re);
            }
            delay.insert(delay.end(), p.delay_pairs.begin(), p.delay_pairs.end());
            for (int li = 0; li < kLags; ++li) {
                pt.lag_off[li] = static_cast<int>(lag.size());
                pt.n_lag[li] = static_cast<int>(p.lag_pairs[li].size());
                for (const auto& ij : p.lag_pairs[li])
                    lag.push_back(make_int2(ij.first, ij.second));
                c.count_lag[li] += p.lag_pairs[li].size() * d_n_rx;
            }
            d_host_ports.push_back(pt);
            c.pattern[t] = p.pattern;
            c.n_pw += p.k.size() * d_n_rx;
            if (t < d_noise_ports) {
                c.n_power += p.k.size() * d_n_rx;
                for (int d = 2; d <= 3; ++d)
                    if (p.k.size() >= static_cast<size_t>(d) + 1)
                        c.count[d] += (p.k.size() - d) * d_n_rx;
            }
        }
        const auto& k0 = cpu.d_ports[static_cast<size_t>(ns) * d_n_tx].k;
        d_d0.push_back(k0.size() > 1 ? k0[1] - k0[0] : 1);
    }
    std::vector<double> pos_sc(d_n_sc);
    for (int k = 0; k < d_n_sc; ++k)
        pos_sc[k] = channel_estimation::subcarrier_position(k, d_n_sc);
    upload(d_ports, d_host_ports);
    upload(d_first, first);
    upload(d_delay, delay);
    upload(d_nrm, nrm);
    upload(d_pos, pos);
    upload(d_pos_sc, pos_sc);
    upload(d_inv, inv);
    upload(d_lag, lag);
    upload(d_row_re, row_re);
    upload(d_re, grid_re);
    d_flag.reserve(1);
    h_flag.reserve(1);
    *h_flag.get() = 0;
    const size_t max_y = d_rows.size() * d_n_sc * static_cast<size_t>(d_n_rx);
    const size_t pairs = static_cast<size_t>(d_n_tx) * d_n_rx;
    h_y.reserve(max_y);
    d_y.reserve(max_y);
    d_ls.reserve(pairs * d_pm);
    d_lst.reserve(static_cast<size_t>(d_n_tx) * d_pm * 2 * d_n_rx);
    const size_t n_sums = pairs * kPairSums + d_n_tx * kPortSums + 1;
    d_sums.reserve(n_sums);
    h_sums.reserve(n_sums);
    d_H.reserve(cpu.h_size());
    h_H.reserve(cpu.h_size());
    // The device model's tables.
    d_b_max = cpu.d_max_delay_s / 4.0;
    d_b_cells = channel_model::b_cells(d_b_max);
    h_table.assign(cpu.d_patterns.size() * d_b_cells * channel_model::k_snr_cells,
                   filter_ref{ 0, nullptr, nullptr });
    upload(d_table, h_table);
    d_model.reserve(1);
    h_model.reserve(1);
    upload(d_model_counts, h_model_counts);
    std::vector<device_model_args> args(S);
    for (int ns = 0; ns < S; ++ns)
        args[ns] = { d_model_counts.get() + ns, d_sums.get(), d_n_tx * d_n_rx,
                     d_noise_ports * d_n_rx, d_table.get(), d_b_cells, d_b_max, d_model.get() };
    upload(d_model_args, args);
    // On the device-model path (enqueue_packed) only the host's enqueueing is timed; it
    // goes into wiener_ns.
    d_timeline = call_timeline::make(
        "estimate_gpu", { "t0_ns", "gather_ns", "stats_ns", "model_ns", "wiener_ns", "copy_ns" });
}

void channel_estimation_cuda::clear_filters()
{
    d_filters.clear();
    std::fill(h_table.begin(), h_table.end(), filter_ref{ 0, nullptr, nullptr });
    MIMODET_CUDA_CHECK(cudaMemcpy(d_table.get(), h_table.data(),
                                  h_table.size() * sizeof(filter_ref), cudaMemcpyHostToDevice));
}

const filter_ref&
channel_estimation_cuda::device_filter_for(int pattern, int b_idx, int snr_idx)
{
    const auto key = std::make_tuple(pattern, b_idx, snr_idx);
    auto it = d_filters.find(key);
    if (it != d_filters.end())
        return it->second->ref;
    auto f = std::make_unique<device_filter>();
    f->host = d_cpu.filter(pattern, b_idx, snr_idx);
    upload(f->start, f->host->start);
    upload(f->w, f->host->w);
    f->ref = { f->host->M, f->start.get(), f->w.get() };
    const filter_ref& ref = d_filters.emplace(key, std::move(f)).first->second->ref;
    // The device model's table has the cells b_idx 0..b_cells-1 (the host's decision may
    // lie outside only for a non-finite slot: not entered).
    if (b_idx >= 0 && b_idx < d_b_cells) {
        const size_t cell = (static_cast<size_t>(pattern) * d_b_cells + b_idx) *
                                channel_model::k_snr_cells +
                            (snr_idx - channel_model::k_snr_idx_min);
        h_table[cell] = ref;
        MIMODET_CUDA_CHECK(cudaMemcpy(
            d_table.get() + cell, &h_table[cell], sizeof(filter_ref), cudaMemcpyHostToDevice));
    }
    return ref;
}

float channel_estimation_cuda::estimate(int ns, const cf* const* grids, cf* H)
{
    check_slot_index(ns);
    const int64_t t_start = d_timeline ? call_timeline::now_ns() : 0;
    // The CRS symbols of every antenna, [r][row][k] (3 of 7 symbols).
    const size_t rows_len = d_rows.size() * d_n_sc;
    float2* y = h_y.get();
    for (int r = 0; r < d_n_rx; ++r)
        for (size_t j = 0; j < d_rows.size(); ++j)
            std::memcpy(y + r * rows_len + j * d_n_sc,
                        grids[r] + static_cast<size_t>(d_rows[j]) * d_n_sc,
                        d_n_sc * sizeof(float2));
    MIMODET_CUDA_CHECK(cudaMemcpyAsync(d_y.get(),
                                       y,
                                       d_n_rx * rows_len * sizeof(float2),
                                       cudaMemcpyHostToDevice,
                                       d_stream));
    const int64_t t_gather = d_timeline ? call_timeline::now_ns() : 0;
    const double nv = enqueue(ns, d_y.get(), static_cast<int>(rows_len), d_row_re.get(),
                              d_H.get(), nullptr, d_stream, grids);
    if (std::isnan(nv))
        return d_cpu.estimate(ns, grids, H); // unusable slot: the CPU's NaN path, rare
    const int n_h = static_cast<int>(d_cpu.h_size());
    MIMODET_CUDA_CHECK(cudaMemcpyAsync(
        h_H.get(), d_H.get(), n_h * sizeof(float2), cudaMemcpyDeviceToHost, d_stream));
    MIMODET_CUDA_CHECK(cudaStreamSynchronize(d_stream));
    const int64_t t_wiener = d_timeline ? call_timeline::now_ns() : 0;
    std::memcpy(H, h_H.get(), n_h * sizeof(float2));
    if (d_timeline)
        d_timeline->add({ double(t_start),
                          double(t_gather - t_start),
                          double(d_t_stats - t_gather),
                          double(d_t_model - d_t_stats),
                          double(t_wiener - d_t_model),
                          double(call_timeline::now_ns() - t_wiener) });
    return static_cast<float>(nv);
}

float channel_estimation_cuda::estimate_packed(int ns, void* dev_packed, void* stream)
{
    const int64_t t_start = d_timeline ? call_timeline::now_ns() : 0;
    auto s = static_cast<cudaStream_t>(stream);
    float2* packed = begin_packed(ns, dev_packed, s);
    const size_t grid_len = 7 * static_cast<size_t>(d_n_sc);
    const double nv = enqueue(ns, packed, static_cast<int>(grid_len), d_re.get(),
                              packed + d_n_rx * grid_len, d_flag.get(), s, nullptr);
    if (std::isnan(nv))
        return std::numeric_limits<float>::quiet_NaN();
    MIMODET_CUDA_CHECK(
        cudaMemcpyAsync(h_flag.get(), d_flag.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
    if (d_timeline) // the Wiener step is only enqueued here; nothing is copied back
        d_timeline->add({ double(t_start), 0.0, double(d_t_stats - t_start),
                          double(d_t_model - d_t_stats),
                          double(call_timeline::now_ns() - d_t_model), 0.0 });
    return static_cast<float>(nv);
}

const float* channel_estimation_cuda::enqueue_packed(int ns, void* dev_packed, void* stream)
{
    const int64_t t_start = d_timeline ? call_timeline::now_ns() : 0;
    auto s = static_cast<cudaStream_t>(stream);
    float2* packed = begin_packed(ns, dev_packed, s);
    const size_t grid_len = 7 * static_cast<size_t>(d_n_sc);
    enqueue_statistics(ns, packed, static_cast<int>(grid_len), d_re.get(), s);
    const double* theta = d_sums.get() + static_cast<size_t>(d_n_tx) * d_n_rx * kPairSums +
                          d_n_tx * kPortSums;
    const int n_h = static_cast<int>(d_cpu.h_size());
    wiener_kernel<<<(n_h + kThreads - 1) / kThreads, kThreads, 0, s>>>(filter_set{},
                                                                   d_model_args.get() + ns,
                                                                   d_n_tx,
                                                                   d_n_rx,
                                                                   d_n_sc,
                                                                   d_pm,
                                                                   d_lst.get(),
                                                                   d_pos_sc.get(),
                                                                   theta,
                                                                   d_cpu.h_scale(ns, nullptr, 0),
                                                                   packed + d_n_rx * grid_len,
                                                                   d_flag.get());
    MIMODET_CUDA_CHECK_LAUNCH();
    MIMODET_CUDA_CHECK(cudaMemcpyAsync(
        h_model.get(), d_model.get(), sizeof(device_model), cudaMemcpyDeviceToHost, s));
    MIMODET_CUDA_CHECK(
        cudaMemcpyAsync(h_flag.get(), d_flag.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
    if (d_timeline)
        d_timeline->add({ double(t_start), 0.0, 0.0, 0.0,
                          double(call_timeline::now_ns() - t_start), 0.0 });
    return &d_model.get()->nv_detect;
}

float channel_estimation_cuda::packed_result(bool& filter_missing) const
{
    const device_model& m = *h_model.get();
    filter_missing = m.status == model_no_filter;
    return m.status == model_ok ? static_cast<float>(m.nv)
                                : std::numeric_limits<float>::quiet_NaN();
}

void channel_estimation_cuda::enqueue_statistics(
    int ns, const float2* y, int rows_len, const int* row_re, cudaStream_t s)
{
    const int n_pairs = d_n_tx * d_n_rx;
    const port_table* ports = d_ports.get() + static_cast<size_t>(ns) * d_n_tx;
    double* pair_sums = d_sums.get();
    double* port_sums = pair_sums + n_pairs * kPairSums;
    double* theta = port_sums + d_n_tx * kPortSums;
    ls_kernel<<<n_pairs, kThreads, 0, s>>>(ports,
                                           d_n_rx,
                                           d_noise_ports,
                                           d_first.get(),
                                           d_nrm.get(),
                                           d_inv.get(),
                                           row_re,
                                           rows_len,
                                           d_delay.get(),
                                           y,
                                           d_ls.get(),
                                           d_pm,
                                           pair_sums);
    MIMODET_CUDA_CHECK_LAUNCH();
    port_kernel<<<dim3(d_n_tx, 1 + kLags), kThreads, 0, s>>>(ports,
                                            d_n_rx,
                                            d_noise_ports * d_n_rx,
                                            d_d0[ns],
                                            d_pos.get(),
                                            d_lag.get(),
                                            d_ls.get(),
                                            d_pm,
                                            d_lst.get(),
                                            pair_sums,
                                            port_sums,
                                            theta);
    MIMODET_CUDA_CHECK_LAUNCH();
}

double channel_estimation_cuda::enqueue(int ns,
                                        const float2* y,
                                        int rows_len,
                                        const int* row_re,
                                        float2* dev_H,
                                        int* flag,
                                        cudaStream_t s,
                                        const cf* const* host_grids)
{
    const int n_pairs = d_n_tx * d_n_rx;
    const double* theta = d_sums.get() + n_pairs * kPairSums + d_n_tx * kPortSums;
    enqueue_statistics(ns, y, rows_len, row_re, s);
    const size_t n_sums = static_cast<size_t>(n_pairs) * kPairSums + d_n_tx * kPortSums + 1;
    MIMODET_CUDA_CHECK(cudaMemcpyAsync(
        h_sums.get(), d_sums.get(), n_sums * sizeof(double), cudaMemcpyDeviceToHost, s));
    d_stats_wait.wait(s);
    d_t_stats = d_timeline ? call_timeline::now_ns() : 0;

    double nv = 0.0;
    int b_idx = 0, snr_idx = 0;
    decide_cell(h_sums.get(), n_pairs, d_noise_ports * d_n_rx, d_n_tx, h_model_counts[ns],
                d_b_max, nv, b_idx, snr_idx);
    if (std::isnan(nv))
        return nv;
    // Bounded like the CPU's cache; nothing in flight uses the weights here.
    if (d_filters.size() + d_n_tx > 128)
        clear_filters();
    filter_set fs{};
    for (int t = 0; t < d_n_tx; ++t)
        fs.f[t] = device_filter_for(d_cpu.d_ports[static_cast<size_t>(ns) * d_n_tx + t].pattern,
                                    b_idx,
                                    snr_idx);
    // begin_packed() refused an estimated ratio without host grids: h_scale() reads
    // them only then.
    const float scale = d_cpu.h_scale(ns, host_grids, nv);
    d_t_model = d_timeline ? call_timeline::now_ns() : 0;
    const int n_h = static_cast<int>(d_cpu.h_size());
    wiener_kernel<<<(n_h + kThreads - 1) / kThreads, kThreads, 0, s>>>(
        fs, nullptr, d_n_tx, d_n_rx, d_n_sc, d_pm, d_lst.get(), d_pos_sc.get(), theta, scale,
        dev_H, flag);
    MIMODET_CUDA_CHECK_LAUNCH();
    return nv;
}

std::unique_ptr<gpu_channel_estimation>
make_cuda_channel_estimation(const channel_estimation& cpu)
{
    if (cuda_device_count() == 0)
        return nullptr;
    return std::make_unique<channel_estimation_cuda>(cpu);
}

} // namespace core
} // namespace mimodet
} // namespace gr
