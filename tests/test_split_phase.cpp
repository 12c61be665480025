// The split phase (fbngrad.h, "split phase") in one process:
//  - one worker: reduce + apply over the whole batch give the fused op's bits,
//    for every split-phase variant of the table (its ISA forced);
//  - shards: reduce on each shard, the sums added on the host in float32 (what
//    an allreduce does), apply on each shard; the assembled outputs match the
//    double-precision reference within its tolerance, and every shard gets the
//    same scale_backprop / offset_backprop;
//  - edge shapes (empty shards, one sample, C = 1, 5-D) and the error paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.hpp"
#include "problem.h"

using namespace fbngrad;
using namespace fbngrad::test;

namespace {

// ---- helpers ----

// The spatial size (H*W or D*H*W) of the problem's tensors.
int64_t spatial(const TestProblem &tp) {
    const int c_dim = tp.p.layout == FBNGRAD_NHWC ? tp.p.rank - 1 : 1;
    int64_t s = 1;
    for (int d = 1; d < tp.p.rank; ++d)
        if (d != c_dim) s *= tp.p.shape[d];
    return s;
}

std::vector<int64_t> shard_shape(const TestProblem &tp, int64_t n) {
    std::vector<int64_t> s(tp.p.shape, tp.p.shape + tp.p.rank);
    s[0] = n;
    return s;
}

// Views of one shard (samples [n0, n0 + n)) of the full batch's tensors. The
// batch is the outermost dimension in every layout, so a shard is contiguous.
struct Shard {
    fbngrad_tensor dy, x, xb;
    Shard(TestProblem &tp, int64_t n0, int64_t n) {
        int64_t per_sample = 1;
        for (int d = 1; d < tp.p.rank; ++d) per_sample *= tp.p.shape[d];
        const size_t offset = size_t(n0 * per_sample * ref::dtype_size(tp.p.dtype));
        std::vector<int64_t> shape = shard_shape(tp, n);
        dy = fbngrad_make_tensor(tp.dy.data() + offset, tp.p.dtype, tp.p.rank, shape.data(), tp.p.layout);
        x = fbngrad_make_tensor(tp.x.data() + offset, tp.p.dtype, tp.p.rank, shape.data(), tp.p.layout);
        xb = fbngrad_make_tensor(tp.xb.data() + offset, tp.p.dtype, tp.p.rank, shape.data(), tp.p.layout);
    }
};

struct SplitRun {
    std::vector<float> sum_dy, sum_dyxc;     // global
    int64_t count = 0;                       // global
    std::vector<std::vector<float>> sb, ob;  // per shard
};

// Runs the split phase over shards of `split` samples each (their total is the
// batch), writing x_backprop into tp.xb and shard 0's scale/offset_backprop into
// tp.sb / tp.ob. Fails the test on any error.
SplitRun run_split(TestProblem &tp, const std::vector<int64_t> &split) {
    const int64_t C = tp.p.channels();
    SplitRun r;
    r.sum_dy.assign(C, 0.0f);
    r.sum_dyxc.assign(C, 0.0f);
    int64_t n0 = 0;
    for (int64_t n : split) {
        Shard sh(tp, n0, n);
        std::vector<float> sdy(C, -1.0f), sdyxc(C, -1.0f);
        fbngrad_tensor tm = tp.vec(tp.mean.data()), tsdy = tp.vec(sdy.data()), tsdyxc = tp.vec(sdyxc.data());
        int64_t count = -1;
        fbngrad_status st;
        EXPECT_EQ(fbngrad_split_phase_reduce(&sh.dy, &sh.x, &tm, &tsdy, &tsdyxc, &count, &st), FBNGRAD_OK)
            << st.message;
        EXPECT_EQ(count, n * spatial(tp)) << "count is N*spatial of the shard";
        for (int64_t c = 0; c < C; ++c) {  // the allreduce
            r.sum_dy[c] += sdy[c];
            r.sum_dyxc[c] += sdyxc[c];
        }
        r.count += count;
        n0 += n;
    }
    n0 = 0;
    for (int64_t n : split) {
        Shard sh(tp, n0, n);
        std::vector<float> sb(C, -777.0f), ob(C, -777.0f);
        fbngrad_tensor tsc = tp.vec(tp.scale.data()), tm = tp.vec(tp.mean.data()), tv = tp.vec(tp.rs2.data());
        fbngrad_tensor tsdy = tp.vec(r.sum_dy.data()), tsdyxc = tp.vec(r.sum_dyxc.data());
        fbngrad_tensor tsb = tp.vec(sb.data()), tob = tp.vec(ob.data());
        fbngrad_status st;
        EXPECT_EQ(fbngrad_split_phase_apply(&sh.dy, &sh.x, &tsc, &tm, &tv, &tsdy, &tsdyxc, r.count, &tp.attrs, &sh.xb,
                                            &tsb, &tob, &st),
                  FBNGRAD_OK)
            << st.message;
        r.sb.push_back(sb);
        r.ob.push_back(ob);
        n0 += n;
    }
    if (!r.sb.empty()) {
        tp.sb = r.sb[0];
        tp.ob = r.ob[0];
    }
    return r;
}

std::vector<int64_t> in_layout(const std::vector<int64_t> &nsc, fbngrad_layout layout) {
    if (layout == FBNGRAD_NHWC) return nsc;
    std::vector<int64_t> s = {nsc[0], nsc.back()};
    s.insert(s.end(), nsc.begin() + 1, nsc.end() - 1);
    return s;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ---- one worker == the fused op, bit for bit, for every split-phase variant ----

struct ApplyRow {
    const char *name;
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    bool training;
    const char *isa;
};

// The CPU rows (the CUDA ones run on a GPU in tests/test_cuda.cpp, CudaSplitPhase).
const std::vector<ApplyRow> &apply_rows() {
    static const std::vector<ApplyRow> rows = [] {
        std::vector<ApplyRow> r;
#define FBNGRAD_APPLY_VARIANT(name, dtype, layout, training, isa, device) \
    if (device == FBNGRAD_CPU) r.push_back({#name, dtype, layout, training != 0, #isa});
#include "fbngrad_apply_variants.inc"
#undef FBNGRAD_APPLY_VARIANT
        return r;
    }();
    return rows;
}

// Logical shapes N, spatial..., C: below, at and above the vector widths and
// the NHWC tiles (edge_shapes.h: x86 C = 64 sums blocks of 1024 rows, ARM 256), the x86
// NHWC sums specialized for one vector (C = 8) and 3 AVX2 vectors (C = 24), and 5-D.
const std::vector<std::vector<int64_t>> kShapes = {
    {1, 1, 1, 1}, {2, 3, 5, 3}, {3, 5, 7, 17}, {1, 17, 31, 4}, {2, 16, 16, 64}, {1, 41, 25, 64}, {1, 1, 257, 8},
    {2, 5, 13, 24}, {2, 3, 4, 5, 6},
};

struct OneWorkerCase {
    size_t row, shape;
    bool inverse_std;
};

std::string one_worker_name(const testing::TestParamInfo<OneWorkerCase> &info) {
    std::string s = std::string(apply_rows()[info.param.row].name) + "_";
    for (int64_t d : kShapes[info.param.shape]) s += std::to_string(d) + "x";
    s.pop_back();
    return s + (info.param.inverse_std ? "_invstd" : "_var");
}

// Every shape with the variance convention, one with inverse_std too (the
// convention is a run-time select in the same code).
std::vector<OneWorkerCase> one_worker_cases() {
    std::vector<OneWorkerCase> cs;
    for (size_t r = 0; r < apply_rows().size(); ++r) {
        for (size_t s = 0; s < kShapes.size(); ++s) cs.push_back({r, s, false});
        cs.push_back({r, 2, true});
    }
    return cs;
}

// Also the test of Knobs::sum_pass_order: the split phase's reduce sums the
// samples last-first in both modes, the fused inference variants first-first,
// and the sums must still have the same bits (the order of the final sum over
// samples is fixed in algorithm.cpp).
class SplitPhaseOneWorker : public testing::TestWithParam<OneWorkerCase> {
protected:
    void SetUp() override {
        const ApplyRow &v = apply_rows()[GetParam().row];
        fbngrad_status st;
        if (fbngrad_force_isa(v.isa, &st) != FBNGRAD_OK) GTEST_SKIP() << v.name << ": " << st.message;
        // The split phase has the hand schedules' bits: a tuned fused variant
        // (generators/tuned/) may sum in another order, so compare with the
        // hand-scheduled one.
        const fbngrad_variant_info *hand = fbngrad_selected_variant(v.dtype, v.layout, v.training, FBNGRAD_CPU);
        ASSERT_NE(hand, nullptr);
        ASSERT_EQ(fbngrad_force_variant(hand->name, &st), FBNGRAD_OK) << st.message;
    }
    void TearDown() override {
        fbngrad_force_variant("", nullptr);
        fbngrad_force_isa("", nullptr);
    }
};

TEST_P(SplitPhaseOneWorker, GivesTheFusedBits) {
    const ApplyRow &v = apply_rows()[GetParam().row];
    const auto shape = in_layout(kShapes[GetParam().shape], v.layout);
    const uint32_t seed = 11 + uint32_t(GetParam().shape);
    TestProblem fused(v.dtype, v.layout, shape, v.training, GetParam().inverse_std, seed);
    TestProblem split(v.dtype, v.layout, shape, v.training, GetParam().inverse_std, seed);

    fbngrad_status st;
    ASSERT_EQ(fused.run(&st), FBNGRAD_OK) << st.message;
    run_split(split, {split.p.shape[0]});
    EXPECT_EQ(split.xb, fused.xb) << split.describe() << ": x_backprop differs from the fused op's";
    EXPECT_TRUE(same_bits(split.sb, fused.sb)) << split.describe() << ": scale_backprop differs";
    EXPECT_TRUE(same_bits(split.ob, fused.ob)) << split.describe() << ": offset_backprop differs";
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SplitPhaseOneWorker);  // a build without the split phase
INSTANTIATE_TEST_SUITE_P(AllApplyVariants, SplitPhaseOneWorker, testing::ValuesIn(one_worker_cases()),
                         one_worker_name);

TEST(SplitPhaseTable, HasAReduceAndAnApplyForEveryFusedVariant) {
    // The split-phase rows come from the same table: same ISAs (the CUDA row
    // too), dtypes, layouts, modes.
    std::vector<std::string> fused, reduce, apply;
#define FBNGRAD_VARIANT(name, dtype, layout, training, isa, device) \
    fused.push_back(std::to_string(dtype) + "/" + std::to_string(layout) + "/" + std::to_string(training) + "/" #isa);
#include "fbngrad_variants.inc"
#undef FBNGRAD_VARIANT
#define FBNGRAD_REDUCE_VARIANT(name, dtype, layout, isa, device) \
    reduce.push_back(std::to_string(dtype) + "/" + std::to_string(layout) + "/" #isa);
#include "fbngrad_reduce_variants.inc"
#undef FBNGRAD_REDUCE_VARIANT
#define FBNGRAD_APPLY_VARIANT(name, dtype, layout, training, isa, device) \
    apply.push_back(std::to_string(dtype) + "/" + std::to_string(layout) + "/" + std::to_string(training) + "/" #isa);
#include "fbngrad_apply_variants.inc"
#undef FBNGRAD_APPLY_VARIANT
    if (reduce.empty() && apply.empty()) {
        // Left out of this build (FBNGRAD_SPLIT_PHASE=OFF): the calls say so.
        TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NHWC, {1, 2, 2, 3}, true);
        std::vector<float> sdy(3), sdyxc(3);
        fbngrad_tensor dy = tp.tensor(tp.dy.data()), m = tp.vec(tp.mean.data()), s1 = tp.vec(sdy.data()),
                       s2 = tp.vec(sdyxc.data());
        int64_t count = 0;
        fbngrad_status st;
        EXPECT_EQ(fbngrad_split_phase_reduce(&dy, &dy, &m, &s1, &s2, &count, &st), FBNGRAD_UNIMPLEMENTED);
        EXPECT_NE(std::string(st.message).find("-DFBNGRAD_SPLIT_PHASE=ON"), std::string::npos) << st.message;
        GTEST_SKIP() << "the split phase was left out of this build";
    }
    EXPECT_EQ(apply, fused);
    EXPECT_EQ(reduce.size() * 2, fused.size());
    for (const std::string &f : fused) {
        std::string key = f.substr(0, f.find('/', f.find('/') + 1)) + f.substr(f.rfind('/'));
        EXPECT_NE(std::find(reduce.begin(), reduce.end(), key), reduce.end()) << "no reduce variant for " << f;
    }
}

// ---- shards: sums added on the host, the result against the reference ----

struct ShardCase {
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    bool training;
};

class SplitPhaseShards : public testing::TestWithParam<ShardCase> {};

TEST_P(SplitPhaseShards, MatchReferenceForUnevenSplits) {
    FBNGRAD_SKIP_UNLESS_SPLIT_PHASE();
    const ShardCase &k = GetParam();
    // N = 5; shards with one sample, empty shards, everything on one worker.
    const std::vector<std::vector<int64_t>> splits = {{5}, {1, 4}, {2, 0, 3}, {0, 0, 5}, {1, 1, 1, 1, 1}, {4, 1, 0, 0}};
    for (const auto &shape_nsc : std::vector<std::vector<int64_t>>{{5, 3, 7, 19}, {5, 2, 3, 2, 4}}) {
        for (const auto &split : splits) {
            TestProblem tp(k.dtype, k.layout, in_layout(shape_nsc, k.layout), k.training, false, 3);
            SplitRun r = run_split(tp, split);
            std::string what = tp.describe() + " split {";
            for (int64_t n : split) what += std::to_string(n) + ",";
            what.back() = '}';
            EXPECT_EQ(r.count, tp.p.shape[0] * spatial(tp)) << what;
            ref::Comparison cmp = tp.check();
            EXPECT_TRUE(cmp.ok()) << what << ": " << cmp.mismatches << " mismatches, first " << cmp.first_mismatch;
            for (size_t i = 1; i < r.sb.size(); ++i) {
                EXPECT_TRUE(same_bits(r.sb[i], r.sb[0])) << what << ": shard " << i << " scale_backprop";
                EXPECT_TRUE(same_bits(r.ob[i], r.ob[0])) << what << ": shard " << i << " offset_backprop";
            }
        }
    }
}

std::vector<ShardCase> shard_cases() {
    std::vector<ShardCase> cs;
    for (fbngrad_dtype d : {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16})
        for (fbngrad_layout l : {FBNGRAD_NHWC, FBNGRAD_NCHW})
            for (bool t : {true, false})
                if (built(d, l, t)) cs.push_back({d, l, t});  // a selective build leaves rows out
    return cs;
}

std::string shard_case_name(const testing::TestParamInfo<ShardCase> &info) {
    return dtype_str(info.param.dtype) + (info.param.layout == FBNGRAD_NHWC ? "_nhwc_" : "_nchw_") +
           (info.param.training ? "train" : "infer");
}

INSTANTIATE_TEST_SUITE_P(AllKinds, SplitPhaseShards, testing::ValuesIn(shard_cases()), shard_case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SplitPhaseShards);  // a build with none of its rows

// ---- edge cases ----

TEST(SplitPhaseEdges, EmptyShardGetsTheGlobalScaleAndOffsetBackprop) {
    FBNGRAD_SKIP_UNLESS_SPLIT_PHASE();
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NHWC, true);
    TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NHWC, {3, 2, 2, 5}, true);
    SplitRun r = run_split(tp, {0, 3});  // shard 0 holds nothing
    ASSERT_EQ(r.sb.size(), 2u);
    EXPECT_TRUE(same_bits(r.sb[0], r.sb[1]));
    EXPECT_TRUE(same_bits(r.ob[0], r.ob[1]));
    EXPECT_TRUE(tp.check().ok()) << tp.check().first_mismatch;
}

TEST(SplitPhaseEdges, EmptyShardWithNullData) {
    FBNGRAD_SKIP_UNLESS_SPLIT_PHASE();
    // An empty shard may come without memory: reduce gives zeros and count 0,
    // apply still computes scale_backprop / offset_backprop from the global sums.
    const int64_t C = 4, shape[4] = {0, 3, 3, C}, vshape[1] = {C};
    std::vector<float> mean(C, 0.5f), scale(C, 2.0f), var(C, 0.25f), sdy(C, -1.0f), sdyxc(C, -1.0f);
    fbngrad_tensor dy = fbngrad_make_tensor(nullptr, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
    fbngrad_tensor tmean = fbngrad_make_tensor(mean.data(), FBNGRAD_FLOAT32, 1, vshape, FBNGRAD_NHWC);
    fbngrad_tensor tsdy = fbngrad_make_tensor(sdy.data(), FBNGRAD_FLOAT32, 1, vshape, FBNGRAD_NHWC);
    fbngrad_tensor tsdyxc = fbngrad_make_tensor(sdyxc.data(), FBNGRAD_FLOAT32, 1, vshape, FBNGRAD_NHWC);
    int64_t count = -1;
    fbngrad_status st;
    ASSERT_EQ(fbngrad_split_phase_reduce(&dy, &dy, &tmean, &tsdy, &tsdyxc, &count, &st), FBNGRAD_OK) << st.message;
    EXPECT_EQ(count, 0);
    EXPECT_EQ(sdy, std::vector<float>(C, 0.0f));
    EXPECT_EQ(sdyxc, std::vector<float>(C, 0.0f));

    // Global sums from "other workers".
    std::vector<float> gdy = {1.0f, -2.0f, 0.5f, 0.0f}, gdyxc = {0.25f, 4.0f, -1.0f, 3.0f};
    std::vector<float> sb(C, -777.0f), ob(C, -777.0f);
    fbngrad_tensor tscale = fbngrad_make_tensor(scale.data(), FBNGRAD_FLOAT32, 1, vshape, FBNGRAD_NHWC);
    fbngrad_tensor tvar = fbngrad_make_tensor(var.data(), FBNGRAD_FLOAT32, 1, vshape, FBNGRAD_NHWC);
    fbngrad_tensor tgdy = fbngrad_make_tensor(gdy.data(), FBNGRAD_FLOAT32, 1, vshape, FBNGRAD_NHWC);
    fbngrad_tensor tgdyxc = fbngrad_make_tensor(gdyxc.data(), FBNGRAD_FLOAT32, 1, vshape, FBNGRAD_NHWC);
    fbngrad_tensor tsb = fbngrad_make_tensor(sb.data(), FBNGRAD_FLOAT32, 1, vshape, FBNGRAD_NHWC);
    fbngrad_tensor tob = fbngrad_make_tensor(ob.data(), FBNGRAD_FLOAT32, 1, vshape, FBNGRAD_NHWC);
    fbngrad_tensor xb = dy;
    fbngrad_attrs a;
    fbngrad_attrs_init(&a);
    a.epsilon = 0.0f;  // inv = 1/sqrt(0.25) = 2 exactly
    for (int training : {1, 0}) {
        a.is_training = training;
        ASSERT_EQ(fbngrad_split_phase_apply(&dy, &dy, &tscale, &tmean, &tvar, &tgdy, &tgdyxc, 100, &a, &xb, &tsb,
                                            &tob, &st),
                  FBNGRAD_OK)
            << st.message;
        for (int64_t c = 0; c < C; ++c) {
            EXPECT_EQ(sb[c], gdyxc[c] * 2.0f) << "channel " << c;
            EXPECT_EQ(ob[c], gdy[c]) << "channel " << c;
        }
    }
}

TEST(SplitPhaseEdges, NoElementAnywhereGivesZeros) {
    for (fbngrad_layout l : {FBNGRAD_NHWC, FBNGRAD_NCHW}) {
        TestProblem tp(FBNGRAD_FLOAT16, l, in_layout({0, 4, 4, 3}, l), true);
        SplitRun r = run_split(tp, {0, 0});
        EXPECT_EQ(r.count, 0);
        for (const auto &sb : r.sb) EXPECT_EQ(sb, std::vector<float>(3, 0.0f));
        for (const auto &ob : r.ob) EXPECT_EQ(ob, std::vector<float>(3, 0.0f));
    }
}

TEST(SplitPhaseEdges, SingleSampleShardsOneChannelAnd5D) {
    FBNGRAD_SKIP_UNLESS_SPLIT_PHASE();
    for (const auto &nsc : std::vector<std::vector<int64_t>>{{2, 1, 1, 1}, {3, 1, 9, 1}, {2, 2, 1, 3, 5}}) {
        for (fbngrad_layout l : {FBNGRAD_NHWC, FBNGRAD_NCHW}) {
            if (!built(FBNGRAD_BFLOAT16, l, true)) continue;  // left out of this build
            TestProblem tp(FBNGRAD_BFLOAT16, l, in_layout(nsc, l), true, true, 5);
            std::vector<int64_t> split(size_t(nsc[0]), 1);  // one sample per worker
            run_split(tp, split);
            ref::Comparison cmp = tp.check();
            EXPECT_TRUE(cmp.ok()) << tp.describe() << ": " << cmp.first_mismatch;
        }
    }
}

TEST(SplitPhaseEdges, CppApiMatchesCApi) {
    FBNGRAD_SKIP_UNLESS_SPLIT_PHASE();
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NCHW, true);
    TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {2, 3, 4, 5}, true);
    const int64_t C = 3;
    std::vector<float> sdy(C), sdyxc(C), sb(C), ob(C);
    std::vector<int64_t> shape = shard_shape(tp, 2);
    TensorView dy(tp.dy.data(), DType::Float32, shape, Layout::NCHW), x(tp.x.data(), DType::Float32, shape, Layout::NCHW);
    std::vector<uint8_t> xb_bytes(tp.xb.size());
    TensorView xb(xb_bytes.data(), DType::Float32, shape, Layout::NCHW);
    TensorView mean(tp.mean.data(), DType::Float32, {C}), scale(tp.scale.data(), DType::Float32, {C});
    TensorView var(tp.rs2.data(), DType::Float32, {C});
    TensorView vsdy(sdy.data(), DType::Float32, {C}), vsdyxc(sdyxc.data(), DType::Float32, {C});
    TensorView vsb(sb.data(), DType::Float32, {C}), vob(ob.data(), DType::Float32, {C});
    int64_t count = 0;
    Status s = split_phase_reduce(dy, x, mean, vsdy, vsdyxc, count);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(count, 2 * 4 * 5);
    Attrs attrs;
    attrs.epsilon = tp.p.epsilon;
    s = split_phase_apply(dy, x, scale, mean, var, vsdy, vsdyxc, count, attrs, xb, vsb, vob);
    ASSERT_TRUE(s.ok()) << s.message();

    fbngrad_status st;
    ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
    EXPECT_EQ(xb_bytes, tp.xb);
    EXPECT_TRUE(same_bits(sb, tp.sb));
    EXPECT_TRUE(same_bits(ob, tp.ob));

    s = split_phase_apply(dy, x, scale, mean, var, vsdy, vsdyxc, count - 1, attrs, xb, vsb, vob);
    EXPECT_EQ(s.code(), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_NE(s.message().find("count"), std::string::npos) << s.message();
}

// ---- error paths: a message, and every output untouched ----

class SplitPhaseErrors : public testing::Test {
protected:
    static constexpr int64_t C = 3;
    TestProblem tp{FBNGRAD_FLOAT32, FBNGRAD_NHWC, {2, 2, 2, C}, true};
    std::vector<float> sdy = std::vector<float>(C, -5.0f), sdyxc = std::vector<float>(C, -5.0f);
    fbngrad_tensor dy = tp.tensor(tp.dy.data()), x = tp.tensor(tp.x.data()), xb = tp.tensor(tp.xb.data());
    fbngrad_tensor scale = tp.vec(tp.scale.data()), mean = tp.vec(tp.mean.data()), var = tp.vec(tp.rs2.data());
    fbngrad_tensor tsdy = tp.vec(sdy.data()), tsdyxc = tp.vec(sdyxc.data());
    fbngrad_tensor sb = tp.vec(tp.sb.data()), ob = tp.vec(tp.ob.data());
    int64_t count = -9;

    fbngrad_code reduce(std::string *msg) {
        fbngrad_status st;
        fbngrad_code code = fbngrad_split_phase_reduce(&dy, &x, &mean, &tsdy, &tsdyxc, &count, &st);
        *msg = st.message;
        return code;
    }
    fbngrad_code apply(int64_t global_count, std::string *msg) {
        fbngrad_status st;
        fbngrad_code code = fbngrad_split_phase_apply(&dy, &x, &scale, &mean, &var, &tsdy, &tsdyxc, global_count,
                                                      &tp.attrs, &xb, &sb, &ob, &st);
        *msg = st.message;
        return code;
    }
    void expect_reduce_error(fbngrad_code want, const std::string &text) {
        std::string msg;
        EXPECT_EQ(reduce(&msg), want) << msg;
        EXPECT_NE(msg.find(text), std::string::npos) << "message: " << msg;
        EXPECT_EQ(sdy, std::vector<float>(C, -5.0f)) << "sum_dy written on error";
        EXPECT_EQ(sdyxc, std::vector<float>(C, -5.0f)) << "sum_dyxc written on error";
        EXPECT_EQ(count, -9) << "count written on error";
    }
    void expect_apply_error(int64_t global_count, fbngrad_code want, const std::string &text) {
        std::string msg;
        EXPECT_EQ(apply(global_count, &msg), want) << msg;
        EXPECT_NE(msg.find(text), std::string::npos) << "message: " << msg;
        EXPECT_EQ(tp.xb, std::vector<uint8_t>(tp.xb.size(), 0xAB)) << "x_backprop written on error";
        EXPECT_EQ(tp.sb, std::vector<float>(C, -777.0f)) << "scale_backprop written on error";
        EXPECT_EQ(tp.ob, std::vector<float>(C, -777.0f)) << "offset_backprop written on error";
    }
};

TEST_F(SplitPhaseErrors, ReduceNullArguments) {
    std::string msg;
    fbngrad_status st;
    EXPECT_EQ(fbngrad_split_phase_reduce(nullptr, &x, &mean, &tsdy, &tsdyxc, &count, &st), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_STREQ(st.message, "y_backprop is NULL");
    EXPECT_EQ(fbngrad_split_phase_reduce(&dy, &x, &mean, &tsdy, nullptr, &count, &st), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_STREQ(st.message, "sum_dyxc is NULL");
    EXPECT_EQ(fbngrad_split_phase_reduce(&dy, &x, &mean, &tsdy, &tsdyxc, nullptr, &st), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_STREQ(st.message, "count is NULL");
    EXPECT_EQ(fbngrad_split_phase_reduce(&dy, &x, &mean, &tsdy, &tsdyxc, nullptr, nullptr), FBNGRAD_INVALID_ARGUMENT)
        << "status may be NULL";
    mean.data = nullptr;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT, "reserve_space_1 has no data (NULL pointer)");
}

TEST_F(SplitPhaseErrors, ReduceShapesInTensorFlowsWords) {
    x.rank = 3;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT, "input must be 4 or 5-dimensional[2,2,2]");
    x.rank = 4;
    x.shape[1] = 3;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT,
                        "x and y_backprop must have same shape, but x has shape [2,3,2,3] and y_backprop has shape "
                        "[2,2,2,3]");
    x.shape[1] = 2;
    mean.shape[0] = 4;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT,
                        "reserve_space_1 must have the same number of elements as the channels of x, got 4 and 3");
    mean.rank = 2;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT, "saved mean must be 1-dimensional");
}

TEST_F(SplitPhaseErrors, ReduceDtypesAndOutputs) {
    x.dtype = FBNGRAD_FLOAT16;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT,
                        "as input #1(zero-based) was expected to be a float tensor but is a half tensor");
    x.dtype = FBNGRAD_FLOAT32;
    mean.dtype = FBNGRAD_BFLOAT16;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT, "input #3(zero-based) was expected to be a float tensor");
    mean.dtype = FBNGRAD_FLOAT32;
    tsdyxc.shape[0] = 2;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT, "sum_dyxc must be a float tensor of shape [3], got float [2]");
    tsdyxc.shape[0] = 3;
    x.layout = FBNGRAD_NCHW;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT, "y_backprop and x must have the same data format");
    x.layout = FBNGRAD_NHWC;
    tsdy.shape[0] = -1;
    expect_reduce_error(FBNGRAD_INVALID_ARGUMENT, "sum_dy has a negative dimension: [-1]");
}

