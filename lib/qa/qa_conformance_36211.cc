/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Conformance with 3GPP TS 36.211 (FDD, normal cyclic prefix): the library's PSS, SSS,
// CRS, resource-element map, QAM maps, OFDM bin placement and transmitted time signal
// against reference values computed here from the specification's formulas and tables.
//
// The namespace `spec` below is written from the text of 36.211 alone and calls nothing
// of the library, so that a mistake in the engines is not repeated in the expected values.
// A few values are also stored as literals (k_stored_*), computed once by a separate
// numpy script (quoted at those literals), so that a change made in both the library
// and this file's formula code would still be caught.
//
// Where the library follows a convention that 36.211 leaves open, the test uses the one
// documented in docs/SLOT_LAYOUT.md ("Conformance with 36.211"): a unitary IFFT
// (1/sqrt(N)) for the OFDM signal of 6.12, PSS and SSS sent on antenna port 0, unit
// power (beta = 1) for every signal, data on every element that carries no reference
// or synchronisation signal (no control channels or PBCH).

#include "phy/lte_sync.h"
#include "phy/slot_mapper.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <gnuradio/blocks/vector_sink.h>
#include <gnuradio/blocks/vector_source.h>
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/mimodet/slot_framer.h>
#include <gnuradio/top_block.h>
#include <gtest/gtest.h>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace gr::mimodet;
using cf = std::complex<float>;
using cd = std::complex<double>;

