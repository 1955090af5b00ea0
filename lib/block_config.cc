/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <gnuradio/mimodet/block_config.h>

namespace gr {
namespace mimodet {

detector_config block_detector_config(const std::string& algorithm,
                                      int n_tx,
                                      int n_rx,
                                      const std::string& modulation,
                                      const std::string& backend)
{
    detector_config cfg;
    cfg.algorithm = algorithm;
    cfg.n_tx = n_tx;
    cfg.n_rx = n_rx;
    cfg.mod = parse_modulation(modulation);
    cfg.backend = parse_backend(backend);
    return cfg;
}

} // namespace mimodet
} // namespace gr
