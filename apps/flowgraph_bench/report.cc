/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "report.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace fg_bench {

namespace {
//! The sub-windows' length: with --sample-every, the stretches between its lines.
double sub_window_s(const options& o)
{
    return o.sample_every > 0 ? o.sample_every : o.sub_window_s;
}
} // namespace

void print_table_header(const options& o)
{
    std::printf("# mimodet_flowgraph_bench: %g MHz, channel %s, %d replayed slots, CPU "
                "detector threads %d (0: all), window %g s after %g s warm-up; latency = "
                "receiver input -> detector output; time-domain source pieces per slot "
                "%d\n",
                o.bandwidth,
                o.channel.c_str(),
                o.slots,
                o.threads,
                o.seconds,
                o.warmup,
                o.chunks);
    std::printf("%-5s %-4s %-4s %-5s %-5s %-4s %5s %6s %9s %6s %9s %8s %8s %8s %9s %4s "
                "%4s %6s %5s %-6s %s\n",
                "det",
                "bk",
                "out",
                "ant",
                "mod",
                "dom",
                "snr",
                "rate",
                "slots/s",
                "xRT",
                "Mbit/s",
                "p50_ms",
                "p99_ms",
                "max_ms",
                "BER",
                "bad",
                "lost",
                "steal%",
                "cpus",
                "limit",
                "busy % (work time / wall time)");
    std::fflush(stdout);
}

void print_row(const options& o, const run_config& c, const run_result& r)
{
    const std::string& alg = c.alg;
    const std::string& backend = c.backend;
    const std::string& mod = c.mod;
    const std::string& dom = c.dom;
    const double rate = c.rate;
    const int nt = c.nt, nr = c.nr;
    const double snr = c.snr;
    char ant[16], rate_s[16];
    std::snprintf(ant, sizeof ant, "%dx%d", nt, nr);
    if (rate > 0)
        std::snprintf(rate_s, sizeof rate_s, "%g", rate);
    else
        std::snprintf(rate_s, sizeof rate_s, "max");
    if (!r.error.empty()) {
        std::printf("%-5s %-4s skipped (%s, %s, %s, %s): %s\n",
                    alg.c_str(),
                    backend.c_str(),
                    ant,
                    mod.c_str(),
                    dom.c_str(),
                    rate_s,
                    r.error.c_str());
    } else {
        std::string busy =
            " est:" + r.est_backend + (o.receiver == "fused" ? " fused" : "") +
            (o.awake != "none" ? " awake:" + o.awake : "") +
            (o.slice_us ? " slice:" + std::to_string(o.slice_us) : "") +
            (o.pin ? " pin" : "") +
            (c.carrier >= 0 ? " carrier:" + std::to_string(c.carrier) : "") +
            (r.device != 0 || o.devices.size() > 1 ? " device:" + std::to_string(r.device)
                                                   : "") +
            (dom == "time" && o.demod == "receiver" ? " demod:rx" : "") +
            (o.gpu_wait == "block" ? " wait:block" : "") +
            (o.antenna_threads ? " ant-threads:" + std::to_string(o.antenna_threads)
                               : "") +
            (o.gpu_lanes ? " lanes:" + std::to_string(o.gpu_lanes) : "") +
            (o.sync_ahead >= 0 && dom == "time"
                 ? " sync-ahead:" + std::to_string(o.sync_ahead)
                 : "") +
            (o.input_copy ? " input-copy" : "") +
            (o.src_buffer_slots ? " srcbuf:" + std::to_string(o.src_buffer_slots) : "") +
            (o.stall_ms > 0 && rate > 0
                 ? " stall:" + std::to_string(static_cast<int>(o.stall_ms))
                 : "");
        char buf[64];
        for (const auto& b : r.busy) {
            std::snprintf(buf, sizeof buf, " %s %.0f", b.name.c_str(), b.pct);
            busy += buf;
        }
        std::printf("%-5s %-4s %-4s %-5s %-5s %-4s %5.1f %6s "
                    "%9.1f %6.2f %9.1f %8.3f %8.3f %8.3f %9.3e "
                    "%4llu %4llu %6.1f %5.2f %-6s%s\n",
                    alg.c_str(),
                    r.backend.c_str(),
                    r.out.c_str(),
                    ant,
                    mod.c_str(),
                    dom.c_str(),
                    snr,
                    rate_s,
                    r.slots_per_s,
                    r.slots_per_s / k_realtime_slots_per_s,
                    r.mbit_per_s,
                    r.p50,
                    r.p99,
                    r.pmax,
                    r.ber,
                    static_cast<unsigned long long>(r.bad),
                    static_cast<unsigned long long>(r.lost),
                    r.steal_pct,
                    r.cpus,
                    r.bottleneck.c_str(),
                    busy.c_str());
        if (r.stalls)
            std::printf("      note: %llu stalls of %g ms, %llu "
                        "slots later than 1 ms (%.1f a stall)\n",
                        static_cast<unsigned long long>(r.stalls),
                        o.stall_ms,
                        static_cast<unsigned long long>(r.late),
                        double(r.late) / r.stalls);
        if (r.sub_windows > 1)
            std::printf("      note: %d of %d sub-windows of %g s "
                        "held p99 <= 1 ms (worst p99 %.3f ms), "
                        "%llu slots later than 1 ms\n",
                        r.sub_held,
                        r.sub_windows,
                        sub_window_s(o),
                        r.sub_p99_worst,
                        static_cast<unsigned long long>(r.late));
        if (r.truncated)
            std::printf("      note: %llu slots truncated by the %g us %s\n",
                        static_cast<unsigned long long>(r.truncated),
                        o.deadline_us > 0 ? o.deadline_us : o.slot_limit_us,
                        o.deadline_us > 0 ? "deadline" : "stall bound per slot");
        if (r.misaligned || r.est_bad || r.sync_missed)
            std::printf("      note: %llu slots not mapped to an "
                        "input slot, %llu bad estimator slots, "
                        "%llu PSS missed\n",
                        static_cast<unsigned long long>(r.misaligned),
                        static_cast<unsigned long long>(r.est_bad),
                        static_cast<unsigned long long>(r.sync_missed));
    }
    std::fflush(stdout);
}

