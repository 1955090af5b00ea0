/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CPU detection kernels: one object per worker thread, working on one channel matrix and
// the symbols that share it. Double precision throughout, so the tests can compare
// against exhaustive search to 1e-4 and so that ties are rare.

#ifndef INCLUDED_MIMODET_CORE_KERNEL_H
#define INCLUDED_MIMODET_CORE_KERNEL_H

#include "detect/llr.h" // maxlog_llr
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/detector.h>
#include <Eigen/Dense>
#include <chrono>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>

namespace gr {
namespace mimodet {
namespace core {

using cd = std::complex<double>;
using MatC = Eigen::Matrix<cd, Eigen::Dynamic, Eigen::Dynamic>;
using VecC = Eigen::Matrix<cd, Eigen::Dynamic, 1>;
using MatR = Eigen::MatrixXd;
using VecR = Eigen::VectorXd;

class cpu_kernel
{
public:
    virtual ~cpu_kernel() = default;
    /*!
     * H: n_rx x n_tx; y: n_sym received vectors of n_rx samples, contiguous.
     * Hard kernels write bits[n_sym][n_tx*q] (llr is null); soft kernels write
     * llr[n_sym][n_tx*q] (bits is null; the caller derives bits from the signs).
     * stats (may be null): one entry per symbol.
     */
    virtual void detect(const MatC& H,
                        const cd* y,
                        int n_sym,
                        double noise_var,
                        uint8_t* bits,
                        float* llr,
                        vector_stats* stats) = 0;
    //! Called by the CPU detector at the start of every detect call, before any detect()
    //! of that call: the reference of per-call budgets (the PSD's deadline). Default:
    //! nothing.
    virtual void begin_call(std::chrono::steady_clock::time_point start) { (void)start; }
    //! Called by the CPU detector on the thread that will run this kernel, before its
    //! first detect() of a call: a function that returns true where the call is to stop
    //! (cancellation), for kernels whose work per vector is unbounded (the PSD without
    //! its node budget) to look at inside a vector's search. Null: none. Default: ignored
    //! (the detector itself checks between vectors).
    virtual void set_stop(const std::function<bool()>* stop) { (void)stop; }
    //! Channel matrices the kernel preprocesses together (preprocess()); 1: none, each
    //! detect() preprocesses its own matrix.
    virtual int preprocess_group() const { return 1; }
    /*!
     * H[0..n), n <= preprocess_group(): the matrices of the detect() calls that follow,
     * in their order, preprocessed together (the CPU PSD's sorted QRs in SIMD lanes).
     * A hint: detect() recognises a matrix by its contents and gives the same results
     * with or without it. Default: nothing.
     */
    virtual void preprocess(const MatC* const* H, int n)
    {
        (void)H;
        (void)n;
    }
};

//! Validates the algorithm-specific parts of cfg (throws std::invalid_argument) and
//! builds one kernel by the algorithm registry's factory. Called once per worker thread.
std::unique_ptr<cpu_kernel> make_cpu_kernel(const detector_config& cfg);

// Factories of the individual algorithms (each file validates its own parameters).
std::unique_ptr<cpu_kernel> make_ml_kernel(const detector_config& cfg);
std::unique_ptr<cpu_kernel> make_linear_kernel(const detector_config& cfg); // zf, mmse
std::unique_ptr<cpu_kernel> make_psd_kernel(const detector_config& cfg);
std::unique_ptr<cpu_kernel> make_fsd_kernel(const detector_config& cfg);
std::unique_ptr<cpu_kernel> make_sfsd_kernel(const detector_config& cfg);
std::unique_ptr<cpu_kernel> make_mtt_kernel(const detector_config& cfg);

//! Writes the q label bits of symbol label `label` (b0 first) to out[0..q-1].
inline void label_to_bits(int label, int q, uint8_t* out)
{
    for (int b = 0; b < q; ++b)
        out[b] = static_cast<uint8_t>((label >> (q - 1 - b)) & 1);
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
