/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// How the CUDA detectors cut a segmented batch into chunks (batch_detector.h), and how a
// kernel finds the channel matrix of a received vector inside a chunk that spans several
// segments. Plain C++ apart from the __host__ __device__ marks, so that the planner can
// be tested without a GPU (lib/qa/qa_segment_map.cc).

#ifndef INCLUDED_MIMODET_CUDA_SEGMENT_MAP_H
#define INCLUDED_MIMODET_CUDA_SEGMENT_MAP_H

#include <algorithm>
#include <climits>
#include <cstddef>
#include <gnuradio/mimodet/detector.h>
#include <stdexcept>
#include <vector>

#ifdef __CUDACC__
#define MIMODET_MAP_HD __host__ __device__ __forceinline__
#else
#define MIMODET_MAP_HD inline
#endif

namespace gr {
namespace mimodet {
namespace core {

/*!
 * Vector -> matrix map of one chunk, passed to the kernels by value (kernel parameter
 * space). Piece i is a run of whole matrices that share one n_sym: chunk-relative
 * vectors [v_end[i-1], v_end[i]) (piece 0 from 0) belong to the matrices from m_begin[i]
 * on, n_sym[i] vectors each. Matrices without vectors (segments with n_sym = 0) take no
 * piece: they lie between pieces (m_begin jumps over them) or after the last one, so no
 * vector maps to them.
 */
struct segment_map {
    static constexpr int k_max_pieces = 16;

    int n;                           //!< pieces in use
    int n_sym[k_max_pieces];         //!< vectors per matrix (>= 1)
    long long v_end[k_max_pieces];   //!< end of the piece's vectors
    long long m_begin[k_max_pieces]; //!< first matrix of the piece

    //! Chunk-relative matrix of chunk-relative vector v (0 <= v < v_end[n-1]). With one
    //! piece starting at matrix 0 this is v / n_sym.
    MIMODET_MAP_HD long long matrix_of(long long v) const
    {
        int i = 0;
        while (i + 1 < n && v >= v_end[i])
            ++i;
        const long long v_begin = i == 0 ? 0 : v_end[i - 1];
        return m_begin[i] + (v - v_begin) / n_sym[i];
    }

    //! The largest n_sym of the pieces (0 without any).
    int max_n_sym() const
    {
        int m = 0;
        for (int i = 0; i < n; ++i)
            m = std::max(m, n_sym[i]);
        return m;
    }
};

// Kernels take the map by value beside their other parameters (4 KB in all).
static_assert(sizeof(segment_map) <= 512, "segment_map must stay small");

//! Where a chunk lies in the batch: matrices [m0, m0 + n_mat), vectors [v0, v0 + n_vec).
struct chunk_span {
    size_t m0, n_mat, v0, n_vec;
    segment_map map;
};

// Chunks of about n_vec / streams vectors, clamped: large enough to fill the GPU, small
// enough that copies of one chunk overlap the kernels of another.
constexpr size_t k_min_chunk_vectors = size_t(1) << 12;
constexpr size_t k_max_chunk_vectors = size_t(1) << 16;
// Up to this many vectors a call has one copy each way and is one chunk (one launch per
// kernel) where its segments fit one segment_map: at this size (about two 20 MHz 4x4
// slots) the API calls per chunk (copies, event, wait: a few microseconds each) cost more
// than overlapping copies with kernels saves (a slot's inputs are ~0.4 MB, ~20 us on
// PCIe), and each launch of a small chunk leaves most of the GPU idle.
constexpr size_t k_single_copy_vectors = size_t(1) << 14;

//! True when a call of n_vec vectors takes the single-copy path.
inline bool single_copy_call(size_t n_vec) { return n_vec <= k_single_copy_vectors; }

//! Vectors per chunk for a call of n_vec vectors over n_streams streams.
inline size_t chunk_target_vectors(size_t n_vec, size_t n_streams)
{
    if (single_copy_call(n_vec))
        return n_vec;
    return std::min(k_max_chunk_vectors,
                    std::max(k_min_chunk_vectors, (n_vec + n_streams - 1) / n_streams));
}

/*!
 * Cuts segments[0..n_seg) (laid out one after another, as batch_segment says) into
 * chunks of whole matrices, in order; a chunk may span several segments. A chunk is
 * closed only when the next matrix with vectors does not fit: its vectors would pass
 * target, or it would need a piece beyond max_pieces (adjacent segments with the same
 * n_sym share a piece). A matrix with more than target vectors is a chunk of its own.
 * Matrices without vectors join the open chunk, so every chunk has vectors unless the
 * whole batch has none. Throws std::invalid_argument for n_sym > INT_MAX, or max_pieces
 * outside 1..segment_map::k_max_pieces.
 */
inline std::vector<chunk_span> plan_chunks(const batch_segment* segments,
                                           size_t n_seg,
                                           size_t target,
                                           int max_pieces = segment_map::k_max_pieces)
{
    if (max_pieces < 1 || max_pieces > segment_map::k_max_pieces)
        throw std::invalid_argument("mimodet: cuda: bad piece limit of a chunk");
    std::vector<chunk_span> chunks;
    chunk_span cur{};
    size_t piece_m_end = 0; // chunk-relative end of the last piece's matrices
    for (size_t s = 0; s < n_seg; ++s) {
        const size_t n_sym = segments[s].n_sym;
        if (n_sym > static_cast<size_t>(INT_MAX))
            throw std::invalid_argument("mimodet: cuda: n_sym too large");
        size_t left = segments[s].n_mat;
        if (n_sym == 0) {
            cur.n_mat += left;
            continue;
        }
        while (left > 0) {
            segment_map& map = cur.map;
            const size_t room = target > cur.n_vec ? target - cur.n_vec : 0;
            size_t take = std::min(left, room / n_sym);
            if (cur.n_vec == 0)
                take = std::max<size_t>(take, 1);
            const bool extend = map.n > 0 &&
                                map.n_sym[map.n - 1] == static_cast<int>(n_sym) &&
                                piece_m_end == cur.n_mat;
            if (take == 0 || (!extend && map.n == max_pieces)) {
                chunks.push_back(cur);
                const chunk_span& done = chunks.back();
                cur = chunk_span{};
                cur.m0 = done.m0 + done.n_mat;
                cur.v0 = done.v0 + done.n_vec;
                continue; // the new chunk takes at least one matrix
            }
            if (!extend) {
                map.n_sym[map.n] = static_cast<int>(n_sym);
                map.m_begin[map.n] = static_cast<long long>(cur.n_mat);
                ++map.n;
            }
            cur.n_mat += take;
            cur.n_vec += take * n_sym;
            map.v_end[map.n - 1] = static_cast<long long>(cur.n_vec);
            piece_m_end = cur.n_mat;
            left -= take;
        }
    }
    if (cur.n_mat > 0)
        chunks.push_back(cur);
    return chunks;
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_SEGMENT_MAP_H */
