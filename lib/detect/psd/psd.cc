/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Parallel sphere detector (PSD paper, Algorithm 3) on the CPU: exact ML, hard bits.
//
// The search runs on the real-valued model (Eq. 3) after a Householder QR of the real
// channel (the paper's plain QR, Eq. 6), or a sorted QR with cfg.sorted_qr = 1 (the
// column permutation is undone on the result). Levels lvl_1..lvl_nr hold buffers of
// eval_x partial vectors; Expand and Evaluate takes exp_(x-1) partial vectors of the
// level above (from its offset on), appends every combination of the skipped levels and
// computes the path metrics from the parents' stored metrics. Intermediate buffers are
// sorted, the leaf buffer is searched for its minimum (radius update), and a level is
// left as soon as the next sorted candidate's metric is >= d^2: every vector not visited
// then has a metric >= d^2, which makes the result exact ML for any valid parameters.
//
// With lvl = N+1, N, ..., 1 and exp all 1 every buffer holds the |Omega| children of one
// node, sorted: that is the Schnorr-Euchner depth-first sphere decoder. That case runs on
// a specialised path that produces the sorted children lazily (zig-zag around the
// unconstrained estimate) instead of evaluating and sorting all |Omega| of them; the
// visiting order, radius updates, pruning and the counters are those of Algorithm 3.
// With cfg.psd_radius (the CPU's default) it starts below a radius of that many n_rx
// noise_var, doubled while the best leaf found does not lie well inside it: the same
// decision, fewer nodes where a channel's first leaves lie far outside the noise.
//
// Deadline (cfg.psd_deadline_us > 0, a budget per detect call from begin_call()): both
// searches look at the steady clock every k_check_evals path metrics, counted over the
// vectors of the call (also once at the start of each vector). A vector whose search is
// running when the deadline is seen to pass stops there: with an incumbent leaf it
// outputs that leaf, flagged (vector_stats::truncated) only when candidates inside the
// sphere were left, so unflagged vectors are exact ML; without one yet it outputs the
// starting bound's leaf (psd_se_start_bound, depth-first search), flagged, or, without
// that either, takes the fallback below. Every vector that starts after that skips the
// search and takes the fallback: the SIC (Babai) point of the same QR and ordering
// (psd_sic in psd_common.h, the code the CUDA PSD runs too), always flagged. Its
// counters: a vector that starts after expiry has expanded = 0 and evaluated = N (one
// partial metric per real level); one interrupted before its first leaf keeps the
// search's counters and adds N evaluated. Without a deadline no clock is read and the
// search is the exact one, bit for bit.
//
// Node budget (cfg.psd_node_budget, psd_node_budget()): a vector whose search has
// computed that many path metrics stops as at the deadline (its best leaf, flagged where
// candidates inside the sphere were left); the next vector searches as usual. Checked
// at every step of the depth-first search and every Expand and Evaluate of the generic
// one, so a vector overruns it by at most one Expand and Evaluate.
//
// Cancellation: the detector hands each kernel its stop function (set_stop); the
// searches look at it with the deadline's clock reads (every k_check_evals path
// metrics), so a call on one long vector (no budget) still ends promptly. A vector
// stopped so, and every vector after it in the call, ends as at the deadline (the
// detector then throws mimodet::cancelled).

#include "detect/kernel.h"
#include "detect/psd/psd_common.h"
#include "detect/psd/psd_params.h"
#include "detect/psd/psd_se.h"
#include "detect/psd/psd_se_cpu.h"
#include "detect/qr.h"
#include "detect/qr_lanes.h"
#include "util/tuning.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();
// Path metrics between two clock reads: steady_clock::now() costs ~20-30 ns, 512
// metrics at least ~0.5 us, so the check costs a few percent at most, and a deadline is
// overrun by at most one such stretch (plus the current Expand and Evaluate).
constexpr uint64_t k_check_evals = 512;
using steady = std::chrono::steady_clock;

//! qr_sorted_group's lanes for m x n real models, at most MIMODET_CPU_QR_LANES.
int qr_group_lanes(int m, int n)
{
    const int limit = tuning::cpu_qr_lanes();
    return qr_sorted_group_lanes(m, n, limit > 0 ? limit : 8);
}

