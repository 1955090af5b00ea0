/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <pybind11/complex.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gnuradio/block.h>
#include <gnuradio/mimodet/ofdm_demod.h>

namespace py = pybind11;

void bind_ofdm_demod(py::module& m)
{
    using ofdm_demod = gr::mimodet::ofdm_demod;

    py::class_<ofdm_demod, gr::block, gr::basic_block, std::shared_ptr<ofdm_demod>>(
        m,
        "ofdm_demod",
        "LTE-style OFDM demodulator: n_rx time streams with 'slot' tags -> n_rx grid "
        "streams (gr_complex[7 * n_sc] per slot, unitary FFT); see docs/SLOT_LAYOUT.md.")
        .def(py::init(&ofdm_demod::make),
             py::arg("bandwidth_mhz"),
             py::arg("n_rx"),
             py::arg("fft_backoff") = -1,
             py::arg("compensate_backoff") = true,
             "bandwidth_mhz in {1.4, 3, 5, 10, 15, 20}, n_rx 1..8, fft_backoff 0..cp_other "
             "samples into the CP (-1: cp_other / 4), compensate_backoff removes its linear "
             "phase; ValueError otherwise.")
        .def("fft_backoff", &ofdm_demod::fft_backoff, "FFT window back-off in use (samples).")
        .def("vlen", &ofdm_demod::vlen, "Output vector length: 7 * n_sc.")
        .def("slots_out", &ofdm_demod::slots_out, "Slots demodulated so far.");
}
