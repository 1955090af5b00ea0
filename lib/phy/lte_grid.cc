/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <gnuradio/mimodet/lte_grid.h>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {

namespace {
constexpr int k_max_rb = 110; // N_RB^max,DL: the CRS sequence is defined for it
constexpr int k_sync_half_width = 36; // 62 sync subcarriers + 5 guards each side = 72
} // namespace

lte_numerology lte_numerology::from_bandwidth(double mhz)
{
    struct row {
        double mhz;
        int n_rb, fft;
    };
    static const row rows[] = { { 1.4, 6, 128 },  { 3, 15, 256 },   { 5, 25, 512 },
                                { 10, 50, 1024 }, { 15, 75, 1536 }, { 20, 100, 2048 } };
    for (const auto& r : rows)
        if (std::abs(r.mhz - mhz) < 1e-6) {
            lte_numerology n;
            n.bandwidth_mhz = r.mhz;
            n.n_rb = r.n_rb;
            n.n_sc = 12 * r.n_rb;
            n.fft_size = r.fft;
            n.sample_rate = 15000.0 * r.fft;
            // 160 and 144 samples at FFT 2048, scaled (exact for every preset size).
            n.cp_first = 160 * r.fft / 2048;
            n.cp_other = 144 * r.fft / 2048;
            return n;
        }
    throw std::invalid_argument("mimodet: unsupported LTE bandwidth " + std::to_string(mhz) +
                                " MHz (expected 1.4, 3, 5, 10, 15 or 20)");
}

std::vector<uint8_t> lte_grid::gold_sequence(uint32_t c_init, int len)
{
    // 36.211 7.2: length-31 Gold sequence, N_c = 1600.
    constexpr int nc = 1600;
    std::vector<uint8_t> x1(nc + len + 31, 0), x2(nc + len + 31, 0), c(len);
    x1[0] = 1;
    for (int i = 0; i < 31; ++i)
        x2[i] = (c_init >> i) & 1;
    for (int n = 0; n < nc + len; ++n) {
        x1[n + 31] = (x1[n + 3] + x1[n]) & 1;
        x2[n + 31] = (x2[n + 3] + x2[n + 2] + x2[n + 1] + x2[n]) & 1;
    }
    for (int n = 0; n < len; ++n)
        c[n] = (x1[n + nc] + x2[n + nc]) & 1;
    return c;
}

std::vector<std::complex<float>> lte_grid::make_pss(int n_id2)
{
    if (n_id2 < 0 || n_id2 > 2)
        throw std::invalid_argument("mimodet: PSS N_ID2 must be 0, 1 or 2");
    static const int roots[3] = { 25, 29, 34 };
    const int u = roots[n_id2];
    std::vector<std::complex<float>> d(62);
    for (int n = 0; n < 62; ++n) {
        const int m = n < 31 ? n * (n + 1) : (n + 1) * (n + 2);
        // exp(-j pi u m / 63) has period 126 in u m: reducing it exactly keeps the
        // phase below 2 pi (a float phase of up to 6600 rad was off by up to 2.3e-4).
        const std::complex<double> v = std::polar(1.0, -M_PI * ((u * m) % 126) / 63.0);
        d[n] = std::complex<float>(v);
    }
    return d;
}

std::vector<std::complex<float>> lte_grid::make_sss(int cell_id, int ns)
{
    if (cell_id < 0 || cell_id > 503)
        throw std::invalid_argument("mimodet: cell id must be 0..503");
    if (ns != 0 && ns != 10)
        throw std::invalid_argument("mimodet: the SSS is sent in slots 0 and 10 only");
    const int n_id1 = cell_id / 3, n_id2 = cell_id % 3;
    const int qp = n_id1 / 30;
    const int q = (n_id1 + qp * (qp + 1) / 2) / 30;
    const int mp = n_id1 + q * (q + 1) / 2;
    const int m0 = mp % 31, m1 = (m0 + mp / 31 + 1) % 31;
    // The three m-sequences of 36.211 6.11.2.1, as +-1.
    auto msequence = [](int taps_mask) {
        int x[31] = { 0, 0, 0, 0, 1 };
        for (int i = 0; i + 5 < 31; ++i) {
            int v = 0;
            for (int t = 0; t < 5; ++t)
                if (taps_mask & (1 << t))
                    v += x[i + t];
            x[i + 5] = v & 1;
        }
        std::vector<int> s(31);
        for (int i = 0; i < 31; ++i)
            s[i] = 1 - 2 * x[i];
        return s;
    };
    const auto st = msequence((1 << 2) | 1);                       // x(i+2) + x(i)
    const auto ct = msequence((1 << 3) | 1);                       // x(i+3) + x(i)
    const auto zt = msequence((1 << 4) | (1 << 2) | (1 << 1) | 1); // x(i+4)+x(i+2)+x(i+1)+x(i)
    std::vector<std::complex<float>> d(62);
    for (int n = 0; n < 31; ++n) {
        const int s0 = st[(n + m0) % 31], s1 = st[(n + m1) % 31];
        const int c0 = ct[(n + n_id2) % 31], c1 = ct[(n + n_id2 + 3) % 31];
        const int z0 = zt[(n + (m0 % 8)) % 31], z1 = zt[(n + (m1 % 8)) % 31];
        if (ns == 0) {
            d[2 * n] = static_cast<float>(s0 * c0);
            d[2 * n + 1] = static_cast<float>(s1 * c1 * z0);
        } else {
            d[2 * n] = static_cast<float>(s1 * c0);
            d[2 * n + 1] = static_cast<float>(s0 * c1 * z1);
        }
    }
    return d;
}

lte_grid::lte_grid(const lte_numerology& num, int n_ports, int cell_id)
    : d_num(num), d_ports(n_ports), d_cell_id(cell_id)
{
    if (n_ports != 1 && n_ports != 2 && n_ports != 4)
        throw std::invalid_argument("mimodet: antenna ports must be 1, 2 or 4, got " +
                                    std::to_string(n_ports));
    if (cell_id < 0 || cell_id > 503)
        throw std::invalid_argument("mimodet: cell id must be 0..503, got " +
                                    std::to_string(cell_id));
    const int n_sc = num.n_sc, L = lte_numerology::symbols_per_slot;
    const int S = lte_numerology::slots_per_frame;
    d_kind.assign(static_cast<size_t>(S) * n_ports * L * n_sc, re_kind::data);
    d_crs.assign(d_kind.size(), { 0.0f, 0.0f });
    d_data.resize(S);
    d_crs_res.resize(static_cast<size_t>(S) * n_ports);
    const int v_shift = cell_id % 6;
    const float a = static_cast<float>(1.0 / std::sqrt(2.0));

    for (int ns = 0; ns < S; ++ns) {
        // CRS positions of every port (36.211 6.10.1.2).
        for (int p = 0; p < n_ports; ++p) {
            const int symbols[2] = { 0, L - 3 };
            const int n_l = p < 2 ? 2 : 1;
            for (int li = 0; li < n_l; ++li) {
                const int l = p < 2 ? symbols[li] : 1;
                int v;
                if (p == 0)
                    v = l == 0 ? 0 : 3;
                else if (p == 1)
                    v = l == 0 ? 3 : 0;
                else if (p == 2)
                    v = 3 * (ns % 2);
                else
                    v = 3 + 3 * (ns % 2);
                const uint32_t c_init =
                    (1u << 10) * (7 * (ns + 1) + l + 1) * (2 * cell_id + 1) + 2 * cell_id + 1;
                const auto c = gold_sequence(c_init, 4 * k_max_rb);
                for (int m = 0; m < 2 * num.n_rb; ++m) {
                    const int k = 6 * m + (v + v_shift) % 6;
                    const int mp = m + k_max_rb - num.n_rb;
                    const std::complex<float> r(a * (1 - 2 * c[2 * mp]),
                                                a * (1 - 2 * c[2 * mp + 1]));
                    // This port sends it; every other port leaves the element empty.
                    for (int q = 0; q < n_ports; ++q)
                        d_kind[index(ns, q, l, k)] = q == p ? re_kind::crs : re_kind::empty;
                    d_crs[index(ns, p, l, k)] = r;
                }
            }
        }
        // PSS/SSS with their guards (all ports: only port 0 transmits them).
        if (has_sync(ns)) {
            for (int k = n_sc / 2 - k_sync_half_width; k < n_sc / 2 + k_sync_half_width; ++k) {
                const int n = k - n_sc / 2 + 31;
                const bool inside = n >= 0 && n < 62;
                for (int p = 0; p < n_ports; ++p) {
                    d_kind[index(ns, p, pss_symbol, k)] = inside ? re_kind::pss : re_kind::guard;
                    d_kind[index(ns, p, sss_symbol, k)] = inside ? re_kind::sss : re_kind::guard;
                }
            }
        }
        for (int l = 0; l < L; ++l)
            for (int k = 0; k < n_sc; ++k) {
                if (d_kind[index(ns, 0, l, k)] == re_kind::data)
                    d_data[ns].push_back(l * n_sc + k);
                for (int p = 0; p < n_ports; ++p)
                    if (d_kind[index(ns, p, l, k)] == re_kind::crs)
                        d_crs_res[ns * n_ports + p].push_back(l * n_sc + k);
            }
    }
    d_pss = make_pss(cell_id % 3);
    d_sss0 = make_sss(cell_id, 0);
    d_sss10 = make_sss(cell_id, 10);
}

int lte_grid::index(int ns, int port, int l, int k) const
{
    return ((ns * d_ports + port) * lte_numerology::symbols_per_slot + l) * d_num.n_sc + k;
}

re_kind lte_grid::kind(int ns, int port, int l, int k) const
{
    return d_kind[index(ns, port, l, k)];
}

const std::vector<int>& lte_grid::data_elements(int ns) const { return d_data.at(ns); }

std::complex<float> lte_grid::crs_value(int ns, int port, int l, int k) const
{
    return d_crs[index(ns, port, l, k)];
}

const std::vector<int>& lte_grid::crs_elements(int ns, int port) const
{
    return d_crs_res.at(static_cast<size_t>(ns) * d_ports + port);
}

const std::vector<std::complex<float>>& lte_grid::sss(int ns) const
{
    if (ns == 0)
        return d_sss0;
    if (ns == 10)
        return d_sss10;
    throw std::invalid_argument("mimodet: the SSS is sent in slots 0 and 10 only");
}

} // namespace mimodet
} // namespace gr
