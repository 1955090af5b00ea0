/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// OFDM demodulation on the GPU, for the fused receiver with time-domain input
// (slot_receiver): the slot's samples go to the device instead of its grids, and the
// grids are made there, where the channel estimator and the detector read them. The
// tables (FFT windows, bins, weights) are lib/phy/ofdm_demodulation's. Per slot, on the
// caller's stream:
//   the samples' upload: straight from the block's input buffers where it registered
//     them (page-locked in place: no copy on the host, which cost 50-110 us per 20 MHz
//     4x4 slot on the H100 hosts), then nonfinite_kernel checks them; otherwise each
//     antenna's samples into page-locked memory (checked on the way), each antenna's
//     upload enqueued as soon as it is copied;
//   window_kernel: the 7 FFT windows of every antenna side by side;
//   one batched cuFFT (7 n_rx transforms of fft_size points, in place);
//   extract_kernel: the used bins, times the weights, into the packed grids.

#include "cuda/common/cuda_check.h"
#include "cuda/common/cuda_memory.h"
#include "cuda/phy/float_math.cuh"
#include "detect/backend.h"
#include "detect/finite.h"
#include "phy/ofdm_demodulation.h"
#include <cstring>
#include <cuda_runtime.h>
#include <cufft.h>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {
constexpr int kThreads = 256;
constexpr int kSymbols = lte_numerology::symbols_per_slot;

#define MIMODET_CUFFT_CHECK(call)                                              \
    do {                                                                       \
        const cufftResult mimodet_fft_err_ = (call);                           \
        if (mimodet_fft_err_ != CUFFT_SUCCESS)                                 \
            throw std::runtime_error(                                          \
                std::string("mimodet cuFFT error: ") + #call + " failed at " + \
                __FILE__ + ":" + std::to_string(__LINE__) + ": code " +        \
                std::to_string(static_cast<int>(mimodet_fft_err_)));           \
    } while (0)

//! The first sample of each symbol's FFT window in a slot.
struct window_starts {
    int start[kSymbols];
};

//! sym[(r * 7 + l) * N + i] = time[r * S + start[l] + i].
__global__ void window_kernel(const float2* __restrict__ time,
                              float2* __restrict__ sym,
                              int total,
                              int N,
                              int S,
                              window_starts w)
{
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += gridDim.x * blockDim.x) {
        const int rl = idx / N, i = idx - rl * N;
        const int r = rl / kSymbols, l = rl - r * kSymbols;
        sym[idx] = time[static_cast<size_t>(r) * S + w.start[l] + i];
    }
}

//! *flag = 1 where a value of the n floats at p is NaN or Inf (flag cleared before).
__global__ void nonfinite_kernel(const float* __restrict__ p, size_t n, int* flag)
{
    int bad = 0;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        bad |= !isfinite(p[i]);
    if (__syncthreads_or(bad) && threadIdx.x == 0)
        *flag = 1;
}

//! grids[(r * 7 + l) * n_sc + k] = sym[(r * 7 + l) * N + bin[k]] * weight[k], the
//! product rounded as the CPU's std::complex<float> (no fused multiply-add).
__global__ void extract_kernel(const float2* __restrict__ sym,
                               const int* __restrict__ bin,
                               const float2* __restrict__ weight,
                               float2* __restrict__ grids,
                               int total,
                               int N,
                               int n_sc)
{
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += gridDim.x * blockDim.x) {
        const int rl = idx / n_sc, k = idx - rl * n_sc;
        grids[idx] = cmul_rn(sym[static_cast<size_t>(rl) * N + bin[k]], weight[k]);
    }
}

int blocks_for(int total) { return (total + kThreads - 1) / kThreads; }

/*!
 * Host memory page-locked by this library, shared by all its users (the lanes of a
 * block, several receivers): CUDA refuses a second registration of registered pages with
 * an API error (cudaErrorHostMemoryAlreadyRegistered), which compute-sanitizer counts and
 * which would hide a real one, so each range is registered once and given back when its
 * last user lets go.
 */
struct pinned_range {
    const char* base;
    size_t bytes;
    int users;
};
std::mutex g_pinned_mutex;
std::vector<pinned_range> g_pinned;

