/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_DETECTOR_H
#define INCLUDED_MIMODET_DETECTOR_H

#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/constellation.h>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {

/*!
 * \brief Where a detector runs. automatic: the CUDA backend where a device exists and
 * the algorithm has a CUDA implementation for the configuration, else the CPU (a made
 * detector's config() holds the backend it resolved to: cpu or cuda).
 */
enum class backend_kind { cpu, cuda, automatic };

//! The backend named "cpu", "cuda" or "auto"; std::invalid_argument (naming the valid
//! names) otherwise.
MIMODET_API backend_kind parse_backend(const std::string& name);
//! "cpu", "cuda" or "auto".
MIMODET_API std::string to_string(backend_kind backend);

//! Names of the detection algorithms (ml, zf, mmse, psd, fsd, sfsd, mtt), in the order of
//! the algorithm registry: for messages, GRC's choices and Python.
MIMODET_API std::vector<std::string> detector_algorithms();
//! True where the algorithm gives LLRs (detect_llr); std::invalid_argument, naming the
//! valid algorithms, for an unknown name.
MIMODET_API bool detector_algorithm_soft(const std::string& algorithm);

/*!
 * \brief Everything that defines a detector. Algorithm parameters left at their
 * "unset" value (-1 or empty) take the algorithm's documented default.
 */
struct MIMODET_API detector_config {
    std::string algorithm = "mmse"; //!< ml, zf, mmse, psd, fsd, sfsd, mtt
    int n_tx = 2;
    int n_rx = 2;
    modulation mod = modulation::qam16;
    backend_kind backend = backend_kind::cpu;
    int threads = 0; //!< CPU worker threads; 0 = all hardware threads
    //! The CUDA device (0 .. cuda_device_count() - 1) a CUDA detector runs on, with
    //! everything it allocates: streams, events, device and page-locked memory, and in
    //! the blocks the GPU channel estimation and OFDM demodulation beside it. Must be
    //! >= 0. Backend cuda: an index without a device is refused (naming the devices
    //! present); auto: it takes the CPU (logged), as where no device exists. The CPU
    //! backend ignores it.
    int device = 0;

    //! PSD (real-valued tree of N = 2 n_tx levels): lvl_0 = N+1 > lvl_1 > ... > lvl_nr =
    //! 1 and exp_0 = 1, exp_x <= eval_x (PSD paper, Table 1). Both empty: the depth-first
    //! set (lvl = N+1, N, ..., 1, exp all 1), the default of both backends.
    std::vector<int> psd_lvl;
    std::vector<int> psd_exp;

    //! FSD / SFSD: number of fully expanded levels T (Eq. 7); -1: 1.
    int fsd_full_levels = -1;
    //! SFSD: list-extension iterations Niter; -1: 2/4/6 for QPSK/16QAM/64QAM.
    int sfsd_niter = -1;

    //! Channel ordering of the tree/trellis detectors: 1 sorted QR (SQRD), 0 plain QR in
    //! antenna order, -1 the algorithm's default. PSD: sorted for the depth-first set,
    //! plain for the paper's sets (the same ML result either way, the node counts
    //! differ). MTT: default 1 (journal Sec. 6.1: the host performs a sorted QR).
    //! FSD/SFSD always use the FSD ordering.
    int sorted_qr = -1;

    //! LLR clipping magnitude (after 1/noise_var scaling); 0 disables clipping. A list
    //! detector that finds no counter-hypothesis for a bit reports +-llr_clip, or
    //! +-missing_llr when clipping is disabled.
    float llr_clip = 0.0f;

    //! true: LLRs scaled by 1/noise_var (ln P(b=0|y)/P(b=1|y), max-log). false: the raw
    //! metric differences, noise_var times the scaled LLR (clip and missing values
    //! included), for decoders that apply their own noise scaling.
    bool llr_scaled = true;

