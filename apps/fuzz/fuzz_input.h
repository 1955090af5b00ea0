/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Turns a fuzzer's bytes into parameters and sample values. Every read succeeds: past
// the end of the input it returns zeros, so each byte string is a valid test case and
// the fuzzer's mutations stay meaningful. Values are drawn from a palette that weighs
// the edge cases (zero, huge, tiny, subnormal, NaN, infinities) against ordinary ones.

#ifndef INCLUDED_MIMODET_FUZZ_INPUT_H
#define INCLUDED_MIMODET_FUZZ_INPUT_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace mimodet_fuzz {

class fuzz_input
{
public:
    fuzz_input(const uint8_t* data, size_t size) : d_data(data), d_size(size) {}

    uint8_t byte() { return d_pos < d_size ? d_data[d_pos++] : 0; }
    uint32_t u32()
    {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i)
            v = (v << 8) | byte();
        return v;
    }
    //! An integer in [lo, hi].
    int range(int lo, int hi)
    {
        const uint32_t span = static_cast<uint32_t>(hi - lo) + 1;
        return lo + static_cast<int>((byte() | (uint32_t(byte()) << 8)) % span);
    }
    bool flag() { return byte() & 1; }
    //! Uniform in [-1, 1).
    float unit() { return static_cast<float>(u32() >> 8) / float(1 << 23) - 1.0f; }

    //! A sample value: mostly ordinary (|x| up to about 4), sometimes an edge case.
    float value()
    {
        const uint8_t k = byte();
        if (k < 200)
            return 4.0f * unit();
        switch (k % 11) {
        case 0:
            return 0.0f;
        case 1:
            return -0.0f;
        case 2:
            return std::numeric_limits<float>::max() * (flag() ? 1.0f : -1.0f);
        case 3:
            return 1e30f * unit();
        case 4:
            return std::numeric_limits<float>::min() * unit(); // subnormal
        case 5:
            return 1e-30f * unit();
        case 6:
            return std::numeric_limits<float>::quiet_NaN();
        case 7:
            return std::numeric_limits<float>::infinity();
        case 8:
            return -std::numeric_limits<float>::infinity();
        case 9:
            return 1e6f * unit();
        default:
            return std::ldexp(unit(), range(-149, 127)); // any exponent
        }
    }

    //! A noise variance: mostly plausible, sometimes zero, negative, tiny, huge or not
    //! a number.
    float noise_var()
    {
        const uint8_t k = byte();
        if (k < 180)
            return std::ldexp(0.5f + 0.5f * std::fabs(unit()), -range(0, 30));
        switch (k % 8) {
        case 0:
            return 0.0f;
        case 1:
            return -1.0f;
        case 2:
            return std::numeric_limits<float>::denorm_min();
        case 3:
            return std::numeric_limits<float>::max();
        case 4:
            return std::numeric_limits<float>::quiet_NaN();
        case 5:
            return std::numeric_limits<float>::infinity();
        case 6:
            return 1e-30f;
        default:
            return 1e30f;
        }
    }

    bool exhausted() const { return d_pos >= d_size; }

private:
    const uint8_t* d_data;
    size_t d_size;
    size_t d_pos = 0;
};

//! A violated expectation: report and abort, so libFuzzer (or the standalone driver)
//! keeps the input that caused it.
[[noreturn]] inline void fail(const char* what, const char* detail = "")
{
    std::fprintf(stderr, "FUZZ FAILURE: %s %s\n", what, detail);
    std::fflush(stderr);
    std::abort();
}

} // namespace mimodet_fuzz

#endif
