/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_CHANNEL_ESTIMATOR_H
#define INCLUDED_MIMODET_CHANNEL_ESTIMATOR_H

#include <gnuradio/mimodet/api.h>
#include <gnuradio/sync_block.h>
#include <cstdint>
#include <string>

namespace gr {
namespace mimodet {

/*!
 * \brief CRS-based MIMO channel and noise-variance estimator, one estimate per slot
 * (docs/SLOT_LAYOUT.md).
 * \ingroup mimodet
 *
 * \details
 * Inputs: n_rx grid streams, one item (gr_complex[7 * n_sc], element l * n_sc + k) per
 * slot and receive antenna, with a "slot" tag (value: long ns) on each item.
 *
 * Outputs, one item per slot:
 * - 0: H, gr_complex[n_sc * n_rx * n_tx], element (k * n_rx + r) * n_tx + t;
 * - 1: noise_var (float), the noise variance per grid element.
 * Both carry the "slot" tag of the slot; other tags are not propagated.
 *
 * Method: least squares at every CRS element of each port (H_rt = Y_r / X_t); the pilot
 * symbols of the slot are combined (the channel is taken as constant over a slot: ports
 * 0/1 then have a pilot every 3 subcarriers, ports 2/3 every 6); then a windowed linear
 * MMSE (Wiener) smoother/interpolator in frequency (32 nearest pilots per subcarrier)
 * whose channel model (mean delay, and the spread of a two-sided exponential power-delay
 * profile bounded by the CP length) and SNR are estimated per slot from the pilots of
 * all antenna pairs. This brings the estimation error from ~0.6 x noise_var (linear
 * interpolation) to ~0.06 x noise_var for EPA at 20 dB (see
 * lib/phy/channel_estimation.h for the details and measured numbers). The noise
 * variance is estimated from the residual of the ports 0/1 LS estimates around a local
 * polynomial (2nd/3rd order pilot differences, normalised by their noise gain; the
 * smaller of the two is reported) and floored at a 60 dB SNR.
 *
 * Speed: each slot is split over a persistent pool of threads (created with the block):
 * the LS step per antenna pair, the Wiener filtering per block of subcarriers. The
 * results do not depend on the number of threads (bit for bit). Measured times per slot:
 * docs/PERFORMANCE.md, "Channel estimation".
 *
 * Backend "cuda" runs the same method on the GPU (cuda/phy/channel_estimation_cuda.cu):
 * the LS, the pilot statistics and the Wiener step are kernels, the model's decisions
 * (noise variance, filter choice and design) stay on the CPU. Its H and noise_var agree
 * with the CPU's up to float rounding (sums over pilots in another order, the GPU's
 * sin/cos); unusable slots take the CPU path. It frees the CPU threads of the pool for
 * the rest of the flowgraph (docs/PERFORMANCE.md, "Channel estimation").
 *
 * Pilot-to-data power ratio (docs/SLOT_LAYOUT.md): where the transmitter sends the CRS
 * at another power than the data (the framer's pilot_ratio_db), H is scaled from the
 * pilots' units to the data's (H / sqrt(10^(ratio / 10))), so that the detector sees
 * y = H x + n with E|x|^2 = 1; noise_var is the grid elements' noise variance either way.
 * The ratio is either known (pilot_ratio_db) or, with pilot_ratio_db NaN, estimated per
 * slot: the received power at each port's CRS elements against that at the data
 * elements, both less the noise (lib/phy/channel_estimation.h); it assumes every data
 * element of the slot carries random (scrambled) data.
 *
 * Slots: ns is read from the "slot" tag of input 0; an item without a tag gets the
 * previous slot + 1 (mod 20), starting at 0. Non-finite or all-zero input gives a NaN
 * noise_var (the detector block flags such slots), logged and counted in bad_slots().
 */
class MIMODET_API channel_estimator : virtual public gr::sync_block
{
public:
    typedef std::shared_ptr<channel_estimator> sptr;

    /*!
     * \param bandwidth_mhz LTE bandwidth: 1.4, 3, 5, 10, 15 or 20 (MHz).
     * \param n_tx transmit antenna ports: 1, 2 or 4.
     * \param n_rx receive antennas (inputs): 1..8.
     * \param cell_id physical cell id 0..503 (CRS positions and values), or -1: the cell
     * of each slot from the "cell_id" tag on its grid (ofdm_sync's, passed on by
     * ofdm_demod; a slot without one keeps the last cell seen); slots before the first
     * such tag get NaN in H and noise_var, are counted in bad_slots() and logged.
     * \param threads threads that estimate one slot together, 0..256; 0 (default):
     * min(hardware threads, n_rx * n_tx, 4). 1 runs in the scheduler's thread alone.
     * With backend cuda they design new Wiener filters only (and estimate unusable
     * slots).
     * \param backend "cpu" (default), "cuda" (std::runtime_error where no CUDA device
     * exists) or "auto" (cuda where a device exists, else cpu).
     * \param pilot_ratio_db the transmitter's pilot-to-data power ratio in dB, -10..10
     * (default 0: pilots and data at the same power), or NaN to estimate it per slot.
     * \param device the CUDA device of backend cuda or auto (detector_config::device):
     * >= 0; cuda: an index without a device throws std::runtime_error, auto takes the
     * CPU (logged). The CPU backend ignores it.
     *
     * Throws std::invalid_argument for any other value.
     */
    static sptr make(double bandwidth_mhz,
                     int n_tx,
                     int n_rx,
                     int cell_id,
                     int threads = 0,
                     const std::string& backend = "cpu",
                     double pilot_ratio_db = 0.0,
                     int device = 0);

    //! "cpu" or "cuda": the backend actually running.
    virtual std::string backend() const = 0;

    //! Threads that estimate one slot (threads as resolved by make()).
    virtual int threads() const = 0;

    //! Used subcarriers n_sc.
    virtual int n_sc() const = 0;
    //! Slots estimated so far.
    virtual uint64_t slots_processed() const = 0;
    //! Slots whose input was unusable (non-finite or all zero): NaN noise_var output.
    virtual uint64_t bad_slots() const = 0;
    //! Items of input 0 that had no "slot" tag (ns taken from the previous slot).
    virtual uint64_t untagged_slots() const = 0;
    //! The pilot-to-data ratio (dB) the last slot was estimated with: the known one, or
    //! with pilot_ratio_db NaN that slot's estimate (NaN before the first slot).
    virtual double pilot_ratio_db() const = 0;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CHANNEL_ESTIMATOR_H */