    //! PSD real-time budget: the wall-clock microseconds one detect call may spend
    //! searching; 0 (the default) = none, the exact ML search. With a budget, a vector
    //! whose search is still running when the budget is seen to be spent ends with the
    //! best leaf found so far (flagged in vector_stats::truncated only if candidates
    //! inside the sphere were left), or, before its first leaf, with the fallback below.
    //! Every vector of the call that starts after that skips the search and gets the
    //! fallback: the SIC (Babai) point of the PSD's own QR and ordering (per real level
    //! from the top: z_k minus the decided levels' interference, over R_kk, sliced to the
    //! nearest PAM level), always flagged, counted as expanded = 0, evaluated = 2 n_tx
    //! (a vector cut before its first leaf keeps its search's counts plus 2 n_tx
    //! evaluated). CPU and CUDA run the same fallback code. Unflagged vectors are exact
    //! ML. The budget is checked every few hundred path metrics (and at each vector's
    //! start), so it is overrun by about one Expand and Evaluate. CPU: measured from the
    //! start of the call (steady_clock), shared by its worker threads. CUDA: from the
    //! start of the call's first detection block (the GPU's %globaltimer), so the
    //! host-device copies and the QR are outside it. Finite and >= 0, at most 1e9
    //! (psd_deadline_ns); other algorithms refuse a non-zero value.
    double psd_deadline_us = 0.0;

    //! PSD node budget: the most path metrics (vector_stats::evaluated) one vector's
    //! search may compute. A vector that reaches it ends with the best leaf found so far
    //! (every search finds its first leaf, the SIC point, within 2 n_tx levels, or starts
    //! with psd_start_rows' leaf), flagged in vector_stats::truncated where candidates
    //! inside the sphere were left, as with the deadline; unflagged vectors are exact ML.
    //! It bounds the work of a vector far outside the constellation or on a near-singular
    //! channel, whose exact search can take 10^6-10^9 path metrics. -1 (the default): a
    //! budget per configuration that realistic inputs almost never reach and that ends a
    //! vector within a few milliseconds (docs/RELIABILITY.md); 0: none, the unbounded
    //! exact search; else the count (at most 4e9). A search spread over the GPU counts
    //! its subtrees' metrics together, so where the budget ends a search the CPU's and
    //! the GPU's best leaf may differ (both flagged). Other algorithms refuse a value
    //! other than -1 and 0.
    int64_t psd_node_budget = -1;

    //! PSD depth-first search (the default parameter set): rows whose every combination,
    //! with successive interference cancellation below, gives the search a starting
    //! bound (the best of those leaves' metrics, a fixed-complexity sphere decoder's
    //! candidates). It prunes only nodes above a leaf the search reaches anyway, so the
    //! decisions are those without it, ties included; it changes the node counts and the
    //! speed. Every row (2 n_tx) of a tree of at most 256 leaves (4x4 QPSK, 2x2 16QAM,
    //! 1x1 64QAM) enumerates the leaves instead and decides without a search wherever
    //! one leaf's metric stands out (the search's decision there too); the near-ties
    //! are searched below that bound. -1 (the default): the backend's own (CUDA: every
    //! row at 2x2 and 4x4 QPSK and 2x2 16QAM, else 0; CPU: 0;
    //! docs/PERFORMANCE.md), 0: none (an infinite starting radius), else
    //! 1..8 rows (fewer where they would pass 2 n_tx rows or 512 paths). Other
    //! algorithms refuse a value other than -1.
    int psd_start_rows = -1;

    //! PSD depth-first search (the default parameter set): a starting radius, as a
    //! multiple of the noise's mean squared norm n_rx x noise_var. Leaves outside it are
    //! pruned from the start; where the best leaf found is not well inside it (none, or
    //! one within 1e-9 of it), the search runs again with twice the radius, and at last
    //! with psd_start_rows' bound or none, so the decisions are those without it, ties
    //! included. It changes the node counts and the speed: a near-singular channel's
    //! search no longer wanders among leaves far outside the noise. Where noise_var is 0
    //! or not finite, none. -1 (the default): the backend's own (CPU: 1.5; CUDA: 0;
    //! docs/PERFORMANCE.md), 0: none, else a finite value > 0 (CPU backend only: the
    //! CUDA backend refuses it). Other algorithms refuse a value other than -1.
    double psd_radius = -1.0;
};

//! Magnitude given to an LLR whose counter-hypothesis a list detector did not find,
//! when clipping is disabled.
constexpr float missing_llr = 1000.0f;

/*!
 * Largest magnitude of a (scaled) LLR: every detector and backend saturates its LLRs at
 * +-llr_saturation (before llr_clip, which may lower it), so an LLR is always finite:
 * at a vanishing noise_var or for a huge H and y the max-log LLR overflows a float. An
 * LLR reaches it only at an SNR beyond about 100 dB (noise_var below 1e-10 for unit
 * channel gains and symbols), past what float inputs resolve (about 1e-7 of their
 * magnitude) and far past the channel estimator's 60 dB cap, so it never touches the
 * LLR of a real channel. A vector with a saturated LLR is flagged
 * (vector_flag_saturated). Unscaled LLRs (llr_scaled false) are the saturated value
 * times noise_var.
 */
