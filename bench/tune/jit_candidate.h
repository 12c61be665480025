// One candidate schedule, compiled with Halide's JIT for the tuned target and
// run on the bench's inputs: the same generator (and so the same algorithm
// and Halide lowering) the AOT build uses, without a build per candidate.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench_inputs.h"
#include "tune_space.h"

namespace fbngrad_tune {

class JitCandidate {
public:
    // Compiles `c` for `cell` on `target` (a Halide target string without
    // "jit"). Throws std::runtime_error with Halide's message when it cannot.
    JitCandidate(const Candidate &c, const Cell &cell, const std::string &target);
    ~JitCandidate();
    JitCandidate(const JitCandidate &) = delete;
    JitCandidate &operator=(const JitCandidate &) = delete;

    // Runs once on `in`, writing x_backprop (in the cell's dtype) and the
    // per-channel outputs. Throws std::runtime_error on a pipeline error.
    void run(const fbngrad_bench::Inputs &in, void *x_backprop, float *scale_backprop, float *offset_backprop);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Loads the autoscheduler plugins found next to libHalide (name -> path, from
// the build); returns the names that loaded. Anderson2021 is for GPU targets
// and is left out on a CPU target.
std::vector<std::string> load_autoschedulers(const std::string &target);

}  // namespace fbngrad_tune
