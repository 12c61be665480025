// fbngrad_mpi_example: batch norm's gradient synchronized across MPI ranks with
// fbngrad's split phase, checked against the single-process fused op.
//
// Each rank holds a shard of the batch (uneven shards are fine: a rank may
// hold one sample, or none). Per problem, every rank
//   1. fbngrad_split_phase_reduce   on its shard   -> sum_dy, sum_dyxc [C], count
//   2. MPI_Allreduce (MPI_SUM)      the sums and the count
//   3. fbngrad_split_phase_apply    on its shard   -> x_backprop of the shard,
//                                                     scale/offset_backprop (global)
// Steps 1-3 are all a training loop needs (see run_split_phase below). The rest
// checks the result: every rank makes the whole batch from the same seed, so
// rank 0 can compare the gathered shards and every rank's scale/offset_backprop
// with the fused op on the whole batch, and all of them with the
// double-precision reference within its tolerance (src/reference/reference.h).
//
//   mpirun -np 4 fbngrad_mpi_example [--dtype all|float32|float16|bfloat16]
//       [--layout all|NHWC|NCHW] [--mode all|train|infer] [--shape N,H,W,C | N,D,H,W,C]
//       [--split n0,n1,...] [--threads T]
// prints one line per problem, and exits non-zero when any result is beyond
// the tolerance (on every rank, so that mpirun fails too).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"
#include "problem.h"
#include "reference.h"

using namespace fbngrad;

namespace {

struct Options {
    std::string dtype = "all", layout = "all", mode = "all";
    std::vector<int64_t> shape = {7, 5, 3, 19};  // logical N, spatial..., C
    std::vector<int64_t> split;                  // samples per rank; empty: uneven_split()
    int threads = 0;
};

// Samples per rank when none are given: deliberately uneven. With 2 ranks
// {N-1, 1}; with more, rank 1 holds one sample, rank 2 none, and the others
// share the rest unevenly (rank 0 the most).
std::vector<int64_t> uneven_split(int64_t N, int ranks) {
    std::vector<int64_t> s(size_t(ranks), 0);
    if (ranks == 1) return {N};
    if (N == 0) return s;
    s[1] = 1;
    int64_t rest = N - 1;
    std::vector<int> sharers;
    for (int r = 0; r < ranks; ++r)
        if (r != 1 && r != 2) sharers.push_back(r);
    for (size_t i = 0; i < sharers.size() && rest > 0; ++i) {
        // Half of what is left (rounded up), the last sharer all of it.
        int64_t take = i + 1 == sharers.size() ? rest : (rest + 1) / 2;
        s[size_t(sharers[i])] = take;
        rest -= take;
    }
    return s;
}

std::string join(const std::vector<int64_t> &v) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
}

// Shape in the layout's order from the logical N, spatial..., C.
std::vector<int64_t> in_layout(const std::vector<int64_t> &nsc, fbngrad_layout layout) {
    if (layout == FBNGRAD_NHWC) return nsc;
    std::vector<int64_t> s = {nsc[0], nsc.back()};
    s.insert(s.end(), nsc.begin() + 1, nsc.end() - 1);
    return s;
}

struct Shard {
    int64_t n0 = 0, n = 0;  // first sample, samples
    int64_t bytes_per_sample = 0;
};

struct Outputs {
    std::vector<uint8_t> x_backprop;  // this rank's shard
    std::vector<float> scale_backprop, offset_backprop;
};

bool ok_or_report(fbngrad_code code, const fbngrad_status &st, const char *what, int rank) {
    if (code == FBNGRAD_OK) return true;
    std::fprintf(stderr, "rank %d: %s failed: %s\n", rank, what, st.message);
    return false;
}

