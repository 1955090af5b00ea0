/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The markers of code that CPU and GPU share: __host__ __device__ under nvcc, nothing for
// the host compiler, so a header under lib/detect holds one definition of an algorithm's
// arithmetic for both backends; and the device code's full unrolling.

#ifndef INCLUDED_MIMODET_CORE_HOST_DEVICE_H
#define INCLUDED_MIMODET_CORE_HOST_DEVICE_H

#ifdef __CUDACC__
#define MIMODET_HD __host__ __device__
#else
#define MIMODET_HD
#endif

// Full unrolling in device code, where a loop's trip count is a compile-time constant (a
// templated matrix size): it turns small per-thread arrays into registers.
#ifdef __CUDA_ARCH__
#define MIMODET_UNROLL _Pragma("unroll")
#else
#define MIMODET_UNROLL
#endif

#endif
