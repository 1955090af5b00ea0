/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "cuda/common/batch_detector.h"
#include "detect/llr.h" // saturate_llr: the unscaled LLRs as run_checked gives them
#include "util/tuning.h"
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace gr {
namespace mimodet {
namespace core {

namespace {
//! detect_bits on a soft detector: the LLR signs (LLR < 0 -> 1, as the CPU), on the
//! device, so a quarter of the bytes cross PCIe and no host loop converts them.
__global__ void llr_signs_kernel(const float* __restrict__ llr,
                                 uint8_t* __restrict__ bits,
                                 size_t n)
{
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        bits[i] = llr[i] < 0.0f ? 1 : 0;
}

//! Device-side gather of one packed slot (run_gathered): y[v][r] = packed[r * grid_len +
//! y_src[v]], H of matrix m = packed[h_src[m] ...], noise_var[m] = nv (*nv_dev where a
//! device stage left it on the device).
__global__ void gather_slot_kernel(const float2* __restrict__ packed,
                                   const int32_t* __restrict__ y_src,
                                   const int32_t* __restrict__ h_src,
                                   int n_vec,
                                   int n_mat,
                                   int nr,
                                   int hm,
                                   int grid_len,
                                   float nv,
                                   const float* __restrict__ nv_dev,
                                   float2* __restrict__ y,
                                   float2* __restrict__ H,
                                   float* __restrict__ noise_var)
{
    const int stride = gridDim.x * blockDim.x;
    const int first = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = first; i < n_vec * nr; i += stride) {
        const int v = i / nr, r = i - v * nr;
        y[i] = packed[r * grid_len + y_src[v]];
    }
    for (int i = first; i < n_mat * hm; i += stride) {
        const int m = i / hm;
        H[i] = packed[h_src[m] + (i - m * hm)];
    }
    const float v = nv_dev ? *nv_dev : nv;
    for (int m = first; m < n_mat; m += stride)
        noise_var[m] = v;
}

//! Batch outputs into the slot's order (out_pos). LLRs times scale (the noise variance,
//! *scale_dev where non-null, where the caller wants them unscaled, as
//! detector::run_checked); signs: a
//! soft detector's bits (LLR < 0 -> 1, from the unscaled LLR, as llr_signs_kernel).
__global__ void scatter_slot_kernel(const uint8_t* __restrict__ bits_in,
                                    const float* __restrict__ llr_in,
                                    const int32_t* __restrict__ out_pos,
                                    int n_vec,
                                    int nb,
                                    bool signs,
                                    bool scale_llr,
                                    float scale,
                                    const float* __restrict__ scale_dev,
                                    uint8_t* __restrict__ bits_out,
                                    float* __restrict__ llr_out)
{
    const int stride = gridDim.x * blockDim.x;
    if (scale_llr && scale_dev)
        scale = *scale_dev;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n_vec * nb; i += stride) {
        const int v = i / nb;
        const int o = out_pos[v] * nb + (i - v * nb);
        if (bits_out)
            bits_out[o] = signs ? (llr_in[i] < 0.0f ? 1 : 0) : bits_in[i];
        else
            llr_out[o] = scale_llr ? saturate_llr(double(llr_in[i]) * scale) : llr_in[i];
    }
}

//! Blocks for a grid-stride kernel over n items (at most 1024 blocks of 256).
unsigned stride_blocks(size_t n)
{
    return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>((n + 255) / 256, 1024)));
}

//! True when p lies in page-locked host memory (cudaHostAlloc / cudaHostRegister).
bool is_pinned(const void* p)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError(); // not an error: ordinary memory on some drivers
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

} // namespace

void cuda_batch_detector::enqueue_signs(cudaStream_t s, const chunk& k)
{
    const size_t nb = static_cast<size_t>(bits_per_vector());
    const size_t n = k.n_vec * nb;
    const unsigned threads = 256;
    const unsigned blocks =
        static_cast<unsigned>(std::min<size_t>((n + threads - 1) / threads, 4096));
    llr_signs_kernel<<<blocks, threads, 0, s>>>(k.llr, d_bits.get() + k.v0 * nb, n);
    MIMODET_CUDA_CHECK_LAUNCH();
}