class psd_kernel : public cpu_kernel
{
public:
    psd_kernel(const detector_config& cfg, const psd_params& params, bool depth_first)
        : d_nt(cfg.n_tx), d_N(2 * cfg.n_tx), d_c(constellation::get(cfg.mod)),
          d_q(d_c.bits_per_symbol()), d_P(d_c.pam_order()),
          d_inv_scale(1.0 / d_c.scale()), d_params(params), d_depth_first(depth_first),
          d_sorted_qr(psd_uses_sorted_qr(cfg.sorted_qr, params)),
          d_nr(static_cast<int>(params.lvl.size()) - 1),
          d_budget(std::chrono::nanoseconds(psd_deadline_ns(cfg.psd_deadline_us))),
          d_has_deadline(d_budget.count() > 0),
          d_node_budget(psd_node_budget(cfg.psd_node_budget, cfg.n_tx, d_P)),
          d_start_rows(psd_start_rows(cfg.psd_start_rows, cfg.n_tx, d_P, false)),
          d_radius(psd_radius(cfg.psd_radius, false)), d_n_rx(cfg.n_rx),
          d_group(d_sorted_qr ? qr_group_lanes(2 * cfg.n_rx, d_N) : 0)
    {
        // A kernel used without begin_call (tests of the kernel alone) counts from here.
        begin_call(steady::now());
        // PAM levels in increasing order (the Gray labels are not monotone).
        const auto& pam = d_c.pam_levels();
        std::vector<int> order(d_P);
        for (int j = 0; j < d_P; ++j)
            order[j] = j;
        std::sort(order.begin(), order.end(), [&](int a, int b) { return pam[a] < pam[b]; });
        for (int j = 0; j < d_P; ++j) {
            d_value.push_back(pam[order[j]]);
            d_label.push_back(order[j]);
        }
        d_R.assign(d_N * d_N, 0.0);
        d_w.assign(d_N, 0.0);
        d_perm.assign(d_N, 0);
        d_norm2.assign(d_N, 0.0);
        d_z.assign(d_N, 0.0);
        d_best.assign(d_N, 0);
        d_real_label.assign(d_N, 0);
        // Buffers of levels lvl_1..lvl_nr (index x-1), eval_x entries each.
        const auto eval = psd_eval(params, d_P);
        d_buf.resize(d_nr);
        for (int x = 1; x <= d_nr; ++x) {
            auto& b = d_buf[x - 1];
            b.metric.assign(eval[x - 1], 0.0);
            b.sym.assign(eval[x - 1] * d_N, 0);
            b.sorted.assign(eval[x - 1], ranked{ 0.0, 0 });
        }
        d_base.assign(d_N, 0.0);
        d_digit.assign(d_N, 0);
        d_prepared.resize(static_cast<size_t>(std::max(d_group, 0)));
        for (auto& p : d_prepared) {
            p.H.assign(static_cast<size_t>(cfg.n_rx) * cfg.n_tx, cd());
            p.Qt.assign(static_cast<size_t>(d_N) * 2 * cfg.n_rx, 0.0);
            p.R.assign(static_cast<size_t>(d_N) * d_N, 0.0);
            p.perm.assign(d_N, 0);
        }
    }

    int preprocess_group() const override { return d_group > 1 ? d_group : 1; }

    void preprocess(const MatC* const* H, int n) override
    {
        d_n_prepared = 0;
        if (d_group <= 1 || n < 1 || n > d_group)
            return;
        double* Q[8];
        double* R[8];
        int* perm[8];
        for (int i = 0; i < n; ++i) {
            const MatC& Hi = *H[i];
            prepared_qr& p = d_prepared[i];
            if (Hi.rows() != d_n_rx || Hi.cols() != d_nt)
                return; // not this kernel's shape: left to detect()
            std::copy(Hi.data(), Hi.data() + Hi.size(), p.H.begin());
            real_model(Hi, p.Qt.data()); // Q^T row-major is Q column-major
            Q[i] = p.Qt.data();
            R[i] = p.R.data();
            perm[i] = p.perm.data();
            p.ready = true;
        }
        qr_sorted_group(Q, n, d_group, 2 * d_n_rx, d_N, R, d_N, 1, perm);
        d_n_prepared = n;
        d_current = -1;
    }

