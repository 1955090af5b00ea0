/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// pybind11 bindings of the detection core. Shapes are checked here and reported as
// ValueError; the core checks values (NaN/Inf, noise_var) and configurations.

#include <pybind11/complex.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "detect/algorithm_registry.h" // the soft algorithms' names, for a message
#include "detect/psd/psd_params.h" // the PSD parameter sets, bound read-only below
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/detector.h>
#include <stdexcept>
#include <string>

namespace py = pybind11;
using namespace gr::mimodet;

void bind_blocks(py::module& m); // generated from bindings/*_python.cc

namespace {

using cf = std::complex<float>;
using carray = py::array_t<cf, py::array::c_style | py::array::forcecast>;
using farray = py::array_t<float, py::array::c_style | py::array::forcecast>;

struct batch_view {
    size_t n_mat = 0, n_sym = 0;
    bool has_sym_axis = false;
    carray H, y;
    std::vector<float> noise_var;
};

std::string shape_str(const py::array& a)
{
    std::string s = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i)
        s += std::to_string(a.shape(i)) + (i + 1 < a.ndim() ? ", " : "");
    return s + (a.ndim() == 1 ? ",)" : ")");
}

batch_view check_inputs(const detector& d, py::object H_in, py::object y_in, py::object nv_in)
{
    const auto& c = d.config();
    batch_view v;
    v.H = carray::ensure(H_in);
    v.y = carray::ensure(y_in);
    if (!v.H || !v.y)
        throw py::value_error("mimodet: H and y must be array-like complex values");
    if (v.H.ndim() != 3 || v.H.shape(1) != c.n_rx || v.H.shape(2) != c.n_tx)
        throw py::value_error("mimodet: H must have shape (B, n_rx=" + std::to_string(c.n_rx) +
                              ", n_tx=" + std::to_string(c.n_tx) + "), got " +
                              shape_str(v.H));
    v.n_mat = v.H.shape(0);
    if (v.y.ndim() == 2 && v.y.shape(0) == static_cast<py::ssize_t>(v.n_mat) &&
        v.y.shape(1) == c.n_rx) {
        v.n_sym = 1;
    } else if (v.y.ndim() == 3 && v.y.shape(0) == static_cast<py::ssize_t>(v.n_mat) &&
               v.y.shape(2) == c.n_rx) {
        v.n_sym = v.y.shape(1);
        v.has_sym_axis = true;
    } else {
        throw py::value_error("mimodet: y must have shape (B, n_rx) or (B, S, n_rx) with B=" +
                              std::to_string(v.n_mat) + ", n_rx=" + std::to_string(c.n_rx) +
                              "; got " + shape_str(v.y));
    }
    farray nv = farray::ensure(nv_in);
    if (!nv)
        throw py::value_error("mimodet: noise_var must be a number or an array of B numbers");
    if (nv.ndim() == 0 || (nv.ndim() == 1 && nv.shape(0) == 1)) {
        v.noise_var.assign(v.n_mat, nv.data()[0]);
    } else if (nv.ndim() == 1 && nv.shape(0) == static_cast<py::ssize_t>(v.n_mat)) {
        v.noise_var.assign(nv.data(), nv.data() + v.n_mat);
    } else {
        throw py::value_error("mimodet: noise_var must be a scalar or have shape (B,) with B=" +
                              std::to_string(v.n_mat) + "; got " + shape_str(nv));
    }
    return v;
}

template <typename T>
py::array_t<T> make_output(const batch_view& v, int nb)
{
    if (v.has_sym_axis)
        return py::array_t<T>({ static_cast<py::ssize_t>(v.n_mat),
                                static_cast<py::ssize_t>(v.n_sym),
                                static_cast<py::ssize_t>(nb) });
    return py::array_t<T>(
        { static_cast<py::ssize_t>(v.n_mat), static_cast<py::ssize_t>(nb) });
}