cuda_batch_detector::cuda_batch_detector(const detector_config& cfg, bool soft)
    : detector(cfg), d_soft(soft)
{
    d_cfg.backend = backend_kind::cuda; // what runs, also when "auto" chose it
    // Every stream, event and buffer of the detector on its configured device; each
    // call selects it again (device_guard), as the calling thread may have another.
    d_device = cfg.device;
    d_forced_shares = tuning::chunk_shares();
    const device_guard guard(d_device);
    try {
        for (auto& s : d_streams)
            MIMODET_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        for (auto& e : d_timing)
            MIMODET_CUDA_CHECK(cudaEventCreate(&e));
        for (auto& e : d_fork_join)
            MIMODET_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        d_timeline = call_timeline::make("gpu",
                                         { "t0_ns", "plan_ns", "enqueue_ns", "wait_ns",
                                           "unstage_ns", "dev_in_ns", "dev_kernels_ns",
                                           "dev_out_ns", "vectors", "chunks" });
        if (d_timeline)
            for (auto& e : d_tl_events)
                MIMODET_CUDA_CHECK(cudaEventCreate(&e));
    } catch (...) {
        for (auto& s : d_streams)
            if (s)
                (void)cudaStreamDestroy(s);
        for (auto& e : d_timing)
            if (e)
                (void)cudaEventDestroy(e);
        for (auto& e : d_fork_join)
            if (e)
                (void)cudaEventDestroy(e);
        for (auto& e : d_tl_events)
            if (e)
                (void)cudaEventDestroy(e);
        throw;
    }
}

cuda_batch_detector::~cuda_batch_detector()
{
    device_release_scope scope(d_device);
    scope.select();
    synchronize_all();
    for (cudaEvent_t e : d_events)
        (void)cudaEventDestroy(e);
    for (auto& e : d_timing)
        (void)cudaEventDestroy(e);
    for (auto& e : d_fork_join)
        (void)cudaEventDestroy(e);
    for (auto& e : d_tl_events)
        if (e)
            (void)cudaEventDestroy(e);
    for (auto& s : d_streams)
        (void)cudaStreamDestroy(s);
}

void cuda_batch_detector::synchronize_all()
{
    for (cudaStream_t s : d_streams)
        if (s)
            (void)cudaStreamSynchronize(s);
}

void cuda_batch_detector::run(const cf* H,
                              const cf* y,
                              const batch_segment* segments,
                              size_t n_seg,
                              const float* noise_var,
                              uint8_t* bits,
                              float* llr,
                              vector_stats* stats)
{
    const device_guard guard(d_device);
    const bool dev_stats = stats && kernels_write_stats();
    try {
        d_tl_t0 = d_timeline ? call_timeline::now_ns() : 0;
        plan(segments, n_seg, dev_stats, llr != nullptr);
        d_tl_planned = d_timeline ? call_timeline::now_ns() : 0;
        enqueue_and_collect(H, y, noise_var, bits, llr, stats);
    } catch (...) {
        // Leave no copy or kernel in flight on buffers that may be freed or reused.
        synchronize_all();
        d_chunks.clear();
        throw;
    }
    if (stats && !kernels_write_stats()) {
        const vector_stats s = host_stats();
        std::fill(stats, stats + d_n_vec, s);
    }
}

void cuda_batch_detector::plan(const batch_segment* segments,
                               size_t n_seg,
                               bool dev_stats,
                               bool llr_out)
{
    const size_t nr = d_cfg.n_rx, nt = d_cfg.n_tx;
    const size_t nb = static_cast<size_t>(bits_per_vector());
    size_t n_mat = 0, n_vec = 0;
    for (size_t i = 0; i < n_seg; ++i) {
        n_mat += segments[i].n_mat;
        n_vec += segments[i].n_mat * segments[i].n_sym;
    }
    d_n_mat = n_mat;
    d_n_vec = n_vec;

    // Grown only when a larger batch arrives; the previous call has synchronised.
    d_H.reserve(n_mat * nr * nt);
    d_y.reserve(n_vec * nr);
    d_nv.reserve(n_mat);
    h_H.reserve(n_mat * nr * nt);
    h_y.reserve(n_vec * nr);
    h_nv.reserve(n_mat);
    if (d_soft) {
        d_llr.reserve(n_vec * nb);
        if (llr_out)
            h_llr.reserve(n_vec * nb);
    }
    if (!llr_out) { // hard detectors, and the LLR signs of soft ones
        d_bits.reserve(n_vec * nb);
        h_bits.reserve(n_vec * nb);
    }
    if (dev_stats) {
        d_stats.reserve(n_vec);
        h_stats.reserve(n_vec);
    }
    reserve_scratch(n_mat, n_vec);

    // Chunks of about a stream's share of the call; a small call is one chunk (more
    // only where its segments need more pieces than one segment_map holds).
    d_single_copy = single_copy_call(n_vec);
    d_chunks = plan_chunks(segments, n_seg, d_single_copy ? n_vec : chunk_vectors(n_vec));
    while (d_events.size() < d_chunks.size()) {
        cudaEvent_t e;
        MIMODET_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        d_events.push_back(e);
    }
}

