/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// A driver for the fuzz targets where libFuzzer is not used (a GCC build, CI): seeded
// random inputs for a fixed time or count, or the files named on the command line (a
// corpus, a reproducer). It takes libFuzzer's option names, so scripts/fuzz runs either
// kind alike:
//   -max_total_time=S  seconds to run (default 10)     -runs=N     inputs (default: no
//   limit) -seed=N            random seed (default 1)          -max_len=N  longest input
//   (default 1024) -timeout=S         seconds one input may take (default 10): past that
//   the input is
//                      written to timeout-input and the driver aborts
// An input that crashes the target (abort, segfault, failed expectation) is written to
// crash-input first.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input being run, for the signal handler and the watchdog.
std::vector<uint8_t> g_input;
std::atomic<int64_t> g_started_ns{ 0 }; // 0: between inputs

int64_t now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

//! Async-signal-safe: open/write/close only.
void save_input(const char* path)
{
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    size_t done = 0;
    while (done < g_input.size()) {
        const ssize_t n = ::write(fd, g_input.data() + done, g_input.size() - done);
        if (n <= 0)
            break;
        done += static_cast<size_t>(n);
    }
    ::close(fd);
}

extern "C" void on_crash(int sig)
{
    save_input("crash-input");
    const char msg[] = "fuzz driver: crash, input written to crash-input\n";
    (void)!::write(2, msg, sizeof msg - 1);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

long option(
    int argc, char** argv, const char* name, long def, std::vector<std::string>* files)
{
    const std::string prefix = std::string("-") + name + "=";
    long v = def;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.compare(0, prefix.size(), prefix) == 0)
            v = std::strtol(a.c_str() + prefix.size(), nullptr, 10);
        else if (files && !a.empty() && a[0] != '-')
            files->push_back(a);
    }
    return v;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::string> files;
    const long seconds = option(argc, argv, "max_total_time", 10, &files);
    const long runs = option(argc, argv, "runs", -1, nullptr);
    const long seed = option(argc, argv, "seed", 1, nullptr);
    const long max_len = std::max(1L, option(argc, argv, "max_len", 1024, nullptr));
    const long timeout = option(argc, argv, "timeout", 10, nullptr);

    for (int sig : { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL })
        std::signal(sig, on_crash);

    // The watchdog: an input running past the timeout is a hang.
    std::atomic<bool> done{ false };
    std::thread watchdog([&] {
        while (!done) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const int64_t t = g_started_ns.load();
            if (t != 0 && now_ns() - t > timeout * 1000000000LL) {
                save_input("timeout-input");
                std::fprintf(stderr,
                             "fuzz driver: an input ran past %ld s, written to "
                             "timeout-input\n",
                             timeout);
                std::_Exit(3);
            }
        }
    });

    auto run = [&](const std::vector<uint8_t>& in) {
        g_input = in;
        g_started_ns = now_ns();
        LLVMFuzzerTestOneInput(g_input.data(), g_input.size());
        g_started_ns = 0;
    };

    long n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    int64_t slowest_ns = 0;
    if (!files.empty()) {
        for (const auto& f : files) {
            std::ifstream is(f, std::ios::binary);
            std::vector<uint8_t> in((std::istreambuf_iterator<char>(is)),
                                    std::istreambuf_iterator<char>());
            run(in);
            ++n;
        }
    } else {
        std::mt19937_64 rng(static_cast<uint64_t>(seed));
        std::vector<uint8_t> in;
        while ((runs < 0 || n < runs) &&
               std::chrono::steady_clock::now() - t0 < std::chrono::seconds(seconds)) {
            in.resize(static_cast<size_t>(rng() % static_cast<uint64_t>(max_len + 1)));
            for (auto& b : in)
                b = static_cast<uint8_t>(rng());
            const int64_t s = now_ns();
            run(in);
            slowest_ns = std::max(slowest_ns, now_ns() - s);
            ++n;
        }
    }
    done = true;
    watchdog.join();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("fuzz driver: %ld inputs in %.1f s (%.0f/s), slowest %.3f s, seed %ld: "
                "no failure\n",
                n,
                secs,
                n / std::max(secs, 1e-9),
                slowest_ns * 1e-9,
                seed);
    return 0;
}
