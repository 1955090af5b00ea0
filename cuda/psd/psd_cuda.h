/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA parallel sphere detector (hard output, exact ML). Same algorithm, parameters
// (lib/detect/psd/psd_params.h) and QR choice as the CPU PSD (lib/detect/psd/psd.cc); the
// GPU layout follows the PSD paper, Sections 5-6: the level buffers in shared memory,
// vectors fetched from a global counter. Two variants of the same traversal (same
// enumeration order, metrics, results and node counts):
//   warp:  one warp per symbol vector at a time, several warps per block, each with its
//          own shared-memory slice, __syncwarp only; sorted levels of up to
//          psd_cuda_warp_max_sorted entries (rank sort up to 128, warp merge sort above).
//   block: one thread block per symbol vector at a time (CUB block radix sort), sorted
//          levels of up to psd_cuda_max_sorted entries.
// The factory takes the warp variant when every level (sorted and leaf) has at most
// psd_cuda_warp_max_sorted entries and its slice fits the shared memory, else the block
// variant. Internal, for tests and measurements: the environment variable
// MIMODET_PSD_KERNEL=warp|block (read when the detector is made; "auto" or unset: the
// rule above) forces one variant; a forced warp variant also takes leaf levels of any
// size. Parameters the forced variant cannot run are refused as below.

#ifndef INCLUDED_MIMODET_CUDA_PSD_CUDA_H
#define INCLUDED_MIMODET_CUDA_PSD_CUDA_H

#include "detect/algorithm_registry.h" // cuda_unsupported
#include <gnuradio/mimodet/detector.h>

namespace gr {
namespace mimodet {
namespace core {

//! Largest number of threads per detection block (tt).
constexpr int psd_cuda_max_threads = 1024;
//! Largest intermediate (sorted) buffer: tt * items per thread of the block sort.
constexpr int psd_cuda_max_sorted = psd_cuda_max_threads * 12;
//! Largest intermediate (sorted) buffer of the warp variant: 32 lanes x 16 items.
constexpr int psd_cuda_warp_max_sorted = 32 * 16;

/*!
 * The CUDA PSD for cfg (algorithm "psd"; psd_lvl / psd_exp resolved and validated by the
 * shared rules of psd_params.h). When the parameters exceed what the kernel supports (an
 * intermediate buffer larger than psd_cuda_max_sorted, or level buffers that do not fit
 * the device's shared memory per block; with MIMODET_PSD_KERNEL set: what the forced
 * variant supports): throws cuda_unsupported.
 */
detector::sptr make_psd_cuda_detector(const detector_config& cfg);

//! The depth-first parameter set's detector (psd_se_cuda.cu); make_psd_cuda_detector
//! picks it for that set.
detector::sptr make_psd_se_cuda_detector(const detector_config& cfg);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_PSD_CUDA_H */
