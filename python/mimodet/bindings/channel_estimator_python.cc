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
             py::arg("cell_id") = 0)
        .def("n_sc", &channel_estimator::n_sc)
        .def("slots_processed", &channel_estimator::slots_processed)
        .def("bad_slots", &channel_estimator::bad_slots)
        .def("untagged_slots", &channel_estimator::untagged_slots);
}
