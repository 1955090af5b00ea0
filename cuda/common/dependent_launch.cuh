/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Programmatic dependent launch (compute capability 9.0 and above). A kernel launched
// with it right after another kernel on the same stream has its blocks dispatched while
// the earlier kernel's last blocks still run, once every block of the earlier one has
// called dependent_launch_allow (or ended). Each of its threads calls
// dependent_launch_wait before it touches memory, which returns once the earlier kernel
// has completed and its writes are visible: the two kernels' memory operations keep the
// stream's order, and what the launch saves is the set-up and block dispatch between
// them (a chain of short or empty kernels pays it once each). Below 9.0, and for a kernel
// launched without it, both calls do nothing.

#ifndef INCLUDED_MIMODET_CUDA_DEPENDENT_LAUNCH_CUH
#define INCLUDED_MIMODET_CUDA_DEPENDENT_LAUNCH_CUH

#include "cuda/common/cuda_check.h"
#include <cuda_runtime.h>
#include <utility>

namespace gr {
namespace mimodet {
namespace core {

//! Waits until the kernel this one depends on has completed and its writes are visible.
__device__ __forceinline__ void dependent_launch_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

//! Lets the next kernel of the stream, if launched as dependent, dispatch its blocks.
__device__ __forceinline__ void dependent_launch_allow()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

//! Whether the current device runs dependent launches (compute capability 9.0 or above).
inline bool dependent_launch_supported()
{
    int device = 0, major = 0;
    MIMODET_CUDA_CHECK(cudaGetDevice(&device));
    MIMODET_CUDA_CHECK(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return major >= 9;
}

//! Launches kernel on stream s, as a dependent launch where dependent is true (the
//! kernel then calls dependent_launch_wait before its first memory access).
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...),
                   dim3 grid,
                   dim3 block,
                   size_t smem,
                   cudaStream_t s,
                   bool dependent,
                   Args&&... args)
{
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = dependent ? &attr : nullptr;
    cfg.numAttrs = dependent ? 1 : 0;
    MIMODET_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif // INCLUDED_MIMODET_CUDA_DEPENDENT_LAUNCH_CUH
