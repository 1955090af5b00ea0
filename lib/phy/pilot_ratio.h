/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The pilot-to-data power ratio (36.213 rho_A / rho_B, one value for every data element):
// its range and checks, shared by the transmitter (slot_mapper: the CRS amplitude) and
// the receiver (channel_estimation: the scale from the pilots' channel to the data's),
// docs/SLOT_LAYOUT.md.

#ifndef INCLUDED_MIMODET_CORE_PILOT_RATIO_H
#define INCLUDED_MIMODET_CORE_PILOT_RATIO_H

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {
namespace pilot_ratio {

//! The accepted ratios in dB (36.213 P_A and P_B together span about -6 .. +9 dB).
constexpr double k_min_db = -10.0;
constexpr double k_max_db = 10.0;

//! True when ratio_db asks the receiver to estimate the ratio (NaN).
inline bool is_estimate(double ratio_db) { return std::isnan(ratio_db); }

/*!
 * Checks ratio_db: finite and within [k_min_db, k_max_db]; where allow_estimate, NaN
 * (estimate it) too. Throws std::invalid_argument naming who otherwise.
 */
inline double checked_db(double ratio_db, const std::string& who, bool allow_estimate)
{
    if (allow_estimate && is_estimate(ratio_db))
        return ratio_db;
    if (!(std::isfinite(ratio_db) && ratio_db >= k_min_db && ratio_db <= k_max_db)) {
        std::ostringstream msg;
        msg << who << ": pilot_ratio_db must be finite and within [" << k_min_db << ", "
            << k_max_db << "] dB" << (allow_estimate ? " (or NaN: estimate it)" : "")
            << ", got " << ratio_db;
        throw std::invalid_argument(msg.str());
    }
    return ratio_db;
}

//! The CRS amplitude relative to the data's unit mean power: sqrt(10^(ratio_db / 10)).
inline double amplitude(double ratio_db) { return std::pow(10.0, ratio_db / 20.0); }

} // namespace pilot_ratio
} // namespace core
} // namespace mimodet
} // namespace gr

#endif