    void detect(const MatC& H,
                const cd* y,
                int n_sym,
                double noise_var,
                uint8_t* bits,
                float* llr,
                vector_stats* stats) override
    {
        const int nr = static_cast<int>(H.rows());
        const int n_real_rx = 2 * nr;
        // Once per matrix: QR of the real model, amortised over the n_sym vectors.
        d_Qt.resize(static_cast<size_t>(d_N) * n_real_rx);
        if (d_sorted_qr && take_prepared(H)) {
            // d_Qt, d_R and d_perm hold this matrix's QR from preprocess().
        } else if (d_sorted_qr) {
            // Q^T row-major is Q column-major: the sorted QR runs in place on H_r in
            // d_Qt and writes R row-major into d_R, with no allocation per matrix.
            real_model(H, d_Qt.data());
            qr_sorted_real(d_Qt.data(),
                           n_real_rx,
                           d_N,
                           d_R.data(),
                           d_N,
                           1,
                           d_perm.data(),
                           d_norm2.data());
        } else {
            const auto qr = qr_householder(real_model(H));
            for (int k = 0; k < d_N; ++k) {
                for (int i = 0; i < n_real_rx; ++i)
                    d_Qt[k * n_real_rx + i] = qr.Q(i, k);
                for (int j = 0; j < d_N; ++j)
                    d_R[k * d_N + j] = qr.R(k, j);
                d_perm[k] = qr.perm[k];
            }
        }
        if (d_depth_first) // only the depth-first search reads the weights
            for (int k = 0; k < d_N; ++k)
                d_w[k] = psd_se_weight(d_R[k * d_N + k], d_inv_scale);
        const int nb = d_nt * d_q;
        for (int s = 0; s < n_sym; ++s) {
            // z = Q^T y_r (y_r = [Re y; Im y]).
            const cd* ys = y + static_cast<size_t>(s) * nr;
            for (int k = 0; k < d_N; ++k) {
                const double* q = &d_Qt[k * n_real_rx];
                double acc = 0.0;
                for (int i = 0; i < nr; ++i)
                    acc += q[i] * ys[i].real() + q[nr + i] * ys[i].imag();
                d_z[k] = acc;
            }
            vector_stats st;
            if (out_of_time(0))
                sic_fallback(st); // started after the deadline: no search
            else if (d_depth_first)
                search_depth_first(st, nr * noise_var);
            else
                search_generic(st);
            d_work_done += st.evaluated;
            // Undo the column permutation, then pair the I and Q PAM labels.
            for (int k = 0; k < d_N; ++k)
                d_real_label[d_perm[k]] = d_label[d_best[k]];
            uint8_t* out = bits + static_cast<size_t>(s) * nb;
            for (int t = 0; t < d_nt; ++t)
                label_to_bits(d_c.label_from_pam(d_real_label[t], d_real_label[d_nt + t]),
                              d_q,
                              out + t * d_q);
            if (stats)
                stats[s] = st;
        }
    }

    void begin_call(steady::time_point start) override
    {
        d_deadline = start + d_budget;
        d_expired = false;
        d_work_done = 0;
        d_next_check = 0; // the first check comes at the start of the first vector
        d_stop = nullptr;
    }

    void set_stop(const std::function<bool()>* stop) override { d_stop = stop; }

private:
    //! True when the search of the current vector, with `evaluated` path metrics so far,
    //! must stop (deadline set and passed).
    //! Reads the clock every k_check_evals path metrics of the call; once it has seen
    //! the deadline pass, answers true without reading it for the rest of the call.
    //! Also true once the stop function (cancellation) has answered true, looked at
    //! with the same period.
    bool out_of_time(uint32_t evaluated)
    {
        if (!d_has_deadline && !d_stop)
            return false;
        if (d_expired)
            return true;
        const uint64_t work = d_work_done + evaluated;
        if (work < d_next_check)
            return false;
        d_next_check = work + k_check_evals;
        d_expired = (d_has_deadline && steady::now() >= d_deadline) || (d_stop && (*d_stop)());
        return d_expired;
    }

    //! The vector's search has used its node budget.
    bool over_budget(uint32_t evaluated) const
    {
        return d_node_budget != 0 && evaluated >= d_node_budget;
    }

