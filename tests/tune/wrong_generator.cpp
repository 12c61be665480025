// Deliberately wrong generators for the tuner's test (tests/tune/test_tuner.py):
// the product's interface and schedule, with one defect each that a tuner
// must catch on its edge shapes and never keep.
#include "fbng_generator.h"

namespace fbng {
namespace {

// Divides the sums by one element too many: x_backprop off by ~1/M in
// training (inference does not use the count: there it is right).
class WrongCount : public FusedBatchNormGradT<WrongCount> {
public:
    void adjust_inputs(BnGradInputs &in) { in.count = in.count + 1; }
};

// Reads scale 0.1% too large: x_backprop wrong in both modes, by far less
// than a careless eye would see and far more than the dtype's tolerance.
class WrongScale : public FusedBatchNormGradT<WrongScale> {
public:
    void adjust_inputs(BnGradInputs &in) {
        Halide::Func scaled("scaled");
        Halide::Var c;
        scaled(c) = in.scale(c) * 1.001f;
        in.scale = scaled;
    }
};

}  // namespace
}  // namespace fbng

HALIDE_REGISTER_GENERATOR(fbng::WrongCount, fbngrad_wrong_count)
HALIDE_REGISTER_GENERATOR(fbng::WrongScale, fbngrad_wrong_scale)
