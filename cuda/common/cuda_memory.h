/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Owned device and pinned host memory for the CUDA detectors: buffers only grow (with
// headroom), so a detector allocates on its first calls and then never again.

#ifndef INCLUDED_MIMODET_CUDA_MEMORY_H
#define INCLUDED_MIMODET_CUDA_MEMORY_H

#include "cuda/common/cuda_check.h"
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

//! Device memory that only grows (contents are not kept across growth).
template <typename T>
class device_buffer
{
public:
    device_buffer() = default;
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;
    ~device_buffer() { release(); }
    void reserve(size_t n)
    {
        if (n <= d_cap)
            return;
        release();
        const size_t cap = std::max(n, d_cap + d_cap / 2); // headroom for creeping sizes
        MIMODET_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_ptr), cap * sizeof(T)));
        d_cap = cap;
    }
    T* get() const { return d_ptr; }
    size_t capacity() const { return d_cap; }

private:
    void release()
    {
        if (d_ptr)
            (void)cudaFree(d_ptr); // destructor path: nothing sensible to do on error
        d_ptr = nullptr;
        d_cap = 0;
    }
    T* d_ptr = nullptr;
    size_t d_cap = 0;
};

//! The first n elements of a device buffer, copied to the host (tests' hooks).
template <typename T>
std::vector<T> download(const device_buffer<T>& d, size_t n)
{
    std::vector<T> h(n);
    MIMODET_CUDA_CHECK(
        cudaMemcpy(h.data(), d.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

//! Elements of a and b (the same length) whose bit patterns differ, so that NaN == NaN
//! and -0 != +0 (the tests' hooks that compare two kernels' outputs).
template <typename T>
size_t count_bit_differences(const std::vector<T>& a, const std::vector<T>& b)
{
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i)
        n += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
    return n;
}

//! Page-locked host staging memory (asynchronous copies need it), grown like above.
template <typename T>
class pinned_buffer
{
public:
    pinned_buffer() = default;
    pinned_buffer(const pinned_buffer&) = delete;
    pinned_buffer& operator=(const pinned_buffer&) = delete;
    ~pinned_buffer() { release(); }
    void reserve(size_t n)
    {
        if (n <= d_cap)
            return;
        release();
        const size_t cap = std::max(n, d_cap + d_cap / 2);
        MIMODET_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&d_ptr), cap * sizeof(T)));
        d_cap = cap;
    }
    T* get() const { return d_ptr; }

private:
    void release()
    {
        if (d_ptr)
            (void)cudaFreeHost(d_ptr);
        d_ptr = nullptr;
        d_cap = 0;
    }
    T* d_ptr = nullptr;
    size_t d_cap = 0;
};

//! Makes `device` current for a scope and restores the caller's device afterwards.
class device_guard
{
public:
    explicit device_guard(int device)
    {
        MIMODET_CUDA_CHECK(cudaGetDevice(&d_prev));
        if (d_prev != device)
            MIMODET_CUDA_CHECK(cudaSetDevice(device));
    }
    ~device_guard() { (void)cudaSetDevice(d_prev); }
    device_guard(const device_guard&) = delete;
    device_guard& operator=(const device_guard&) = delete;

private:
    int d_prev = 0;
};

/*!
 * Destruction on the device an object's memory and handles belong to, whichever device
 * the destroying thread has current (a GNU Radio thread starts on device 0). select()
 * makes the device current until this object is destroyed; as the first member of a
 * class whose destructor calls it, it covers the destructor's body and every other
 * member. Never throws (destructor path: a failure leaves the current device as it was).
 */
class device_release_scope
{
public:
    explicit device_release_scope(int device) : d_device(device) {}
    ~device_release_scope()
    {
        if (d_switched)
            (void)cudaSetDevice(d_prev);
    }
    device_release_scope(const device_release_scope&) = delete;
    device_release_scope& operator=(const device_release_scope&) = delete;
    void select() noexcept
    {
        d_switched = !d_switched && cudaGetDevice(&d_prev) == cudaSuccess &&
                     d_prev != d_device && cudaSetDevice(d_device) == cudaSuccess;
        (void)cudaGetLastError(); // a refused switch is not the next call's error
    }
    int device() const { return d_device; }

private:
    int d_device;
    int d_prev = 0;
    bool d_switched = false;
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