    //! Deadline fallback: the SIC point of the current vector (R, z) into d_best,
    //! flagged; adds N evaluated (see the top of the file).
    void sic_fallback(vector_stats& st)
    {
        psd_sic(d_R.data(), d_z.data(), d_value.data(), d_N, d_P, d_best.data());
        st.evaluated += static_cast<uint32_t>(d_N);
        st.truncated = 1;
    }

    //! Whether preprocess() has prepared H: then its QR is moved into d_Qt, d_R and
    //! d_perm (a swap of buffers), unless it is there already (a later piece of the
    //! same matrix). Matched by contents, so a stale entry is never taken for another
    //! matrix.
    bool take_prepared(const MatC& H)
    {
        const size_t bytes = static_cast<size_t>(H.size()) * sizeof(cd);
        for (int i = std::max(d_current, 0); i < d_n_prepared; ++i) {
            prepared_qr& p = d_prepared[i];
            if (p.H.size() * sizeof(cd) != bytes ||
                std::memcmp(p.H.data(), H.data(), bytes) != 0)
                continue;
            if (i == d_current)
                return true;
            if (!p.ready || p.Qt.size() != d_Qt.size())
                break; // swapped out before: computed afresh
            std::swap(p.Qt, d_Qt);
            std::swap(p.R, d_R);
            std::swap(p.perm, d_perm);
            p.ready = false; // its buffers now hold the previous matrix's
            d_current = i;
            return true;
        }
        // Not prepared: detect() computes its QR into d_Qt, d_R and d_perm, so the entry
        // that was there is gone; the other prepared ones stay.
        d_current = -1;
        return false;
    }

    //! A matrix's sorted QR from preprocess().
    struct prepared_qr {
        std::vector<cd> H;      //!< the matrix, column-major (Eigen's storage)
        std::vector<double> Qt; //!< as d_Qt
        std::vector<double> R;  //!< as d_R
        std::vector<int> perm;  //!< as d_perm
        bool ready = false;     //!< holds H's QR (false once swapped into d_Qt...)
    };

    struct ranked {
        double metric;
        int entry;
    };

    struct level_buffer {
        std::vector<double> metric; //!< path metric per entry
        std::vector<uint8_t> sym;   //!< N sorted-PAM indices per entry (valid rows only)
        std::vector<ranked> sorted; //!< (metric, entry) sorted by metric (inner levels)
        int count = 0;              //!< entries filled by the last Expand and Evaluate
        int off = 0;                //!< processing offset (position in sorted)
    };

    // ---- Generic Algorithm 3 ---------------------------------------------------------

    // Expand and Evaluate: the n_parents partial vectors of level lvl_(x-1) at sorted
    // positions from..from+n_parents-1 (the root for x = 1) get every combination of the
    // rows lvl_x-1 .. lvl_(x-1)-2 (0-based) appended; fills buffer x and sorts it, or, on
    // the leaf level, returns the index of its minimum.
    int expand_evaluate(int x, int from, int n_parents, vector_stats& st)
    {
        const int top = d_params.lvl[x - 1] - 2; // highest new row (0-based)
        const int bottom = d_params.lvl[x] - 1;  // lowest new row
        const int depth = top - bottom + 1;
        level_buffer& out = d_buf[x - 1];
        out.count = 0;
        int combos = 1;
        for (int i = 0; i < depth; ++i)
            combos *= d_P;
        for (int p = 0; p < n_parents; ++p) {
            double parent_metric = 0.0;
            const uint8_t* parent_sym = nullptr;
            if (x > 1) {
                const level_buffer& in = d_buf[x - 2];
                const int e = in.sorted[from + p].entry;
                parent_metric = in.metric[e];
                parent_sym = &in.sym[static_cast<size_t>(e) * d_N];
            }
            // Interference of the parent's symbols on the new rows, once per parent.
            for (int r = bottom; r <= top; ++r) {
                double b = d_z[r];
                for (int k = top + 1; k < d_N; ++k)
                    b -= d_R[r * d_N + k] * d_value[parent_sym[k]];
                d_base[r] = b;
            }
            enumerate(top, top, bottom, parent_metric, parent_sym, out);
        }
        st.expanded += n_parents;
        st.evaluated += n_parents * combos;
        if (x == d_nr) { // leaf level: minimum search instead of sorting
            int best = 0;
            for (int e = 1; e < out.count; ++e)
                if (out.metric[e] < out.metric[best])
                    best = e;
            return best;
        }
        for (int e = 0; e < out.count; ++e)
            out.sorted[e] = { out.metric[e], e };
        std::sort(out.sorted.begin(),
                  out.sorted.begin() + out.count,
                  [](const ranked& a, const ranked& b) { return a.metric < b.metric; });
        return -1;
    }

