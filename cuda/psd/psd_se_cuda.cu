/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Slightly longer than the project's 800-line guide: the first-pass, wave and decision
// kernels share the task and per-vector structures and the step machine's
// instantiations, which keeps them in one translation unit.
//
// CUDA PSD for the depth-first parameter set (lvl = N+1, N, ..., 1, exp all 1): the
// Schnorr-Euchner search of lib/detect/psd/psd_se.h, the CPU PSD's code and arithmetic,
// so the decisions equal the CPU's. Kernels per chunk, after the PSD's preprocessing
// (QR):
//
//  enumeration (psd_se_enum_kernel, trees of at most 256 leaves with a starting bound
//    over every row: by default 2x2 and 4x4 QPSK and 2x2 16QAM): one vector per thread
//    visits all P^N leaves in Gray-code order (psd_se_enumerate) and writes the decision
//    where one leaf stands out by more than the guard band, which is the search's
//    decision; the near-ties (degenerate channels) go to the first pass as a list, each
//    searched in one thread below the bound over every leaf (at most 256 leaves: nothing
//    to spread, no waves).
//  first leaf (psd_se_first_leaf_kernel, where the enumeration does not run first and
//    the search starts without a bound: psd_se_first_leaf): one vector per thread, every
//    lane on the same code, computes z = Q^T y (stored for the first pass's threads,
//    psd_se_stored_z), descends to the search's first leaf (the SIC point) and decides
//    the vector where no other child on that path lies below the leaf's metric
//    (psd_se_first_leaf_decides: the search would end there). The rest go to the first
//    pass as a list, each searched from the start.
//  z (psd_se_z_kernel, where neither runs first: psd_se_stored_z): every vector's z,
//    one thread per vector, which the first pass's threads then read.
//  first pass (psd_se_first_kernel): one vector per thread. A persistent grid; each
//    thread advances its vector one search step per loop iteration and takes the next
//    vector from a global counter as soon as its own is done, so a warp's lanes stay busy
//    whatever the node counts (where the chunk has more vectors than the GPU holds
//    threads: the batch detector's chunks of a stream's share of a call have fewer, so
//    that copies overlap kernels, and MIMODET_PSD_SE_CHUNK sets larger ones). Nearly
//    every vector ends here, with the CPU's node counts. The search's per-row state is
//    in registers or in shared memory (psd_se_shared_rows, se_state).
//    Where psd_se_refill_lanes says, lanes whose searches ended wait until several of
//    their warp do and take their next vectors together (se_refill_gate): the waves too.
//    A search may start with a bound (psd_se_start_bound, the CPU's code: the best of a
//    few fixed-complexity candidates; by default at 4x4 QPSK, psd_se_start_rows).
//    One still running after psd_se_split_nodes expanded nodes is queued: its best leaf
//    so far (or the starting bound, before its first leaf inside it) bounds the rest of
//    its search, and that rest becomes tasks (se_rest): every
//    child not yet taken on its current path, at each row, inside the radius. They are
//    exactly what the search has left, so nothing is searched twice.
//    Drain rule: once every vector has its thread, threads only leave, and the lanes idle
//    until the launch's longest searches end; from then on a search spreads after
//    psd_se_drain_nodes (psd_se_drain_nodes_sparse where the chunk has fewer vectors than
//    the grid holds threads, one 20 MHz slot, or the first-leaf kernel leaves the first
//    pass fewer: most of the GPU is idle from the start; psd_se_drain_count),
//    so the next wave shares it over the whole GPU (psd_se_drains: not for trees of at
//    most 256 leaves, whose searches are short).
//  waves (psd_se_wave_kernel, N-1 at most): a launch each or, where searches rarely
//    spread (psd_se_cooperative_waves), one cooperative launch that runs them one after
//    the other (a grid-wide barrier between two) and ends at the first wave without
//    tasks. Tasks are subtree searches, one per thread, in the same
//    one-step-per-iteration loop, pruning with their own radius and with the vector's
//    bound, which every task lowers (atomicMin) when it finds a better
//    leaf. A task still running after as many nodes (the drain rule as well) hands its
//    rest, the same way, to the next wave (those tasks are at least one row deeper). A
//    near-singular channel, whose search can expand 10^5-10^6 nodes, so spreads over the
//    whole GPU within a few waves instead of holding one thread (and the launch) for
//    milliseconds. Task lists take their entries with one atomicAdd (se_reserve): many
//    searches spread at once under the drain rule, and a compare-and-swap loop on the
//    shared count there serialises them.
//  decision (psd_se_write_kernel): every task offers its best leaf with its position in
//    the sequential visiting order (psd_se_leaf_key) to its vector, which keeps the leaf
//    of least metric, the first in that order among equals (a per-vector lock): the
//    sequential search's decision, ties included. The node counts of a queued vector
//    are the work its tasks did, which depends on the schedule. This kernel writes the
//    queued vectors' bits and, where the first pass leaves its decisions in the vectors'
//    records (psd_se_deferred_write), every vector's.
//
// Deadline (cfg.psd_deadline_us > 0), as the other PSD kernels: from the call's first
// block (%globaltimer), each thread reads the timer at its vector's start and every
// k_se_check_evals path metrics. A vector running when the deadline is seen to pass ends
// with its best leaf (flagged if candidates inside the sphere were left) or, without one,
// the starting bound's leaf or, without that either, the SIC point (psd_sic); every
// vector the thread takes after that gets the SIC point, flagged. Tasks stop the same
// way; a queued vector with a stopped or skipped task is flagged and gets the best leaf
// its tasks found (the starting bound's where they found none).
//
// Node budget (psd_node_budget; L.node_budget, 0: none): a first-pass search stops at
// the budget as the CPU's does (the same count, the same flagged best leaf). A spread
// search counts its tasks' path metrics together in its se_vector (each task adds its
// progress every k_se_bound_refresh steps); a task that sees the total reach the budget
// stops as at the deadline, and tasks that start after that are skipped (the vector
// flagged). The total is that of the parallel search, so where the budget ends a spread
// search the best leaf may differ from the CPU's; both are flagged.

#include "cuda/common/batch_detector.h"
#include "cuda/common/dependent_launch.cuh"
#include "cuda/common/device_math.cuh"
#include "cuda/psd/psd_cuda.h"
#include "cuda/psd/psd_device.cuh"
#include "detect/backend.h"
#include "detect/psd/psd_common.h"
#include "detect/psd/psd_params.h"
#include "detect/psd/psd_se.h"
#include "util/tuning.h"
#include <algorithm>
#include <climits>
#include <cooperative_groups.h>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr int k_se_threads = 64; //!< threads per block of every kernel
//! Deadline: path metrics of a thread between two timer reads.
constexpr uint32_t k_se_check_evals = 512;
// Nodes before a search spreads: psd_se_split_nodes and the drain rule's
// psd_se_drain_nodes (psd_se.h, shared with the tests).
//! Expanded nodes between two looks at whether a launch's items are all handed out.
constexpr uint32_t k_se_drain_look = 8;
//! Tasks a wave holds per stream: at least this many, and k_se_tasks_per_vector |Omega|
//! per vector of the largest chunk. A launch that leaves most of the GPU idle (one 20 MHz
//! slot) spreads nearly every vector, each into the children left inside its radius, a
//! few a row. When full, a search runs to its end in its thread instead (slow, never
//! wrong).
constexpr size_t k_se_min_task_capacity = size_t(1) << 16;
constexpr size_t k_se_tasks_per_vector = 4;
//! Steps between two reads of the vector's shared bound.
constexpr uint32_t k_se_bound_refresh = 16;

//! What the kernels need to know of the system, computed once on the host.
struct psd_se_layout {
    int nt, nrx, N, P, q, log2P;
    int waves;       //!< wave launches (a task's tasks are at least one row deeper)
    double inv_scale; //!< 1 / the constellation's scale (the rows' weights)
    uint32_t node_budget; //!< path metrics per vector; 0: none
    int start_rows;       //!< psd_se_start_bound's rows (psd_start_rows)
    int refill;           //!< se_refill_gate's lanes (psd_se_refill_lanes; 1: no gate)
    double value[8];  //!< PAM levels, increasing
    int label[8];    //!< PAM label of value[j]
};

//! A queued vector's shared state (indexed by the chunk's vector).
struct se_vector {
    unsigned long long bound; //!< least leaf metric found (double bits, metrics >= 0)
    unsigned long long key;   //!< order key of the leaf kept
    double metric;            //!< its metric
    uint32_t expanded, evaluated, truncated;
    unsigned int lock;           //!< guards key, metric, best
    uint8_t best[k_psd_max_n]; //!< the leaf kept
};

//! A subtree search: rows N-1 .. N-depth fixed to prefix (row N-1 first).
struct se_task {
    int v, depth;
    double metric;          //!< the prefix's path metric
    unsigned long long key; //!< the prefix's ranks (psd_se_leaf_key's packing)
    uint8_t prefix[k_psd_max_n];
};

//! Device scratch of one stream's chunk.
struct se_work {
    se_vector* vec;      //!< [n_vec of the chunk]
    int* queued;         //!< [n_vec]: vectors that left the first pass
    se_task* tasks[2];   //!< wave w reads tasks[w & 1], writes tasks[(w + 1) & 1]
    int* items;          //!< the first pass's vectors (count at w_items); null: all
    unsigned int* words; //!< counters, see se_word
    unsigned int capacity; //!< entries of each task list
};