// CUDA tensors are accepted (tests/test_cuda.cpp runs them on a GPU); without
// a usable device the call says so, before touching any memory.
TEST_F(SplitPhaseErrors, ReduceOnCudaWithoutGpuIsUnavailable) {
    if (fbngrad_cuda_available()) GTEST_SKIP() << "a CUDA device is usable here";
    for (fbngrad_tensor *t : {&dy, &x, &mean, &tsdy, &tsdyxc}) t->device = FBNGRAD_CUDA;
    expect_reduce_error(FBNGRAD_UNAVAILABLE, "no CUDA device available");
}

TEST_F(SplitPhaseErrors, ApplyCount) {
    // This shard has N*spatial = 2*2*2 = 8 elements per channel.
    expect_apply_error(7, FBNGRAD_INVALID_ARGUMENT,
                       "count (elements per channel over all workers) must be at least this worker's N*spatial = 8, "
                       "got 7");
    expect_apply_error(-1, FBNGRAD_INVALID_ARGUMENT, "got -1");
    FBNGRAD_SKIP_UNLESS_SPLIT_PHASE();  // the checks above come first either way
    std::string msg;
    EXPECT_EQ(apply(8, &msg), FBNGRAD_OK) << msg;
}

TEST_F(SplitPhaseErrors, ApplySums) {
    tsdy.dtype = FBNGRAD_FLOAT16;
    expect_apply_error(8, FBNGRAD_INVALID_ARGUMENT, "sum_dy must be a float tensor of shape [3], got half [3]");
    tsdy.dtype = FBNGRAD_FLOAT32;
    tsdyxc.rank = 2;
    expect_apply_error(8, FBNGRAD_INVALID_ARGUMENT, "sum_dyxc must be a float tensor of shape [3]");
    tsdyxc.rank = 1;
    tsdyxc.data = nullptr;
    expect_apply_error(8, FBNGRAD_INVALID_ARGUMENT, "sum_dyxc has no data (NULL pointer)");
    tsdyxc.data = sdyxc.data();
    tsdy.device = FBNGRAD_CUDA;
    expect_apply_error(8, FBNGRAD_INVALID_ARGUMENT, "all tensors must be on the same device, but x and sum_dy are not");
    tsdy.device = FBNGRAD_CPU;
    fbngrad_status st;
    EXPECT_EQ(fbngrad_split_phase_apply(&dy, &x, &scale, &mean, &var, nullptr, &tsdyxc, 8, nullptr, &xb, &sb, &ob, &st),
              FBNGRAD_INVALID_ARGUMENT);
    EXPECT_STREQ(st.message, "sum_dy is NULL");
}

TEST_F(SplitPhaseErrors, ApplyReusesTheFusedOpsChecks) {
    scale.shape[0] = 2;
    expect_apply_error(8, FBNGRAD_INVALID_ARGUMENT,
                       "scale must have the same number of elements as the channels of x, got 2 and 3");
    scale.shape[0] = 3;
    xb.dtype = FBNGRAD_BFLOAT16;
    expect_apply_error(8, FBNGRAD_INVALID_ARGUMENT, "x_backprop must have the dtype, shape and data format of x");
    xb.dtype = FBNGRAD_FLOAT32;
    tp.attrs.reserve_space_2_is = fbngrad_reserve_space_2_is(7);
    expect_apply_error(8, FBNGRAD_INVALID_ARGUMENT, "reserve_space_2_is must be variance or inverse_std");
}

}  // namespace
