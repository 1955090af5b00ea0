/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_SLOT_ALIGNER_H
#define INCLUDED_MIMODET_SLOT_ALIGNER_H

#include <cstdint>
#include <gnuradio/logger.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/tags.h>
#include <vector>

namespace gr {
namespace mimodet {

/*!
 * Whole slots in a time-domain sample stream tagged "slot" (long ns) at each slot's
 * first sample, as ofdm_sync emits it: the blocks that take such streams (ofdm_demod,
 * mimo_receiver with time-domain input) find their slots with it.
 *
 * Samples before the first tag are dropped. A slot without a tag at its start gets the
 * previous ns + 1 (counted, and warned about once); a tag inside a slot (the stream
 * jumped) logs a warning and re-aligns to it, dropping the partial slot; a tag value
 * outside 0..19 is logged as an error and the count goes on.
 */
class slot_aligner
{
public:
    explicit slot_aligner(int slot_samples) : d_slot(slot_samples) {}

    /*!
     * The next whole slot at or after consumed (input items of this call, from its
     * first item base; avail of them readable). tags: the "slot" tags of the input in
     * [base, base + avail), sorted by offset. Moves consumed past dropped samples and
     * returns true with the slot's ns and whether it was tagged when a whole slot
     * starts at consumed, else false (more input needed). After using the slot the
     * caller adds slot_samples to consumed and calls slot_done().
     */
    bool next(const std::vector<gr::tag_t>& tags,
              uint64_t base,
              int avail,
              int& consumed,
              int& ns,
              bool& tagged,
              gr::logger& log);
    void slot_done() { d_ns = (d_ns + 1) % lte_numerology::slots_per_frame; }

private:
    const int d_slot;
    bool d_aligned = false;
    int d_ns = 0;
};

} // namespace mimodet
} // namespace gr

#endif
