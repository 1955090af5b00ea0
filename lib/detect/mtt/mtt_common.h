/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Multi-pass trellis traversal soft detector (MTT; Wu, Sun, Cavallaro et al.: the journal
// paper on the GPU soft MIMO detector and "Reconfigurable Real-time MIMO Detector on
// GPU"): parameters, their defaults and validation, and the complexity bookkeeping,
// shared by the CPU kernel and the CUDA version. Plain C++ (no Eigen) so that nvcc can
// include it.
//
// The trellis (journal Sec. 4.1) has one stage per transmit antenna and one vertex per
// constellation point; stage t holds the stream at position n_tx-1-t of the (sorted) QR,
// i.e. the rows of R are consumed from the bottom. Candidate list L_t (one per stage,
// Sec. 4.2) holds, for every vertex of stage t, one full root-to-toor path through it:
// edge reductions (Eq. 9) over stages 0..t, then path extensions (Eqs. 10-11) over
// stages t+1..n_tx-1 (Sec. 4.3.3, Fig. 5). A reduction needs all Q^2 weights between
// two stages; an extension only the best outgoing edge of each path, which the slicer
// finds without evaluating the other Q-1 (the same edge, ties aside).

#ifndef INCLUDED_MIMODET_CORE_MTT_COMMON_H
#define INCLUDED_MIMODET_CORE_MTT_COMMON_H

#include <gnuradio/mimodet/detector.h>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {
namespace mtt {

//! Default of detector_config::sorted_qr: the journal's host performs a sorted QR
//! (Sec. 6.1) before the trellis is built.
constexpr int default_sorted_qr = 1;

//! Largest supported constellation (64-QAM) and antenna count (the framework's limit).
constexpr int max_order = 64;
constexpr int max_tx = 8;

//! Resolved MTT parameters.
struct params {
    bool sorted_qr; //!< sorted QR (true) or plain QR in natural antenna order
};

//! Validates the MTT fields of cfg and resolves their defaults; throws
//! std::invalid_argument with a message naming the bad field.
inline params resolve_params(const detector_config& cfg)
{
    // sorted_qr's range is checked with the common fields (detector.cc).
    if (cfg.n_tx < 1 || cfg.n_tx > max_tx)
        throw std::invalid_argument("mimodet: mtt supports 1 to " +
                                    std::to_string(max_tx) + " transmit antennas, got " +
                                    std::to_string(cfg.n_tx));
    const int order = 1 << static_cast<int>(cfg.mod);
    if (order < 2 || order > max_order)
        throw std::invalid_argument("mimodet: mtt supports constellations of up to " +
                                    std::to_string(max_order) + " points, got " +
                                    std::to_string(order));
    params p;
    p.sorted_qr = cfg.sorted_qr == -1 ? default_sorted_qr != 0 : cfg.sorted_qr != 0;
    return p;
}

//! Trellis stage of R position pos (and back): stage 0 is the last row of R.
inline int stage_of_position(int pos, int n_tx) { return n_tx - 1 - pos; }
inline int position_of_stage(int stage, int n_tx) { return n_tx - 1 - stage; }

//! Number of extension steps that are not shared with a reduction: list L_t extends over
//! stages t+1..n_tx-1 and only its first step (t+1) reuses the reduction's position.
inline int unshared_extension_steps(int n_tx) { return (n_tx - 1) * (n_tx - 2) / 2; }

//! Edge weights (Eq. 12/14) computed per received vector: Q at stage 0, Q^2 per edge
//! reduction (n_tx-1 of them), and one per path per extension step (n_tx-1 first steps
//! plus the unshared ones): an extension takes the path's best outgoing edge, which is
//! the constellation point nearest the path's residual divided by R(p,p) (the slicer),
//! so only the winning edge's weight is computed.
inline uint32_t edge_weights_per_vector(int n_tx, int order)
{
    const uint32_t q = static_cast<uint32_t>(order);
    const uint32_t reductions = static_cast<uint32_t>(n_tx - 1);
    const uint32_t extensions = static_cast<uint32_t>(n_tx - 1 + unshared_extension_steps(n_tx));
    return q + reductions * q * q + extensions * q;
}

//! Vertices whose Q outgoing edges were evaluated: the root, then the Q survivors of
//! every reduction (extensions evaluate one edge per path).
inline uint32_t vertex_expansions_per_vector(int n_tx, int order)
{
    return 1 + static_cast<uint32_t>(n_tx - 1) * static_cast<uint32_t>(order);
}

} // namespace mtt
} // namespace core
} // namespace mimodet
} // namespace gr

#endif
