/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// What the lte_sync_*.cc share: the sample types of the synchroniser's interfaces and,
// in lte_sync::detail, the constants and helpers its parts have in common.

#ifndef INCLUDED_MIMODET_LTE_SYNC_COMMON_H
#define INCLUDED_MIMODET_LTE_SYNC_COMMON_H

#include <gnuradio/mimodet/lte_grid.h>
#include <cmath>
#include <complex>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace lte_sync {

using cf = std::complex<float>;
using cd = std::complex<double>;

namespace detail {
constexpr double k_two_pi = 2.0 * M_PI;
constexpr int k_sync_len = 62;

//! printf into a string (the log's messages).
std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));

template <typename T>
bool finite(std::complex<T> z)
{
    return std::isfinite(z.real()) && std::isfinite(z.imag());
}

//! cp_correlation's sum over each CP l of one antenna into s[l]; adding them up in
//! antenna and symbol order gives cp_correlation (slot_sync computes them in parallel).
//! With e, also the energy of the same samples and their copies, (|x(n)|^2 +
//! |x(n+N)|^2) / 2, into e[l]: |s| <= e, and s / e is the correlation coefficient.
void cp_symbol_sums(const lte_numerology& num, const cf* xa, int skip, cd* s, double* e);

//! The CP correlation coefficient of a slot: cp_correlation over the energy of its
//! samples (0 where they hold none). Its magnitude is the slot's, not the input's,
//! level: a burst of noise at full scale weighs no more in the smoothed CFO than a
//! quiet slot, where the plain correlation outweighed the signal's for 80 slots.
cd cp_coefficient(const lte_numerology& num, const std::vector<const cf*>& x, int skip);
} // namespace detail

} // namespace lte_sync
} // namespace mimodet
} // namespace gr

#endif
