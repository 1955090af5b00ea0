/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_BLOCK_CONFIG_H
#define INCLUDED_MIMODET_BLOCK_CONFIG_H

#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/detector.h>
#include <string>

namespace gr {
namespace mimodet {

/*!
 * \brief The detector configuration named by the blocks' string parameters (GRC's
 * dropdowns, command lines): algorithm, antennas, modulation and backend set, every
 * algorithm parameter left unset (the algorithm's default, detector.h). The caller sets
 * the others on the result; mimo_detector::make() and mimo_receiver::make() check it.
 * \ingroup mimodet
 *
 * \param algorithm "ml", "zf", "mmse", "psd", "fsd", "sfsd" or "mtt".
 * \param n_tx transmit antennas.
 * \param n_rx receive antennas.
 * \param modulation "qpsk", "16qam" or "64qam" (std::invalid_argument otherwise).
 * \param backend "cpu", "cuda" or "auto".
 */
MIMODET_API detector_config block_detector_config(const std::string& algorithm,
                                                  int n_tx,
                                                  int n_rx,
                                                  const std::string& modulation,
                                                  const std::string& backend = "cpu");

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_BLOCK_CONFIG_H */
