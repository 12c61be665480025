// fbngrad through its C API: "fbngrad" is the dispatcher's pick, "fbngrad-<isa>" the
// dispatch restricted to one ISA of the variant table (fbngrad_force_isa) that this CPU runs.
#include <set>

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
        const fbngrad_variant_info *v = fbngrad_selected_variant(cs_.dtype, cs_.layout, cs_.training, FBNGRAD_CPU);
        return v ? v->name : "(no variant)";
    }

private:
    Case cs_;
    bool forced_ = false;
    fbngrad_tensor dy_, x_, scale_, mean_, var_, dx_, sb_, ob_;
    fbngrad_attrs attrs_;
};

}  // namespace

std::vector<Peer> fbngrad_peers() {
    startup_isa();
    std::vector<std::string> isas;  // the CPU ISAs of the variant table this CPU runs, in table order
    std::set<std::string> seen;
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (v && v->device == FBNGRAD_CPU && v->supported && seen.insert(v->isa).second) isas.push_back(v->isa);
    }
    auto supported = [](const Case &) { return std::string(); };
    auto threads = [](int n) { fbngrad_set_num_threads(n); };
    std::vector<Peer> out;
    out.push_back({"fbngrad", supported,
                   [](const Inputs &in, const Case &cs, Outputs &o, std::string *) -> std::unique_ptr<Runner> {
                       return std::make_unique<FbngradRunner>(in, cs, o);
                   },
                   threads, true});
    for (const std::string &isa : isas)
        out.push_back({"fbngrad-" + isa, supported,
                       [isa](const Inputs &in, const Case &cs, Outputs &o, std::string *err) -> std::unique_ptr<Runner> {
                           auto r = std::make_unique<FbngradRunner>(in, cs, o);
                           if (!r->force(isa, err)) return nullptr;
                           return r;
                       },
                       threads, true});
    return out;
}

}  // namespace fbngrad_bench
