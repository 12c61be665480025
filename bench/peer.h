// What fbngrad_bench times: an impl ("peer") prepares a runner for one problem outside the
// timed loop (oneDNN primitives, ATen tensors, ...), then the loop calls run().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_inputs.h"

namespace fbngrad_bench {

constexpr float kEpsilon = 0.0001f;

struct Case {
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    bool training;
    Shape shape;
};

// Outputs in fbngrad's form: x_backprop in the dtype and layout, the [C] float sums.
struct Outputs {
    std::vector<uint8_t> dx;
    std::vector<float> sb, ob;
};

class Runner {
public:
    virtual ~Runner() = default;
    // One call of the op. false (with *err) on a failure.
    virtual bool run(std::string *err) = 0;
    // Copies the last call's outputs into `o` when they do not live there already.
    virtual bool fetch(Outputs &o, std::string *err) {
        (void)o;
        (void)err;
        return true;
    }
    // Shown as the benchmark's label: the kernel that ran (variant, oneDNN implementation).
    virtual std::string label() const { return ""; }
};

struct Peer {
    std::string name;  // the impl part of the benchmark names
    // "" when the peer computes this case; otherwise why not (the case is not registered).
    std::function<std::string(const Case &cs)> unsupported;
    // A runner that writes into (or fetches into) `o`, which is sized for the case;
    // nullptr (with *err) when it cannot be made.
    std::function<std::unique_ptr<Runner>(const Inputs &in, const Case &cs, Outputs &o, std::string *err)> prepare;
    // Applies a thread count (> 0) to the peer's own thread pool before a benchmark.
    std::function<void(int n)> set_threads;
    // true: checked against fbngrad::ref's tight bound; false: a peer with its own
    // summation order, checked against the parity tests' tolerance when the tight bound fails.
    bool strict_check;
    // fbngrad on its own pool: --fbngrad_task_report may time its tasks (the report installs
    // a runner of its own for that, so a peer that runs fbngrad on a runner is left out).
    bool task_report = false;
};

// Peers compiled into this binary (fbngrad and its forced ISAs, naive, and oneDNN / ATen
// when CMake found them), in table order; and the peers left out, with the reason.
std::vector<Peer> all_peers();
std::vector<std::string> missing_peers();

// Each peer's factory (peer_*.cpp).
// "fbngrad" and "fbngrad-<isa>" for every ISA this CPU runs; with OpenMP, "fbngrad-omp"
std::vector<Peer> fbngrad_peers();
Peer naive_peer();
#ifdef FBNGRAD_BENCH_HAVE_ONEDNN
Peer onednn_peer();
#endif
#ifdef FBNGRAD_BENCH_HAVE_ATEN
Peer aten_peer();
#endif

}  // namespace fbngrad_bench