//! Counter words: the first pass's vector counter, the queue's length, the count of
//! se_work::items, then per wave its task count and its task counter.
enum se_word : int { w_first = 0, w_queued = 1, w_items = 2, w_wave0 = 3 };
MIMODET_HD inline int se_wave_count(int w) { return w_wave0 + 2 * w; }
MIMODET_HD inline int se_wave_next(int w) { return w_wave0 + 2 * w + 1; }
constexpr int k_se_max_waves = psd_se_max_n;
constexpr int k_se_words = w_wave0 + 2 * (k_se_max_waves + 1);

//! Points pb at z and matrix m's R and row weights.
__device__ inline void se_point_at(psd_se_problem& pb,
                                   const psd_se_layout& L,
                                   const double* R,
                                   const double* w,
                                   const double* z,
                                   size_t m)
{
    const int N = L.N;
    pb.z = z;
    pb.w = w + m * N;
    pb.R = R + m * N * N;
}

//! z = Q^T y of vector v (matrix m) into z[0..N): psd_rotate's order, z_k = sum_i (q_ki
//! Re y_i + q_k,nrx+i Im y_i). Loops to compile-time bounds with guards: every load is
//! issued before the first is used, so this costs about one memory latency, not one per
//! element.
template <int NMAX>
__device__ inline void se_rotate(
    const psd_se_layout& L, const double* Qt, const float2* y, size_t m, int v, double* z)
{
    constexpr int MR = k_max_ant; // receive antennas at most
    const int N = L.N, nrx = L.nrx, M = 2 * nrx;
    const float2* yv = y + static_cast<size_t>(v) * nrx;
    double yr[MR], yi[MR];
    MIMODET_UNROLL
    for (int i = 0; i < MR; ++i) {
        const float2 e = i < nrx ? yv[i] : make_float2(0.f, 0.f);
        yr[i] = e.x;
        yi[i] = e.y;
    }
    const double* qt = Qt + m * N * M;
    MIMODET_UNROLL
    for (int k = 0; k < NMAX; ++k) {
        if (k >= N)
            break;
        double acc = 0.0;
        MIMODET_UNROLL
        for (int i = 0; i < MR; ++i)
            if (i < nrx)
                acc = rn_add(acc,
                             rn_add(rn_mul(qt[k * M + i], yr[i]), rn_mul(qt[k * M + nrx + i], yi[i])));
        z[k] = acc;
    }
}

/*!
 * Points pb at vector v's problem: z (computed here) in the thread's slice of shared
 * memory (s_z: NMAX doubles a thread), matrix m's R and row weights in global memory
 * (read-only, through L1, where the 7 vectors of a matrix share them). A copy of R per
 * thread in shared memory measured slower on an H100 (4x4 64QAM 10 dB 364 against 432
 * Mbit/s, 16QAM 20 dB 2058 against 2202): it took L1's space and bounded the blocks per
 * SM, whereas the search's reads of R, one row per node at addresses known before its
 * arithmetic, hit L1.
 */
template <int NMAX>
__device__ inline void se_load(psd_se_problem& pb,
                               const psd_se_layout& L,
                               const double* R,
                               const double* Qt,
                               const double* w,
                               const float2* y,
                               size_t m,
                               int v,
                               double* s_z)
{
    double* z = s_z + threadIdx.x * NMAX;
    se_rotate<NMAX>(L, Qt, y, m, v, z);
    se_point_at(pb, L, R, w, z, m);
}

/*!
 * se_load with vector v's z read from z_all (psd_se_z_kernel's, N a vector) into the
 * thread's slice of shared memory: a first-pass thread that takes a new vector then
 * issues N loads instead of the rotation's 4 N nrx operations, while the other lanes of
 * its warp wait for it.
 */
template <int NMAX>
__device__ inline void se_load_stored(psd_se_problem& pb,
                                      const psd_se_layout& L,
                                      const double* R,
                                      const double* w,
                                      const double* z_all,
                                      size_t m,
                                      int v,
                                      double* s_z)
{
    double* z = s_z + threadIdx.x * NMAX;
    const double* from = z_all + static_cast<size_t>(v) * L.N;
    MIMODET_UNROLL
    for (int k = 0; k < NMAX; ++k)
        if (k < L.N)
            z[k] = from[k];
    se_point_at(pb, L, R, w, z, m);
}

//! Vector v's z (se_rotate's, N values) into z_all, N a vector.
template <int NMAX>
__device__ inline void
se_store_rotated(int N, int v, const double (&z)[NMAX], double* z_all)
{
    double* to = z_all + static_cast<size_t>(v) * N;
    MIMODET_UNROLL
    for (int k = 0; k < NMAX; ++k)
        if (k < N)
            to[k] = z[k];
}

//! First in every kernel of this file, which may be launched as a dependent of the
//! kernel before it on the stream (d_dependent): waits for that kernel's writes. Early:
//! then lets the next kernel's blocks be dispatched, which only kernels whose threads
//! take about as long do. The next kernel's blocks would take the slots of the first
//! pass's or a wave's ended blocks and wait beside its longest searches on the same SMs,
//! which ran 4x4 64QAM 0.96x on an H100; there they are dispatched as its blocks end.
template <bool Early = true>
__device__ __forceinline__ void se_kernel_entry()
{
    dependent_launch_wait();
    if constexpr (Early)
        dependent_launch_allow();
}

//! Every vector's z (se_rotate) into z_all, N a vector: one thread per vector.
template <int NMAX>
__global__ void __launch_bounds__(k_se_threads)
    psd_se_z_kernel(const float2* __restrict__ y,
                    const double* __restrict__ Qt,
                    const __grid_constant__ psd_se_layout L,
                    int n_vec,
                    const __grid_constant__ segment_map map,
                    double* __restrict__ z_all)
{
    se_kernel_entry();
    const int v =
        static_cast<int>(blockIdx.x) * k_se_threads + static_cast<int>(threadIdx.x);
    if (v >= n_vec)
        return;
    double z[NMAX];
    se_rotate<NMAX>(L, Qt, y, static_cast<size_t>(map.matrix_of(v)), v, z);
    se_store_rotated<NMAX>(L.N, v, z, z_all);
}

/*!
 * Whether a task reads its vector's z, which psd_se_z_kernel stored or, without it, the
 * first pass when the search spread (se_store_z), instead of computing it again
 * (se_load): with 4 or more transmit antennas (NMAX >= 8), where z costs 64 or more
 * multiply-adds; reading made 4x4 64QAM at 5, 10 and 15 dB 1.36x, 1.23x and 1.12x faster
 * and 16QAM at 5 dB 1.16x on an H200, where searches spread into many short tasks. With
 * 2 antennas (16 or 32) tasks compute it.
 */
template <int NMAX>
constexpr bool se_tasks_read_z = NMAX >= 8;

//! Points pb at a task's problem: its vector's stored z, matrix m's R and row
//! weights, in global memory.
__device__ inline void se_load_task(psd_se_problem& pb,
                                    const psd_se_layout& L,
                                    const double* R,
                                    const double* w,
                                    const double* z,
                                    size_t m,
                                    int v)
{
    se_point_at(pb, L, R, w, z + static_cast<size_t>(v) * L.N, m);
}

//! Stores a spreading search's z (pb's) for its tasks.
__device__ inline void se_store_z(const psd_se_problem& pb, int v, double* z)
{
    double* to = z + static_cast<size_t>(v) * pb.N;
    for (int k = 0; k < pb.N; ++k)
        to[k] = pb.zk(k);
}

//! The thread's z of pb as a local array (psd_sic's input). Reading pb.z in place
//! instead made the first pass take 200 registers instead of 168 (5 blocks per SM
//! instead of 6).
template <int NMAX>
__device__ inline void se_z_dense(const psd_se_problem& pb, double* z)
{
    for (int k = 0; k < pb.N; ++k)
        z[k] = pb.zk(k);
}

//! Copies a state's best leaf (constant indices: the state stays in registers).
template <int NMAX>
__device__ inline void se_copy(const uint8_t (&from)[NMAX], uint8_t* to, int N)
{
    MIMODET_UNROLL
    for (int j = 0; j < NMAX; ++j)
        if (j < N)
            to[j] = from[j];
}

//! Whether every item of the launch has a thread (se_next_item's counter past n_items).
__device__ inline bool se_drained(const unsigned int* counter, int n_items)
{
    const unsigned int taken = *reinterpret_cast<const volatile unsigned int*>(counter);
    return static_cast<long long>(gridDim.x) * blockDim.x + taken >=
           static_cast<long long>(n_items);
}

/*!
 * A running search past `next` expanded nodes: whether it hands its rest on now. At
 * limit it does; before (a look at the launch's items, see se_first_look) it does once
 * every item has its thread, else `next` moves k_se_drain_look nodes on, so the counter
 * is read once every k_se_drain_look nodes. A search below `next` costs one comparison.
 */
__device__ inline bool se_spread_now(uint32_t expanded,
                                     uint32_t limit,
                                     uint32_t& next,
                                     const unsigned int* counter,
                                     int n_items)
{
    if (expanded >= limit || se_drained(counter, n_items))
        return true;
    next = expanded + k_se_drain_look < limit ? expanded + k_se_drain_look : limit;
    return false;
}

//! The first node count at which a search looks at spreading.
__device__ inline uint32_t se_first_look(uint32_t limit, uint32_t drain)
{
    return drain < limit ? drain : limit;
}

constexpr unsigned k_se_warp = 0xffffffffu; //!< every lane of a warp

//! The lanes of a warp that take their next item now (0: none), and whether the warp is
//! done (no lane searching, none waiting for an item).
struct se_refill {
    unsigned takers;
    bool done;
};

