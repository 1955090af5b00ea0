/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// std::vector on host_alloc memory (backend.h): page-locked when a GPU is there, so the
// CUDA pipeline copies a batch gathered into it straight to the device.

#ifndef INCLUDED_MIMODET_CORE_HOST_MEMORY_H
#define INCLUDED_MIMODET_CORE_HOST_MEMORY_H

#include "detect/backend.h"
#include <cstddef>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

template <class T>
struct host_allocator {
    using value_type = T;
    host_allocator() = default;
    template <class U>
    host_allocator(const host_allocator<U>&)
    {
    }
    T* allocate(size_t n) { return static_cast<T*>(host_alloc(n * sizeof(T))); }
    void deallocate(T* p, size_t) { host_free(p); }
    template <class U>
    bool operator==(const host_allocator<U>&) const
    {
        return true;
    }
    template <class U>
    bool operator!=(const host_allocator<U>&) const
    {
        return false;
    }
};

template <class T>
using host_vector = std::vector<T, host_allocator<T>>;

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