cuda_batch_detector::chunk cuda_batch_detector::make_chunk(size_t c, bool with_stats) const
{
    const size_t nb = static_cast<size_t>(bits_per_vector());
    const size_t h_len = static_cast<size_t>(d_cfg.n_rx) * d_cfg.n_tx;
    const chunk_span& sp = d_chunks[c];
    chunk k;
    k.m0 = sp.m0;
    k.n_mat = sp.n_mat;
    k.v0 = sp.v0;
    k.n_vec = sp.n_vec;
    k.map = sp.map;
    k.H = d_H.get() + k.m0 * h_len;
    k.y = d_y.get() + k.v0 * d_cfg.n_rx;
    k.noise_var = d_nv.get() + k.m0;
    k.bits = d_soft ? nullptr : d_bits.get() + k.v0 * nb;
    k.llr = d_soft ? d_llr.get() + k.v0 * nb : nullptr;
    k.stats = with_stats ? d_stats.get() + k.v0 : nullptr;
    return k;
}

void cuda_batch_detector::enqueue_and_collect(const cf* H,
                                              const cf* y,
                                              const float* noise_var,
                                              uint8_t* bits,
                                              float* llr,
                                              vector_stats* stats)
{
    const size_t nr = d_cfg.n_rx, nt = d_cfg.n_tx;
    const size_t nb = static_cast<size_t>(bits_per_vector());
    const size_t h_len = nr * nt;
    const bool dev_stats = stats && kernels_write_stats();

    // The host side of each copy: the caller's buffers where they are page-locked
    // (slot_detection gathers into host_alloc memory), else our pinned staging.
    const bool pin_in = is_pinned(H) && is_pinned(y) && is_pinned(noise_var);
    const bool pin_out = is_pinned(llr ? static_cast<const void*>(llr) : bits) &&
                         (!dev_stats || is_pinned(stats));
    const float2* src_H = pin_in ? reinterpret_cast<const float2*>(H) : h_H.get();
    const float2* src_y = pin_in ? reinterpret_cast<const float2*>(y) : h_y.get();
    const float* src_nv = pin_in ? noise_var : h_nv.get();
    float* dst_llr = pin_out ? llr : h_llr.get();
    uint8_t* dst_bits = pin_out ? bits : h_bits.get();
    vector_stats* dst_stats = pin_out ? stats : h_stats.get();
    // Stages matrices [m0, m0 + n_mat) and vectors [v0, v0 + n_vec) when not pinned.
    auto stage = [&](size_t m0, size_t n_mat, size_t v0, size_t n_vec) {
        if (pin_in)
            return;
        std::memcpy(h_H.get() + m0 * h_len, H + m0 * h_len, n_mat * h_len * sizeof(float2));
        std::memcpy(h_y.get() + v0 * nr, y + v0 * nr, n_vec * nr * sizeof(float2));
        std::memcpy(h_nv.get() + m0, noise_var + m0, n_mat * sizeof(float));
    };
    auto copy_in = [&](cudaStream_t s, size_t m0, size_t n_mat, size_t v0, size_t n_vec) {
        MIMODET_CUDA_CHECK(cudaMemcpyAsync(d_H.get() + m0 * h_len, src_H + m0 * h_len,
                                           n_mat * h_len * sizeof(float2),
                                           cudaMemcpyHostToDevice, s));
        MIMODET_CUDA_CHECK(cudaMemcpyAsync(d_y.get() + v0 * nr, src_y + v0 * nr,
                                           n_vec * nr * sizeof(float2),
                                           cudaMemcpyHostToDevice, s));
        MIMODET_CUDA_CHECK(cudaMemcpyAsync(d_nv.get() + m0, src_nv + m0,
                                           n_mat * sizeof(float),
                                           cudaMemcpyHostToDevice, s));
    };
    auto copy_out = [&](cudaStream_t s, size_t v0, size_t n_vec) {
        if (llr)
            MIMODET_CUDA_CHECK(cudaMemcpyAsync(dst_llr + v0 * nb, d_llr.get() + v0 * nb,
                                               n_vec * nb * sizeof(float),
                                               cudaMemcpyDeviceToHost, s));
        else
            MIMODET_CUDA_CHECK(cudaMemcpyAsync(dst_bits + v0 * nb, d_bits.get() + v0 * nb,
                                               n_vec * nb, cudaMemcpyDeviceToHost, s));
        if (dev_stats)
            MIMODET_CUDA_CHECK(cudaMemcpyAsync(dst_stats + v0, d_stats.get() + v0,
                                               n_vec * sizeof(vector_stats),
                                               cudaMemcpyDeviceToHost, s));
    };
    // After the copy out of vectors [v0, v0 + n_vec) has completed.
    auto unstage = [&](size_t v0, size_t n_vec) {
        if (pin_out)
            return;
        if (llr)
            std::memcpy(llr + v0 * nb, h_llr.get() + v0 * nb, n_vec * nb * sizeof(float));
        else
            std::memcpy(bits + v0 * nb, h_bits.get() + v0 * nb, n_vec * nb);
        if (dev_stats)
            std::memcpy(stats + v0, h_stats.get() + v0, n_vec * sizeof(vector_stats));
    };

    if (d_single_copy) {
        // The whole call's inputs in one copy each on stream 0; its chunks (normally
        // one; several only past segment_map's piece limit) then run concurrently over
        // the streams; stream 0 joins them and copies the outputs back in one go; one
        // wait.
        cudaStream_t s0 = d_streams[0];
        const bool tl = d_timeline != nullptr;
        stage(0, d_n_mat, 0, d_n_vec);
        if (tl)
            MIMODET_CUDA_CHECK(cudaEventRecord(d_tl_events[0], s0));
        copy_in(s0, 0, d_n_mat, 0, d_n_vec);
        if (tl)
            MIMODET_CUDA_CHECK(cudaEventRecord(d_tl_events[1], s0));
        enqueue_chunks_forked(dev_stats, d_soft && !llr);
        if (tl)
            MIMODET_CUDA_CHECK(cudaEventRecord(d_tl_events[2], s0));
        copy_out(s0, 0, d_n_vec);
        if (tl)
            MIMODET_CUDA_CHECK(cudaEventRecord(d_tl_events[3], s0));
        const int64_t t_enqueued = tl ? call_timeline::now_ns() : 0;
        MIMODET_CUDA_CHECK(cudaStreamSynchronize(s0));
        const int64_t t_synced = tl ? call_timeline::now_ns() : 0;
        unstage(0, d_n_vec);
        if (tl)
            record_timeline(t_enqueued, t_synced);
        return;
    }

    // At most k_in_flight chunks are enqueued ahead of the host: before chunk c goes
    // out, chunk c - k_in_flight is waited for and unstaged, and the host checks for a
    // cancellation, so a cancelled call waits for the chunks already on the GPU only.
    // Chunks finish in order per stream; copying out chunk c overlaps later chunks.
    const size_t share = chunk_target_vectors(d_n_vec, k_streams);
    size_t collected = 0;
    auto collect = [&](size_t c) {
        MIMODET_CUDA_CHECK(cudaEventSynchronize(d_events[c]));
        const chunk k = make_chunk(c, false);
        unstage(k.v0, k.n_vec);
    };
    for (size_t c = 0; c < d_chunks.size(); ++c) {
        if (c >= k_in_flight)
            collect(collected++);
        if (cancel_check()) {
            // The caller throws: leave nothing in flight, and nothing for
            // kernel_seconds to re-run on a partial upload.
            synchronize_all();
            d_chunks.clear();
            return;
        }
        cudaStream_t s = d_streams[c % k_streams];
        const chunk k = make_chunk(c, dev_stats);
        // Staging this chunk on the CPU overlaps the GPU work of the previous ones; a
        // chunk of several streams' shares goes a share at a time (chunk_shares), so
        // that staging a share overlaps the copy of the one before.
        const size_t n_pieces = (k.n_vec + share - 1) / share;
        for (size_t i = 0; i < n_pieces; ++i) {
            const size_t v_lo = k.v0 + i * k.n_vec / n_pieces;
            const size_t v_hi = k.v0 + (i + 1) * k.n_vec / n_pieces;
            const size_t m_lo = k.m0 + i * k.n_mat / n_pieces;
            const size_t m_hi = k.m0 + (i + 1) * k.n_mat / n_pieces;
            stage(m_lo, m_hi - m_lo, v_lo, v_hi - v_lo);
            copy_in(s, m_lo, m_hi - m_lo, v_lo, v_hi - v_lo);
        }
        launch(s, k);
        if (d_soft && !llr)
            enqueue_signs(s, k);
        copy_out(s, k.v0, k.n_vec);
        MIMODET_CUDA_CHECK(cudaEventRecord(d_events[c], s));
    }
    while (collected < d_chunks.size())
        collect(collected++);
}