//! True when CUDA says p lies in page-locked host memory (no error left behind).
bool host_pinned(const void* p)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError(); // ordinary memory on some drivers: not an error
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

class ofdm_demodulation_cuda : public gpu_ofdm_demodulation
{
public:
    ofdm_demodulation_cuda(const ofdm_demodulation& cpu, int n_rx, int device)
        : d_release(device), d_device(device), d_n_rx(n_rx),
          d_N(cpu.numerology().fft_size), d_S(cpu.slot_samples()),
          d_n_sc(cpu.numerology().n_sc)
    {
        if (n_rx < 1)
            throw std::invalid_argument("mimodet: GPU OFDM demodulation needs n_rx >= 1");
        const device_guard guard(d_device);
        d_pieces.resize(n_rx);
        for (int l = 0; l < kSymbols; ++l)
            d_windows.start[l] = cpu.windows()[l];
        const size_t n_time = static_cast<size_t>(n_rx) * d_S;
        d_host_time.reserve(n_time);
        d_time.reserve(n_time);
        d_sym.reserve(static_cast<size_t>(n_rx) * kSymbols * d_N);
        d_bins.reserve(d_n_sc);
        d_weights.reserve(d_n_sc);
        d_flag.reserve(1);
        h_flag.reserve(1);
        *h_flag.get() = 0;
        // Once, before real-time operation: plain synchronous copies.
        MIMODET_CUDA_CHECK(cudaMemcpy(d_bins.get(),
                                      cpu.bins().data(),
                                      d_n_sc * sizeof(int),
                                      cudaMemcpyHostToDevice));
        MIMODET_CUDA_CHECK(cudaMemcpy(d_weights.get(),
                                      cpu.weights().data(),
                                      d_n_sc * sizeof(float2),
                                      cudaMemcpyHostToDevice));
        MIMODET_CUFFT_CHECK(cufftPlan1d(&d_plan, d_N, CUFFT_C2C, n_rx * kSymbols));
    }
    ~ofdm_demodulation_cuda() override
    {
        d_release.select(); // the plan, stream and buffers below go on their device
        unregister_host_memory();
        (void)cufftDestroy(d_plan);
        if (d_stream)
            (void)cudaStreamDestroy(d_stream);
    }

    bool register_host_memory(const void* p, size_t bytes, bool mirrored) override
    {
        const device_guard guard(d_device);
        if (!p || bytes == 0)
            return false;
        const char* c = static_cast<const char*>(p);
        const std::lock_guard<std::mutex> lock(g_pinned_mutex);
        for (auto& e : g_pinned) {
            if (c >= e.base && c + bytes <= e.base + e.bytes) { // ours already: share it
                ++e.users;
                d_registered.push_back({ c, bytes, mirrored, e.base });
                return true;
            }
            if (c < e.base + e.bytes && e.base < c + bytes)
                return false; // partly ours: CUDA would refuse it
        }
        // Page-locked by other code (cudaHostAlloc, a registration of its own): used as
        // it is where both ends are; never registered a second time.
        const bool first = host_pinned(c), last = host_pinned(c + bytes - 1);
        if (first || last) {
            if (!(first && last))
                return false;
            d_registered.push_back({ c, bytes, mirrored, nullptr });
            return true;
        }
        // Portable: a range shared by receivers on other devices is page-locked for
        // their copies too.
        if (cudaHostRegister(const_cast<char*>(c), bytes, cudaHostRegisterPortable) !=
            cudaSuccess) {
            (void)cudaGetLastError(); // not a sticky error: clear it
            return false;
        }
        g_pinned.push_back({ c, bytes, 1 });
        d_registered.push_back({ c, bytes, mirrored, c });
        return true;
    }

    void unregister_host_memory() override
    {
        const device_guard guard(d_device);
        const std::lock_guard<std::mutex> lock(g_pinned_mutex);
        for (const auto& r : d_registered) {
            if (!r.owner)
                continue;
            for (size_t i = 0; i < g_pinned.size(); ++i)
                if (g_pinned[i].base == r.owner && --g_pinned[i].users == 0) {
                    (void)cudaHostUnregister(const_cast<char*>(g_pinned[i].base));
                    g_pinned.erase(g_pinned.begin() + i);
                    break;
                }
        }
        d_registered.clear();
    }

