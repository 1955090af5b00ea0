/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The command line of every program in apps/: bench_cli::parser declares each option
// once (name, value, help text, default, range or allowed values) and generates --help
// from the declarations; the free functions below are its pieces (comma lists, checked
// numbers, allowed values, antenna configurations) and the benchmarks' percentile.

#ifndef INCLUDED_MIMODET_APPS_BENCH_CLI_H
#define INCLUDED_MIMODET_APPS_BENCH_CLI_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace bench_cli {

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
    if (x != std::floor(x) || std::fabs(x) > 9e15)
        throw std::invalid_argument(opt + ": '" + v + "' is not an integer");
    return static_cast<long>(x);
}

//! "a, b, c"
inline std::string join(const std::vector<std::string>& v, const char* sep = ", ")
{
    std::string s;
    for (const auto& x : v)
        s += (s.empty() ? "" : sep) + x;
    return s;
}

//! Every value one of allowed, and at least one value.
inline void check_in(const std::string& opt,
                     const std::vector<std::string>& values,
                     const std::vector<std::string>& allowed)
{
    if (values.empty())
        throw std::invalid_argument(opt + ": empty list");
    for (const auto& v : values)
        if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
            throw std::invalid_argument(opt + ": '" + v + "' is not one of " +
                                        join(allowed));
}

//! "2x2,4x4" -> {(2, 2), (4, 4)} (n_tx, n_rx).
inline std::vector<std::pair<int, int>> parse_configs(const std::string& opt,
                                                      const std::string& s)
{
    std::vector<std::pair<int, int>> out;
    for (const auto& x : split(s)) {
        const auto p = x.find('x');
        if (p == std::string::npos)
            throw std::invalid_argument(opt + ": NTXxNRX, got " + x);
        out.emplace_back(static_cast<int>(to_int(opt, x.substr(0, p))),
                         static_cast<int>(to_int(opt, x.substr(p + 1))));
    }
    if (out.empty())
        throw std::invalid_argument(opt + ": empty list");
    return out;
}

//! The modulations' names, as the detectors take them.
inline const std::vector<std::string> k_modulations = { "qpsk", "16qam", "64qam" };

//! Percentile p (0..1) of the values: the sorted value at index round(p (n - 1)); 0 for
//! none. (The benchmarks' timing columns.)
inline double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

/*!
 * A program's options: each is declared once, bound to the variable that holds its
 * default and receives its value, with its help text and its checks (a number's range,
 * a word's allowed values). parse() fills the variables or throws std::invalid_argument
 * with a message that starts with the option's name; --help (or -h) prints the
 * generated usage, with each option's default, and makes parse() return false.
 */
class parser
{
public:
    parser(std::string program, std::string summary)
        : d_program(std::move(program)), d_summary(std::move(summary))
    {
    }

    //! A switch without a value: target = value when given.
    parser& flag(const std::string& name,
                 bool& target,
                 const std::string& help,
                 bool value = true)
    {
        return add(name, "", help, "", false, [&target, value](const std::string&) {
            target = value;
        });
    }

    //! One number in [lo, hi] (integer types: whole numbers only).
    template <typename T>
    parser& number(const std::string& name,
                   T& target,
                   const std::string& metavar,
                   const std::string& help,
                   double lo,
                   double hi)
    {
        return add(name,
                   metavar,
                   help,
                   show(target),
                   true,
                   [&target, name, lo, hi](const std::string& v) {
                       target = checked<T>(name, v, lo, hi);
                   });
    }

    //! A comma list of numbers, each in [lo, hi]; at least one.
    template <typename T>
    parser& numbers(const std::string& name,
                    std::vector<T>& target,
                    const std::string& metavar,
                    const std::string& help,
                    double lo,
                    double hi)
    {
        std::vector<std::string> d;
        for (const T& x : target)
            d.push_back(show(x));
        return add(name,
                   metavar,
                   help,
                   join(d, ","),
                   true,
                   [&target, name, lo, hi](const std::string& v) {
                       target.clear();
                       for (const auto& x : split(v))
                           target.push_back(checked<T>(name, x, lo, hi));
                       if (target.empty())
                           throw std::invalid_argument(name + ": empty list");
                   });
    }

    //! A word; one of allowed unless allowed is empty (any text).
    parser& text(const std::string& name,
                 std::string& target,
                 const std::string& metavar,
                 const std::string& help,
                 std::vector<std::string> allowed = {})
    {
        const std::string shown = allowed.empty() ? metavar : join(allowed, "|");
        return add(name,
                   shown,
                   help,
                   target,
                   true,
                   [&target, name, allowed](const std::string& v) {
                       if (!allowed.empty())
                           check_in(name, { v }, allowed);
                       target = v;
                   });
    }

    //! A comma list of words, each one of allowed (any word when allowed is empty).
    parser& words(const std::string& name,
                  std::vector<std::string>& target,
                  const std::string& metavar,
                  const std::string& help,
                  std::vector<std::string> allowed = {})
    {
        return add(name,
                   metavar,
                   help,
                   join(target, ","),
                   true,
                   [&target, name, allowed](const std::string& v) {
                       const auto w = split(v);
                       if (allowed.empty()) {
                           if (w.empty())
                               throw std::invalid_argument(name + ": empty list");
                       } else
                           check_in(name, w, allowed);
                       target = w;
                   });
    }

