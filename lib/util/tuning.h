/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Every environment switch of the library, in one place. They are for measurements and
// tests, never needed in a flowgraph: each one replaces a default that the blocks'
// parameters and the measured defaults already choose. Each function reads its
// variable when it is called (the library calls it when an object is made, or once per
// process where noted), checks the value and says what it means; switches() lists them
// all (docs/TUNING.md shows the same table). An unset or empty variable is the default.

#ifndef INCLUDED_MIMODET_CORE_TUNING_H
#define INCLUDED_MIMODET_CORE_TUNING_H

#include <gnuradio/mimodet/api.h>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {
namespace tuning {

//! MIMODET_ANTENNA_THREADS=1..8: threads of the stages that share a slot's antennas out
//! (ofdm_sync, ofdm_demod; at most n_rx). 0 (unset): the stage's own rule
//! (antenna_threads() in worker_pool.h). Read when a block is made.
MIMODET_API int antenna_threads();

//! MIMODET_NO_AVX (any value): the channel estimator's Wiener step keeps its SSE code
//! on a CPU with AVX (the tests compare both). Read once per process.
MIMODET_API bool no_avx();

//! MIMODET_CALL_TIMELINE=PREFIX: per-call timelines of the instrumented stages are
//! written to PREFIX_<kind>_<n>.csv (call_timeline.h). "" (unset): none. Read when an
//! instrumented object is made.
MIMODET_API std::string call_timeline_prefix();

//! MIMODET_GPU_LANES=1..4: lanes (slots in flight) of a GPU receiver or detector. 0
//! (unset): the block's default (2; a detector with a PSD deadline 1). Read when a block
//! is made.
MIMODET_API int gpu_lanes();

//! MIMODET_RECEIVER_ASYNC=0|1: whether mimo_receiver keeps slots in flight across its
//! calls (1) or detects a call's slots before it returns (0). -1 (unset): the block's
//! default (1 for a GPU receiver running psd without a deadline, else 0). Read when a
//! block is made.
MIMODET_API int receiver_async();

//! MIMODET_MAX_SLOTS_PER_CALL=1..8: most slots mimo_detector detects in one call. 0
//! (unset): 8. Read when a block is made.
MIMODET_API int max_slots_per_call();

//! MIMODET_SYNC_AHEAD=0|1: whether ofdm_sync takes the next slot's input in the call
//! that puts a slot out. -1 (unset): the block's default (1). Read when a block is made.
MIMODET_API int sync_ahead();

//! MIMODET_INPUT_REGISTER=0|1: 0 makes a GPU receiver that demodulates copy each slot
//! to page-locked memory instead of uploading it from its registered input buffers.
//! -1 (unset): register (1). Read when the flowgraph starts.
MIMODET_API int input_register();

//! MIMODET_GPU_WAIT=spin|block: block makes the host threads sleep while the GPU works
//! instead of polling (CUDA's default, spin). Any other value is spin. Read once per
//! process, at the first GPU wait (which may be in a block's work(), so a bad value
//! is not an error there).
MIMODET_API bool gpu_wait_blocks();

//! MIMODET_PSD_KERNEL=warp|block|auto: forces the CUDA PSD detector's variant of
//! Algorithm 3 (warp or block kernel). "auto" or "" (unset): the factory's choice.
//! Read when a detector is made.
MIMODET_API std::string psd_kernel();

//! MIMODET_PSD_SE_SPLIT=1..65536: nodes a depth-first CUDA PSD search expands in one
//! thread (first pass, then each task) before the rest is spread over tasks. 0 (unset):
//! the kernels' default. Read when a detector is made.
MIMODET_API int psd_se_split();

//! MIMODET_PSD_SE_DRAIN=1..65536: the same, once every vector of the first pass (every
//! task of a wave) has its thread. 0 (unset): the kernels' default. Read when a detector
//! is made.
MIMODET_API int psd_se_drain();

//! MIMODET_PSD_SE_COOPERATIVE=0|1: 1 runs a depth-first CUDA PSD's waves of tasks in one
//! cooperative launch (which ends at the first wave without tasks) where the device has
//! cooperative launches, 0 launches each wave by itself. -1 (unset): the kernels' choice
//! (psd_se_cooperative_waves). Read when a detector is made.
MIMODET_API int psd_se_cooperative();

//! MIMODET_PSD_SE_SHARED_ROWS=0|1: 1 keeps a depth-first CUDA PSD search's per-row state
//! in shared memory, 0 in registers. -1 (unset): the kernels' choice
//! (psd_se_shared_rows). Read when a detector is made.
MIMODET_API int psd_se_shared_rows();

//! MIMODET_PSD_SE_STORED_Z=0|1: 1 computes every vector's z = Q^T y of a depth-first
//! CUDA PSD chunk in a kernel before the first pass (its own, or the first-leaf kernel
//! where that runs), whose threads then read it; 0: each first-pass thread computes its
//! vector's. -1 (unset): the detector's choice
//! (psd_se_stored_z). Read when a detector is made.
MIMODET_API int psd_se_stored_z();

//! MIMODET_PSD_SE_DEFERRED_WRITE=0|1: 1 leaves the decisions of a depth-first CUDA
//! PSD's first pass for the decision kernel to write; 0: the first pass writes them. -1
//! (unset): the detector's choice (psd_se_deferred_write). Read when a detector is made.
MIMODET_API int psd_se_deferred_write();

//! MIMODET_PSD_SE_FIRST_LEAF=0|1: 1 decides the vectors of a depth-first CUDA PSD chunk
//! whose search ends at its first leaf in a kernel before the first pass, which also
//! computes every vector's z; 0: the first pass searches every vector. -1 (unset): the
//! detector's choice (psd_se_first_leaf). Read when a detector is made.
MIMODET_API int psd_se_first_leaf();

//! MIMODET_PSD_SE_DEPENDENT_LAUNCH=0|1: 1 launches the kernels of a depth-first CUDA PSD
//! chunk after its QR as programmatic dependent launches (where the GPU's compute
//! capability is 9.0 or above; cuda/common/dependent_launch.cuh); 0: as plain launches.
//! -1 (unset): 1. Read when a detector is made.
MIMODET_API int psd_se_dependent_launch();

//! MIMODET_PSD_SE_REFILL=1..32: lanes of a warp of a depth-first CUDA PSD's first pass
//! or wave of tasks that wait for their next item before they take theirs together (all
//! do once no lane of the warp searches); 1: each takes its own as its search ends. 0
//! (unset): the detector's choice (psd_se_refill_lanes). Read when a detector is made.
MIMODET_API int psd_se_refill();

//! MIMODET_PSD_SE_CHUNK=4096..1048576: vectors per chunk of a depth-first CUDA PSD call
//! of more than 16384 vectors. 0 (unset): the detector's choice. Read when a detector is
//! made.
MIMODET_API int psd_se_chunk();

//! MIMODET_CHUNK_SHARES=1..8: streams' shares of a call per chunk of a CUDA detector's
//! call of more than 16384 vectors (each chunk's kernels launch once, its inputs cross
//! a share at a time). 0 (unset): the detector's choice. Read when a detector is made.
MIMODET_API int chunk_shares();

//! MIMODET_CPU_QR_LANES=1|4|8: most channel matrices whose sorted QRs the CPU psd
//! computes at once, one per SIMD lane (qr_lanes.h); 1: one at a time. 0 (unset): as
//! many as the CPU takes (8 with AVX-512, 4 with AVX2). Read when a detector is made.
MIMODET_API int cpu_qr_lanes();

//! MIMODET_FSD_THREADS=1..256, a power of two: threads per received vector of the CUDA
//! FSD's detection kernel (at most M^T of them), each walking M^T / threads branches.
//! 0 (unset): the detector's choice. Read when a detector is made.
MIMODET_API int fsd_threads();

//! For the switches above that are integers: the value of `name` if set, in lo..hi;
//! `fallback` if unset or empty. std::invalid_argument naming the variable otherwise,
//! and for a name that is not in switches().
MIMODET_API int integer(const char* name, int lo, int hi, int fallback);

//! One switch: its variable, its values, its default and what it changes.
struct switch_info {
    const char* name;
    const char* values;
    const char* fallback;
    const char* effect;
};

//! Every switch of the library.
MIMODET_API const std::vector<switch_info>& switches();

} // namespace tuning
} // namespace core
} // namespace mimodet
} // namespace gr

#endif
