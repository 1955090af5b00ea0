/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The algorithm registry: one row per detection algorithm with everything the library
// knows about it by name (soft or hard output, the CPU kernel's factory, which validates
// its parameters, the CUDA detector's factory or why there is none, the defaults of its
// parameters). detector::make, the lists of algorithms (C++, Python, the blocks' checks,
// the benchmarks) and the soft/hard rule all read it. The CUDA backend fills in its
// factories through one hook (backend.h: register_cuda_detectors).

#ifndef INCLUDED_MIMODET_CORE_ALGORITHM_REGISTRY_H
#define INCLUDED_MIMODET_CORE_ALGORITHM_REGISTRY_H

#include <functional>
#include <gnuradio/mimodet/detector.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

class cpu_kernel;

//! Builds one CPU kernel for cfg; throws std::invalid_argument for invalid parameters.
using cpu_kernel_factory = std::unique_ptr<cpu_kernel> (*)(const detector_config& cfg);
//! Builds a CUDA detector for cfg (validated by the CPU factory first); throws
//! cuda_unsupported where the configuration lies outside its kernels' limits.
using cuda_detector_factory = detector::sptr (*)(const detector_config& cfg);

/*!
 * Thrown by a CUDA factory for a valid configuration its kernels do not cover (a limit
 * of the GPU implementation, not an error of the configuration). detector::make alone
 * decides what follows: backend cuda reports it, backend auto takes the CPU.
 */
class cuda_unsupported : public std::invalid_argument
{
public:
    using std::invalid_argument::invalid_argument;
};

//! One algorithm.
struct algorithm_info {
    const char* name = "";
    bool soft = false; //!< LLR output (detect_llr), else hard bits only
    //! Builds a CPU kernel; building one validates the algorithm's parameters.
    cpu_kernel_factory make_cpu = nullptr;
    //! The CUDA detector's factory (register_cuda_detectors); nullptr: none, see
    //! cuda_missing.
    cuda_detector_factory make_cuda = nullptr;
    //! Why the algorithm has no CUDA detector in any build (empty where it has one).
    const char* cuda_missing = "";
    //! Whether detector_config::psd_deadline_us and psd_node_budget apply (other
    //! algorithms refuse a deadline or an explicit budget: their work is fixed by their
    //! parameters).
    bool uses_deadline = false;
    //! The defaults of the algorithm's parameters that are left unset (-1 or empty).
    const char* defaults = "";
};

//! Every algorithm, one row each, in the order of detector_algorithms().
const std::vector<algorithm_info>& algorithm_registry();
//! The row of name; std::invalid_argument naming the valid algorithms otherwise.
const algorithm_info& find_algorithm(const std::string& name);
//! "ml, zf, mmse, psd, fsd, sfsd, mtt": the names, for messages.
std::string algorithm_names();
//! The soft algorithms' names, for messages.
std::string soft_algorithm_names();
//! Why row has no CUDA detector in this build (empty where it has one).
std::string cuda_missing_reason(const algorithm_info& row);

//! The CUDA backend's hook: add(name, factory) for each algorithm it implements.
using cuda_registrar =
    std::function<void(const std::string& algorithm, cuda_detector_factory)>;

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
