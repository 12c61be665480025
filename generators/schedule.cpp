// Which schedule file a target gets. The fused and the split-phase generators
// all come here, so a new target family is added once, for all of them.
#include "schedule.h"

using namespace Halide;

namespace fbng {

void schedule_for_target(BnGradFuncs &f, BnGradOutputs &out, const Target &t, const Knobs &k) {
    // A GPU target is a CPU target too (the host code's arch): check the GPU first.
    if (t.has_gpu_feature()) {
        schedule_cuda(f, out, t);
    } else if (t.arch == Target::X86) {
        schedule_x86(f, out, t, k);
    } else if (t.arch == Target::ARM && t.bits == 64) {
        schedule_arm(f, out, t, k);
    } else {
        throw CompileError("fbngrad has no schedule for target " + t.to_string());
    }
}

}  // namespace fbng
