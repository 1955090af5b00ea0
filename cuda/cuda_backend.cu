/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA side of the backend seam (lib/core/backend.h): device discovery and the factory
// of GPU detectors. Detector kernels are added algorithm by algorithm; an algorithm
// without one makes make_cuda_detector return nullptr, and the core reports it.

#include "../lib/core/backend.h"
#include "cuda_check.h"
#include "fsd_cuda.h"
#include "linear_cuda.h"
#include "mtt_cuda.h"
#include "psd_cuda.h"
#include "sfsd_cuda.h"
#include <cuda_runtime.h>

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

detector::sptr make_cuda_detector(const detector_config& cfg)
{
    if (cfg.algorithm == "fsd")
        return make_fsd_cuda_detector(cfg);
    if (cfg.algorithm == "psd")
        return make_psd_cuda_detector(cfg);
    if (cfg.algorithm == "mtt")
        return make_mtt_cuda_detector(cfg);
    if (cfg.algorithm == "sfsd")
        return make_sfsd_cuda_detector(cfg);
    if (cfg.algorithm == "zf" || cfg.algorithm == "mmse")
        return make_linear_cuda_detector(cfg);
    return nullptr;
}

} // namespace core
} // namespace mimodet
} // namespace gr