/*!
 * Lanes that wait for their next item (vector or task) take one together, once `lanes`
 * of them wait or no lane of the warp searches: a lane that takes an item loads its
 * problem and starts its search while the other lanes of its warp wait
 * (psd_se_refill_lanes). Every lane of the warp calls it once per loop iteration of a
 * Gated kernel (the kernels without the gate let each lane take its item alone).
 */
__device__ inline se_refill se_refill_gate(bool waiting, bool searching, int lanes)
{
    const unsigned w = __ballot_sync(k_se_warp, waiting);
    const unsigned s = __ballot_sync(k_se_warp, searching);
    se_refill r;
    r.done = w == 0 && s == 0;
    r.takers = w != 0 && (s == 0 || __popc(w) >= lanes) ? w : 0u;
    return r;
}

//! A lane's next item: first the thread's own (the grid covers the first items without
//! an atomic), then from the shared counter; with takers (se_refill_gate's, every lane of
//! them calls it) one atomic for them together.
__device__ inline int se_next_item(bool& first, unsigned takers, unsigned int* counter)
{
    if (first) {
        first = false;
        return static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    }
    if (takers == 0u)
        return static_cast<int>(gridDim.x * blockDim.x + atomicAdd(counter, 1u));
    const unsigned lane = threadIdx.x & 31u;
    const int leader = __ffs(static_cast<int>(takers)) - 1;
    unsigned base = 0;
    if (static_cast<int>(lane) == leader)
        base = atomicAdd(counter, static_cast<unsigned>(__popc(takers)));
    base = __shfl_sync(takers, base, leader);
    return static_cast<int>(gridDim.x * blockDim.x + base +
                            static_cast<unsigned>(__popc(takers & ((1u << lane) - 1u))));
}

//! Whether this lane is one of takers.
__device__ inline bool se_takes(unsigned takers)
{
    return (takers >> (threadIdx.x & 31u)) & 1u;
}

/*!
 * Offers a task's best leaf (metric, order key, best) to its vector: kept if it comes
 * before the vector's leaf in (metric, key) order. A leaf above the vector's bound cannot
 * win and skips the lock.
 */
__device__ inline void
se_offer(se_vector& sv, double metric, unsigned long long key, const uint8_t* best, int N)
{
    if (metric > __longlong_as_double(static_cast<long long>(
                     *reinterpret_cast<volatile unsigned long long*>(&sv.bound))))
        return;
    while (atomicCAS(&sv.lock, 0u, 1u) != 0u) {
    }
    __threadfence();
    volatile se_vector& vv = sv;
    if (metric < vv.metric || (metric == vv.metric && key < vv.key)) {
        vv.metric = metric;
        vv.key = key;
        for (int k = 0; k < N; ++k)
            vv.best[k] = best[k];
    }
    __threadfence();
    atomicExch(&sv.lock, 0u);
}

__device__ inline unsigned long long se_bits(double m)
{
    return static_cast<unsigned long long>(__double_as_longlong(m));
}
__device__ inline double se_double(unsigned long long b)
{
    return __longlong_as_double(static_cast<long long>(b));
}

//! Deadline state of one thread.
struct se_deadline {
    unsigned long long at = 0; //!< 0: none
    bool expired = false;
    uint64_t next_check = 0; //!< read the timer when the thread's metrics reach this
    uint64_t work = 0;       //!< metrics of the thread's finished searches

    __device__ bool out_of_time(uint32_t evaluated)
    {
        if (at == 0)
            return false;
        if (expired)
            return true;
        const uint64_t w = work + evaluated;
        if (w < next_check)
            return false;
        next_check = w + k_se_check_evals;
        expired = psd_globaltimer() >= at;
        return expired;
    }
};

__device__ inline void se_start_deadline(se_deadline& D,
                                         unsigned long long budget_ns,
                                         unsigned long long* call_start,
                                         unsigned long long& s_start)
{
    if (budget_ns != 0 && threadIdx.x == 0)
        s_start = psd_call_start(call_start);
    __syncthreads();
    if (budget_ns != 0)
        D.at = s_start + budget_ns;
}

__device__ inline void se_write(const psd_se_layout& L,
                                const uint8_t* best,
                                const uint8_t* perm,
                                uint8_t* out,
                                vector_stats* stats,
                                uint32_t expanded,
                                uint32_t evaluated,
                                uint32_t truncated)
{
    psd_bits_of(L.N, L.nt, L.q, L.label, best, perm, out);
    if (stats) {
        vector_stats st;
        st.expanded = expanded;
        st.evaluated = evaluated;
        st.truncated = truncated;
        *stats = st;
    }
}

/*!
 * A first-pass vector's decision: written (se_write), or, deferred, kept in its se_vector
 * as a queued vector's is, for psd_se_write_kernel to write with the queued ones: the
 * label mapping and the bit stores then run once for all vectors in a kernel of their
 * own instead of in the lane that ended a search while the other lanes of its warp wait.
 */
template <int NMAX>
__device__ inline void se_first_done(const psd_se_layout& L,
                                     const se_work& W,
                                     bool deferred,
                                     int v,
                                     size_t m,
                                     const uint8_t (&best)[NMAX],
                                     const uint8_t* perm,
                                     uint8_t* bits,
                                     vector_stats* stats,
                                     uint32_t expanded,
                                     uint32_t evaluated,
                                     uint32_t truncated)
{
    if (deferred) {
        se_vector& sv = W.vec[v];
        se_copy<NMAX>(best, sv.best, L.N);
        sv.expanded = expanded;
        sv.evaluated = evaluated;
        sv.truncated = truncated;
        return;
    }
    const int nb = L.nt * L.q;
    se_write(L,
             best,
             perm + m * k_psd_max_n,
             bits + static_cast<size_t>(v) * nb,
             stats ? stats + v : nullptr,
             expanded,
             evaluated,
             truncated);
}

/*!
 * The rest of a running search (st.k >= 1) as tasks: at each row j from st.k to
 * st.top-1, the children of the current path's node not yet taken, in the order the
 * search would take them, while inside its radius and bound (the first outside ends the
 * row, as in psd_se_step). Each is a task of vector v: rows j..N-1 fixed, order key
 * top_key (the ranks of rows top..N-1) with the path's ranks and its own. Together they
 * are exactly what the search has left, so nothing is searched twice. Counts them when
 * out is null; otherwise writes them at out[0..). Rows are unrolled so that the state
 * stays in registers.
 */
template <int NMAX, class Rows>
__device__ int se_rest(const psd_se_problem& pb,
                       const psd_se_state<NMAX, Rows>& st,
                       int log2P,
                       int v,
                       unsigned long long top_key,
                       se_task* out)
{
    const int N = pb.N;
    int n = 0;
    MIMODET_UNROLL
    for (int j = 1; j < NMAX; ++j) {
        if (j < st.k || j >= st.top)
            continue;
        int8_t lo = st.lo[j], hi = st.hi[j];
        int idx = 0;
        double m = 0.0;
        while (psd_se_take(pb, st.pos[j], st.b[j], st.pm[j], pb.r(j, j), lo, hi, idx, m) &&
               psd_se_inside(st, m)) {
            if (out) {
                se_task& t = out[n];
                t.v = v;
                t.depth = N - j;
                t.metric = m;
                unsigned long long key = top_key;
                MIMODET_UNROLL
                for (int i = 1; i < NMAX; ++i)
                    if (i > j && i < st.top)
                        key |= static_cast<unsigned long long>(st.hi[i] - st.lo[i] - 2)
                               << (log2P * i);
                key |= static_cast<unsigned long long>(hi - lo - 2) << (log2P * j);
                t.key = key;
                MIMODET_UNROLL
                for (int i = 1; i < NMAX; ++i)
                    if (i > j && i < N)
                        t.prefix[N - 1 - i] = st.sym[i];
                t.prefix[N - 1 - j] = static_cast<uint8_t>(idx);
            }
            ++n;
        }
    }
    return n;
}

/*!
 * Reserves n entries of a task list of capacity entries: their first index, or -1 when
 * they do not fit. One atomicAdd, whatever the contention (many searches spread at once
 * when a launch runs out of items), so the count may pass capacity: readers take
 * se_wave_tasks. A reservation that does not fit marks the entries of its range inside
 * the list empty (v = -1), so that no reader takes one that nobody writes.
 */
__device__ inline int
se_reserve(unsigned int* count, int n, unsigned int capacity, se_task* list)
{
    const unsigned int at = atomicAdd(count, static_cast<unsigned int>(n));
    if (at <= capacity && static_cast<unsigned int>(n) <= capacity - at)
        return static_cast<int>(at);
    for (unsigned int i = at; i < capacity; ++i)
        list[i].v = -1;
    return -1;
}

//! Tasks of a wave: the entries of its list, whose count se_reserve advanced (final once
//! the wave before has ended). past_l1: read past L1, which a launch of several waves
//! may hold.
template <bool past_l1>
__device__ inline int se_wave_tasks(const se_work& W, int wave)
{
    const unsigned int* count = W.words + se_wave_count(wave);
    const unsigned int n =
        past_l1 ? *reinterpret_cast<const volatile unsigned int*>(count) : *count;
    return static_cast<int>(n < W.capacity ? n : W.capacity);
}

//! Dynamic shared memory of a first-pass or wave launch whose search rows are in shared
//! memory (se_rows_shared; se_kernels::rows_smem bytes).
extern __shared__ __align__(16) unsigned char se_dynamic_smem[];

/*!
 * Row k of one of a state's row arrays in the block's shared memory, the thread's column
 * (row k at k x k_se_threads elements, so that the lanes of a warp at different rows
 * read different banks), Offset bytes into se_dynamic_smem. The address comes from the
 * thread index and constants, so the accesses are shared-memory ones: with a pointer per
 * array in the state (a generic address), the state sat in local memory and every access
 * read its pointer there first.
 */
