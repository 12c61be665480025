// libFuzzer target over the C API: fbngrad_fused_batch_norm_grad_v2 and the
// split-phase pair (reduce, apply) with tensor views decoded from the input
// (fuzz_case.h), built with AddressSanitizer and UndefinedBehaviorSanitizer
// (tools/ci/40-reliability.sh). Any input must give one of two outcomes, and
// anything else aborts (a crash for libFuzzer, which keeps the input):
//   - success: the outputs match the double-precision reference
//     (fbngrad::ref), a second call gives the same bits, the inputs are
//     unchanged, and the split-phase pair gives the fused op's bits;
//   - an error: a known status code other than FBNGRAD_INTERNAL, a non-empty
//     NUL-terminated message, and every output byte untouched.
// Memory: a view whose shape holds more than kAllocCap elements but not
// more than the API's limit is shrunk to at most kAllocCap (so the fuzzer
// stays fast); a view the API must reject outright (a negative dimension, an
// invalid rank, more than 2^31 - 2^16 elements) gets a 1-byte buffer, so that
// AddressSanitizer reports any read of it before validation has rejected it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"
#include "fuzz_c_calls.h"
#include "fuzz_case.h"
#include "reference.h"

using namespace fbngrad;
using namespace fbngrad::fuzz;

namespace {

constexpr int64_t kAllocCap = 4096;
constexpr int64_t kApiMaxElements = 2147418112;  // src/validate.h kMaxElements: 2^31 - 2^16

[[noreturn]] void bug(const std::string &what) {
    std::fprintf(stderr, "fuzz_c_api: BUG: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

bool valid_dtype(int32_t d) { return d == FBNGRAD_FLOAT32 || d == FBNGRAD_FLOAT16 || d == FBNGRAD_BFLOAT16; }

// The element count of a view, saturated at kApiMaxElements + 1; -1 when the
// rank or a dimension is invalid.
int64_t view_elements(const fbngrad_tensor &t) {
    if (t.rank < 0 || t.rank > FBNGRAD_MAX_RANK) return -1;
    int64_t e = 1;
    bool zero = false, big = false;
    for (int d = 0; d < t.rank; ++d) {
        const int64_t n = t.shape[d];
        if (n < 0) return -1;
        if (n == 0) zero = true;
        else if (big || e > kApiMaxElements / n) big = true;
        else e *= n;
    }
    return zero ? 0 : big ? kApiMaxElements + 1 : e;
}

// Halves the largest dimension until the view fits kAllocCap (same shapes
// shrink the same way, so x and y_backprop still agree).
void shrink_to_cap(fbngrad_tensor &t) {
    for (int64_t e = view_elements(t); e > kAllocCap && e <= kApiMaxElements; e = view_elements(t)) {
        int big = 0;
        for (int d = 1; d < t.rank; ++d)
            if (t.shape[d] > t.shape[big]) big = d;
        t.shape[big] /= 2;
    }
}

struct Buffer {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size = 0;
    void allocate(size_t n) {
        bytes.reset(new uint8_t[n]);  // exactly n: AddressSanitizer flags any access past it
        size = n;
    }
    std::vector<uint8_t> copy() const { return std::vector<uint8_t>(bytes.get(), bytes.get() + size); }
    bool equals(const std::vector<uint8_t> &v) const { return v.size() == size && std::equal(v.begin(), v.end(), bytes.get()); }
};

constexpr uint8_t kSentinel = 0xA5;

// What the inputs did, printed at exit (libFuzzer exits through exit()):
// how many calls succeeded, how many of those were compared with the
// reference, and the errors by code. Shows whether the fuzzer reaches the kernels.
struct Outcomes {
    long calls = 0, ok = 0, compared = 0, split_phase = 0, by_code[16] = {0};
    ~Outcomes() {
        if (!calls) return;
        std::fprintf(stderr,
                     "fuzz_c_api: %ld fused calls: %ld succeeded (%ld compared with the reference), "
                     "errors: invalid argument %ld, not found %ld, unimplemented %ld, unavailable %ld; "
                     "%ld split-phase pairs\n",
                     calls, ok, compared, by_code[FBNGRAD_INVALID_ARGUMENT], by_code[FBNGRAD_NOT_FOUND],
                     by_code[FBNGRAD_UNIMPLEMENTED], by_code[FBNGRAD_UNAVAILABLE], split_phase);
    }
} outcomes;

// The views of one call, with storage.
struct Call {
    fbngrad_tensor t[kNumTensors];
    Buffer buf[kNumTensors];
    const fbngrad_tensor *ptr(int i) const { return null_[i] ? nullptr : &t[i]; }
    fbngrad_tensor *mut(int i) { return null_[i] ? nullptr : &t[i]; }
    bool null_[kNumTensors] = {false};
};

void prepare(Call &call, const Case &c, ByteReader &data) {
    // The buffers here are host memory. Without a GPU a tensor on FBNGRAD_CUDA
    // is rejected (FBNGRAD_UNAVAILABLE), which is worth fuzzing; with one, the
    // kernels would take host pointers for device pointers, so CUDA becomes
    // CPU there (tests/cuda tests the GPU path with device memory).
    static const bool gpu = fbngrad_cuda_available() != 0;
    for (int i = 0; i < kNumTensors; ++i) {
        fbngrad_tensor &t = call.t[i];
        t = c.t[i];
        if (gpu && get_raw(t.device) == FBNGRAD_CUDA) set_raw(t.device, FBNGRAD_CPU);
        call.null_[i] = c.tensor_null[i];
        shrink_to_cap(t);
        const int32_t dt = get_raw(t.dtype);
        const int64_t n = view_elements(t);
        const size_t esize = valid_dtype(dt) ? size_t(ref::dtype_size(fbngrad_dtype(dt))) : 4;
        if (n < 0 || n > kApiMaxElements) call.buf[i].allocate(1);
        else call.buf[i].allocate(size_t(n) * esize);
        t.data = c.data_null[i] ? nullptr : call.buf[i].bytes.get();
        Buffer &b = call.buf[i];
        if (i >= kXb || n < 0 || n > kApiMaxElements) {
            std::fill_n(b.bytes.get(), b.size, kSentinel);
        } else if (valid_dtype(dt)) {
            for (int64_t j = 0; j < n; ++j) ref::store(fbngrad_dtype(dt), b.bytes.get(), j, value_of(data.u8()));
        } else {
            for (size_t j = 0; j < b.size; ++j) b.bytes[j] = data.u8();
        }
    }
}

std::string describe(const Call &call, const fbngrad_attrs &a, bool attrs_null) {
    std::string s;
    for (int i = 0; i < kNumTensors; ++i) {
        const fbngrad_tensor &t = call.t[i];
        s += std::string("  ") + tensor_name(i) + (call.null_[i] ? ": NULL view\n" : ": ");
        if (call.null_[i]) continue;
        s += "dtype " + std::to_string(get_raw(t.dtype)) + " layout " + std::to_string(get_raw(t.layout)) +
             " device " + std::to_string(get_raw(t.device)) + " rank " + std::to_string(t.rank) + " shape [";
        for (int d = 0; d < FBNGRAD_MAX_RANK; ++d) s += (d ? "," : "") + std::to_string(t.shape[d]);
        s += std::string("] data ") + (t.data ? "set" : "NULL") + "\n";
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "  attrs%s: epsilon %g is_training %d reserve_space_2_is %d\n",
                  attrs_null ? " (NULL: defaults)" : "", double(a.epsilon), a.is_training,
                  get_raw(a.reserve_space_2_is));
    return s + buf;
}

// The status contract: a known code, the same in *status, a NUL-terminated
// message that is empty exactly on success. FBNGRAD_INTERNAL is a bug: a call
// that validation let through and a kernel rejected.
void check_status(const char *what, int rc, const fbngrad_status *st, const std::string &context) {
    if (rc != FBNGRAD_OK && rc != FBNGRAD_INVALID_ARGUMENT && rc != FBNGRAD_NOT_FOUND &&
        rc != FBNGRAD_UNIMPLEMENTED && rc != FBNGRAD_UNAVAILABLE)
        bug(std::string(what) + " returned code " + std::to_string(rc) +
            (st ? std::string(": ") + std::string(st->message, strnlen(st->message, FBNGRAD_MESSAGE_CAPACITY)) : "") +
            "\n" + context);
    if (!st) return;
    if (get_raw(st->code) != rc) bug(std::string(what) + ": status->code differs from the return value\n" + context);
    if (!std::memchr(st->message, 0, FBNGRAD_MESSAGE_CAPACITY))
        bug(std::string(what) + ": the message is not NUL-terminated\n" + context);
    if ((rc == FBNGRAD_OK) != (st->message[0] == '\0'))
        bug(std::string(what) + ": code " + std::to_string(rc) + " with message \"" + st->message + "\"\n" + context);
}

void check_untouched(const char *what, const Call &call, const std::vector<uint8_t> before[], int first, int last,
                     const std::string &context) {
    for (int i = first; i <= last; ++i)
        if (!call.buf[i].equals(before[i]))
            bug(std::string(what) + " failed but changed " + tensor_name(i) + "\n" + context);
}

void reset_status(fbngrad_status &st) {
    std::memset(&st, 0x5A, sizeof st);  // no NUL anywhere: the callee must write one
}

// Whether the reference's error bounds apply. They model float32 rounding
// (relative errors), not gradual underflow: a product of subnormal float32
// values loses absolute precision the bounds do not allow for, so inputs
// holding float32 subnormals are run (and must not crash) but not compared.
// And each channel's inv = 1/sqrt(var + eps) (or rs2), as the kernel computes
// it: when one is infinite or huge, float32 and double round the sums
// differently enough to change signs and NaN-ness downstream (inf * 0); NaN
// propagates identically and is compared.
bool well_conditioned(const ref::Problem &p) {
    auto subnormal = [](double v) { return v != 0 && std::fabs(v) < double(std::numeric_limits<float>::min()); };
    for (int64_t i = 0; i < p.elements(); ++i)
        if (subnormal(ref::load(p.dtype, p.y_backprop, i)) || subnormal(ref::load(p.dtype, p.x, i))) return false;
    for (int64_t c = 0; c < p.channels(); ++c) {
        if (subnormal(p.scale[c]) || subnormal(p.mean[c]) || subnormal(p.reserve_space_2[c])) return false;
        const float inv = p.rs2_is_inverse_std ? p.reserve_space_2[c] : 1.0f / std::sqrt(p.reserve_space_2[c] + p.epsilon);
        if (!std::isnan(inv) && !(std::fabs(inv) <= 1e4f)) return false;
    }
    return true;
}

int run_fused(Call &call, const fbngrad_attrs *attrs, fbngrad_status *st) {
    return fbngrad_fused_batch_norm_grad_v2(call.ptr(kDy), call.ptr(kX), call.ptr(kScale), call.ptr(kMean),
                                            call.ptr(kRs2), attrs, call.mut(kXb), call.mut(kSb), call.mut(kOb), st);
}

// The inputs' values (the first 64 of each), for a wrong-result report.
std::string dump_values(const ref::Problem &p) {
    std::string s;
    auto row = [&](const char *name, fbngrad_dtype dt, const void *data, int64_t n) {
        s += std::string("  ") + name + ":";
        for (int64_t i = 0; i < std::min<int64_t>(n, 64); ++i) s += " " + std::to_string(ref::load(dt, data, i));
        s += "\n";
    };
    row("y_backprop", p.dtype, p.y_backprop, p.elements());
    row("x", p.dtype, p.x, p.elements());
    row("scale", FBNGRAD_FLOAT32, p.scale, p.channels());
    row("reserve_space_1", FBNGRAD_FLOAT32, p.mean, p.channels());
    row("reserve_space_2", FBNGRAD_FLOAT32, p.reserve_space_2, p.channels());
    return s;
}

// On success: the reference, the same bits again, unchanged inputs.
void check_success(Call &call, const fbngrad_attrs &a, const fbngrad_attrs *attrs, const std::vector<uint8_t> before[],
                   const std::string &context) {
    for (int i = kDy; i <= kRs2; ++i)
        if (!call.buf[i].equals(before[i])) bug(std::string("the op wrote its input ") + tensor_name(i) + "\n" + context);
    const fbngrad_tensor &x = call.t[kX];
    ref::Problem p;
    p.dtype = fbngrad_dtype(get_raw(x.dtype));
    p.layout = fbngrad_layout(get_raw(x.layout));
    p.rank = x.rank;
    for (int d = 0; d < x.rank; ++d) p.shape[d] = x.shape[d];
    p.y_backprop = call.t[kDy].data;
    p.x = x.data;
    p.scale = static_cast<const float *>(call.t[kScale].data);
    p.mean = static_cast<const float *>(call.t[kMean].data);
    p.reserve_space_2 = static_cast<const float *>(call.t[kRs2].data);
    p.epsilon = a.epsilon;
    p.is_training = a.is_training != 0;
    p.rs2_is_inverse_std = get_raw(a.reserve_space_2_is) == FBNGRAD_RS2_INVERSE_STD;
    if (well_conditioned(p)) {
        ++outcomes.compared;
        ref::Expected e = ref::compute(p);
        // The reference bounds a sum's rounding error statistically, (16 + 2 sqrt(M)) u sum|t|,
        // right for the suite's random data. Fuzzed data can be adversarial: one huge term
        // and many equal ones round the same way at every step, so the errors add up
        // linearly (found by the fuzzer: M = 60, 0.33 off where the bound said 0.32). The
        // worst case of any summation order, (16 + M) u sum|t|, holds for all inputs:
        // the tolerances are widened by that ratio (at most 28x for M <= 4096).
        const double M = double(p.elements()) / double(std::max<int64_t>(p.channels(), 1));
        const double widen = std::max(1.0, (16.0 + M) / (16.0 + 2.0 * std::sqrt(M)));
        for (std::vector<double> *tol : {&e.x_backprop_tol, &e.scale_backprop_tol, &e.offset_backprop_tol})
            for (double &t : *tol) t *= widen;
        const ref::Comparison cmp = ref::compare(p, e, call.t[kXb].data, static_cast<const float *>(call.t[kSb].data),
                                                 static_cast<const float *>(call.t[kOb].data));
        if (!cmp.ok())
            bug("wrong result (" + std::to_string(cmp.mismatches) + " mismatches, first " + cmp.first_mismatch +
                ")\n" + context + "\n" + dump_values(p));
    }
    // The same inputs give the same bits (same ISA, same thread count).
    std::vector<uint8_t> first[kNumTensors];
    for (int i = kXb; i < kNumTensors; ++i) first[i] = call.buf[i].copy();
    for (int i = kXb; i < kNumTensors; ++i) std::fill_n(call.buf[i].bytes.get(), call.buf[i].size, kSentinel);
    fbngrad_status st;
    const int rc = run_fused(call, attrs, &st);
    if (rc != FBNGRAD_OK) bug("the second identical call failed: " + std::string(st.message) + "\n" + context);
    for (int i = kXb; i < kNumTensors; ++i)
        if (!call.buf[i].equals(first[i])) bug(std::string("a second identical call changed ") + tensor_name(i) + "\n" + context);
}

// The split-phase pair on the same views: reduce into [C] sums, apply with a
// count derived from the reduced one. With the reduced count the outputs must
// be the fused op's bits; with fewer elements than the shard it must fail.
void check_split_phase(Call &call, const Settings &s, const fbngrad_attrs *attrs, int fused_rc,
                       const std::vector<uint8_t> fused_out[], const std::string &context) {
    fbngrad_tensor sums[2] = {call.t[kSb], call.t[kSb]};
    Buffer sum_buf[2];
    for (int k = 0; k < 2; ++k) {
        sum_buf[k].allocate(call.buf[kSb].size);
        std::fill_n(sum_buf[k].bytes.get(), sum_buf[k].size, kSentinel);
        sums[k].data = call.t[kSb].data ? sum_buf[k].bytes.get() : nullptr;
    }
    fbngrad_status st;
    reset_status(st);
    int64_t count = -12345;
    const int rc_reduce = fbngrad_split_phase_reduce(call.ptr(kDy), call.ptr(kX), call.ptr(kMean), &sums[0], &sums[1],
                                                     &count, s.status_null ? nullptr : &st);
    check_status("fbngrad_split_phase_reduce", rc_reduce, s.status_null ? nullptr : &st, context);
    if (rc_reduce != FBNGRAD_OK) {
        if (count != -12345) bug("a failed reduce wrote count\n" + context);
        for (int k = 0; k < 2; ++k)
            for (size_t j = 0; j < sum_buf[k].size; ++j)
                if (sum_buf[k].bytes[j] != kSentinel) bug("a failed reduce wrote its sums\n" + context);
    }
    const int64_t local = rc_reduce == FBNGRAD_OK ? count : 0;
    int64_t apply_count = s.count_mode == 0 ? local : s.count_mode == 1 ? local + 1 : s.count_mode == 2 ? local - 1 : s.raw_count;

    // Apply writes into the outputs again; restore the sentinels first.
    for (int i = kXb; i < kNumTensors; ++i) std::fill_n(call.buf[i].bytes.get(), call.buf[i].size, kSentinel);
    std::vector<uint8_t> before[kNumTensors];
    for (int i = kXb; i < kNumTensors; ++i) before[i] = call.buf[i].copy();
    reset_status(st);
    const int rc = fbngrad_split_phase_apply(call.ptr(kDy), call.ptr(kX), call.ptr(kScale), call.ptr(kMean),
                                             call.ptr(kRs2), &sums[0], &sums[1], apply_count, attrs, call.mut(kXb),
                                             call.mut(kSb), call.mut(kOb), s.status_null ? nullptr : &st);
    check_status("fbngrad_split_phase_apply", rc, s.status_null ? nullptr : &st, context);
    if (rc != FBNGRAD_OK) check_untouched("fbngrad_split_phase_apply", call, before, kXb, kOb, context);
    if (fused_rc != FBNGRAD_OK && rc == FBNGRAD_OK)
        bug("split-phase apply accepted what the fused op rejected\n" + context);
    if (fused_rc != FBNGRAD_OK || rc_reduce != FBNGRAD_OK) return;
    if (apply_count < local && rc == FBNGRAD_OK) bug("apply accepted a count below the shard's elements\n" + context);
    if (apply_count >= local && rc != FBNGRAD_OK)
        bug("apply rejected a call the fused op accepted: " + std::string(s.status_null ? "" : st.message) + "\n" + context);
    // The same bits as the fused op's hand-scheduled variant, except that a NaN may be
    // another NaN: where both operands of an add are NaN, which payload survives follows
    // the operand order the compiler chose. A tuned fused variant (generators/tuned/)
    // may sum in other blocks: then only the reference check of the fused call applies.
    const fbngrad_tensor &x = call.t[kX];
    const fbngrad_variant_info *picked = fbngrad_selected_variant_for_shape(
        x.dtype, x.layout, attrs ? attrs->is_training : 1, x.device, x.rank, x.shape);
    if (picked && *picked->shape_classes) return;
    auto same_values = [](fbngrad_dtype dt, const Buffer &a, const std::vector<uint8_t> &b) {
        if (a.size != b.size()) return false;
        const size_t esize = size_t(ref::dtype_size(dt));
        for (size_t j = 0; j < a.size / esize; ++j)
            if (std::memcmp(a.bytes.get() + j * esize, b.data() + j * esize, esize) != 0 &&
                !(std::isnan(ref::load(dt, a.bytes.get(), int64_t(j))) && std::isnan(ref::load(dt, b.data(), int64_t(j)))))
                return false;
        return true;
    };
    if (s.count_mode == 0)
        for (int i = kXb; i < kNumTensors; ++i) {
            const fbngrad_dtype dt = i == kXb ? fbngrad_dtype(get_raw(call.t[kXb].dtype)) : FBNGRAD_FLOAT32;
            if (!same_values(dt, call.buf[i], fused_out[i]))
                bug(std::string("reduce + apply differ from the fused op in ") + tensor_name(i) + "\n" + context);
        }
}

// Process-wide settings from the input; a failed force must change nothing.
void apply_settings(const Settings &s) {
    static const char *kIsas[] = {"", "sse41", "avx2", "avx512"};
    const std::string before = fbngrad_forced_isa();
    fbngrad_status st;
    reset_status(st);
    const char *name = s.bad_isa ? s.bad_isa_name : kIsas[s.isa_choice];
    const int rc = fbngrad_force_isa(name, &st);
    check_status("fbngrad_force_isa", rc, &st, std::string("  isa \"") + name + "\"");
    if (rc != FBNGRAD_OK && before != fbngrad_forced_isa()) bug("a failed fbngrad_force_isa changed the forced ISA");
    fbngrad_set_num_threads(s.threads);
}

// The small query functions, with raw values (called from C: fuzz_c_calls.c).
void check_queries(const Call &call, const fbngrad_attrs &a) {
    const fbngrad_tensor &x = call.t[kX];
    const fbngrad_variant_info *v =
        fuzz_selected_variant(get_raw(x.dtype), get_raw(x.layout), a.is_training, get_raw(x.device));
    const bool valid = valid_dtype(get_raw(x.dtype)) && (get_raw(x.layout) == FBNGRAD_NHWC || get_raw(x.layout) == FBNGRAD_NCHW);
    if (v && !valid) bug("fbngrad_selected_variant answered for an invalid dtype or layout");
    if (fbngrad_variant(x.rank) != nullptr) {
        if (x.rank < 0 || x.rank >= fbngrad_variant_count()) bug("fbngrad_variant answered out of range");
    } else if (x.rank >= 0 && x.rank < fbngrad_variant_count()) {
        bug("fbngrad_variant gave NULL in range");
    }
    if (!fuzz_make_tensor(x.rank, x.shape)) bug("fbngrad_make_tensor changed the rank");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ByteReader r(data, size);
    const Case c = decode(r);
    apply_settings(c.settings);

    Call call;
    prepare(call, c, r);
    fbngrad_attrs defaults;
    fbngrad_attrs_init(&defaults);
    const fbngrad_attrs *attrs = c.settings.attrs_null ? nullptr : &c.attrs;
    const fbngrad_attrs &a = attrs ? *attrs : defaults;
    const std::string context = describe(call, a, c.settings.attrs_null) + "  forced ISA \"" + fbngrad_forced_isa() + "\"";

    std::vector<uint8_t> before[kNumTensors];
    for (int i = 0; i < kNumTensors; ++i) before[i] = call.buf[i].copy();
    fbngrad_status st;
    reset_status(st);
    fbngrad_status *stp = c.settings.status_null ? nullptr : &st;
    const int rc = run_fused(call, attrs, stp);
    check_status("fbngrad_fused_batch_norm_grad_v2", rc, stp, context);
    ++outcomes.calls;
    ++outcomes.by_code[rc & 15];
    if (rc == FBNGRAD_OK) ++outcomes.ok;
    if (rc == FBNGRAD_OK) check_success(call, a, attrs, before, context);
    else check_untouched("fbngrad_fused_batch_norm_grad_v2", call, before, kXb, kOb, context);

    if (c.settings.split_phase) {
        std::vector<uint8_t> fused_out[kNumTensors];
        for (int i = kXb; i < kNumTensors; ++i) fused_out[i] = call.buf[i].copy();
        check_split_phase(call, c.settings, attrs, rc, fused_out, context);
        ++outcomes.split_phase;
    }
    check_queries(call, a);
    fbngrad_force_isa(nullptr, nullptr);
    return 0;
}