namespace spec {

constexpr double k_pi = 3.14159265358979323846;
constexpr int n_rb_max = 110; // N_RB^max,DL (6.2.1)
constexpr int n_symb = 7;     // N_symb^DL, normal cyclic prefix (Table 6.2.3-1)
constexpr int n_cp = 1;       // N_CP in c_init of the CRS: 1 for the normal CP (6.10.1.1)
constexpr int n_slots = 20;   // slots of a radio frame (frame structure type 1, 4.1)
constexpr int n_rbs[] = { 6, 15, 25, 50, 75, 100 }; // 1.4 .. 20 MHz (36.104 Table 5.6-1)
constexpr double mhz[] = { 1.4, 3, 5, 10, 15, 20 };

// 7.2: pseudo-random sequence, length-31 Gold sequence with N_c = 1600;
// x1(0) = 1, x1(n) = 0 for n = 1..30; c_init = sum_i x2(i) 2^i.
std::vector<int> c(uint32_t c_init, int len)
{
    const int nc = 1600;
    std::vector<int> x1(nc + len + 31, 0), x2(nc + len + 31, 0), out(len);
    x1[0] = 1;
    for (int i = 0; i < 31; ++i)
        x2[i] = (c_init >> i) & 1;
    for (int n = 0; n + 31 < nc + len + 31; ++n) {
        x1[n + 31] = (x1[n + 3] + x1[n]) % 2;
        x2[n + 31] = (x2[n + 3] + x2[n + 2] + x2[n + 1] + x2[n]) % 2;
    }
    for (int n = 0; n < len; ++n)
        out[n] = (x1[n + nc] + x2[n + nc]) % 2;
    return out;
}

// 6.11.1.1: Zadoff-Chu sequence of root u (Table 6.11.1.1-1: 25, 29, 34 for N_ID2 0..2).
std::vector<cd> pss(int n_id2)
{
    const int roots[3] = { 25, 29, 34 };
    const double u = roots[n_id2];
    std::vector<cd> d(62);
    for (int n = 0; n <= 30; ++n)
        d[n] = std::polar(1.0, -k_pi * u * n * (n + 1) / 63.0);
    for (int n = 31; n <= 61; ++n)
        d[n] = std::polar(1.0, -k_pi * u * (n + 1) * (n + 2) / 63.0);
    return d;
}

// 6.11.2.1: the three length-31 sequences s~, c~, z~ = 1 - 2 x(i) with
// x(0..3) = 0, x(4) = 1 and the recursion given by the taps (x(i+5) = sum x(i+t)).
std::vector<int> tilde(std::initializer_list<int> taps)
{
    std::vector<int> x(31, 0);
    x[4] = 1;
    for (int i = 0; i + 5 < 31; ++i) {
        int v = 0;
        for (int t : taps)
            v += x[i + t];
        x[i + 5] = v % 2;
    }
    std::vector<int> s(31);
    for (int i = 0; i < 31; ++i)
        s[i] = 1 - 2 * x[i];
    return s;
}

// 6.11.2.1: d(0..61) of the SSS in subframe 0 (slot 0) or subframe 5 (slot 10).
std::vector<int> sss(int cell_id, int ns)
{
    const int n_id1 = cell_id / 3, n_id2 = cell_id % 3;
    const int q_prime = n_id1 / 30;
    const int q = (n_id1 + q_prime * (q_prime + 1) / 2) / 30;
    const int m_prime = n_id1 + q * (q + 1) / 2;
    const int m0 = m_prime % 31;
    const int m1 = (m0 + m_prime / 31 + 1) % 31;
    static const auto s_t = tilde({ 2, 0 }); // x(i+5) = x(i+2) + x(i)
    static const auto c_t = tilde({ 3, 0 }); // x(i+5) = x(i+3) + x(i)
    static const auto z_t =
        tilde({ 4, 2, 1, 0 }); // x(i+5) = x(i+4) + x(i+2) + x(i+1) + x(i)
    std::vector<int> d(62);
    for (int n = 0; n <= 30; ++n) {
        const int s0 = s_t[(n + m0) % 31], s1 = s_t[(n + m1) % 31];
        const int c0 = c_t[(n + n_id2) % 31], c1 = c_t[(n + n_id2 + 3) % 31];
        const int z1_m0 = z_t[(n + m0 % 8) % 31], z1_m1 = z_t[(n + m1 % 8) % 31];
        const bool subframe0 = ns == 0;
        d[2 * n] = subframe0 ? s0 * c0 : s1 * c0;
        d[2 * n + 1] = subframe0 ? s1 * c1 * z1_m0 : s0 * c1 * z1_m1;
    }
    return d;
}

// 6.10.1.1: c_init of the CRS in slot ns, symbol l.
uint32_t crs_c_init(int cell_id, int ns, int l)
{
    return (1u << 10) * static_cast<uint32_t>(7 * (ns + 1) + l + 1) *
               static_cast<uint32_t>(2 * cell_id + 1) +
           static_cast<uint32_t>(2 * cell_id + n_cp);
}

// 6.10.1.1: r(m), m = 0 .. 2 N_RB^max - 1.
std::vector<cd> crs_r(int cell_id, int ns, int l)
{
    const auto cc = c(crs_c_init(cell_id, ns, l), 4 * n_rb_max);
    const double a = 1.0 / std::sqrt(2.0);
    std::vector<cd> r(2 * n_rb_max);
    for (int m = 0; m < 2 * n_rb_max; ++m)
        r[m] = cd(a * (1 - 2 * cc[2 * m]), a * (1 - 2 * cc[2 * m + 1]));
    return r;
}

// 6.10.1.2: the symbols l of port p and the offset v.
std::vector<int> crs_symbols(int p)
{
    if (p < 2)
        return { 0, n_symb - 3 };
    return { 1 };
}
int crs_v(int p, int ns, int l)
{
    switch (p) {
    case 0:
        return l == 0 ? 0 : 3;
    case 1:
        return l == 0 ? 3 : 0;
    case 2:
        return 3 * (ns % 2);
    default:
        return 3 + 3 * (ns % 2);
    }
}

// 7.1.2 Table 7.1.2-1, 7.1.3 Table 7.1.3-1, 7.1.4 Table 7.1.4-1: (I, Q) before the
// normalisation, row by row (label b(i) b(i+1) ... read as a binary number).
const int k_qpsk[4][2] = { { 1, 1 }, { 1, -1 }, { -1, 1 }, { -1, -1 } };
const int k_16qam[16][2] = { { 1, 1 },   { 1, 3 },   { 3, 1 },   { 3, 3 },
                             { 1, -1 },  { 1, -3 },  { 3, -1 },  { 3, -3 },
                             { -1, 1 },  { -1, 3 },  { -3, 1 },  { -3, 3 },
                             { -1, -1 }, { -1, -3 }, { -3, -1 }, { -3, -3 } };
const int k_64qam[64][2] = {
    { 3, 3 },   { 3, 1 },   { 1, 3 },   { 1, 1 },   { 3, 5 },   { 3, 7 },   { 1, 5 },
    { 1, 7 },   { 5, 3 },   { 5, 1 },   { 7, 3 },   { 7, 1 },   { 5, 5 },   { 5, 7 },
    { 7, 5 },   { 7, 7 },   { 3, -3 },  { 3, -1 },  { 1, -3 },  { 1, -1 },  { 3, -5 },
    { 3, -7 },  { 1, -5 },  { 1, -7 },  { 5, -3 },  { 5, -1 },  { 7, -3 },  { 7, -1 },
    { 5, -5 },  { 5, -7 },  { 7, -5 },  { 7, -7 },  { -3, 3 },  { -3, 1 },  { -1, 3 },
    { -1, 1 },  { -3, 5 },  { -3, 7 },  { -1, 5 },  { -1, 7 },  { -5, 3 },  { -5, 1 },
    { -7, 3 },  { -7, 1 },  { -5, 5 },  { -5, 7 },  { -7, 5 },  { -7, 7 },  { -3, -3 },
    { -3, -1 }, { -1, -3 }, { -1, -1 }, { -3, -5 }, { -3, -7 }, { -1, -5 }, { -1, -7 },
    { -5, -3 }, { -5, -1 }, { -7, -3 }, { -7, -1 }, { -5, -5 }, { -5, -7 }, { -7, -5 },
    { -7, -7 }
};
cd qam(int q, int label)
{
    const int* iq = q == 2 ? k_qpsk[label] : q == 4 ? k_16qam[label] : k_64qam[label];
    const double norm = q == 2   ? std::sqrt(2.0)
                        : q == 4 ? std::sqrt(10.0)
                                 : std::sqrt(42.0);
    return cd(iq[0] / norm, iq[1] / norm);
}

// 6.12: frequency (in subcarrier spacings) of resource element k: the negative
// frequencies -n_sc/2 .. -1 carry k(-) = k + n_sc/2, the positive 1 .. n_sc/2 carry
// k(+) = k + n_sc/2 - 1; DC (0) carries nothing.
int freq(int k, int n_sc) { return k < n_sc / 2 ? k - n_sc / 2 : k - n_sc / 2 + 1; }

// 6.12 (normal CP): N_CP,l = 160 for l = 0 and 144 for l = 1..6, in units of
// T_s = 1 / (15000 x 2048) s; with N-point sampling, N / 2048 samples per T_s.
int cp_samples(int l, int fft_size) { return (l == 0 ? 160 : 144) * fft_size / 2048; }

//! The CRS of one cell for every slot and CRS symbol (they do not depend on N_RB).
struct cell_crs {
    int cell_id;
    std::vector<cd> r[n_slots][n_symb]; //!< empty where the symbol has no CRS
    explicit cell_crs(int id) : cell_id(id)
    {
        for (int ns = 0; ns < n_slots; ++ns)
            for (int l : { 0, 1, n_symb - 3 })
                r[ns][l] = crs_r(id, ns, l);
    }
};

//! What 36.211 puts in one slot of a cell with n_ports CRS ports (6.10.1.2, 6.11.1.2,
//! 6.11.2.2); element index l * n_sc + k as in the library's grids.
struct slot_map {
    int n_sc, n_ports;
    std::vector<re_kind> kind; //!< [port][l][k]
    std::vector<cd> value;     //!< [port][l][k]: CRS, PSS, SSS values; 0 elsewhere
    std::vector<int> data;     //!< data elements (6.3.5 order: k first, then l)
    std::vector<std::vector<int>> crs; //!< per port: CRS elements, increasing index
    size_t at(int p, int l, int k) const
    {
        return (static_cast<size_t>(p) * n_symb + l) * n_sc + k;
    }
};

slot_map make_slot(int n_rb, int n_ports, const cell_crs& cr, int ns)
{
    slot_map s;
    const int n_sc = 12 * n_rb;
    s.n_sc = n_sc;
    s.n_ports = n_ports;
    const size_t size = static_cast<size_t>(n_ports) * n_symb * n_sc;
    s.kind.assign(size, re_kind::data);
    s.value.assign(size, cd(0, 0));
    s.crs.resize(n_ports);
    const int v_shift = cr.cell_id % 6;
    for (int p = 0; p < n_ports; ++p)
        for (int l : crs_symbols(p))
            for (int m = 0; m < 2 * n_rb; ++m) {
                const int k = 6 * m + (crs_v(p, ns, l) + v_shift) % 6;
                const int m_prime = m + n_rb_max - n_rb;
                // "Resource elements used for reference signal transmission on any of
                // the antenna ports in a slot shall not be used for any transmission on
                // any other antenna port in the same slot and set to zero."
                for (int q = 0; q < n_ports; ++q)
                    s.kind[s.at(q, l, k)] = q == p ? re_kind::crs : re_kind::empty;
                s.value[s.at(p, l, k)] = cr.r[ns][l][m_prime];
            }
    // Frame structure type 1: PSS in the last symbol, SSS in the one before, of slots
    // 0 and 10; k = n - 31 + n_sc / 2, n = 0..61; n = -5..-1 and 62..66 reserved.
    if (ns == 0 || ns == 10) {
        const auto d_pss = pss(cr.cell_id % 3);
        const auto d_sss = sss(cr.cell_id, ns);
        for (int n = -5; n <= 66; ++n) {
            const int k = n - 31 + n_sc / 2;
            const bool used = n >= 0 && n <= 61;
            for (int p = 0; p < n_ports; ++p) {
                s.kind[s.at(p, n_symb - 1, k)] = used ? re_kind::pss : re_kind::guard;
                s.kind[s.at(p, n_symb - 2, k)] = used ? re_kind::sss : re_kind::guard;
            }
            if (used) {
                s.value[s.at(0, n_symb - 1, k)] = d_pss[n];
                s.value[s.at(0, n_symb - 2, k)] = d_sss[n];
            }
        }
    }
    for (int p = 0; p < n_ports; ++p)
        for (int l = 0; l < n_symb; ++l)
            for (int k = 0; k < n_sc; ++k)
                if (s.kind[s.at(p, l, k)] == re_kind::crs)
                    s.crs[p].push_back(l * n_sc + k);
    for (int l = 0; l < n_symb; ++l)
        for (int k = 0; k < n_sc; ++k)
            if (s.kind[s.at(0, l, k)] == re_kind::data)
                s.data.push_back(l * n_sc + k);
    return s;
}

//! Port p's grid of a slot with data: data element j carries on port p the symbol of
//! bits [(j n_ports + p) q, (j n_ports + p + 1) q), b(0) first (docs/SLOT_LAYOUT.md).
std::vector<cd> port_grid(const slot_map& s, int p, int q, const uint8_t* bits)
{
    std::vector<cd> g(s.value.begin() + s.at(p, 0, 0),
                      s.value.begin() + s.at(p, 0, 0) + n_symb * s.n_sc);
    for (size_t j = 0; j < s.data.size(); ++j) {
        const uint8_t* b = bits + (j * s.n_ports + p) * q;
        int label = 0;
        for (int i = 0; i < q; ++i)
            label = 2 * label + b[i];
        g[s.data[j]] = qam(q, label);
    }
    return g;
}

//! 6.12 time signal of one slot of one port (unitary scaling 1/sqrt(N)): symbol l is
//! s_l(n) = N^-1/2 sum_k a(k, l) exp(j 2 pi freq(k) (n - N_CP,l) / N),
//! n = 0 .. N_CP,l + N - 1, the symbols one after the other.
std::vector<cd> slot_signal(const std::vector<cd>& grid, int n_sc, int fft_size)
{
    std::vector<cd> tw(fft_size);
    for (int i = 0; i < fft_size; ++i)
        tw[i] = std::polar(1.0, 2.0 * k_pi * i / fft_size);
    const double scale = 1.0 / std::sqrt(static_cast<double>(fft_size));
    std::vector<cd> out;
    for (int l = 0; l < n_symb; ++l) {
        const int cp = cp_samples(l, fft_size);
        std::vector<cd> s(cp + fft_size, cd(0, 0));
        for (int k = 0; k < n_sc; ++k) {
            const cd a = grid[l * n_sc + k];
            if (a == cd(0, 0))
                continue;
            // exp(j 2 pi f (n - cp) / N) = tw[f (n - cp) mod N], stepping n.
            const int f = freq(k, n_sc);
            const int step = (f % fft_size + fft_size) % fft_size;
            int idx = static_cast<int>(
                ((-static_cast<long>(f) * cp) % fft_size + fft_size) % fft_size);
            for (auto& v : s) {
                v += a * tw[idx];
                idx += step;
                if (idx >= fft_size)
                    idx -= fft_size;
            }
        }
        for (const auto& v : s)
            out.push_back(v * scale);
    }
    return out;
}

} // namespace spec

