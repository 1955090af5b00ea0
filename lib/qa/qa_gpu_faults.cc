/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// GPU faults (docs/RELIABILITY.md, "Faults"; ctest label "gpu", skips without a device):
// the device's memory taken by another process, and two processes detecting on one GPU.
//
// The other processes are this program again (posix_spawn of /proc/self/exe with
// MIMODET_QA_GPU_FAULTS_ROLE set; the role runs before main() and exits): a process
// forked from one that already uses CUDA cannot use it itself, and a fresh process is
// also what another application on the machine is.
//   hog        takes all the device memory it can get (cuMemAlloc down to 1 MiB pieces),
//              prints "ready <bytes held> <bytes total>", holds it until its stdin closes
//   construct  (started while a hog holds the memory, with no CUDA context of its own):
//              backend "cuda" must throw a std::runtime_error that names the
//              out-of-memory condition; "auto" must give a CPU detector whose bits are
//              the CPU's; prints one line per algorithm, exits 0 when all hold
//   echo       prints "ready 0 0" and waits for its stdin to close (the harness's check)
//   loop:ALG:SEED  detects one batch on the GPU over and over for about 3 s, each time
//              against the CPU's bits; prints "calls <n> mismatches <m>", exits 0 when
//              no call differed

#include "qa_gpu_common.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

using namespace gr::mimodet;

