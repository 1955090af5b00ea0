/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_OFDM_SYNC_H
#define INCLUDED_MIMODET_OFDM_SYNC_H

#include <gnuradio/block.h>
#include <gnuradio/mimodet/api.h>

namespace gr {
namespace mimodet {

/*!
 * \brief LTE-style receiver synchronisation: slot timing from the PSS, CFO from the
 * cyclic prefixes, slot 0/10 from the SSS, sample-rate offset from the PSS timing drift
 * (docs/SLOT_LAYOUT.md). \ingroup mimodet
 *
 * \details
 * Inputs: n_rx complex streams (the receive antennas, sample-aligned with each other).
 * Outputs: n_rx complex streams, CFO corrected (and resampled when the receiver's sample
 * rate is off, below), starting at a slot boundary (the first sample of the slot's first
 * CP), with a tag "slot" (value: long ns, 0..19) on the first sample of every slot, and
 * with cell search (cell_id -1) a tag "cell_id" (value: long, the cell found) beside it.
 * Input tags are not propagated. Message port "cell_id": at every (re-)lock a dict
 * {cell_id, n_id1, n_id2, metric (the PSS metric), sss_rho (the SSS correlation of the
 * decision), sss_runner_up (that of the best other hypothesis), searched (cell search or
 * given)}.
 *
 * Cell search (cell_id -1): acquisition correlates with the PSS of all three N_ID2,
 * collects the candidates of a half frame (every cell sends its PSS once in it), and
 * verifies them strongest first; the SSS decides among the 168 N_ID1 and slot 0/10 (336
 * coherent correlations: the best must reach 0.4 and beat the next best by 0.15). The
 * strongest cell on the air is found (a half frame, 5 ms, more before the lock), then
 * tracked as a given one; after a lost lock the search starts again. Measured
 * (qa_cell_search: 1.4/5 MHz, CFO within +-0.4, 1-2 antennas, 40 random cells per SNR):
 * all found from 3 dB on, 26 of 40 within 15 ms at 0 dB (25 with the cell id given),
 * never a wrong cell; of two cells 6 dB apart the stronger in 16 of 16.
 *
 * Acquisition: time-domain correlation with the PSS symbol of N_ID2 = cell_id mod 3
 * (unitary IFFT of lte_grid::make_pss), summed over the antennas and normalised by the
 * received energy in the 62 PSS subcarriers (not in the whole band), computed in fixed
 * blocks of lags. The metric is in [0, 1]: about SNR/(1 + SNR) x sinc^2(cfo) at the PSS
 * (SNR per PSS subcarrier; 0.74 at 0.3 subcarrier spacings and 30 dB), about 1/62 on data
 * and noise (at most 0.15-0.19 per half frame with one antenna). Normalising in the PSS's
 * own band makes the peak independent of the number of transmit ports (the PSS is on
 * port 0 only) and of a fade of port 0 at the centre of a wide carrier (normalised by
 * the whole band's energy, a 20 MHz EPA fade pushed the PSS under the data floor for
 * 100 ms and more). A candidate is a lag whose metric reaches 0.2 and is the largest
 * within +-fft_size/4. Candidates are verified in time order: the CFO (fractional,
 * |cfo| < 0.5 subcarrier spacings) comes from the CP correlation of the candidate's slot,
 * the timing is refined on the corrected samples (metric >= 0.25), and the SSS
 * (lte_grid::make_sss(cell_id, 0) vs (cell_id, 10), equalised with the PSS in the
 * frequency domain) must clearly say slot 0 or 10 (normalised correlation >= 0.5 and 0.3
 * above the other; data/noise candidates stay below about 0.25), else the candidate is
 * dropped. Every decision waits until all the input it looks at is there, so the lock
 * point does not depend on how the scheduler splits the input into work() calls. Lags
 * whose window holds no energy (exact zeros) get metric 0. Samples before the slot of
 * the first accepted PSS are dropped; a leading offset of any length (zeros or noise)
 * does not matter.
 *
 * Tracking: every slot 0/10 the PSS is searched within +-cp_other samples of where it is
 * expected; the start of the next slot moves to it (the output still holds exactly
 * slot_samples per slot: the input is skipped or repeated by the step). The search runs
 * once slot 0/10 is out, so that slot does not wait for the search nor for the
 * cp_other samples after it that the search window needs (searching first would put
 * such a slot's latency about 0.25 ms above the others' at 20 MHz 4x4); the slot after
 * it waits for the search. The CFO is re-estimated every
 * slot from the CPs and smoothed (complex exponential average, weight 0.2). A missed
 * PSS is logged and the timing kept; after 8 missed in a row (4 frames) the lock is
 * dropped and the block re-acquires. Two confident SSS decisions in a row contradicting
 * the slot count relabel it. Non-finite input is logged and does not change the CFO.
 *
 * Slots that hold no signal of the transmitter are dropped, not put out (their bits
 * would be noise that no block downstream could tell from data; the slot numbers after
 * them show the gap), and counted in slots_lost(): a slot whose CP correlation
 * coefficient (the slot's, over its energy: SNR / (1 + SNR) for the signal, about 0.1
 * for noise, zeros or a timing that is off) is below 0.3 and that either comes after a
 * missed PSS (the signal gone, the timing lost) or has 30 dB more energy than the
 * signal's level since the lock (a burst of interference, an ADC at full scale). The
 * CFO is smoothed over the slots' coefficients, so a burst does not pull it away
 * either. Measured faults and their outcome: docs/RELIABILITY.md, "Faults".
 *
 * Sample-rate offset: the fractional position of every tracked PSS (maximum of the
 * correlation at fractional lags, from its 62 subcarriers) goes into a weighted
 * least-squares line over the last 16 PSS, whose slope is the receiver's sample rate
 * relative to the transmitter's (sro_ppm()). Once the drift it implies reaches 0.01
 * samples per slot and the estimate is 3 standard errors from 0, the output is
 * resampled onto the transmitter's sample clock (16-tap Kaiser-windowed sinc, error
 * below -59 dB): the timing then no longer drifts within a slot, which otherwise turns
 * the subcarriers' phases by up to 2 pi (B/2) sro T_slot between a slot's first and
 * last symbol (0.35 rad at 5 MHz and 50 ppm). The estimate needs the first tracked PSS
 * (5 ms after the lock); the slots before it keep the drift. Timing jumps of more than
 * 1.5 samples are followed at once and restart the estimate.
 *
 * Largest CFO: only the fractional CFO is estimated at the lock, so |cfo| < 0.5
 * subcarrier spacings (7.5 kHz); after the lock each new estimate is taken nearest the
 * current one, so a CFO that drifts across +-0.5 is followed. Measured at 20 dB (1.4, 5
 * and 20 MHz, 10 runs each): every run synchronises (timing +-2, right slot numbers, CFO
 * within 0.02) up to |cfo| = 0.49; at 0.5 the sign is ambiguous and most runs fail,
 * beyond it the estimate wraps to cfo - 1 and no PSS verifies. The accuracy
 * at 0.3: CFO error rms 0.001 (1.4 MHz) .. 0.0004 (20 MHz) at 20 dB, 0.004 .. 0.0014 at
 * 10 dB; timing exact at 1.4/5 MHz, within 1 sample at 20 MHz. Measured tolerances of the
 * whole receiver (CFO, sample-rate offset) are in docs/OTA.md.
 */
class MIMODET_API ofdm_sync : virtual public gr::block
{
public:
    typedef std::shared_ptr<ofdm_sync> sptr;

