/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gnuradio/block.h>
#include <gnuradio/mimodet/mimo_receiver.h>

namespace py = pybind11;
using namespace gr::mimodet;

void bind_mimo_receiver(py::module& m)
{
    py::class_<mimo_receiver, gr::block, gr::basic_block, std::shared_ptr<mimo_receiver>>(
        m,
        "mimo_receiver",
        "Channel estimation and MIMO detection in one block: n_rx grids (with 'slot' "
        "tags) "
        "-> bits (uint8) or LLRs (float, soft_output), n_data(ns)*n_tx*q per slot; the "
        "same "
        "results as channel_estimator followed by mimo_detector with the same backend "
        "(with backend cuda the slot's H stays on the GPU between the two stages: the "
        "lowest latency on a GPU; on the CPU the two blocks overlap their stages and "
        "sustain more slots/s). See "
        "docs/SLOT_LAYOUT.md. Algorithm parameters as in mimodet.detector(): lvl, exp "
        "(PSD), T (FSD/SFSD), niter (SFSD), sorted_qr (PSD/MTT), llr_clip, threads; "
        "device: the CUDA device of both stages (backend cuda or auto); "
        "llr_scaled=False gives raw metric differences (noise_var times the LLRs); "
        "est_threads: threads of the CPU channel estimator. With time_domain=True the "
        "inputs are ofdm_sync's n_rx time-domain streams instead ('slot' tag on each "
        "slot's "
        "first sample), demodulated as ofdm_demod does (fft_backoff), on the GPU with "
        "backend cuda: one upload per slot between ofdm_sync and the bits.")
        .def(
            py::init(&mimo_receiver::make),
            py::arg("config"),
            py::arg("bandwidth_mhz"),
            py::arg("cell_id") = 0,
            py::arg("soft_output") = false,
            py::arg("est_threads") = 0,
            py::arg("time_domain") = false,
            py::arg("fft_backoff") = -1,
            py::arg("pilot_ratio_db") = 0.0,
            py::arg("slot_limit_us") = 2500.0,
            "config: the detector (a mimodet.detector_config, as mimo_detector's; its "
            "backend 'cpu', 'cuda' (RuntimeError without a CUDA device) or 'auto' runs "
            "both "
            "stages); bandwidth_mhz in {1.4, 3, 5, 10, 15, 20}; cell_id 0..503 (pilots "
            "and "
            "data map) or -1 (from the slots' cell_id tags); soft_output: float LLRs "
            "instead of bits (not for psd, fsd); est_threads 0..256: threads of the CPU "
            "channel estimator as channel_estimator's threads (0: min(CPU threads, "
            "n_rx*n_tx, 4); the results do not depend on it; unused by the GPU "
            "estimator); time_domain: time-domain inputs (ofdm_sync's) instead of grids; "
            "fft_backoff (time_domain only): FFT window back-off into the CP, "
            "0..cp_other "
            "samples, -1 for ofdm_demod's default; pilot_ratio_db: the transmitter's "
            "pilot-to-data power ratio in dB, -10..10, or float('nan') to estimate it "
            "per "
            "slot, as channel_estimator's (estimated, the stages are not fused on the "
            "GPU); slot_limit_us: psd without a deadline, the most microseconds a "
            "slot's detection may take (default 2500, five slot times; 0: no bound; a "
            "slot cut short is tagged 'truncated'). "
            "The keyword face mimo_receiver(algorithm, bandwidth_mhz, n_tx, n_rx, "
            "modulation, cell_id, backend, soft_output, **params) builds the config "
            "(gnuradio.mimodet.api). ValueError for an invalid configuration.")
        .def("time_domain",
             &mimo_receiver::time_domain,
             "True where the inputs are time-domain slots (time_domain=True).")
        .def("items_per_slot",
             &mimo_receiver::items_per_slot,
             py::arg("ns"),
             "Output items (bits or LLRs) of slot ns (0..19): n_data(ns) * n_tx * q.")
        .def("backend",
             &mimo_receiver::backend,
             "The backend running both stages: 'cpu' or 'cuda'.")
        .def("slots_processed",
             &mimo_receiver::slots_processed,
             "Slots received so far (bad ones included).")
        .def(
            "bad_slots",
            &mimo_receiver::bad_slots,
            "Slots output as zeros because of unusable input: pilots non-finite or all "
            "zero (no noise variance), or data elements or estimated channel not finite.")
        .def("untagged_slots",
             &mimo_receiver::untagged_slots,
             "Items of input 0 without a 'slot' tag (ns continued from the previous "
             "slot).")
        .def("truncated_slots",
             &mimo_receiver::truncated_slots,
             "Slots in which the psd deadline truncated at least one vector's search.")
        .def("pilot_ratio_db",
             &mimo_receiver::pilot_ratio_db,
             "The pilot-to-data ratio (dB) of the last slot: the known one, or with "
             "pilot_ratio_db=nan that slot's estimate (nan before the first slot).");
}