template <class T, int Offset>
struct se_smem_rows {
    __device__ T& operator[](int k) const
    {
        return reinterpret_cast<T*>(
            se_dynamic_smem + Offset)[k * k_se_threads + static_cast<int>(threadIdx.x)];
    }
};

//! psd_se_rows' arrays in shared memory (se_smem_rows), with each row's PAM level (val),
//! so that an interference term reads one value, not two.
template <int NMAX>
struct se_rows_shared {
    static constexpr int d = NMAX * k_se_threads * static_cast<int>(sizeof(double));
    static constexpr int c = NMAX * k_se_threads; // bytes of an 8-bit array
    static constexpr size_t bytes = 4 * d + 3 * c;
    se_smem_rows<double, 0> pm;
    se_smem_rows<double, d> b;
    se_smem_rows<double, 2 * d> pos;
    se_smem_rows<double, 3 * d> val;
    se_smem_rows<int8_t, 4 * d> lo;
    se_smem_rows<int8_t, 4 * d + c> hi;
    se_smem_rows<uint8_t, 4 * d + 2 * c> sym;
};

/*!
 * A search state whose rows sit in registers (constant row indices: the unrolled step,
 * one code path per row) or, SharedRows, in the block's shared memory (a run-time row:
 * one code path, whichever row each lane is at; launched with se_rows_shared's bytes of
 * dynamic shared memory).
 */
template <int NMAX, bool SharedRows>
using se_state =
    psd_se_state<NMAX,
                 std::conditional_t<SharedRows, se_rows_shared<NMAX>, psd_se_rows<NMAX>>>;

/*!
 * Blocks per SM psd_se_first_kernel asks the compiler to fit with the rows in shared
 * memory, on an H100 (docs/PERFORMANCE.md): 8 at 4x4 (128 registers and up to 72 bytes
 * spilled, instead of 130: 7 blocks), 1.06-1.18x at 4x4 16QAM and 64QAM; 10 at 2x2 (96
 * registers, about 180 bytes spilled, instead of 133), where 8 ran 2x2 64QAM at 5 dB
 * 0.99x.
 */
template <int NMAX, bool SharedRows>
constexpr int k_se_first_blocks = !SharedRows ? 1
                                  : NMAX == 8 ? 8
                                  : NMAX == 4 ? 10
                                              : 1;

//! Gated: the lanes of a warp take their vectors together (se_refill_gate, L.refill).
template <int NMAX, bool SharedRows, bool Gated>
__global__ void __launch_bounds__(k_se_threads, k_se_first_blocks<NMAX, SharedRows>)
    psd_se_first_kernel(const float2* __restrict__ y,
                        const double* __restrict__ R,
                        const double* __restrict__ Qt,
                        const double* __restrict__ w,
                        const uint8_t* __restrict__ perm,
                        const __grid_constant__ psd_se_layout L,
                        int n_vec,
                        const __grid_constant__ segment_map map,
                        se_work W,
                        double* __restrict__ z_spread,
                        bool z_stored,
                        bool deferred,
                        uint8_t* __restrict__ bits,
                        vector_stats* __restrict__ stats,
                        uint32_t first_nodes,
                        uint32_t drain_nodes,
                        uint32_t drain_sparse_nodes,
                        unsigned long long budget_ns,
                        unsigned long long* __restrict__ call_start)
{
    se_kernel_entry<false>();
    __shared__ double s_value[8];
    __shared__ unsigned long long s_start;
    if (threadIdx.x < L.P)
        s_value[threadIdx.x] = L.value[threadIdx.x];
    se_deadline D;
    se_start_deadline(D, budget_ns, call_start, s_start);

    __shared__ double s_z[NMAX * k_se_threads];
    const int N = L.N;
    se_state<NMAX, SharedRows> st;
    psd_se_problem pb{ nullptr, nullptr, s_value, nullptr, N, L.P };
    uint8_t out[NMAX]; // a decision handed to psd_bits_of
    int v = -1;
    size_t m = 0;
    uint32_t next = 0; //!< expanded nodes at which the search next looks at spreading
    unsigned long long best_key = 0;
    bool first = true;
    // With a list (the vectors psd_se_enum_kernel or psd_se_first_leaf_kernel left), its
    // entries are the items.
    const int n_items = W.items ? static_cast<int>(W.words[w_items]) : n_vec;
    // A list shorter than the grid holds threads (the first-leaf kernel's) leaves the
    // rest of the grid idle from the start, as a launch of fewer vectors does.
    if (W.items && drain_nodes != UINT32_MAX &&
        static_cast<long long>(n_items) < static_cast<long long>(gridDim.x) * blockDim.x)
        drain_nodes = drain_sparse_nodes;
    // After the enumeration, the metrics it computed (the first-leaf kernel's items
    // search from the start).
    const uint32_t enumerated = W.items && psd_se_enumerates(N, L.P, L.start_rows)
                                    ? psd_se_enumerated_evaluated(N, L.P)
                                    : 0u;
    bool finished = false;                                  // no item left for this lane
    for (;;) {
        unsigned takers = 0;
        if constexpr (Gated) {
            const se_refill r = se_refill_gate(v < 0 && !finished, v >= 0, L.refill);
            if (r.done)
                break;
            takers = r.takers;
        }
        if (v < 0) {
            if constexpr (Gated)
                if (!se_takes(takers))
                    continue;
            v = se_next_item(first, takers, W.words + w_first);
            if (v >= n_items) {
                if constexpr (!Gated)
                    break;
                finished = true;
                v = -1;
                continue;
            }
            if (W.items)
                v = W.items[v];
            m = static_cast<size_t>(map.matrix_of(v));
            if (z_stored)
                se_load_stored<NMAX>(pb, L, R, w, z_spread, m, v, s_z);
            else
                se_load<NMAX>(pb, L, R, Qt, w, y, m, v, s_z);
            next = se_first_look(first_nodes, drain_nodes);
            if (D.out_of_time(0)) {
                // Started after the deadline: the SIC point, no search.
                double z[NMAX];
                se_z_dense<NMAX>(pb, z);
                psd_sic(R + m * N * N, z, s_value, N, L.P, out);
                se_first_done<NMAX>(L,
                                    W,
                                    deferred,
                                    v,
                                    m,
                                    out,
                                    perm,
                                    bits,
                                    stats,
                                    0,
                                    static_cast<uint32_t>(N),
                                    1);
                v = -1;
                continue;
            }
            // The starting bound's leaf waits in st.best: it is the decision of a search
            // spread before its first leaf whose tasks are all stopped.
            uint32_t start_evaluated = enumerated;
            const double bound = psd_se_start_bound<NMAX, true>(
                pb, L.start_rows, st.best, start_evaluated);
            psd_se_begin<NMAX, !SharedRows>(pb, st, N, nullptr, 0.0, bound);
            st.evaluated += start_evaluated;
            continue;
        }
        const bool over = L.node_budget != 0 && st.evaluated >= L.node_budget;
        if (st.k > 0 && (over || D.out_of_time(st.evaluated))) {
            uint32_t truncated = 1, evaluated = st.evaluated;
            if (st.d2 < psd_se_inf() || st.bound < psd_se_inf()) {
                truncated = psd_se_work_left(pb, st) ? 1 : 0;
                se_copy<NMAX>(st.best, out, N);
            } else {
                double z[NMAX];
                se_z_dense<NMAX>(pb, z);
                psd_sic(R + m * N * N, z, s_value, N, L.P, out);
                evaluated += static_cast<uint32_t>(N);
            }
            se_first_done<NMAX>(L,
                                W,
                                deferred,
                                v,
                                m,
                                out,
                                perm,
                                bits,
                                stats,
                                st.expanded,
                                evaluated,
                                truncated);
            D.work += st.evaluated;
            v = -1;
            continue;
        }
        const double before = st.d2;
        const bool running = psd_se_step<NMAX, !SharedRows>(pb, st);
        if (st.d2 < before)
            best_key = psd_se_leaf_key(st, L.log2P, 0);
        if (!running) {
            se_first_done<NMAX>(L,
                                W,
                                deferred,
                                v,
                                m,
                                st.best,
                                perm,
                                bits,
                                stats,
                                st.expanded,
                                st.evaluated,
                                0);
            D.work += st.evaluated;
            v = -1;
            continue;
        }
        // A search spreads once it has a leaf or a starting bound to prune its tasks.
        const double radius = st.d2 < st.bound ? st.d2 : st.bound;
        if (st.expanded < next || st.k == 0 || !(radius < psd_se_inf()) ||
            !se_spread_now(st.expanded, first_nodes, next, W.words + w_first, n_items))
            continue;
        // Long search: its rest becomes tasks bounded by its best leaf (or the bound).
        const int n = se_rest<NMAX>(pb, st, L.log2P, v, 0ull, nullptr);
        const int at =
            n == 0 ? 0
                   : se_reserve(W.words + se_wave_count(0), n, W.capacity, W.tasks[0]);
        if (at < 0) {
            next = UINT32_MAX; // no room: this thread ends the search
            continue;
        }
        if (n == 0) {
            // Nothing inside the radius is left: the search is done.
            se_first_done<NMAX>(L,
                                W,
                                deferred,
                                v,
                                m,
                                st.best,
                                perm,
                                bits,
                                stats,
                                st.expanded,
                                st.evaluated,
                                0);
            D.work += st.evaluated;
            v = -1;
            continue;
        }
        se_rest<NMAX>(pb, st, L.log2P, v, 0ull, W.tasks[0] + at);
        if constexpr (se_tasks_read_z<NMAX>)
            if (!z_stored) // else z_spread holds it already
                se_store_z(pb, v, z_spread);
        se_vector& sv = W.vec[v];
        // Without a leaf yet (d2 = +inf), any leaf a task offers replaces st.best.
        sv.metric = st.d2;
        sv.key = st.d2 < psd_se_inf() ? best_key : ~0ull;
        sv.lock = 0;
        se_copy<NMAX>(st.best, sv.best, N);
        sv.bound = se_bits(radius);
        sv.expanded = st.expanded;
        sv.evaluated = st.evaluated;
        sv.truncated = 0;
        W.queued[atomicAdd(W.words + w_queued, 1u)] = v;
        D.work += st.evaluated;
        v = -1;
    }
}

