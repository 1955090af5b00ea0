/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Detection of one LTE slot with the batch detector core (no GNU Radio types): the core
// of the mimo_detector block.

#ifndef INCLUDED_MIMODET_CORE_SLOT_DETECTION_H
#define INCLUDED_MIMODET_CORE_SLOT_DETECTION_H

#include "detect/backend.h"
#include "util/call_timeline.h"
#include "util/host_memory.h"
#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <algorithm>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

class estimating_stage; // slot_detection.cc: the GPU estimator as the detection's stage
class device_gather;    // detector_internal.h: the fused path of a backend

/*!
 * \brief Gathers a slot's data elements into detector batches and scatters the results
 * into the output order of docs/SLOT_LAYOUT.md.
 *
 * The batch API shares one H among n_sym vectors, so the subcarriers of a slot are
 * grouped by their number of data symbols (7 on most, fewer on CRS and PSS/SSS
 * subcarriers): one batch_segment per group with H[n_mat][n_rx][n_tx] (the subcarriers'
 * channels) and y[n_mat][n_sym][n_rx] (their data symbols in increasing l), every group
 * of every slot of a call in ONE segmented detect call. Output value
 * block j of the slot (n_tx * q values) belongs to element j of
 * lte_grid::data_elements(ns).
 *
 * Not thread safe (work buffers are members): one call at a time per object.
 */
class MIMODET_API slot_detection
{
public:
    using cf = std::complex<float>;

    //! One detect call: subcarriers with n_sym data symbols each.
    struct group {
        int n_sym = 0;
        std::vector<int> sc;  //!< [n_mat] subcarriers k
        std::vector<int> re;  //!< [n_mat][n_sym] grid elements l * n_sc + k
        std::vector<int> pos; //!< [n_mat][n_sym] index in data_elements(ns)
    };

    slot_detection(const lte_grid& grid, int n_rx, detector::sptr det);

    const lte_grid& grid() const { return d_grid; }
    int n_tx() const { return d_n_tx; }
    int n_rx() const { return d_n_rx; }
    //! n_tx * q: output values per data element.
    int values_per_element() const { return d_per_elem; }
    //! Output values (bits or LLRs) of slot ns: n_data(ns) * n_tx * q.
    size_t values_per_slot(int ns) const
    {
        return d_grid.data_elements(ns).size() * static_cast<size_t>(d_per_elem);
    }
    //! The largest values_per_slot over the frame.
    size_t max_values_per_slot() const;
    const std::vector<group>& groups(int ns) const { return d_groups.at(ns); }
    const detector& det() const { return *d_det; }
    detector& det() { return *d_det; }
    //! True where one-slot calls gather on the detector's device (the CUDA backend):
    //! the slot is packed, checked and copied in one pass, the outputs come back in
    //! slot order. Same results as the host gather.
    bool device_gather() const { return !d_layout_id.empty(); }

    //! Copies group g's channels and received symbols into the batch buffers.
    void gather(const group& g,
                const cf* const* grids,
                const cf* H,
                cf* H_batch,
                cf* y_batch) const;
    //! Writes the batch results (n_mat * n_sym vectors of n_tx*q values) into slot order.
    template <typename T>
    void scatter(const group& g, const T* batch, T* out) const
    {
        const size_t v = d_per_elem;
        for (size_t i = 0; i < g.pos.size(); ++i)
            std::copy(batch + i * v, batch + (i + 1) * v, out + g.pos[i] * v);
    }

    /*!
     * Checks a slot's inputs: noise_var finite and > 0, H and the data elements of the
     * grids finite. Returns an empty string when usable, else the reason.
     */
    std::string check(int ns, const cf* const* grids, const cf* H, float noise_var) const;
    //! check()'s part for the grids alone: their data elements finite.
    std::string check_grids(int ns, const cf* const* grids) const;

