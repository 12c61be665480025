// One schedule entry point per target family. Each schedules the Funcs that
// define_algorithm() built, and nothing else: the algorithm stays in algorithm.cpp.
#pragma once

#include "algorithm.h"

namespace fbng {

// Schedule knobs, exposed as GeneratorParams so that a build (or a tuner) can
// set them from CMake PARAMS without touching code. 0 means "the target's default".
struct Knobs {
    int vector_multiple = 0;  // vector width = multiple * natural float32 lanes
    int rows_per_block = 0;   // NHWC: rows summed per partial-sum block (the rfactor split)
    int rows_per_task = 0;    // NHWC: rows of x_backprop per parallel task
};

struct BnGradOutputs {
    Halide::Func x_backprop, scale_backprop, offset_backprop;
};

void schedule_x86(BnGradFuncs &f, BnGradOutputs &out, const Halide::Target &t, const Knobs &k);

}  // namespace fbng
