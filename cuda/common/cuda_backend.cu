/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA side of the backend seam (lib/detect/backend.h): device discovery, host memory and
// the GPU detectors' factories, registered with the algorithm registry in one place. An
// algorithm registered here has a CUDA detector; detector::make alone decides between
// the backends.

#include "cuda/common/cuda_check.h"
#include "cuda/common/cuda_memory.h"
#include "cuda/fsd/fsd_cuda.h"
#include "cuda/linear/linear_cuda.h"
#include "cuda/mtt/mtt_cuda.h"
#include "cuda/psd/psd_cuda.h"
#include "cuda/sfsd/sfsd_cuda.h"
#include "detect/backend.h"
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace gr {
namespace mimodet {

int cuda_device_count()
{
    int n = 0;
    // No driver or no device is an answer ("none"), not an error.
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); // clear the sticky error state
        return 0;
    }
    return n;
}

namespace core {

bool cuda_built() { return true; }

namespace {
// host_alloc puts this header before the block: whether it is page-locked (cudaFreeHost)
// or from malloc (no device, or the driver refused). 64 bytes keep the block aligned.
constexpr size_t k_host_header = 64;
constexpr uint32_t k_pinned = 0x50494e44u, k_plain = 0x504c4e20u;
} // namespace

void* host_alloc(size_t bytes)
{
    void* p = nullptr;
    uint32_t kind = k_pinned;
    if (cuda_device_count() == 0 ||
        cudaHostAlloc(&p, bytes + k_host_header, cudaHostAllocPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        kind = k_plain;
        p = std::malloc(bytes + k_host_header);
        if (!p)
            throw std::bad_alloc();
    }
    *static_cast<uint32_t*>(p) = kind;
    return static_cast<char*>(p) + k_host_header;
}

void host_free(void* q)
{
    if (!q)
        return;
    char* p = static_cast<char*>(q) - k_host_header;
    if (*reinterpret_cast<uint32_t*>(p) == k_pinned)
        (void)cudaFreeHost(p);
    else
        std::free(p);
}

namespace {
/*!
 * make on cfg.device: the factory's device queries, the detector's construction (its
 * streams, events, tables, buffers) and, through the returned pointer's deleter, its
 * destruction all run with that device current, whatever the calling thread's is (the
 * detector's own calls select it themselves). The index is valid (detector::make).
 */
template <cuda_detector_factory make>
detector::sptr on_config_device(const detector_config& cfg)
{
    detector::sptr d;
    {
        const device_guard guard(cfg.device);
        d = make(cfg);
    }
    const int device = cfg.device;
    detector* p = d.get();
    return detector::sptr(p, [d = std::move(d), device](detector*) mutable {
        device_release_scope scope(device);
        scope.select();
        d.reset();
    });
}
} // namespace

void register_cuda_detectors(const cuda_registrar& add)
{
    add("zf", on_config_device<make_linear_cuda_detector>);
    add("mmse", on_config_device<make_linear_cuda_detector>);
    add("psd", on_config_device<make_psd_cuda_detector>);
    add("fsd", on_config_device<make_fsd_cuda_detector>);
    add("sfsd", on_config_device<make_sfsd_cuda_detector>);
    add("mtt", on_config_device<make_mtt_cuda_detector>);
}

} // namespace core
} // namespace mimodet
} // namespace gr