namespace {

// Values of 36.211 stored as literals, computed once with numpy by this script, which
// jumps the Gold sequence's registers by N_c = 1600 with a GF(2) matrix power (not the
// recursion that spec::c and the library step through):
//
//   import numpy as np
//   def lfsr(taps):   # state (x(n)..x(n+30)) -> (x(n+1)..x(n+31))
//       A = np.zeros((31, 31), dtype=np.int64)
//       for i in range(30): A[i, i + 1] = 1
//       for t in taps: A[30, t] = 1
//       return A
//   def mpow(A, n):
//       R = np.eye(31, dtype=np.int64)
//       while n:
//           if n & 1: R = R @ A % 2
//           A = A @ A % 2; n >>= 1
//       return R
//   A1, A2 = lfsr([0, 3]), lfsr([0, 1, 2, 3])
//   def gold(ci, n):
//       s1 = np.zeros(31, dtype=np.int64); s1[0] = 1
//       s2 = np.array([(ci >> i) & 1 for i in range(31)])
//       s1, s2 = mpow(A1, 1600) @ s1 % 2, mpow(A2, 1600) @ s2 % 2
//       out = []
//       for _ in range(n):
//           out.append((s1[0] + s2[0]) % 2); s1, s2 = A1 @ s1 % 2, A2 @ s2 % 2
//       return out
//   def pss(u):
//       n = np.arange(62)
//       return np.where(n < 31, np.exp(-1j * np.pi * u * n * (n + 1) / 63),
//                       np.exp(-1j * np.pi * u * (n + 1) * (n + 2) / 63))
//   # SSS: the m0, m1, s~, c~, z~ of 6.11.2.1 with numpy index arithmetic
//   # (d[0::2], d[1::2] = s0 * c0, s1 * c1 * z0 or s1 * c0, s0 * c1 * z1); CRS: gold()
//   # above with c_init of 6.10.1.1 and k = 6 m + (v + v_shift) mod 6; time PSS:
//   # (d[None, :] * np.exp(2j * np.pi * np.outer(t, f) / N)).sum(1) / np.sqrt(N), f the
//   # subcarrier frequencies -31..-1, 1..31.

struct stored_gold {
    uint32_t c_init;
    const char* bits; //!< c(0..31)
};
const stored_gold k_stored_gold[] = {
    { 24579, "11100100011100101011111011011101" },     // CRS of cell 1, slot 0, l = 0
    { 149520367, "01001100111011111011101101010111" }, // CRS of cell 503, slot 19, l = 4
};

struct stored_pss {
    int n_id2;
    int n;
    double re, im;
};
const stored_pss k_stored_pss[] = {
    { 0, 0, 1.000000000, 0.000000000 },   { 0, 1, -0.797132507, -0.603804410 },
    { 0, 2, 0.365341024, -0.930873749 },  { 0, 30, -0.988830826, 0.149042266 },
    { 0, 31, -0.988830826, 0.149042266 }, { 0, 32, -0.733051872, 0.680172738 },
    { 0, 61, 1.000000000, 0.000000000 },  { 1, 1, -0.969077286, -0.246757398 },
    { 1, 2, -0.733051872, -0.680172738 }, { 1, 30, 0.955572806, -0.294755174 },
    { 1, 32, 0.074730094, -0.997203797 }, { 2, 1, -0.969077286, 0.246757398 },
    { 2, 2, -0.733051872, 0.680172738 },  { 2, 30, 0.955572806, 0.294755174 },
    { 2, 32, 0.074730094, 0.997203797 },
};

//! Time-domain PSS (N_ID2 = 1) at 1.4 MHz (N = 128), samples n of the symbol without CP.
const stored_pss k_stored_pss_time[] = {
    { 1, 0, -0.603123751, 0.369109389 },  { 1, 1, -0.284210978, 0.029104213 },
    { 1, 2, 0.353285647, -0.524317485 },  { 1, 3, 0.743555737, -0.506423111 },
    { 1, 64, 0.407347801, -0.488584996 }, { 1, 127, -0.284210978, 0.029104213 },
};

struct stored_sss {
    int cell_id, ns;
    const char* d; //!< d(0..61) as signs
};
const stored_sss k_stored_sss[] = {
    { 0, 0, "+++-+++++-++------+-++++-+++------+--+-+--++-++-++++-+---++++-" },
    { 0, 10, "+++-++-+-++++-+++-+--++-+-++-----+-----++++-++-++-+-+++-++----" },
    { 1, 0, "+-+++----+-++-++-++----+-+------+-+----+-+-+---++--++-++-+-+--" },
    { 250, 10, "++-++-+-++--+---+--++-++---+-+++-++++++-++-+++-+-+-++++---+--+" },
    { 503, 0, "+-+++-++---+--+-+-++--+------+++-----+++-++-+-+--+-+--+-+-+-+-" },
    { 503, 10, "-+----++++--+++++-+--+-+----+-+-+-+--+++++---+--++---+++-+--+-" },
};

struct stored_crs {
    int cell_id, n_rb, port, ns, l;
    int k0;            //!< subcarrier of the first CRS element
    const char* signs; //!< first 8 values, real and imaginary sign of each
};
const stored_crs k_stored_crs[] = {
    { 0, 6, 0, 0, 0, 0, "-+-+-+++ +--+-++-" },
    { 503, 100, 3, 19, 1, 5, "-+-+++++ ++++-+-+" },
    { 101, 25, 1, 7, 4, 5, "++-+---+ +--+---+" },
};

//! Counts comparisons and reports the first few mismatches (the grids are large).
class tally
{
public:
    explicit tally(std::string what) : d_what(std::move(what)) {}
    ~tally()
    {
        if (d_bad > k_report)
            ADD_FAILURE() << d_what << ": " << d_bad - k_report << " more mismatches";
        EXPECT_GT(d_n, 0) << d_what << ": nothing compared";
        std::printf("[ conformance ] %s: %ld values compared, %ld mismatches\n",
                    d_what.c_str(),
                    d_n,
                    d_bad);
    }
    template <typename F>
    void check(bool ok, F&& where)
    {
        ++d_n;
        if (!ok && ++d_bad <= k_report)
            ADD_FAILURE() << d_what << ": " << where();
    }
    //! where: a callable giving the element's description (only built on a mismatch).
    template <typename F>
    void near(cd got, cd want, double tol, F&& where)
    {
        check(std::abs(got - want) <= tol, [&] {
            std::ostringstream s;
            s << where() << ": got " << got << ", 36.211 gives " << want;
            return s.str();
        });
    }
    long compared() const { return d_n; }

private:
    static constexpr long k_report = 10;
    std::string d_what;
    long d_n = 0, d_bad = 0;
};

std::string at(int ns, int p, int l, int k)
{
    return "ns " + std::to_string(ns) + " port " + std::to_string(p) + " l " +
           std::to_string(l) + " k " + std::to_string(k);
}

//! Cells of the CRS and grid tests: the ids named in the issue and four drawn with a
//! fixed seed (std::mt19937's output is the same on every platform).
std::vector<int> test_cells()
{
    std::vector<int> ids = { 0, 1, 7, 101, 251, 503 };
    std::mt19937 rng(36211);
    for (int i = 0; i < 4; ++i)
        ids.push_back(static_cast<int>(rng() % 504));
    return ids;
}

const char* kind_name(re_kind k)
{
    static const char* names[] = { "data", "crs", "empty", "pss", "sss", "guard" };
    return names[static_cast<int>(k)];
}

//! The three modulations with their bits per symbol q.
const struct {
    modulation mod;
    int q;
} k_mods[] = { { modulation::qpsk, 2 },
               { modulation::qam16, 4 },
               { modulation::qam64, 6 } };

// Precision of the library's single-precision tables: a unit-magnitude value stored as
// float is within about 1e-7 of the exact one.
constexpr double k_tol = 2e-6;

} // namespace