namespace {

const char* const k_role_env = "MIMODET_QA_GPU_FAULTS_ROLE";
const char* const k_algorithms[] = { "fsd", "sfsd", "mtt", "psd" };

detector::sptr make_det(const std::string& alg, const std::string& backend)
{
    detector_config c;
    c.backend = parse_backend(backend);
    return qa::make(alg, 4, 4, modulation::qam16, c);
}

qa::batch small_batch(uint64_t seed)
{
    return qa::make_batch(4, 4, modulation::qam16, 300, 7, 10.0, 30.0, seed);
}

//! A batch whose buffers need about 10 MB on the device (20000 x 7 vectors).
qa::batch large_batch(uint64_t seed)
{
    return qa::make_batch(4, 4, modulation::qam16, 20000, 7, 10.0, 30.0, seed);
}

//! Vectors whose bits differ with a worse metric, either way (0: the same up to ties).
int worse_either_way(const qa::batch& b,
                     const std::vector<uint8_t>& x,
                     const std::vector<uint8_t>& y)
{
    return qa::count_non_ml(b, x, y, 1e-9) + qa::count_non_ml(b, y, x, 1e-9);
}

// ---- the role processes ---------------------------------------------------------------

int role_hog()
{
    // The CUDA driver's API, loaded at run time: every machine with an NVIDIA driver
    // has it (the runtime library may be linked statically, and of any version), the
    // program builds without CUDA too (and then skips), and the library exports no
    // allocator.
    void* drv = dlopen("libcuda.so.1", RTLD_NOW);
    if (!drv) {
        std::printf("failed: no CUDA driver library (libcuda.so.1)\n");
        return 1;
    }
    using init_fn = int (*)(unsigned);
    using device_fn = int (*)(int*, int);
    using retain_fn = int (*)(void**, int);
    using current_fn = int (*)(void*);
    using alloc_fn = int (*)(unsigned long long*, size_t);
    using info_fn = int (*)(size_t*, size_t*);
    const auto cuInit = reinterpret_cast<init_fn>(dlsym(drv, "cuInit"));
    const auto cuDeviceGet = reinterpret_cast<device_fn>(dlsym(drv, "cuDeviceGet"));
    const auto cuDevicePrimaryCtxRetain =
        reinterpret_cast<retain_fn>(dlsym(drv, "cuDevicePrimaryCtxRetain"));
    const auto cuCtxSetCurrent =
        reinterpret_cast<current_fn>(dlsym(drv, "cuCtxSetCurrent"));
    const auto cuMemAlloc = reinterpret_cast<alloc_fn>(dlsym(drv, "cuMemAlloc_v2"));
    const auto cuMemGetInfo = reinterpret_cast<info_fn>(dlsym(drv, "cuMemGetInfo_v2"));
    if (!cuInit || !cuDeviceGet || !cuDevicePrimaryCtxRetain || !cuCtxSetCurrent ||
        !cuMemAlloc || !cuMemGetInfo) {
        std::printf("failed: CUDA driver symbols missing\n");
        return 1;
    }
    // Device 0's primary context, the one the library's runtime uses: it needs memory of
    // its own.
    int dev = 0;
    void* ctx = nullptr;
    if (cuInit(0) != 0 || cuDeviceGet(&dev, 0) != 0 ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != 0 || cuCtxSetCurrent(ctx) != 0) {
        std::printf("failed: no context\n");
        return 1;
    }
    size_t free_b = 0, total = 0;
    cuMemGetInfo(&free_b, &total);
    size_t held = 0;
    for (size_t piece = size_t(1) << 30; piece >= (size_t(1) << 20);) {
        unsigned long long p = 0;
        if (cuMemAlloc(&p, piece) == 0)
            held += piece; // kept until the process ends
        else
            piece /= 2;
    }
    std::printf("ready %zu %zu\n", held, total);
    std::fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {
    }
    return 0;
}

int role_construct()
{
    int failures = 0;
    for (const char* alg : k_algorithms) {
        std::string cuda_result;
        try {
            auto d = make_det(alg, "cuda");
            const auto b = small_batch(1);
            qa::run_bits(*d, b);
            cuda_result = "no exception (backend " + d->backend() + ")";
            ++failures;
        } catch (const std::runtime_error& e) {
            cuda_result = e.what();
            if (cuda_result.find("out of memory") == std::string::npos)
                ++failures;
        } catch (const std::exception& e) {
            cuda_result = std::string("not a runtime_error: ") + e.what();
            ++failures;
        }
        std::string auto_result;
        try {
            auto d = make_det(alg, "auto");
            auto cpu = make_det(alg, "cpu");
            const auto b = small_batch(2);
            const auto a = qa::run_bits(*d, b), c = qa::run_bits(*cpu, b);
            const bool ok = d->backend() == "cpu" && a == c;
            failures += !ok;
            auto_result = "backend " + d->backend() +
                          (a == c ? ", bits = CPU's" : ", bits differ from the CPU's");
        } catch (const std::exception& e) {
            auto_result = std::string("exception: ") + e.what();
            ++failures;
        }
        std::printf(
            "%s: cuda: %s | auto: %s\n", alg, cuda_result.c_str(), auto_result.c_str());
    }
    std::fflush(stdout);
    return failures == 0 ? 0 : 1;
}

int role_loop(const std::string& alg, uint64_t seed)
{
    auto gpu = make_det(alg, "cuda");
    auto cpu = make_det(alg, "cpu");
    const auto b = qa::make_batch(4, 4, modulation::qam16, 3000, 7, 10.0, 30.0, seed);
    const auto ref = qa::run_bits(*cpu, b);
    int calls = 0, mismatches = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (std::chrono::steady_clock::now() < end || calls == 0) {
        mismatches += worse_either_way(b, qa::run_bits(*gpu, b), ref) != 0;
        ++calls;
    }
    std::printf("calls %d mismatches %d\n", calls, mismatches);
    std::fflush(stdout);
    return mismatches == 0 ? 0 : 1;
}

int run_role(const std::string& role)
{
    try {
        if (role == "hog")
            return role_hog();
        if (role == "echo") { // the test harness's own check, without a device
            std::printf("ready 0 0\n");
            std::fflush(stdout);
            char c;
            while (read(0, &c, 1) > 0) {
            }
            return 0;
        }
        if (role == "construct")
            return role_construct();
        if (role.rfind("loop:", 0) == 0) {
            const size_t colon = role.find(':', 5);
            return role_loop(role.substr(5, colon - 5),
                             std::stoull(role.substr(colon + 1)));
        }
        std::printf("unknown role %s\n", role.c_str());
    } catch (const std::exception& e) {
        std::printf("exception: %s\n", e.what());
    }
    std::fflush(stdout);
    return 2;
}

//! A role process runs here, before main(), and never reaches the tests.
const bool g_role_dispatch = [] {
    if (const char* r = std::getenv(k_role_env)) {
        const int rc = run_role(r);
        std::fflush(stdout); // _Exit does not
        std::_Exit(rc);
    }
    return false;
}();

// ---- the test side
// ----------------------------------------------------------------------

//! A role process: its stdin (closing it ends a hog) and stdout.
struct child {
    pid_t pid = -1;
    int to = -1, from = -1;
};

child spawn_role(const std::string& role)
{
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0)
        throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    for (int fd : { in[0], in[1], out[0], out[1] })
        posix_spawn_file_actions_addclose(&fa, fd);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, k_role_env, std::strlen(k_role_env)) != 0)
            env_s.emplace_back(*e);
    env_s.push_back(std::string(k_role_env) + "=" + role);
    std::vector<char*> envp;
    for (auto& s : env_s)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    char arg0[] = "qa_gpu_faults";
    char* argv[] = { arg0, nullptr };
    child c;
    const int rc = posix_spawn(&c.pid, "/proc/self/exe", &fa, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]);
        close(out[0]);
        throw std::runtime_error("posix_spawn failed: " + std::string(std::strerror(rc)));
    }
    c.to = in[1];
    c.from = out[0];
    return c;
}

//! The child's output up to the end of the next line (or EOF), within timeout_s.
std::string read_line(const child& c, double timeout_s)
{
    std::string s;
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
        pollfd p{ c.from, POLLIN, 0 };
        if (poll(&p, 1, 100) <= 0)
            continue;
        char ch;
        if (read(c.from, &ch, 1) <= 0 || ch == '\n')
            return s;
        s += ch;
    }
    return s;
}

