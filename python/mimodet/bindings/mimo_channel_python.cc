/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <pybind11/complex.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gnuradio/block.h>
#include <gnuradio/mimodet/mimo_channel.h>
#include <gnuradio/sync_block.h>

namespace py = pybind11;
using gr::mimodet::mimo_channel;

void bind_mimo_channel(py::module& m)
{
    py::class_<mimo_channel,
               gr::sync_block,
               gr::block,
               gr::basic_block,
               std::shared_ptr<mimo_channel>>(
        m,
        "mimo_channel",
        "MIMO fading channel (awgn, rayleigh block fading, 3GPP EPA/EVA/ETU with Jakes "
        "Doppler), AWGN at an SNR per data resource element, optional CFO and timing "
        "offset; time-domain streams or grids (freq_domain, with the true H on output "
        "n_rx). See include/gnuradio/mimodet/mimo_channel.h.")
        .def(py::init(&mimo_channel::make),
             py::arg("n_tx"),
             py::arg("n_rx"),
             py::arg("model"),
             py::arg("snr_db"),
             py::arg("bandwidth_mhz"),
             py::arg("doppler_hz") = -1.0,
             py::arg("cfo") = 0.0,
             py::arg("timing_offset") = 0,
             py::arg("freq_domain") = false,
             py::arg("seed") = 0)
        .def("noise_var", &mimo_channel::noise_var)
        .def("snr_db", &mimo_channel::snr_db)
        .def("set_snr_db", &mimo_channel::set_snr_db, py::arg("snr_db"))
        .def("doppler_hz", &mimo_channel::doppler_hz)
        .def("tap_delays", &mimo_channel::tap_delays)
        .def("tap_powers", &mimo_channel::tap_powers);
}
