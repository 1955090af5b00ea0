/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "transmit.h"
#include <chrono>
#include <functional>
#include <gnuradio/blocks/vector_sink.h>
#include <gnuradio/blocks/vector_source.h>
#include <gnuradio/mimodet/mimo_channel.h>
#include <gnuradio/mimodet/slot_framer.h>
#include <gnuradio/top_block.h>
#include <random>
#include <stdexcept>

namespace fg_bench {

using namespace gr::mimodet;
using steady = std::chrono::steady_clock;

tx_data
generate(const options& o, int nt, int nr, const std::string& mod, double snr, bool freq)
{
    const auto t0 = steady::now();
    tx_data d;
    d.n_slots = o.slots;
    auto framer = slot_framer::make(o.bandwidth, nt, mod, o.cell_id, freq);
    d.items_per_slot = framer->items_per_slot();
    d.vlen = framer->vlen();
    for (int ns = 0; ns < 20; ++ns)
        d.bits_per_ns.push_back(framer->bits_per_slot(ns));
    size_t total = 0;
    for (int k = 0; k < o.slots; ++k) {
        d.slot_start.push_back(total);
        total += d.bits_per_ns[k % 20];
    }
    d.bits = std::make_shared<std::vector<uint8_t>>(total);
    std::mt19937_64 rng(o.seed * 7919 + static_cast<uint64_t>(nt) * 131 +
                        std::hash<std::string>()(mod));
    for (auto& b : *d.bits)
        b = static_cast<uint8_t>(rng() & 1);

    auto tb = gr::make_top_block("mimodet_flowgraph_bench_tx");
    auto src = gr::blocks::vector_source<uint8_t>::make(*d.bits, false);
    auto chan = mimo_channel::make(nt,
                                   nr,
                                   o.channel,
                                   snr,
                                   o.bandwidth,
                                   o.doppler,
                                   freq ? 0.0 : o.cfo,
                                   0,
                                   freq,
                                   static_cast<int>(o.seed));
    tb->connect(src, 0, framer, 0);
    for (int t = 0; t < nt; ++t)
        tb->connect(framer, t, chan, t);
    std::vector<gr::blocks::vector_sink<gr_complex>::sptr> sinks;
    for (int r = 0; r < nr; ++r) {
        sinks.push_back(gr::blocks::vector_sink<gr_complex>::make(
            d.vlen, d.items_per_slot * o.slots));
        tb->connect(chan, r, sinks.back(), 0);
    }
    tb->run();
    d.rx = std::make_shared<std::vector<std::vector<gr_complex>>>();
    const size_t want = static_cast<size_t>(d.items_per_slot) * d.vlen * o.slots;
    for (auto& s : sinks) {
        d.rx->push_back(s->data());
        if (d.rx->back().size() != want)
            throw std::runtime_error(
                "transmit side produced " + std::to_string(d.rx->back().size()) +
                " values per antenna, expected " + std::to_string(want));
    }
    d.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    return d;
}

} // namespace fg_bench
