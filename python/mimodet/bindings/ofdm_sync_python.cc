/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <pybind11/complex.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gnuradio/block.h>
#include <gnuradio/mimodet/ofdm_sync.h>

namespace py = pybind11;

void bind_ofdm_sync(py::module& m)
{
    using ofdm_sync = gr::mimodet::ofdm_sync;

    py::class_<ofdm_sync, gr::block, gr::basic_block, std::shared_ptr<ofdm_sync>>(
        m,
        "ofdm_sync",
        "LTE-style receiver synchronisation: PSS timing, CP CFO, SSS slot 0/10, "
        "sample-rate offset; n_rx streams in, n_rx CFO-corrected (and resampled) streams "
        "out starting at a slot, 'slot' tags; cell_id -1 searches the cell, tags it "
        "('cell_id') and reports it on the 'cell_id' message port; see "
        "docs/SLOT_LAYOUT.md.")
        .def(py::init(&ofdm_sync::make),
             py::arg("bandwidth_mhz"),
             py::arg("n_rx"),
             py::arg("cell_id"),
             "bandwidth_mhz in {1.4, 3, 5, 10, 15, 20}, n_rx 1..8, cell_id 0..503 (the "
             "cell whose PSS/SSS are searched) or -1 (search the cell); ValueError "
             "otherwise.")
        .def("cfo",
             &ofdm_sync::cfo,
             "Current CFO estimate in subcarrier spacings (15 kHz); 0 before the first "
             "lock.")
        .def(
            "locked", &ofdm_sync::locked, "Whether the block is locked (emitting slots).")
        .def("slots_out", &ofdm_sync::slots_out, "Slots emitted so far.")
        .def("pss_missed", &ofdm_sync::pss_missed, "Tracking PSS searches that failed.")
        .def(
            "slots_lost",
            &ofdm_sync::slots_lost,
            "Slots lost so far: the slots dropped as holding no signal of the "
            "transmitter "
            "(after a missed PSS, or a burst far above the signal's level), and at every "
            "re-lock the whole slots of input between the last slot out and the new "
            "lock's first slot.")
        .def(
            "sro_ppm",
            &ofdm_sync::sro_ppm,
            "Sample-rate offset estimate in ppm (receiver samples per transmitted sample "
            "- 1); 0 until the first PSS after the lock has been tracked.")
        .def("resampling",
             &ofdm_sync::resampling,
             "Whether the output is resampled to remove the sample-rate offset.")
        .def("cell_id",
             &ofdm_sync::cell_id,
             "The cell id followed: the given one, or the one found (-1 until the first "
             "lock with cell search).");
}
