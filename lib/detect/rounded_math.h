/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Explicitly rounded double operations for code shared by the CPU and the CUDA kernels
// (__host__ __device__ under nvcc, plain inline C++ elsewhere). nvcc would otherwise
// contract a * b + c into an FMA, and metrics, pivots or rank decisions could differ from
// the CPU's in the last bit (the baseline x86-64 host build has no FMA to contract into).

#ifndef INCLUDED_MIMODET_CORE_ROUNDED_MATH_H
#define INCLUDED_MIMODET_CORE_ROUNDED_MATH_H

#include "util/host_device.h"

namespace gr {
namespace mimodet {
namespace core {

MIMODET_HD inline double rn_mul(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}
MIMODET_HD inline double rn_add(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}
MIMODET_HD inline double rn_sub(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}
MIMODET_HD inline double rn_div(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