int report_carriers(const options& o,
                    const run_config& c,
                    const std::vector<run_result>& rs,
                    std::ofstream& csv)
{
    int failed = 0;
    double min_rate = INFINITY, worst_p99 = 0;
    uint64_t lost = 0, bad = 0, late = 0, slots = 0;
    for (size_t k = 0; k < rs.size(); ++k) {
        run_config ck = c;
        ck.carrier = static_cast<int>(k);
        print_row(o, ck, rs[k]);
        if (csv)
            write_csv_row(csv, o, ck, rs[k]);
        if (!rs[k].error.empty()) {
            ++failed;
            continue;
        }
        min_rate = std::min(min_rate, rs[k].slots_per_s);
        worst_p99 = std::max(worst_p99, std::isnan(rs[k].p99) ? INFINITY : rs[k].p99);
        lost += rs[k].lost;
        bad += rs[k].bad;
        late += rs[k].late;
        slots += rs[k].slots;
    }
    // Which devices the carriers ran on, with how many each: "0 x4, 1 x4".
    std::map<int, int> per_device;
    for (const auto& r : rs)
        ++per_device[r.device];
    std::string devices;
    for (const auto& [d, n] : per_device)
        devices +=
            (devices.empty() ? "" : ", ") + std::to_string(d) + " x" + std::to_string(n);
    if (failed) {
        std::printf("      carriers: %zu, %d could not run (devices %s)\n",
                    rs.size(),
                    failed,
                    devices.c_str());
        return failed;
    }
    const double target = c.rate > 0 ? c.rate : k_realtime_slots_per_s;
    const bool held =
        min_rate >= 0.999 * target && worst_p99 <= 1.0 && lost == 0 && bad == 0;
    std::printf(
        "      carriers: %zu, %.1f slots/s together on devices %s, slowest %.1f; worst "
        "p99 %.3f ms; %llu lost, %llu bad, %llu later than 1 ms; real time (%g slots/s "
        "each, p99 <= 1 ms, none lost or bad): %s\n",
        rs.size(),
        slots / rs[0].window_s,
        devices.c_str(),
        min_rate,
        worst_p99,
        static_cast<unsigned long long>(lost),
        static_cast<unsigned long long>(bad),
        static_cast<unsigned long long>(late),
        target,
        held ? "held" : "not held");
    std::fflush(stdout);
    return 0;
}

