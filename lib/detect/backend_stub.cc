/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Built only when ENABLE_CUDA is OFF: the library then has no GPU backend.

#include "detect/backend.h"
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace gr {
namespace mimodet {

int cuda_device_count() { return 0; }

namespace core {
bool cuda_built() { return false; }
void register_cuda_detectors(const cuda_registrar&) {}
void* host_alloc(size_t bytes)
{
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (!p)
        throw std::bad_alloc();
    return p;
}
void host_free(void* p) { std::free(p); }
std::unique_ptr<gpu_channel_estimation>
make_cuda_channel_estimation(const channel_estimation&, int)
{
    return nullptr;
}
std::unique_ptr<gpu_ofdm_demodulation>
make_cuda_ofdm_demodulation(const ofdm_demodulation&, int, int)
{
    return nullptr;
}
size_t psd_cuda_preprocess_differences(const std::complex<float>*, int, int, int, bool)
{
    throw std::runtime_error("mimodet: built without the CUDA backend");
}
size_t mtt_cuda_preprocess_differences(const std::complex<float>*, int, int, int, bool)
{
    throw std::runtime_error("mimodet: built without the CUDA backend");
}
} // namespace core

} // namespace mimodet
} // namespace gr