TEST(conformance_36211, numerology)
{
    tally t("numerology (6.2.3, 6.12)");
    for (int b = 0; b < 6; ++b) {
        const auto num = lte_numerology::from_bandwidth(spec::mhz[b]);
        t.check(num.n_rb == spec::n_rbs[b],
                [&] { return "N_RB at " + std::to_string(b); });
        t.check(num.n_sc == 12 * spec::n_rbs[b], [&] { return "n_sc"; });
        t.check(std::abs(num.sample_rate - 15000.0 * num.fft_size) < 1e-6,
                [&] { return "sample rate"; });
        for (int l = 0; l < spec::n_symb; ++l)
            t.check(num.cp_length(l) == spec::cp_samples(l, num.fft_size),
                    [&] { return "CP of symbol " + std::to_string(l); });
        // 15360 T_s per slot.
        t.check(num.slot_samples() * 2048 == 15360 * num.fft_size,
                [&] { return "slot length"; });
    }
}

TEST(conformance_36211, gold_sequence)
{
    tally t("c(n) (7.2)");
    // The stored values against both the formula code here and the library.
    for (const auto& s : k_stored_gold) {
        const auto want = spec::c(s.c_init, 32);
        const auto lib = lte_grid::gold_sequence(s.c_init, 32);
        for (int n = 0; n < 32; ++n) {
            const int stored = s.bits[n] - '0';
            t.check(want[n] == stored, [&] { return "spec::c, n " + std::to_string(n); });
            t.check(lib[n] == stored, [&] { return "library, n " + std::to_string(n); });
        }
    }
    // Long sequences for CRS and random c_init values (31 bits).
    std::mt19937 rng(7);
    std::vector<uint32_t> inits = { 0, 1, 0x7fffffffu, spec::crs_c_init(0, 0, 0) };
    for (int i = 0; i < 12; ++i)
        inits.push_back(rng() & 0x7fffffffu);
    for (uint32_t ci : inits) {
        const auto want = spec::c(ci, 5000);
        const auto lib = lte_grid::gold_sequence(ci, 5000);
        for (int n = 0; n < 5000; ++n)
            t.check(lib[n] == want[n], [&] {
                return "c_init " + std::to_string(ci) + ", n " + std::to_string(n);
            });
    }
}