void cuda_batch_detector::enqueue_chunks_forked(bool dev_stats, bool signs)
{
    cudaStream_t s0 = d_streams[0];
    const size_t used = std::min<size_t>(k_streams, d_chunks.size());
    if (used > 1) {
        MIMODET_CUDA_CHECK(cudaEventRecord(d_fork_join[0], s0));
        for (size_t i = 1; i < used; ++i)
            MIMODET_CUDA_CHECK(cudaStreamWaitEvent(d_streams[i], d_fork_join[0], 0));
    }
    for (size_t c = 0; c < d_chunks.size(); ++c) {
        cudaStream_t s = d_streams[c % k_streams];
        const chunk k = make_chunk(c, dev_stats);
        launch(s, k);
        if (signs)
            enqueue_signs(s, k);
    }
    for (size_t i = 1; i < used; ++i) {
        MIMODET_CUDA_CHECK(cudaEventRecord(d_fork_join[i], d_streams[i]));
        MIMODET_CUDA_CHECK(cudaStreamWaitEvent(s0, d_fork_join[i], 0));
    }
}

void cuda_batch_detector::record_timeline(int64_t t_enqueued, int64_t t_synced)
{
    float ms[3] = {};
    for (int i = 0; i < 3; ++i)
        MIMODET_CUDA_CHECK(cudaEventElapsedTime(&ms[i], d_tl_events[i], d_tl_events[i + 1]));
    d_timeline->add({ double(d_tl_t0),
                      double(d_tl_planned - d_tl_t0),
                      double(t_enqueued - d_tl_planned),
                      double(t_synced - t_enqueued),
                      double(call_timeline::now_ns() - t_synced),
                      ms[0] * 1e6,
                      ms[1] * 1e6,
                      ms[2] * 1e6,
                      double(d_n_vec),
                      double(d_chunks.size()) });
}

