/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The max-log LLR rule of every list/trellis detector, in one place for the CPU
// (kernel.h) and the CUDA detectors (sfsd_cuda.cu, mtt_device.cuh, and the linear
// demapper of linear_common.h): __host__ __device__
// under nvcc, plain inline C++ elsewhere. Double precision; the GPU runs the very same
// operations in the same order, so both give the same float.

#ifndef INCLUDED_MIMODET_CORE_LLR_H
#define INCLUDED_MIMODET_CORE_LLR_H

#include <gnuradio/mimodet/detector.h>
#include <float.h>
#include <math.h>

#include "util/host_device.h"

namespace gr {
namespace mimodet {
namespace core {

//! x as a float, saturated at float's range: the guard of every LLR conversion (raw
//! metric differences, llr_scaled false, are not held to llr_saturation and can pass
//! it). NaN stays NaN.
MIMODET_HD inline float saturate_llr(double x)
{
    if (x > FLT_MAX)
        return FLT_MAX;
    if (x < -FLT_MAX)
        return -FLT_MAX;
    return static_cast<float>(x);
}

/*!
 * LLR from the two per-bit minimum metrics (max-log), with clipping and the
 * missing-counter-hypothesis rule of detector_config::llr_clip. A minimum of +inf
 * means no path with that bit value was found. The LLR is always finite: saturated at
 * +-llr_saturation (an overflow at a vanishing noise_var or a huge H and y; inv_noise_var
 * may be +inf for a noise-free stream), 0 for equal metrics and for metrics that are not
 * numbers (a rank-deficient H's division by a zero pivot: flagged
 * vector_flag_rank_deficient by the detector).
 */
MIMODET_HD inline float maxlog_llr(double min_metric_bit0,
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
    else if (min_metric_bit1 == min_metric_bit0)
        l = 0.0; // also for inv_noise_var = +inf
    else
        l = (min_metric_bit1 - min_metric_bit0) * inv_noise_var;
    if (!(l == l)) // NaN
        l = 0.0;
    else if (l > llr_saturation)
        l = llr_saturation;
    else if (l < -llr_saturation)
        l = -llr_saturation;
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
