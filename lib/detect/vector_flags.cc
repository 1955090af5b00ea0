/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detect/linear/linear_common.h"
#include "detect/vector_flags.h"
#include <cmath>

namespace gr {
namespace mimodet {
namespace core {

namespace {

// rank_deficient with n_rx, n_tx known at compile time (> 0) or taken from the call
// (0): constant sizes let the compiler unroll gram and pivoted_ldl; the operations and
// their order are the same either way.
template <int NR, int NT>
bool rank_deficient_sized(const std::complex<float>* H, int n_rx, int n_tx)
{
    const int nr = NR > 0 ? NR : n_rx, nt = NT > 0 ? NT : n_tx;
    linear::cplx Hc[linear::max_ant * linear::max_ant];
    for (int i = 0; i < nr * nt; ++i)
        Hc[i] = { static_cast<double>(H[i].real()), static_cast<double>(H[i].imag()) };
    return linear::zf_rank(Hc, nr, nt) < nt;
}

} // namespace

bool rank_deficient(const std::complex<float>* H, int n_rx, int n_tx)
{
    if (n_rx == 2 && n_tx == 2)
        return rank_deficient_sized<2, 2>(H, n_rx, n_tx);
    if (n_rx == 4 && n_tx == 4)
        return rank_deficient_sized<4, 4>(H, n_rx, n_tx);
    if (n_rx == 8 && n_tx == 8)
        return rank_deficient_sized<8, 8>(H, n_rx, n_tx);
    return rank_deficient_sized<0, 0>(H, n_rx, n_tx);
}

void flag_vectors(const std::complex<float>* H,
                  int n_rx,
                  int n_tx,
                  const batch_segment* segments,
                  size_t n_seg,
                  const float* llr,
                  int bits_per_vector,
                  vector_stats* stats)
{
    const size_t hm = static_cast<size_t>(n_rx) * n_tx;
    const size_t nb = static_cast<size_t>(bits_per_vector);
    size_t m = 0, v = 0;
    for (size_t g = 0; g < n_seg; ++g)
        for (size_t i = 0; i < segments[g].n_mat; ++i, ++m) {
            const uint32_t rank = rank_deficient(H + m * hm, n_rx, n_tx)
                                      ? static_cast<uint32_t>(vector_flag_rank_deficient)
                                      : 0u;
            for (size_t s = 0; s < segments[g].n_sym; ++s, ++v) {
                uint32_t f = rank;
                if (llr) {
                    const float* l = llr + v * nb;
                    for (size_t b = 0; b < nb; ++b)
                        if (std::fabs(l[b]) >= llr_saturation)
                            f |= vector_flag_saturated;
                }
                stats[v].flags = f;
            }
        }
}

} // namespace core
} // namespace mimodet
} // namespace gr
