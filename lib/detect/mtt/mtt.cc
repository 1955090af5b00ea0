/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Multi-pass trellis traversal (MTT) soft detector on the CPU. The complex trellis is
// built from R of the (sorted) QR of H; stage t is position n_tx-1-t of R (see
// mtt_common.h). For every stage t the candidate list L_t holds one complete path through
// each of its Q vertices: edge reductions up to stage t, then greedy path extensions to
// the last stage. The reductions are common to all lists and evaluate all Q^2 weights
// between two stages; an extension takes each path's best outgoing edge, found by the
// slicer (the nearest point to the residual over R(p,p)) instead of Q weights. The LLRs
// of the antenna of stage t are max-log over L_t (Eq. 8).
//
// Paths are never stored: the LLRs only need each path's metric, and what a path still
// has to contribute is kept as its residual z - R s (partial interference cancellation)
// for the rows not yet visited.

#include "detect/kernel.h"
#include "detect/mtt/mtt_common.h"
#include "detect/qr.h"
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();

class mtt_kernel : public cpu_kernel
{
public:
    mtt_kernel(const detector_config& cfg, const mtt::params& p)
        : d_nt(cfg.n_tx),
          d_c(constellation::get(cfg.mod)),
          d_q(d_c.bits_per_symbol()),
          d_M(d_c.order()),
          d_clip(cfg.llr_clip),
          d_sorted(p.sorted_qr),
          d_inv_diag(d_nt),
          d_diag_re(d_nt * d_M),
          d_diag_im(d_nt * d_M),
          d_m2diag_re(d_nt * d_M),
          d_m2diag_im(d_nt * d_M),
          d_col_re(d_nt * d_M * d_nt),
          d_col_im(d_nt * d_M * d_nt),
          d_z(d_nt),
          d_red_re(d_M * d_nt),
          d_red_im(d_M * d_nt),
          d_red_d(d_M),
          d_new_re(d_M * d_nt),
          d_new_im(d_M * d_nt),
          d_new_d(d_M),
          d_red_arg(d_M),
          d_ext_re(d_M * d_nt),
          d_ext_im(d_M * d_nt),
          d_ext_d(d_M)
    {
    }

    void detect(const MatC& H,
                const cd* y,
                int n_sym,
                double noise_var,
                uint8_t*,
                float* llr,
                vector_stats* stats) override
    {
        if (!llr)
            throw std::logic_error("mimodet: the mtt kernel writes LLRs only");
        const int nr = static_cast<int>(H.rows());
        const auto qr = d_sorted ? qr_sorted(H) : qr_householder(H);
        prepare(qr.R);
        const int nb = d_nt * d_q;
        const double inv_nv = 1.0 / noise_var;
        const uint32_t evaluated = mtt::edge_weights_per_vector(d_nt, d_M);
        const uint32_t expanded = mtt::vertex_expansions_per_vector(d_nt, d_M);
        for (int s = 0; s < n_sym; ++s) {
            // z = Q^H y without a temporary per vector.
            const cd* yv = y + static_cast<size_t>(s) * nr;
            for (int k = 0; k < d_nt; ++k) {
                cd acc(0.0, 0.0);
                for (int r = 0; r < nr; ++r)
                    acc += std::conj(qr.Q(r, k)) * yv[r];
                d_z[k] = acc;
            }
            detect_vector(qr.perm, inv_nv, llr + static_cast<size_t>(s) * nb);
            if (stats) {
                stats[s].evaluated = evaluated;
                stats[s].expanded = expanded;
            }
        }
    }

private:
    // Per matrix: R(p,p) x_q (the edge weight's new term, Eq. 14; -2 R(p,p) x_q for the
    // reductions) and R(r,p) x_q for the rows r < p still to be visited (the residual
    // update, Eq. 13).
    void prepare(const MatC& R)
    {
        const auto& pts = d_c.points();
        sic_inverse_diagonal(R, d_inv_diag.data());
        for (int p = 0; p < d_nt; ++p)
            for (int q = 0; q < d_M; ++q) {
                const cd dv = R(p, p) * pts[q];
                d_diag_re[p * d_M + q] = dv.real();
                d_diag_im[p * d_M + q] = dv.imag();
                d_m2diag_re[p * d_M + q] = -2.0 * dv.real();
                d_m2diag_im[p * d_M + q] = -2.0 * dv.imag();
                double* cre = &d_col_re[(p * d_M + q) * d_nt];
                double* cim = &d_col_im[(p * d_M + q) * d_nt];
                for (int r = 0; r < p; ++r) {
                    const cd v = R(r, p) * pts[q];
                    cre[r] = v.real();
                    cim[r] = v.imag();
                }
            }
    }

    // dst residual = src residual - R(0..p-1, p) x_q.
    void cancel(const double* src_re,
                const double* src_im,
                int p,
                int q,
                double* dst_re,
                double* dst_im) const
    {
        const double* cre = &d_col_re[(p * d_M + q) * d_nt];
        const double* cim = &d_col_im[(p * d_M + q) * d_nt];
        for (int r = 0; r < p; ++r) {
            dst_re[r] = src_re[r] - cre[r];
            dst_im[r] = src_im[r] - cim[r];
        }
    }

    // The best outgoing edge at position p of a path whose residual there is a: the
    // point nearest a / R(p,p) (mtt_device.cuh mtt_best_edge on the GPU).
    int best_edge(double a_re, double a_im, int p) const
    {
        return d_c.slice(cd(a_re, a_im) * d_inv_diag[p]);
    }

