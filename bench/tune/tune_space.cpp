#include "tune_space.h"

#include <stdexcept>

namespace fbngrad_tune {

using fbngrad::ShapeClass;
using fbngrad_bench::Shape;

const char *dtype_short(fbngrad_dtype d) {
    return d == FBNGRAD_FLOAT32 ? "f32" : d == FBNGRAD_FLOAT16 ? "f16" : "bf16";
}
const char *layout_short(fbngrad_layout l) { return l == FBNGRAD_NHWC ? "nhwc" : "nchw"; }

bool parse_dtype(const std::string &s, fbngrad_dtype *d) {
    for (fbngrad_dtype t : {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16})
        if (s == dtype_short(t)) return (*d = t), true;
    return false;
}
bool parse_layout(const std::string &s, fbngrad_layout *l) {
    for (fbngrad_layout t : {FBNGRAD_NHWC, FBNGRAD_NCHW})
        if (s == layout_short(t)) return (*l = t), true;
    return false;
}

std::string Cell::key() const {
    return std::string(dtype_short(dtype)) + "/" + layout_short(layout) + "/" + (training ? "train" : "infer");
}

const std::vector<Shape> &class_shapes(ShapeClass k) {
    // Two shapes a class, from ResNet-50 and mobile networks at N = 32 (or as
    // near as keeps them in the class): enough to rank schedules, few enough
    // that a whole run stays within a 30-minute budget on 2 cores.
    static const std::vector<Shape> small_c = {{32, 56, 56, 3}, {32, 28, 28, 8}};
    static const std::vector<Shape> small_nhw = {{32, 7, 7, 512}, {8, 7, 7, 1024}};
    static const std::vector<Shape> cache = {{32, 14, 14, 128}, {16, 28, 28, 64}};
    static const std::vector<Shape> dram = {{32, 56, 56, 64}, {32, 28, 28, 256}};
    static const std::vector<Shape> huge = {{32, 112, 112, 64}, {32, 56, 56, 256}};
    static const std::vector<const std::vector<Shape> *> by_class = {&small_c, &small_nhw, &cache, &dram, &huge};
    static const bool checked = [] {
        if (by_class.size() != size_t(fbngrad::kShapeClassCount))
            throw std::logic_error("tune_space: a class has no shapes");
        for (int i = 0; i < fbngrad::kShapeClassCount; ++i) {
            const std::vector<Shape> &v = *by_class[size_t(i)];
            for (const Shape &s : v)
                for (int bytes : {2, 4})
                    if (fbngrad::classify_shape(s.c, s.n * s.h * s.w, bytes) != ShapeClass(i))
                        throw std::logic_error("tune_space: shape " + fbngrad_bench::shape_name(s) +
                                               " is not of class " + fbngrad::shape_class_name(ShapeClass(i)));
        }
        return true;
    }();
    (void)checked;
    return *by_class.at(size_t(k));
}

const std::vector<Shape> &edge_shapes() {
    // rows = N*H*W and C around 4/8/16 lanes (x2, x4 with vector_multiple),
    // the 64..1024-row blocks and 16..256-row tasks, and NCHW planes around
    // the 4096..65536-element tasks.
    static const std::vector<Shape> v = {
        {1, 1, 1, 1},   {1, 1, 1, 17},  {2, 3, 5, 3},     {1, 7, 9, 16},   {3, 5, 7, 17},  {1, 17, 31, 4},
        {2, 16, 16, 64}, {1, 1, 257, 8}, {2, 2, 3, 2048}, {2, 23, 29, 5},  {1, 65, 65, 33}, {3, 1, 1, 65},
    };
    return v;
}

std::vector<Candidate> candidates_for(fbngrad_layout layout, bool training,
                                      const std::vector<std::string> &autoschedulers,
                                      const std::vector<std::string> &extra_generators) {
    std::vector<Candidate> cs;
    cs.push_back(Candidate{"hand"});
    // sum_pass_order: 1 = the samples in order, 2 = last first (schedule.h).
    // The hand schedule (0: sums_last_sample_first's CPU default) is last-first
    // in training, in order in inference; its knobs are not tried twice (NHWC).
    auto order_suffix = [](int o) { return o == 2 ? std::string("_rev") : std::string(); };
    const int hand_order = training ? 2 : 1;
    if (layout == FBNGRAD_NHWC) {
        for (int order : {1, 2})
            for (int vm : {1, 2})
                for (int rpb : {128, 256, 1024})
                    for (int rpt : {16, 64, 256}) {
                        if (order == hand_order && vm == 1 && rpb == 256 && rpt == 64) continue;
                        Candidate c;
                        c.id = "vm" + std::to_string(vm) + "_rpb" + std::to_string(rpb) + "_rpt" +
                               std::to_string(rpt) + order_suffix(order);
                        c.knobs = {{"vector_multiple", vm}, {"rows_per_block", rpb}, {"rows_per_task", rpt},
                                   {"sum_pass_order", order}};
                        cs.push_back(c);
                    }
        // fuse_passes = 2 (inference only): each block of rows' sums beside its
        // x_backprop; rows_per_task does not apply, the sum order does not matter.
        if (!training)
            for (int vm : {1, 2})
                for (int rpb : {256, 1024}) {
                    Candidate c;
                    c.id = "onepass_vm" + std::to_string(vm) + "_rpb" + std::to_string(rpb);
                    c.knobs = {{"fuse_passes", 2}, {"vector_multiple", vm}, {"rows_per_block", rpb}};
                    cs.push_back(c);
                }
    } else {
        // fuse_passes: 2 (the hand schedule's default on x86) computes a block of
        // channels at a time, its sums then its x_backprop, and the sum order does not
        // matter to the cache; 1 is the two-pass schedule, where it does. A one pass
        // offers at most C tasks, and only one of vector_multiple 1 (the split
        // phase's) has the two-pass route that meets the many-core rule where a
        // channel exceeds a task (src/two_pass_route.h): a wider one won the
        // AVX2 `huge` class once (1.32x under the JIT), which would give NCHW 32,112,112,64
        // 64 tasks on a caller's runner where the rule asks for 256.
        for (int vm : {1, 2, 4})
            for (int ept : {4096, 16384, 65536}) {
                const std::string knobs = "vm" + std::to_string(vm) + "_ept" + std::to_string(ept);
                if (vm == 1 && ept != 16384) {
                    Candidate c;
                    c.id = "onepass_" + knobs;
                    c.knobs = {{"fuse_passes", 2}, {"vector_multiple", vm}, {"elements_per_task", ept}};
                    cs.push_back(c);
                }
                for (int order : {1, 2}) {
                    Candidate c;
                    c.id = knobs + order_suffix(order);
                    c.knobs = {{"fuse_passes", 1}, {"vector_multiple", vm}, {"elements_per_task", ept},
                               {"sum_pass_order", order}};
                    cs.push_back(c);
                }
            }
    }
    for (const std::string &a : autoschedulers) {
        Candidate c;
        c.id = a;
        c.autoscheduler = a;
        cs.push_back(c);
    }
    for (const std::string &g : extra_generators) {
        Candidate c;
        c.id = "gen:" + g;
        c.generator = g;
        c.eligible = false;
        cs.push_back(c);
    }
    return cs;
}

}  // namespace fbngrad_tune
