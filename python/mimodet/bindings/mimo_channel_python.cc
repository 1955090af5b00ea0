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
             py::arg("seed") = 0,
             "n_tx, n_rx 1..8; model 'awgn' (H = I, needs n_rx >= n_tx), 'rayleigh' (flat, "
             "redrawn every slot), 'epa', 'eva', 'etu' (3GPP TS 36.104 B.2, Jakes "
             "Doppler); snr_db per data resource element (SNR = n_tx / noise_var); "
             "bandwidth_mhz in {1.4, 3, 5, 10, 15, 20}; doppler_hz >= 0, -1 for the "
             "model's default (5/70/300 Hz); cfo in subcarrier spacings and timing_offset "
             "in samples (time domain only); freq_domain: grids in and out plus the true H "
             "on output n_rx; seed >= 1 reproducible, 0 random. ValueError otherwise.")
        .def("noise_var",
             &mimo_channel::noise_var,
             "Noise variance per time sample / grid element: n_tx * 10^(-snr_db/10).")
        .def("snr_db", &mimo_channel::snr_db, "Current SNR in dB.")
        .def("set_snr_db",
             &mimo_channel::set_snr_db,
             py::arg("snr_db"),
             "Change the SNR (thread-safe; applies from the next work call).")
        .def("doppler_hz", &mimo_channel::doppler_hz, "Maximum Doppler in use (Hz).")
        .def("tap_delays",
             &mimo_channel::tap_delays,
             "Tap delays in samples at the bandwidth's sample rate.")
        .def("tap_powers", &mimo_channel::tap_powers, "Tap powers, linear, summing to 1.");
}
