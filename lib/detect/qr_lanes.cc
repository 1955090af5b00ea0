/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// qr_sorted_group: the sorted QR of several matrices at once, one per SIMD lane, for the
// instruction sets the CPU has (checked at run time; the library itself is built for the
// baseline). The body is qr_lanes_body.h, compiled once per set. This file is compiled
// with -ffp-contract=off (lib/CMakeLists.txt): a fused multiply-add would round
// otherwise than qr_sorted_real.

#include "detect/qr_lanes.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MIMODET_QR_LANES_X86 1
#include <immintrin.h>
#endif

namespace gr {
namespace mimodet {
namespace core {

#ifdef MIMODET_QR_LANES_X86
// The m x n real models with instances: those of 2x2, 4x2, 4x4, 8x4 and 8x8 channels.
#define MIMODET_QR_GROUP_SIZES(SIZE) \
    SIZE(4, 4) SIZE(8, 4) SIZE(8, 8) SIZE(16, 8) SIZE(16, 16)

namespace {

namespace avx2 {
#define MIMODET_LANES_TARGET __attribute__((target("avx2")))
struct V {
    using reg = __m256d;
    using mask = __m256d;
    static constexpr int lanes = 4;
    MIMODET_LANES_TARGET static reg zero() { return _mm256_setzero_pd(); }
    MIMODET_LANES_TARGET static reg set1(double x) { return _mm256_set1_pd(x); }
    MIMODET_LANES_TARGET static reg add(reg a, reg b) { return _mm256_add_pd(a, b); }
    MIMODET_LANES_TARGET static reg sub(reg a, reg b) { return _mm256_sub_pd(a, b); }
    MIMODET_LANES_TARGET static reg mul(reg a, reg b) { return _mm256_mul_pd(a, b); }
    MIMODET_LANES_TARGET static reg div(reg a, reg b) { return _mm256_div_pd(a, b); }
    MIMODET_LANES_TARGET static reg sqrt(reg a) { return _mm256_sqrt_pd(a); }
    //! a > b ? a : b, else b (so b where either is NaN)
    MIMODET_LANES_TARGET static reg max(reg a, reg b) { return _mm256_max_pd(a, b); }
    MIMODET_LANES_TARGET static mask less(reg a, reg b)
    {
        return _mm256_cmp_pd(a, b, _CMP_LT_OQ);
    }
    MIMODET_LANES_TARGET static mask equal(reg a, reg b)
    {
        return _mm256_cmp_pd(a, b, _CMP_EQ_OQ);
    }
    //! b where m, else a
    MIMODET_LANES_TARGET static reg blend(mask m, reg a, reg b)
    {
        return _mm256_blendv_pd(a, b, m);
    }
    MIMODET_LANES_TARGET static reg zero_unless(mask m, reg a)
    {
        return _mm256_and_pd(a, m);
    }
    MIMODET_LANES_TARGET static bool none(mask m) { return _mm256_movemask_pd(m) == 0; }
};
#include "detect/qr_lanes_body.h"
#undef MIMODET_LANES_TARGET
} // namespace avx2

// GCC 12's AVX-512 headers build some results on _mm512_undefined_pd (deliberately
// uninitialised), which -Wuninitialized reports wherever they are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace avx512 {
#define MIMODET_LANES_TARGET __attribute__((target("avx512f")))
struct V {
    using reg = __m512d;
    using mask = __mmask8;
    static constexpr int lanes = 8;
    MIMODET_LANES_TARGET static reg zero() { return _mm512_setzero_pd(); }
    MIMODET_LANES_TARGET static reg set1(double x) { return _mm512_set1_pd(x); }
    MIMODET_LANES_TARGET static reg add(reg a, reg b) { return _mm512_add_pd(a, b); }
    MIMODET_LANES_TARGET static reg sub(reg a, reg b) { return _mm512_sub_pd(a, b); }
    MIMODET_LANES_TARGET static reg mul(reg a, reg b) { return _mm512_mul_pd(a, b); }
    MIMODET_LANES_TARGET static reg div(reg a, reg b) { return _mm512_div_pd(a, b); }
    MIMODET_LANES_TARGET static reg sqrt(reg a) { return _mm512_sqrt_pd(a); }
    MIMODET_LANES_TARGET static reg max(reg a, reg b) { return _mm512_max_pd(a, b); }
    MIMODET_LANES_TARGET static mask less(reg a, reg b)
    {
        return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ);
    }
    MIMODET_LANES_TARGET static mask equal(reg a, reg b)
    {
        return _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ);
    }
    MIMODET_LANES_TARGET static reg blend(mask m, reg a, reg b)
    {
        return _mm512_mask_blend_pd(m, a, b);
    }
    MIMODET_LANES_TARGET static reg zero_unless(mask m, reg a)
    {
        return _mm512_maskz_mov_pd(m, a);
    }
    MIMODET_LANES_TARGET static bool none(mask m) { return m == 0; }
};
#include "detect/qr_lanes_body.h"
#undef MIMODET_LANES_TARGET
} // namespace avx512
#pragma GCC diagnostic pop

int cpu_lanes()
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 8;
    if (__builtin_cpu_supports("avx2"))
        return 4;
    return 0;
}

//! Whether sorted_qr_group_sized has an instance for m x n.
bool qr_sorted_group_size(int m, int n)
{
#define MIMODET_QR_GROUP_SIZE(MM, NN) \
    if (m == MM && n == NN)           \
        return true;
    MIMODET_QR_GROUP_SIZES(MIMODET_QR_GROUP_SIZE)
#undef MIMODET_QR_GROUP_SIZE
    return false;
}

} // namespace
#endif

int qr_sorted_group_lanes(int m, int n, int limit)
{
#ifdef MIMODET_QR_LANES_X86
    static const int lanes = cpu_lanes();
    if (!qr_sorted_group_size(m, n))
        return 0;
    if (lanes >= 8 && limit >= 8)
        return 8;
    if (lanes >= 4 && limit >= 4)
        return 4;
#endif
    (void)m;
    (void)n;
    (void)limit;
    return 0;
}

void qr_sorted_group(double* const* Q,
                     int count,
                     int lanes,
                     int m,
                     int n,
                     double* const* R,
                     int r_row,
                     int r_col,
                     int* const* perm)
{
    bool done = false;
#ifdef MIMODET_QR_LANES_X86
    if (count >= 1 && count <= lanes && lanes == qr_sorted_group_lanes(m, n, lanes)) {
        if (lanes == 8)
            done = avx512::sorted_qr_group_sized(Q, count, m, n, R, r_row, r_col, perm);
        else if (lanes == 4)
            done = avx2::sorted_qr_group_sized(Q, count, m, n, R, r_row, r_col, perm);
    }
#endif
    if (!done)
        throw std::invalid_argument("mimodet: qr_sorted_group: lanes, count or size not "
                                    "supported (qr_sorted_group_lanes)");
}

} // namespace core
} // namespace mimodet
} // namespace gr
