// fbngrad_tune: the offline autotuner (docs/tuning.md).
// For one ISA of this machine it searches, per dtype x layout x mode cell,
// the generator's schedule knobs and Halide's autoschedulers; rejects every
// candidate that is wrong on an edge shape (against the double-precision
// reference) or fails there; times the rest on each shape class; and writes
// the winners to the schedule table that the AOT build reads.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fbngrad/fbngrad.h"
#include "jit_candidate.h"
#include "reference.h"
#include "tune_space.h"
#include "tune_state.h"

using namespace fbngrad_tune;
using Clock = std::chrono::steady_clock;

namespace {

// The Halide target of each ISA, from the variant table (cmake/variants.cmake).
const std::map<std::string, std::string> &isa_targets() {
    static const std::map<std::string, std::string> m = {
#define FBNGRAD_ISA_TARGET(isa, target) {#isa, target},
#include "fbngrad_isa_targets.inc"
#undef FBNGRAD_ISA_TARGET
    };
    return m;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// "90", "90s", "30m", "1h" -> seconds.
double parse_duration(const std::string &s) {
    size_t used = 0;
    double v = -1;
    try {
        v = std::stod(s, &used);
    } catch (const std::exception &) {
    }
    const std::string unit = v < 0 ? "?" : s.substr(used);
    if (unit == "" || unit == "s") return v;
    if (unit == "m") return v * 60;
    if (unit == "h") return v * 3600;
    throw std::runtime_error("--budget: not a duration: " + s + " (e.g. 90s, 30m, 1h)");
}

// The bench's method, shortened: warm once, then repeat until ~0.25 s (at
// least 5, at most 60 calls) and take the median.
double median_ms(JitCandidate &k, const fbngrad_bench::Inputs &in, std::vector<uint8_t> &xb, std::vector<float> &sb,
                 std::vector<float> &ob) {
    k.run(in, xb.data(), sb.data(), ob.data());
    std::vector<double> t;
    const auto t0 = Clock::now();
    while (t.size() < 5 || (seconds_since(t0) < 0.25 && t.size() < 60)) {
        const auto a = Clock::now();
        k.run(in, xb.data(), sb.data(), ob.data());
        t.push_back(seconds_since(a) * 1e3);
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    return t[t.size() / 2];
}

std::string eta(double s) {
    if (s < 90) return fmt::format("{:.0f}s", s);
    return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
}

struct Options {
    std::string isa, out, state;
    std::vector<std::string> dtypes{"f32", "f16", "bf16"}, layouts{"nhwc", "nchw"}, modes{"train", "infer"};
    std::vector<std::string> classes = [] {
        std::vector<std::string> all;
        for (int i = 0; i < fbngrad::kShapeClassCount; ++i)
            all.push_back(fbngrad::shape_class_name(fbngrad::ShapeClass(i)));
        return all;
    }();
    std::vector<std::string> extra_generators;
    std::string budget = "30m";
    bool resume = false, fresh = false, no_autoschedulers = false, merge = false;
    double min_gain = 0.05;
};

// Compiles and checks every candidate of a cell; returns the ones that passed.
std::vector<std::unique_ptr<JitCandidate>> compile_and_check(const Cell &cell, const std::vector<Candidate> &cands,
                                                            const std::string &target, StateFile &state,
                                                            std::vector<CandidateResult> &results) {
    const float eps = 0.0001f;
    std::vector<std::unique_ptr<JitCandidate>> kernels(cands.size());
    const std::vector<std::string> crashed = state.crashed(cell.key());
    for (size_t i = 0; i < cands.size(); ++i) {
        CandidateResult &r = results[i];
        if (std::find(crashed.begin(), crashed.end(), cands[i].id) != crashed.end()) {
            r.status = "rejected";
            r.reason = "crashed the tuner in an earlier run (its check never ended)";
            continue;
        }
        const auto t0 = Clock::now();
        try {
            kernels[i] = std::make_unique<JitCandidate>(cands[i], cell, target);
        } catch (const std::exception &e) {
            r.status = "rejected";
            r.reason = e.what();
        }
        r.compile_s = seconds_since(t0);
    }
    // Shape-outer, so that each edge shape's inputs and reference are made once.
    for (const fbngrad_bench::Shape &s : edge_shapes()) {
        const fbngrad_bench::Inputs &in = fbngrad_bench::get_inputs(cell.dtype, cell.layout, s);
        const fbngrad::ref::Problem p = fbngrad_bench::problem(in, cell.training, eps);
        const fbngrad::ref::Expected &e = fbngrad_bench::get_expected(in, cell.training, eps);
        std::vector<uint8_t> xb(size_t(in.elements) * fbngrad::ref::dtype_size(cell.dtype));
        std::vector<float> sb(size_t(s.c)), ob(size_t(s.c));
        for (size_t i = 0; i < cands.size(); ++i) {
            if (!kernels[i]) continue;
            CandidateResult &r = results[i];
            state.check_started(cell.key(), cands[i].id);
            try {
                std::fill(xb.begin(), xb.end(), uint8_t(0xA5));  // stale outputs must not pass
                kernels[i]->run(in, xb.data(), sb.data(), ob.data());
                const fbngrad::ref::Comparison c = fbngrad::ref::compare(p, e, xb.data(), sb.data(), ob.data());
                if (!c.ok()) {
                    r.status = "rejected";
                    r.reason = fmt::format("wrong on {}: {} mismatches, first {}", fbngrad_bench::shape_name(s),
                                           c.mismatches, c.first_mismatch);
                }
            } catch (const std::exception &ex) {
                r.status = "rejected";
                r.reason = fmt::format("on {}: {}", fbngrad_bench::shape_name(s), ex.what());
            }
            state.check_ended(cell.key(), cands[i].id);
            if (r.status != "ok") kernels[i].reset();
        }
    }
    return kernels;
}

// One interleaved comparison of a and b on the class's shapes: rounds of
// (a, b) so that both see the same machine state; the geometric mean over the
// shapes of each one's median round.
std::pair<double, double> interleaved_ms(const Cell &cell, fbngrad::ShapeClass k, JitCandidate &a, JitCandidate &b) {
    double la = 0, lb = 0;
    const auto &shapes = class_shapes(k);
    for (const fbngrad_bench::Shape &s : shapes) {
        const fbngrad_bench::Inputs &in = fbngrad_bench::get_inputs(cell.dtype, cell.layout, s);
        std::vector<uint8_t> xb(size_t(in.elements) * fbngrad::ref::dtype_size(cell.dtype));
        std::vector<float> sb(size_t(s.c)), ob(size_t(s.c));
        std::vector<double> ta, tb;
        for (int round = 0; round < 5; ++round) {
            ta.push_back(median_ms(a, in, xb, sb, ob));
            tb.push_back(median_ms(b, in, xb, sb, ob));
        }
        std::sort(ta.begin(), ta.end());
        std::sort(tb.begin(), tb.end());
        la += std::log(ta[2]);
        lb += std::log(tb[2]);
    }
    const double n = double(shapes.size());
    return {std::exp(la / n), std::exp(lb / n)};
}

// The class's winner: the screening's fastest eligible candidates, best first,
// each confirmed against the hand schedule by an interleaved comparison (the
// screening times candidates one after another, and a drifting machine could
// crown a lucky one); the first that stays min_gain faster wins, else the hand.
void decide(const Cell &cell, fbngrad::ShapeClass k, const std::vector<Candidate> &cands,
            std::vector<std::unique_ptr<JitCandidate>> &kernels, double min_gain, CellResult &cr) {
    const char *kname = fbngrad::shape_class_name(k);
    const size_t hand = 0;  // candidates_for puts the hand schedule first
    if (!kernels[hand] || !cr.candidates[hand].ms.count(kname)) return;  // rejected: reported, nothing decided
    std::vector<size_t> order;
    for (size_t i = 1; i < cands.size(); ++i)
        if (kernels[i] && cands[i].eligible && cr.candidates[i].ms.count(kname) &&
            cr.candidates[i].ms[kname] * (1.0 + min_gain) < cr.candidates[hand].ms[kname])
            order.push_back(i);
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return cr.candidates[a].ms[kname] < cr.candidates[b].ms[kname]; });
    nlohmann::json d = {{"winner", "hand"}, {"hand_ms", cr.candidates[hand].ms[kname]},
                        {"tuned_ms", cr.candidates[hand].ms[kname]}};
    for (size_t j = 0; j < order.size() && j < 3; ++j) {
        const auto [hand_ms, cand_ms] = interleaved_ms(cell, k, *kernels[hand], *kernels[order[j]]);
        if (cand_ms * (1.0 + min_gain) < hand_ms) {
            d = {{"winner", cands[order[j]].id}, {"hand_ms", hand_ms}, {"tuned_ms", cand_ms}};
            break;
        }
        fmt::print("    {} {}: {} not confirmed ({:.4f} ms against the hand schedule's {:.4f})\n", cell.key(), kname,
                   cands[order[j]].id, cand_ms, hand_ms);
    }
    cr.decided[kname] = d;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    CLI::App app{"fbngrad_tune: search the schedule space of fbngrad's kernels on this machine and write the "
                 "schedule table the build reads (docs/tuning.md)"};
    app.add_option("--isa", o.isa, "ISA to tune (default: the best this CPU has)");
    app.add_option("--out", o.out, "schedule table to write (default: <source>/generators/tuned/<isa>.json)");
    app.add_option("--state", o.state, "state file for --resume (default: <out>.state.jsonl)");
    app.add_option("--budget", o.budget, "stop starting new work after this long (90s, 30m, 1h)")->capture_default_str();
    app.add_option("--dtypes", o.dtypes, "f32 f16 bf16")->delimiter(',')->capture_default_str();
    app.add_option("--layouts", o.layouts, "nhwc nchw")->delimiter(',')->capture_default_str();
    app.add_option("--modes", o.modes, "train infer")->delimiter(',')->capture_default_str();
    app.add_option("--classes", o.classes, "small_c small_nhw cache dram huge (src/shape_class.h)")
        ->delimiter(',')
        ->capture_default_str();
    app.add_flag("--merge", o.merge,
                 "keep the entries of the table at --out that this run does not tune (other cells or classes)");
    app.add_option("--min-gain", o.min_gain, "a winner must beat the hand schedule by this fraction")
        ->capture_default_str();
    app.add_option("--extra-generator", o.extra_generators,
                   "also try this registered generator as a candidate (checked and timed, never a winner: the "
                   "tuner's own test passes a deliberately wrong one)");
    app.add_flag("--no-autoschedulers", o.no_autoschedulers, "leave out Halide's autoschedulers");
    auto *resume = app.add_flag("--resume", o.resume, "continue the run recorded in the state file");
    app.add_flag("--fresh", o.fresh, "discard the state file and start over")->excludes(resume);
    CLI11_PARSE(app, argc, argv);

    try {
        if (o.isa.empty()) {
            const fbngrad_variant_info *best = fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU);
            if (!best) throw std::runtime_error("no variant runs here (is FBNGRAD_ISA set to something this CPU lacks?)");
            o.isa = best->isa;
        }
        if (!isa_targets().count(o.isa)) throw std::runtime_error("this build has no ISA named " + o.isa);
        fbngrad_status st;
        if (fbngrad_force_isa(o.isa.c_str(), &st) != FBNGRAD_OK)
            throw std::runtime_error("cannot tune " + o.isa + " here: " + st.message);
        const std::string target = isa_targets().at(o.isa) + "-strict_float";
        const double budget_s = parse_duration(o.budget);
        if (o.out.empty()) o.out = std::string(FBNGRAD_SOURCE_DIR) + "/generators/tuned/" + o.isa + ".json";
        if (o.state.empty()) o.state = o.out + ".state.jsonl";
        if (std::filesystem::exists(o.state)) {
            if (o.fresh) std::filesystem::remove(o.state);
            else if (!o.resume)
                throw std::runtime_error("a state file from an earlier run exists: " + o.state +
                                         "; pass --resume to continue it or --fresh to start over");
        }

        std::vector<Cell> cells;
        for (const std::string &d : o.dtypes)
            for (const std::string &l : o.layouts)
                for (const std::string &m : o.modes) {
                    Cell c;
                    if (!parse_dtype(d, &c.dtype)) throw std::runtime_error("unknown dtype " + d);
                    if (!parse_layout(l, &c.layout)) throw std::runtime_error("unknown layout " + l);
                    if (m != "train" && m != "infer") throw std::runtime_error("unknown mode " + m);
                    c.training = m == "train";
                    cells.push_back(c);
                }
        std::vector<fbngrad::ShapeClass> classes;
        for (const std::string &k : o.classes) {
            fbngrad::ShapeClass sc;
            if (!fbngrad::parse_shape_class(k.c_str(), &sc)) throw std::runtime_error("unknown shape class " + k);
            classes.push_back(sc);
        }

        const std::vector<std::string> autos = o.no_autoschedulers ? std::vector<std::string>{}
                                                                   : load_autoschedulers(target);
        // Read before any work, so that a table that cannot be merged stops the run now.
        std::optional<nlohmann::json> earlier;
        if (o.merge) earlier = read_table_to_merge(o.out, o.isa);
        const nlohmann::json *keep = earlier ? &*earlier : nullptr;
        StateFile state(o.state);
        const Machine machine = describe_machine(o.isa, target);
        fmt::print("fbngrad_tune: {} ({}), {} cores, Halide {}\n  target {}\n  autoschedulers: {}\n  state {}\n",
                   o.isa, machine.cpu, machine.cores, machine.halide, target,
                   autos.empty() ? std::string("none") : fmt::format("{}", fmt::join(autos, ", ")), o.state);

        const auto t0 = Clock::now();
        size_t todo = 0, finished = 0;
        for (const Cell &c : cells) todo += state.done(c.key()) ? 0 : 1;
        fmt::print("  {} cells, {} already done, budget {}\n", cells.size(), cells.size() - todo, eta(budget_s));
        bool out_of_budget = false;
        for (const Cell &cell : cells) {
            if (state.done(cell.key())) continue;
            if (seconds_since(t0) >= budget_s) {
                out_of_budget = true;
                break;
            }
            const auto tc = Clock::now();
            const std::vector<Candidate> cands = candidates_for(cell.layout, cell.training, autos, o.extra_generators);
            CellResult cr;
            cr.cell = cell.key();
            for (const Candidate &c : cands) {
                CandidateResult r;
                r.id = c.id;
                r.eligible = c.eligible;
                if (!c.knobs.empty()) r.schedule["knobs"] = c.knobs;
                if (!c.autoscheduler.empty()) r.schedule["autoscheduler"] = c.autoscheduler;
                if (r.schedule.is_null()) r.schedule = nlohmann::json::object();
                cr.candidates.push_back(r);
            }
            fmt::print("[{}/{}] {}: compiling and checking {} candidates on {} edge shapes\n", finished + 1, todo,
                       cell.key(), cands.size(), edge_shapes().size());
            std::fflush(stdout);
            std::vector<std::unique_ptr<JitCandidate>> kernels =
                compile_and_check(cell, cands, target, state, cr.candidates);
            for (const CandidateResult &r : cr.candidates)
                if (r.status != "ok") fmt::print("    rejected {}: {}\n", r.id, r.reason);

            for (fbngrad::ShapeClass k : classes) {
                const char *kname = fbngrad::shape_class_name(k);
                std::vector<double> log_sum(cands.size(), 0.0);
                const auto &shapes = class_shapes(k);
                for (const fbngrad_bench::Shape &s : shapes) {
                    const fbngrad_bench::Inputs &in = fbngrad_bench::get_inputs(cell.dtype, cell.layout, s);
                    std::vector<uint8_t> xb(size_t(in.elements) * fbngrad::ref::dtype_size(cell.dtype));
                    std::vector<float> sb(size_t(s.c)), ob(size_t(s.c));
                    for (size_t i = 0; i < cands.size(); ++i) {
                        if (!kernels[i]) continue;
                        try {
                            log_sum[i] += std::log(median_ms(*kernels[i], in, xb, sb, ob));
                        } catch (const std::exception &e) {
                            cr.candidates[i].status = "rejected";
                            cr.candidates[i].reason = fmt::format("on {}: {}", fbngrad_bench::shape_name(s), e.what());
                            kernels[i].reset();
                        }
                    }
                }
                for (size_t i = 0; i < cands.size(); ++i)
                    if (kernels[i]) cr.candidates[i].ms[kname] = std::exp(log_sum[i] / double(shapes.size()));
                decide(cell, k, cands, kernels, o.min_gain, cr);
            }
            state.cell_done(cr);
            ++finished;
            const double per_cell = seconds_since(t0) / double(finished);
            fmt::print("    done in {}; {} cells left, about {} to go (budget left {})\n", eta(seconds_since(tc)),
                       todo - finished, eta(per_cell * double(todo - finished)),
                       eta(std::max(0.0, budget_s - seconds_since(t0))));
            write_table(o.out, machine, state, o.min_gain, budget_s, seconds_since(t0), keep);
            std::fflush(stdout);
        }
        write_table(o.out, machine, state, o.min_gain, budget_s, seconds_since(t0), keep);

        // Before/after: the hand schedule against each class's winner.
        fmt::print("\n{:<18} {:<10} {:>10} {:>10} {:>8}  {}\n", "cell", "class", "hand ms", "tuned ms", "speedup",
                   "winner");
        for (const Winner &w : winners(state, o.min_gain))
            fmt::print("{:<18} {:<10} {:>10.4f} {:>10.4f} {:>7.2f}x  {}\n", w.cell, w.klass, w.hand_ms, w.best_ms,
                       w.hand_ms / w.best_ms, w.id);
        fmt::print("\nwrote {}: {} cells in the table, {} tuned by this run\n", o.out, state.cells().size(), finished);
        if (out_of_budget) {
            fmt::print("budget of {} reached: {} cells not tuned; rerun with --resume to continue\n", eta(budget_s),
                       todo - finished);
            return 3;
        }
        return 0;
    } catch (const std::exception &e) {
        fmt::print(stderr, "fbngrad_tune: {}\n", e.what());
        return 2;
    }
}
