// PyTorch's ATen (Debian libtorch-dev 1.13, optional): at::native_batch_norm_backward, the
// CPU kernel behind torch.nn.functional.batch_norm's backward. Training passes the batch
// statistics as save_mean and save_invstd = 1/sqrt(var + epsilon) (computed in float outside
// the timed loop, as the forward would have saved them); inference (train=false) passes them
// as running_mean / running_var with epsilon, which ATen turns into the same inv.
// NHWC is ATen's channels-last memory format, NCHW its contiguous one. The input tensors
// wrap the bench's buffers (at::from_blob, no copies); the outputs are allocated by ATen on
// every call, as in PyTorch itself.
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/ops/native_batch_norm_backward.h>

#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "peer.h"

namespace fbngrad_bench {
namespace {

at::ScalarType scalar_type(fbngrad_dtype d) {
    switch (d) {
    case FBNGRAD_FLOAT16: return at::kHalf;
    case FBNGRAD_BFLOAT16: return at::kBFloat16;
    default: return at::kFloat;
    }
}

// A [N,C,H,W] view of a dense tensor in `layout`.
at::Tensor view4(const void *data, fbngrad_dtype dtype, fbngrad_layout layout, const Shape &s) {
    const std::vector<int64_t> sizes{s.n, s.c, s.h, s.w};
    const std::vector<int64_t> strides = layout == FBNGRAD_NHWC
                                             ? std::vector<int64_t>{s.h * s.w * s.c, 1, s.w * s.c, s.c}
                                             : std::vector<int64_t>{s.c * s.h * s.w, s.h * s.w, s.w, 1};
    return at::from_blob(const_cast<void *>(data), sizes, strides, at::TensorOptions().dtype(scalar_type(dtype)));
}

at::Tensor vec(const float *data, int64_t c) {
    return at::from_blob(const_cast<float *>(data), {c}, at::TensorOptions().dtype(at::kFloat));
}

class AtenRunner : public Runner {
public:
    AtenRunner(const Inputs &in, const Case &cs, Outputs &o) : cs_(cs) {
        dy_ = view4(in.dy.data(), in.dtype, in.layout, in.s);
        x_ = view4(in.x.data(), in.dtype, in.layout, in.s);
        scale_ = vec(in.scale.data(), in.s.c);
        mean_ = vec(in.mean.data(), in.s.c);
        var_ = vec(in.var.data(), in.s.c);
        invstd_.resize(in.s.c);
        for (int64_t c = 0; c < in.s.c; ++c) invstd_[c] = 1.0f / std::sqrt(in.var[c] + kEpsilon);
        invstd_t_ = vec(invstd_.data(), in.s.c);
        (void)o;
    }
    bool run(std::string *err) override {
        try {
            if (cs_.training)
                out_ = at::native_batch_norm_backward(dy_, x_, scale_, c10::nullopt, c10::nullopt, mean_, invstd_t_,
                                                      true, kEpsilon, {true, true, true});
            else
                out_ = at::native_batch_norm_backward(dy_, x_, scale_, mean_, var_, c10::nullopt, c10::nullopt,
                                                      false, kEpsilon, {true, true, true});
            return true;
        } catch (const c10::Error &e) {
            *err = std::string("ATen: ") + e.what_without_backtrace();
            return false;
        }
    }
    bool fetch(Outputs &o, std::string *err) override {
        try {
            const auto format =
                cs_.layout == FBNGRAD_NHWC ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
            at::Tensor dx = std::get<0>(out_).contiguous(format);
            at::Tensor sb = std::get<1>(out_).to(at::kFloat).contiguous();
            at::Tensor ob = std::get<2>(out_).to(at::kFloat).contiguous();
            if (dx.scalar_type() != scalar_type(cs_.dtype) || size_t(dx.nbytes()) != o.dx.size() ||
                size_t(sb.numel()) != o.sb.size() || size_t(ob.numel()) != o.ob.size()) {
                *err = "ATen: unexpected output types or sizes";
                return false;
            }
            std::memcpy(o.dx.data(), dx.data_ptr(), o.dx.size());
            std::memcpy(o.sb.data(), sb.data_ptr<float>(), o.sb.size() * sizeof(float));
            std::memcpy(o.ob.data(), ob.data_ptr<float>(), o.ob.size() * sizeof(float));
            return true;
        } catch (const c10::Error &e) {
            *err = std::string("ATen: ") + e.what_without_backtrace();
            return false;
        }
    }
    std::string label() const override { return "ATen " + std::string(cs_.layout == FBNGRAD_NHWC ? "channels_last" : "contiguous"); }

private:
    Case cs_;
    at::Tensor dy_, x_, scale_, mean_, var_, invstd_t_;
    std::vector<float> invstd_;
    std::tuple<at::Tensor, at::Tensor, at::Tensor> out_;
};

std::string unsupported(const Case &cs) {
    // Asks ATen once per (dtype, layout, mode), on a small problem: 1.13 lacks some dtypes
    // on CPUs or wants the parameters in the input's dtype (the bench's are float32).
    static std::map<std::tuple<int, int, bool>, std::string> answers;
    auto key = std::make_tuple(int(cs.dtype), int(cs.layout), cs.training);
    auto it = answers.find(key);
    if (it != answers.end()) return it->second;
    Case small = cs;
    small.shape = Shape{2, 3, 3, 8};
    const Inputs &in = get_inputs(cs.dtype, cs.layout, small.shape);
    Outputs o;
    o.dx.assign(in.dy.size(), 0);
    o.sb.assign(small.shape.c, 0.0f);
    o.ob.assign(small.shape.c, 0.0f);
    AtenRunner r(in, small, o);
    std::string err;
    if (!r.run(&err) || !r.fetch(o, &err)) return answers.emplace(key, err).first->second;
    return answers.emplace(key, "").first->second;
}

}  // namespace

Peer aten_peer() {
    return {"aten", unsupported,
            [](const Inputs &in, const Case &cs, Outputs &o, std::string *) -> std::unique_ptr<Runner> {
                return std::make_unique<AtenRunner>(in, cs, o);
            },
            [](int n) { at::set_num_threads(n); },
            false};
}

}  // namespace fbngrad_bench