    // Appends every combination of the rows r..bottom to the digits already chosen for
    // the rows r+1..top (row `top` the most significant), depth first so that the rows
    // share their partial sums; metric is the path metric down to row r+1.
    void enumerate(int r,
                   int top,
                   int bottom,
                   double metric,
                   const uint8_t* parent_sym,
                   level_buffer& out)
    {
        double b = d_base[r];
        for (int k = r + 1; k <= top; ++k)
            b -= d_R[r * d_N + k] * d_value[d_digit[k]];
        const double r_diag = d_R[r * d_N + r];
        for (int v = 0; v < d_P; ++v) {
            const double e = b - r_diag * d_value[v];
            const double m = metric + e * e;
            d_digit[r] = v;
            if (r > bottom) {
                enumerate(r - 1, top, bottom, m, parent_sym, out);
                continue;
            }
            const int idx = out.count++;
            out.metric[idx] = m;
            uint8_t* sym = &out.sym[static_cast<size_t>(idx) * d_N];
            if (parent_sym)
                std::copy(parent_sym + top + 1, parent_sym + d_N, sym + top + 1);
            for (int k = bottom; k <= top; ++k)
                sym[k] = static_cast<uint8_t>(d_digit[k]);
        }
    }

    void leaf_update(int best_entry, double& d2)
    {
        const level_buffer& leaf = d_buf[d_nr - 1];
        if (leaf.metric[best_entry] < d2) {
            d2 = leaf.metric[best_entry];
            const uint8_t* sym = &leaf.sym[static_cast<size_t>(best_entry) * d_N];
            for (int k = 0; k < d_N; ++k)
                d_best[k] = sym[k];
        }
    }

    void search_generic(vector_stats& st)
    {
        double d2 = k_inf;
        const int root = expand_evaluate(1, 0, 1, st);
        if (d_nr == 1) {
            leaf_update(root, d2);
            return;
        }
        for (auto& b : d_buf)
            b.off = 0;
        // Traversal process: i is the level to fill next, buffer i-1 its source.
        int i = 2;
        while (i > 1) {
            if (over_budget(st.evaluated) || out_of_time(st.evaluated)) {
                if (d2 < k_inf) // a leaf has been found: it is the decision
                    st.truncated = generic_work_left(i, d2) ? 1 : 0;
                else
                    sic_fallback(st);
                return;
            }
            level_buffer& src = d_buf[i - 2];
            if (src.off < src.count && src.sorted[src.off].metric < d2) {
                const int n = std::min(d_params.exp[i - 1], src.count - src.off);
                const int best = expand_evaluate(i, src.off, n, st);
                src.off += n;
                if (i == d_nr) {
                    leaf_update(best, d2);
                } else {
                    d_buf[i - 1].off = 0;
                    ++i;
                }
            } else {
                // Buffer exhausted, or its next (sorted) candidate is outside the sphere:
                // so are all the rest.
                src.off = 0;
                --i;
            }
        }
    }

    //! Deadline stop of the generic search with level i to fill next: is any candidate
    //! inside the sphere left in the active source buffers (levels 1..i-1)? Those the
    //! traversal would still expand; the other buffers are stale.
    bool generic_work_left(int i, double d2) const
    {
        for (int x = 2; x <= i; ++x) {
            const level_buffer& src = d_buf[x - 2];
            if (src.off < src.count && src.sorted[src.off].metric < d2)
                return true;
        }
        return false;
    }

    // ---- Depth-first special case (lvl = N+1..1, exp = 1) -----------------------------
    // The search itself is psd_se.h's, shared with the CUDA SE kernel.

    using se_state = psd_se_state<psd_se_max_n>;

