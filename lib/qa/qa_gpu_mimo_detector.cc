/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The mimo_detector block on the CUDA backend against the same block on the CPU, inside
// a real gr::top_block (vector sources -> mimo_detector -> vector sink): the block's
// slot handling (tags, per-slot noise_var, grouping of subcarriers) must give the GPU
// detectors exactly the CPU's inputs, so hard bits must be identical and LLRs equal
// within float rounding. ctest label "gpu"; every test skips where there is no device.

#include "phy/slot_mapper.h"
#include "qa_gpu_common.h"
#include <gnuradio/blocks/vector_sink.h>
#include <gnuradio/blocks/vector_source.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/mimodet/mimo_detector.h>
#include <gnuradio/top_block.h>
#include <gtest/gtest.h>
#include <pmt/pmt.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {

constexpr double k_mhz = 5.0;
constexpr int k_cell_id = 7;
// Slots 0 and 10 carry PSS/SSS (fewer data elements, other subcarrier groups); 19 -> 0
// is not in the list, so the block must follow the tags, not count.
const int k_slots[] = { 0, 1, 5, 10, 11, 19 };
// One SNR per slot, low to high: low SNRs make the sphere searches long and the lists
// full (the hard cases), and per-slot noise_var checks that each slot's value reaches
// the GPU (it scales the LLRs).
const double k_snr_db[] = { 8, 12, 16, 20, 24, 28 };
constexpr int k_n_slots = sizeof(k_slots) / sizeof(k_slots[0]);

//! The detector's inputs for k_slots: n_rx grid streams, H and noise_var per slot.
struct slots_input {
    int n_tx = 0, n_rx = 0, n_sc = 0;
    std::vector<std::vector<gr_complex>> grids; //!< [r][slot * 7 n_sc + l * n_sc + k]
    std::vector<gr_complex> H;                  //!< [slot][(k * n_rx + r) * n_tx + t]
    std::vector<float> nv;                      //!< per slot
    std::vector<uint8_t> bits;                  //!< transmitted bits, all slots
};

//! Random bits mapped by the framer's own mapper (data, CRS, PSS/SSS), through an
//! i.i.d. CN(0,1) channel per subcarrier, plus AWGN of each slot's SNR.
slots_input make_input(int n_tx, int n_rx, modulation mod, uint64_t seed)
{
    const auto num = lte_numerology::from_bandwidth(k_mhz);
    const core::slot_mapper mapper(num, n_tx, mod, k_cell_id);
    slots_input in;
    in.n_tx = n_tx;
    in.n_rx = n_rx;
    in.n_sc = num.n_sc;
    const int gs = mapper.grid_size();
    const size_t h_len = static_cast<size_t>(num.n_sc) * n_rx * n_tx;
    in.grids.assign(n_rx, std::vector<gr_complex>(static_cast<size_t>(k_n_slots) * gs));
    in.H.resize(k_n_slots * h_len);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> g(0.0f, std::sqrt(0.5f));
    std::bernoulli_distribution coin;
    std::vector<std::vector<gr_complex>> x(n_tx, std::vector<gr_complex>(gs));
    std::vector<gr_complex*> xp(n_tx);
    for (int t = 0; t < n_tx; ++t)
        xp[t] = x[t].data();
    for (int s = 0; s < k_n_slots; ++s) {
        const int ns = k_slots[s];
        std::vector<uint8_t> b(mapper.bits_per_slot(ns));
        for (auto& v : b)
            v = coin(rng);
        if (mapper.map(ns, b.data(), xp.data()) != 0)
            throw std::logic_error("slot_mapper rejected the test bits");
        in.bits.insert(in.bits.end(), b.begin(), b.end());
        gr_complex* h = &in.H[s * h_len];
        for (size_t i = 0; i < h_len; ++i)
            h[i] = gr_complex(g(rng), g(rng));
        const float nv = static_cast<float>(n_tx * std::pow(10.0, -k_snr_db[s] / 10.0));
        in.nv.push_back(nv);
        const float sd = std::sqrt(nv); // g has variance 1/2 per real dimension
        for (int r = 0; r < n_rx; ++r)
            for (int i = 0; i < gs; ++i) {
                const int k = i % num.n_sc;
                gr_complex y(0, 0);
                for (int t = 0; t < n_tx; ++t)
                    y += h[(static_cast<size_t>(k) * n_rx + r) * n_tx + t] * x[t][i];
                in.grids[r][static_cast<size_t>(s) * gs + i] =
                    y + sd * gr_complex(g(rng), g(rng));
            }
    }
    return in;
}

