/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_CONSTELLATION_H
#define INCLUDED_MIMODET_CONSTELLATION_H

#include <gnuradio/mimodet/api.h>
#include <complex>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {

enum class modulation { qpsk = 2, qam16 = 4, qam64 = 6 };

//! Parses "qpsk", "16qam", "64qam" (case-insensitive; "qam16"/"qam64" too); throws
//! std::invalid_argument naming the accepted values otherwise.
MIMODET_API modulation parse_modulation(const std::string& name);
MIMODET_API std::string to_string(modulation m);

/*!
 * \brief QPSK/16QAM/64QAM with the bit labels and normalisation of 3GPP TS 36.211 7.1.
 *
 * A symbol's label is the integer b0 b1 ... b(q-1) with b0 as the most significant bit.
 * 36.211's maps are separable: the in-phase part depends on the even bits (b0, b2, b4)
 * and the quadrature part on the odd bits (b1, b3, b5), each a Gray-labelled PAM with
 * sqrt(M) levels. The real-valued detectors use that PAM directly.
 */
class MIMODET_API constellation
{
public:
    static const constellation& get(modulation m);

    modulation mod() const { return d_mod; }
    int bits_per_symbol() const { return d_q; }        //!< q = log2(M)
    int order() const { return 1 << d_q; }             //!< M
    int pam_bits() const { return d_q / 2; }           //!< bits per real dimension
    int pam_order() const { return 1 << (d_q / 2); }   //!< sqrt(M)
    double scale() const { return d_scale; }           //!< 1/sqrt(mean energy of odd-integer grid)

    //! Complex point for a label 0..M-1 (unit mean energy).
    const std::vector<std::complex<double>>& points() const { return d_points; }
    //! PAM level (normalised) for a per-dimension label 0..sqrt(M)-1; the label's bits are
    //! (b0, b2, b4) for the in-phase and (b1, b3, b5) for the quadrature dimension, first
    //! bit most significant.
    const std::vector<double>& pam_levels() const { return d_pam; }
    //! Complex label from the in-phase and quadrature PAM labels.
    int label_from_pam(int i_label, int q_label) const;
    //! Nearest point's label (hard slicer), separable per dimension.
    int slice(std::complex<double> x) const;
    //! Nearest PAM label for a real value (normalised units).
    int slice_pam(double x) const;

private:
    explicit constellation(modulation m);
    modulation d_mod;
    int d_q;
    double d_scale;
    std::vector<std::complex<double>> d_points;
    std::vector<double> d_pam;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CONSTELLATION_H */
