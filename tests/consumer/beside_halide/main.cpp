// One program, two Halide runtimes: the consumer's (twice.runtime, what
// HalideRuntime.h's functions resolve to here) and fbngrad's private one
// inside libfbngrad.a. Checks that both pipelines work and that neither
// runtime sees the other's settings.
#include <cstdio>
#include <string>

#include "HalideBuffer.h"
#include "HalideRuntime.h"
#include "fbngrad/fbngrad.h"
#include "twice.h"

namespace {

int failures = 0;
std::string consumer_errors;  // what the consumer's own Halide error handler received

void expect(bool ok, const std::string &what) {
    std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

void consumer_error_handler(void *, const char *msg) { consumer_errors += msg ? msg : "?"; }

// Training, NHWC [1,1,2,1], worked out by hand (see tests/consumer/cmake_cpp/main.cpp):
// x_backprop = (-0.75, 0.75), scale_backprop = 1, offset_backprop = 4.
bool run_fbngrad(const char *when) {
    float dy[2] = {1, 3}, x[2] = {1, 3}, scale[1] = {2}, mean[1] = {2}, inv_std[1] = {0.5f};
    float dx[2] = {0, 0}, dscale[1] = {0}, doffset[1] = {0};
    const int64_t s4[4] = {1, 1, 2, 1}, s1[1] = {1};
    fbngrad_tensor t_dy = fbngrad_make_tensor(dy, FBNGRAD_FLOAT32, 4, s4, FBNGRAD_NHWC);
    fbngrad_tensor t_x = fbngrad_make_tensor(x, FBNGRAD_FLOAT32, 4, s4, FBNGRAD_NHWC);
    fbngrad_tensor t_scale = fbngrad_make_tensor(scale, FBNGRAD_FLOAT32, 1, s1, FBNGRAD_NHWC);
    fbngrad_tensor t_mean = fbngrad_make_tensor(mean, FBNGRAD_FLOAT32, 1, s1, FBNGRAD_NHWC);
    fbngrad_tensor t_rs2 = fbngrad_make_tensor(inv_std, FBNGRAD_FLOAT32, 1, s1, FBNGRAD_NHWC);
    fbngrad_tensor t_dx = fbngrad_make_tensor(dx, FBNGRAD_FLOAT32, 4, s4, FBNGRAD_NHWC);
    fbngrad_tensor t_dscale = fbngrad_make_tensor(dscale, FBNGRAD_FLOAT32, 1, s1, FBNGRAD_NHWC);
    fbngrad_tensor t_doffset = fbngrad_make_tensor(doffset, FBNGRAD_FLOAT32, 1, s1, FBNGRAD_NHWC);
    fbngrad_attrs attrs;
    fbngrad_attrs_init(&attrs);
    attrs.reserve_space_2_is = FBNGRAD_RS2_INVERSE_STD;
    fbngrad_status st;
    fbngrad_code rc = fbngrad_fused_batch_norm_grad_v2(&t_dy, &t_x, &t_scale, &t_mean, &t_rs2, &attrs, &t_dx,
                                                       &t_dscale, &t_doffset, &st);
    bool ok = rc == FBNGRAD_OK && dx[0] == -0.75f && dx[1] == 0.75f && dscale[0] == 1.0f && doffset[0] == 4.0f;
    expect(ok, std::string("fbngrad ") + when + ": status " + std::to_string(rc) + " \"" + st.message +
                   "\", x_backprop (" + std::to_string(dx[0]) + ", " + std::to_string(dx[1]) + ")");
    return ok;
}

}  // namespace

int main() {
    halide_set_error_handler(consumer_error_handler);
    halide_set_num_threads(2);

    // fbngrad installs its own error handler and sets its own thread count...
    run_fbngrad("before the consumer's pipeline");
    fbngrad_set_num_threads(7);

    // ...in its own runtime: the consumer's settings are unchanged.
    const int previous = halide_set_num_threads(2);
    expect(previous == 2, "the consumer's runtime still has 2 threads after fbngrad_set_num_threads(7), got " +
                              std::to_string(previous));
    expect(fbngrad_set_num_threads(0) == 7, "fbngrad's runtime has the 7 threads it was given");

    Halide::Runtime::Buffer<float, 1> in(5), out(5);
    for (int i = 0; i < 5; ++i) in(i) = float(i) - 1.5f;
    int rc = twice(in, out);
    bool twice_ok = rc == 0;
    for (int i = 0; i < 5; ++i) twice_ok = twice_ok && out(i) == 2.0f * in(i);
    expect(twice_ok, "the consumer's pipeline computes 2*in (rc " + std::to_string(rc) + ")");

    // A bad call of the consumer's pipeline reaches the consumer's handler,
    // not fbngrad's (which would keep the message to itself).
    Halide::Runtime::Buffer<int32_t, 1> wrong_type(5);
    rc = twice(in, wrong_type.raw_buffer());
    expect(rc != 0 && !consumer_errors.empty(),
           "a bad call fails (rc " + std::to_string(rc) + ") and the consumer's handler got: \"" + consumer_errors +
               "\"");

    run_fbngrad("after the consumer's pipeline");

    if (failures) {
        std::printf("%d check(s) failed\n", failures);
        return 1;
    }
    std::printf("beside_halide: fbngrad and a separate Halide pipeline work side by side\n");
    return 0;
}
