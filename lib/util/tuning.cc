/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "util/tuning.h"
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace gr {
namespace mimodet {
namespace core {
namespace tuning {

namespace {

//! The variable's value; "" where unset.
std::string read(const char* name)
{
    const char* v = std::getenv(name);
    return v ? v : "";
}

[[noreturn]] void bad(const char* name, const std::string& v, const char* expected)
{
    throw std::invalid_argument(std::string("mimodet: ") + name + "='" + v +
                                "': expected " + expected);
}

} // namespace

const std::vector<switch_info>& switches()
{
    static const std::vector<switch_info> table = {
        { "MIMODET_ANTENNA_THREADS",
          "1..8",
          "min(n_rx, CPUs, 4) from 10 MHz, else 1",
          "threads of ofdm_sync and ofdm_demod per slot" },
        { "MIMODET_NO_AVX",
          "any",
          "unset: AVX where the CPU has it",
          "the channel estimator's Wiener step in SSE" },
        { "MIMODET_CALL_TIMELINE",
          "PREFIX",
          "unset: none",
          "per-call timelines written to PREFIX_<kind>_<n>.csv" },
        { "MIMODET_GPU_LANES",
          "1..4",
          "2 (a detector with a PSD deadline: 1)",
          "slots in flight of a GPU receiver or detector" },
        { "MIMODET_RECEIVER_ASYNC",
          "0|1",
          "1 for a GPU receiver running psd without a deadline, else 0",
          "mimo_receiver keeps slots in flight across its calls, each started as it "
          "arrives" },
        { "MIMODET_MAX_SLOTS_PER_CALL",
          "1..8",
          "8",
          "most slots mimo_detector detects in one call" },
        { "MIMODET_SYNC_AHEAD",
          "0|1",
          "1",
          "ofdm_sync takes the next slot's input in the call that puts a slot out" },
        { "MIMODET_INPUT_REGISTER",
          "0|1",
          "1",
          "0: a GPU receiver copies its time-domain slots instead of registering its "
          "input buffers" },
        { "MIMODET_GPU_WAIT",
          "spin|block",
          "spin",
          "block: host threads sleep while the GPU works" },
        { "MIMODET_CPU_QR_LANES",
          "1|4|8",
          "as many as the CPU takes: 8 with AVX-512, 4 with AVX2",
          "most channel matrices whose sorted QRs the CPU psd computes at once, one per "
          "SIMD lane; 1: one at a time" },
        { "MIMODET_FSD_THREADS",
          "1|2|4|..|256",
          "about n_tx M^T / 16, from 1 to 4",
          "threads per received vector of the CUDA FSD's detection kernel" },
        { "MIMODET_PSD_KERNEL",
          "warp|block|auto",
          "auto",
          "forces the CUDA PSD detector's Algorithm 3 kernel" },
        { "MIMODET_PSD_SE_SPLIT",
          "1..65536",
          "128",
          "nodes a depth-first CUDA PSD search expands in one thread before the rest is "
          "spread over tasks" },
        { "MIMODET_PSD_SE_DRAIN",
          "1..65536",
          "32, 16 for launches of fewer vectors than the GPU holds threads, none for "
          "trees of at most 256 leaves",
          "the same, once every vector of the launch (every task of a wave) has its "
          "thread" },
        { "MIMODET_PSD_SE_COOPERATIVE",
          "0|1",
          "1 for trees of at most 256 leaves, else 0",
          "1: a depth-first CUDA PSD runs its waves of tasks in one cooperative launch; "
          "0: a launch per wave" },
        { "MIMODET_PSD_SE_SHARED_ROWS",
          "0|1",
          "1 at 64QAM, at 16QAM with 3 or more transmit antennas and with more than 4 at "
          "any order, else 0",
          "1: a depth-first CUDA PSD search keeps its per-row state in shared memory; 0: "
          "in registers" },
        { "MIMODET_PSD_SE_STORED_Z",
          "0|1",
          "1 where the search is not preceded by the enumeration, else 0",
          "1: a depth-first CUDA PSD computes every vector's z in a kernel before the "
          "first pass, whose threads read it; 0: each first-pass thread computes its "
          "own" },
        { "MIMODET_PSD_SE_DEFERRED_WRITE",
          "0|1",
          "1 where the search is not preceded by the enumeration, else 0",
          "1: a depth-first CUDA PSD's decision kernel writes the first pass's "
          "decisions; 0: the first pass writes them" },
        { "MIMODET_PSD_SE_FIRST_LEAF",
          "0|1",
          "1 where the search is not preceded by the enumeration and starts without a "
          "bound, but not at 64QAM with 4 or more transmit antennas; else 0",
          "1: a depth-first CUDA PSD decides the vectors whose search ends at its first "
          "leaf, and computes every vector's z, in a kernel before the first pass; 0: "
          "the first pass searches every vector" },
        { "MIMODET_PSD_SE_DEPENDENT_LAUNCH",
          "0|1",
          "1 (where the GPU's compute capability is 9.0 or above)",
          "1: a depth-first CUDA PSD launches each kernel of a chunk after its QR as a "
          "programmatic dependent launch, whose blocks are dispatched while the kernel "
          "before ends; 0: as plain launches" },
        { "MIMODET_PSD_SE_REFILL",
          "1..32",
          "8 at 4x4 64QAM, else 1",
          "lanes of a warp of a depth-first CUDA PSD's first pass or wave of tasks that "
          "wait for their next item before they take theirs together (all do once none "
          "of the warp searches); 1: each takes its own as its search ends" },
        { "MIMODET_PSD_SE_CHUNK",
          "4096..1048576",
          "the batch detector's: three streams' shares of the call (enumerated trees "
          "one), at most 196608 vectors",
          "vectors per chunk of a depth-first CUDA PSD call of more than 16384 vectors" },
        { "MIMODET_CHUNK_SHARES",
          "1..8",
          "the detector's: 3 for the depth-first CUDA PSD's search (not its "
          "enumeration), else 1",
          "streams' shares of a call per chunk of a CUDA detector's call of more than "
          "16384 vectors: its kernels launch once per chunk, its inputs cross a share at "
          "a time" },
    };
    return table;
}

int integer(const char* name, int lo, int hi, int fallback)
{
    bool known = false;
    for (const auto& s : switches())
        known = known || std::strcmp(s.name, name) == 0;
    if (!known)
        throw std::logic_error(std::string("mimodet: ") + name +
                               " is not a tuning switch");
    const std::string v = read(name);
    if (v.empty())
        return fallback;
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (*end != '\0' || n < lo || n > hi)
        bad(name,
            v,
            (std::string("an integer ") + std::to_string(lo) + ".." + std::to_string(hi))
                .c_str());
    return static_cast<int>(n);
}

int antenna_threads() { return integer("MIMODET_ANTENNA_THREADS", 1, 8, 0); }

bool no_avx()
{
    static const bool off = !read("MIMODET_NO_AVX").empty();
    return off;
}

std::string call_timeline_prefix() { return read("MIMODET_CALL_TIMELINE"); }

int gpu_lanes() { return integer("MIMODET_GPU_LANES", 1, 4, 0); }

int receiver_async() { return integer("MIMODET_RECEIVER_ASYNC", 0, 1, -1); }

int max_slots_per_call() { return integer("MIMODET_MAX_SLOTS_PER_CALL", 1, 8, 0); }

int sync_ahead() { return integer("MIMODET_SYNC_AHEAD", 0, 1, -1); }

int input_register() { return integer("MIMODET_INPUT_REGISTER", 0, 1, -1); }

bool gpu_wait_blocks()
{
    static const bool blocks = read("MIMODET_GPU_WAIT") == "block";
    return blocks;
}

int psd_se_split() { return integer("MIMODET_PSD_SE_SPLIT", 1, 65536, 0); }

int psd_se_drain() { return integer("MIMODET_PSD_SE_DRAIN", 1, 65536, 0); }

int psd_se_cooperative() { return integer("MIMODET_PSD_SE_COOPERATIVE", 0, 1, -1); }
int psd_se_shared_rows() { return integer("MIMODET_PSD_SE_SHARED_ROWS", 0, 1, -1); }
int psd_se_stored_z() { return integer("MIMODET_PSD_SE_STORED_Z", 0, 1, -1); }
int psd_se_deferred_write() { return integer("MIMODET_PSD_SE_DEFERRED_WRITE", 0, 1, -1); }
int psd_se_first_leaf() { return integer("MIMODET_PSD_SE_FIRST_LEAF", 0, 1, -1); }
int psd_se_dependent_launch()
{
    return integer("MIMODET_PSD_SE_DEPENDENT_LAUNCH", 0, 1, -1);
}
int psd_se_refill() { return integer("MIMODET_PSD_SE_REFILL", 1, 32, 0); }
int psd_se_chunk() { return integer("MIMODET_PSD_SE_CHUNK", 4096, 1 << 20, 0); }

int chunk_shares() { return integer("MIMODET_CHUNK_SHARES", 1, 8, 0); }

int cpu_qr_lanes()
{
    const int n = integer("MIMODET_CPU_QR_LANES", 1, 8, 0);
    if (n != 0 && n != 1 && n != 4 && n != 8)
        bad("MIMODET_CPU_QR_LANES", read("MIMODET_CPU_QR_LANES"), "1, 4 or 8");
    return n;
}

int fsd_threads()
{
    const int n = integer("MIMODET_FSD_THREADS", 1, 256, 0);
    if (n & (n - 1))
        bad("MIMODET_FSD_THREADS", read("MIMODET_FSD_THREADS"), "a power of two, 1..256");
    return n;
}

std::string psd_kernel()
{
    const std::string v = read("MIMODET_PSD_KERNEL");
    if (v == "warp" || v == "block")
        return v;
    if (!v.empty() && v != "auto")
        bad("MIMODET_PSD_KERNEL", v, "warp, block or auto");
    return "";
}

} // namespace tuning
} // namespace core
} // namespace mimodet
} // namespace gr