/*!
 * Blocks per SM psd_se_enum_kernel asks the compiler to fit: 8 at 4x4 (128 registers, a
 * few bytes spilled, instead of 168), 1.06x faster at QPSK on an H100
 * (docs/PERFORMANCE.md); the smaller systems need fewer registers anyway.
 */
template <int N, int P>
constexpr int k_se_enum_blocks = N == 8 ? 8 : 1;

/*!
 * Vectors of a tree of at most 256 leaves with a starting bound over every row
 * (psd_se_enumerates): each thread enumerates its vectors' leaves (psd_se_enumerate) and
 * writes the decision where one leaf stands out; the others (near-ties) go to
 * W.items, for the first pass, which searches them as the CPU does. Past the deadline, a
 * vector gets the SIC point, flagged, as in the first pass.
 */
template <int N, int P>
__global__ void __launch_bounds__(k_se_threads, k_se_enum_blocks<N, P>)
    psd_se_enum_kernel(const float2* __restrict__ y,
                       const double* __restrict__ R,
                       const double* __restrict__ Qt,
                       const double* __restrict__ w,
                       const uint8_t* __restrict__ perm,
                       const __grid_constant__ psd_se_layout L,
                       int n_vec,
                       const __grid_constant__ segment_map map,
                       se_work W,
                       uint8_t* __restrict__ bits,
                       vector_stats* __restrict__ stats,
                       unsigned long long budget_ns,
                       unsigned long long* __restrict__ call_start)
{
    se_kernel_entry();
    __shared__ double s_value[P];
    __shared__ unsigned long long s_start;
    if (threadIdx.x < P)
        s_value[threadIdx.x] = L.value[threadIdx.x];
    se_deadline D;
    se_start_deadline(D, budget_ns, call_start, s_start);
    __shared__ double s_z[N * k_se_threads];
    const int nb = L.nt * L.q;
    psd_se_problem pb{ nullptr, nullptr, s_value, nullptr, N, P };
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n_vec;
         v += gridDim.x * blockDim.x) {
        const size_t m = static_cast<size_t>(map.matrix_of(v));
        se_load<N>(pb, L, R, Qt, w, y, m, v, s_z);
        uint8_t out[N];
        if (D.out_of_time(0)) {
            double z[N];
            se_z_dense<N>(pb, z);
            psd_sic(R + m * N * N, z, s_value, N, P, out);
            se_write(L,
                     out,
                     perm + m * k_psd_max_n,
                     bits + static_cast<size_t>(v) * nb,
                     stats ? stats + v : nullptr,
                     0,
                     static_cast<uint32_t>(N),
                     1);
            continue;
        }
        D.work += psd_se_enumerated_evaluated(N, P);
        if (psd_se_enumerate<N, P>(pb, out))
            se_write(L,
                     out,
                     perm + m * k_psd_max_n,
                     bits + static_cast<size_t>(v) * nb,
                     stats ? stats + v : nullptr,
                     psd_se_enumerated_expanded(N, P),
                     psd_se_enumerated_evaluated(N, P),
                     0);
        else
            W.items[atomicAdd(W.words + w_items, 1u)] = v;
    }
}

/*!
 * Every vector's z (se_rotate; into z_all, where given, for the first pass and the tasks)
 * and the decision of each vector whose search ends at its first leaf
 * (psd_se_first_leaf_decides), left as the first pass leaves its own (se_first_done);
 * the others go to W.items, which the first pass searches from the start. One thread per
 * vector, every lane on the same code. For searches that start without a bound (the
 * steps it replaces are those below an infinite one) and whose node budget, if any, is
 * above N P (the search looks at it before those steps end). Past the deadline, a
 * vector gets the SIC point, flagged, as in the first pass.
 */
template <int NMAX>
__global__ void __launch_bounds__(k_se_threads)
    psd_se_first_leaf_kernel(const float2* __restrict__ y,
                             const double* __restrict__ R,
                             const double* __restrict__ Qt,
                             const double* __restrict__ w,
                             const uint8_t* __restrict__ perm,
                             const __grid_constant__ psd_se_layout L,
                             int n_vec,
                             const __grid_constant__ segment_map map,
                             se_work W,
                             double* __restrict__ z_all,
                             bool deferred,
                             uint8_t* __restrict__ bits,
                             vector_stats* __restrict__ stats,
                             unsigned long long budget_ns,
                             unsigned long long* __restrict__ call_start)
{
    se_kernel_entry();
    __shared__ double s_value[8];
    __shared__ unsigned long long s_start;
    if (threadIdx.x < L.P)
        s_value[threadIdx.x] = L.value[threadIdx.x];
    se_deadline D;
    se_start_deadline(D, budget_ns, call_start, s_start);
    const int v =
        static_cast<int>(blockIdx.x) * k_se_threads + static_cast<int>(threadIdx.x);
    const unsigned lanes = __ballot_sync(k_se_warp, v < n_vec);
    if (v >= n_vec)
        return;
    const int N = L.N;
    const size_t m = static_cast<size_t>(map.matrix_of(v));
    double z[NMAX];
    se_rotate<NMAX>(L, Qt, y, m, v, z);
    if (z_all)
        se_store_rotated<NMAX>(N, v, z, z_all);
    const psd_se_problem pb{ R + m * N * N, z, s_value, w + m * N, N, L.P };
    uint8_t best[NMAX];
    const bool late = D.out_of_time(0);
    if (late)
        psd_sic(R + m * N * N, z, s_value, N, L.P, best);
    const bool decided = late || psd_se_first_leaf_decides<NMAX>(pb, best);
    if (decided)
        se_first_done<NMAX>(L,
                            W,
                            deferred,
                            v,
                            m,
                            best,
                            perm,
                            bits,
                            stats,
                            late ? 0u : static_cast<uint32_t>(N),
                            static_cast<uint32_t>(late ? N : N * L.P),
                            late ? 1u : 0u);
    // The rest to W.items, one atomic per warp.
    const unsigned rest = __ballot_sync(lanes, !decided);
    if (rest == 0u)
        return;
    const unsigned lane = threadIdx.x & 31u;
    const int leader = __ffs(static_cast<int>(rest)) - 1;
    unsigned base = 0;
    if (static_cast<int>(lane) == leader)
        base = atomicAdd(W.words + w_items, static_cast<unsigned>(__popc(rest)));
    base = __shfl_sync(lanes, base, leader);
    if (!decided)
        W.items[base + static_cast<unsigned>(__popc(rest & ((1u << lane) - 1u)))] = v;
}

/*!
 * One wave's tasks (n_tasks of them, wave >= 0), one per thread at a time, the thread
 * taking the next from the wave's counter; see the file's comment.
 */