    bool samples_finite() const override
    {
        return !d_checked_on_device || *h_flag.get() == 0;
    }

    bool demodulate_packed(const std::complex<float>* const* slots,
                           void* dev_grids,
                           void* stream) override
    {
        const device_guard guard(d_device);
        auto s = static_cast<cudaStream_t>(stream);
        if (direct_upload(slots))
            upload_registered(s);
        else if (!upload_copied(slots, s))
            return false;
        const int n_sym = d_n_rx * kSymbols * d_N;
        window_kernel<<<blocks_for(n_sym), kThreads, 0, s>>>(
            d_time.get(), d_sym.get(), n_sym, d_N, d_S, d_windows);
        MIMODET_CUDA_CHECK_LAUNCH();
        MIMODET_CUFFT_CHECK(cufftSetStream(d_plan, s));
        auto* sym = reinterpret_cast<cufftComplex*>(d_sym.get());
        MIMODET_CUFFT_CHECK(cufftExecC2C(d_plan, sym, sym, CUFFT_FORWARD));
        const int n_grid = d_n_rx * kSymbols * d_n_sc;
        extract_kernel<<<blocks_for(n_grid), kThreads, 0, s>>>(
            d_sym.get(),
            d_bins.get(),
            d_weights.get(),
            static_cast<float2*>(dev_grids),
            n_grid,
            d_N,
            d_n_sc);
        MIMODET_CUDA_CHECK_LAUNCH();
        return true;
    }

    bool demodulate(const std::complex<float>* const* slots,
                    std::complex<float>* const* grids) override
    {
        const device_guard guard(d_device);
        if (!d_stream)
            MIMODET_CUDA_CHECK(
                cudaStreamCreateWithFlags(&d_stream, cudaStreamNonBlocking));
        const size_t grid_len = static_cast<size_t>(kSymbols) * d_n_sc;
        d_grids.reserve(d_n_rx * grid_len);
        d_host_grids.reserve(d_n_rx * grid_len);
        if (!demodulate_packed(slots, d_grids.get(), d_stream))
            return false;
        MIMODET_CUDA_CHECK(cudaMemcpyAsync(d_host_grids.get(),
                                           d_grids.get(),
                                           d_n_rx * grid_len * sizeof(float2),
                                           cudaMemcpyDeviceToHost,
                                           d_stream));
        MIMODET_CUDA_CHECK(cudaStreamSynchronize(d_stream));
        if (!samples_finite())
            return false;
        for (int r = 0; r < d_n_rx; ++r)
            std::memcpy(
                grids[r], d_host_grids.get() + r * grid_len, grid_len * sizeof(float2));
        return true;
    }

private:
    /*!
     * True where every antenna's slot lies in a registered range, or runs from one into
     * its mirror; then d_pieces[r] says where its bytes are (page-locked addresses only:
     * a part in a mirror is read from the first mapping).
     */
    bool direct_upload(const std::complex<float>* const* slots)
    {
        const size_t slot_bytes = d_S * sizeof(float2);
        for (int r = 0; r < d_n_rx; ++r) {
            const char* c = reinterpret_cast<const char*>(slots[r]);
            bool inside = false;
            for (const auto& range : d_registered) {
                const char* end = range.base + range.bytes;
                const char* a = c;
                // In the mirror: the same bytes lie in the first mapping.
                if (range.mirrored && a >= end && a < end + range.bytes)
                    a -= range.bytes;
                if (a < range.base || a >= end)
                    continue;
                if (a + slot_bytes <= end) {
                    d_pieces[r] = { a, slot_bytes, nullptr };
                } else if (range.mirrored && slot_bytes <= range.bytes) {
                    const size_t head = static_cast<size_t>(end - a);
                    d_pieces[r] = { a, head, range.base };
                } else {
                    continue;
                }
                inside = true;
                break;
            }
            if (!inside)
                return false;
        }
        return true;
    }