struct block_output {
    std::string backend;
    std::vector<uint8_t> bits;
    std::vector<float> llr;
    std::vector<gr::tag_t> tags;
    std::vector<int> items_per_slot; //!< the block's items_per_slot(ns) of k_slots
    uint64_t slots = 0, bad = 0, untagged = 0;
};

//! One flowgraph: n_rx grid sources (the first with the slot tags), H and noise_var
//! sources -> mimo_detector -> a vector sink.
block_output run_block(const slots_input& in,
                       const std::string& algorithm,
                       const std::string& backend,
                       bool soft)
{
    // Compared bit for bit: no stall bound (psd's wall-clock deadline per slot would make
    // the result depend on the speed of the machine, e.g. under compute-sanitizer).
    auto det = mimo_detector::make(
        block_detector_config(algorithm, in.n_tx, in.n_rx, "16qam", backend),
        k_mhz,
        k_cell_id,
        soft,
        0.0);
    auto tb = gr::make_top_block("qa_gpu_mimo_detector");
    std::vector<gr::tag_t> tags;
    for (int s = 0; s < k_n_slots; ++s) {
        gr::tag_t t;
        t.offset = s; // one grid item per slot
        t.key = pmt::mp("slot");
        t.value = pmt::from_long(k_slots[s]);
        tags.push_back(t);
    }
    for (int r = 0; r < in.n_rx; ++r) {
        auto src = gr::blocks::vector_source_c::make(
            in.grids[r], false, 7 * in.n_sc, r == 0 ? tags : std::vector<gr::tag_t>());
        tb->connect(src, 0, det, r);
    }
    auto h_src = gr::blocks::vector_source_c::make(
        in.H, false, in.n_sc * in.n_rx * in.n_tx);
    auto nv_src = gr::blocks::vector_source_f::make(in.nv, false);
    tb->connect(h_src, 0, det, in.n_rx);
    tb->connect(nv_src, 0, det, in.n_rx + 1);
    block_output out;
    if (soft) {
        auto snk = gr::blocks::vector_sink_f::make();
        tb->connect(det, 0, snk, 0);
        tb->run();
        out.llr = snk->data();
        out.tags = snk->tags();
    } else {
        auto snk = gr::blocks::vector_sink_b::make();
        tb->connect(det, 0, snk, 0);
        tb->run();
        out.bits = snk->data();
        out.tags = snk->tags();
    }
    out.backend = det->backend();
    for (int ns : k_slots)
        out.items_per_slot.push_back(det->items_per_slot(ns));
    out.slots = det->slots_processed();
    out.bad = det->bad_slots();
    out.untagged = det->untagged_slots();
    return out;
}

//! Every slot detected (none zeroed as unusable), with one "slot" tag at its start.
void expect_whole_stream(const block_output& o, size_t n_items, const std::string& what)
{
    EXPECT_EQ(o.slots, static_cast<uint64_t>(k_n_slots)) << what;
    EXPECT_EQ(o.bad, 0u) << what;
    EXPECT_EQ(o.untagged, 0u) << what;
    size_t total = 0;
    std::vector<uint64_t> starts;
    for (int n : o.items_per_slot) {
        starts.push_back(total);
        total += n;
    }
    EXPECT_EQ(n_items, total) << what;
    std::vector<uint64_t> offsets;
    std::vector<long> values;
    for (const auto& t : o.tags)
        if (pmt::eqv(t.key, pmt::mp("slot"))) {
            offsets.push_back(t.offset);
            values.push_back(pmt::to_long(t.value));
        }
    EXPECT_EQ(offsets, starts) << what;
    EXPECT_EQ(values, std::vector<long>(std::begin(k_slots), std::end(k_slots))) << what;
}

//! The CPU's decisions against the transmitted bits: errors (the noise makes the
//! searches non-trivial) but far from random (the outputs are real decisions, not zeros).
void expect_plausible_ber(const std::vector<uint8_t>& decided,
                          const std::vector<uint8_t>& sent,
                          const std::string& what)
{
    ASSERT_EQ(decided.size(), sent.size()) << what;
    size_t err = 0;
    for (size_t i = 0; i < sent.size(); ++i)
        err += decided[i] != sent[i];
    const double ber = double(err) / sent.size();
    std::printf("%s: CPU BER %.3g over %zu bits\n", what.c_str(), ber, sent.size());
    EXPECT_GT(err, 0u) << what;
    EXPECT_LT(ber, 0.2) << what;
}

std::string name(const std::string& alg, int nt, int nr, bool soft)
{
    return alg + " " + std::to_string(nt) + "x" + std::to_string(nr) + " 16qam 5 MHz " +
           (soft ? "LLR" : "bits");
}

