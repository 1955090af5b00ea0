/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Measurement only: per-call timestamps of a pipeline stage, kept in memory and written
// to PREFIX_<kind>_<n>.csv when the object goes away, where MIMODET_CALL_TIMELINE=PREFIX
// is set (tuning.h, docs/TUNING.md). docs/PERFORMANCE.md uses it to see which part of a
// slow detector call (gather, copies, kernels, waits, scatter) took the time.
//
// An optional observer: a stage holds the unique_ptr that make() returns, null when the
// switch is unset, and reads the clock (now_ns()) only where that pointer is set, so a
// stage without a timeline pays one predictable branch per time stamp and nothing else.

#ifndef INCLUDED_MIMODET_CORE_CALL_TIMELINE_H
#define INCLUDED_MIMODET_CORE_CALL_TIMELINE_H

#include <gnuradio/mimodet/api.h>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

class MIMODET_API call_timeline
{
public:
    //! Null unless MIMODET_CALL_TIMELINE is set; columns name each row's values.
    static std::unique_ptr<call_timeline> make(const std::string& kind,
                                               std::vector<std::string> columns);
    ~call_timeline(); // writes the file

    //! steady_clock now in ns, the clock of the flowgraph benchmark's slot stamps.
    static int64_t now_ns()
    {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    //! One row (as many values as columns). Rows past the capacity are dropped.
    void add(std::initializer_list<double> row);

private:
    call_timeline(std::string path, std::vector<std::string> columns);

    std::string d_path;
    std::vector<std::string> d_columns;
    std::vector<double> d_values; //!< rows one after another, capacity fixed up front
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