    /*!
     * Detects slot ns: grids[r] (7 * n_sc each), H[(k * n_rx + r) * n_tx + t], the slot's
     * noise_var. Writes values_per_slot(ns) bits (hard, or the LLR signs of a soft
     * detector). Throws std::invalid_argument for unusable inputs (see check(); the
     * output is then zeros where ns is valid).
     * With `truncated` non-null it also counts the slot's vectors whose search a PSD
     * deadline cut short (vector_stats::truncated) into *truncated.
     */
    void detect_bits(int ns,
                     const cf* const* grids,
                     const cf* H,
                     float noise_var,
                     uint8_t* out,
                     size_t* truncated = nullptr);
    //! As detect_bits, with max-log LLRs (soft detectors only: std::logic_error else).
    void detect_llr(int ns, const cf* const* grids, const cf* H, float noise_var, float* out);

    /*!
     * Detects max_slots dummy slots (zero grids, identity channels) in one call, so the
     * backend's buffers (device and pinned memory of the CUDA pipeline) reach the size of
     * the largest call before real-time operation: growing them later (cudaMalloc,
     * cudaHostAlloc) stalls a call for milliseconds.
     */
    void prepare(int max_slots);

    //! One slot of a multi-slot call.
    struct slot_input {
        int ns = 0;
        const cf* const* grids = nullptr; //!< [n_rx] grids of 7 * n_sc
        const cf* H = nullptr;            //!< [n_sc][n_rx][n_tx]
        float noise_var = 0.0f;
    };
    /*!
     * Several slots in ONE detector call (one segmented batch: every subcarrier group of
     * every usable slot), outputs one slot after another (values_per_slot(ns) each). Same
     * results as one detect_bits per slot; a PSD deadline is then a budget for the call.
     * Returns, per slot, an empty string or why it was not detected (check()); such a
     * slot's outputs are zeros. truncated (optional): per slot, its vectors cut short by
     * the deadline. Throws only when the detector itself fails.
     */
    std::vector<std::string> detect_bits(const std::vector<slot_input>& slots,
                                         uint8_t* out,
                                         std::vector<size_t>* truncated = nullptr);
    std::vector<std::string> detect_llr(const std::vector<slot_input>& slots, float* out);

    /*!
     * The degenerate vectors of a detected slot ns (docs/CONVENTIONS.md, vector_flag):
     * those whose subcarrier's H (H: [n_sc][n_rx][n_tx], or nullptr where the host does
     * not have it) is rank-deficient or zero by the rank rule of vector_flags.h, and,
     * with llr non-null (the slot's LLRs, values_per_slot(ns)), those with an LLR at
     * +-llr_saturation. The same rules as the detector's per-vector flags, for any
     * backend. 0 for an invalid ns.
     */
    size_t degenerate_vectors(int ns, const cf* H, const float* llr) const;

