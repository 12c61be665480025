// A C++ program built against the installed fbngrad package (fbngrad.hpp).
// It runs the op on a problem small enough to work out by hand, checks a bad
// call's error, and checks that the library is the version the package says.
#include <cstdio>
#include <cstring>
#include <string>

#include "fbngrad/fbngrad.hpp"

namespace {

int failures = 0;

void expect(bool ok, const std::string &what) {
    std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

}  // namespace

int main() {
    using namespace fbngrad;
    // Training, NHWC [1,1,2,1]: dy = (1, 3), x = (1, 3), mean 2, scale 2 and
    // reserve_space_2 = 1/sqrt(var + eps) = 0.5 given directly (inverse_std).
    // M = 2, sum_dy = 4, sum_dy*(x-mean) = 2, so
    //   x_backprop = 2*0.5*(dy - 4/2 - (x-2)*0.25*2/2) = (-0.75, 0.75),
    //   scale_backprop = 2*0.5 = 1, offset_backprop = 4; all exact in float.
    float dy[2] = {1, 3}, x[2] = {1, 3}, scale[1] = {2}, mean[1] = {2}, inv_std[1] = {0.5f};
    float dx[2] = {0, 0}, dscale[1] = {0}, doffset[1] = {0};
    TensorView tdy(dy, DType::Float32, {1, 1, 2, 1}), tx(x, DType::Float32, {1, 1, 2, 1});
    TensorView tscale(scale, DType::Float32, {1}), tmean(mean, DType::Float32, {1}),
        trs2(inv_std, DType::Float32, {1});
    TensorView tdx(dx, DType::Float32, {1, 1, 2, 1}), tdscale(dscale, DType::Float32, {1}),
        tdoffset(doffset, DType::Float32, {1});
    Attrs attrs;
    attrs.reserve_space_2_is = ReserveSpace2::InverseStd;
    Status s = fused_batch_norm_grad_v2(tdy, tx, tscale, tmean, trs2, attrs, tdx, tdscale, tdoffset);
    expect(s.ok(), "the op succeeds: " + s.message());
    expect(dx[0] == -0.75f && dx[1] == 0.75f,
           "x_backprop = (-0.75, 0.75), got (" + std::to_string(dx[0]) + ", " + std::to_string(dx[1]) + ")");
    expect(dscale[0] == 1.0f, "scale_backprop = 1, got " + std::to_string(dscale[0]));
    expect(doffset[0] == 4.0f, "offset_backprop = 4, got " + std::to_string(doffset[0]));

    // A 3-D x is an error (TensorFlow's wording), and leaves the outputs alone.
    TensorView bad(x, DType::Float32, {1, 2, 1});
    dscale[0] = 42;
    s = fused_batch_norm_grad_v2(bad, bad, tscale, tmean, trs2, attrs, tdx, tdscale, tdoffset);
    expect(s.code() == FBNGRAD_INVALID_ARGUMENT && s.message() == "input must be 4 or 5-dimensional[1,2,1]",
           "a 3-D input is INVALID_ARGUMENT: \"" + s.message() + "\"");
    expect(dscale[0] == 42.0f, "a failed call leaves its outputs untouched");

    expect(std::strcmp(fbngrad_version(), FBNGRAD_PACKAGE_VERSION) == 0,
           std::string("fbngrad_version() ") + fbngrad_version() + " == package version " + FBNGRAD_PACKAGE_VERSION);
    expect(!variants().empty() && !selected_variant(DType::Float32, Layout::NHWC, true).empty(),
           "variants compiled: " + std::to_string(variants().size()) + ", selected here: " +
               selected_variant(DType::Float32, Layout::NHWC, true));

    if (failures) {
        std::printf("%d check(s) failed\n", failures);
        return 1;
    }
    std::printf("consumer_cpp: all checks passed\n");
    return 0;
}
