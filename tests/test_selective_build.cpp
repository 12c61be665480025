// Selective builds (cmake/variants.cmake, docs/edge-builds.md): what a build
// left out is told apart from what this CPU cannot run.
//  - LeftOut.*: src/left_out.h, the messages, on made-up tables (any build);
//  - SelectiveBuild.*: this build's own table through the C API: every row it
//    left out fails with FBNGRAD_UNIMPLEMENTED naming the option, touches no
//    output, and has no selected variant; an ISA it left out cannot be forced.
//    Skipped where the build left nothing out (the default build).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"
#include "left_out.h"
#include "problem.h"

using namespace fbngrad;
using namespace fbngrad::test;

namespace {

const fbngrad_dtype kDtypes[] = {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16};
const fbngrad_layout kLayouts[] = {FBNGRAD_NHWC, FBNGRAD_NCHW};

fbngrad_variant_info row(fbngrad_dtype d, fbngrad_layout l, int training, fbngrad_device dev = FBNGRAD_CPU) {
    fbngrad_variant_info v{};
    v.name = "made_up";
    v.dtype = d;
    v.layout = l;
    v.is_training = training;
    v.isa = "neon";
    v.device = dev;
    v.shape_classes = "";
    return v;
}

// Every dtype x layout x mode of `dtypes` x `layouts` x `modes` (1 training, 0 inference).
std::vector<fbngrad_variant_info> table(std::vector<fbngrad_dtype> dtypes, std::vector<fbngrad_layout> layouts,
                                        std::vector<int> modes) {
    std::vector<fbngrad_variant_info> t;
    for (fbngrad_dtype d : dtypes)
        for (fbngrad_layout l : layouts)
            for (int m : modes) t.push_back(row(d, l, m));
    return t;
}

TEST(LeftOut, NothingWhenTheRowIsBuilt) {
    const auto full = table({FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16}, {FBNGRAD_NHWC, FBNGRAD_NCHW}, {1, 0});
    for (fbngrad_dtype d : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (bool m : {true, false}) EXPECT_EQ(left_out(full, d, l, m, FBNGRAD_CPU), "");
}

TEST(LeftOut, NamesTheDtypeAndTheOptionThatBuildsIt) {
    const auto t = table({FBNGRAD_FLOAT32}, {FBNGRAD_NHWC}, {1, 0});
    EXPECT_EQ(left_out(t, FBNGRAD_FLOAT32, FBNGRAD_NHWC, false, FBNGRAD_CPU), "");
    EXPECT_EQ(left_out(t, FBNGRAD_FLOAT16, FBNGRAD_NHWC, true, FBNGRAD_CPU),
              "float16 was left out of this build of fbngrad (FBNGRAD_DTYPES=float32); configure it with "
              "-DFBNGRAD_DTYPES=\"float32;float16\" to build it");
    // The option's values keep the table's order, whatever was asked first.
    const auto bf = table({FBNGRAD_BFLOAT16}, {FBNGRAD_NHWC}, {1, 0});
    EXPECT_EQ(left_out(bf, FBNGRAD_FLOAT32, FBNGRAD_NHWC, true, FBNGRAD_CPU),
              "float32 was left out of this build of fbngrad (FBNGRAD_DTYPES=bfloat16); configure it with "
              "-DFBNGRAD_DTYPES=\"float32;bfloat16\" to build it");
}

TEST(LeftOut, NamesEveryOptionWhenSeveralLeftTheRowOut) {
    const auto t = table({FBNGRAD_FLOAT32, FBNGRAD_FLOAT16}, {FBNGRAD_NHWC}, {1});
    EXPECT_EQ(left_out(t, FBNGRAD_BFLOAT16, FBNGRAD_NCHW, false, FBNGRAD_CPU),
              "bfloat16 and NCHW and inference were left out of this build of fbngrad (FBNGRAD_DTYPES=float32;float16, "
              "FBNGRAD_LAYOUTS=NHWC, FBNGRAD_MODES=training); configure it with "
              "-DFBNGRAD_DTYPES=\"float32;float16;bfloat16\" -DFBNGRAD_LAYOUTS=\"NHWC;NCHW\" "
              "-DFBNGRAD_MODES=\"training;inference\" to build them");
    EXPECT_EQ(left_out(t, FBNGRAD_FLOAT16, FBNGRAD_NHWC, false, FBNGRAD_CPU),
              "inference was left out of this build of fbngrad (FBNGRAD_MODES=training); configure it with "
              "-DFBNGRAD_MODES=\"training;inference\" to build it");
}

TEST(LeftOut, DevicesAreTheirOwnTable) {
    auto t = table({FBNGRAD_FLOAT32}, {FBNGRAD_NHWC, FBNGRAD_NCHW}, {1, 0});
    EXPECT_EQ(left_out(t, FBNGRAD_FLOAT32, FBNGRAD_NCHW, true, FBNGRAD_CUDA),
              "the CUDA variants were left out of this build of fbngrad (FBNGRAD_ENABLE_CUDA=OFF); configure it with "
              "-DFBNGRAD_ENABLE_CUDA=ON to build them");
    t.push_back(row(FBNGRAD_FLOAT16, FBNGRAD_NCHW, 1, FBNGRAD_CUDA));
    EXPECT_EQ(left_out(t, FBNGRAD_FLOAT16, FBNGRAD_NCHW, true, FBNGRAD_CUDA), "");
    // A CUDA row does not build the CPU's.
    EXPECT_NE(left_out(t, FBNGRAD_FLOAT16, FBNGRAD_NCHW, true, FBNGRAD_CPU), "");
}

TEST(LeftOut, IsaAndSplitPhaseMessagesNameTheirOptions) {
    EXPECT_EQ(isa_left_out("neon", {"arm_fp16"}),
              "neon was left out of this build of fbngrad (FBNGRAD_ISAS=arm_fp16); configure it with "
              "-DFBNGRAD_ISAS=all (or a list with neon) to build its variants");
    EXPECT_NE(std::string(split_phase_left_out()).find("-DFBNGRAD_SPLIT_PHASE=ON"), std::string::npos);
}

// ---- this build ----

bool nothing_left_out() {
    for (fbngrad_dtype d : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (bool m : {true, false})
                if (!built(d, l, m)) return false;
    return true;
}

TEST(SelectiveBuild, LeftOutRowsAreUnimplementedAndNameTheirOption) {
    if (nothing_left_out()) GTEST_SKIP() << "this build has every dtype, layout and mode";
    int left = 0;
    for (fbngrad_dtype d : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (bool m : {true, false}) {
                if (built(d, l, m)) continue;
                ++left;
                const std::vector<int64_t> shape = l == FBNGRAD_NHWC ? std::vector<int64_t>{2, 3, 3, 5}
                                                                     : std::vector<int64_t>{2, 5, 3, 3};
                TestProblem tp(d, l, shape, m);
                const std::vector<uint8_t> xb = tp.xb;
                fbngrad_status st;
                EXPECT_EQ(tp.run(&st), FBNGRAD_UNIMPLEMENTED) << tp.describe();
                const std::string msg = st.message;
                EXPECT_NE(msg.find("left out of this build of fbngrad"), std::string::npos) << msg;
                const bool names_an_option = msg.find("-DFBNGRAD_DTYPES=") != std::string::npos ||
                                             msg.find("-DFBNGRAD_LAYOUTS=") != std::string::npos ||
                                             msg.find("-DFBNGRAD_MODES=") != std::string::npos;
                EXPECT_TRUE(names_an_option) << msg;
                EXPECT_EQ(tp.xb, xb) << "x_backprop touched on error";
                EXPECT_EQ(tp.sb[0], -777.0f) << "scale_backprop touched on error";
                EXPECT_EQ(fbngrad_selected_variant(d, l, m, FBNGRAD_CPU), nullptr);
            }
    EXPECT_GT(left, 0);
}

TEST(SelectiveBuild, SplitPhaseOfALeftOutRowIsUnimplemented) {
    if (nothing_left_out()) GTEST_SKIP() << "this build has every dtype, layout and mode";
    for (fbngrad_dtype d : kDtypes)
        for (fbngrad_layout l : kLayouts) {
            if (built(d, l, true) || built(d, l, false)) continue;
            const std::vector<int64_t> shape = l == FBNGRAD_NHWC ? std::vector<int64_t>{2, 3, 3, 5}
                                                                 : std::vector<int64_t>{2, 5, 3, 3};
            TestProblem tp(d, l, shape, true);
            std::vector<float> sdy(5, -1.0f), sdyxc(5, -1.0f);
            fbngrad_tensor dy = tp.tensor(tp.dy.data()), x = tp.tensor(tp.x.data()), mean = tp.vec(tp.mean.data());
            fbngrad_tensor tsdy = tp.vec(sdy.data()), tsdyxc = tp.vec(sdyxc.data());
            int64_t count = -1;
            fbngrad_status st;
            EXPECT_EQ(fbngrad_split_phase_reduce(&dy, &x, &mean, &tsdy, &tsdyxc, &count, &st), FBNGRAD_UNIMPLEMENTED)
                << tp.describe();
            EXPECT_NE(std::string(st.message).find("left out of this build of fbngrad"), std::string::npos)
                << st.message;
            EXPECT_EQ(sdy[0], -1.0f) << "sum_dy touched on error";
            EXPECT_EQ(count, -1) << "count touched on error";
        }
}

// This platform's ISAs that the table has no variant of (another platform's
// ISA names are unknown here: forcing one says so).
std::vector<std::string> left_out_isas() {
    std::vector<std::string> r;
    for (const char *isa : {"sse41", "avx2", "avx512", "neon", "arm_fp16"}) {
        bool in_table = false;
        for (int32_t i = 0; i < fbngrad_variant_count(); ++i) in_table |= std::string(fbngrad_variant(i)->isa) == isa;
        if (in_table) continue;
        fbngrad_status st;
        if (fbngrad_force_isa(isa, &st) == FBNGRAD_OK) {
            fbngrad_force_isa("", nullptr);  // wrongly accepted: LeftOutIsaCannotBeForced says so
            r.push_back(isa);
        } else if (std::string(st.message).find("unknown ISA") == std::string::npos) {
            r.push_back(isa);
        }
    }
    return r;
}

TEST(SelectiveBuild, RowBuiltOnlyForOtherCpusIsNotFound) {
    // A row the build has, none of whose variants this CPU runs (FBNGRAD_ISAS=arm_fp16 on
    // a CPU without FP16): not left out, so FBNGRAD_NOT_FOUND, naming the ISAs left out.
    const std::vector<std::string> left = left_out_isas();
    int checked = 0;
    for (fbngrad_dtype d : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (bool m : {true, false}) {
                if (!built(d, l, m)) continue;
                bool runs = false;
                for (int32_t i = 0; i < fbngrad_variant_count(); ++i) {
                    const fbngrad_variant_info *v = fbngrad_variant(i);
                    runs |= v->dtype == d && v->layout == l && (v->is_training != 0) == m && v->device == FBNGRAD_CPU &&
                            v->supported;
                }
                if (runs) continue;
                ++checked;
                TestProblem tp(d, l, l == FBNGRAD_NHWC ? std::vector<int64_t>{2, 3, 3, 5} : std::vector<int64_t>{2, 5, 3, 3},
                               m);
                fbngrad_status st;
                EXPECT_EQ(tp.run(&st), FBNGRAD_NOT_FOUND) << tp.describe();
                const std::string msg = st.message;
                EXPECT_NE(msg.find("no compiled variant of fbngrad can run this problem on this machine"),
                          std::string::npos) << msg;
                for (const std::string &isa : left)
                    EXPECT_NE(msg.find("FBNGRAD_ISAS left out"), std::string::npos) << isa << ": " << msg;
                EXPECT_EQ(tp.sb[0], -777.0f) << "scale_backprop touched on error";
            }
    if (!checked) GTEST_SKIP() << "this CPU runs every row this build has";
}

TEST(SelectiveBuild, LeftOutIsaCannotBeForced) {
    int left = 0;
    for (const std::string &name : left_out_isas()) {
        const char *isa = name.c_str();
        fbngrad_status st;
        if (fbngrad_force_isa(isa, &st) == FBNGRAD_OK) {
            fbngrad_force_isa("", &st);
            ADD_FAILURE() << isa << " has no variant in this build, yet forcing it succeeded";
            continue;
        }
        const std::string msg = st.message;
        if (msg.find("unknown ISA") != std::string::npos) continue;  // another platform's
        ++left;
        EXPECT_NE(msg.find("left out of this build of fbngrad (FBNGRAD_ISAS="), std::string::npos) << msg;
        EXPECT_STREQ(fbngrad_forced_isa(), "");
    }
    if (!left) GTEST_SKIP() << "this build has every ISA of this platform";
}

}  // namespace