    //! What detect_estimated did with a slot.
    struct estimated_slot {
        //! False where the GPU estimator found the slot's pilots unusable: nothing was
        //! detected, and the caller takes the host path (channel_estimation::estimate()).
        bool estimated = false;
        std::string why;  //!< why it was not detected (outputs zeros), else empty
        float noise_var = std::numeric_limits<float>::quiet_NaN(); //!< the estimate
        size_t truncated = 0; //!< vectors a PSD deadline cut short (with count_truncated)
    };
    /*!
     * A one-slot call whose H is estimated on the device (device_gather() only;
     * slot_receiver's fused path): the grids are checked while they are packed, only
     * they are uploaded, est's kernels write the slot's H next to them and give the noise
     * variance, then the slot is detected there. Exactly one of bits / llr non-null
     * (values_per_slot(ns) values; zeros where the slot is not detected).
     */
    estimated_slot detect_estimated(int ns,
                                    const cf* const* grids,
                                    gpu_channel_estimation& est,
                                    uint8_t* bits,
                                    float* llr,
                                    bool count_truncated = false);
    /*!
     * Slots of detect_estimated(_time) that ran twice: the device decided their model
     * without a wait, but their Wiener filter was not on the device yet, so they ran
     * again with the model decided on the host (which uploads the filter).
     */
    size_t filter_retries() const { return d_filter_retries; }
    /*!
     * As detect_estimated, from the slot's n_rx time-domain slots (slot_samples each):
     * demod uploads and demodulates them on the device into the packed grids, and the
     * slot goes on as there. estimated is false also where demod refused the samples
     * (a NaN or Inf): the caller demodulates on the CPU and takes the grid path.
     */
    estimated_slot detect_estimated_time(int ns,
                                         const cf* const* samples,
                                         gpu_ofdm_demodulation& demod,
                                         gpu_channel_estimation& est,
                                         uint8_t* bits,
                                         float* llr,
                                         bool count_truncated = false);

private:
    //! A refused slot's output: n_out zero bits (bits) or LLRs (llr, where bits is null).
    static void zero_output(size_t n_out, uint8_t* bits, float* llr);
    //! detect_estimated's checks of the call (std::logic_error, std::invalid_argument);
    //! false, with res saying why, for a slot index outside 0..19.
    bool check_estimated_call(int ns,
                              const uint8_t* bits,
                              const float* llr,
                              estimated_slot& res) const;
    //! The staged call of detect_estimated(_time): packed (host) or nullptr where stage
    //! uploads the grids itself.
    estimated_slot run_estimated(int ns,
                                 const cf* packed,
                                 estimating_stage& stage,
                                 uint8_t* bits,
                                 float* llr,
                                 bool count_truncated,
                                 int64_t t0);
    //! Checks the slots and gathers the usable ones (why[i] empty) into one segmented
    //! batch (d_H, d_y, d_nv, d_segments); returns the number of vectors.
    size_t gather_slots(const std::vector<slot_input>& slots, std::vector<std::string>& why);

    /*!
     * A one-slot call on a backend that gathers on its device (d_layout_id): checks the
     * slot while packing it into d_packed (one sequential pass), then detects it with
     * its slot's layout. Returns why the slot was not detected (its outputs are then
     * zeros), else an empty string. stats (optional): per vector, batch order.
     */
    std::string detect_packed(const slot_input& in,
                              uint8_t* bits,
                              float* llr,
                              vector_stats* stats);
    //! Data elements (vectors) of slot ns; 0 for an invalid ns.
    size_t data_vectors(int ns) const;

    //! Scatters the batch results of gather_slots into slot order; zeros for the others.
    template <typename T>
    void scatter_slots(const std::vector<slot_input>& slots,
                       const std::vector<std::string>& why,
                       const T* batch,
                       T* out) const;


    lte_grid d_grid;
    int d_n_tx, d_n_rx, d_per_elem;
    detector::sptr d_det;
    std::vector<std::vector<group>> d_groups; //!< per slot
    // The batch (host_alloc memory: page-locked with a GPU, copied to the device
    // without staging).
    host_vector<cf> d_H, d_y;
    host_vector<float> d_nv, d_llr;
    host_vector<uint8_t> d_bits;
    host_vector<vector_stats> d_stats;
    mutable std::vector<uint8_t> d_rank_deficient; //!< degenerate_vectors: per subcarrier
    size_t d_filter_retries = 0;
    std::vector<batch_segment> d_segments;
    //! The detector's fused path (nullptr where its backend gathers on the host).
    core::device_gather* d_gather = nullptr;
    //! Per slot ns, the detector's gather layout
    //! (core::device_gather::add_gather_layout); empty where the backend gathers on the
    //! host.
    std::vector<int> d_layout_id;
    host_vector<cf> d_packed; //!< one slot packed: n_rx grids, then H
    int64_t d_t_packed = 0;   //!< MIMODET_CALL_TIMELINE: when detect_packed had packed
    //! MIMODET_CALL_TIMELINE only: per call, start and the gather / detect / scatter times.
    std::unique_ptr<call_timeline> d_timeline;
    //! Adds a call to d_timeline, if any (the scatter ends now).
    void record_call(
        int64_t t0, int64_t gathered, int64_t detected, size_t n_slots, size_t n_vec);
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