template <int NMAX, bool SharedRows, bool Gated>
__device__ __forceinline__ void se_wave(psd_se_problem& pb,
                                        se_state<NMAX, SharedRows>& st,
                                        se_deadline& D,
                                        const psd_se_layout& L,
                                        const double* __restrict__ R,
                                        const double* __restrict__ w,
                                        const double* __restrict__ z,
                                        const double* __restrict__ Qt,
                                        const float2* __restrict__ y,
                                        double* s_z,
                                        const segment_map& map,
                                        const se_work& W,
                                        int wave,
                                        int n_tasks,
                                        uint32_t task_nodes,
                                        uint32_t drain_nodes)
{
    const int N = L.N;
    const se_task* tasks = W.tasks[wave & 1];
    const bool can_split = wave + 1 < L.waves;
    se_task* out = W.tasks[(wave + 1) & 1];
    unsigned int* out_count = W.words + se_wave_count(wave + 1);
    int t = -1;
    bool first = true;
    bool finished = false; // no task left for this lane
    se_task task;
    uint32_t next = 0; //!< expanded nodes at which the task next looks at spreading
    uint32_t since_refresh = 0;
    uint32_t flushed = 0; //!< the task's metrics already added to its vector's count
    bool over = false;    //!< the vector's node budget is spent
    unsigned long long best_key = 0;
    // The loop's head is psd_se_first_kernel's, written out: with a function shared by
    // the two, 4x4 64QAM ran 0.95x on an H100.
    for (;;) {
        unsigned takers = 0;
        if constexpr (Gated) {
            const se_refill r = se_refill_gate(t < 0 && !finished, t >= 0, L.refill);
            if (r.done)
                break;
            takers = r.takers;
        }
        if (t < 0) {
            if constexpr (Gated)
                if (!se_takes(takers))
                    continue;
            t = se_next_item(first, takers, W.words + se_wave_next(wave));
            if (t >= n_tasks) {
                if constexpr (!Gated)
                    break;
                finished = true;
                t = -1;
                continue;
            }
            task = tasks[t];
            if (task.v < 0) { // left empty by a reservation that did not fit
                t = -1;
                continue;
            }
            se_vector& sv = W.vec[task.v];
            const bool spent =
                L.node_budget != 0 &&
                *reinterpret_cast<volatile uint32_t*>(&sv.evaluated) >= L.node_budget;
            if (spent || D.out_of_time(0)) {
                atomicOr(&sv.truncated, 1u); // a subtree left unsearched
                t = -1;
                continue;
            }
            const size_t m = static_cast<size_t>(map.matrix_of(task.v));
            if constexpr (se_tasks_read_z<NMAX>)
                se_load_task(pb, L, R, w, z, m, task.v);
            else
                se_load<NMAX>(pb, L, R, Qt, w, y, m, task.v, s_z);
            psd_se_begin<NMAX, !SharedRows>(
                pb, st, N - task.depth, task.prefix, task.metric, se_double(sv.bound));
            next = can_split ? se_first_look(task_nodes, drain_nodes) : UINT32_MAX;
            since_refresh = 0;
            flushed = 0;
            over = false;
            continue;
        }
        se_vector& sv = W.vec[task.v];
        bool done = false;
        if (st.k > 0 && (over || D.out_of_time(st.evaluated))) {
            if (psd_se_work_left(pb, st))
                atomicOr(&sv.truncated, 1u);
            done = true;
        } else {
            const double before = st.d2;
            done = !psd_se_step<NMAX, !SharedRows>(pb, st);
            if (st.d2 < before) {
                best_key = psd_se_leaf_key(st, L.log2P, task.key);
                atomicMin(&sv.bound, se_bits(st.d2));
            }
            if (++since_refresh == k_se_bound_refresh) {
                since_refresh = 0;
                const double g = se_double(*reinterpret_cast<volatile unsigned long long*>(&sv.bound));
                st.bound = g < st.bound ? g : st.bound;
                if (L.node_budget != 0) {
                    // The vector's total so far: the first pass, the spreads and every
                    // task's progress.
                    const uint32_t delta = st.evaluated - flushed;
                    flushed = st.evaluated;
                    over = atomicAdd(&sv.evaluated, delta) + delta >= L.node_budget;
                }
            }
        }
        uint32_t expanded = st.expanded, evaluated = st.evaluated;
        const double found = st.d2;
        if (!done && st.expanded >= next && st.k > 0 &&
            se_spread_now(
                st.expanded, task_nodes, next, W.words + se_wave_next(wave), n_tasks)) {
            // Hand the rest on; the leaf found so far is offered below.
            const int n = se_rest<NMAX>(pb, st, L.log2P, task.v, task.key, nullptr);
            const int at = n == 0 ? 0 : se_reserve(out_count, n, W.capacity, out);
            if (at < 0) {
                next = UINT32_MAX; // no room: this thread ends the subtree's search
                continue;
            }
            se_rest<NMAX>(pb, st, L.log2P, task.v, task.key, out + at);
            done = true;
        }
        if (!done)
            continue;
        if (found < psd_se_inf()) {
            uint8_t best[NMAX];
            se_copy<NMAX>(st.best, best, N);
            se_offer(sv, found, best_key, best, N);
        }
        atomicAdd(&sv.expanded, expanded);
        atomicAdd(&sv.evaluated, evaluated - flushed);
        D.work += evaluated;
        t = -1;
    }
}

/*!
 * Waves first_wave .. end_wave-1. Cooperative: launched as such, a grid-wide barrier
 * between two waves; else one wave (end_wave = first_wave + 1). The two are separate
 * instantiations: the barrier's code made a launch per wave slower (2x2 64QAM 5 dB 0.77x,
 * H200).
 */
template <int NMAX, bool Cooperative, bool SharedRows, bool Gated>
__global__ void __launch_bounds__(k_se_threads)
    psd_se_wave_kernel(const double* __restrict__ z,
                       const float2* __restrict__ y,
                       const double* __restrict__ Qt,
                       const double* __restrict__ R,
                       const double* __restrict__ w,
                       const __grid_constant__ psd_se_layout L,
                       const __grid_constant__ segment_map map,
                       se_work W,
                       int first_wave,
                       int end_wave,
                       uint32_t task_nodes,
                       uint32_t drain_nodes,
                       unsigned long long budget_ns,
                       unsigned long long* __restrict__ call_start)
{
    se_kernel_entry<false>();
    // A wave without tasks ends the search (tasks come only from the wave before), and
    // its blocks leave before any set-up (the count is the same for every thread, so none
    // waits at the barrier below).
    const int first_tasks = se_wave_tasks<Cooperative>(W, first_wave);
    if (first_tasks == 0)
        return;
    __shared__ double s_value[8];
    __shared__ unsigned long long s_start;
    if (threadIdx.x < L.P)
        s_value[threadIdx.x] = L.value[threadIdx.x];
    se_deadline D;
    se_start_deadline(D, budget_ns, call_start, s_start);

    const int N = L.N;
    __shared__ double s_z[se_tasks_read_z<NMAX> ? 1 : NMAX * k_se_threads];
    se_state<NMAX, SharedRows> st;
    psd_se_problem pb{ nullptr, nullptr, s_value, nullptr, N, L.P };
    if constexpr (Cooperative) {
        for (int wave = first_wave; wave < end_wave; ++wave) {
            // Every thread has finished the wave before (grid.sync), so the count is
            // final and the same for all: a wave without tasks ends the launch.
            const int n_tasks = se_wave_tasks<true>(W, wave);
            if (n_tasks == 0)
                break;
            se_wave<NMAX, SharedRows, Gated>(pb,
                                             st,
                                             D,
                                             L,
                                             R,
                                             w,
                                             z,
                                             Qt,
                                             y,
                                             s_z,
                                             map,
                                             W,
                                             wave,
                                             n_tasks,
                                             task_nodes,
                                             drain_nodes);
            if (wave + 1 < end_wave)
                cooperative_groups::this_grid().sync();
        }
    } else {
        se_wave<NMAX, SharedRows, Gated>(pb,
                                         st,
                                         D,
                                         L,
                                         R,
                                         w,
                                         z,
                                         Qt,
                                         y,
                                         s_z,
                                         map,
                                         W,
                                         first_wave,
                                         first_tasks,
                                         task_nodes,
                                         drain_nodes);
    }
}

//! The queued vectors' decisions and counts (n_all = 0), or every vector's (n_all > 0).
__global__ void __launch_bounds__(k_se_threads)
    psd_se_write_kernel(const uint8_t* __restrict__ perm,
                        const __grid_constant__ psd_se_layout L,
                        const __grid_constant__ segment_map map,
                        se_work W,
                        int n_all,
                        uint8_t* __restrict__ bits,
                        vector_stats* __restrict__ stats)
{
    se_kernel_entry();
    // n_all > 0: every vector of the chunk, the first pass's deferred ones with the
    // queued ones (se_first_done).
    const unsigned int n_q =
        n_all > 0 ? static_cast<unsigned int>(n_all) : W.words[w_queued];
    const int nb = L.nt * L.q;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n_q;
         i += gridDim.x * blockDim.x) {
        const int v = n_all > 0 ? static_cast<int>(i) : W.queued[i];
        const se_vector& sv = W.vec[v];
        const size_t m = static_cast<size_t>(map.matrix_of(v));
        se_write(L, sv.best, perm + m * k_psd_max_n, bits + static_cast<size_t>(v) * nb,
                 stats ? stats + v : nullptr, sv.expanded, sv.evaluated, sv.truncated);
    }
}

using se_first_fn = decltype(&psd_se_first_kernel<psd_se_max_n, false, false>);
using se_wave_fn = decltype(&psd_se_wave_kernel<psd_se_max_n, false, false, false>);
using se_z_fn = decltype(&psd_se_z_kernel<psd_se_max_n>);
using se_first_leaf_fn = decltype(&psd_se_first_leaf_kernel<psd_se_max_n>);

struct se_kernels {
    size_t rows_smem; //!< dynamic shared memory of first and wave launches
    se_z_fn z; //!< every vector's z, before the first pass (psd_se_stored_z)
    //! every vector's z and the first-leaf decisions, before the first pass
    se_first_leaf_fn first_leaf;
    se_first_fn first;
    se_wave_fn wave;      //!< one wave a launch
    se_wave_fn wave_coop; //!< every wave in one cooperative launch
};

uint32_t se_split_nodes()
{
    const int n = tuning::psd_se_split();
    return n > 0 ? static_cast<uint32_t>(n) : psd_se_split_nodes;
}

//! The drain rule's node count (psd_se_drain_count) for N real levels of P = 2^log2P
//! levels; UINT32_MAX: none.
uint32_t se_drain_nodes(int N, int log2P, bool sparse)
{
    const int n = tuning::psd_se_drain();
    if (n > 0)
        return static_cast<uint32_t>(n);
    return psd_se_drains(N, log2P) ? psd_se_drain_count(N, log2P, sparse) : UINT32_MAX;
}

using se_enum_fn = decltype(&psd_se_enum_kernel<8, 2>);

//! psd_se_enum_kernel for N real levels (2 n_tx) of P levels, or null where L does not
//! enumerate.
se_enum_fn se_pick_enum(const psd_se_layout& L)
{
    if (!psd_se_enumerates(L.N, L.P, L.start_rows))
        return nullptr;
    switch (L.P * 16 + L.N) {
    case 2 * 16 + 2:
        return psd_se_enum_kernel<2, 2>;
    case 2 * 16 + 4:
        return psd_se_enum_kernel<4, 2>;
    case 2 * 16 + 6:
        return psd_se_enum_kernel<6, 2>;
    case 2 * 16 + 8:
        return psd_se_enum_kernel<8, 2>;
    case 4 * 16 + 2:
        return psd_se_enum_kernel<2, 4>;
    case 4 * 16 + 4:
        return psd_se_enum_kernel<4, 4>;
    case 8 * 16 + 2:
        return psd_se_enum_kernel<2, 8>;
    default:
        return nullptr;
    }
}