// The whole of what a training step does with fbngrad across ranks. dy and x
// hold only this rank's samples.
bool run_split_phase(const test::TestProblem &tp, const Shard &shard, const void *dy, const void *x, Outputs *out,
                     int rank) {
    const ref::Problem &p = tp.p;
    const int64_t C = p.channels();
    std::vector<int64_t> shape(p.shape, p.shape + p.rank);
    shape[0] = shard.n;
    fbngrad_tensor tdy = fbngrad_make_tensor(const_cast<void *>(dy), p.dtype, p.rank, shape.data(), p.layout);
    fbngrad_tensor tx = fbngrad_make_tensor(const_cast<void *>(x), p.dtype, p.rank, shape.data(), p.layout);
    auto vec = [&](const float *data) {
        return fbngrad_make_tensor(const_cast<float *>(data), FBNGRAD_FLOAT32, 1, &C, FBNGRAD_NHWC);
    };

    // 1. Local sums: sum_dy then sum_dyxc, in one buffer so that one allreduce carries both.
    std::vector<float> sums(size_t(2 * C));
    fbngrad_tensor tsum_dy = vec(sums.data()), tsum_dyxc = vec(sums.data() + C);
    fbngrad_tensor tscale = vec(tp.scale.data()), tmean = vec(tp.mean.data()), trs2 = vec(tp.rs2.data());
    int64_t count = 0;
    fbngrad_status st;
    if (!ok_or_report(fbngrad_split_phase_reduce(&tdy, &tx, &tmean, &tsum_dy, &tsum_dyxc, &count, &st), st,
                      "fbngrad_split_phase_reduce", rank))
        return false;

    // 2. The allreduce: any sum will do (here MPI's; NCCL, Horovod or gloo work the same way).
    MPI_Allreduce(MPI_IN_PLACE, sums.data(), int(2 * C), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

    // 3. This shard's outputs from the global sums.
    out->x_backprop.assign(size_t(shard.n * shard.bytes_per_sample), 0);
    out->scale_backprop.assign(size_t(C), 0.0f);
    out->offset_backprop.assign(size_t(C), 0.0f);
    fbngrad_tensor txb = fbngrad_make_tensor(out->x_backprop.data(), p.dtype, p.rank, shape.data(), p.layout);
    fbngrad_tensor tsb = vec(out->scale_backprop.data()), tob = vec(out->offset_backprop.data());
    return ok_or_report(fbngrad_split_phase_apply(&tdy, &tx, &tscale, &tmean, &trs2, &tsum_dy, &tsum_dyxc, count,
                                                  &tp.attrs, &txb, &tsb, &tob, &st),
                        st, "fbngrad_split_phase_apply", rank);
}

// The largest |a - b| over n elements, and whether every |a - b| is within
// tol_a + tol_b (each result's own bound against the exact value, from the
// reference): what two correct float32 computations may differ by.
struct Diff {
    double max_abs = 0;
    bool within = true;
};
void diff_into(Diff *d, fbngrad_dtype dtype, const void *a, const void *b, int64_t n, const double *tol) {
    for (int64_t i = 0; i < n; ++i) {
        double va = ref::load(dtype, a, i), vb = ref::load(dtype, b, i);
        if (std::isnan(va) || std::isnan(vb)) {
            d->within = d->within && std::isnan(va) && std::isnan(vb);
            continue;
        }
        double e = std::fabs(va - vb);
        d->max_abs = std::max(d->max_abs, e);
        if (!(e <= 2 * tol[i])) d->within = false;
    }
}

// One problem on all ranks; true on every rank when the result is good.
bool run_problem(fbngrad_dtype dtype, fbngrad_layout layout, bool training, const Options &o, int rank, int ranks) {
    const std::vector<int64_t> shape = in_layout(o.shape, layout);
    test::TestProblem tp(dtype, layout, shape, training, /*inverse_std=*/false, /*seed=*/2024);
    const int64_t N = shape[0], C = tp.p.channels();
    const std::vector<int64_t> split = o.split.empty() ? uneven_split(N, ranks) : o.split;

    Shard shard;
    shard.bytes_per_sample = N ? int64_t(tp.dy.size()) / N : 0;
    for (int r = 0; r < rank; ++r) shard.n0 += split[size_t(r)];
    shard.n = split[size_t(rank)];
    const size_t offset = size_t(shard.n0 * shard.bytes_per_sample);
    // This rank's samples, in memory of its own (as a real worker holds them).
    std::vector<uint8_t> dy(tp.dy.begin() + offset, tp.dy.begin() + offset + size_t(shard.n * shard.bytes_per_sample));
    std::vector<uint8_t> x(tp.x.begin() + offset, tp.x.begin() + offset + size_t(shard.n * shard.bytes_per_sample));

    Outputs out;
    int good = run_split_phase(tp, shard, dy.data(), x.data(), &out, rank) ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &good, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!good) return false;

    // Rank 0 gathers every shard's x_backprop and every rank's scale/offset_backprop.
    std::vector<int> counts(static_cast<size_t>(ranks)), displs(static_cast<size_t>(ranks));
    for (int r = 0, d = 0; r < ranks; ++r) {
        counts[size_t(r)] = int(split[size_t(r)] * shard.bytes_per_sample);
        displs[size_t(r)] = d;
        d += counts[size_t(r)];
    }
    std::vector<uint8_t> x_backprop(rank == 0 ? tp.xb.size() : 0);
    MPI_Gatherv(out.x_backprop.data(), int(out.x_backprop.size()), MPI_BYTE, x_backprop.data(), counts.data(),
                displs.data(), MPI_BYTE, 0, MPI_COMM_WORLD);
    std::vector<float> per_rank(rank == 0 ? size_t(2 * C * ranks) : 0), mine(out.scale_backprop);
    mine.insert(mine.end(), out.offset_backprop.begin(), out.offset_backprop.end());
    MPI_Gather(mine.data(), int(2 * C), MPI_FLOAT, per_rank.data(), int(2 * C), MPI_FLOAT, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        // The single-process result: the fused op on the whole batch.
        fbngrad_status st;
        if (tp.run(&st) != FBNGRAD_OK) {  // writes tp.xb, tp.sb, tp.ob
            std::fprintf(stderr, "rank 0: the fused op failed: %s\n", st.message);
            good = 0;
        } else {
            const ref::Expected e = ref::compute(tp.p);
            Diff dx, dsb, dob;
            double worst_ratio = 0;
            int64_t mismatches = 0;
            std::string first;
            diff_into(&dx, dtype, x_backprop.data(), tp.xb.data(), tp.p.elements(), e.x_backprop_tol.data());
            for (int r = 0; r < ranks; ++r) {
                const float *sb = per_rank.data() + 2 * C * r, *ob = sb + C;
                diff_into(&dsb, FBNGRAD_FLOAT32, sb, tp.sb.data(), C, e.scale_backprop_tol.data());
                diff_into(&dob, FBNGRAD_FLOAT32, ob, tp.ob.data(), C, e.offset_backprop_tol.data());
                // Against the exact values: the gathered x_backprop with rank r's per-channel outputs.
                ref::Comparison cmp = ref::compare(tp.p, e, x_backprop.data(), sb, ob);
                worst_ratio = std::max(worst_ratio, cmp.worst_ratio);
                if (!cmp.ok() && mismatches == 0) first = "rank " + std::to_string(r) + ": " + cmp.first_mismatch;
                mismatches += cmp.mismatches;
            }
            good = mismatches == 0 && dx.within && dsb.within && dob.within;
            std::printf("%-8s %s %-5s shape [%s] ranks %d split {%s}: max |split - fused| x_backprop %.3g, "
                        "scale_backprop %.3g, offset_backprop %.3g; worst error/tolerance %.3f: %s\n",
                        test::dtype_str(dtype).c_str(), layout == FBNGRAD_NHWC ? "NHWC" : "NCHW",
                        training ? "train" : "infer", join(shape).c_str(), ranks, join(split).c_str(), dx.max_abs,
                        dsb.max_abs, dob.max_abs, worst_ratio, good ? "OK" : "FAILED");
            if (mismatches) std::printf("  %lld mismatches, first %s\n", (long long)mismatches, first.c_str());
            if (!(dx.within && dsb.within && dob.within))
                std::printf("  the split result differs from the fused one by more than their two tolerances\n");
            std::fflush(stdout);
        }
    }
    MPI_Bcast(&good, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return good != 0;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);

    Options o;
    CLI::App app{"fbngrad's split phase across MPI ranks, checked against the fused op"};
    app.add_option("--dtype", o.dtype, "float32, float16, bfloat16 or all")
        ->check(CLI::IsMember({"all", "float32", "float16", "bfloat16"}));
    app.add_option("--layout", o.layout, "NHWC, NCHW or all")->check(CLI::IsMember({"all", "NHWC", "NCHW"}));
    app.add_option("--mode", o.mode, "train, infer or all")->check(CLI::IsMember({"all", "train", "infer"}));
    app.add_option("--shape", o.shape, "N,H,W,C or N,D,H,W,C (logical order, whatever the layout)")
        ->delimiter(',');
    app.add_option("--split", o.split, "samples per rank, one number per rank (default: uneven)")->delimiter(',');
    app.add_option("--threads", o.threads, "Halide threads per rank (0: one per core)");
    try {
        app.parse(argc, argv);
        if (o.shape.size() != 4 && o.shape.size() != 5) throw CLI::ValidationError("--shape", "needs 4 or 5 numbers");
        if (!o.split.empty()) {
            if (int(o.split.size()) != ranks)
                throw CLI::ValidationError("--split", "needs one number per rank (" + std::to_string(ranks) + ")");
            int64_t total = 0;
            bool negative = false;
            for (int64_t n : o.split) {
                total += n;
                negative = negative || n < 0;
            }
            if (negative || total != o.shape[0])
                throw CLI::ValidationError("--split", "the numbers must be >= 0 and add up to N = " +
                                                          std::to_string(o.shape[0]));
        }
    } catch (const CLI::ParseError &e) {
        int rc = rank == 0 ? app.exit(e) : (e.get_exit_code() ? 2 : 0);
        MPI_Finalize();
        return rc;
    }
    if (o.threads > 0) fbngrad_set_num_threads(o.threads);

    const std::vector<std::pair<std::string, fbngrad_dtype>> dtypes = {
        {"float32", FBNGRAD_FLOAT32}, {"float16", FBNGRAD_FLOAT16}, {"bfloat16", FBNGRAD_BFLOAT16}};
    const std::vector<std::pair<std::string, fbngrad_layout>> layouts = {{"NHWC", FBNGRAD_NHWC}, {"NCHW", FBNGRAD_NCHW}};
    const std::vector<std::pair<std::string, bool>> modes = {{"train", true}, {"infer", false}};
    int problems = 0, failed = 0;
    for (const auto &d : dtypes) {
        if (o.dtype != "all" && o.dtype != d.first) continue;
        for (const auto &l : layouts) {
            if (o.layout != "all" && o.layout != l.first) continue;
            for (const auto &m : modes) {
                if (o.mode != "all" && o.mode != m.first) continue;
                ++problems;
                if (!run_problem(d.second, l.second, m.second, o, rank, ranks)) ++failed;
            }
        }
    }
    if (rank == 0) std::printf("%d passed, %d failed\n", problems - failed, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