constexpr float llr_saturation = 1.0e10f;

/*!
 * Bits of vector_stats::flags: why a vector's output is not to be trusted as it is.
 * Every detector and backend sets them by the same rules (docs/CONVENTIONS.md).
 */
enum vector_flag : uint32_t {
    //! H is rank-deficient or all zeros by the rank rule of linear_common.h (pivoted
    //! LDL^H of H^H H: a pivot <= 1e-10 times the largest; invariant under scaling of
    //! H). The detector's output for it is a guess: LLRs 0 where a stream carries nothing
    //! (zf, mmse) or an arbitrary decision (the tree detectors, whose QR divides by a
    //! zero R_kk: their non-finite intermediate values give LLRs 0 or arbitrary bits).
    vector_flag_rank_deficient = 1u,
    //! An LLR of the vector reached +-llr_saturation (detect_llr only).
    vector_flag_saturated = 2u,
};

//! Per-vector complexity counters (tree detectors; zero elsewhere) and flags.
struct vector_stats {
    uint32_t expanded = 0;  //!< tree nodes expanded (children generated)
    uint32_t evaluated = 0; //!< path metrics computed
    //! 1: the PSD's deadline (detector_config::psd_deadline_us) ended this vector's
    //! search while candidates inside the sphere were left: the output is the best leaf
    //! found, possibly not ML. 0: a complete search (exact ML).
    uint32_t truncated = 0;
    //! vector_flag bits (0: nothing to report).
    uint32_t flags = 0;
};

/*!
 * \brief One part of a segmented batch: n_mat channel matrices, each shared by n_sym
 * received vectors. A segmented batch lays its segments one after another in every
 * buffer (H, y, noise_var, outputs, stats), so a slot's subcarrier groups (7, 6, 5 or 4
 * data symbols) and several slots go to the detector as one call. A segment with
 * n_sym = 0 has no vectors and no outputs, but its n_mat matrices still occupy H and
 * noise_var (as in n_sym separate calls).
 */
struct MIMODET_API batch_segment {
    size_t n_mat = 0;
    size_t n_sym = 0;
};

/*!
 * \brief Thrown by a detect call that was cancelled (detector::cancel, or the poll of
 * detector::set_cancel_poll). Its outputs are then incomplete; the detector stays usable.
 */
class MIMODET_API cancelled : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

/*!
 * \brief Batched MIMO detector for y = H s + n.
 *
 * Layout (all row-major, contiguous): H[n_mat][n_rx][n_tx]; y[n_mat][n_sym][n_rx]: the
 * n_sym received vectors of one matrix share it (an OFDM slot's symbols on one
 * subcarrier); noise_var[n_mat] = E|n_i|^2 per complex receive sample. Outputs per vector
 * n_tx*q values: all q bits of transmit antenna 0 (b0 first), then antenna 1, ...
 * LLR = ln P(b=0|y)/P(b=1|y), max-log, scaled by 1/noise_var (positive means 0).
 *
 * Thread safety: one call at a time per object.
 */
namespace core {
class cancel_token;
class detector_access;
} // namespace core

class MIMODET_API detector
{
public:
    using sptr = std::shared_ptr<detector>;
    using cf = std::complex<float>;

    //! Validates the configuration; throws std::invalid_argument with a message.
    static sptr make(const detector_config& cfg);

    virtual ~detector();

    const detector_config& config() const { return d_cfg; }
    int bits_per_vector() const;
    //! True for detectors with LLR output (sfsd, mtt, ml, zf, mmse).
    virtual bool soft() const = 0;
    //! "cpu" or "cuda": what actually runs (after "auto" resolution; config().backend
    //! holds it as a backend_kind).
    std::string backend() const;

    //! Benchmarks: re-runs the GPU kernels of the last detect call on its data, which is
    //! still on the device (no host transfers), and returns the mean seconds per batch.
    //! CPU detectors throw std::logic_error.
    virtual double kernel_seconds(int repetitions);

