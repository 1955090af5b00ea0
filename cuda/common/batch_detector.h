/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The host side every CUDA detector shares: a batch (one or several segments, e.g. the
// subcarrier groups of one or more slots) is cut into chunks of whole channel matrices
// (segment_map.h: a chunk may span segments, so a small call is one chunk and one launch
// per kernel) that go round-robin over a few streams; each chunk is staged into pinned
// memory, copied to the device asynchronously, detected by the algorithm's kernels and
// copied back, so the copies of one chunk overlap the kernels of others; the host waits
// chunk by chunk as results are needed, a few chunks behind the GPU, and checks for a
// cancellation (detector::cancel) before each chunk it enqueues. Buffers only
// grow; nothing is allocated per call once the largest batch has been seen.

#ifndef INCLUDED_MIMODET_CUDA_BATCH_DETECTOR_H
#define INCLUDED_MIMODET_CUDA_BATCH_DETECTOR_H

#include "cuda/common/cuda_memory.h"
#include "cuda/common/segment_map.h"
#include "cuda/common/stream_wait.h"
#include "detect/detector_internal.h"
#include "util/call_timeline.h"
#include <gnuradio/mimodet/detector.h>
#include <cuda_runtime.h>
#include <memory>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

class cuda_batch_detector : public detector, public device_gather
{
public:
    ~cuda_batch_detector() override;

    bool soft() const override { return d_soft; }
    double kernel_seconds(int repetitions) override;

protected:
    //! One chunk's device data; pointers already point at the chunk's first element.
    struct chunk {
        const float2* H;        //!< [n_mat][n_rx][n_tx]
        const float2* y;        //!< [n_vec][n_rx]
        const float* noise_var; //!< [n_mat]
        uint8_t* bits;          //!< [n_vec][n_tx*q] (hard detectors), else null
        float* llr;             //!< [n_vec][n_tx*q] (soft detectors), else null
        vector_stats* stats;    //!< [n_vec] or null (only when kernels_write_stats())
        size_t m0, n_mat;       //!< first matrix of the chunk in the batch, count
        size_t v0, n_vec;       //!< first vector, count
        segment_map map;        //!< chunk-relative vector -> chunk-relative matrix
    };

    cuda_batch_detector(const detector_config& cfg, bool soft);

    //! Grows the algorithm's per-matrix / per-vector device scratch for a whole batch
    //! (no kernel of this detector is running when it is called).
    virtual void reserve_scratch(size_t n_mat, size_t n_vec) = 0;
    //! Enqueues the algorithm's kernels for one chunk on stream s; scratch is indexed by
    //! the chunk's m0 / v0. Checks every launch.
    virtual void launch(cudaStream_t s, const chunk& c) = 0;
    //! True when the kernels write per-vector stats through chunk::stats; otherwise
    //! every vector gets host_stats().
    virtual bool kernels_write_stats() const { return false; }
    virtual vector_stats host_stats() const { return {}; }
    //! Streams' shares of a call per chunk (a call that is not a single-copy call): 1,
    //! each chunk one stream's share, whose kernels overlap the next chunk's copies;
    //! more, for kernels that gain from larger grids than the copies' overlap saves. A
    //! chunk's inputs are staged and copied one share at a time, so the host stages a
    //! share while the one before crosses PCIe, and its kernels run once when they are
    //! all in.
    virtual int chunk_shares() const { return 1; }
    //! Vectors per chunk of a call of n_vec vectors that is not a single-copy call.
    virtual size_t chunk_vectors(size_t n_vec) const
    {
        return chunk_target_vectors(n_vec, k_streams) *
               static_cast<size_t>(d_forced_shares ? d_forced_shares : chunk_shares());
    }

    int device() const { return d_device; }

private:
    void run(const cf* H,
             const cf* y,
             const batch_segment* segments,
             size_t n_seg,
             const float* noise_var,
             uint8_t* bits,
             float* llr,
             vector_stats* stats) final;
    //! Cuts the batch into chunks (plan_chunks) and sizes every buffer.
    void plan(const batch_segment* segments, size_t n_seg, bool dev_stats, bool llr_out);
    //! Soft detector, bits wanted: the chunk's LLR signs into d_bits, on stream s.
    void enqueue_signs(cudaStream_t s, const chunk& k);
    void enqueue_and_collect(const cf* H,
                             const cf* y,
                             const float* noise_var,
                             uint8_t* bits,
                             float* llr,
                             vector_stats* stats);
    chunk make_chunk(size_t c, bool with_stats) const;
    void synchronize_all();
    //! Single-copy call, inputs on the device: its chunks over the streams (forked from
    //! and joined back into stream 0); signs: a soft detector's LLR signs into d_bits.
    void enqueue_chunks_forked(bool dev_stats, bool signs);

    // Device-side gather (slot_detection's one-slot calls: device_gather).
    int add_gather_layout(const gather_layout& layout) final;
    void run_gathered(int layout,
                      const cf* packed,
                      float noise_var,
                      uint8_t* bits,
                      float* llr,
                      vector_stats* stats) final;
    staged_result run_staged(int layout,
                             const cf* packed,
                             device_stage& stage,
                             uint8_t* bits,
                             float* llr,
                             vector_stats* stats) final;
    //! run_gathered and run_staged: the slot's upload (its grids only, with a stage, which
    //! then writes H and gives the noise variance), gather, detection and outputs.
    //! Returns the stage's result (detected with noise_var without a stage); nothing
    //! is detected where the stage's run() does not say detected.
    staged_result gathered_call(int layout,
                        const cf* packed,
                        float noise_var,
                        device_stage* stage,
                        uint8_t* bits,
                        float* llr,
                        vector_stats* stats);
    //! A registered layout with its tables on the device.
    struct device_layout {
        std::vector<batch_segment> segments;
        size_t n_mat = 0, n_vec = 0, grid_len = 0, packed_len = 0;
        device_buffer<int32_t> y_src, h_src, out_pos;
    };
    std::vector<std::unique_ptr<device_layout>> d_layouts;
    device_buffer<float2> d_packed;   //!< the slot as packed by the caller
    device_buffer<uint8_t> d_out_bits; //!< outputs in slot order
    device_buffer<float> d_out_llr;
    //! MIMODET_CALL_TIMELINE: records a single-copy call (events d_tl_events).
    void record_timeline(int64_t t_enqueued, int64_t t_synced);

    static constexpr int k_streams = 3;
    //! Large calls: chunks enqueued ahead of the host (two per stream keep every stream
    //! fed while the host stages the next).
    static constexpr size_t k_in_flight = 2 * k_streams;

    bool d_soft;
    int d_device = 0;
    int d_forced_shares = 0; //!< MIMODET_CHUNK_SHARES; 0: chunk_shares()
    cudaStream_t d_streams[k_streams] = {};
    std::vector<cudaEvent_t> d_events; //!< one per chunk, reused across calls
    cudaEvent_t d_timing[2] = {};
    //! Small calls: [0] inputs copied (the other streams wait for it), [i] stream i done.
    cudaEvent_t d_fork_join[k_streams] = {};

    // Chunks of the last batch (kernel_seconds re-runs them); empty after a failure.
    std::vector<chunk_span> d_chunks;
    size_t d_n_mat = 0, d_n_vec = 0;
    bool d_single_copy = false; //!< small call: one stream, one copy each way

    device_buffer<float2> d_H, d_y;
    device_buffer<float> d_nv;
    device_buffer<uint8_t> d_bits;
    device_buffer<float> d_llr;
    device_buffer<vector_stats> d_stats;
    pinned_buffer<float2> h_H, h_y;
    pinned_buffer<float> h_nv;
    pinned_buffer<uint8_t> h_bits;
    pinned_buffer<float> h_llr;
    pinned_buffer<vector_stats> h_stats;

    //! MIMODET_CALL_TIMELINE only: per small (one-copy) call, the host's times (plan,
    //! enqueue, wait, unstage) and the device's (copy in, kernels, copy out) from events.
    std::unique_ptr<call_timeline> d_timeline;
    cudaEvent_t d_tl_events[4] = {};
    int64_t d_tl_t0 = 0, d_tl_planned = 0;
    stream_waiter d_gathered_wait; //!< gathered_call's wait for its outputs
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
