// The consumer's own Halide pipeline: out(i) = 2 * in(i), float32.
#include "Halide.h"

namespace {

class Twice : public Halide::Generator<Twice> {
public:
    Input<Buffer<float, 1>> in{"in"};
    Output<Buffer<float, 1>> out{"out"};

    void generate() {
        Halide::Var i("i");
        out(i) = 2.0f * in(i);
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Twice, twice)
