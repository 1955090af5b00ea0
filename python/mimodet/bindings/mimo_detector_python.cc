/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gnuradio/block.h>
#include <gnuradio/mimodet/block_config.h>
#include <gnuradio/mimodet/mimo_detector.h>

namespace py = pybind11;
using namespace gr::mimodet;

void bind_mimo_detector(py::module& m)
{
    m.def("block_detector_config",
          &block_detector_config,
          py::arg("algorithm"),
          py::arg("n_tx"),
          py::arg("n_rx"),
          py::arg("modulation") = "16qam",
          py::arg("backend") = "cpu",
          "The detector_config named by the blocks' string parameters, every algorithm "
          "parameter unset (the algorithm's default).");
    py::class_<mimo_detector, gr::block, gr::basic_block, std::shared_ptr<mimo_detector>>(
        m,
        "mimo_detector",
        "MIMO detector of the slot chain: n_rx grids + H + noise_var -> bits (uint8) or "
        "LLRs (float, soft_output), n_data(ns)*n_tx*q per slot; see docs/SLOT_LAYOUT.md. "
        "Algorithm parameters as in mimodet.detector(): lvl, exp (PSD), T (FSD/SFSD), "
        "niter (SFSD), sorted_qr (PSD/MTT), llr_clip, threads; device: the CUDA device "
        "(backend cuda or auto); llr_scaled=False gives raw metric differences "
        "(noise_var times the LLRs).")
        .def(
            py::init(&mimo_detector::make),
            py::arg("config"),
            py::arg("bandwidth_mhz"),
            py::arg("cell_id") = 0,
            py::arg("soft_output") = false,
            py::arg("slot_limit_us") = 2500.0,
            "config: the detector (a mimodet.detector_config: algorithm, n_tx in {1, 2, "
            "4}, n_rx n_tx..8, modulation, backend and the algorithm's parameters); "
            "bandwidth_mhz in {1.4, 3, 5, 10, 15, 20}; cell_id 0..503 (or -1: from the "
            "slots' cell_id tags); soft_output: float LLRs instead of bits (not for psd, "
            "fsd). The keyword face mimo_detector(algorithm, bandwidth_mhz, n_tx, n_rx, "
            "modulation, cell_id, backend, soft_output, **params) builds the config "
            "(gnuradio.mimodet.api). slot_limit_us: psd without a deadline, the most "
            "microseconds a slot's detection may take (default 2500, five "
            "slot times; 0: no bound; a slot "
            "cut short is tagged 'truncated'). ValueError for an invalid configuration.")
        .def("items_per_slot",
             &mimo_detector::items_per_slot,
             py::arg("ns"),
             "Output items (bits or LLRs) of slot ns (0..19): n_data(ns) * n_tx * q.")
        .def("backend", &mimo_detector::backend, "The backend running: 'cpu' or 'cuda'.")
        .def("slots_processed",
             &mimo_detector::slots_processed,
             "Slots detected so far (bad ones included).")
        .def("bad_slots",
             &mimo_detector::bad_slots,
             "Slots output as zeros because H, the grids or noise_var were unusable.")
        .def("untagged_slots",
             &mimo_detector::untagged_slots,
             "Items of input 0 without a 'slot' tag (ns continued from the previous "
             "slot).")
        .def("truncated_slots",
             &mimo_detector::truncated_slots,
             "Slots in which the psd deadline truncated at least one vector's search.");
}
