/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The transmit side, run once per configuration before any timing.

#ifndef INCLUDED_MIMODET_FLOWGRAPH_BENCH_TRANSMIT_H
#define INCLUDED_MIMODET_FLOWGRAPH_BENCH_TRANSMIT_H

#include "options.h"
#include <gnuradio/gr_complex.h>
#include <memory>
#include <string>
#include <vector>

namespace fg_bench {

struct tx_data {
    std::shared_ptr<std::vector<std::vector<gr_complex>>> rx; //!< per receive antenna
    std::shared_ptr<std::vector<uint8_t>> bits;
    std::vector<size_t> slot_start; //!< bit offset of slot k (k < n_slots)
    std::vector<int> bits_per_ns;
    int items_per_slot = 0, vlen = 0, n_slots = 0;
    double seconds = 0;
};

//! --slots received slots of the configuration (random bits -> slot_framer ->
//! mimo_channel into vector sinks).
tx_data
generate(const options& o, int nt, int nr, const std::string& mod, double snr, bool freq);

} // namespace fg_bench

#endif
