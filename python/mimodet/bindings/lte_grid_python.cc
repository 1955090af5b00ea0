/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <pybind11/complex.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gnuradio/mimodet/lte_grid.h>

namespace py = pybind11;
using namespace gr::mimodet;

void bind_lte_grid(py::module& m)
{
    py::class_<lte_numerology>(
        m,
        "lte_numerology",
        "LTE numerology, normal CP: resource blocks, subcarriers, FFT size, sample rate and "
        "CP lengths of one bandwidth preset (see docs/SLOT_LAYOUT.md).")
        .def_static("from_bandwidth",
                    &lte_numerology::from_bandwidth,
                    py::arg("mhz"),
                    "The preset of 1.4, 3, 5, 10, 15 or 20 MHz; ValueError otherwise.")
        .def_readonly("bandwidth_mhz", &lte_numerology::bandwidth_mhz, "Bandwidth in MHz.")
        .def_readonly("n_rb", &lte_numerology::n_rb, "Resource blocks: 6 .. 100.")
        .def_readonly("n_sc", &lte_numerology::n_sc, "Used subcarriers: 12 per resource block.")
        .def_readonly("fft_size", &lte_numerology::fft_size, "FFT size: 128 .. 2048.")
        .def_readonly("sample_rate",
                      &lte_numerology::sample_rate,
                      "Sample rate in samples/s: fft_size x 15 kHz.")
        .def_readonly("cp_first",
                      &lte_numerology::cp_first,
                      "CP of symbol 0 of a slot, in samples.")
        .def_readonly("cp_other", &lte_numerology::cp_other, "CP of symbols 1..6, in samples.")
        .def("slot_samples",
             &lte_numerology::slot_samples,
             "Samples per slot (0.5 ms): sample_rate / 2000.")
        .def("cp_length",
             &lte_numerology::cp_length,
             py::arg("l"),
             "CP length of symbol l (0..6) in samples.")
        .def("bin",
             &lte_numerology::bin,
             py::arg("k"),
             "FFT bin of subcarrier k (0..n_sc-1, increasing frequency; DC unused).");

    py::enum_<re_kind>(m, "re_kind", "What a resource element of a slot carries on a port.")
        .value("data", re_kind::data)
        .value("crs", re_kind::crs)
        .value("empty", re_kind::empty)
        .value("pss", re_kind::pss)
        .value("sss", re_kind::sss)
        .value("guard", re_kind::guard);

    py::class_<lte_grid>(m,
                         "lte_grid",
                         "Resource grid map of a 20-slot frame: CRS per port, PSS/SSS, data "
                         "elements; element index l * n_sc + k (docs/SLOT_LAYOUT.md).")
        .def(py::init<const lte_numerology&, int, int>(),
             py::arg("numerology"),
             py::arg("n_ports"),
             py::arg("cell_id"),
             "n_ports in {1, 2, 4}, cell_id 0..503; ValueError otherwise.")
        .def("numerology", &lte_grid::numerology, "The lte_numerology of the grid.")
        .def("n_ports", &lte_grid::n_ports, "Antenna ports: 1, 2 or 4.")
        .def("cell_id", &lte_grid::cell_id, "Physical cell id.")
        .def("kind",
             &lte_grid::kind,
             py::arg("ns"),
             py::arg("port"),
             py::arg("l"),
             py::arg("k"),
             "re_kind of element (l, k) of slot ns on the port.")
        .def("data_elements",
             &lte_grid::data_elements,
             py::arg("ns"),
             "Data elements of slot ns as indices l * n_sc + k in time-then-frequency order "
             "(the order data symbols are mapped in); the same on every port.")
        .def("crs_value",
             &lte_grid::crs_value,
             py::arg("ns"),
             py::arg("port"),
             py::arg("l"),
             py::arg("k"),
             "CRS value at (l, k) of slot ns on the port (valid where kind() is crs).")
        .def("crs_elements",
             &lte_grid::crs_elements,
             py::arg("ns"),
             py::arg("port"),
             "CRS elements of the port in slot ns, as indices l * n_sc + k.")
        .def("pss",
             &lte_grid::pss,
             "PSS of N_ID2 = cell_id mod 3: 62 values for subcarriers n_sc/2-31 .. "
             "n_sc/2+30.")
        .def("sss",
             &lte_grid::sss,
             py::arg("ns"),
             "SSS of slot 0 or 10 (ns): 62 values on the PSS subcarriers.");
}
