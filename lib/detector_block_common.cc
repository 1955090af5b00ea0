/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detector_block_common.h"
#include <gnuradio/logger.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>

namespace gr {
namespace mimodet {

detector_config make_detector_block_config(const std::string& block,
                                           const std::string& algorithm,
                                           double bandwidth_mhz,
                                           int n_tx,
                                           int n_rx,
                                           const std::string& modulation,
                                           const std::string& backend,
                                           bool soft_output,
                                           const std::vector<int>& lvl,
                                           const std::vector<int>& exp,
                                           int T,
                                           int niter,
                                           int sorted_qr,
                                           float llr_clip,
                                           int threads,
                                           bool llr_scaled,
                                           double deadline_us)
{
    const std::string who = "mimodet: " + block + ": ";
    lte_numerology::from_bandwidth(bandwidth_mhz); // throws for unknown bandwidths
    if (n_tx != 1 && n_tx != 2 && n_tx != 4)
        throw std::invalid_argument(who + "n_tx must be 1, 2 or 4, got " +
                                    std::to_string(n_tx));
    if (n_rx < n_tx || n_rx > 8)
        throw std::invalid_argument(who + "n_rx must be n_tx..8, got " +
                                    std::to_string(n_rx));
    detector_config cfg;
    cfg.algorithm = algorithm;
    cfg.n_tx = n_tx;
    cfg.n_rx = n_rx;
    cfg.mod = parse_modulation(modulation);
    cfg.backend = parse_backend(backend);
    cfg.threads = threads;
    cfg.psd_lvl = lvl;
    cfg.psd_exp = exp;
    cfg.fsd_full_levels = T;
    cfg.sfsd_niter = niter;
    cfg.sorted_qr = sorted_qr;
    cfg.llr_clip = llr_clip;
    cfg.llr_scaled = llr_scaled;
    cfg.psd_deadline_us = deadline_us;
    // The registry's rule; an unknown algorithm throws, naming the valid ones.
    const bool soft = detector_algorithm_soft(algorithm);
    if (soft_output && !soft)
        throw std::invalid_argument(who + "algorithm '" + algorithm +
                                    "' gives hard bits only; soft_output needs an "
                                    "algorithm with LLR output");
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
    if (const char* env = std::getenv(name)) {
        const int n = std::atoi(env);
        if (n >= lo && n <= hi)
            return n;
    }
    return fallback;
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

int gpu_lanes(bool deadline)
{
    return env_override("MIMODET_GPU_LANES", 1, 4, deadline ? 1 : 2);
}

int receiver_gpu_lanes() { return env_override("MIMODET_GPU_LANES", 1, 4, 2); }

long output_buffer_items(size_t items_per_slot, size_t slots_per_call)
{
    return static_cast<long>(items_per_slot * (2 * slots_per_call + 1));
}

} // namespace mimodet
} // namespace gr
