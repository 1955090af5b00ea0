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

namespace gr {
namespace mimodet {
namespace core {
//! The exception of a failed CUDA call. The error is also cleared from the runtime's
//! last-error state: a failed allocation is not sticky, and a later launch check must not
//! report it again once memory is back.
inline std::runtime_error
cuda_error(cudaError_t err, const char* call, const char* file, int line)
{
    (void)cudaGetLastError();
    std::string m = std::string("mimodet CUDA error: ") + call + " failed at " + file +
                    ":" + std::to_string(line) + ": " + cudaGetErrorString(err);
    if (err == cudaErrorMemoryAllocation)
        m += " (GPU memory exhausted: another process may hold it, see nvidia-smi; "
             "backend 'auto' takes the CPU where this happens at construction)";
    return std::runtime_error(m);
}
} // namespace core
} // namespace mimodet
} // namespace gr

// Every CUDA call and launch goes through this: an error becomes an exception that
// names the call and where it happened.
#define MIMODET_CUDA_CHECK(call)                          \
    do {                                                  \
        const cudaError_t mimodet_err_ = (call);          \
        if (mimodet_err_ != cudaSuccess)                  \
            throw ::gr::mimodet::core::cuda_error(        \
                mimodet_err_, #call, __FILE__, __LINE__); \
    } while (0)

#define MIMODET_CUDA_CHECK_LAUNCH() MIMODET_CUDA_CHECK(cudaGetLastError())

#endif
