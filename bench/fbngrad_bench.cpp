// fbngrad_bench: Google Benchmark timings of fbngrad_fused_batch_norm_grad_v2 and its peers.
//
// Names: impl/dtype/layout/mode/N,H,W,C[/cold][/threads:T] (Google Benchmark appends
// "/real_time", and "/iterations:K" for /cold), e.g. fbngrad/float32/NHWC/train/32,56,56,64.
// The shape is always given as N,H,W,C; for NCHW the tensors are [N,C,H,W].
//   impl  fbngrad        the dispatcher's pick
//         fbngrad-<isa>  dispatch restricted to one ISA of the variant table that this CPU runs
//         fbngrad-omp    the dispatcher's pick on README's OpenMP runner (fbngrad_set_parallel_for),
//                        as a trainer that owns its thread pool runs it (built with OpenMP only)
//         onednn         oneDNN's batch_normalization_backward (peer_onednn.cpp; optional)
//         aten           PyTorch's at::native_batch_norm_backward (peer_aten.cpp; optional)
//         naive          a plain two-pass, single-threaded C++ loop (peer_naive.cpp)
//   (bench/tf_bench.py adds tensorflow and tensorflow-eigen in its own process.)
//   /cold      the caches are flushed (64 MiB written, untimed) before every call
//   /threads:T only with --fbngrad_thread_counts: every peer's thread pool set to T
// Shapes: the batch-norm layers of ResNet-50 at N=32 and a few mobile-sized ones, in every
// dtype and layout; plus a size sweep (float32 NHWC, C=64, 1e4 to 1e8 elements).
// bandwidth/{copy,copy_nt,add,add_nt}: the memory-bandwidth probe (bandwidth.h).
//
// Every benchmark's output is checked once against fbngrad::ref (the double-precision
// oracle) before it is timed; a mismatch skips it with an error. fbngrad must meet the
// oracle's tight bound; a peer that misses it (its own summation order) must meet the TF
// parity tests' tolerance instead, and its label then says "[parity tolerance]".
// Counters: bytes_per_second and GB/s count 3 tensors per call (x and y_backprop read,
// x_backprop written); times are wall-clock (UseRealTime: the kernels are multi-threaded).
//
// Extra flags (CLI11 takes them out before Google Benchmark sees the rest; --help prints both):
//   --fbngrad_threads=N          every peer's threads (default: one per core)
//   --fbngrad_thread_counts=1,2  register every benchmark once per count, with /threads:T
//   --fbngrad_bandwidth_mib=N    the size of each bandwidth-probe array (default 256)
//   --fbngrad_shapes=S           catalogue (ResNet-50 and mobile), sweep, or all (default)
//   --fbngrad_input_digest       print the inputs' digests for tf_bench.py's check and exit
//   --fbngrad_task_report=FILE   also time each fbngrad benchmark's tasks, one after the other
//                                (task_report.h): counters loops, min_tasks and longest_task_share,
//                                and FILE (JSON) for bench/task_model.py
//   --fbngrad_task_order=reverse the task report's runner takes each loop's tasks last to first
//                                (default: index order; task_report.h says why)
//   --fbngrad_task_thread=worker the task report's runner runs the tasks on a thread of its own
//                                while the calling thread waits (default: caller; task_report.h)
//   --fbngrad_task_repeats=N     the task report's calls per benchmark, each task's fastest kept
//                                (default 15: with 5, a noisy VM left a loop's longest task up to
//                                1.5x its mean, which the model reads as imbalance)
// Without --benchmark_filter the run is limited to a default subset (hot float32, every
// peer, and the bandwidth probe); --benchmark_filter=all runs everything.
#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <thread>

#include "bandwidth.h"
#include "cache_flush.h"
#include "peer.h"
#include "task_report.h"