    //! A comma list of antenna configurations NTXxNRX (n_tx 1, 2 or 4; n_rx 1..8).
    parser& configs(const std::string& name,
                    std::vector<std::pair<int, int>>& target,
                    const std::string& help)
    {
        std::vector<std::string> d;
        for (const auto& c : target)
            d.push_back(std::to_string(c.first) + "x" + std::to_string(c.second));
        return add(name,
                   "LIST",
                   help,
                   join(d, ","),
                   true,
                   [&target, name](const std::string& v) {
                       auto c = parse_configs(name, v);
                       for (const auto& x : c)
                           if ((x.first != 1 && x.first != 2 && x.first != 4) ||
                               x.second < 1 || x.second > 8)
                               throw std::invalid_argument(
                                   name + ": n_tx 1, 2 or 4 and n_rx 1..8");
                       target = std::move(c);
                   });
    }

    //! Anything else: set(value) parses and stores it (std::invalid_argument on bad
    //! input); shown_default is what --help gives as the default ("" for none).
    parser& custom(const std::string& name,
                   const std::string& metavar,
                   const std::string& help,
                   const std::string& shown_default,
                   std::function<void(const std::string&)> set)
    {
        return add(name, metavar, help, shown_default, true, std::move(set));
    }

    //! Text printed after the options.
    parser& epilog(const std::string& text)
    {
        d_epilog += text;
        return *this;
    }

    //! false when --help was given (the usage is printed), else true; throws
    //! std::invalid_argument for an unknown option, a missing or a bad value.
    bool parse(int argc, char** argv)
    {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "-h" || a == "--help") {
                print_help(std::cout);
                return false;
            }
            const auto it = std::find_if(d_opts.begin(),
                                         d_opts.end(),
                                         [&](const option& o) { return o.name == a; });
            if (it == d_opts.end())
                throw std::invalid_argument("unknown option " + a +
                                            " (--help for usage)");
            if (!it->takes_value) {
                it->set("");
                continue;
            }
            if (i + 1 >= argc)
                throw std::invalid_argument("missing value after " + a);
            it->set(argv[++i]);
        }
        return true;
    }

    void print_help(std::ostream& os) const
    {
        os << "usage: " << d_program << " [options]\n";
        if (!d_summary.empty())
            os << d_summary << (d_summary.back() == '\n' ? "" : "\n");
        constexpr size_t col = 21;
        const std::string indent(col, ' ');
        for (const auto& o : d_opts) {
            std::string head = "  " + o.name + (o.metavar.empty() ? "" : " " + o.metavar);
            std::string help = o.help;
            if (!o.shown_default.empty())
                help += " (default " + o.shown_default + ")";
            std::istringstream lines(help);
            std::string line;
            bool first = true;
            while (std::getline(lines, line)) {
                if (first) {
                    os << head;
                    if (head.size() + 1 < col)
                        os << std::string(col - head.size(), ' ');
                    else
                        os << "\n" << indent;
                    first = false;
                } else
                    os << indent;
                os << line << "\n";
            }
            if (first)
                os << head << "\n";
        }
        if (!d_epilog.empty())
            os << d_epilog << (d_epilog.back() == '\n' ? "" : "\n");
    }

private:
    struct option {
        std::string name, metavar, help, shown_default;
        bool takes_value;
        std::function<void(const std::string&)> set;
    };

    parser& add(const std::string& name,
                const std::string& metavar,
                const std::string& help,
                const std::string& shown_default,
                bool takes_value,
                std::function<void(const std::string&)> set)
    {
        for (const auto& o : d_opts)
            if (o.name == name)
                throw std::logic_error("bench_cli: option " + name + " declared twice");
        d_opts.push_back(
            { name, metavar, help, shown_default, takes_value, std::move(set) });
        return *this;
    }

    template <typename T>
    static T checked(const std::string& name, const std::string& v, double lo, double hi)
    {
        const double x = std::is_integral<T>::value ? static_cast<double>(to_int(name, v))
                                                    : to_double(name, v);
        if (!(x >= lo && x <= hi)) {
            std::ostringstream m;
            m << name << ": '" << v << "' is outside " << lo << " .. " << hi;
            throw std::invalid_argument(m.str());
        }
        return static_cast<T>(x);
    }

    template <typename T>
    static std::string show(const T& x)
    {
        std::ostringstream s;
        s << x;
        return s.str();
    }

    std::string d_program, d_summary, d_epilog;
    std::vector<option> d_opts;
};

//! main()'s handling of its command line: runs parse() (false after --help) and gives
//! nullopt to go on, else the exit status: 0 after --help, 2 after a bad command line,
//! whose message goes to stderr after the program's name.
template <typename F>
std::optional<int> command_line(const char* program, F parse)
{
    try {
        if (parse())
            return std::nullopt;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << program << ": " << e.what() << " (--help for usage)\n";
        return 2;
    }
}

//! The options of the benchmarks of one core stage: --bandwidth LIST (MHz) and --config
//! LIST (antennas).
inline parser& stage_options(parser& p,
                             std::vector<double>& bandwidths,
                             std::vector<std::pair<int, int>>& configs)
{
    return p
        .numbers(
            "--bandwidth", bandwidths, "LIST", "MHz, from 1.4, 3, 5, 10, 15, 20", 1.4, 20)
        .configs("--config", configs, "NTXxNRX, n_tx 1/2/4, n_rx 1..8");
}

//! Opens path for CSV rows and writes the header line (nothing where path is empty);
//! false, with the reason on stderr, where the file cannot be written.
inline bool open_csv(const std::string& program,
                     const std::string& path,
                     const std::string& header,
                     std::ofstream& csv)
{
    if (path.empty())
        return true;
    csv.open(path);
    if (!csv) {
        std::cerr << program << ": cannot write " << path << "\n";
        return false;
    }
    csv << header << '\n';
    return true;
}

} // namespace bench_cli

#endif
