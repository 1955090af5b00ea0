/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detector_block_common.h"
#include "slot_lanes.h"
#include "util/tuning.h"
#include <boost/thread/thread.hpp>

namespace gr {
namespace mimodet {

int gpu_lanes(bool deadline)
{
    const int n = core::tuning::gpu_lanes();
    return n ? n : deadline ? 1 : 2;
}

int receiver_gpu_lanes(bool exact_psd)
{
    const int n = core::tuning::gpu_lanes();
    return n ? n : exact_psd ? 4 : 2;
}

bool stop_requested() { return boost::this_thread::interruption_requested(); }

} // namespace mimodet
} // namespace gr