namespace fbngrad_bench {
namespace {

const Shape kShapes[] = {
    // ResNet-50 (N = 32)
    {32, 112, 112, 64}, {32, 56, 56, 64}, {32, 56, 56, 256}, {32, 28, 28, 128}, {32, 28, 28, 512},
    {32, 14, 14, 256}, {32, 14, 14, 1024}, {32, 7, 7, 512}, {32, 7, 7, 2048},
    // mobile-sized
    {1, 56, 56, 24}, {4, 28, 28, 32}, {8, 14, 14, 96},
    // few channels (stems, grouped convolutions): below one vector of channels
    {32, 28, 28, 8},
};

// The size sweep: float32 NHWC, C = 64, H = W, about 1e4 to 1e8 elements in steps of ~2x
// (tensor bytes 40 KB .. 400 MB: L1, L2, L3 and DRAM on the way).
const Shape kSweepShapes[] = {
    {1, 12, 12, 64},   {1, 18, 18, 64},   {1, 25, 25, 64},   {1, 35, 35, 64},   {1, 50, 50, 64},
    {1, 71, 71, 64},   {1, 100, 100, 64}, {1, 141, 141, 64}, {1, 200, 200, 64}, {1, 283, 283, 64},
    {1, 400, 400, 64}, {1, 566, 566, 64}, {1, 800, 800, 64}, {1, 1250, 1250, 64},
};

const char *kDefaultFilter = "^(bandwidth/|[^/]+/float32/[^/]+/[^/]+/[^/]+(/real_time)?$)";

// ---- the check: fbngrad::ref's bound, or the parity tests' tolerance for peers -------------

// TF's nn_fused_batchnorm_test.py tolerances, as tests/parity/tf_parity.py applies them:
// |got - want| <= tol * (1 + |want|), want being the double-precision oracle here.
double parity_tol(fbngrad_dtype d) { return d == FBNGRAD_FLOAT32 ? 1e-3 : d == FBNGRAD_FLOAT16 ? 2e-3 : 2e-2; }
constexpr double kParityParamTol = 1e-3;

std::string parity_compare(const Inputs &in, const fbngrad::ref::Expected &e, const Outputs &o) {
    auto bad = [](double got, double want, double tol) {
        if (std::isnan(want)) return !std::isnan(got);
        if (std::isinf(want)) return got != want;
        return !(std::fabs(got - want) <= tol * (1.0 + std::fabs(want)));
    };
    const double xt = parity_tol(in.dtype);
    for (int64_t i = 0; i < in.elements; ++i) {
        const double got = fbngrad::ref::load(in.dtype, o.dx.data(), i);
        if (bad(got, e.x_backprop[i], xt))
            return "x_backprop[" + std::to_string(i) + "]: got " + std::to_string(got) + ", expected " +
                   std::to_string(e.x_backprop[i]);
    }
    for (size_t c = 0; c < o.sb.size(); ++c) {
        if (bad(o.sb[c], e.scale_backprop[c], kParityParamTol))
            return "scale_backprop[" + std::to_string(c) + "]: got " + std::to_string(o.sb[c]) + ", expected " +
                   std::to_string(e.scale_backprop[c]);
        if (bad(o.ob[c], e.offset_backprop[c], kParityParamTol))
            return "offset_backprop[" + std::to_string(c) + "]: got " + std::to_string(o.ob[c]) + ", expected " +
                   std::to_string(e.offset_backprop[c]);
    }
    return "";
}

struct Verdict {
    std::string error;  // "" when the output passed
    bool parity = false;  // passed only under the parity tolerance
};

// Runs the peer once and compares; cached per benchmark name (Google Benchmark calls the
// benchmark function several times while it picks the iteration count).
std::map<std::string, Verdict> g_verdicts;

Verdict verify(const Peer &peer, Runner &r, const Inputs &in, const Case &cs, Outputs &o) {
    Verdict v;
    if (!r.run(&v.error) || !r.fetch(o, &v.error)) return v;
    const auto &e = get_expected(in, cs.training, kEpsilon);
    auto cmp = fbngrad::ref::compare(problem(in, cs.training, kEpsilon), e, o.dx.data(), o.sb.data(), o.ob.data());
    if (cmp.ok()) return v;
    const std::string strict = "disagrees with fbngrad::ref: " + std::to_string(cmp.mismatches) +
                               " mismatches, first " + cmp.first_mismatch;
    if (peer.strict_check) {
        v.error = strict;
        return v;
    }
    const std::string loose = parity_compare(in, e, o);
    if (loose.empty())
        v.parity = true;
    else
        v.error = strict + "; and beyond the parity tolerance: " + loose;
    return v;
}

// ---- the benchmark ------------------------------------------------------------------------

struct Bench {
    std::string name;  // as registered (benchmark 1.7.1's State has no name())
    const Peer *peer;
    Case cs;
    bool cold;
    int threads;
};

std::vector<Peer> g_peers;  // kept alive for the benchmarks' pointers

std::string g_task_report;  // --fbngrad_task_report: the JSON file; "" when not asked for
int g_task_repeats = 15;    // --fbngrad_task_repeats
std::map<std::string, TaskProfile> g_task_profiles;  // per benchmark name, as g_verdicts

// The task report's counters for an fbngrad benchmark (once per name; the
// timing runner's calls are not timed by Google Benchmark).
bool count_tasks(benchmark::State &state, const Bench &b, Runner &r, int64_t elements) {
    auto it = g_task_profiles.find(b.name);
    if (it == g_task_profiles.end()) {
        TaskProfile p;
        std::string err;
        if (!profile_tasks([&] { return r.run(&err); }, g_task_repeats, &p, &err)) {
            state.SkipWithError(("task report: " + err).c_str());
            return false;
        }
        add_to_task_report(b.name, elements, p);
        it = g_task_profiles.emplace(b.name, std::move(p)).first;
    }
    state.counters["loops"] = double(it->second.task_us.size());
    state.counters["min_tasks"] = double(it->second.min_tasks());
    state.counters["longest_task_share"] = it->second.longest_task_share();
    return true;
}

void bench(benchmark::State &state, Bench b) {
    const Inputs &in = get_inputs(b.cs.dtype, b.cs.layout, b.cs.shape);
    Outputs o;
    o.dx.assign(in.dy.size(), 0);
    o.sb.assign(b.cs.shape.c, 0.0f);
    o.ob.assign(b.cs.shape.c, 0.0f);
    b.peer->set_threads(b.threads);
    std::string err;
    std::unique_ptr<Runner> r = b.peer->prepare(in, b.cs, o, &err);
    if (!r) {
        state.SkipWithError(err.c_str());
        return;
    }
    auto it = g_verdicts.find(b.name);
    if (it == g_verdicts.end()) it = g_verdicts.emplace(b.name, verify(*b.peer, *r, in, b.cs, o)).first;
    if (!it->second.error.empty()) {
        state.SkipWithError(it->second.error.c_str());
        return;
    }
    state.SetLabel(r->label() + (it->second.parity ? " [parity tolerance]" : ""));
    if (!r->run(&err)) {  // untimed warm-up: first-touch of outputs, lazy initialisation
        state.SkipWithError(err.c_str());
        return;
    }
    if (!g_task_report.empty() && !b.cold && b.peer->task_report &&
        !count_tasks(state, b, *r, in.elements))
        return;
    for (auto _ : state) {
        if (b.cold) {
            state.PauseTiming();
            flush_caches();
            state.ResumeTiming();
        }
        if (!r->run(&err)) {
            state.SkipWithError(err.c_str());
            break;
        }
        benchmark::DoNotOptimize(o.dx.data());
        benchmark::ClobberMemory();
    }
    const double bytes = 3.0 * double(in.elements) * fbngrad::ref::dtype_size(b.cs.dtype);
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
    state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// /cold runs a fixed number of calls: Google Benchmark sizes a run by the timed time only,
// so a 20 us call with a 5 ms flush each would otherwise run for minutes. About 0.2 s of
// calls at a pessimistic 10 GB/s, 10 to 200 of them.
int64_t cold_iterations(const Shape &s, fbngrad_dtype d) {
    const double seconds = 3.0 * double(s.elements()) * fbngrad::ref::dtype_size(d) / 10e9;
    return std::max<int64_t>(10, std::min<int64_t>(200, int64_t(std::ceil(0.2 / seconds))));
}

std::string g_sweep_names;

void register_all(const std::vector<int> &thread_counts, int default_threads, bool catalogue, bool sweep) {
    const fbngrad_dtype dtypes[] = {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16};
    const fbngrad_layout layouts[] = {FBNGRAD_NHWC, FBNGRAD_NCHW};
    std::map<std::string, bool> said;  // "peer: reason" lines already printed
    for (fbngrad_dtype d : dtypes)
        for (fbngrad_layout l : layouts) {
            std::vector<Shape> shapes;
            if (catalogue) shapes.assign(std::begin(kShapes), std::end(kShapes));
            if (sweep && d == FBNGRAD_FLOAT32 && l == FBNGRAD_NHWC)
                shapes.insert(shapes.end(), std::begin(kSweepShapes), std::end(kSweepShapes));
            for (const Shape &s : shapes)
                for (int training = 1; training >= 0; --training) {
                    const Case cs{d, l, training != 0, s};
                    for (const Peer &p : g_peers) {
                        const std::string why = p.unsupported(cs);
                        if (!why.empty()) {
                            const std::string line = p.name + "/" + dtype_name(d) + "/" + layout_name(l) + "/" +
                                                     (training ? "train" : "infer") + ": " + why;
                            if (!said[line]) std::fprintf(stderr, "fbngrad_bench: not registered: %s\n", line.c_str());
                            said[line] = true;
                            continue;
                        }
                        for (int cold = 0; cold <= 1; ++cold)
                            for (int t : thread_counts) {
                                std::string name = p.name + "/" + dtype_name(d) + "/" + layout_name(l) + "/" +
                                                   (training ? "train/" : "infer/") + shape_name(s) +
                                                   (cold ? "/cold" : "") +
                                                   (t > 0 ? "/threads:" + std::to_string(t) : "");
                                Bench b{name, &p, cs, cold != 0, t > 0 ? t : default_threads};
                                auto *reg = benchmark::RegisterBenchmark(name.c_str(), bench, b)
                                                ->UseRealTime()
                                                ->Unit(benchmark::kMillisecond);
                                if (cold) reg->Iterations(cold_iterations(s, d));
                            }
                    }
                }
        }
    for (const Shape &s : kSweepShapes) g_sweep_names += (g_sweep_names.empty() ? "" : " ") + shape_name(s);
}

// --fbngrad_input_digest: the digests tf_bench.py --digest must reproduce.
void print_digests() {
    const Shape s{2, 5, 7, 12};
    for (fbngrad_dtype d : {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16})
        for (fbngrad_layout l : {FBNGRAD_NHWC, FBNGRAD_NCHW})
            std::printf("%s %s %s %s\n", dtype_name(d), layout_name(l), shape_name(s).c_str(),
                        input_digest(get_inputs(d, l, s)).c_str());
}

// --help: fbngrad_bench's own flags, then Google Benchmark's (benchmark::Initialize
// calls this for --help and exits).
std::string g_own_help;
void print_help() {
    std::fputs(g_own_help.c_str(), stdout);
    std::printf("\nGoogle Benchmark's flags (every other argument goes to it):\n");
    benchmark::PrintDefaultHelp();
}

}  // namespace
}  // namespace fbngrad_bench

int main(int argc, char **argv) {
    using namespace fbngrad_bench;
    int threads = 0, bandwidth_mib = 256;
    std::string shapes = "all", task_thread = "caller", task_order = "index";
    std::vector<int> thread_counts;
    bool digest = false;
    // CLI11 takes fbngrad_bench's own flags and leaves the rest, in order, to
    // Google Benchmark, which also prints the help (print_help).
    const CLI::Range positive(1, std::numeric_limits<int>::max());
    CLI::App app{"fbngrad_bench: Google Benchmark timings of fbngrad and its peers (the file's header says more)."};
    app.set_help_flag();
    app.allow_extras();
    app.add_option("--fbngrad_threads", threads, "every peer's threads (default: one per core)")
        ->check(positive);
    app.add_option("--fbngrad_thread_counts", thread_counts,
                   "e.g. 1,2: register every benchmark once per count, with /threads:T")
        ->delimiter(',')
        ->check(positive);
    app.add_option("--fbngrad_bandwidth_mib", bandwidth_mib, "the size of each bandwidth-probe array (default 256)")
        ->check(positive);
    app.add_option("--fbngrad_shapes", shapes, "catalogue (ResNet-50 and mobile), sweep, or all (default)")
        ->check(CLI::IsMember({"catalogue", "sweep", "all"}));
    app.add_flag("--fbngrad_input_digest", digest, "print the inputs' digests for tf_bench.py's check and exit");
    app.add_option("--fbngrad_task_report", g_task_report,
                   "FILE: also time each fbngrad benchmark's tasks, one after the other (JSON for "
                   "bench/task_model.py)");
    app.add_option("--fbngrad_task_repeats", g_task_repeats,
                   "the task report's calls per benchmark, each task's fastest kept (default 15)")
        ->check(positive);
    app.add_option("--fbngrad_task_thread", task_thread,
                   "caller (default) or worker: the thread the task report's runner runs the tasks on")
        ->check(CLI::IsMember({"caller", "worker"}));
    app.add_option("--fbngrad_task_order", task_order,
                   "index (default) or reverse: the order the task report's runner takes each loop's tasks in")
        ->check(CLI::IsMember({"index", "reverse"}));
    for (int i = 1; i < argc; ++i) {  // CLI11 takes `--flag=` as the flag not given
        const std::string a = argv[i];
        if (a.rfind("--fbngrad_", 0) == 0 && a.back() == '=') {
            std::fprintf(stderr, "fbngrad_bench: %s wants a value\n", a.c_str());
            return 1;
        }
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        std::fprintf(stderr, "fbngrad_bench: ");
        return app.exit(e);
    }
    if (digest) {
        print_digests();
        return 0;
    }
    set_tasks_on_worker(task_thread == "worker");
    set_task_order_reversed(task_order == "reverse");
    g_own_help = app.help();

    std::vector<std::string> rest = app.remaining();
    std::vector<char *> args{argv[0]};
    bool has_filter = false, listing = false;
    for (std::string &a : rest) {
        if (a.rfind("--benchmark_filter", 0) == 0) has_filter = true;
        if (a.rfind("--benchmark_list_tests", 0) == 0 || a == "--help") listing = true;
        args.push_back(a.data());
    }
    std::string default_filter = std::string("--benchmark_filter=") + kDefaultFilter;
    if (!has_filter && !listing) {
        std::fprintf(stderr,
                     "fbngrad_bench: no --benchmark_filter given, running the default subset %s "
                     "(--benchmark_filter=all runs everything)\n",
                     kDefaultFilter);
        args.push_back(default_filter.data());
    }
    const int default_threads = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));

    int n = int(args.size());
    args.push_back(nullptr);
    benchmark::Initialize(&n, args.data(), print_help);
    if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;

    g_peers = all_peers();
    std::string peers, missing;
    for (const Peer &p : g_peers) peers += (peers.empty() ? "" : " ") + p.name;
    for (const std::string &m : missing_peers()) {
        std::fprintf(stderr, "fbngrad_bench: peer not built: %s\n", m.c_str());
        missing += (missing.empty() ? "" : "; ") + m;
    }
    benchmark::AddCustomContext("fbngrad_version", fbngrad_version());
    benchmark::AddCustomContext("fbngrad_cpu_features", fbngrad_cpu_features());
    benchmark::AddCustomContext("fbngrad_threads", std::to_string(default_threads));
    benchmark::AddCustomContext("fbngrad_peers", peers);
    benchmark::AddCustomContext("fbngrad_missing_peers", missing.empty() ? "none" : missing);

    if (thread_counts.empty()) {
        register_bandwidth_benchmarks(default_threads, "", bandwidth_mib);
        thread_counts.push_back(0);  // no suffix: default_threads
    } else {
        for (int t : thread_counts) register_bandwidth_benchmarks(t, "/threads:" + std::to_string(t), bandwidth_mib);
    }
    register_all(thread_counts, default_threads, shapes != "sweep", shapes != "catalogue");
    benchmark::AddCustomContext("fbngrad_sweep_shapes", g_sweep_names);

    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    if (!g_task_report.empty()) {
        std::string err;
        const std::string cpu = std::string(fbngrad_cpu_features()) + ", " + std::to_string(default_threads) + " threads";
        if (!write_task_report(g_task_report, cpu, g_task_repeats, &err)) {
            std::fprintf(stderr, "fbngrad_bench: %s\n", err.c_str());
            return 1;
        }
        std::fprintf(stderr, "fbngrad_bench: task report written to %s\n", g_task_report.c_str());
    }
    return 0;
}
