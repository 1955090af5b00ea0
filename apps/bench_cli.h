/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Command-line helpers shared by the benchmarks in apps/: comma lists, checked numbers,
// allowed values, antenna configurations.

#ifndef INCLUDED_MIMODET_APPS_BENCH_CLI_H
#define INCLUDED_MIMODET_APPS_BENCH_CLI_H

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bench_cli {

//! argv[i + 1], the value of option opt (argv[i]), with i moved onto it; an error naming
//! opt where the command line ends first.
inline std::string value_after(const std::string& opt, int argc, char** argv, int& i)
{
    if (i + 1 >= argc)
        throw std::invalid_argument("missing value after " + opt);
    return argv[++i];
}

//! "a,b,,c" -> {a, b, c}.
inline std::vector<std::string> split(const std::string& s)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty())
            out.push_back(item);
    return out;
}

//! The whole of v as a finite number, else std::invalid_argument naming opt.
inline double to_double(const std::string& opt, const std::string& v)
{
    size_t pos = 0;
    double x;
    try {
        x = std::stod(v, &pos);
    } catch (const std::exception&) {
        throw std::invalid_argument(opt + ": '" + v + "' is not a number");
    }
    if (pos != v.size() || !std::isfinite(x))
        throw std::invalid_argument(opt + ": '" + v + "' is not a finite number");
    return x;
}

inline long to_int(const std::string& opt, const std::string& v)
{
    const double x = to_double(opt, v);
    if (x != std::floor(x) || std::fabs(x) > 2e9)
        throw std::invalid_argument(opt + ": '" + v + "' is not an integer");
    return static_cast<long>(x);
}

//! f(opt, item) for every item of the comma list s; an empty list is an error.
template <typename F>
auto split_map(const std::string& opt, const std::string& s, F f)
{
    std::vector<decltype(f(opt, s))> out;
    for (const auto& x : split(s))
        out.push_back(f(opt, x));
    if (out.empty())
        throw std::invalid_argument(opt + ": empty list");
    return out;
}

//! Every value one of allowed, and at least one value.
inline void check_in(const std::string& opt,
                     const std::vector<std::string>& values,
                     const std::vector<std::string>& allowed)
{
    if (values.empty())
        throw std::invalid_argument(opt + ": empty list");
    for (const auto& v : values)
        if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
            std::string a;
            for (const auto& x : allowed)
                a += (a.empty() ? "" : ", ") + x;
            throw std::invalid_argument(opt + ": '" + v + "' is not one of " + a);
        }
}

//! "2x2,4x4" -> {(2, 2), (4, 4)} (n_tx, n_rx).
inline std::vector<std::pair<int, int>> parse_configs(const std::string& s)
{
    std::vector<std::pair<int, int>> out;
    for (const auto& x : split(s)) {
        const auto p = x.find('x');
        if (p == std::string::npos)
            throw std::invalid_argument("--config: NTXxNRX, got " + x);
        out.emplace_back(std::stoi(x.substr(0, p)), std::stoi(x.substr(p + 1)));
    }
    return out;
}

//! Percentile p (0..1) of the values: the sorted value at index round(p (n - 1)); 0 for
//! none. (The benchmarks' timing columns.)
inline double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

} // namespace bench_cli

#endif
