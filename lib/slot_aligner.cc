/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "slot_aligner.h"

namespace gr {
namespace mimodet {

bool slot_aligner::next(const std::vector<gr::tag_t>& tags,
                        uint64_t base,
                        int avail,
                        int& consumed,
                        int& ns,
                        bool& tagged,
                        gr::logger& log)
{
    // The first tag at or after a position (relative to base) and its value, or -1.
    auto next_tag = [&](int from, long* value) -> int64_t {
        for (const auto& t : tags)
            if (t.offset >= base + static_cast<uint64_t>(from)) {
                *value = pmt::is_integer(t.value) ? pmt::to_long(t.value) : -1;
                return static_cast<int64_t>(t.offset - base);
            }
        return -1;
    };
    while (true) {
        long value = -1;
        if (!d_aligned) {
            const int64_t pos = next_tag(consumed, &value);
            if (pos < 0) {
                consumed = avail; // nothing to align to: drop
                return false;
            }
            consumed = static_cast<int>(pos);
            d_aligned = true;
        }
        if (avail - consumed < d_slot)
            return false;
        const int64_t pos = next_tag(consumed, &value);
        if (pos > consumed && pos < consumed + d_slot) {
            log.warn(
                "slot tag {} samples into a slot: re-aligning (partial slot dropped)",
                pos - consumed);
            consumed = static_cast<int>(pos);
            continue;
        }
        tagged = pos == consumed;
        if (tagged) {
            if (value < 0 || value >= lte_numerology::slots_per_frame)
                log.error("invalid slot tag value at item {}: using slot {}",
                          base + consumed,
                          d_ns);
            else
                d_ns = static_cast<int>(value);
        }
        ns = d_ns;
        return true;
    }
}

} // namespace mimodet
} // namespace gr