py::dict psd_set_dict(const std::string& name,
                      const std::string& kind,
                      int n_tx,
                      py::object omega,
                      const core::psd_params& p)
{
    py::dict d;
    d["name"] = name;
    d["kind"] = kind;
    d["n_tx"] = n_tx;
    d["omega"] = omega;
    d["lvl"] = py::cast(p.lvl); // fresh lists: editing them changes nothing here
    d["exp"] = py::cast(p.exp);
    return d;
}

// Every PSD parameter set the library defines, from its one definition (psd_params.h).
py::list psd_presets()
{
    py::list out;
    auto add = [&](const std::vector<core::psd_paper_set>& sets, const char* kind) {
        for (const auto& s : sets)
            out.append(psd_set_dict(s.name, kind, s.n_tx, py::int_(s.omega), s.params));
    };
    add(core::psd_table2_configurations(), "table2");
    add(core::psd_table5_presets(), "table5");
    add(core::psd_gpu_presets(), "gpu");
    for (int n_tx = 1; n_tx <= 8; ++n_tx)
        out.append(psd_set_dict("cpu-tuned-" + std::to_string(n_tx) + "tx",
                                "cpu-tuned",
                                n_tx,
                                py::none(),
                                core::psd_cpu_tuned(n_tx)));
    return out;
}

py::object with_stats(py::object out, const batch_view& v, std::vector<vector_stats>& st)
{
    py::array_t<uint32_t> expanded(v.n_mat * v.n_sym), evaluated(v.n_mat * v.n_sym);
    py::array_t<uint8_t> truncated(v.n_mat * v.n_sym), flags(v.n_mat * v.n_sym);
    auto e = expanded.mutable_unchecked<1>();
    auto ev = evaluated.mutable_unchecked<1>();
    auto tr = truncated.mutable_unchecked<1>();
    auto fl = flags.mutable_unchecked<1>();
    for (size_t i = 0; i < st.size(); ++i) {
        e(i) = st[i].expanded;
        ev(i) = st[i].evaluated;
        tr(i) = static_cast<uint8_t>(st[i].truncated);
        fl(i) = static_cast<uint8_t>(st[i].flags);
    }
    py::dict d;
    d["expanded"] = expanded;
    d["evaluated"] = evaluated;
    d["truncated"] = truncated; // 1: cut short by the PSD deadline
    d["flags"] = flags;         // vector_flag bits: 1 rank-deficient H, 2 saturated LLR
    return py::make_tuple(out, d);
}

//! The interpreter's main thread, the only one whose signal check runs the handlers.
unsigned long g_main_thread = 0;

/*!
 * Runs a detect call with the GIL released. Called on the main thread, the call polls
 * Python's signal handlers about every 20 ms (taking the GIL only for that), so Ctrl-C
 * cancels it: the workers stop after their current vector and the handler's exception
 * (KeyboardInterrupt) is raised. Other threads' calls end by detector.cancel().
 */
template <typename F>
void run_interruptible(detector& d, F&& call)
{
    const bool main_thread = PyThread_get_thread_ident() == g_main_thread;
    struct poll_scope {
        detector& d;
        bool on;
        ~poll_scope()
        {
            if (on)
                d.set_cancel_poll({});
        }
    } scope{ d, main_thread };
    if (main_thread)
        d.set_cancel_poll([] {
            py::gil_scoped_acquire gil;
            return PyErr_CheckSignals() != 0;
        });
    try {
        py::gil_scoped_release release;
        call();
    } catch (const cancelled&) {
        if (PyErr_Occurred())
            throw py::error_already_set(); // the signal handler's exception
        throw;
    }
}

//! A detect call of the bindings (call(view, output, stats or nullptr), interruptible):
//! its output array, with with_stats' dict where return_stats.
template <typename T, typename Call>
py::object run_detect(detector& d,
                      py::object H,
                      py::object y,
                      py::object nv,
                      bool return_stats,
                      Call call)
{
    auto v = check_inputs(d, H, y, nv);
    auto out = make_output<T>(v, d.bits_per_vector());
    std::vector<vector_stats> st(return_stats ? v.n_mat * v.n_sym : 0);
    auto* o = out.mutable_data();
    run_interruptible(d, [&] { call(v, o, return_stats ? st.data() : nullptr); });
    return return_stats ? with_stats(out, v, st) : py::object(out);
}

} // namespace