std::string read_rest(const child& c, double timeout_s)
{
    std::string all;
    for (;;) {
        const std::string l = read_line(c, timeout_s);
        if (l.empty())
            return all;
        all += l + "\n";
    }
}

//! Exit status of the child (its stdin closed first), -1 where it had to be killed after
//! timeout_s.
int finish(child& c, double timeout_s)
{
    if (c.to >= 0)
        close(c.to);
    c.to = -1;
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int status = 0;
    for (;;) {
        const pid_t r = waitpid(c.pid, &status, WNOHANG);
        if (r == c.pid)
            break;
        if (std::chrono::steady_clock::now() > end) {
            kill(c.pid, SIGKILL);
            waitpid(c.pid, &status, 0);
            status = -1;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (c.from >= 0)
        close(c.from);
    c.from = -1;
    if (status == -1)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

//! A hog holding the device's memory while it lives.
struct memory_hog {
    child c;
    size_t held = 0, total = 0;
    memory_hog()
    {
        c = spawn_role("hog");
        const std::string l = read_line(c, 120.0);
        if (std::sscanf(l.c_str(), "ready %zu %zu", &held, &total) != 2) {
            finish(c, 10.0);
            throw std::runtime_error("the memory hog did not start: '" + l + "'");
        }
        std::printf("another process holds %.1f of %.1f GiB of device memory\n",
                    held / 1073741824.0,
                    total / 1073741824.0);
    }
    int release() { return c.pid > 0 ? finish(c, 60.0) : 0; }
    ~memory_hog()
    {
        if (c.to >= 0)
            release();
    }
};

} // namespace

TEST(gpu_faults, role_processes_start_report_and_end)
{
    // The harness itself (host only): a role process reports, holds until its stdin
    // closes, and its exit status comes back; an unknown role fails.
    child e = spawn_role("echo");
    EXPECT_EQ(read_line(e, 60.0), "ready 0 0");
    EXPECT_EQ(finish(e, 60.0), 0);
    child u = spawn_role("no such role");
    EXPECT_EQ(read_rest(u, 60.0), "unknown role no such role\n");
    EXPECT_EQ(finish(u, 60.0), 2);
}

TEST(gpu_faults, new_detectors_while_another_process_holds_the_memory)
{
    QA_SKIP_WITHOUT_GPU();
    memory_hog hog;
    child v = spawn_role("construct");
    const std::string out = read_rest(v, 300.0);
    const int rc = finish(v, 60.0);
    std::printf("%s", out.c_str());
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(hog.release(), 0);
}

TEST(gpu_faults, running_detector_meets_exhausted_memory_and_recovers)
{
    QA_SKIP_WITHOUT_GPU();
    const auto small = small_batch(3), large = large_batch(4);
    for (const char* alg : k_algorithms) {
        auto gpu = make_det(alg, "cuda");
        auto cpu = make_det(alg, "cpu");
        ASSERT_EQ(gpu->backend(), "cuda");
        const auto ref_small = qa::run_bits(*cpu, small),
                   ref_large = qa::run_bits(*cpu, large);
        EXPECT_EQ(worse_either_way(small, qa::run_bits(*gpu, small), ref_small), 0)
            << alg;
        std::string message;
        {
            memory_hog hog;
            try {
                qa::run_bits(*gpu, large);
                message = "(no exception)";
            } catch (const std::runtime_error& e) {
                message = e.what();
            }
            std::printf("%s: a batch of 140000 vectors with the memory held: %s\n",
                        alg,
                        message.c_str());
            EXPECT_NE(message.find("out of memory"), std::string::npos)
                << alg << ": " << message;
            EXPECT_EQ(hog.release(), 0);
        }
        // Memory back: the same detector runs both batches again.
        EXPECT_EQ(worse_either_way(large, qa::run_bits(*gpu, large), ref_large), 0)
            << alg;
        EXPECT_EQ(worse_either_way(small, qa::run_bits(*gpu, small), ref_small), 0)
            << alg;
    }
}

TEST(gpu_faults, two_processes_on_one_gpu)
{
    QA_SKIP_WITHOUT_GPU();
    child a = spawn_role("loop:fsd:11"), b = spawn_role("loop:psd:12");
    const std::string out_a = read_rest(a, 300.0), out_b = read_rest(b, 300.0);
    const int rc_a = finish(a, 60.0), rc_b = finish(b, 60.0);
    std::printf("process 1 (fsd): %sprocess 2 (psd): %s", out_a.c_str(), out_b.c_str());
    EXPECT_EQ(rc_a, 0) << out_a;
    EXPECT_EQ(rc_b, 0) << out_b;
    int calls = 0;
    EXPECT_EQ(std::sscanf(out_a.c_str(), "calls %d", &calls), 1);
    EXPECT_GT(calls, 1);
    EXPECT_EQ(std::sscanf(out_b.c_str(), "calls %d", &calls), 1);
    EXPECT_GT(calls, 1);
}
