/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The benchmark's output: the table on stdout (scripts/measure/flowgraph-* read it) and
// one CSV row per run.

#ifndef INCLUDED_MIMODET_FLOWGRAPH_BENCH_REPORT_H
#define INCLUDED_MIMODET_FLOWGRAPH_BENCH_REPORT_H

#include "options.h"
#include "run.h"
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

namespace fg_bench {

//! What one run measured: the configuration of a table row.
//! The run's parameters and the table's column names.
void print_table_header(const options& o);

//! The row of a run (or the line saying why it was skipped) and its notes.
void print_row(const options& o, const run_config& c, const run_result& r);

//! --carriers: a row per carrier (and a CSV row each where csv is open), then a summary:
//! the slowest carrier's slots/s, the worst p99, lost and late slots, and whether every
//! carrier held real time (the offered rate, p99 <= 1 ms, no slot lost or bad). Returns
//! the number of carriers that failed to run.
int report_carriers(const options& o,
                    const run_config& c,
                    const std::vector<run_result>& rs,
                    std::ofstream& csv);

//! The CSV's header line (the columns of write_csv_row).
std::string csv_header();
void write_csv_row(std::ostream& csv,
                   const options& o,
                   const run_config& c,
                   const run_result& r);

} // namespace fg_bench

#endif
