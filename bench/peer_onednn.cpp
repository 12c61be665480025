// oneDNN (Debian libdnnl-dev 2.6) batch_normalization_backward, prop_kind::backward with
// use_scale | use_shift: diff_src, diff_scale and diff_shift from src, diff_dst, mean and
// variance. Its math is the op's: inv = 1/sqrt(variance + epsilon) (the variance
// convention of reserve_space_2), diff_scale = sum(dy*(x - mean))*inv, diff_shift = sum(dy);
// training (batch statistics) and inference (use_global_stats: the statistics are
// constants, diff_src = dy*scale*inv) are TF's two modes. The tensors are the bench's own
// buffers (no copies); primitives are created outside the timed loop. float32 and bfloat16
// (bf16 needs avx512_core); oneDNN 2.6 has no float16 batch norm on CPUs.
#include <omp.h>

#include <map>
#include <unordered_map>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

#include "peer.h"

namespace fbngrad_bench {
namespace {

using dnnl::memory;

memory::data_type data_type(fbngrad_dtype d) {
    switch (d) {
    case FBNGRAD_FLOAT32: return memory::data_type::f32;
    case FBNGRAD_BFLOAT16: return memory::data_type::bf16;
    default: return memory::data_type::undef;
    }
}

dnnl::engine &engine() {
    static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    return eng;
}

struct Primitives {
    dnnl::batch_normalization_backward::primitive_desc pd;
    dnnl::batch_normalization_backward prim;
};

// Throws dnnl::error when oneDNN has no implementation for the case.
Primitives make_primitives(const Case &cs, const Shape &s) {
    const memory::desc data(memory::dims{s.n, s.c, s.h, s.w}, data_type(cs.dtype),
                            cs.layout == FBNGRAD_NHWC ? memory::format_tag::nhwc : memory::format_tag::nchw);
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (!cs.training) flags = flags | dnnl::normalization_flags::use_global_stats;
    const dnnl::batch_normalization_forward::primitive_desc hint(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, kEpsilon, flags), engine());
    dnnl::batch_normalization_backward::primitive_desc pd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, data, data, kEpsilon, flags), engine(),
        hint);
    return {pd, dnnl::batch_normalization_backward(pd)};
}

std::string unsupported(const Case &cs) {
    if (data_type(cs.dtype) == memory::data_type::undef) return "oneDNN 2.6 has no float16 batch norm on CPUs";
    // Asks oneDNN once per (dtype, layout, mode), on a small shape.
    static std::map<std::tuple<int, int, bool>, std::string> answers;
    auto key = std::make_tuple(int(cs.dtype), int(cs.layout), cs.training);
    auto it = answers.find(key);
    if (it != answers.end()) return it->second;
    std::string why;
    try {
        make_primitives(cs, Shape{2, 3, 3, 32});
    } catch (const dnnl::error &e) {
        why = std::string("oneDNN has no implementation here: ") + e.what();
    }
    return answers.emplace(key, why).first->second;
}

class OnednnRunner : public Runner {
public:
    OnednnRunner(const Inputs &in, const Case &cs, Outputs &o)
        : p_(make_primitives(cs, in.s)), stream_(engine()), zero_shift_(in.s.c, 0.0f) {
        const memory::desc vec(memory::dims{in.s.c}, memory::data_type::f32, memory::format_tag::a);
        auto mem = [&](const memory::desc &md, const void *p) { return memory(md, engine(), const_cast<void *>(p)); };
        args_ = {{DNNL_ARG_SRC, mem(p_.pd.src_desc(), in.x.data())},
                 {DNNL_ARG_DIFF_DST, mem(p_.pd.diff_dst_desc(), in.dy.data())},
                 {DNNL_ARG_MEAN, mem(vec, in.mean.data())},
                 {DNNL_ARG_VARIANCE, mem(vec, in.var.data())},
                 {DNNL_ARG_SCALE, mem(vec, in.scale.data())},
                 // Not read by the backward pass, but without it oneDNN 2.6 fails to execute
                 // ("could not execute a primitive").
                 {DNNL_ARG_SHIFT, mem(vec, zero_shift_.data())},
                 {DNNL_ARG_DIFF_SRC, mem(p_.pd.diff_src_desc(), o.dx.data())},
                 {DNNL_ARG_DIFF_SCALE, mem(vec, o.sb.data())},
                 {DNNL_ARG_DIFF_SHIFT, mem(vec, o.ob.data())}};
    }
    bool run(std::string *err) override {
        try {
            p_.prim.execute(stream_, args_);
            stream_.wait();
            return true;
        } catch (const dnnl::error &e) {
            *err = std::string("oneDNN: ") + e.what();
            return false;
        }
    }
    std::string label() const override { return p_.pd.impl_info_str(); }

private:
    Primitives p_;
    dnnl::stream stream_;
    std::vector<float> zero_shift_;
    std::unordered_map<int, memory> args_;
};

}  // namespace

Peer onednn_peer() {
    return {"onednn", unsupported,
            [](const Inputs &in, const Case &cs, Outputs &o, std::string *err) -> std::unique_ptr<Runner> {
                try {
                    return std::make_unique<OnednnRunner>(in, cs, o);
                } catch (const dnnl::error &e) {
                    *err = std::string("oneDNN: ") + e.what();
                    return nullptr;
                }
            },
            // oneDNN's CPU runtime here is OpenMP (DNNL_CPU_RUNTIME_OMP in dnnl_config.h).
            [](int n) { omp_set_num_threads(n); },
            false};
}

}  // namespace fbngrad_bench