TEST(conformance_36211, pss)
{
    tally seq("PSS d_u(n) (6.11.1.1)");
    for (const auto& s : k_stored_pss)
        seq.near(spec::pss(s.n_id2)[s.n], cd(s.re, s.im), 1e-8, [&] {
            return "spec::pss stored, N_ID2 " + std::to_string(s.n_id2);
        });
    for (int id2 = 0; id2 < 3; ++id2) {
        const auto want = spec::pss(id2);
        const auto lib = lte_grid::make_pss(id2);
        ASSERT_EQ(lib.size(), 62u);
        for (int n = 0; n < 62; ++n)
            seq.near(cd(lib[n]), want[n], k_tol, [&] {
                return "N_ID2 " + std::to_string(id2) + ", n " + std::to_string(n);
            });
    }
    for (const auto& s : k_stored_pss)
        seq.near(cd(lte_grid::make_pss(s.n_id2)[s.n]), cd(s.re, s.im), k_tol, [&] {
            return "library stored, N_ID2 " + std::to_string(s.n_id2);
        });

    // The time-domain PSS symbol the receiver correlates with (6.12 without the CP).
    tally time("PSS time symbol (6.12)");
    for (int b = 0; b < 6; ++b) {
        const auto num = lte_numerology::from_bandwidth(spec::mhz[b]);
        for (int id2 = 0; id2 < 3; ++id2) {
            std::vector<cd> grid(spec::n_symb * num.n_sc, cd(0, 0));
            const auto d = spec::pss(id2);
            for (int n = 0; n < 62; ++n)
                grid[(spec::n_symb - 1) * num.n_sc + n - 31 + num.n_sc / 2] = d[n];
            const auto sig = spec::slot_signal(grid, num.n_sc, num.fft_size);
            // Symbol 6 without its CP: the last N samples of the slot.
            const cd* want = sig.data() + sig.size() - num.fft_size;
            const auto lib = lte_sync::pss_symbol(num, id2);
            ASSERT_EQ(static_cast<int>(lib.size()), num.fft_size);
            for (int n = 0; n < num.fft_size; ++n)
                time.near(cd(lib[n]), want[n], 1e-5, [&] {
                    return std::to_string(spec::mhz[b]) + " MHz, N_ID2 " +
                           std::to_string(id2) + ", n " + std::to_string(n);
                });
        }
    }
    const auto num = lte_numerology::from_bandwidth(1.4);
    const auto lib = lte_sync::pss_symbol(num, 1);
    for (const auto& s : k_stored_pss_time)
        time.near(cd(lib[s.n]), cd(s.re, s.im), 1e-5, [&] {
            return "stored, n " + std::to_string(s.n);
        });
}

