/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "util/call_timeline.h"
#include "util/tuning.h"
#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace gr {
namespace mimodet {
namespace core {

namespace {
//! Values kept per timeline: ample for a benchmark run (about 100 000 calls of 10
//! values), allocated once so that recording never reallocates in a stream.
constexpr size_t k_capacity_values = 1 << 20;
std::atomic<int> g_files{ 0 };
} // namespace

std::unique_ptr<call_timeline> call_timeline::make(const std::string& kind,
                                                   std::vector<std::string> columns)
{
    const std::string prefix = tuning::call_timeline_prefix();
    if (prefix.empty())
        return nullptr;
    const std::string path =
        prefix + "_" + kind + "_" + std::to_string(g_files++) + ".csv";
    return std::unique_ptr<call_timeline>(new call_timeline(path, std::move(columns)));
}

call_timeline::call_timeline(std::string path, std::vector<std::string> columns)
    : d_path(std::move(path)), d_columns(std::move(columns))
{
    d_values.reserve(k_capacity_values);
}

void call_timeline::add(std::initializer_list<double> row)
{
    if (row.size() != d_columns.size() || d_values.size() + row.size() > d_values.capacity())
        return;
    d_values.insert(d_values.end(), row.begin(), row.end());
}

call_timeline::~call_timeline()
{
    FILE* f = std::fopen(d_path.c_str(), "w");
    if (!f)
        return; // measurement only: nothing to report to
    for (size_t c = 0; c < d_columns.size(); ++c)
        std::fprintf(f, "%s%s", c ? "," : "", d_columns[c].c_str());
    std::fprintf(f, "\n");
    const size_t nc = d_columns.size();
    for (size_t i = 0; i + nc <= d_values.size(); i += nc)
        for (size_t c = 0; c < nc; ++c)
            std::fprintf(f, c + 1 < nc ? "%.0f," : "%.0f\n", d_values[i + c]);
    std::fclose(f);
}

} // namespace core
} // namespace mimodet
} // namespace gr
