/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// SSS: slot 0 / slot 10 of a known cell, and the cell search among the 336 SSS of an
// N_ID2.

#ifndef INCLUDED_MIMODET_LTE_SYNC_SSS_H
#define INCLUDED_MIMODET_LTE_SYNC_SSS_H

#include "phy/lte_sync_common.h"
#include <gnuradio/mimodet/api.h>
#include <vector>

namespace gr {
namespace mimodet {
namespace lte_sync {

//! Slot 0 / slot 10 decision from the SSS (frequency domain, coherent with the PSS).
struct sss_decision {
    int ns = -1;          //!< 0 or 10
    double rho0 = 0.0;    //!< normalised coherent correlation with the SSS of slot 0, [-1, 1]
    double rho10 = 0.0;   //!< ... with the SSS of slot 10
    bool confident = false; //!< best rho > 0.4 and ahead of the other by > 0.2
};
/*!
 * pss_bins[a], sss_bins[a]: the 62 sync subcarriers (sync_dft) of the PSS and SSS symbols
 * on antenna a, CFO corrected. The PSS gives the channel; z = Y_sss conj(H_pss) is
 * correlated with both SSS candidates.
 */
MIMODET_API sss_decision detect_sss(const std::vector<std::vector<cf>>& pss_bins,
                                    const std::vector<std::vector<cf>>& sss_bins,
                                    const std::vector<cf>& pss,
                                    const std::vector<cf>& sss0,
                                    const std::vector<cf>& sss10);

/*!
 * Coherent SSS correlations: with h = Y_pss conj(P) (the channel from the PSS) and
 * z = Y_sss conj(h) per antenna and subcarrier, rho_i = sum Re(z conj(c_i)) / sum |z|
 * for every candidate SSS c_i (62 values), in [-1, 1]: 0 +- 0.1 on noise or another
 * sequence, 0.8-1 on the SSS sent from 10 dB SNR on. Returns false (rho untouched) when
 * the SSS symbol holds no finite energy. detect_sss and sss_hypotheses decide with it.
 */
MIMODET_API bool sss_correlations(const std::vector<std::vector<cf>>& pss_bins,
                                  const std::vector<std::vector<cf>>& sss_bins,
                                  const std::vector<cf>& pss,
                                  const std::vector<const std::vector<cf>*>& candidates,
                                  double* rho);

//! Cell search from the SSS: which N_ID1 (and slot 0 or 10) a PSS of N_ID2 belongs to.
struct cell_decision {
    int n_id1 = -1;         //!< 0..167; -1: no decision (no finite SSS energy)
    int ns = -1;            //!< 0 or 10
    double rho = 0.0;       //!< sss_correlations of the best of the 336 hypotheses
    double runner_up = 0.0; //!< the largest rho among the 335 others
};

/*!
 * The 336 SSS sequences (N_ID1 0..167, slot 0 and 10) that can follow the PSS of one
 * N_ID2, and the exhaustive decision among them: the hypothesis with the largest
 * coherent correlation (sss_correlations). A real SSS gives rho 0.8-1 and the others
 * about 0 +- 0.1 (at most about 0.35 over the 335), so the margin to the runner-up is
 * what tells a cell from noise.
 */
class MIMODET_API sss_hypotheses
{
public:
    explicit sss_hypotheses(int n_id2);
    // d_ptr points into d_sss: a move keeps the sequences where they are, a copy would not.
    sss_hypotheses(const sss_hypotheses&) = delete;
    sss_hypotheses& operator=(const sss_hypotheses&) = delete;
    sss_hypotheses(sss_hypotheses&&) = default;
    sss_hypotheses& operator=(sss_hypotheses&&) = default;
    int n_id2() const { return d_n_id2; }
    //! SSS of cell 3 n_id1 + n_id2 in slot ns (0 or 10).
    const std::vector<cf>& sss(int n_id1, int ns) const
    {
        return d_sss[2 * static_cast<size_t>(n_id1) + (ns == 10 ? 1 : 0)];
    }
    cell_decision detect(const std::vector<std::vector<cf>>& pss_bins,
                         const std::vector<std::vector<cf>>& sss_bins) const;

private:
    int d_n_id2;
    std::vector<cf> d_pss;
    std::vector<std::vector<cf>> d_sss;   //!< [2 n_id1 + (ns == 10)]
    std::vector<const std::vector<cf>*> d_ptr;
};

} // namespace lte_sync
} // namespace mimodet
} // namespace gr

#endif
