/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Shared pieces of the cancellation tests (qa_cancellation.cc, qa_gpu_cancellation.cc):
// the ML configuration whose calls run long, and a thread that cancels a detector.

#ifndef INCLUDED_MIMODET_QA_CANCELLATION_COMMON_H
#define INCLUDED_MIMODET_QA_CANCELLATION_COMMON_H

#include "qa_common.h"
#include <atomic>
#include <chrono>
#include <gnuradio/mimodet/detector.h>
#include <string>
#include <thread>

namespace qa {

using clk = std::chrono::steady_clock;

inline double seconds_since(clk::time_point t)
{
    return std::chrono::duration<double>(clk::now() - t).count();
}

//! ML 3x3 64QAM: 2^18 candidates per vector, so a batch of a few thousand runs seconds.
inline gr::mimodet::detector_config long_ml_config(const std::string& backend,
                                                   int threads = 0)
{
    gr::mimodet::detector_config cfg;
    // Exact ML either way: the exhaustive search on the CPU; the GPU has no exhaustive
    // kernel, its exact detector is psd.
    cfg.algorithm = backend == "cuda" ? "psd" : "ml";
    cfg.n_tx = 3;
    cfg.n_rx = 3;
    cfg.mod = modulation::qam64;
    cfg.backend = gr::mimodet::parse_backend(backend);
    cfg.threads = threads;
    return cfg;
}

//! Cancels det `delay_s` after start() (from its own thread); sent() is when it did.
class canceller
{
public:
    canceller(gr::mimodet::detector& det, double delay_s) : d_det(det), d_delay(delay_s)
    {
    }
    ~canceller() { join(); }
    void start()
    {
        d_thread = std::thread([this] {
            std::this_thread::sleep_for(std::chrono::duration<double>(d_delay));
            d_sent = clk::now();
            d_det.cancel();
        });
    }
    void join()
    {
        if (d_thread.joinable())
            d_thread.join();
    }
    //! After join().
    clk::time_point sent() const { return d_sent; }

private:
    gr::mimodet::detector& d_det;
    double d_delay;
    std::thread d_thread;
    clk::time_point d_sent{};
};

} // namespace qa

#endif
