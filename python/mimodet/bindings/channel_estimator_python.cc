/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <pybind11/pybind11.h>

#include <gnuradio/mimodet/channel_estimator.h>
#include <gnuradio/sync_block.h>

namespace py = pybind11;
using namespace gr::mimodet;

void bind_channel_estimator(py::module& m)
{
    py::class_<channel_estimator,
               gr::sync_block,
               gr::block,
               gr::basic_block,
               std::shared_ptr<channel_estimator>>(
        m,
        "channel_estimator",
        "CRS channel and noise-variance estimator: n_rx grids -> H per slot "
        "(gr_complex[n_sc*n_rx*n_tx], element (k*n_rx + r)*n_tx + t) and noise_var "
        "(float); see docs/SLOT_LAYOUT.md")
        .def(py::init(&channel_estimator::make),
             py::arg("bandwidth_mhz"),
             py::arg("n_tx"),
             py::arg("n_rx"),
             py::arg("cell_id") = 0,
             py::arg("threads") = 0,
             py::arg("backend") = "cpu",
             py::arg("pilot_ratio_db") = 0.0,
             py::arg("device") = 0,
             "bandwidth_mhz in {1.4, 3, 5, 10, 15, 20}, n_tx in {1, 2, 4} (ports whose CRS "
             "are estimated), n_rx 1..8 (grid inputs), cell_id 0..503 (or -1: from the slots' cell_id tags), threads 0..256 "
             "(threads that estimate one slot together; 0: min(CPU threads, n_rx*n_tx, 4); the "
             "results do not depend on it), backend 'cpu', 'cuda' (the same method on the "
             "GPU, results equal up to float rounding; RuntimeError without a CUDA device) "
             "or 'auto' (cuda where a device exists), pilot_ratio_db: the transmitter's "
             "pilot-to-data power ratio in dB, -10..10 (the framer's; H is scaled to the "
             "data's units), or float('nan') to estimate it per slot from the received "
             "pilot and data power, device: the CUDA device of backend cuda or auto (>= 0; "
             "cuda: RuntimeError for an index without a device, auto: the CPU then); "
             "ValueError otherwise.")
        .def("backend",
             &channel_estimator::backend,
             "'cpu' or 'cuda': the backend actually running.")
        .def("n_sc", &channel_estimator::n_sc, "Used subcarriers n_sc (12 per RB).")
        .def("threads",
             &channel_estimator::threads,
             "Threads that estimate one slot (0 resolved to the default).")
        .def("slots_processed", &channel_estimator::slots_processed, "Slots estimated so far.")
        .def("bad_slots",
             &channel_estimator::bad_slots,
             "Slots whose input was unusable (non-finite or all zero); their noise_var "
             "output is NaN, which the MIMO detector flags.")
        .def("untagged_slots",
             &channel_estimator::untagged_slots,
             "Items of input 0 without a 'slot' tag (ns continued from the previous slot).")
        .def("pilot_ratio_db",
             &channel_estimator::pilot_ratio_db,
             "The pilot-to-data ratio (dB) of the last slot: the known one, or with "
             "pilot_ratio_db=nan that slot's estimate (nan before the first slot).");
}
