/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The environment switches (tuning.h): defaults when unset, values in range taken, bad
// values refused with the variable's name, and the table complete.

#include "util/call_timeline.h"
#include "util/tuning.h"
#include "util/worker_pool.h"
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <set>
#include <string>

using namespace gr::mimodet::core;

namespace {

//! Sets (or with nullptr unsets) a variable for one scope, restoring it afterwards.
class scoped_env
{
public:
    scoped_env(const char* name, const char* value) : d_name(name)
    {
        if (const char* old = std::getenv(name)) {
            d_had = true;
            d_old = old;
        }
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~scoped_env()
    {
        if (d_had)
            setenv(d_name, d_old.c_str(), 1);
        else
            unsetenv(d_name);
    }

private:
    const char* d_name;
    bool d_had = false;
    std::string d_old;
};

//! The message of the std::invalid_argument that f throws ("" if none).
template <typename F>
std::string refusal(F f)
{
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(tuning, integer_switches_default_take_and_refuse)
{
    struct sw {
        const char* name;
        int (*read)();
        int unset, lo, hi;
    };
    const sw all[] = {
        { "MIMODET_ANTENNA_THREADS", tuning::antenna_threads, 0, 1, 8 },
        { "MIMODET_GPU_LANES", tuning::gpu_lanes, 0, 1, 4 },
        { "MIMODET_RECEIVER_ASYNC", tuning::receiver_async, -1, 0, 1 },
        { "MIMODET_MAX_SLOTS_PER_CALL", tuning::max_slots_per_call, 0, 1, 8 },
        { "MIMODET_SYNC_AHEAD", tuning::sync_ahead, -1, 0, 1 },
        { "MIMODET_INPUT_REGISTER", tuning::input_register, -1, 0, 1 },
        { "MIMODET_PSD_SE_SPLIT", tuning::psd_se_split, 0, 1, 65536 },
        { "MIMODET_PSD_SE_DRAIN", tuning::psd_se_drain, 0, 1, 65536 },
        { "MIMODET_PSD_SE_COOPERATIVE", tuning::psd_se_cooperative, -1, 0, 1 },
        { "MIMODET_PSD_SE_SHARED_ROWS", tuning::psd_se_shared_rows, -1, 0, 1 },
        { "MIMODET_PSD_SE_STORED_Z", tuning::psd_se_stored_z, -1, 0, 1 },
        { "MIMODET_PSD_SE_DEFERRED_WRITE", tuning::psd_se_deferred_write, -1, 0, 1 },
        { "MIMODET_PSD_SE_FIRST_LEAF", tuning::psd_se_first_leaf, -1, 0, 1 },
        { "MIMODET_PSD_SE_DEPENDENT_LAUNCH", tuning::psd_se_dependent_launch, -1, 0, 1 },
        { "MIMODET_PSD_SE_REFILL", tuning::psd_se_refill, 0, 1, 32 },
        { "MIMODET_PSD_SE_CHUNK", tuning::psd_se_chunk, 0, 4096, 1 << 20 },
        { "MIMODET_FSD_THREADS", tuning::fsd_threads, 0, 1, 256 },
        { "MIMODET_CHUNK_SHARES", tuning::chunk_shares, 0, 1, 8 },
        { "MIMODET_CPU_QR_LANES", tuning::cpu_qr_lanes, 0, 1, 8 },
    };
    for (const auto& s : all) {
        SCOPED_TRACE(s.name);
        {
            scoped_env e(s.name, nullptr);
            EXPECT_EQ(s.read(), s.unset);
        }
        {
            scoped_env e(s.name, "");
            EXPECT_EQ(s.read(), s.unset);
        }
        for (int v : { s.lo, s.hi }) {
            scoped_env e(s.name, std::to_string(v).c_str());
            EXPECT_EQ(s.read(), v);
        }
        for (const std::string bad : { std::to_string(s.lo - 1),
                                       std::to_string(s.hi + 1),
                                       std::string("2x"),
                                       std::string("x") }) {
            scoped_env e(s.name, bad.c_str());
            const std::string m = refusal(s.read);
            EXPECT_NE(m.find(s.name), std::string::npos) << bad << ": " << m;
            EXPECT_NE(m.find(bad), std::string::npos) << m;
        }
    }
}

TEST(tuning, antenna_threads_override_is_capped_by_antennas)
{
    scoped_env e("MIMODET_ANTENNA_THREADS", "6");
    EXPECT_EQ(antenna_threads(2048, 4), 4);
    EXPECT_EQ(antenna_threads(128, 8), 6); // the override holds below 10 MHz too
}

TEST(tuning, psd_kernel)
{
    {
        scoped_env e("MIMODET_PSD_KERNEL", nullptr);
        EXPECT_EQ(tuning::psd_kernel(), "");
    }
    {
        scoped_env e("MIMODET_PSD_KERNEL", "auto");
        EXPECT_EQ(tuning::psd_kernel(), "");
    }
    for (const char* k : { "warp", "block" }) {
        scoped_env e("MIMODET_PSD_KERNEL", k);
        EXPECT_EQ(tuning::psd_kernel(), k);
    }
    scoped_env e("MIMODET_PSD_KERNEL", "thread");
    EXPECT_NE(refusal(tuning::psd_kernel).find("MIMODET_PSD_KERNEL='thread'"),
              std::string::npos);
}

TEST(tuning, fsd_threads_is_a_power_of_two)
{
    for (int v : { 1, 2, 4, 64, 256 }) {
        scoped_env e("MIMODET_FSD_THREADS", std::to_string(v).c_str());
        EXPECT_EQ(tuning::fsd_threads(), v);
    }
    for (const char* v : { "3", "6", "100" }) {
        scoped_env e("MIMODET_FSD_THREADS", v);
        EXPECT_NE(refusal(tuning::fsd_threads)
                      .find(std::string("MIMODET_FSD_THREADS='") + v + "'"),
                  std::string::npos)
            << v;
    }
}

TEST(tuning, cpu_qr_lanes_is_1_4_or_8)
{
    for (int v : { 1, 4, 8 }) {
        scoped_env e("MIMODET_CPU_QR_LANES", std::to_string(v).c_str());
        EXPECT_EQ(tuning::cpu_qr_lanes(), v);
    }
    for (const char* v : { "2", "3", "7" }) {
        scoped_env e("MIMODET_CPU_QR_LANES", v);
        EXPECT_NE(refusal(tuning::cpu_qr_lanes)
                      .find(std::string("MIMODET_CPU_QR_LANES='") + v + "'"),
                  std::string::npos)
            << v;
    }
}

TEST(tuning, call_timeline_only_where_switched_on)
{
    {
        scoped_env e("MIMODET_CALL_TIMELINE", nullptr);
        EXPECT_EQ(tuning::call_timeline_prefix(), "");
        EXPECT_EQ(call_timeline::make("qa", { "a" }), nullptr);
    }
    const std::string prefix = ::testing::TempDir() + "qa_tuning_tl";
    scoped_env e("MIMODET_CALL_TIMELINE", prefix.c_str());
    EXPECT_EQ(tuning::call_timeline_prefix(), prefix);
    EXPECT_NE(call_timeline::make("qa", { "a" }), nullptr);
    // The timeline wrote its (empty) file when it went away.
    int files = 0;
    for (const auto& f : std::filesystem::directory_iterator(::testing::TempDir()))
        if (f.path().filename().string().rfind("qa_tuning_tl_qa_", 0) == 0) {
            ++files;
            std::filesystem::remove(f.path());
        }
    EXPECT_GE(files, 1);
}

TEST(tuning, table_names_every_switch_once)
{
    std::set<std::string> names;
    for (const auto& s : tuning::switches()) {
        EXPECT_TRUE(names.insert(s.name).second) << s.name;
        EXPECT_EQ(std::string(s.name).rfind("MIMODET_", 0), 0u) << s.name;
        EXPECT_GT(std::string(s.values).size(), 0u) << s.name;
        EXPECT_GT(std::string(s.effect).size(), 0u) << s.name;
    }
    for (const char* n : { "MIMODET_ANTENNA_THREADS",
                           "MIMODET_NO_AVX",
                           "MIMODET_CALL_TIMELINE",
                           "MIMODET_GPU_LANES",
                           "MIMODET_MAX_SLOTS_PER_CALL",
                           "MIMODET_SYNC_AHEAD",
                           "MIMODET_INPUT_REGISTER",
                           "MIMODET_GPU_WAIT",
                           "MIMODET_PSD_KERNEL",
                           "MIMODET_PSD_SE_SPLIT",
                           "MIMODET_PSD_SE_DRAIN",
                           "MIMODET_PSD_SE_COOPERATIVE",
                           "MIMODET_PSD_SE_SHARED_ROWS",
                           "MIMODET_PSD_SE_STORED_Z",
                           "MIMODET_PSD_SE_DEFERRED_WRITE",
                           "MIMODET_PSD_SE_FIRST_LEAF",
                           "MIMODET_PSD_SE_DEPENDENT_LAUNCH",
                           "MIMODET_PSD_SE_REFILL",
                           "MIMODET_PSD_SE_CHUNK",
                           "MIMODET_FSD_THREADS",
                           "MIMODET_CHUNK_SHARES",
                           "MIMODET_CPU_QR_LANES" })
        EXPECT_EQ(names.count(n), 1u) << n;
    // A name outside the table is a programming error, not a user's.
    EXPECT_THROW(tuning::integer("MIMODET_NOT_A_SWITCH", 0, 1, 0), std::logic_error);
}