template <int NMAX, bool SharedRows, bool Gated>
se_kernels se_kernels_of()
{
    return { SharedRows ? se_rows_shared<NMAX>::bytes : 0,
             psd_se_z_kernel<NMAX>,
             psd_se_first_leaf_kernel<NMAX>,
             psd_se_first_kernel<NMAX, SharedRows, Gated>,
             psd_se_wave_kernel<NMAX, false, SharedRows, Gated>,
             psd_se_wave_kernel<NMAX, true, SharedRows, Gated> };
}

template <bool SharedRows, bool Gated>
se_kernels se_pick_state(int N)
{
    if (N <= 4)
        return se_kernels_of<4, SharedRows, Gated>();
    if (N <= 8)
        return se_kernels_of<8, SharedRows, Gated>();
    return se_kernels_of<psd_se_max_n, SharedRows, Gated>();
}

//! The instantiation for N real levels of P = 2^log2P levels: small state for 2 and 4
//! antennas; the rows in shared memory where psd_se_shared_rows says (or
//! MIMODET_PSD_SE_SHARED_ROWS); the refill gate where refill > 1.
se_kernels se_pick(int N, int log2P, int refill)
{
    const int forced = tuning::psd_se_shared_rows();
    const bool shared = forced < 0 ? psd_se_shared_rows(N, log2P) : forced == 1;
    if (refill > 1)
        return shared ? se_pick_state<true, true>(N) : se_pick_state<false, true>(N);
    return shared ? se_pick_state<true, false>(N) : se_pick_state<false, false>(N);
}

class psd_se_cuda_detector : public cuda_batch_detector
{
public:
    psd_se_cuda_detector(const detector_config& cfg, const psd_se_layout& L, se_kernels k)
        : cuda_batch_detector(cfg, false), d_L(L), d_k(k), d_enum(se_pick_enum(L)),
          d_sorted(psd_uses_sorted_qr(cfg.sorted_qr, psd_cpu_tuned(cfg.n_tx))),
          d_clock(static_cast<unsigned long long>(psd_deadline_ns(cfg.psd_deadline_us))),
          d_split(se_split_nodes()), d_drain(se_drain_nodes(L.N, L.log2P, false)),
          d_drain_sparse(se_drain_nodes(L.N, L.log2P, true))
    {
        int dev = 0;
        MIMODET_CUDA_CHECK(cudaGetDevice(&dev));
        cudaDeviceProp prop;
        MIMODET_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
        int per_sm = 0;
        MIMODET_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, d_k.first, k_se_threads, d_k.rows_smem));
        d_grid = static_cast<size_t>(std::max(per_sm, 1)) * prop.multiProcessorCount;
        if (d_enum) {
            int enum_per_sm = 0;
            MIMODET_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &enum_per_sm, d_enum, k_se_threads, 0));
            d_enum_grid =
                static_cast<size_t>(std::max(enum_per_sm, 1)) * prop.multiProcessorCount;
        }
        // A cooperative launch holds at most the blocks that fit on the GPU at once.
        int wave_per_sm = 0;
        MIMODET_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &wave_per_sm, d_k.wave_coop, k_se_threads, d_k.rows_smem));
        int coop = 0;
        MIMODET_CUDA_CHECK(
            cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
        const int forced = tuning::psd_se_cooperative();
        const bool wanted =
            forced < 0 ? psd_se_cooperative_waves(L.N, L.log2P) : forced == 1;
        d_cooperative = coop != 0 && wave_per_sm > 0 && wanted;
        d_coop_grid = static_cast<size_t>(wave_per_sm) * prop.multiProcessorCount;
        // The enumeration computes each vector's z itself and leaves the first pass few.
        const int stored = tuning::psd_se_stored_z();
        d_stored_z =
            !d_enum && (stored < 0 ? psd_se_stored_z(L.N, L.log2P) : stored == 1);
        // Every vector of a chunk goes through the first pass only without the
        // enumeration, whose decided vectors the write kernel must not touch.
        const int deferred = tuning::psd_se_deferred_write();
        d_deferred = !d_enum &&
                     (deferred < 0 ? psd_se_deferred_write(L.N, L.log2P) : deferred == 1);
        // psd_se_first_leaf_decides is the first steps of a search below an infinite
        // bound, between two looks at the node budget.
        const int first_leaf = tuning::psd_se_first_leaf();
        d_first_leaf =
            !d_enum && L.start_rows == 0 &&
            (L.node_budget == 0 || L.node_budget > static_cast<uint32_t>(L.N * L.P)) &&
            (first_leaf < 0 ? psd_se_first_leaf(L.N, L.log2P) : first_leaf == 1);
        const int dependent = tuning::psd_se_dependent_launch();
        d_dependent = dependent_launch_supported() && dependent != 0;

        d_sms = prop.multiProcessorCount;
        d_chunk = static_cast<size_t>(tuning::psd_se_chunk());
        d_words.reserve(static_cast<size_t>(k_streams_max) * k_se_words);
    }

