/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Channel estimation on the GPU: the method of lib/phy/channel_estimation.cc with its
// tables, filter cache and model decisions (channel_model.h, filter()), so that the
// algorithm stays in one place. This file is the host side; the kernels and the device's
// model are in channel_estimation_device.cuh. Per slot, on one stream:
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

#include "cuda/common/cuda_check.h"
#include "cuda/common/cuda_memory.h"
#include "cuda/common/stream_wait.h"
#include "cuda/phy/channel_estimation_device.cuh"
#include "detect/backend.h"
#include "phy/channel_estimation.h"
#include "phy/channel_model.h"
#include "util/call_timeline.h"
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

    channel_estimation_cuda(const channel_estimation& cpu, int device);
    ~channel_estimation_cuda() override
    {
        d_release.select(); // the stream and buffers go on their device
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

    device_release_scope d_release; //!< first member: the last destroyed
    const int d_device;             //!< every call's (device_guard)
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

channel_estimation_cuda::channel_estimation_cuda(const channel_estimation& cpu, int device)
    : d_release(device),
      d_device(device),
      d_cpu(cpu),
      d_n_tx(cpu.n_tx()),
      d_n_rx(cpu.n_rx()),
      d_n_sc(cpu.n_sc()),
      d_pm(static_cast<int>(cpu.d_max_pilots)),
      d_noise_ports(cpu.d_noise_ports)
{
    if (d_n_tx > kMaxPorts)
        throw std::invalid_argument("mimodet: GPU channel estimation supports up to 4 ports");
    const device_guard guard(d_device);
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
    const device_guard guard(d_device);
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
    const device_guard guard(d_device);
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
    const device_guard guard(d_device);
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
make_cuda_channel_estimation(const channel_estimation& cpu, int device)
{
    if (!cuda_device_problem(device).empty())
        return nullptr;
    return std::make_unique<channel_estimation_cuda>(cpu, device);
}

} // namespace core
} // namespace mimodet
} // namespace gr
