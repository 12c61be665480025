#include "halide_glue.h"

#include <mutex>

#include "HalideRuntime.h"
#include "scratch_memory.h"

namespace fbngrad::runtime {
namespace {

// Messages from runtime code that has no call context (none are expected, but
// a message must never be lost or abort the process).
thread_local std::string orphan_error;

void on_error(void *user_context, const char *msg) {
    std::string &dst = user_context ? static_cast<CallContext *>(user_context)->error : orphan_error;
    if (!dst.empty()) dst += "; ";
    dst += msg ? msg : "unknown Halide error";
    while (!dst.empty() && (dst.back() == '\n' || dst.back() == ' ')) dst.pop_back();
}

// Halide prints only under debug targets; keep stdout clean otherwise.
void on_print(void *, const char *) {}

}  // namespace

CallContext::CallContext() = default;

CallContext::~CallContext() {
    if (borrowed_block_) return_thread_block(&scratch);
}

void CallContext::use_thread_scratch() {
    if (!borrowed_block_) borrowed_block_ = lend_thread_block(&scratch);
}

void install_halide_handlers() {
    static std::once_flag once;
    std::call_once(once, [] {
        halide_set_error_handler(on_error);
        halide_set_custom_print(on_print);
        install_parallel_runtime();
        install_scratch_memory();
    });
}

int set_num_threads(int n) {
    // halide_set_num_threads(0) restores Halide's default (HL_NUM_THREADS or the core count).
    note_pool_threads(n);
    return halide_set_num_threads(n > 0 ? n : 0);
}

}  // namespace fbngrad::runtime
