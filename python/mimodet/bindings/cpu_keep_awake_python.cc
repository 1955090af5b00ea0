/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gnuradio/mimodet/cpu_keep_awake.h>

namespace py = pybind11;
using gr::mimodet::cpu_keep_awake;

namespace {

//! cpus as taskset's list ("0-5,8") or a sequence of CPU numbers.
std::vector<int> cpu_list(const py::object& cpus)
{
    if (cpus.is_none())
        return {};
    if (py::isinstance<py::str>(cpus))
        return cpu_keep_awake::parse_cpu_list(cpus.cast<std::string>());
    return cpus.cast<std::vector<int>>();
}

} // namespace

void bind_cpu_keep_awake(py::module& m)
{
    py::class_<cpu_keep_awake>(
        m,
        "cpu_keep_awake",
        "Keeps CPUs out of their idle state while it lives, for low latency between a "
        "flowgraph's threads (a wake-up on a halted CPU waits for it to wake; on a "
        "virtual "
        "machine, for the host to run it again).\n\n"
        "mode: 'spin' (one SCHED_IDLE thread per CPU, spinning: it yields to any other "
        "thread at once; no privileges needed), 'qos' (holds /dev/cpu_dma_latency at 0, "
        "as cyclictest does; needs write access and a cpuidle driver) or 'none'.\n"
        "cpus: where spin runs, as taskset's list ('0-5,8') or a sequence of numbers; "
        "empty: every CPU this process may run on.\n"
        "confine: confine every thread of the process, and the threads they start later "
        "(a top block's when it starts after this), to those CPUs, as taskset -c would; "
        "at stop() every thread gets back the CPUs the constructing thread had.\n"
        "slice_us: a time slice of that many microseconds (100..100000) for every "
        "SCHED_OTHER thread of the process and the threads they start later "
        "(sched_setattr's sched_runtime; Linux 6.12 or later, no privileges needed); 0: "
        "the kernel's default, which they get back at stop(). Any mode.\n\n"
        "Make it before the top block starts and keep a reference while the flowgraph "
        "runs, or use it as a context manager. ValueError for a bad mode, CPU list or "
        "slice, or cpus/confine with a mode other than spin; RuntimeError where the "
        "system refuses.")
        .def(py::init([](const std::string& mode,
                         const py::object& cpus,
                         bool confine,
                         int slice_us) {
                 return std::make_unique<cpu_keep_awake>(
                     mode, cpu_list(cpus), confine, slice_us);
             }),
             py::arg("mode") = "spin",
             py::arg("cpus") = "",
             py::arg("confine") = false,
             py::arg("slice_us") = 0)
        .def("stop",
             &cpu_keep_awake::stop,
             "Stops keeping the CPUs awake and gives confined threads their CPUs back.")
        .def("active", &cpu_keep_awake::active, "Whether it keeps CPUs awake now.")
        .def("mode", &cpu_keep_awake::mode, "'spin', 'qos' or 'none'.")
        .def("cpus", &cpu_keep_awake::cpus, "The CPUs with a spinning thread.")
        .def("slice_us",
             &cpu_keep_awake::slice_us,
             "The time slice asked for the process's threads, in us (0: none).")
        .def("spinner_cpu_seconds",
             &cpu_keep_awake::spinner_cpu_seconds,
             "CPU time the spinning threads have used so far, in seconds.")
        .def_static("allowed_cpus",
                    &cpu_keep_awake::allowed_cpus,
                    "The CPUs this process may run on, ascending.")
        .def_static("parse_cpu_list",
                    &cpu_keep_awake::parse_cpu_list,
                    py::arg("list"),
                    "'0-5,8' -> [0, 1, 2, 3, 4, 5, 8]; ValueError for anything else.")
        .def(
            "__enter__",
            [](cpu_keep_awake& k) -> cpu_keep_awake& { return k; },
            py::return_value_policy::reference)
        .def("__exit__", [](cpu_keep_awake& k, py::args) { k.stop(); });
}