    //! Straight from the caller's page-locked buffers; the check runs on the device and
    //! its flag comes back with the stream (samples_finite()).
    void upload_registered(cudaStream_t s)
    {
        d_checked_on_device = true;
        MIMODET_CUDA_CHECK(cudaMemsetAsync(d_flag.get(), 0, sizeof(int), s));
        const size_t slot_bytes = d_S * sizeof(float2);
        for (int r = 0; r < d_n_rx; ++r) {
            char* dst = reinterpret_cast<char*>(d_time.get()) + r * slot_bytes;
            const upload_pieces& u = d_pieces[r];
            MIMODET_CUDA_CHECK(
                cudaMemcpyAsync(dst, u.first, u.first_bytes, cudaMemcpyHostToDevice, s));
            if (u.rest) // the part in the mirror, from the start of the first mapping
                MIMODET_CUDA_CHECK(cudaMemcpyAsync(dst + u.first_bytes,
                                                   u.rest,
                                                   slot_bytes - u.first_bytes,
                                                   cudaMemcpyHostToDevice,
                                                   s));
        }
        nonfinite_kernel<<<64, kThreads, 0, s>>>(
            reinterpret_cast<const float*>(d_time.get()),
            2 * static_cast<size_t>(d_n_rx) * d_S,
            d_flag.get());
        MIMODET_CUDA_CHECK_LAUNCH();
        MIMODET_CUDA_CHECK(cudaMemcpyAsync(
            h_flag.get(), d_flag.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
    }

    //! Through the page-locked staging buffer, checked on the host on the way; false
    //! (nothing pending) for samples that are not finite.
    bool upload_copied(const std::complex<float>* const* slots, cudaStream_t s)
    {
        d_checked_on_device = false;
        auto* host = reinterpret_cast<std::complex<float>*>(d_host_time.get());
        for (int r = 0; r < d_n_rx; ++r) {
            std::complex<float>* h = host + static_cast<size_t>(r) * d_S;
            if (!copy_finite(slots[r], h, d_S)) {
                // The uploads already enqueued read the staging buffer: let them finish
                // before it is written again.
                MIMODET_CUDA_CHECK(cudaStreamSynchronize(s));
                return false;
            }
            MIMODET_CUDA_CHECK(
                cudaMemcpyAsync(d_time.get() + static_cast<size_t>(r) * d_S,
                                h,
                                d_S * sizeof(float2),
                                cudaMemcpyHostToDevice,
                                s));
        }
        return true;
    }

    device_release_scope d_release; //!< first member: the last destroyed
    const int d_device;
    const int d_n_rx, d_N, d_S, d_n_sc;
    // demodulate() only: its stream and grids.
    cudaStream_t d_stream = nullptr;
    device_buffer<float2> d_grids;
    pinned_buffer<float2> d_host_grids;
    window_starts d_windows{};
    pinned_buffer<float2> d_host_time;
    device_buffer<float2> d_time, d_sym;
    device_buffer<int> d_bins;
    device_buffer<float2> d_weights;
    cufftHandle d_plan = 0;
    // register_host_memory's ranges, and the device check of direct uploads.
    struct host_range {
        const char* base;
        size_t bytes;
        bool mirrored;     //!< [base + bytes, base + 2 bytes) maps the same memory
        const char* owner; //!< its g_pinned entry; nullptr: page-locked by other code
    };
    std::vector<host_range> d_registered;
    //! Per antenna, the page-locked bytes of the slot of a direct upload: first_bytes
    //! from first, then (rest non-null) the remainder from rest.
    struct upload_pieces {
        const char* first;
        size_t first_bytes;
        const char* rest;
    };
    std::vector<upload_pieces> d_pieces;
    bool d_checked_on_device = false;
    device_buffer<int> d_flag;
    pinned_buffer<int> h_flag;
};
} // namespace

std::unique_ptr<gpu_ofdm_demodulation>
make_cuda_ofdm_demodulation(const ofdm_demodulation& cpu, int n_rx, int device)
{
    if (!cuda_device_problem(device).empty())
        return nullptr;
    return std::make_unique<ofdm_demodulation_cuda>(cpu, n_rx, device);
}

} // namespace core
} // namespace mimodet
} // namespace gr
