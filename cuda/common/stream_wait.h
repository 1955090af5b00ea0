/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// How the host waits for a stream in the receiver's real-time path. CUDA's default on a
// machine with more CPUs than contexts is to poll: the waiting thread holds its CPU for
// the whole wait (a fused 20 MHz 4x4 slot: about 0.2 ms of every 0.5 ms). Where a
// flowgraph's threads share a few CPUs, that CPU is missing to the others; a blocking
// wait sleeps until the GPU's interrupt instead, at the cost of a wake-up.
// MIMODET_GPU_WAIT=block|spin chooses (a measurement switch, read once; default spin).

#ifndef INCLUDED_MIMODET_STREAM_WAIT_H
#define INCLUDED_MIMODET_STREAM_WAIT_H

#include "cuda/common/cuda_check.h"
#include "util/tuning.h"
#include <cstdlib>
#include <cstring>

namespace gr {
namespace mimodet {
namespace core {

//! True where MIMODET_GPU_WAIT=block.
inline bool gpu_wait_blocks() { return tuning::gpu_wait_blocks(); }

//! Waits for everything enqueued on a stream so far, polling or sleeping as above.
class stream_waiter
{
public:
    stream_waiter() = default;
    stream_waiter(const stream_waiter&) = delete;
    stream_waiter& operator=(const stream_waiter&) = delete;
    ~stream_waiter()
    {
        if (d_event)
            (void)cudaEventDestroy(d_event);
    }
    //! On the device current now (the one the stream belongs to).
    void wait(cudaStream_t s)
    {
        if (!gpu_wait_blocks()) {
            MIMODET_CUDA_CHECK(cudaStreamSynchronize(s));
            return;
        }
        if (!d_event)
            MIMODET_CUDA_CHECK(cudaEventCreateWithFlags(
                &d_event, cudaEventBlockingSync | cudaEventDisableTiming));
        MIMODET_CUDA_CHECK(cudaEventRecord(d_event, s));
        MIMODET_CUDA_CHECK(cudaEventSynchronize(d_event));
    }

private:
    cudaEvent_t d_event = nullptr;
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