TEST(conformance_36211, sss_all_cells)
{
    tally seq("SSS d(n) (6.11.2.1), 504 cells x slots 0, 10");
    for (const auto& s : k_stored_sss)
        for (int n = 0; n < 62; ++n) {
            const int stored = s.d[n] == '+' ? 1 : -1;
            seq.check(spec::sss(s.cell_id, s.ns)[n] == stored, [&] {
                return "spec::sss stored, cell " + std::to_string(s.cell_id);
            });
            seq.check(lte_grid::make_sss(s.cell_id, s.ns)[n] == cf(stored, 0), [&] {
                return "library stored, cell " + std::to_string(s.cell_id);
            });
        }
    // Every cell: the sequences, and where slot_mapper puts PSS and SSS in slots 0 and
    // 10 (port 0 only; the other port's elements there are zero).
    tally grid("PSS/SSS in the slot grid (6.11.1.2, 6.11.2.2), 504 cells");
    const auto num = lte_numerology::from_bandwidth(1.4);
    const int n_sc = num.n_sc;
    std::vector<uint8_t> bits(20000, 0);
    for (int cell = 0; cell < 504; ++cell) {
        const lte_grid g(num, 2, cell);
        const core::slot_mapper m(num, 2, modulation::qpsk, cell);
        const auto d_pss = spec::pss(cell % 3);
        for (int ns : { 0, 10 }) {
            const auto want = spec::sss(cell, ns);
            const auto lib = lte_grid::make_sss(cell, ns);
            const auto& lib_g = g.sss(ns);
            for (int n = 0; n < 62; ++n) {
                seq.check(lib[n] == cf(want[n], 0), [&] {
                    return "make_sss cell " + std::to_string(cell) + " ns " +
                           std::to_string(ns) + " n " + std::to_string(n);
                });
                seq.check(lib_g[n] == cf(want[n], 0), [&] {
                    return "lte_grid::sss cell " + std::to_string(cell) + " n " +
                           std::to_string(n);
                });
            }
            std::vector<cf> g0(7 * n_sc), g1(7 * n_sc);
            cf* grids[2] = { g0.data(), g1.data() };
            m.map(ns, bits.data(), grids);
            for (int n = 0; n < 62; ++n) {
                const int k = n - 31 + n_sc / 2;
                const std::string where =
                    "cell " + std::to_string(cell) + " " + at(ns, 0, spec::n_symb - 1, k);
                grid.near(cd(g0[(spec::n_symb - 1) * n_sc + k]), d_pss[n], k_tol, [&] {
                    return "PSS " + where;
                });
                grid.near(cd(g0[(spec::n_symb - 2) * n_sc + k]),
                          cd(want[n], 0),
                          0.0,
                          [&] { return "SSS " + where; });
                grid.near(cd(g1[(spec::n_symb - 1) * n_sc + k]), 0.0, 0.0, [&] {
                    return "port 1 PSS " + where;
                });
                grid.near(cd(g1[(spec::n_symb - 2) * n_sc + k]), 0.0, 0.0, [&] {
                    return "port 1 SSS " + where;
                });
            }
        }
    }
}

