/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// float2 arithmetic rounded as the CPU's std::complex<float> (every product and sum
// explicitly rounded, so nvcc cannot contract them into fused multiply-adds): the GPU
// estimator and demodulator then give the CPU's values where their inputs agree.

#ifndef INCLUDED_MIMODET_CUDA_FLOAT_MATH_CUH
#define INCLUDED_MIMODET_CUDA_FLOAT_MATH_CUH

#include <cuda_runtime.h>

namespace gr {
namespace mimodet {
namespace core {

//! a * b as std::complex<float>'s operator*.
__device__ inline float2 cmul_rn(float2 a, float2 b)
{
    return make_float2(__fsub_rn(__fmul_rn(a.x, b.x), __fmul_rn(a.y, b.y)),
                       __fadd_rn(__fmul_rn(a.x, b.y), __fmul_rn(a.y, b.x)));
}

//! std::norm of a complex<float>, computed in float.
__device__ inline float cnorm_rn(float2 a)
{
    return __fadd_rn(__fmul_rn(a.x, a.x), __fmul_rn(a.y, a.y));
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_FLOAT_MATH_CUH */