    void detect_vector(const std::vector<int>& perm, double inv_nv, float* out)
    {
        const int nt = d_nt, M = d_M;

        // Stage 0 (position nt-1): one edge from the root per vertex; the reduction is
        // trivial, every vertex keeps its single path.
        {
            const int p = nt - 1;
            const double zr = d_z[p].real(), zi = d_z[p].imag();
            for (int q = 0; q < M; ++q) {
                const double er = zr - d_diag_re[p * M + q];
                const double ei = zi - d_diag_im[p * M + q];
                d_red_d[q] = er * er + ei * ei;
                double* ar = &d_red_re[q * nt];
                double* ai = &d_red_im[q * nt];
                for (int r = 0; r < p; ++r) {
                    ar[r] = d_z[r].real();
                    ai[r] = d_z[r].imag();
                }
                cancel(ar, ai, p, q, ar, ai);
            }
        }

        for (int t = 0; t < nt; ++t) {
            const int p = nt - 1 - t;
            const double* list_d = d_red_d.data();
            if (t < nt - 1) {
                // Edges stage t -> t+1 (position pn): all Q^2 weights for the edge
                // reduction (the least incoming path k per vertex q, Eq. 9); L_t's first
                // extension is path k's best edge (Eq. 11), from the slicer.
                const int pn = p - 1;
                // The weight d_k + |a_k - u_q|^2 as w_k - 2 Re(conj(a_k) u_q), plus
                // |u_q|^2 after the reduction (mtt_device.cuh's mtt_reduce).
                const double* dre = &d_diag_re[pn * M];
                const double* dim = &d_diag_im[pn * M];
                const double* mre = &d_m2diag_re[pn * M];
                const double* mim = &d_m2diag_im[pn * M];
                std::fill(d_new_d.begin(), d_new_d.end(), k_inf);
                for (int k = 0; k < M; ++k) {
                    const double ar = d_red_re[k * nt + pn];
                    const double ai = d_red_im[k * nt + pn];
                    const double dk = d_red_d[k];
                    const double wk = dk + (ar * ar + ai * ai);
                    for (int q = 0; q < M; ++q) {
                        const double e = wk + ai * mim[q] + ar * mre[q];
                        if (e < d_new_d[q]) {
                            d_new_d[q] = e;
                            d_red_arg[q] = k;
                        }
                    }
                    const int best_q = best_edge(ar, ai, pn);
                    const double er = ar - dre[best_q];
                    const double ei = ai - dim[best_q];
                    d_ext_d[k] = dk + (er * er + ei * ei);
                    cancel(&d_red_re[k * nt],
                           &d_red_im[k * nt],
                           pn,
                           best_q,
                           &d_ext_re[k * nt],
                           &d_ext_im[k * nt]);
                }
                for (int q = 0; q < M; ++q) {
                    d_new_d[q] += dre[q] * dre[q] + dim[q] * dim[q];
                    const int k = d_red_arg[q];
                    cancel(&d_red_re[k * nt],
                           &d_red_im[k * nt],
                           pn,
                           q,
                           &d_new_re[q * nt],
                           &d_new_im[q * nt]);
                }

                // Remaining extensions of L_t (stages t+2..nt-1): each path takes its
                // best outgoing edge (Eqs. 10-11, Algorithm 1).
                for (int ps = pn - 1; ps >= 0; --ps) {
                    const double* sre = &d_diag_re[ps * M];
                    const double* sim = &d_diag_im[ps * M];
                    for (int k = 0; k < M; ++k) {
                        double* ar = &d_ext_re[k * nt];
                        double* ai = &d_ext_im[k * nt];
                        const int best_q = best_edge(ar[ps], ai[ps], ps);
                        const double er = ar[ps] - sre[best_q];
                        const double ei = ai[ps] - sim[best_q];
                        d_ext_d[k] += er * er + ei * ei;
                        cancel(ar, ai, ps, best_q, ar, ai);
                    }
                }
                list_d = d_ext_d.data();
            }

            // L_t: path v runs through vertex v (label v) of stage t; every bit has both
            // hypotheses in the list, so no LLR is ever missing (journal Sec. 6.1).
            float* o = out + perm[p] * d_q;
            for (int b = 0; b < d_q; ++b) {
                double m0 = k_inf, m1 = k_inf;
                const int shift = d_q - 1 - b;
                for (int v = 0; v < M; ++v) {
                    if ((v >> shift) & 1)
                        m1 = std::min(m1, list_d[v]);
                    else
                        m0 = std::min(m0, list_d[v]);
                }
                o[b] = maxlog_llr(m0, m1, inv_nv, d_clip);
            }

            if (t < nt - 1) {
                d_red_re.swap(d_new_re);
                d_red_im.swap(d_new_im);
                d_red_d.swap(d_new_d);
            }
        }
    }

    const int d_nt;
    const constellation& d_c;
    const int d_q, d_M;
    const float d_clip;
    const bool d_sorted;
    // Per matrix.
    std::vector<double> d_inv_diag;           // [position]
    std::vector<double> d_diag_re, d_diag_im; // [position][label]
    std::vector<double> d_m2diag_re, d_m2diag_im; // -2 x the above
    std::vector<double> d_col_re, d_col_im;   // [position][label][row]
    // Per vector: residuals [path][row] and metrics [path] of the reduced survivors
    // (d_red_*), the next stage's survivors (d_new_*) and the extended paths of the
    // current list (d_ext_*).
    std::vector<cd> d_z;
    std::vector<double> d_red_re, d_red_im, d_red_d;
    std::vector<double> d_new_re, d_new_im, d_new_d;
    std::vector<int> d_red_arg;
    std::vector<double> d_ext_re, d_ext_im, d_ext_d;
};

} // namespace

std::unique_ptr<cpu_kernel> make_mtt_kernel(const detector_config& cfg)
{
    const mtt::params p = mtt::resolve_params(cfg);
    return std::make_unique<mtt_kernel>(cfg, p);
}

} // namespace core
} // namespace mimodet
} // namespace gr