TEST(conformance_36211, crs_and_element_map)
{
    // Per cell, bandwidth and number of ports, for all 20 slots: the kind of every
    // element on every port, the CRS element lists and values of ports 0-3, and the data
    // elements in their 36.211 6.3.5 order.
    tally crs("CRS values r(m') (6.10.1.1)");
    tally kinds("element kinds (6.10.1.2, 6.11)");
    tally lists("CRS and data element lists");
    for (const auto& s : k_stored_crs) {
        int b = 0;
        while (spec::n_rbs[b] != s.n_rb)
            ++b;
        const auto num = lte_numerology::from_bandwidth(spec::mhz[b]);
        const lte_grid g(num, 4, s.cell_id);
        const spec::cell_crs cr(s.cell_id);
        std::vector<int> res; // the port's elements in symbol l, increasing k
        for (int idx : g.crs_elements(s.ns, s.port))
            if (idx / num.n_sc == s.l)
                res.push_back(idx);
        ASSERT_GE(res.size(), 8u);
        for (int i = 0; i < 8; ++i) {
            const int idx = res[i];
            const int k = idx % num.n_sc, l = idx / num.n_sc;
            lists.check(l == s.l && k == s.k0 + 6 * i,
                        [&] { return "stored CRS position " + at(s.ns, s.port, l, k); });
            const double a = 1.0 / std::sqrt(2.0);
            const int h = i < 4 ? 0 : 1; // the literal has a space after 4 values
            const cd want(s.signs[2 * i + h] == '+' ? a : -a,
                          s.signs[2 * i + 1 + h] == '+' ? a : -a);
            crs.near(cd(g.crs_value(s.ns, s.port, l, k)), want, k_tol, [&] {
                return "stored CRS " + at(s.ns, s.port, l, k);
            });
            crs.near(cr.r[s.ns][s.l][i + spec::n_rb_max - s.n_rb], want, 1e-12, [&] {
                return "spec::crs_r stored " + at(s.ns, s.port, l, k);
            });
        }
    }
    for (int cell : test_cells()) {
        const spec::cell_crs cr(cell);
        for (int b = 0; b < 6; ++b) {
            const auto num = lte_numerology::from_bandwidth(spec::mhz[b]);
            const int n_sc = num.n_sc;
            for (int n_ports : { 1, 2, 4 }) {
                const lte_grid g(num, n_ports, cell);
                for (int ns = 0; ns < spec::n_slots; ++ns) {
                    const auto s = spec::make_slot(spec::n_rbs[b], n_ports, cr, ns);
                    const auto where = [&](int p, int l, int k) {
                        return "cell " + std::to_string(cell) + ", " +
                               std::to_string(spec::mhz[b]) + " MHz, " +
                               std::to_string(n_ports) + " ports, " + at(ns, p, l, k);
                    };
                    for (int p = 0; p < n_ports; ++p)
                        for (int l = 0; l < spec::n_symb; ++l)
                            for (int k = 0; k < n_sc; ++k) {
                                const re_kind want = s.kind[s.at(p, l, k)];
                                const re_kind got = g.kind(ns, p, l, k);
                                kinds.check(got == want, [&] {
                                    return where(p, l, k) + ": " + kind_name(got) +
                                           ", 36.211 gives " + kind_name(want);
                                });
                                if (want == re_kind::crs && got == want)
                                    crs.near(cd(g.crs_value(ns, p, l, k)),
                                             s.value[s.at(p, l, k)],
                                             k_tol,
                                             [&] { return where(p, l, k); });
                            }
                    for (int p = 0; p < n_ports; ++p)
                        lists.check(g.crs_elements(ns, p) == s.crs[p],
                                    [&] { return "crs_elements, " + where(p, 0, 0); });
                    lists.check(g.data_elements(ns) == s.data,
                                [&] { return "data_elements, " + where(0, 0, 0); });
                }
            }
        }
    }
}

TEST(conformance_36211, qam_maps)
{
    tally t("QAM maps (7.1.2-7.1.4)");
    for (const auto& m : k_mods) {
        const auto& c = constellation::get(m.mod);
        ASSERT_EQ(c.order(), 1 << m.q);
        ASSERT_EQ(static_cast<int>(c.points().size()), 1 << m.q);
        for (int label = 0; label < (1 << m.q); ++label)
            t.near(c.points()[label], spec::qam(m.q, label), 1e-12, [&] {
                return to_string(m.mod) + " label " + std::to_string(label);
            });
    }
}