int cuda_batch_detector::add_gather_layout(const gather_layout& layout)
{
    size_t n_mat = 0, n_vec = 0;
    for (const auto& g : layout.segments) {
        if (g.n_mat == 0 || g.n_sym == 0)
            throw std::invalid_argument("mimodet: gather layout with an empty segment");
        n_mat += g.n_mat;
        n_vec += g.n_mat * g.n_sym;
    }
    // One slot per call, one copy each way: larger layouts keep the host gather, whose
    // chunks overlap copies with kernels.
    if (n_vec == 0 || !single_copy_call(n_vec))
        return -1;
    const size_t hm = static_cast<size_t>(d_cfg.n_rx) * d_cfg.n_tx;
    if (layout.y_src.size() != n_vec || layout.out_pos.size() != n_vec ||
        layout.h_src.size() != n_mat || layout.packed_len > static_cast<size_t>(INT_MAX))
        throw std::invalid_argument("mimodet: gather layout tables do not match its segments");
    for (size_t v = 0; v < n_vec; ++v)
        if (layout.y_src[v] < 0 ||
            static_cast<size_t>(layout.y_src[v]) + (d_cfg.n_rx - 1) * layout.grid_len >=
                layout.packed_len ||
            layout.out_pos[v] < 0 || static_cast<size_t>(layout.out_pos[v]) >= n_vec)
            throw std::invalid_argument("mimodet: gather layout index out of range");
    for (size_t m = 0; m < n_mat; ++m)
        if (layout.h_src[m] < 0 || static_cast<size_t>(layout.h_src[m]) + hm > layout.packed_len)
            throw std::invalid_argument("mimodet: gather layout index out of range");
    const device_guard guard(d_device);
    auto L = std::make_unique<device_layout>();
    L->segments = layout.segments;
    L->n_mat = n_mat;
    L->n_vec = n_vec;
    L->grid_len = layout.grid_len;
    L->packed_len = layout.packed_len;
    L->y_src.reserve(n_vec);
    L->h_src.reserve(n_mat);
    L->out_pos.reserve(n_vec);
    // Once per layout, before real-time operation: plain synchronous copies.
    MIMODET_CUDA_CHECK(cudaMemcpy(L->y_src.get(), layout.y_src.data(),
                                  n_vec * sizeof(int32_t), cudaMemcpyHostToDevice));
    MIMODET_CUDA_CHECK(cudaMemcpy(L->h_src.get(), layout.h_src.data(),
                                  n_mat * sizeof(int32_t), cudaMemcpyHostToDevice));
    MIMODET_CUDA_CHECK(cudaMemcpy(L->out_pos.get(), layout.out_pos.data(),
                                  n_vec * sizeof(int32_t), cudaMemcpyHostToDevice));
    d_layouts.push_back(std::move(L));
    return static_cast<int>(d_layouts.size() - 1);
}

