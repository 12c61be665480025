// The split-phase C API (fbngrad.h, "split phase"): validation, the empty
// cases, the call into the reduce / apply variant the dispatcher picks, and
// the plumbing of its errors into fbngrad_status. Same shape as api.cpp, and
// the same CUDA handling (cuda_call.h): CUDA tensors, the sums included, are
// the caller's device pointers, used in place on the call's context and
// stream, so the sums stay on the device for an allreduce there (NCCL); the
// count is a host int64 in both cases.
#include <algorithm>
#include <exception>
#include <optional>
#include <string>

#include "cuda_call.h"
#include "fbngrad/fbngrad.h"
#include "halide_glue.h"
#include "kernel_args.h"
#include "split_phase_dispatch.h"
#include "validate_split_phase.h"

using namespace fbngrad;

namespace {

// A buffer whose host pointer is NULL makes a Halide pipeline answer a bounds
// query instead of computing. An empty shard's tensors may have no memory at
// all; the kernel reads none of it, but it needs some pointer to run (on
// CUDA too, where the pointer is taken as a device address never dereferenced).
void *runnable(void *data) {
    static uint8_t nothing;
    return data ? data : &nothing;
}

fbngrad_code zeros_done(fbngrad_status *status, const std::string &err) {
    return err.empty() ? set_status(status, FBNGRAD_OK, "") : set_status(status, FBNGRAD_INTERNAL, err);
}

}  // namespace

