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
    py::class_<lte_numerology>(m, "lte_numerology", "LTE numerology, normal CP")
        .def_static("from_bandwidth", &lte_numerology::from_bandwidth, py::arg("mhz"))
        .def_readonly("bandwidth_mhz", &lte_numerology::bandwidth_mhz)
        .def_readonly("n_rb", &lte_numerology::n_rb)
        .def_readonly("n_sc", &lte_numerology::n_sc)
        .def_readonly("fft_size", &lte_numerology::fft_size)
        .def_readonly("sample_rate", &lte_numerology::sample_rate)
        .def_readonly("cp_first", &lte_numerology::cp_first)
        .def_readonly("cp_other", &lte_numerology::cp_other)
        .def("slot_samples", &lte_numerology::slot_samples)
        .def("cp_length", &lte_numerology::cp_length, py::arg("l"))
        .def("bin", &lte_numerology::bin, py::arg("k"));

    py::enum_<re_kind>(m, "re_kind")
        .value("data", re_kind::data)
        .value("crs", re_kind::crs)
        .value("empty", re_kind::empty)
        .value("pss", re_kind::pss)
        .value("sss", re_kind::sss)
        .value("guard", re_kind::guard);

    py::class_<lte_grid>(m, "lte_grid", "Resource grid map: CRS, PSS/SSS, data elements")
        .def(py::init<const lte_numerology&, int, int>(),
             py::arg("numerology"),
             py::arg("n_ports"),
             py::arg("cell_id"))
        .def("numerology", &lte_grid::numerology)
        .def("n_ports", &lte_grid::n_ports)
        .def("cell_id", &lte_grid::cell_id)
        .def("kind", &lte_grid::kind, py::arg("ns"), py::arg("port"), py::arg("l"), py::arg("k"))
        .def("data_elements", &lte_grid::data_elements, py::arg("ns"))
        .def("crs_value",
             &lte_grid::crs_value,
             py::arg("ns"),
             py::arg("port"),
             py::arg("l"),
             py::arg("k"))
        .def("crs_elements", &lte_grid::crs_elements, py::arg("ns"), py::arg("port"))
        .def("pss", &lte_grid::pss)
        .def("sss", &lte_grid::sss, py::arg("ns"));
}
