/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_CUDA_CHECK_H
#define INCLUDED_MIMODET_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

// Every CUDA call and launch goes through this: an error becomes an exception that
// names the call and where it happened.
#define MIMODET_CUDA_CHECK(call)                                                       \
    do {                                                                               \
        const cudaError_t mimodet_err_ = (call);                                       \
        if (mimodet_err_ != cudaSuccess)                                               \
            throw std::runtime_error(std::string("mimodet CUDA error: ") + #call +    \
                                     " failed at " + __FILE__ + ":" +                 \
                                     std::to_string(__LINE__) + ": " +                \
                                     cudaGetErrorString(mimodet_err_));                \
    } while (0)

#define MIMODET_CUDA_CHECK_LAUNCH() MIMODET_CUDA_CHECK(cudaGetLastError())

#endif