std::string csv_header()
{
    return "detector,backend,output,n_tx,n_rx,modulation,snr_db,bandwidth_mhz,domain,"
           "channel,cpu_threads,rate,window_s,slots,slots_per_s,realtime_x,mbit_per_"
           "s,"
           "latency_p50_ms,latency_p99_ms,latency_max_ms,ber,bad_slots,est_bad_slots,"
           "lost_slots,misaligned,pss_missed,first_ns,first_k,busy_src,busy_sync,"
           "busy_demod,busy_est,busy_det,busy_sink,bottleneck,deadline_us,truncated_"
           "slots,chunks,steal_pct,cpus,est_backend,receiver,awake,slice_us,src_spin_"
           "us,pin,demod,gpu_wait,antenna_threads,gpu_lanes,input_copy,src_buffer_slots,"
           "late_slots,"
           "stalls,stall_ms,sync_ahead,sub_window_s,sub_windows,sub_windows_held,"
           "sub_p99_worst_ms,carrier,carriers,device,error";
}

void write_csv_row(std::ostream& csv,
                   const options& o,
                   const run_config& c,
                   const run_result& r)
{
    const std::string& alg = c.alg;
    const std::string& mod = c.mod;
    const std::string& dom = c.dom;
    const double rate = c.rate;
    const int nt = c.nt, nr = c.nr;
    const double snr = c.snr;
    auto busy_of = [&](const char* n) -> std::string {
        for (const auto& b : r.busy)
            if (b.name == n)
                return std::to_string(b.pct);
        return "";
    };
    std::string err = r.error;
    std::replace(err.begin(), err.end(), ',', ';');
    std::replace(err.begin(), err.end(), '\n', ' ');
    csv << alg << ',' << r.backend << ',' << r.out << ',' << nt << ',' << nr << ',' << mod
        << ',' << snr << ',' << o.bandwidth << ',' << dom << ',' << o.channel << ','
        << o.threads << ',' << rate << ',' << r.window_s << ',' << r.slots << ','
        << r.slots_per_s << ',' << r.slots_per_s / k_realtime_slots_per_s << ','
        << r.mbit_per_s << ',' << r.p50 << ',' << r.p99 << ',' << r.pmax << ',' << r.ber
        << ',' << r.bad << ',' << r.est_bad << ',' << r.lost << ',' << r.misaligned << ','
        << r.sync_missed << ',' << r.first_ns << ',' << r.first_k << ',' << busy_of("src")
        << ',' << busy_of("sync") << ',' << busy_of("demod") << ',' << busy_of("est")
        << ',' << busy_of(o.receiver == "fused" ? "rx" : "det") << ',' << busy_of("sink")
        << ',' << r.bottleneck << ',' << (alg == "psd" ? o.deadline_us : 0.0) << ','
        << r.truncated << ',' << (dom == "time" ? o.chunks : 1) << ',' << r.steal_pct
        << ',' << r.cpus << ',' << r.est_backend << ',' << o.receiver << ',' << o.awake
        << ',' << o.slice_us << ',' << (rate > 0 ? o.src_spin_us : 0) << ','
        << (o.pin ? 1 : 0) << ',' << (dom == "time" ? o.demod : "none") << ','
        << o.gpu_wait << ',' << o.antenna_threads << ',' << o.gpu_lanes << ','
        << (o.input_copy ? 1 : 0) << ',' << o.src_buffer_slots << ',' << r.late << ','
        << r.stalls << ',' << (rate > 0 ? o.stall_ms : 0.0) << ',' << o.sync_ahead << ','
        << sub_window_s(o) << ',' << r.sub_windows << ',' << r.sub_held << ','
        << r.sub_p99_worst << ',' << c.carrier << ',' << o.carriers << ',' << r.device
        << ',' << err << '\n';
    csv.flush();
}

} // namespace fg_bench
