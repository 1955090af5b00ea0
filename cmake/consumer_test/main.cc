/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Built against the installed package: makes a detector through the public header and
// detects one noiseless 2x2 QPSK vector, whose ML answer is the transmitted bits.

#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/detector.h>
#include <cstdint>
#include <cstdio>
#include <vector>

int main()
{
    using cf = gr::mimodet::detector::cf;
    gr::mimodet::detector_config cfg;
    cfg.algorithm = "fsd";
    cfg.n_tx = 2;
    cfg.n_rx = 2;
    cfg.mod = gr::mimodet::parse_modulation("qpsk");
    cfg.backend = gr::mimodet::backend_kind::cpu;
    cfg.threads = 1;
    auto det = gr::mimodet::detector::make(cfg);

    const auto& c = gr::mimodet::constellation::get(cfg.mod);
    // Labels b0 b1 per antenna (b0 most significant): antenna 0 sends 10, antenna 1 01.
    const int labels[2] = { 2, 1 };
    const std::vector<uint8_t> sent = { 1, 0, 0, 1 };
    const cf H[4] = { cf(1.0f, 0.2f), cf(0.3f, -0.1f), cf(-0.2f, 0.4f), cf(0.9f, 0.0f) };
    cf s[2];
    for (int t = 0; t < 2; t++)
        s[t] = cf(c.points()[labels[t]]);
    cf y[2];
    for (int r = 0; r < 2; r++)
        y[r] = H[r * 2] * s[0] + H[r * 2 + 1] * s[1];
    const float noise_var = 0.01f;
    std::vector<uint8_t> bits(4, 0xff);
    det->detect_bits(H, y, 1, 1, &noise_var, bits.data());

    std::printf("backend %s, bits %d%d %d%d\n",
                det->backend().c_str(),
                bits[0],
                bits[1],
                bits[2],
                bits[3]);
    if (bits != sent) {
        std::printf("FAIL: expected 10 01\n");
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