    psd_se_problem se_problem() const
    {
        return { d_R.data(), d_z.data(), d_value.data(), d_w.data(), d_N, d_P };
    }

    //! noise_norm2: n_rx x noise_var, the noise's mean squared norm (psd_radius' unit).
    void search_depth_first(vector_stats& stats, double noise_norm2)
    {
        // Whether a step may have to stop: a budget, a deadline or a stop function.
        const bool checks = d_node_budget != 0 || d_has_deadline || d_stop;
        const psd_se_problem pb = se_problem();
        se_state& st = d_se;
        uint32_t start_evaluated = 0;
        if (psd_se_enumerates(d_N, d_P, d_start_rows)) {
            // Started past the deadline: the SIC point, as the search's first check
            // gives it (and the GPU's enumeration kernel).
            if (out_of_time(stats.evaluated)) {
                sic_fallback(stats);
                return;
            }
            if (psd_se_enumerate_n(pb, st.best)) {
                stats.expanded += psd_se_enumerated_expanded(d_N, d_P);
                stats.evaluated += psd_se_enumerated_evaluated(d_N, d_P);
                copy_best(st.best);
                return;
            }
            // A near-tie: the bound over every leaf and the search decide.
            start_evaluated += psd_se_enumerated_evaluated(d_N, d_P);
        }
        const double start_bound =
            psd_se_start_bound<psd_se_max_n>(pb, d_start_rows, st.best, start_evaluated);
        const auto stop = [&](uint32_t evaluated) {
            return over_budget(evaluated) || out_of_time(stats.evaluated + evaluated);
        };
        // One search below `bound`, st.evaluated counted on from evaluated_before.
        const auto search = [&](double bound, uint32_t evaluated_before) {
            if (psd_se_cpu_fixed(d_N, d_P))
                return checks ? search_fixed<true>(pb, bound, evaluated_before, stop)
                              : search_fixed<false>(pb, bound, evaluated_before, stop);
            psd_se_begin(pb, st, d_N, nullptr, 0.0, bound, d_partials);
            st.evaluated += evaluated_before;
            for (;;) {
                // k > 0: rows k..N-1 are being enumerated (k = 0 takes a leaf next).
                if (st.k > 0 && checks && stop(st.evaluated))
                    return false;
                if (!psd_se_step(pb, st, d_partials))
                    return true;
            }
        };
        // The starting radius (psd_radius), grown until the best leaf lies well inside
        // it; the starting bound's where that is smaller.
        double radius = d_radius * noise_norm2;
        if (!(radius > 0.0 && radius < psd_se_inf()))
            radius = psd_se_inf();
        uint32_t evaluated_before = start_evaluated, expanded_before = 0;
        bool by_radius, finished;
        bool between = false; // stopped after a search below the radius, before the next
        for (int tries = 1;; ++tries) {
            if (tries > psd_radius_tries)
                radius = psd_se_inf();
            by_radius = radius < start_bound;
            finished = search(by_radius ? radius : start_bound, evaluated_before);
            if (!finished || !by_radius ||
                st.d2 <= rn_mul(radius, 1.0 - psd_radius_guard))
                break;
            if (checks && stop(st.evaluated)) {
                finished = false;
                between = true;
                break;
            }
            expanded_before += st.expanded;
            evaluated_before = st.evaluated;
            radius = rn_mul(radius, psd_radius_growth);
        }
        st.expanded += expanded_before;
        if (!finished) {
            stats.expanded += st.expanded;
            stats.evaluated += st.evaluated;
            if (!(st.d2 < psd_se_inf())) {
                if (!(start_bound < psd_se_inf())) {
                    sic_fallback(stats); // no leaf yet, no starting bound
                    return;
                }
                // The starting bound's leaf; below a radius, the leaves between the
                // radius and it were not searched.
                stats.truncated = by_radius || psd_se_work_left(pb, st) ? 1 : 0;
            } else {
                stats.truncated = between || psd_se_work_left(pb, st) ? 1 : 0;
            }
            copy_best(st.best);
            return;
        }
        stats.expanded += st.expanded;
        stats.evaluated += st.evaluated;
        copy_best(st.best);
    }

