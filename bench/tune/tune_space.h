// What the tuner searches: the cells (dtype x layout x mode), the shape
// classes with the shapes that stand for them, the edge shapes every
// candidate must get right, and the candidates (the generator's schedule
// knobs, Halide's autoschedulers, extra generators for the tuner's own test).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bench_inputs.h"
#include "shape_class.h"

namespace fbngrad_tune {

struct Cell {
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    bool training;
    std::string key() const;  // "f32/nhwc/train": the table's and the state file's key
};

// Short names as the variant table spells them: f32 f16 bf16, nhwc nchw, train infer.
const char *dtype_short(fbngrad_dtype d);
const char *layout_short(fbngrad_layout l);
bool parse_dtype(const std::string &s, fbngrad_dtype *d);
bool parse_layout(const std::string &s, fbngrad_layout *l);

// Shapes (logical N, H, W, C) that stand for a class; each classifies as that
// class in every dtype (tune_space.cpp checks it at start-up).
const std::vector<fbngrad_bench::Shape> &class_shapes(fbngrad::ShapeClass k);

// Below, at and above the vector widths and every knob's tile (P11: a
// schedule that fails on a small shape must never be kept).
const std::vector<fbngrad_bench::Shape> &edge_shapes();

struct Candidate {
    std::string id;                   // "hand", "vm2_rpb1024_rpt64", "Mullapudi2016", "gen:<name>"
    std::string generator = "fused_batch_norm_grad";
    std::map<std::string, int> knobs;  // GeneratorParams; empty: the hand schedule's defaults
    std::string autoscheduler;        // Halide autoscheduler plugin name, or ""
    bool eligible = true;             // may win (the AOT build has its generator)
};

// The candidates for a layout and mode: the hand schedule first, then the knob grid,
// then one per autoscheduler in `autoschedulers`, then the extra generators.
std::vector<Candidate> candidates_for(fbngrad_layout layout, bool training,
                                      const std::vector<std::string> &autoschedulers,
                                      const std::vector<std::string> &extra_generators);

}  // namespace fbngrad_tune