    //! Hard bits (0/1). Soft detectors return the LLR signs (LLR < 0 -> 1).
    void detect_bits(const cf* H,
                     const cf* y,
                     size_t n_mat,
                     size_t n_sym,
                     const float* noise_var,
                     uint8_t* bits,
                     vector_stats* stats = nullptr);
    //! Max-log LLRs; throws std::logic_error for hard-only detectors (psd, fsd).
    void detect_llr(const cf* H,
                    const cf* y,
                    size_t n_mat,
                    size_t n_sym,
                    const float* noise_var,
                    float* llr,
                    vector_stats* stats = nullptr);

    /*!
     * A segmented batch in one call (see batch_segment): the same results as one call
     * per segment, but one pass through the backend (the CUDA backend: one round of
     * copies and one synchronisation; the CPU: one dispatch to its threads). The PSD
     * deadline (psd_deadline_us) is a budget for the whole call.
     */
    void detect_bits(const cf* H,
                     const cf* y,
                     const std::vector<batch_segment>& segments,
                     const float* noise_var,
                     uint8_t* bits,
                     vector_stats* stats = nullptr);
    void detect_llr(const cf* H,
                    const cf* y,
                    const std::vector<batch_segment>& segments,
                    const float* noise_var,
                    float* llr,
                    vector_stats* stats = nullptr);

    /*!
     * Asks the detect call running on another thread to stop: it throws
     * mimodet::cancelled at its next check. The CPU backend checks between vectors (a
     * vector's search runs to its end); the CUDA backend between the chunks of a large
     * batch (a chunk on the GPU runs to its end; a batch of up to 16384 vectors is one
     * chunk). A request made while no call runs cancels the next call at its start. The
     * call that throws consumes the request, so the detector is usable again after it.
     * Thread-safe.
     */
    void cancel() noexcept;
    //! Withdraws a request no call has consumed yet (a restarted flowgraph).
    void clear_cancel() noexcept;
    /*!
     * A function the thread that calls detect runs about every 20 ms while its call runs
     * (between vectors, and while it waits for worker threads or the GPU's chunks);
     * returning true cancels the call as cancel() does. For a caller whose thread cannot
     * be reached otherwise: Python's signal check (Ctrl-C), a GNU Radio thread's
     * interruption. Empty: none (the default). Set it between calls.
     */
    void set_cancel_poll(std::function<bool()> poll);

protected:
    explicit detector(const detector_config& cfg);
    //! Backend work on a segmented batch (n_seg >= 1 segments, none empty); inputs
    //! already validated. Exactly one of bits/llr is non-null.
    virtual void run(const cf* H,
                     const cf* y,
                     const batch_segment* segments,
                     size_t n_seg,
                     const float* noise_var,
                     uint8_t* bits,
                     float* llr,
                     vector_stats* stats) = 0;

    detector_config d_cfg;

    //! Backends, on the calling thread: runs the cancel poll where due and returns true
    //! where the call should stop (the caller then throws through run_checked).
    bool cancel_check();
    //! Backends, on any thread (workers): true where the call should stop.
    bool cancel_requested() const noexcept;

private:
    std::unique_ptr<core::cancel_token> d_cancel;

    // The library's internal access (lib/detect/detector_internal.h): the slot
    // detection's call on inputs it already checked, and the fused GPU path's interface.
    friend class core::detector_access;

    //! Checks the buffers of a segmented batch (their values too, unless
    //! inputs_checked); returns its non-empty segments.
    std::vector<batch_segment> validate_inputs(const cf* H,
                                               const cf* y,
                                               const std::vector<batch_segment>& segments,
                                               const float* noise_var,
                                               bool inputs_checked) const;
    void run_checked(const cf* H,
                     const cf* y,
                     const std::vector<batch_segment>& segments,
                     const float* noise_var,
                     uint8_t* bits,
                     float* llr,
                     vector_stats* stats,
                     bool llr_call,
                     bool inputs_checked = false);
};

//! Names of the algorithms: detector_algorithms() (kept for existing callers).
MIMODET_API std::vector<std::string> algorithms();

//! Number of usable CUDA devices (0 when built without CUDA or none is present).
MIMODET_API int cuda_device_count();

//! Where the core's log lines go (default: stderr). GNU Radio blocks route them to d_logger.
using log_handler = std::function<void(const std::string& level, const std::string& msg)>;
MIMODET_API void set_log_handler(log_handler handler);
MIMODET_API void log_message(const std::string& level, const std::string& msg);

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_DETECTOR_H */
