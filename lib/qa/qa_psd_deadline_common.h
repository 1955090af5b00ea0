/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Shared by the PSD deadline tests (qa_psd_deadline.cc on the CPU, qa_gpu_psd_deadline.cc
// on the GPU): a timed run with per-vector stats, and the independent SIC (Babai)
// reference.

#ifndef INCLUDED_MIMODET_QA_PSD_DEADLINE_COMMON_H
#define INCLUDED_MIMODET_QA_PSD_DEADLINE_COMMON_H

#include "detect/qr.h"
#include "qa_common.h"
#include <chrono>
#include <cstdint>
#include <vector>

namespace qa {

//! One detect_bits call: bits, per-vector stats, wall time, truncated vectors.
struct deadline_result {
    std::vector<uint8_t> bits;
    std::vector<gr::mimodet::vector_stats> stats;
    double seconds = 0;
    size_t truncated = 0;
};

inline deadline_result run_with_stats(gr::mimodet::detector& d, const batch& b)
{
    deadline_result r;
    r.bits.assign(b.bits.size(), 0xff); // 0xff: a vector left unwritten fails the checks
    r.stats.assign(static_cast<size_t>(b.n_mat) * b.n_sym, gr::mimodet::vector_stats{});
    const auto t0 = std::chrono::steady_clock::now();
    d.detect_bits(b.H.data(),
                  b.y.data(),
                  b.n_mat,
                  b.n_sym,
                  b.noise_var.data(),
                  r.bits.data(),
                  r.stats.data());
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& s : r.stats)
        r.truncated += s.truncated;
    return r;
}

/*!
 * SIC with the QR qr_of(Hr) (a core::qr_result of the real model Hr): for each real
 * level from the top, z_k minus the decided levels' interference over R_kk, sliced to
 * the nearest PAM level (constellation::slice_pam), then the permutation undone and the
 * I/Q PAM labels paired. Bits in the detector's output layout.
 */
template <class QrOf>
std::vector<uint8_t> reference_sic(const qa::batch& b, QrOf qr_of)
{
    const auto& c = gr::mimodet::constellation::get(b.mod);
    const int q = c.bits_per_symbol(), nt = b.n_tx, nr = b.n_rx, N = 2 * nt;
    const int nb = nt * q;
    std::vector<uint8_t> out(b.bits.size(), 0xff);
    for (int m = 0; m < b.n_mat; ++m) {
        gr::mimodet::core::MatC H(nr, nt);
        for (int r = 0; r < nr; ++r)
            for (int t = 0; t < nt; ++t)
                H(r, t) = gr::mimodet::core::cd(b.H[(static_cast<size_t>(m) * nr + r) * nt + t]);
        const gr::mimodet::core::MatR Hr = gr::mimodet::core::real_model(H);
        const auto qr = qr_of(Hr);
        for (int s = 0; s < b.n_sym; ++s) {
            const size_t v = static_cast<size_t>(m) * b.n_sym + s;
            std::vector<gr::mimodet::core::cd> y(nr);
            for (int r = 0; r < nr; ++r)
                y[r] = gr::mimodet::core::cd(b.y[v * nr + r]);
            const gr::mimodet::core::VecR z = qr.Q.transpose() * gr::mimodet::core::real_model(y.data(), nr);
            std::vector<double> x(N, 0.0);
            std::vector<int> label(N, 0), real_label(N, 0);
            for (int k = N - 1; k >= 0; --k) {
                double acc = z(k);
                for (int j = k + 1; j < N; ++j)
                    acc -= qr.R(k, j) * x[j];
                const double rkk = qr.R(k, k);
                label[k] = c.slice_pam(rkk > 0 ? acc / rkk : 0.0);
                x[k] = c.pam_levels()[label[k]];
            }
            for (int k = 0; k < N; ++k)
                real_label[qr.perm[k]] = label[k];
            for (int t = 0; t < nt; ++t) {
                const int l = c.label_from_pam(real_label[t], real_label[nt + t]);
                for (int k = 0; k < q; ++k)
                    out[v * nb + t * q + k] = static_cast<uint8_t>((l >> (q - 1 - k)) & 1);
            }
        }
    }
    return out;
}

} // namespace qa

#endif
