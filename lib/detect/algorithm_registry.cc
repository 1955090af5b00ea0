/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detect/algorithm_registry.h"
#include "detect/backend.h"
#include "detect/kernel.h"
#include <stdexcept>

namespace gr {
namespace mimodet {
namespace core {

namespace {

std::vector<algorithm_info> make_rows()
{
    std::vector<algorithm_info> rows;
    auto row =
        [&rows](const char* name, bool soft, cpu_kernel_factory cpu) -> algorithm_info& {
        algorithm_info r;
        r.name = name;
        r.soft = soft;
        r.make_cpu = cpu;
        rows.push_back(r);
        return rows.back();
    };
    // Exhaustive search is the reference the other detectors are checked against; its
    // work grows as M^n_tx, out of real time on any device for the larger sets.
    {
        algorithm_info& r = row("ml", true, make_ml_kernel);
        r.cuda_missing = "exhaustive search runs on the CPU only (the reference of the "
                         "other detectors)";
        r.defaults = "no parameters";
    }
    row("zf", true, make_linear_kernel).defaults = "no parameters";
    row("mmse", true, make_linear_kernel).defaults = "no parameters";
    {
        algorithm_info& r = row("psd", false, make_psd_kernel);
        r.uses_deadline = true;
        r.defaults =
            "psd_lvl/psd_exp: the depth-first set (lvl 2 n_tx + 1, ..., 1, exp all "
            "1) on both backends; sorted_qr -1 (sorted QR for that set, plain for "
            "the paper's sets); psd_deadline_us 0 (exact ML)";
    }
    row("fsd", false, make_fsd_kernel).defaults = "fsd_full_levels 1";
    row("sfsd", true, make_sfsd_kernel).defaults =
        "fsd_full_levels 1; sfsd_niter 2/4/6 for QPSK/16QAM/64QAM";
    row("mtt", true, make_mtt_kernel).defaults = "sorted_qr 1 (sorted QR)";
    // The CUDA backend's factories (none without it).
    register_cuda_detectors([&rows](const std::string& name, cuda_detector_factory f) {
        for (auto& r : rows)
            if (name == r.name) {
                r.make_cuda = f;
                return;
            }
        throw std::logic_error("mimodet: CUDA detector for unknown algorithm '" + name +
                               "'");
    });
    return rows;
}

std::string join(bool soft_only)
{
    std::string s;
    for (const auto& r : algorithm_registry())
        if (!soft_only || r.soft)
            s += (s.empty() ? "" : ", ") + std::string(r.name);
    return s;
}

} // namespace

const std::vector<algorithm_info>& algorithm_registry()
{
    static const std::vector<algorithm_info> rows = make_rows();
    return rows;
}

const algorithm_info& find_algorithm(const std::string& name)
{
    for (const auto& r : algorithm_registry())
        if (name == r.name)
            return r;
    throw std::invalid_argument("mimodet: unknown algorithm '" + name +
                                "' (expected one of " + algorithm_names() + ")");
}

std::string algorithm_names() { return join(false); }
std::string soft_algorithm_names() { return join(true); }

std::string cuda_missing_reason(const algorithm_info& row)
{
    if (row.make_cuda)
        return std::string();
    if (!cuda_built())
        return "built without CUDA";
    return *row.cuda_missing ? row.cuda_missing : "no CUDA implementation";
}

std::unique_ptr<cpu_kernel> make_cpu_kernel(const detector_config& cfg)
{
    return find_algorithm(cfg.algorithm).make_cpu(cfg);
}

} // namespace core

std::vector<std::string> detector_algorithms()
{
    std::vector<std::string> names;
    for (const auto& r : core::algorithm_registry())
        names.emplace_back(r.name);
    return names;
}

std::vector<std::string> algorithms() { return detector_algorithms(); }

bool detector_algorithm_soft(const std::string& algorithm)
{
    return core::find_algorithm(algorithm).soft;
}

backend_kind parse_backend(const std::string& name)
{
    if (name == "cpu")
        return backend_kind::cpu;
    if (name == "cuda")
        return backend_kind::cuda;
    if (name == "auto")
        return backend_kind::automatic;
    throw std::invalid_argument("mimodet: unknown backend '" + name +
                                "' (expected cpu, cuda or auto)");
}

std::string to_string(backend_kind backend)
{
    switch (backend) {
    case backend_kind::cpu:
        return "cpu";
    case backend_kind::cuda:
        return "cuda";
    case backend_kind::automatic:
        return "auto";
    }
    throw std::invalid_argument("mimodet: invalid backend value " +
                                std::to_string(static_cast<int>(backend)));
}

} // namespace mimodet
} // namespace gr