    //! psd_se_search_cpu for this kernel's N and P (psd_se_cpu_fixed) on d_se.
    template <bool Checks, class Stop>
    bool search_fixed(const psd_se_problem& pb,
                      double bound,
                      uint32_t evaluated_before,
                      const Stop& stop)
    {
        se_state& st = d_se;
        const auto run = [&](auto n, auto p) {
            return psd_se_search_cpu<decltype(n)::value, decltype(p)::value, Checks>(
                pb, st, bound, evaluated_before, stop);
        };
        const auto with_p = [&](auto n) {
            switch (d_P) {
            case 2:
                return run(n, std::integral_constant<int, 2>{});
            case 4:
                return run(n, std::integral_constant<int, 4>{});
            default:
                return run(n, std::integral_constant<int, 8>{});
            }
        };
        switch (d_N) {
        case 2:
            return with_p(std::integral_constant<int, 2>{});
        case 4:
            return with_p(std::integral_constant<int, 4>{});
        case 6:
            return with_p(std::integral_constant<int, 6>{});
        default:
            return with_p(std::integral_constant<int, 8>{});
        }
    }

    void copy_best(const uint8_t* best)
    {
        for (int k = 0; k < d_N; ++k)
            d_best[k] = best[k];
    }

    const int d_nt, d_N;
    const constellation& d_c;
    const int d_q, d_P;
    const double d_inv_scale; //!< 1 / constellation scale (psd_se_weight's argument)
    const psd_params d_params;
    const bool d_depth_first;
    const bool d_sorted_qr;
    const int d_nr;
    std::vector<double> d_value; //!< PAM levels, increasing
    std::vector<int> d_label;    //!< PAM label of d_value[j]
    std::vector<double> d_R;     //!< real R, row-major N x N
    std::vector<double> d_w;     //!< psd_se_weight per row of R (depth-first search)
    std::vector<double> d_Qt;    //!< Q^T, row-major N x 2 n_rx
    std::vector<int> d_perm;     //!< the QR's column permutation (qr_result::perm)
    std::vector<double> d_norm2; //!< qr_sorted_real's scratch
    std::vector<double> d_z;     //!< Q^T y_r of the current vector
    std::vector<int> d_best;     //!< best vector: sorted-PAM index per row
    std::vector<int> d_real_label;
    se_state d_se;
    psd_se_partials<psd_se_max_n> d_partials;
    std::vector<level_buffer> d_buf;
    std::vector<double> d_base;
    std::vector<int> d_digit;
    // Deadline (see the top of the file).
    const std::chrono::nanoseconds d_budget;
    const bool d_has_deadline;
    steady::time_point d_deadline;
    bool d_expired = false;
    const uint32_t d_node_budget; //!< 0: none
    const int d_start_rows;       //!< psd_se_start_bound's rows (depth-first search)
    //! psd_radius resolved: the depth-first search's starting radius over n_rx noise_var
    const double d_radius;
    const int d_n_rx;
    //! qr_sorted_group's lanes for this shape on this CPU (0: none; preprocess() then
    //! does nothing)
    const int d_group;
    std::vector<prepared_qr> d_prepared;
    int d_n_prepared = 0; //!< entries of d_prepared from the last preprocess()
    int d_current = -1;   //!< the entry whose QR is in d_Qt, d_R, d_perm
    const std::function<bool()>* d_stop = nullptr;
    uint64_t d_work_done = 0;  //!< path metrics of the finished vectors of this call
    uint64_t d_next_check = 0; //!< read the clock when the call's metrics reach this
};

} // namespace

//! As make_psd_kernel; force_generic runs the generic Algorithm 3 path even for the
//! depth-first parameter set (the tests compare both paths).
std::unique_ptr<cpu_kernel> make_psd_kernel(const detector_config& cfg, bool force_generic)
{
    const int omega = constellation::get(cfg.mod).pam_order();
    const psd_params p = psd_resolve(cfg.psd_lvl, cfg.psd_exp, cfg.n_tx, omega);
    return std::make_unique<psd_kernel>(cfg, p, !force_generic && psd_is_depth_first(p));
}

std::unique_ptr<cpu_kernel> make_psd_kernel(const detector_config& cfg)
{
    return make_psd_kernel(cfg, false);
}

} // namespace core
} // namespace mimodet
} // namespace gr