PYBIND11_MODULE(mimodet_python, m)
{
    m.doc() = "gr-mimodet detection core (C++), see gnuradio.mimodet";
    // The blocks derive from gnuradio.gr's bound base classes.
    py::module::import("gnuradio.gr");

    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p)
                std::rethrow_exception(p);
        } catch (const std::logic_error& e) {
            // invalid_argument, domain errors and "hard-only detector" misuse
            PyErr_SetString(PyExc_ValueError, e.what());
        }
    });

    g_main_thread = py::module::import("threading")
                        .attr("main_thread")()
                        .attr("ident")
                        .cast<unsigned long>();
    auto cancelled_type =
        py::register_exception<cancelled>(m, "cancelled", PyExc_RuntimeError);
    cancelled_type.attr("__doc__") =
        "Raised by a detect call that detector.cancel() ended; the detector stays usable.";

    py::enum_<modulation>(
        m,
        "modulation",
        "QPSK, 16QAM or 64QAM (3GPP TS 36.211 7.1); the value is bits per symbol.")
        .value("qpsk", modulation::qpsk)
        .value("qam16", modulation::qam16)
        .value("qam64", modulation::qam64);
    m.def("parse_modulation",
          &parse_modulation,
          py::arg("name"),
          "The modulation named 'qpsk', '16qam' or '64qam' (any case; 'qam16'/'qam64' "
          "too); ValueError otherwise.");
    m.def(
        "modulation_name",
        [](modulation x) { return to_string(x); },
        py::arg("mod"),
        "The modulation's name: qpsk, 16qam or 64qam.");
    m.def("algorithms",
          &detector_algorithms,
          "Names of the detection algorithms, in the algorithm registry's order.");
    m.def("algorithm_soft",
          &detector_algorithm_soft,
          py::arg("algorithm"),
          "True where the algorithm gives LLRs (detect_llr), False for hard bits only; "
          "ValueError, naming the valid algorithms, for an unknown name.");
    m.def("cuda_device_count", &cuda_device_count, "Usable CUDA devices (0 without CUDA).");

    m.def(
        "constellation_points",
        [](modulation mod) {
            const auto& c = constellation::get(mod);
            py::array_t<cf> pts(c.order());
            auto p = pts.mutable_unchecked<1>();
            for (int i = 0; i < c.order(); ++i)
                p(i) = cf(c.points()[i]);
            return pts;
        },
        py::arg("mod"),
        "The 36.211 points indexed by label b0 b1 ... (b0 most significant).");

    py::class_<detector_config>(
        m,
        "detector_config",
        "Everything that defines a batch detector (make_detector). Parameters left at "
        "their unset value (-1 or empty) take the algorithm's documented default; "
        "mimodet.detector() builds one from keywords.")
        .def(py::init<>())
        .def_readwrite("algorithm",
                       &detector_config::algorithm,
                       "ml, zf, mmse, psd, fsd, sfsd or mtt.")
        .def_readwrite("n_tx", &detector_config::n_tx, "Transmit antennas (streams).")
        .def_readwrite("n_rx", &detector_config::n_rx, "Receive antennas, >= n_tx.")
        .def_readwrite("mod", &detector_config::mod, "Modulation (a mimodet.modulation).")
        .def_property(
            "backend",
            [](const detector_config& c) { return to_string(c.backend); },
            [](detector_config& c, const std::string& name) {
                c.backend = parse_backend(name);
            },
            "cpu, cuda or auto (CUDA where a GPU exists); ValueError for other names.")
        .def_readwrite("threads",
                       &detector_config::threads,
                       "CPU worker threads; 0: all hardware threads.")
        .def_readwrite("device",
                       &detector_config::device,
                       "CUDA device index (>= 0) of backend cuda or auto; the CPU "
                       "backend ignores it.")
        .def_readwrite("psd_lvl",
                       &detector_config::psd_lvl,
                       "PSD: the levels lvl_0 = 2 n_tx + 1 > ... > 1 where the search "
                       "switches between breadth and depth first (PSD paper, Table 1); "
                       "both empty: the depth-first set, the default.")
        .def_readwrite("psd_exp",
                       &detector_config::psd_exp,
                       "PSD: the paths expanded at each of those levels (exp_0 = 1); "
                       "both empty: the depth-first set, the default.")
        .def_readwrite("fsd_full_levels",
                       &detector_config::fsd_full_levels,
                       "FSD/SFSD: fully expanded levels T; -1: 1.")
        .def_readwrite("sfsd_niter",
                       &detector_config::sfsd_niter,
                       "SFSD: list-extension iterations Niter; -1: 2/4/6 for "
                       "QPSK/16QAM/64QAM.")
        .def_readwrite("sorted_qr",
                       &detector_config::sorted_qr,
                       "Tree/trellis ordering: 1 sorted QR, 0 plain QR, -1 the "
                       "algorithm's default (PSD 0, MTT 1; FSD/SFSD always use the FSD "
                       "ordering).")
        .def_readwrite("llr_clip",
                       &detector_config::llr_clip,
                       "LLR clipping magnitude after scaling; 0: no clipping.")
        .def_readwrite("llr_scaled",
                       &detector_config::llr_scaled,
                       "True: max-log LLRs scaled by 1/noise_var; False: the raw metric "
                       "differences.")
        .def_readwrite("psd_deadline_us",
                       &detector_config::psd_deadline_us,
                       "PSD real-time budget per detect call in microseconds; 0: none "
                       "(exact ML). Vectors cut short are flagged 'truncated'.")
        .def_readwrite("psd_node_budget",
                       &detector_config::psd_node_budget,
                       "PSD path metrics one vector's search may compute; -1: the "
                       "configuration's default, 0: none (the unbounded exact search). "
                       "Vectors cut short are flagged 'truncated'.")
        .def_readwrite("psd_start_rows",
                       &detector_config::psd_start_rows,
                       "PSD depth-first search: rows whose every combination, with "
                       "successive interference cancellation below, gives its starting "
                       "bound (the same decisions, other node counts); -1: the "
                       "backend's default, 0: none, else 1..8.")
        .def_readwrite("psd_radius",
                       &detector_config::psd_radius,
                       "PSD depth-first search: starting radius as a multiple of "
                       "n_rx * noise_var, grown until a leaf lies inside (the same "
                       "decisions, other node counts); -1: the backend's default "
                       "(CPU 1.5, CUDA 0), 0: none, else > 0 (CPU only).");

    py::class_<detector, std::shared_ptr<detector>>(
        m,
        "detector_impl",
        "A batch detector (made by mimodet.detector() or make_detector()): detects "
        "batches of received vectors, each batch entry with its own channel matrix.")
        .def_property_readonly(
            "soft", &detector::soft, "True where the detector gives LLRs (detect_llr).")
        .def_property_readonly(
            "backend", &detector::backend, "The backend it runs on: cpu or cuda.")
        .def_property_readonly("bits_per_vector",
                               &detector::bits_per_vector,
                               "Bits (or LLRs) per received vector: n_tx times bits per "
                               "symbol.")
        .def_property_readonly(
            "algorithm",
            [](const detector& d) { return d.config().algorithm; },
            "The algorithm's name.")
        .def_property_readonly(
            "n_tx",
            [](const detector& d) { return d.config().n_tx; },
            "Transmit antennas.")
        .def_property_readonly(
            "n_rx",
            [](const detector& d) { return d.config().n_rx; },
            "Receive antennas.")
        .def(
            "detect_bits",
            [](detector& d, py::object H, py::object y, py::object nv, bool return_stats) {
                return run_detect<uint8_t>(
                    d, H, y, nv, return_stats, [&](auto& v, uint8_t* out, vector_stats* st) {
                        d.detect_bits(v.H.data(),
                                      v.y.data(),
                                      v.n_mat,
                                      v.n_sym,
                                      v.noise_var.data(),
                                      out,
                                      st);
                    });
            },
            py::arg("H"),
            py::arg("y"),
            py::arg("noise_var"),
            py::arg("return_stats") = false,
            "Hard bits, uint8 (B, n_tx*q) or (B, S, n_tx*q). With return_stats, also a "
            "dict of per-vector 'expanded'/'evaluated' node counts, 'truncated' flags "
            "(psd deadline) and 'flags' (bit 1: H rank-deficient or zero, bit 2: an LLR "
            "saturated; docs/CONVENTIONS.md).")
        .def(
            "detect_llr",
            [](detector& d, py::object H, py::object y, py::object nv, bool return_stats) {
                if (!d.soft()) // the message of detector::detect_llr, as a ValueError
                    throw py::value_error("mimodet: detector '" + d.config().algorithm +
                                          "' gives hard bits only; use detect_bits (LLRs: " +
                                          core::soft_algorithm_names() + ")");
                return run_detect<float>(
                    d, H, y, nv, return_stats, [&](auto& v, float* out, vector_stats* st) {
                        d.detect_llr(v.H.data(),
                                     v.y.data(),
                                     v.n_mat,
                                     v.n_sym,
                                     v.noise_var.data(),
                                     out,
                                     st);
                    });
            },
            py::arg("H"),
            py::arg("y"),
            py::arg("noise_var"),
            py::arg("return_stats") = false,
            "Max-log LLRs ln P(b=0)/P(b=1) scaled by 1/noise_var (or, with llr_scaled=False, "
            "the raw metric differences: noise_var times that), float32 (B, n_tx*q) or "
            "(B, S, n_tx*q), saturated at +-1e10 (before noise_var's factor). With "
            "return_stats, also the dict of detect_bits.")
        .def("cancel",
             &detector::cancel,
             "Ends the detect call running on another thread: it raises "
             "mimodet.cancelled after its current vector (CPU) or chunk (GPU); made while "
             "no call runs, it cancels the next call. Ctrl-C cancels a call of the main "
             "thread by itself (KeyboardInterrupt).");

    m.def("psd_presets",
          &psd_presets,
          "The PSD parameter sets the library defines, as a new list of dicts (name, "
          "kind, n_tx, omega = |Omega| PAM levels per real dimension: 2 QPSK, 4 16QAM, "
          "8 64QAM, lvl, exp): kind 'table2' the PSD paper's Table 2 configurations, "
          "'table5' its Table 5 sets (mimodet_bench --psd-preset table5), 'gpu' the "
          "Algorithm 3 sets searched on an H100 (--psd-preset h100-alg3), 'cpu-tuned' "
          "the depth-first set lvl = N+1, N, ..., 1 with "
          "exp all 1 (any omega, omega None): the default, a Schnorr-Euchner sphere "
          "decoder "
          "on a sorted QR on both backends. "
          "Any of them goes to detector('psd', ..., lvl=s['lvl'], exp=s['exp']) for its "
          "n_tx and omega.");
    m.def(
        "psd_default_params",
        [](int n_tx, modulation mod) {
            const auto p =
                core::psd_resolve({}, {}, n_tx, constellation::get(mod).pam_order());
            return py::make_tuple(p.lvl, p.exp);
        },
        py::arg("n_tx"),
        py::arg("mod"),
        "(lvl, exp) a PSD detector uses when both are left empty, on either backend: the "
        "depth-first set.");

    bind_blocks(m);

    m.def("make_detector",
          &detector::make,
          py::arg("config"),
          "Make a detector from a detector_config (see detector() for keywords).");
}
