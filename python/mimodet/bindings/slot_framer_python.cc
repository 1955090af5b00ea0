/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <pybind11/complex.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gnuradio/block.h>
#include <gnuradio/mimodet/slot_framer.h>

namespace py = pybind11;

void bind_slot_framer(py::module& m)
{
    using slot_framer = gr::mimodet::slot_framer;

    py::class_<slot_framer, gr::block, gr::basic_block, std::shared_ptr<slot_framer>>(
        m,
        "slot_framer",
        "LTE-style MIMO-OFDM transmitter: bits (bytes 0/1) -> n_tx slot streams, time "
        "samples or grids (freq_domain), 'slot' tags; see docs/SLOT_LAYOUT.md.")
        .def(py::init(&slot_framer::make),
             py::arg("bandwidth_mhz"),
             py::arg("n_tx"),
             py::arg("modulation"),
             py::arg("cell_id"),
             py::arg("freq_domain") = false,
             py::arg("pilot_ratio_db") = 0.0,
             "bandwidth_mhz in {1.4, 3, 5, 10, 15, 20}, n_tx in {1, 2, 4}, modulation "
             "'qpsk'/'16qam'/'64qam', cell_id 0..503, pilot_ratio_db -10..10 (CRS energy "
             "per element over the data's mean energy in dB: the CRS are scaled by "
             "sqrt(10^(pilot_ratio_db/10)), the data keep unit power); ValueError "
             "otherwise.")
        .def("bits_per_slot",
             &slot_framer::bits_per_slot,
             py::arg("ns"),
             "Bits consumed by slot ns (0..19): n_data(ns) * n_tx * q.")
        .def("items_per_slot",
             &slot_framer::items_per_slot,
             "Output items per slot: slot_samples (time) or 1 (freq_domain).")
        .def("vlen", &slot_framer::vlen, "Output vector length: 1 or 7 * n_sc.")
        .def("slots_sent", &slot_framer::slots_sent, "Slots produced so far.")
        .def("invalid_bits",
             &slot_framer::invalid_bits,
             "Input bytes that were neither 0 nor 1 (each used as its low bit).")
        .def("pilot_ratio_db",
             &slot_framer::pilot_ratio_db,
             "The pilot-to-data power ratio in dB (the constructor's).");
}