protected:
    void reserve_scratch(size_t n_mat, size_t n_vec) override
    {
        const size_t N = d_L.N, M = 2 * d_L.nrx;
        d_R.reserve(n_mat * N * N);
        d_Qt.reserve(n_mat * N * M);
        d_w.reserve(n_mat * N);
        d_z.reserve(std::max<size_t>(n_vec, 1) * N);
        d_perm.reserve(n_mat * k_psd_max_n);
        d_vec.reserve(std::max<size_t>(n_vec, 1));
        d_queued.reserve(std::max<size_t>(n_vec, 1));
        if (d_enum || d_first_leaf)
            d_items.reserve(std::max<size_t>(n_vec, 1));
        // A chunk holds at most the whole batch and, but for one matrix's vectors, at
        // most chunk_vectors(n_vec) (single-copy calls: the batch). Searches spread
        // where threads wait for them (the drain rule) or past the split count, so a
        // list holds the spreads of about one vector per first-pass thread, whatever
        // the chunk.
        const size_t chunk =
            std::min(n_vec, single_copy_call(n_vec) ? n_vec : chunk_vectors(n_vec));
        const size_t spreading = std::min(chunk, d_grid * k_se_threads);
        d_capacity = std::max(
            d_capacity,
            std::max(k_se_min_task_capacity,
                     k_se_tasks_per_vector * static_cast<size_t>(d_L.P) * spreading));
        for (int i = 0; i < d_slots; ++i)
            reserve_tasks(i);
    }

    void launch(cudaStream_t s, const chunk& c) override
    {
        if (c.n_vec > static_cast<size_t>(INT_MAX) - d_grid * k_se_threads)
            throw std::invalid_argument("mimodet: psd cuda: chunk too large");
        const size_t N = d_L.N, M = 2 * d_L.nrx;
        double* R = d_R.get() + c.m0 * N * N;
        double* Qt = d_Qt.get() + c.m0 * N * M;
        double* weights = d_w.get() + c.m0 * N;
        uint8_t* perm = d_perm.get() + c.m0 * k_psd_max_n;
        double* z = d_z.get() + c.v0 * N; // the spread searches' z, for their tasks
        // Per stream: counters and task lists. Launches on a stream run in order, so
        // resetting them on the stream before each chunk is safe while other streams run.
        const int slot = stream_slot(s);
        se_work W;
        W.vec = d_vec.get() + c.v0;
        W.queued = d_queued.get() + c.v0;
        W.tasks[0] = d_tasks[slot][0].get();
        W.tasks[1] = d_tasks[slot][1].get();
        W.items = nullptr;
        W.words = d_words.get() + static_cast<size_t>(slot) * k_se_words;
        W.capacity = static_cast<unsigned int>(d_capacity);
        MIMODET_CUDA_CHECK(cudaMemsetAsync(W.words, 0, k_se_words * sizeof(unsigned int), s));
        d_clock.arm(s, c.m0 == 0);
        // From here on a kernel follows a kernel: the search's kernels may be dependent
        // launches (d_dependent).
        launch_psd_preprocess(s,
                              c.H,
                              static_cast<int>(c.n_mat),
                              d_L.nrx,
                              d_L.nt,
                              d_sorted,
                              R,
                              Qt,
                              perm,
                              weights,
                              d_L.inv_scale);
        MIMODET_CUDA_CHECK_LAUNCH();
        const dim3 block(k_se_threads);
        if (d_enum) {
            // The enumeration decides nearly every vector; the first pass searches the
            // rest (W.items).
            W.items = d_items.get() + c.v0;
            const unsigned enum_grid = static_cast<unsigned>(
                std::min((c.n_vec + k_se_threads - 1) / k_se_threads, d_enum_grid));
            launch_kernel(d_enum,
                          enum_grid,
                          block,
                          0,
                          s,
                          d_dependent,
                          c.y,
                          R,
                          Qt,
                          weights,
                          perm,
                          d_L,
                          static_cast<int>(c.n_vec),
                          c.map,
                          W,
                          c.bits,
                          c.stats,
                          d_clock.budget_ns(),
                          d_clock.start());
        }
        // After the enumeration, the first pass takes its few near-ties on a small grid,
        // each search in one thread (at most 2^8 leaves below a bound that keeps only the
        // least metric's): no waves, no queue.
        const size_t first_blocks = d_enum ? static_cast<size_t>(d_sms) : d_grid;
        const unsigned first_grid = static_cast<unsigned>(
            std::min((c.n_vec + k_se_threads - 1) / k_se_threads, first_blocks));
        // A first pass of fewer vectors than the GPU holds threads leaves the rest of it
        // idle from the start: there the searches spread earlier.
        const uint32_t drain = d_enum                            ? UINT32_MAX
                               : c.n_vec < d_grid * k_se_threads ? d_drain_sparse
                                                                 : d_drain;
        if (d_first_leaf) {
            // The vectors whose search ends at its first leaf are decided here; the first
            // pass searches the rest (W.items). This kernel stores every z.
            W.items = d_items.get() + c.v0;
            const unsigned grid =
                static_cast<unsigned>((c.n_vec + k_se_threads - 1) / k_se_threads);
            launch_kernel(d_k.first_leaf,
                          grid,
                          block,
                          0,
                          s,
                          d_dependent,
                          c.y,
                          R,
                          Qt,
                          weights,
                          perm,
                          d_L,
                          static_cast<int>(c.n_vec),
                          c.map,
                          W,
                          d_stored_z ? z : nullptr,
                          d_deferred,
                          c.bits,
                          c.stats,
                          d_clock.budget_ns(),
                          d_clock.start());
        } else if (d_stored_z) {
            const unsigned z_grid =
                static_cast<unsigned>((c.n_vec + k_se_threads - 1) / k_se_threads);
            launch_kernel(d_k.z,
                          z_grid,
                          block,
                          0,
                          s,
                          d_dependent,
                          c.y,
                          Qt,
                          d_L,
                          static_cast<int>(c.n_vec),
                          c.map,
                          z);
        }
        const size_t smem = d_k.rows_smem; // the rows in shared memory, if there
        launch_kernel(d_k.first,
                      first_grid,
                      block,
                      smem,
                      s,
                      d_dependent,
                      c.y,
                      R,
                      Qt,
                      weights,
                      perm,
                      d_L,
                      static_cast<int>(c.n_vec),
                      c.map,
                      W,
                      z,
                      d_stored_z,
                      d_deferred,
                      c.bits,
                      c.stats,
                      d_enum ? UINT32_MAX : d_split,
                      drain,
                      d_drain_sparse,
                      d_clock.budget_ns(),
                      d_clock.start());
        if (d_enum)
            return;
        // The waves: a launch each, or one cooperative launch that ends at the first wave
        // without tasks (psd_se_cooperative_waves).
        if (d_cooperative) {
            cudaLaunchConfig_t cfg{};
            cudaLaunchAttribute coop{};
            coop.id = cudaLaunchAttributeCooperative;
            coop.val.cooperative = 1;
            cfg.gridDim = dim3(static_cast<unsigned>(d_coop_grid));
            cfg.blockDim = dim3(k_se_threads);
            cfg.dynamicSmemBytes = smem;
            cfg.stream = s;
            cfg.attrs = &coop;
            cfg.numAttrs = 1;
            const cudaError_t e = cudaLaunchKernelEx(&cfg,
                                                     d_k.wave_coop,
                                                     static_cast<const double*>(z),
                                                     c.y,
                                                     static_cast<const double*>(Qt),
                                                     static_cast<const double*>(R),
                                                     static_cast<const double*>(weights),
                                                     d_L,
                                                     c.map,
                                                     W,
                                                     0,
                                                     d_L.waves,
                                                     d_split,
                                                     drain,
                                                     d_clock.budget_ns(),
                                                     d_clock.start());
            if (e == cudaErrorCooperativeLaunchTooLarge) {
                // The process has fewer SMs than the device (MPS, a green context): a
                // launch per wave from now on. A launch error is not sticky.
                (void)cudaGetLastError();
                d_cooperative = false;
            } else {
                MIMODET_CUDA_CHECK(e);
            }
        }
        if (!d_cooperative) {
            for (int w = 0; w < d_L.waves; ++w) {
                launch_kernel(d_k.wave,
                              static_cast<unsigned>(d_grid),
                              block,
                              smem,
                              s,
                              d_dependent,
                              static_cast<const double*>(z),
                              c.y,
                              static_cast<const double*>(Qt),
                              static_cast<const double*>(R),
                              static_cast<const double*>(weights),
                              d_L,
                              c.map,
                              W,
                              w,
                              w + 1,
                              d_split,
                              drain,
                              d_clock.budget_ns(),
                              d_clock.start());
            }
        }
        const unsigned small = static_cast<unsigned>(d_sms);
        const unsigned write_grid =
            d_deferred ? static_cast<unsigned>(std::min(
                             (c.n_vec + k_se_threads - 1) / k_se_threads, d_grid))
                       : small;
        launch_kernel(psd_se_write_kernel,
                      write_grid,
                      block,
                      0,
                      s,
                      d_dependent,
                      static_cast<const uint8_t*>(perm),
                      d_L,
                      c.map,
                      W,
                      d_deferred ? static_cast<int>(c.n_vec) : 0,
                      c.bits,
                      c.stats);
    }

    bool kernels_write_stats() const override { return true; }

    //! Chunks of three streams' shares for the depth-first search (a 20-slot call of 20
    //! MHz is one chunk): the first pass's persistent threads take new vectors as they
    //! finish, which they can only where a chunk has more vectors than the GPU holds
    //! threads, and one stream's share of such a call has fewer (docs/PERFORMANCE.md,
    //! "Chunks"). The enumeration costs the same for every vector: one share, whose
    //! kernels overlap the next chunk's copies.
    int chunk_shares() const override { return d_enum ? 1 : 3; }

    size_t chunk_vectors(size_t n_vec) const override
    {
        return d_chunk ? d_chunk : cuda_batch_detector::chunk_vectors(n_vec);
    }

private:
    static constexpr int k_streams_max = 8;

    //! The stream's scratch slot (task lists, counters), allocated on first use.
    int stream_slot(cudaStream_t s)
    {
        const int i = d_clock.stream_index(s, k_streams_max);
        if (i >= d_slots) {
            reserve_tasks(i);
            d_slots = i + 1;
        }
        return i;
    }

    void reserve_tasks(int i)
    {
        d_tasks[i][0].reserve(d_capacity);
        d_tasks[i][1].reserve(d_capacity);
    }

    const psd_se_layout d_L;
    const se_kernels d_k;
    const se_enum_fn d_enum; //!< null: the first pass takes every vector
    const bool d_sorted;
    psd_call_clock d_clock; //!< the deadline's clock and the streams' scratch slots
    const uint32_t d_split; //!< nodes a thread expands before a search is spread
    const uint32_t d_drain; //!< the same once the launch's items are all handed out
    const uint32_t d_drain_sparse; //!< the same where the first pass leaves threads idle
    int d_slots = 0;        //!< scratch slots allocated
    size_t d_grid = 0;
    //! Vectors per chunk of a large call (MIMODET_PSD_SE_CHUNK); 0: the batch detector's.
    size_t d_chunk = 0;
    size_t d_enum_grid = 0; //!< blocks of psd_se_enum_kernel that fit on the GPU at once
    size_t d_coop_grid = 0;     //!< blocks of the waves' cooperative launch
    bool d_cooperative = false; //!< all waves in one cooperative launch
    bool d_stored_z = false;    //!< psd_se_z_kernel before the first pass
    bool d_first_leaf = false;  //!< psd_se_first_leaf_kernel before the first pass
    //! a chunk's kernels after its QR as dependent launches (dependent_launch.cuh)
    bool d_dependent = false;
    bool d_deferred = false; //!< the first pass's decisions written by the write kernel
    size_t d_capacity = k_se_min_task_capacity; //!< entries of each task list
    int d_sms = 0;
    device_buffer<unsigned int> d_words;
    device_buffer<double> d_R, d_Qt, d_w, d_z;
    device_buffer<uint8_t> d_perm;
    device_buffer<se_vector> d_vec;
    device_buffer<int> d_queued, d_items;
    device_buffer<se_task> d_tasks[k_streams_max][2];
};

} // namespace

detector::sptr make_psd_se_cuda_detector(const detector_config& cfg)
{
    const constellation& c = constellation::get(cfg.mod);
    if (cfg.n_tx < 1 || cfg.n_tx > k_max_ant || cfg.n_rx < 1 || cfg.n_rx > k_max_ant)
        throw std::invalid_argument("mimodet: psd cuda: n_tx and n_rx must be 1.." +
                                    std::to_string(k_max_ant));
    psd_se_layout L{};
    L.nt = cfg.n_tx;
    L.nrx = cfg.n_rx;
    L.N = 2 * cfg.n_tx;
    L.P = c.pam_order();
    L.q = c.bits_per_symbol();
    L.log2P = L.q / 2;
    L.inv_scale = 1.0 / c.scale();
    L.node_budget = psd_node_budget(cfg.psd_node_budget, cfg.n_tx, L.P);
    L.start_rows = psd_start_rows(cfg.psd_start_rows, cfg.n_tx, L.P, true);
    const int refill = tuning::psd_se_refill();
    L.refill = refill > 0 ? refill : psd_se_refill_lanes(L.N, L.log2P);
    // Tasks are 1..N-1 rows deep, and a task's own are deeper than it.
    L.waves = std::max(1, L.N - 1);
    // PAM levels in increasing order (the Gray labels are not monotone), as the CPU.
    const auto& pam = c.pam_levels();
    std::vector<int> order(L.P);
    for (int j = 0; j < L.P; ++j)
        order[j] = j;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return pam[a] < pam[b]; });
    for (int j = 0; j < L.P; ++j) {
        L.value[j] = pam[order[j]];
        L.label[j] = order[j];
    }
    return std::make_shared<psd_se_cuda_detector>(
        cfg, L, se_pick(L.N, L.log2P, L.refill));
}

} // namespace core
} // namespace mimodet
} // namespace gr
