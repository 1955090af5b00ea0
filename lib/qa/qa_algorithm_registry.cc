/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The algorithm registry and the backend names: every list of algorithms, the soft/hard
// rule and the backend decision read one table, so these tests hold them to it.

#include "detect/algorithm_registry.h"
#include "detect/backend.h"
#include "qa_common.h"
#include <gtest/gtest.h>
#include <set>
#include <stdexcept>
#include <string>

using namespace gr::mimodet;

namespace {

//! The message of the std::invalid_argument f throws ("" where it throws none).
template <typename F>
std::string invalid_argument_message(F f)
{
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return std::string();
}

} // namespace

TEST(algorithm_registry, names_are_unique_and_listed_in_registry_order)
{
    const auto& rows = core::algorithm_registry();
    ASSERT_FALSE(rows.empty());
    std::set<std::string> seen;
    std::vector<std::string> names;
    for (const auto& r : rows) {
        ASSERT_NE(r.name, nullptr);
        EXPECT_FALSE(std::string(r.name).empty());
        EXPECT_TRUE(seen.insert(r.name).second) << "duplicate row " << r.name;
        names.emplace_back(r.name);
        EXPECT_NE(r.make_cpu, nullptr) << r.name;
        EXPECT_EQ(&core::find_algorithm(r.name), &r) << r.name;
    }
    EXPECT_EQ(detector_algorithms(), names);
    EXPECT_EQ(algorithms(), names); // the older name of the same list
}

TEST(algorithm_registry, soft_flag_matches_what_detect_llr_accepts)
{
    const auto b = qa::make_batch(2, 2, modulation::qpsk, 8, 3, 20, 20, 5);
    for (const auto& name : detector_algorithms()) {
        SCOPED_TRACE(name);
        const bool soft = detector_algorithm_soft(name);
        auto d = qa::make(name, 2, 2, modulation::qpsk);
        EXPECT_EQ(d->soft(), soft);
        std::vector<float> llr(b.bits.size(), 0.0f);
        auto call = [&] {
            d->detect_llr(
                b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), llr.data());
        };
        if (soft) {
            EXPECT_NO_THROW(call());
            // The LLR signs are the detector's hard decisions.
            const auto bits = qa::run_bits(*d, b);
            for (size_t i = 0; i < bits.size(); ++i)
                ASSERT_EQ(bits[i], llr[i] < 0.0f ? 1 : 0) << "value " << i;
        } else {
            EXPECT_THROW(call(), std::logic_error);
        }
    }
}

TEST(algorithm_registry, unknown_names_list_the_valid_ones)
{
    const std::string soft_msg =
        invalid_argument_message([] { (void)detector_algorithm_soft("viterbi"); });
    detector_config c;
    c.algorithm = "viterbi";
    const std::string make_msg =
        invalid_argument_message([&] { (void)detector::make(c); });
    for (const std::string& msg : { soft_msg, make_msg }) {
        EXPECT_NE(msg.find("'viterbi'"), std::string::npos) << msg;
        for (const auto& name : detector_algorithms())
            EXPECT_NE(msg.find(name), std::string::npos)
                << name << " missing in: " << msg;
    }
    EXPECT_THROW((void)detector_algorithm_soft(""), std::invalid_argument);
    EXPECT_THROW((void)detector_algorithm_soft("MMSE"), std::invalid_argument);
}

TEST(algorithm_registry, deadline_only_where_the_row_takes_it)
{
    for (const auto& r : core::algorithm_registry()) {
        SCOPED_TRACE(r.name);
        detector_config c;
        c.algorithm = r.name;
        c.mod = modulation::qpsk;
        c.psd_deadline_us = 100.0;
        if (r.uses_deadline)
            EXPECT_NO_THROW((void)detector::make(c));
        else
            EXPECT_THROW((void)detector::make(c), std::invalid_argument);
    }
}

TEST(algorithm_registry, every_row_has_a_cuda_factory_or_a_reason)
{
    for (const auto& r : core::algorithm_registry()) {
        SCOPED_TRACE(r.name);
        if (!core::cuda_built())
            EXPECT_EQ(r.make_cuda, nullptr); // nothing registers without the backend
        const std::string why = core::cuda_missing_reason(r);
        EXPECT_EQ(why.empty(), r.make_cuda != nullptr) << why;
        EXPECT_FALSE(std::string(r.defaults).empty());
    }
}

TEST(algorithm_registry, cuda_request_for_an_algorithm_without_one_says_why)
{
    if (cuda_device_count() == 0)
        GTEST_SKIP() << "no CUDA device";
    for (const auto& r : core::algorithm_registry()) {
        if (r.make_cuda)
            continue;
        detector_config c;
        c.algorithm = r.name;
        c.backend = backend_kind::cuda;
        const std::string msg =
            invalid_argument_message([&] { (void)detector::make(c); });
        EXPECT_NE(msg.find(core::cuda_missing_reason(r)), std::string::npos) << msg;
        c.backend = backend_kind::automatic;
        EXPECT_EQ(detector::make(c)->config().backend, backend_kind::cpu) << r.name;
    }
}

TEST(backend_names, parse_and_to_string_round_trip)
{
    for (const auto b :
         { backend_kind::cpu, backend_kind::cuda, backend_kind::automatic })
        EXPECT_EQ(parse_backend(to_string(b)), b);
    EXPECT_EQ(to_string(backend_kind::automatic), "auto");
    EXPECT_EQ(detector_config{}.backend, backend_kind::cpu);
}

TEST(backend_names, unknown_names_are_refused_with_the_valid_ones)
{
    for (const char* bad : { "fpga", "", "CPU", "automatic", "gpu" }) {
        const std::string msg =
            invalid_argument_message([&] { (void)parse_backend(bad); });
        ASSERT_FALSE(msg.empty()) << "'" << bad << "' accepted";
        EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
        for (const char* ok : { "cpu", "cuda", "auto" })
            EXPECT_NE(msg.find(ok), std::string::npos) << msg;
    }
    EXPECT_THROW((void)to_string(static_cast<backend_kind>(7)), std::invalid_argument);
}

TEST(backend_names, a_made_detector_holds_the_backend_it_resolved_to)
{
    detector_config c;
    c.backend = backend_kind::automatic;
    auto d = detector::make(c);
    EXPECT_NE(d->config().backend, backend_kind::automatic);
    EXPECT_EQ(d->backend(), to_string(d->config().backend));
    EXPECT_EQ(d->config().backend,
              cuda_device_count() > 0 ? backend_kind::cuda : backend_kind::cpu);
}