    /*!
     * \param bandwidth_mhz LTE bandwidth: 1.4, 3, 5, 10, 15 or 20 (MHz).
     * \param n_rx receive antennas (inputs and outputs): 1..8.
     * \param cell_id physical cell id 0..503 whose PSS/SSS are searched, or -1 to search
     * the cell (above).
     *
     * Throws std::invalid_argument for any other value.
     */
    static sptr make(double bandwidth_mhz, int n_rx, int cell_id);

    //! Current CFO estimate in subcarrier spacings (15 kHz); 0 before the first lock.
    virtual double cfo() const = 0;
    //! Whether the block is locked (emitting slots).
    virtual bool locked() const = 0;
    //! Slots emitted so far.
    virtual uint64_t slots_out() const = 0;
    //! PSS searches in tracking that found no PSS, so far.
    virtual uint64_t pss_missed() const = 0;
    //! Slots lost so far: the slots dropped (above), and at every re-lock the whole
    //! slots of input between the last slot out before the lock was dropped and the new
    //! lock's first slot (a signal gone for 100 ms: 200 slots, less the one or two that
    //! hold its edges). A run of drops logs a warning, a re-lock that lost slots their
    //! number at info level.
    virtual uint64_t slots_lost() const = 0;
    //! Sample-rate offset estimate in ppm (receiver samples per transmitted sample, minus
    //! 1); 0 until the first PSS after the lock has been tracked.
    virtual double sro_ppm() const = 0;
    //! Whether the output is being resampled to remove the sample-rate offset.
    virtual bool resampling() const = 0;
    //! The cell id followed: the given one, or the one found (-1 until the first lock
    //! with cell search).
    virtual int cell_id() const = 0;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_OFDM_SYNC_H */