extern "C" {

fbngrad_code fbngrad_split_phase_reduce(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x,
                                        const fbngrad_tensor *reserve_space_1, fbngrad_tensor *sum_dy,
                                        fbngrad_tensor *sum_dyxc, int64_t *count, fbngrad_status *status) {
    try {
        CheckedProblem p;
        std::string msg;
        fbngrad_code code = validate_reduce(y_backprop, x, reserve_space_1, sum_dy, sum_dyxc, count, &p, &msg);
        if (code != FBNGRAD_OK) return set_status(status, code, msg);
        const bool on_cuda = p.device == FBNGRAD_CUDA;
        runtime::CallContext ctx;
        code = begin_call(on_cuda, &ctx, status);
        if (code != FBNGRAD_OK) return code;
        ctx.elements = p.elements;

        // An empty shard adds nothing to the sums: no kernel, as for the fused op.
        if (p.elements == 0) {
            *count = p.N * p.S;
            return zeros_done(status, zero_channels(on_cuda, ctx, p.C, {sum_dy->data, sum_dyxc->data}));
        }

        fbngrad_code why = FBNGRAD_NOT_FOUND;
        const ReduceVariant *v = select_reduce_variant(p.dtype, p.layout, p.device, &msg, &why);
        if (!v) return set_status(status, why, msg);

        runtime::install_halide_handlers();
        if (!on_cuda) ctx.use_thread_scratch();
        const halide_type_t T = halide_type(p.dtype);
        const int32_t C = int32_t(p.C);
        Tensor3 dy(y_backprop->data, T, p), xx(x->data, T, p), mean(reserve_space_1->data, C);
        Tensor3 sdy(sum_dy->data, C), sdyxc(sum_dyxc->data, C);
        on_device(on_cuda, {&dy, &xx, &mean, &sdy, &sdyxc});
        int rc = v->fn(&ctx, &dy.buf, &xx.buf, &mean.buf, &sdy.buf, &sdyxc.buf);
        if (rc != 0) return kernel_failed(status, v->name, rc, ctx);
        *count = p.N * p.S;
        return set_status(status, FBNGRAD_OK, "");
    } catch (const std::exception &e) {  // e.g. std::bad_alloc: never across the C API
        return set_status(status, FBNGRAD_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return set_status(status, FBNGRAD_INTERNAL, "internal error");
    }
}

fbngrad_code fbngrad_split_phase_apply(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x,
                                       const fbngrad_tensor *scale, const fbngrad_tensor *reserve_space_1,
                                       const fbngrad_tensor *reserve_space_2, const fbngrad_tensor *sum_dy,
                                       const fbngrad_tensor *sum_dyxc, int64_t count, const fbngrad_attrs *attrs,
                                       fbngrad_tensor *x_backprop, fbngrad_tensor *scale_backprop,
                                       fbngrad_tensor *offset_backprop, fbngrad_status *status) {
    try {
        fbngrad_attrs a;
        fbngrad_attrs_init(&a);
        if (attrs) a = *attrs;

        CheckedProblem p;
        std::string msg;
        fbngrad_code code = validate_apply(y_backprop, x, scale, reserve_space_1, reserve_space_2, sum_dy, sum_dyxc,
                                           count, a, x_backprop, scale_backprop, offset_backprop, &p, &msg);
        if (code != FBNGRAD_OK) return set_status(status, code, msg);
        const bool on_cuda = p.device == FBNGRAD_CUDA;
        runtime::CallContext ctx;
        code = begin_call(on_cuda, &ctx, status);
        if (code != FBNGRAD_OK) return code;
        ctx.elements = p.elements;

        // No element anywhere (count = 0, so this shard is empty too): the
        // fused op's empty-batch answer. No channel: nothing to compute.
        if (count == 0 || p.C == 0)
            return zeros_done(status, zero_channels(on_cuda, ctx, p.C, {scale_backprop->data, offset_backprop->data}));

        fbngrad_code why = FBNGRAD_NOT_FOUND;
        const ApplyVariant *v = select_apply_variant(p.dtype, p.layout, a.is_training != 0, p.device, &msg, &why);
        if (!v) return set_status(status, why, msg);

        // This shard may be empty while others are not: the kernel then
        // computes scale_backprop and offset_backprop only. On CUDA an empty
        // x_backprop would be a launch of zero blocks, which the driver refuses
        // (CUDA_ERROR_INVALID_VALUE, seen on an H200): the kernel runs instead
        // on a stand-in shard of one zero row in scratch memory, whose
        // x_backprop is thrown away. scale_backprop and offset_backprop come
        // from the sums alone, so they are the bits a non-empty shard gets.
        runtime::install_halide_handlers();
        if (!on_cuda) ctx.use_thread_scratch();
        const halide_type_t T = halide_type(p.dtype);
        const int32_t C = int32_t(p.C);
        const bool stand_in = on_cuda && p.elements == 0;
        std::optional<runtime::DeviceScratch> scratch;
        CheckedProblem shard = p;  // what the kernel sees
        void *dy_data = runnable(y_backprop->data), *x_data = runnable(x->data);
        void *xb_data = runnable(x_backprop->data);
        if (stand_in) {
            shard.N = shard.S = 1;
            shard.elements = p.C;
            const size_t row_bytes = size_t(p.C) * (T.bits / 8);
            scratch.emplace(ctx, 3 * row_bytes);
            if (!scratch->data())
                return set_status(status, FBNGRAD_INTERNAL, "no scratch row for an empty shard: " + scratch->error());
            uint8_t *base = static_cast<uint8_t *>(scratch->data());
            dy_data = base;
            x_data = base + row_bytes;
            xb_data = base + 2 * row_bytes;
        }
        Tensor3 dy(dy_data, T, shard), xx(x_data, T, shard);
        Tensor3 xb(xb_data, T, shard);
        Tensor3 sc(scale->data, C), mean(reserve_space_1->data, C), rs2(reserve_space_2->data, C);
        Tensor3 sdy(sum_dy->data, C), sdyxc(sum_dyxc->data, C);
        Tensor3 sb(scale_backprop->data, C), ob(offset_backprop->data, C);
        on_device(on_cuda, {&dy, &xx, &xb, &sc, &mean, &rs2, &sdy, &sdyxc, &sb, &ob});
        int rc = v->fn(&ctx, &dy.buf, &xx.buf, &sc.buf, &mean.buf, &rs2.buf, a.epsilon,
                       a.reserve_space_2_is == FBNGRAD_RS2_INVERSE_STD, &sdy.buf, &sdyxc.buf, count, &xb.buf,
                       &sb.buf, &ob.buf);
        if (rc != 0) return kernel_failed(status, v->name, rc, ctx);
        return set_status(status, FBNGRAD_OK, "");
    } catch (const std::exception &e) {
        return set_status(status, FBNGRAD_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return set_status(status, FBNGRAD_INTERNAL, "internal error");
    }
}

}  // extern "C"
