/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Time per slot of the time-domain synchroniser core (lte_sync::slot_sync, the ofdm_sync
// block's work without the scheduler) for bandwidths and antenna configurations.
//
// Signal: --slots distinct slots (default 40, two frames) from slot 0, random QPSK data,
// CRS on every port and PSS/SSS on port 0 (core::slot_mapper), OFDM modulated (unitary
// IFFT, CPs), through the mimo_channel fading core (core::fading_channel, EPA with 5 Hz
// Doppler by default), CFO --cfo subcarrier spacings, optionally a sample-rate offset
// (--sro, applied with the core's frac_interp), AWGN with noise_var = n_tx 10^(-snr/10)
// per sample (docs/CONVENTIONS.md). The receiver gets --lead samples of noise first,
// then the slots, cycled (a whole number of frames; with --cfo 0.3 the CFO phase is
// continuous across the cycle too).
//
// The samples are fed as lib/ofdm_sync_impl.cc does: pop_slot() while it returns a slot,
// else push() of samples_wanted() samples. Each slot's time is from the end of the
// previous slot to the end of its pop_slot() (its pushes included); slots before and
// at the lock are not counted. Reported per configuration: the mean, median and p99
// microseconds per slot over --seconds (wall clock), the mean for slots 0/10 (they hold
// the PSS) and the others apart, the mean thread CPU time per slot (all slots, and slots
// 0/10), and the time of the pop_slot() call that returned the slot (the work left once
// its input is in, which a slot's latency waits for: mean for slots 0/10 and the others,
// p99 over all),
// which other processes on a busy machine do not inflate (the calling thread's only: with
// more than one thread the pool's share is not in it). --threads N: slot_sync's threads
// (default: as the ofdm_sync block). --dump FILE writes every slot's decisions (timing,
// slot number, CFO, PSS, sample-rate offset) and a checksum of its samples, to compare
// two builds.

#include "bench_cli.h"
#include "phy/fading.h"
#include "phy/lte_sync.h"
#include "phy/slot_mapper.h"
#include "util/worker_pool.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <fstream>
#include <gnuradio/mimodet/lte_grid.h>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <time.h>
#include <unsupported/Eigen/FFT>
#include <vector>

using namespace gr::mimodet;
using cf = std::complex<float>;
using clk = std::chrono::steady_clock;

namespace {

using bench_cli::percentile;

struct options {
    std::vector<double> bandwidths = { 20 };
    std::vector<std::pair<int, int>> configs = { { 4, 4 } }; // n_tx, n_rx
    double snr_db = 20;
    double cfo = 0.3;
    double sro_ppm = 0;
    std::string channel = "epa";
    int slots = 40;
    int lead = 3000;
    double seconds = 2;
    int max_slots = 0; // 0: no limit (time only)
    int threads = 0;   // 0: as the ofdm_sync block
    std::string csv, dump;
    unsigned seed = 1;
};

bool parse(int argc, char** argv, options& o)
{
    bench_cli::parser p("mimodet_sync_bench",
                        "Time per slot of the ofdm_sync core (lte_sync::slot_sync).");
    bench_cli::stage_options(p, o.bandwidths, o.configs)
        .text("--channel",
              o.channel,
              "NAME",
              "fading model",
              { "awgn", "rayleigh", "epa", "eva", "etu" })
        .number("--snr", o.snr_db, "DB", "SNR n_tx / noise_var", -20, 100)
        .number("--cfo",
                o.cfo,
                "C",
                "carrier frequency offset, subcarrier spacings",
                -0.5,
                0.5)
        .number("--sro",
                o.sro_ppm,
                "PPM",
                "sample-rate offset of the receiver, ppm",
                -1000,
                1000)
        .number(
            "--slots", o.slots, "N", "distinct slots, cycled; a multiple of 20", 20, 2000)
        .number("--lead", o.lead, "N", "noise samples before the first slot", 0, 1e7)
        .number("--seconds", o.seconds, "S", "timed per configuration", 1e-3, 600)
        .number("--max-slots",
                o.max_slots,
                "N",
                "stop after N slots after the lock (0: --seconds only)",
                0,
                2e9)
        .number("--threads",
                o.threads,
                "N",
                "slot_sync threads (0: as the ofdm_sync block, up to\n"
                "min(n_rx, CPU threads, 4) from 10 MHz on)",
                0,
                64)
        .number("--seed", o.seed, "N", "signal seed", 0, 4294967295.0)
        .text("--csv", o.csv, "FILE", "also write the rows as CSV")
        .text("--dump",
              o.dump,
              "FILE",
              "write every slot's decisions and a checksum of its samples");
    if (!p.parse(argc, argv))
        return false;
    for (double b : o.bandwidths)
        lte_numerology::from_bandwidth(b); // throws for anything else
    core::parse_channel_model(o.channel);  // likewise
    if (o.slots % 20 != 0)
        throw std::invalid_argument("--slots must be a multiple of 20 in 20..2000");
    return true;
}

//! The received signal: rx[r] = lead samples of noise, then the cycled part.
struct signal {
    std::vector<std::vector<cf>> lead, cycle;
};

signal make_signal(const lte_numerology& num, int n_tx, int n_rx, const options& o)
{
    const int N = num.fft_size, S = num.slot_samples(), n_sc = num.n_sc;
    core::slot_mapper mapper(num, n_tx, modulation::qpsk, 0);
    std::mt19937 rng(o.seed);
    std::uniform_int_distribution<int> bit(0, 1);
    // Transmitted samples of every port, unitary IFFT with CPs.
    Eigen::FFT<float> fft;
    std::vector<cf> X(N), x(N);
    std::vector<std::vector<cf>> grids(n_tx, std::vector<cf>(mapper.grid_size()));
    std::vector<cf*> gp;
    for (auto& g : grids)
        gp.push_back(g.data());
    // The channel filter reads max_delay() samples before its input: the cycle's end.
    core::fading_channel::config cfg;
    cfg.model = core::parse_channel_model(o.channel);
    cfg.n_tx = n_tx;
    cfg.n_rx = n_rx;
    cfg.sample_rate = num.sample_rate;
    cfg.doppler_hz = core::default_doppler_hz(cfg.model);
    cfg.slot_samples = S;
    cfg.seed = o.seed;
    core::fading_channel chan(cfg);
    const int hist = chan.max_delay();
    const int64_t len = static_cast<int64_t>(o.slots) * S;
    std::vector<std::vector<cf>> tx(n_tx, std::vector<cf>(hist + len));
    const float s = std::sqrt(static_cast<float>(N));
    for (int sl = 0; sl < o.slots; ++sl) {
        const int ns = sl % lte_numerology::slots_per_frame;
        std::vector<uint8_t> bits(mapper.bits_per_slot(ns));
        for (auto& b : bits)
            b = static_cast<uint8_t>(bit(rng));
        mapper.map(ns, bits.data(), gp.data());
        for (int t = 0; t < n_tx; ++t) {
            cf* out = tx[t].data() + hist + static_cast<int64_t>(sl) * S;
            for (int l = 0; l < lte_numerology::symbols_per_slot; ++l) {
                mapper.symbol_to_bins(grids[t].data(), l, 1.0f, X.data());
                fft.inv(x.data(), X.data(), N);
                for (auto& v : x)
                    v *= s;
                const int cp = num.cp_length(l);
                out = std::copy(x.end() - cp, x.end(), out);
                out = std::copy(x.begin(), x.end(), out);
            }
        }
    }
    (void)n_sc;
    for (int t = 0; t < n_tx; ++t) // cyclic: the history is the cycle's end
        std::copy(tx[t].end() - hist, tx[t].end(), tx[t].begin());
    std::vector<std::vector<cf>> y(n_rx, std::vector<cf>(len));
    std::vector<const cf*> xp;
    for (const auto& v : tx)
        xp.push_back(v.data() + hist);
    std::vector<cf*> yp;
    for (auto& v : y)
        yp.push_back(v.data());
    chan.filter(0, static_cast<int>(len), xp.data(), yp.data());
    // Sample-rate offset: receiver sample m at transmitter time m / (1 + ppm 1e-6).
    if (o.sro_ppm != 0.0) {
        const double rate = 1.0 / (1.0 + o.sro_ppm * 1e-6);
        const int pad = 64;
        const int64_t m_len = static_cast<int64_t>(std::floor((len - 2 * pad) / rate));
        lte_sync::frac_interp interp;
        for (auto& v : y) {
            std::vector<cf> r(m_len);
            interp.resample(v.data() + pad, 0.0, rate, r.data(), static_cast<int>(m_len));
            v = std::move(r);
        }
    }
    // CFO and noise over the cycle, then the lead (noise only).
    signal sig;
    core::gaussian_noise noise(o.seed + 7, n_rx);
    const double nv = n_tx * std::pow(10.0, -o.snr_db / 10);
    for (int r = 0; r < n_rx; ++r) {
        auto& v = y[r];
        for (size_t n = 0; n < v.size(); ++n)
            v[n] *= cf(std::polar(1.0, 2 * M_PI * o.cfo * static_cast<double>(n) / N));
        noise.add(r, v.data(), static_cast<int>(v.size()), nv);
        std::vector<cf> l(o.lead, cf(0, 0));
        noise.add(r, l.data(), o.lead, nv);
        sig.lead.push_back(std::move(l));
    }
    sig.cycle = std::move(y);
    return sig;
}

//! CPU time of the calling thread, microseconds (unaffected by other processes' load).
double cpu_us()
{
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

double mean(const std::vector<double>& v)
{
    double m = 0;
    for (double x : v)
        m += x;
    return v.empty() ? 0 : m / v.size();
}

} // namespace

int main(int argc, char** argv)
{
    options o;
    if (const auto status = bench_cli::command_line("mimodet_sync_bench",
                                                    [&] { return parse(argc, argv, o); }))
        return *status;
    std::ofstream csv, dump;
    if (!bench_cli::open_csv(
            "mimodet_sync_bench",
            o.csv,
            "bandwidth_mhz,n_tx,n_rx,channel,snr_db,cfo,sro_ppm,slots,mean_us,p50_us,"
            "p99_us,"
            "max_us,pss_slot_mean_us,other_slot_mean_us,cpu_mean_us,cpu_pss_slot_mean_"
            "us,pss_missed,"
            "lock_input_start,threads,pop_pss_slot_mean_us,pop_other_slot_mean_us,pop_"
            "p99_us",
            csv) ||
        !bench_cli::open_csv(
            "mimodet_sync_bench",
            o.dump,
            "bandwidth_mhz,config,slot,ns,input_start,timing_step,cfo,pss_checked,"
            "pss_found,pss_metric,sro_ppm,resampled,first,power,sum_re,sum_im",
            dump))
        return 2;
    dump.precision(10);
    std::printf("CPU threads: %u; %s, SNR %.1f dB, CFO %.3f, SRO %.1f ppm, %d distinct "
                "slots cycled, %.1f s per row\n",
                std::thread::hardware_concurrency(),
                o.channel.c_str(),
                o.snr_db,
                o.cfo,
                o.sro_ppm,
                o.slots,
                o.seconds);
    std::printf(
        "%-6s %-6s %7s %8s %9s %9s %9s %9s %10s %10s %9s %9s %7s %6s %9s %9s %9s\n",
        "MHz",
        "config",
        "threads",
        "slots",
        "mean us",
        "p50 us",
        "p99 us",
        "max us",
        "PSS slot",
        "other slot",
        "CPU us",
        "CPU PSS",
        "missed",
        "x RT",
        "pop PSS",
        "pop other",
        "pop p99");
    for (double mhz : o.bandwidths)
        for (const auto& c : o.configs) {
            const int n_tx = c.first, n_rx = c.second;
            const auto num = lte_numerology::from_bandwidth(mhz);
            const int S = num.slot_samples();
            const signal sig = make_signal(num, n_tx, n_rx, o);
            // Threads: the ofdm_sync block's rule unless --threads.
            const int threads =
                o.threads > 0 ? o.threads : core::antenna_threads(num.fft_size, n_rx);
            lte_sync::slot_sync sync(num, n_rx, 0, lte_sync::slot_sync_params(), threads);
            std::vector<std::vector<cf>> out(n_rx, std::vector<cf>(S));
            std::vector<cf*> optr;
            for (auto& v : out)
                optr.push_back(v.data());
            std::vector<const cf*> in(n_rx);
            // Input position: the lead, then the cycle repeated.
            const int64_t lead = o.lead, cyc = static_cast<int64_t>(sig.cycle[0].size());
            int64_t pos = 0;
            auto feed = [&](int64_t want) {
                // One push of up to `want` samples, not across the lead's end or a
                // cycle's.
                int64_t n;
                if (pos < lead) {
                    n = std::min(want, lead - pos);
                    for (int r = 0; r < n_rx; ++r)
                        in[r] = sig.lead[r].data() + pos;
                } else {
                    const int64_t k = (pos - lead) % cyc;
                    n = std::min(want, cyc - k);
                    for (int r = 0; r < n_rx; ++r)
                        in[r] = sig.cycle[r].data() + k;
                }
                sync.push(in, static_cast<int>(n));
                pos += n;
            };
            std::vector<double> us, us_pss, us_other, cpu, cpu_pss, pop, pop_pss,
                pop_other;
            uint64_t missed = 0, slots = 0;
            int64_t lock_start = -1;
            bool timing = false;
            lte_sync::slot_info info;
            const auto t_begin = clk::now();
            auto deadline = t_begin + std::chrono::duration<double>(o.seconds + 60);
            auto last = clk::now();
            double last_cpu = cpu_us();
            for (;;) {
                const auto pop_begin = clk::now();
                if (!sync.pop_slot(optr, info)) {
                    feed(std::max<int64_t>(1, sync.samples_wanted()));
                    if (!timing && pos > lead + 4 * cyc) {
                        std::fprintf(stderr,
                                     "mimodet_sync_bench: %.1f MHz %dx%d: no lock after "
                                     "%lld samples\n",
                                     mhz,
                                     n_tx,
                                     n_rx,
                                     static_cast<long long>(pos));
                        return 1;
                    }
                    continue;
                }
                const auto now = clk::now();
                const double now_cpu = cpu_us();
                ++slots;
                if (dump) {
                    double p = 0, sr = 0, si = 0;
                    for (const auto& v : out)
                        for (const cf& z : v) {
                            p += std::norm(z);
                            sr += z.real();
                            si += z.imag();
                        }
                    dump << mhz << ',' << n_tx << 'x' << n_rx << ',' << slots << ','
                         << info.ns << ',' << info.input_start << ',' << info.timing_step
                         << ',' << info.cfo << ',' << info.pss_checked << ','
                         << info.pss_found << ',' << info.pss_metric << ','
                         << info.sro_ppm << ',' << info.resampled << ',' << info.first
                         << ',' << p << ',' << sr << ',' << si << '\n';
                }
                if (timing) {
                    const double t =
                        std::chrono::duration<double, std::micro>(now - last).count();
                    const double tp =
                        std::chrono::duration<double, std::micro>(now - pop_begin)
                            .count();
                    const bool pss_slot = lte_grid::has_sync(info.ns);
                    us.push_back(t);
                    (pss_slot ? us_pss : us_other).push_back(t);
                    pop.push_back(tp);
                    (pss_slot ? pop_pss : pop_other).push_back(tp);
                    cpu.push_back(now_cpu - last_cpu);
                    if (pss_slot)
                        cpu_pss.push_back(now_cpu - last_cpu);
                    missed += info.pss_checked && !info.pss_found;
                } else if (info.first) {
                    // Timing starts after the lock's slot.
                    timing = true;
                    lock_start = info.input_start;
                    deadline = clk::now() + std::chrono::duration<double>(o.seconds);
                }
                if (timing &&
                    (now >= deadline ||
                     (o.max_slots > 0 && us.size() >= static_cast<size_t>(o.max_slots))))
                    break;
                if (dump) { // the checksum is not timed
                    last = clk::now();
                    last_cpu = cpu_us();
                } else {
                    last = now;
                    last_cpu = now_cpu;
                }
            }
            const double m = mean(us);
            const double p50 = percentile(us, 0.5), p99 = percentile(us, 0.99),
                         pmax = percentile(us, 1.0);
            std::printf("%-6.1f %dx%-4d %7d %8zu %9.1f %9.1f %9.1f %9.1f %10.1f %10.1f "
                        "%9.1f %9.1f "
                        "%7llu %6.2f %9.1f %9.1f %9.1f\n",
                        mhz,
                        n_tx,
                        n_rx,
                        threads,
                        us.size(),
                        m,
                        p50,
                        p99,
                        pmax,
                        mean(us_pss),
                        mean(us_other),
                        mean(cpu),
                        mean(cpu_pss),
                        static_cast<unsigned long long>(missed),
                        500.0 / m,
                        mean(pop_pss),
                        mean(pop_other),
                        percentile(pop, 0.99));
            std::fflush(stdout);
            if (csv)
                csv << mhz << ',' << n_tx << ',' << n_rx << ',' << o.channel << ','
                    << o.snr_db << ',' << o.cfo << ',' << o.sro_ppm << ',' << us.size()
                    << ',' << m << ',' << p50 << ',' << p99 << ',' << pmax << ','
                    << mean(us_pss) << ',' << mean(us_other) << ',' << mean(cpu) << ','
                    << mean(cpu_pss) << ',' << missed << ',' << lock_start << ','
                    << threads << ',' << mean(pop_pss) << ',' << mean(pop_other) << ','
                    << percentile(pop, 0.99) << '\n';
        }
    return 0;
}
