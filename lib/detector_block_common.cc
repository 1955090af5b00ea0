/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detector_block_common.h"
#include "util/tuning.h"
#include <gnuradio/logger.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <cmath>
#include <stdexcept>
#include <thread>

namespace gr {
namespace mimodet {

void check_block_config(const std::string& block,
                        const detector_config& cfg,
                        double bandwidth_mhz,
                        bool soft_output)
{
    const std::string who = "mimodet: " + block + ": ";
    lte_numerology::from_bandwidth(bandwidth_mhz); // throws for unknown bandwidths
    if (cfg.n_tx != 1 && cfg.n_tx != 2 && cfg.n_tx != 4)
        throw std::invalid_argument(who + "n_tx must be 1, 2 or 4, got " +
                                    std::to_string(cfg.n_tx));
    if (cfg.n_rx < cfg.n_tx || cfg.n_rx > 8)
        throw std::invalid_argument(who + "n_rx must be n_tx..8, got " +
                                    std::to_string(cfg.n_rx));
    const std::string& algorithm = cfg.algorithm;
    // The registry's rule; an unknown algorithm throws, naming the valid ones.
    const bool soft = detector_algorithm_soft(algorithm);
    if (soft_output && !soft)
        throw std::invalid_argument(who + "algorithm '" + algorithm +
                                    "' gives hard bits only; soft_output needs an "
                                    "algorithm with LLR output");
}

detector_config stall_bounded(const std::string& block,
                              detector_config cfg,
                              double slot_limit_us)
{
    if (!std::isfinite(slot_limit_us) || slot_limit_us < 0.0 || slot_limit_us > 1e9)
        throw std::invalid_argument("mimodet: " + block +
                                    ": slot_limit_us must be finite and between 0 (no "
                                    "bound) and 1e9 microseconds, got " +
                                    std::to_string(slot_limit_us));
    if (cfg.algorithm == "psd" && cfg.psd_deadline_us == 0.0 && slot_limit_us > 0.0)
        cfg.psd_deadline_us = slot_limit_us;
    return cfg;
}

int slot_from_tags(std::vector<gr::tag_t>::const_iterator first,
                   std::vector<gr::tag_t>::const_iterator last,
                   uint64_t abs_item,
                   int next_ns,
                   bool& tagged,
                   gr::logger& logger)
{
    int ns = next_ns;
    tagged = false;
    for (; first != last; ++first) {
        const long v = pmt::is_integer(first->value) ? pmt::to_long(first->value) : -1;
        if (v >= 0 && v < lte_numerology::slots_per_frame) {
            ns = static_cast<int>(v);
            tagged = true;
        } else {
            logger.error("slot tag with invalid value {} at item {}; using slot {}",
                         pmt::write_string(first->value),
                         abs_item,
                         ns);
        }
    }
    return ns;
}

int slot_cell::update(const std::vector<gr::tag_t>& tags, uint64_t abs_item, gr::logger& logger)
{
    if (!d_auto)
        return d_cell;
    for (const auto& t : tags) {
        if (t.offset != abs_item)
            continue;
        const long v = pmt::is_integer(t.value) ? pmt::to_long(t.value) : -1;
        if (v >= 0 && v <= 503) {
            if (v != d_cell && d_cell >= 0)
                logger.info("cell id {} from item {} on (was {})", v, abs_item, d_cell);
            d_cell = static_cast<int>(v);
        } else {
            logger.error("cell_id tag with invalid value {} at item {}; ignored",
                         pmt::write_string(t.value),
                         abs_item);
        }
    }
    return d_cell;
}

int checked_cell_id(const char* block, int cell_id)
{
    if (cell_id < -1 || cell_id > 503)
        throw std::invalid_argument(std::string("mimodet: ") + block +
                                    ": cell_id must be 0..503, or -1 to take it from the "
                                    "slots' cell_id tags; got " +
                                    std::to_string(cell_id));
    return cell_id;
}

void count_untagged(std::atomic<uint64_t>& untagged,
                    const char* what,
                    uint64_t abs_item,
                    int ns,
                    gr::logger& logger)
{
    if (untagged == 0)
        logger.warn("{} {} has no slot tag; counting slots from the last one (slot {})",
                    what,
                    abs_item,
                    ns);
    ++untagged;
}

void count_degenerate(std::atomic<uint64_t>& bad,
                      size_t n_degenerate,
                      size_t n_vectors,
                      int ns,
                      uint64_t abs_item,
                      gr::logger& logger)
{
    if (bad == 0 || (bad + 1) % 1000 == 0)
        logger.error("slot {} (item {}): {} of {} vectors on a rank-deficient or zero "
                     "channel or with saturated LLRs; tagged 'degenerate' ({} bad slots "
                     "so far)",
                     ns,
                     abs_item,
                     n_degenerate,
                     n_vectors,
                     bad + 1);
    ++bad;
}

slot_report::slot_report()
    : d_slot_key(pmt::mp("slot")), d_truncated_key(pmt::mp("truncated")),
      d_degenerate_key(pmt::mp("degenerate"))
{
}

const std::vector<gr::tag_t>& slot_report::add(
    const outcome& o, int ns, uint64_t abs_item, uint64_t out_item, gr::logger& logger)
{
    d_tags.clear();
    const auto tag = [&](const pmt::pmt_t& key, long value) {
        gr::tag_t t;
        t.offset = out_item;
        t.key = key;
        t.value = pmt::from_long(value);
        d_tags.push_back(t);
    };
    if (!o.why.empty()) {
        if (bad == 0 || (bad + 1) % 1000 == 0)
            logger.error(
                "slot {} (item {}): {}; output set to zeros ({} bad slots so far)",
                ns,
                abs_item,
                o.why,
                bad + 1);
        ++bad;
    }
    tag(d_slot_key, ns);
    if (o.why.empty() && o.truncated > 0) {
        // The deadline cut some searches short: downstream may weigh this slot's bits
        // accordingly (they are valid decisions, not necessarily ML).
        tag(d_truncated_key, static_cast<long>(o.truncated));
        ++truncated;
    }
    if (o.why.empty() && o.degenerate > 0) {
        count_degenerate(bad, o.degenerate, o.n_vectors, ns, abs_item, logger);
        tag(d_degenerate_key, static_cast<long>(o.degenerate));
    }
    ++slots;
    return d_tags;
}

const char* const k_no_cell = "no cell id known (cell_id -1 and no cell_id tag so far)";

void route_core_log()
{
    static const auto core_logger = std::make_shared<gr::logger>("mimodet core");
    set_log_handler(
        [logger = core_logger](const std::string& level, const std::string& msg) {
            if (level == "error")
                logger->error("{}", msg);
            else if (level == "warn" || level == "warning")
                logger->warn("{}", msg);
            else if (level == "debug")
                logger->debug("{}", msg);
            else
                logger->info("{}", msg);
        });
}

int env_override(const char* name, int lo, int hi, int fallback)
{
    return core::tuning::integer(name, lo, hi, fallback);
}

// 0 -> min(hardware threads, pairs, 4): the pairs bound the LS phase's parallelism, and
// more threads take cores from the other blocks: in the 20 MHz 4x4 receiver at 2000
// slots/s on 16 cores, 4 threads gave the same estimator busy time as 16 and a p99
// latency below 1 ms instead of 1.2-2.4 ms (measured on an H100 host). 8 threads make a
// 20 MHz 4x4 slot 0.003-0.03 ms faster there (docs/PERFORMANCE.md, "Channel
// estimation"), but their effect on the receiver's p99 is not measured, so the default
// is 4.
constexpr int k_default_max_estimator_threads = 4;

int estimator_threads(const std::string& block, int threads, int n_tx, int n_rx)
{
    if (threads < 0 || threads > 256)
        throw std::invalid_argument("mimodet: " + block +
                                    ": threads must be 0..256, got " +
                                    std::to_string(threads));
    if (threads > 0)
        return threads;
    const int hw = static_cast<int>(std::thread::hardware_concurrency());
    return std::max(
        1, std::min({ hw > 0 ? hw : 1, n_tx * n_rx, k_default_max_estimator_threads }));
}

long output_buffer_items(size_t items_per_slot, size_t slots_per_call)
{
    return static_cast<long>(items_per_slot * (2 * slots_per_call + 1));
}

} // namespace mimodet
} // namespace gr