TEST(conformance_36211, slot_grids_and_ifft_bins)
{
    // slot_mapper's grids (what slot_framer transmits) element by element against the
    // 36.211 slot with the same data bits, and the IFFT bin of every subcarrier (6.12).
    tally grid("slot grids (CRS, PSS, SSS, data, zeros)");
    tally bins("IFFT input bins (6.12)");
    std::mt19937 rng(2026);
    const auto cells = test_cells();
    int config = 0;
    for (int b = 0; b < 6; ++b) {
        const auto num = lte_numerology::from_bandwidth(spec::mhz[b]);
        const int n_sc = num.n_sc, N = num.fft_size;
        for (int n_tx : { 1, 2, 4 }) {
            for (const auto& m : k_mods) {
                const int cell = cells[config++ % cells.size()];
                const spec::cell_crs cr(cell);
                const core::slot_mapper mapper(num, n_tx, m.mod, cell);
                for (int ns = 0; ns < spec::n_slots; ++ns) {
                    const auto s = spec::make_slot(spec::n_rbs[b], n_tx, cr, ns);
                    std::vector<uint8_t> bits(s.data.size() * n_tx * m.q);
                    for (auto& x : bits)
                        x = rng() & 1;
                    ASSERT_EQ(static_cast<int>(bits.size()), mapper.bits_per_slot(ns));
                    std::vector<std::vector<cf>> out(n_tx, std::vector<cf>(7 * n_sc));
                    std::vector<cf*> ptr;
                    for (auto& v : out)
                        ptr.push_back(v.data());
                    mapper.map(ns, bits.data(), ptr.data());
                    for (int p = 0; p < n_tx; ++p) {
                        const auto want = spec::port_grid(s, p, m.q, bits.data());
                        for (int i = 0; i < 7 * n_sc; ++i)
                            grid.near(cd(out[p][i]), want[i], k_tol, [&] {
                                return "cell " + std::to_string(cell) + " " +
                                       to_string(m.mod) + " " +
                                       at(ns, p, i / n_sc, i % n_sc);
                            });
                        if (ns > 1 || m.q != 2)
                            continue;
                        std::vector<cf> in(N);
                        const float scale = 0.5f;
                        for (int l = 0; l < spec::n_symb; ++l) {
                            mapper.symbol_to_bins(out[p].data(), l, scale, in.data());
                            std::vector<cd> expect(N, cd(0, 0));
                            for (int k = 0; k < n_sc; ++k)
                                expect[(spec::freq(k, n_sc) + N) % N] =
                                    double(scale) * want[l * n_sc + k];
                            for (int i = 0; i < N; ++i)
                                bins.near(cd(in[i]), expect[i], k_tol, [&] {
                                    return "bin " + std::to_string(i) + " " +
                                           at(ns, p, l, 0);
                                });
                        }
                    }
                }
            }
        }
    }
}

TEST(conformance_36211, transmitted_time_signal)
{
    // slot_framer's output samples against the 6.12 signal of the 36.211 slots (unitary
    // scaling): every bandwidth, slots 0, 1 and 10 of the first frame (all 20 at 1.4 MHz
    // with 4 ports).
    tally t("slot_framer time signal (6.12)");
    std::mt19937 rng(612);
    const auto cells = test_cells();
    for (int b = 0; b < 6; ++b) {
        const auto num = lte_numerology::from_bandwidth(spec::mhz[b]);
        const int n_tx = b == 0 ? 4 : 2;
        const int cell = cells[(b + 3) % cells.size()];
        const int n_slots = b == 0 ? 20 : 11;
        const int q = b % 2 ? 6 : 4;
        const spec::cell_crs cr(cell);
        std::vector<spec::slot_map> slots;
        std::vector<size_t> offset;
        std::vector<uint8_t> bits;
        for (int ns = 0; ns < n_slots; ++ns) {
            slots.push_back(spec::make_slot(spec::n_rbs[b], n_tx, cr, ns));
            offset.push_back(bits.size());
            for (size_t i = 0; i < slots.back().data.size() * n_tx * q; ++i)
                bits.push_back(rng() & 1);
        }
        auto tb = gr::make_top_block("conformance_36211");
        auto src = gr::blocks::vector_source_b::make(bits);
        auto framer =
            slot_framer::make(spec::mhz[b], n_tx, q == 4 ? "16qam" : "64qam", cell);
        tb->connect(src, 0, framer, 0);
        std::vector<gr::blocks::vector_sink_c::sptr> sinks;
        for (int p = 0; p < n_tx; ++p) {
            sinks.push_back(gr::blocks::vector_sink_c::make());
            tb->connect(framer, p, sinks.back(), 0);
        }
        tb->run();
        const int S = num.slot_samples();
        for (int p = 0; p < n_tx; ++p) {
            const auto& y = sinks[p]->data();
            ASSERT_EQ(static_cast<int>(y.size()), n_slots * S);
            for (int ns = 0; ns < n_slots; ++ns) {
                if (b != 0 && ns != 0 && ns != 1 && ns != 10)
                    continue;
                const auto grid =
                    spec::port_grid(slots[ns], p, q, bits.data() + offset[ns]);
                const auto want = spec::slot_signal(grid, num.n_sc, num.fft_size);
                for (int i = 0; i < S; ++i)
                    t.near(cd(y[static_cast<size_t>(ns) * S + i]), want[i], 1e-5, [&] {
                        return std::to_string(spec::mhz[b]) + " MHz, port " +
                               std::to_string(p) + ", slot " + std::to_string(ns) +
                               ", sample " + std::to_string(i);
                    });
            }
        }
    }
}
