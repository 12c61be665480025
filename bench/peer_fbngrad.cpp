// fbngrad through its C API: "fbngrad" is the dispatcher's pick, "fbngrad-<isa>" the
// dispatch restricted to one ISA of the variant table (fbngrad_force_isa) that this CPU runs,
// and, in a build with tuned schedules (generators/tuned/), "fbngrad-hand": the
// dispatcher's ISA with the hand schedule (fbngrad_force_variant), the "before" of tuning.
// "fbngrad-omp" (in a build with OpenMP) is the dispatcher's pick on a caller's runner,
// README's OpenMP one, as a trainer that owns its threads runs it (PyTorch's intra-op pool
// is OpenMP in Debian's build): the rule's task sizes and the NCHW two-pass route
// (docs/threads.md) instead of what fbngrad's own pool picks for its thread count.
#include <algorithm>
#include <set>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "peer.h"

namespace fbngrad_bench {
namespace {

// The ISA forced at start-up (FBNGRAD_ISA), restored when a forced runner ends.
const std::string &startup_isa() {
    static const std::string isa = fbngrad_forced_isa();
    return isa;
}

class FbngradRunner : public Runner {
public:
    FbngradRunner(const Inputs &in, const Case &cs, Outputs &o) : cs_(cs) {
        std::copy(in.dims, in.dims + 4, dims_);
        const int64_t c[1] = {in.s.c};
        auto t = [&](const void *p, fbngrad_dtype d, int rank, const int64_t *dims) {
            return fbngrad_make_tensor(const_cast<void *>(p), d, rank, dims, in.layout);
        };
        dy_ = t(in.dy.data(), in.dtype, 4, in.dims);
        x_ = t(in.x.data(), in.dtype, 4, in.dims);
        scale_ = t(in.scale.data(), FBNGRAD_FLOAT32, 1, c);
        mean_ = t(in.mean.data(), FBNGRAD_FLOAT32, 1, c);
        var_ = t(in.var.data(), FBNGRAD_FLOAT32, 1, c);
        dx_ = t(o.dx.data(), in.dtype, 4, in.dims);
        sb_ = t(o.sb.data(), FBNGRAD_FLOAT32, 1, c);
        ob_ = t(o.ob.data(), FBNGRAD_FLOAT32, 1, c);
        fbngrad_attrs_init(&attrs_);
        attrs_.epsilon = kEpsilon;
        attrs_.is_training = cs.training ? 1 : 0;
    }
    ~FbngradRunner() override {
        if (forced_) fbngrad_force_isa(startup_isa().c_str(), nullptr);
        if (forced_variant_) fbngrad_force_variant("", nullptr);
        if (on_runner_) fbngrad_set_parallel_for(nullptr, nullptr);
    }
    // Runs the calls on `fn` for the runner's lifetime (benchmarks run one at a time).
    void use_parallel_for(fbngrad_parallel_for_fn fn) {
        fbngrad_set_parallel_for(fn, nullptr);
        on_runner_ = true;
    }
    // Runs the hand-scheduled variant of the case's row for the runner's lifetime.
    bool force_hand_schedule(std::string *err) {
        const fbngrad_variant_info *v = fbngrad_selected_variant(cs_.dtype, cs_.layout, cs_.training, FBNGRAD_CPU);
        fbngrad_status st;
        if (!v || fbngrad_force_variant(v->name, &st) != FBNGRAD_OK) {
            *err = v ? "fbngrad_force_variant: " + std::string(st.message) : "no variant";
            return false;
        }
        forced_variant_ = true;
        return true;
    }
    // Restricts dispatch to `isa` for the runner's lifetime.
    bool force(const std::string &isa, std::string *err) {
        fbngrad_status st;
        if (fbngrad_force_isa(isa.c_str(), &st) != FBNGRAD_OK) {
            *err = "fbngrad_force_isa: " + std::string(st.message);
            return false;
        }
        forced_ = true;
        return true;
    }
    bool run(std::string *err) override {
        fbngrad_status st;
        if (fbngrad_fused_batch_norm_grad_v2(&dy_, &x_, &scale_, &mean_, &var_, &attrs_, &dx_, &sb_, &ob_, &st) ==
            FBNGRAD_OK)
            return true;
        *err = st.message;
        return false;
    }
    std::string label() const override {
        const fbngrad_variant_info *v =
            fbngrad_selected_variant_for_shape(cs_.dtype, cs_.layout, cs_.training, FBNGRAD_CPU, 4, dims_);
        return v ? v->name : "(no variant)";
    }

private:
    Case cs_;
    int64_t dims_[4];
    bool forced_ = false, forced_variant_ = false, on_runner_ = false;
    fbngrad_tensor dy_, x_, scale_, mean_, var_, dx_, sb_, ob_;
    fbngrad_attrs attrs_;
};

#ifdef _OPENMP
// README's OpenMP runner; its team is omp_set_num_threads' (the peer's set_threads).
int omp_runner(void *, int32_t count, fbngrad_task_fn task, void *task_ctx) {
    int first = 0;
#pragma omp parallel for schedule(dynamic, 1)
    for (int32_t i = 0; i < count; ++i) {
        const int rc = task(task_ctx, i);
        if (rc) {
#pragma omp critical
            if (!first) first = rc;
        }
    }
    return first;
}
#endif

}  // namespace

std::vector<Peer> fbngrad_peers() {
    startup_isa();
    std::vector<std::string> isas;  // the CPU ISAs of the variant table this CPU runs, in table order
    std::set<std::string> seen;
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (v && v->device == FBNGRAD_CPU && v->supported && seen.insert(v->isa).second) isas.push_back(v->isa);
    }
    bool tuned = false;
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i)
        tuned |= fbngrad_variant(i)->supported && *fbngrad_variant(i)->shape_classes != 0;
    // A selective build (docs/edge-builds.md) registers only the rows it built.
    auto supported = [](const Case &cs) {
        for (int32_t i = 0; i < fbngrad_variant_count(); ++i) {
            const fbngrad_variant_info *v = fbngrad_variant(i);
            if (v->device == FBNGRAD_CPU && v->dtype == cs.dtype && v->layout == cs.layout &&
                (v->is_training != 0) == cs.training)
                return std::string();
        }
        return std::string("left out of this build of fbngrad");
    };
    auto threads = [](int n) { fbngrad_set_num_threads(n); };
    std::vector<Peer> out;
    out.push_back({"fbngrad", supported,
                   [](const Inputs &in, const Case &cs, Outputs &o, std::string *) -> std::unique_ptr<Runner> {
                       return std::make_unique<FbngradRunner>(in, cs, o);
                   },
                   threads, true, true});
#ifdef _OPENMP
    out.push_back({"fbngrad-omp", supported,
                   [](const Inputs &in, const Case &cs, Outputs &o, std::string *) -> std::unique_ptr<Runner> {
                       auto r = std::make_unique<FbngradRunner>(in, cs, o);
                       r->use_parallel_for(omp_runner);
                       return r;
                   },
                   [](int n) { omp_set_num_threads(n); }, true, false});
#endif
    for (const std::string &isa : isas)
        out.push_back({"fbngrad-" + isa, supported,
                       [isa](const Inputs &in, const Case &cs, Outputs &o, std::string *err) -> std::unique_ptr<Runner> {
                           auto r = std::make_unique<FbngradRunner>(in, cs, o);
                           if (!r->force(isa, err)) return nullptr;
                           return r;
                       },
                       threads, true, true});
    if (tuned)
        out.push_back({"fbngrad-hand", supported,
                       [](const Inputs &in, const Case &cs, Outputs &o, std::string *err) -> std::unique_ptr<Runner> {
                           auto r = std::make_unique<FbngradRunner>(in, cs, o);
                           if (!r->force_hand_schedule(err)) return nullptr;
                           return r;
                       },
                       threads, true, true});
    return out;
}

}  // namespace fbngrad_bench