void cuda_batch_detector::run_gathered(int layout,
                                       const cf* packed,
                                       float noise_var,
                                       uint8_t* bits,
                                       float* llr,
                                       vector_stats* stats)
{
    (void)gathered_call(layout, packed, noise_var, nullptr, bits, llr, stats);
}

staged_result cuda_batch_detector::run_staged(int layout,
                                              const cf* packed,
                                              device_stage& stage,
                                              uint8_t* bits,
                                              float* llr,
                                              vector_stats* stats)
{
    return gathered_call(layout, packed, 0.0f, &stage, bits, llr, stats);
}

staged_result cuda_batch_detector::gathered_call(int layout,
                                         const cf* packed,
                                         float noise_var,
                                         device_stage* stage,
                                         uint8_t* bits,
                                         float* llr,
                                         vector_stats* stats)
{
    if (layout < 0 || static_cast<size_t>(layout) >= d_layouts.size())
        throw std::invalid_argument("mimodet: unknown gather layout");
    if ((bits == nullptr) == (llr == nullptr))
        throw std::invalid_argument("mimodet: run_gathered needs exactly one output");
    if (llr && !d_soft)
        throw std::logic_error("mimodet: detector '" + d_cfg.algorithm +
                               "' gives hard bits only");
    const device_layout& L = *d_layouts[layout];
    const device_guard guard(d_device);
    const bool dev_stats = stats && kernels_write_stats();
    const size_t nr = d_cfg.n_rx, nt = d_cfg.n_tx;
    const size_t nb = static_cast<size_t>(bits_per_vector());
    const bool tl = d_timeline != nullptr;
    staged_result result{ staged_outcome::detected, noise_var };
    try {
        d_tl_t0 = tl ? call_timeline::now_ns() : 0;
        plan(L.segments.data(), L.segments.size(), dev_stats, llr != nullptr);
        if (!d_single_copy) // add_gather_layout admits single-copy layouts only
            throw std::logic_error("mimodet: gather layout is not a single-copy call");
        d_packed.reserve(L.packed_len);
        if (llr)
            d_out_llr.reserve(L.n_vec * nb);
        else
            d_out_bits.reserve(L.n_vec * nb);
        d_tl_planned = tl ? call_timeline::now_ns() : 0;

        cudaStream_t s0 = d_streams[0];
        if (tl)
            MIMODET_CUDA_CHECK(cudaEventRecord(d_tl_events[0], s0));
        // packed is host_alloc memory (page-locked with a GPU): one asynchronous copy.
        // With a stage, only the grids: the stage writes H on the device.
        // Without packed, the stage uploads (and makes) the grids itself.
        const size_t upload_len = stage ? nr * L.grid_len : L.packed_len;
        if (packed || !stage)
            MIMODET_CUDA_CHECK(cudaMemcpyAsync(d_packed.get(), packed,
                                               upload_len * sizeof(float2),
                                               cudaMemcpyHostToDevice, s0));
        if (stage) {
            result = stage->run(d_packed.get(), s0);
            if (result.outcome != staged_outcome::detected)
                return result; // nothing more enqueued
            noise_var = result.noise_var;
        }
        const float* nv_dev = stage ? stage->device_noise_var() : nullptr;
        const size_t gather_items = std::max(L.n_vec * nr, L.n_mat * nr * nt);
        gather_slot_kernel<<<stride_blocks(gather_items), 256, 0, s0>>>(
            d_packed.get(), L.y_src.get(), L.h_src.get(), static_cast<int>(L.n_vec),
            static_cast<int>(L.n_mat), static_cast<int>(nr), static_cast<int>(nr * nt),
            static_cast<int>(L.grid_len), noise_var, nv_dev, d_y.get(), d_H.get(),
            d_nv.get());
        MIMODET_CUDA_CHECK_LAUNCH();
        if (tl)
            MIMODET_CUDA_CHECK(cudaEventRecord(d_tl_events[1], s0));
        enqueue_chunks_forked(dev_stats, false);
        const bool scale = llr && !d_cfg.llr_scaled;
        scatter_slot_kernel<<<stride_blocks(L.n_vec * nb), 256, 0, s0>>>(
            d_bits.get(), d_llr.get(), L.out_pos.get(), static_cast<int>(L.n_vec),
            static_cast<int>(nb), d_soft && !llr, scale, noise_var, nv_dev,
            llr ? nullptr : d_out_bits.get(), llr ? d_out_llr.get() : nullptr);
        MIMODET_CUDA_CHECK_LAUNCH();
        if (tl)
            MIMODET_CUDA_CHECK(cudaEventRecord(d_tl_events[2], s0));
        if (llr)
            MIMODET_CUDA_CHECK(cudaMemcpyAsync(h_llr.get(), d_out_llr.get(),
                                               L.n_vec * nb * sizeof(float),
                                               cudaMemcpyDeviceToHost, s0));
        else
            MIMODET_CUDA_CHECK(cudaMemcpyAsync(h_bits.get(), d_out_bits.get(), L.n_vec * nb,
                                               cudaMemcpyDeviceToHost, s0));
        // slot_detection's stats are host_alloc memory: copied there without staging.
        const bool stage_stats = dev_stats && !is_pinned(stats);
        if (dev_stats)
            MIMODET_CUDA_CHECK(cudaMemcpyAsync(stage_stats ? h_stats.get() : stats,
                                               d_stats.get(),
                                               L.n_vec * sizeof(vector_stats),
                                               cudaMemcpyDeviceToHost, s0));
        if (tl)
            MIMODET_CUDA_CHECK(cudaEventRecord(d_tl_events[3], s0));
        const int64_t t_enqueued = tl ? call_timeline::now_ns() : 0;
        d_gathered_wait.wait(s0);
        const int64_t t_synced = tl ? call_timeline::now_ns() : 0;
        if (stage)
            result = stage->finish(result);
        // The caller's buffers are GNU Radio's (pageable): a sequential copy each.
        if (llr)
            std::memcpy(llr, h_llr.get(), L.n_vec * nb * sizeof(float));
        else
            std::memcpy(bits, h_bits.get(), L.n_vec * nb);
        if (stage_stats)
            std::memcpy(stats, h_stats.get(), L.n_vec * sizeof(vector_stats));
        if (tl)
            record_timeline(t_enqueued, t_synced);
    } catch (...) {
        synchronize_all();
        d_chunks.clear();
        throw;
    }
    if (stats && !kernels_write_stats())
        std::fill(stats, stats + L.n_vec, host_stats());
    return result;
}

double cuda_batch_detector::kernel_seconds(int repetitions)
{
    if (repetitions < 1)
        throw std::invalid_argument("mimodet: kernel_seconds needs repetitions >= 1");
    if (d_chunks.empty())
        throw std::logic_error("mimodet: kernel_seconds needs a completed detect call");
    const device_guard guard(d_device);
    // The last batch's inputs are still on the device: re-run its kernels, chunk after
    // chunk on one stream, between two events. No host copies are timed.
    cudaStream_t s = d_streams[0];
    MIMODET_CUDA_CHECK(cudaEventRecord(d_timing[0], s));
    for (int r = 0; r < repetitions; ++r)
        for (size_t c = 0; c < d_chunks.size(); ++c)
            launch(s, make_chunk(c, false));
    MIMODET_CUDA_CHECK(cudaEventRecord(d_timing[1], s));
    MIMODET_CUDA_CHECK(cudaEventSynchronize(d_timing[1]));
    float ms = 0.0f;
    MIMODET_CUDA_CHECK(cudaEventElapsedTime(&ms, d_timing[0], d_timing[1]));
    return ms * 1e-3 / repetitions;
}

} // namespace core
} // namespace mimodet
} // namespace gr