void compare_hard(const slots_input& in, const std::string& alg, const std::string& what)
{
    const auto gpu = run_block(in, alg, "cuda", false);
    const auto cpu = run_block(in, alg, "cpu", false);
    ASSERT_EQ(gpu.backend, "cuda") << what; // no silent fallback: CPU vs CPU proves nothing
    ASSERT_EQ(cpu.backend, "cpu") << what;
    expect_whole_stream(gpu, gpu.bits.size(), what + " (cuda)");
    expect_whole_stream(cpu, cpu.bits.size(), what + " (cpu)");
    ASSERT_EQ(gpu.bits.size(), cpu.bits.size()) << what;
    size_t diff = 0, first = gpu.bits.size();
    for (size_t i = 0; i < gpu.bits.size(); ++i)
        if (gpu.bits[i] != cpu.bits[i]) {
            ++diff;
            first = std::min(first, i);
        }
    EXPECT_EQ(diff, 0u) << what << ": first differing bit " << first;
    std::printf("%s: %zu bits, %zu differ\n", what.c_str(), gpu.bits.size(), diff);
    expect_plausible_ber(cpu.bits, in.bits, what);
}

void compare_soft(const slots_input& in, const std::string& alg, const std::string& what)
{
    const auto gpu = run_block(in, alg, "cuda", true);
    const auto cpu = run_block(in, alg, "cpu", true);
    ASSERT_EQ(gpu.backend, "cuda") << what;
    ASSERT_EQ(cpu.backend, "cpu") << what;
    expect_whole_stream(gpu, gpu.llr.size(), what + " (cuda)");
    expect_whole_stream(cpu, cpu.llr.size(), what + " (cpu)");
    ASSERT_EQ(gpu.llr.size(), cpu.llr.size()) << what;
    // 1e-3 relative (absolute below 1), as qa_gpu_sfsd/qa_gpu_mtt: the LLRs are metric
    // differences over noise_var, summed in another order on the GPU.
    size_t bad = 0, first = gpu.llr.size();
    double max_rel = 0;
    for (size_t i = 0; i < gpu.llr.size(); ++i) {
        const double c = cpu.llr[i], g = gpu.llr[i];
        const double rel = std::fabs(g - c) / std::max(1.0, std::fabs(c));
        if (!std::isfinite(g) || !(rel <= 1e-3)) {
            ++bad;
            first = std::min(first, i);
        }
        if (std::isfinite(rel))
            max_rel = std::max(max_rel, rel);
    }
    EXPECT_EQ(bad, 0u) << what << ": first LLR off " << first << " (cpu "
                       << (first < cpu.llr.size() ? cpu.llr[first] : 0.0f) << ", cuda "
                       << (first < gpu.llr.size() ? gpu.llr[first] : 0.0f) << ")";
    std::printf(
        "%s: %zu LLRs, max rel diff %.3g\n", what.c_str(), gpu.llr.size(), max_rel);
    std::vector<uint8_t> signs(cpu.llr.size());
    for (size_t i = 0; i < signs.size(); ++i)
        signs[i] = cpu.llr[i] < 0; // LLR < 0 means 1 (docs/CONVENTIONS.md)
    expect_plausible_ber(signs, in.bits, what);
}

} // namespace

TEST(gpu_mimo_detector, hard_bits_match_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 1000;
    for (int n : { 2, 4 }) {
        const auto in = make_input(n, n, modulation::qam16, ++seed);
        for (const char* alg : { "psd", "fsd", "sfsd", "mtt" })
            compare_hard(in, alg, name(alg, n, n, false));
    }
}

TEST(gpu_mimo_detector, llrs_match_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 2000;
    for (int n : { 2, 4 }) {
        const auto in = make_input(n, n, modulation::qam16, ++seed);
        for (const char* alg : { "sfsd", "mtt" })
            compare_soft(in, alg, name(alg, n, n, true));
    }
}

TEST(gpu_mimo_detector, backend_selection)
{
    QA_SKIP_WITHOUT_GPU();
    // "auto" takes the GPU where the algorithm has a CUDA implementation and the CPU
    // where it has none (ml); "cuda" for that is refused, not silently the CPU.
    for (const char* alg : { "psd", "fsd", "sfsd", "mtt", "zf", "mmse" })
        EXPECT_EQ(mimo_detector::make(
                      block_detector_config(alg, 4, 4, "16qam", "auto"), k_mhz, k_cell_id)
                      ->backend(),
                  "cuda")
            << alg;
    EXPECT_EQ(mimo_detector::make(
                  block_detector_config("ml", 4, 4, "16qam", "auto"), k_mhz, k_cell_id)
                  ->backend(),
              "cpu");
    EXPECT_THROW(mimo_detector::make(block_detector_config("ml", 4, 4, "16qam", "cuda"),
                                     k_mhz,
                                     k_cell_id),
                 std::invalid_argument);
}
