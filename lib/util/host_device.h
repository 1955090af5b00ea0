/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The one marker of code that CPU and GPU share: __host__ __device__ under nvcc, nothing
// for the host compiler, so a header under lib/detect holds one definition of an algorithm's
// arithmetic for both backends.

#ifndef INCLUDED_MIMODET_CORE_HOST_DEVICE_H
#define INCLUDED_MIMODET_CORE_HOST_DEVICE_H

#ifdef __CUDACC__
#define MIMODET_HD __host__ __device__
#else
#define MIMODET_HD
#endif

#endif
