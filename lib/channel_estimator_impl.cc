/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "channel_estimator_impl.h"
#include "detector_block_common.h"
#include "phy/pilot_ratio.h"
#include <gnuradio/io_signature.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

namespace gr {
namespace mimodet {

namespace {
int checked_n_rx(int n_rx)
{
    if (n_rx < 1 || n_rx > 8)
        throw std::invalid_argument("mimodet: channel_estimator: n_rx must be 1..8, got " +
                                    std::to_string(n_rx));
    return n_rx;
}

int checked_n_tx(int n_tx)
{
    if (n_tx != 1 && n_tx != 2 && n_tx != 4)
        throw std::invalid_argument("mimodet: channel_estimator: n_tx must be 1, 2 or 4, got " +
                                    std::to_string(n_tx));
    return n_tx;
}

int grid_size(double mhz) { return 7 * lte_numerology::from_bandwidth(mhz).n_sc; }

const std::string& checked_backend(const std::string& backend)
{
    parse_backend(backend); // the detectors' rule for backend names
    return backend;
}

int checked_device(int device)
{
    core::check_device_index(device, "mimodet: channel_estimator"); // the detectors' rule
    return device;
}
} // namespace

channel_estimator::sptr channel_estimator::make(double bandwidth_mhz,
                                                int n_tx,
                                                int n_rx,
                                                int cell_id,
                                                int threads,
                                                const std::string& backend,
                                                double pilot_ratio_db,
                                                int device)
{
    return gnuradio::make_block_sptr<channel_estimator_impl>(
        bandwidth_mhz, n_tx, n_rx, cell_id, threads, backend, pilot_ratio_db, device);
}

channel_estimator_impl::channel_estimator_impl(double bandwidth_mhz,
                                               int n_tx,
                                               int n_rx,
                                               int cell_id,
                                               int threads,
                                               const std::string& backend,
                                               double pilot_ratio_db,
                                               int device)
    : gr::sync_block(
          "channel_estimator",
          gr::io_signature::make(checked_n_rx(n_rx),
                                 n_rx,
                                 sizeof(gr_complex) * grid_size(bandwidth_mhz)),
          gr::io_signature::makev(
              2,
              2,
              { static_cast<int>(sizeof(gr_complex)) *
                    lte_numerology::from_bandwidth(bandwidth_mhz).n_sc * n_rx * checked_n_tx(n_tx),
                static_cast<int>(sizeof(float)) })),
      d_num(lte_numerology::from_bandwidth(bandwidth_mhz)),
      d_n_tx(checked_n_tx(n_tx)),
      d_n_rx(checked_n_rx(n_rx)),
      d_threads(estimator_threads("channel_estimator", threads, d_n_tx, d_n_rx)),
      d_backend(checked_backend(backend)),
      d_device(checked_device(device)),
      d_pilot_ratio_db(
          core::pilot_ratio::checked_db(pilot_ratio_db, "mimodet: channel_estimator", true)),
      d_cell(checked_cell_id("channel_estimator", cell_id)),
      d_cell_key(pmt::mp("cell_id")),
      d_slot_key(pmt::mp("slot")),
      d_grids(n_rx)
{
    set_tag_propagation_policy(TPP_DONT);
    // cell_id -1: made for cell 0 until a slot's tag tells its cell (the sizes and
    // threads do not depend on it; no slot is estimated before).
    make_estimator(d_cell.automatic() ? 0 : cell_id);
    d_timeline = core::call_timeline::make("estimator", { "t0_ns", "work_ns", "slots" });
}

void channel_estimator_impl::make_estimator(int cell_id)
{
    const bool first = d_est == nullptr;
    d_gpu.reset();
    d_est.reset(); // its worker threads, before the next one starts its own
    d_est = std::make_unique<core::channel_estimation>(
        d_num,
        d_n_tx,
        d_n_rx,
        cell_id,
        4.7, // the core's default maximal delay spread (the normal CP)
        d_threads,
        d_pilot_ratio_db);
    const std::string& backend = d_backend;
    if (backend != "cpu") {
        d_gpu = core::make_cuda_channel_estimation(*d_est, d_device);
        if (!d_gpu && backend == "cuda")
            throw std::runtime_error(
                "mimodet: channel_estimator: backend 'cuda' requested but " +
                core::cuda_device_problem(d_device));
        if (!d_gpu && first)
            d_logger->info("backend 'auto': {}, using the CPU",
                           core::cuda_device_problem(d_device));
    }
}

int channel_estimator_impl::work(int noutput_items,
                                 gr_vector_const_void_star& input_items,
                                 gr_vector_void_star& output_items)
{
    const int64_t t_start = d_timeline ? core::call_timeline::now_ns() : 0;
    const int n_rx = d_est->n_rx();
    const size_t grid_len = 7 * static_cast<size_t>(d_est->n_sc());
    auto* H = static_cast<gr_complex*>(output_items[0]);
    auto* nv = static_cast<float*>(output_items[1]);
    const uint64_t first = nitems_read(0);

    std::vector<gr::tag_t>& tags = d_tags;
    tags.clear();
    get_tags_in_range(tags, 0, first, first + noutput_items, d_slot_key);
    size_t ti = 0;
    if (d_cell.automatic()) {
        d_cell_tags.clear();
        get_tags_in_range(d_cell_tags, 0, first, first + noutput_items, d_cell_key);
    }

    for (int i = 0; i < noutput_items; ++i) {
        const uint64_t abs = first + i;
        while (ti < tags.size() && tags[ti].offset < abs)
            ++ti;
        size_t te = ti;
        while (te < tags.size() && tags[te].offset == abs)
            ++te;
        bool tagged;
        const int ns = slot_from_tags(
            tags.cbegin() + ti, tags.cbegin() + te, abs, d_next_ns, tagged, *d_logger);
        ti = te;
        if (!tagged)
            count_untagged(d_untagged, "item", abs, ns, *d_logger);
        for (int r = 0; r < n_rx; ++r)
            d_grids[r] = static_cast<const gr_complex*>(input_items[r]) + i * grid_len;
        gr_complex* h = H + i * d_est->h_size();
        const int cell = d_cell.update(d_cell_tags, abs, *d_logger);
        if (cell < 0) {
            // No cell known yet: the CRS are unknown, so is the channel.
            std::fill(h, h + d_est->h_size(), gr_complex(NAN, NAN));
            nv[i] = NAN;
            if (d_bad == 0 || d_bad % 1000 == 0)
                d_logger->error("slot {} (item {}): no cell id known (cell_id -1 and no "
                                "cell_id tag so far); H and noise_var set to NaN ({} such "
                                "slots so far)",
                                ns,
                                abs,
                                d_bad + 1);
            ++d_bad;
        } else {
            if (cell != d_est->grid().cell_id())
                make_estimator(cell);
            nv[i] = d_gpu ? d_gpu->estimate(ns, d_grids.data(), h)
                          : d_est->estimate(ns, d_grids.data(), h);
        }
        if (cell >= 0 && !std::isfinite(nv[i])) {
            if (d_bad == 0 || d_bad % 1000 == 0)
                d_logger->error("slot {} (item {}): unusable input (non-finite or all-zero "
                                "pilots); noise_var set to NaN ({} such slots so far)",
                                ns,
                                abs,
                                d_bad + 1);
            ++d_bad;
        }
        const pmt::pmt_t val = pmt::from_long(ns);
        add_item_tag(0, nitems_written(0) + i, d_slot_key, val, alias_pmt());
        add_item_tag(1, nitems_written(1) + i, d_slot_key, val, alias_pmt());
        d_next_ns = (ns + 1) % lte_numerology::slots_per_frame;
        ++d_slots;
    }
    if (d_timeline)
        d_timeline->add({ double(t_start),
                          double(core::call_timeline::now_ns() - t_start),
                          double(noutput_items) });
    return noutput_items;
}

} // namespace mimodet
} // namespace gr
