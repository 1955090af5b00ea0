/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The max-log LLR rule of every list/trellis detector, in one place for the CPU
// (kernel.h) and the CUDA detectors (sfsd_cuda.cu, mtt_device.cuh): __host__ __device__
// under nvcc, plain inline C++ elsewhere. Double precision; the GPU runs the very same
// operations in the same order, so both give the same float.

#ifndef INCLUDED_MIMODET_CORE_LLR_H
#define INCLUDED_MIMODET_CORE_LLR_H

#include <gnuradio/mimodet/detector.h>
#include <float.h>
#include <math.h>

#ifdef __CUDACC__
#define MIMODET_LLR_HD __host__ __device__
#else
#define MIMODET_LLR_HD
#endif

namespace gr {
namespace mimodet {
namespace core {

//! x as a float, saturated at float's range: huge samples or a tiny noise variance can
//! take an LLR past it, which would otherwise become infinite (and the conversion
//! undefined). NaN stays NaN.
MIMODET_LLR_HD inline float saturate_llr(double x)
{
    if (x > FLT_MAX)
        return FLT_MAX;
    if (x < -FLT_MAX)
        return -FLT_MAX;
    return static_cast<float>(x);
}

//! LLR from the two per-bit minimum metrics (max-log), with clipping and the
//! missing-counter-hypothesis rule of detector_config::llr_clip. A minimum of +inf
//! means no path with that bit value was found.
MIMODET_LLR_HD inline float maxlog_llr(double min_metric_bit0,
                                       double min_metric_bit1,
                                       double inv_noise_var,
                                       float llr_clip)
{
    const double inf = INFINITY;
    const double missing = llr_clip > 0 ? llr_clip : missing_llr;
    double l;
    if (min_metric_bit1 == inf && min_metric_bit0 == inf)
        l = 0.0;
    else if (min_metric_bit1 == inf)
        l = missing;
    else if (min_metric_bit0 == inf)
        l = -missing;
    else
        l = (min_metric_bit1 - min_metric_bit0) * inv_noise_var;
    if (llr_clip > 0) {
        if (l > llr_clip)
            l = llr_clip;
        else if (l < -llr_clip)
            l = -llr_clip;
    }
    return saturate_llr(l);
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CORE_LLR_H */
