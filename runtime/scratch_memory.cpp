#include "scratch_memory.h"

#include "HalideRuntime.h"
#include "scratch_cache.h"

namespace fbngrad::runtime {
namespace {

// Never destroyed: a kernel may still run from another static destructor.
ScratchCache &cache() {
    static ScratchCache *const instance =
        new ScratchCache({kScratchMinBytes, kScratchMaxBlockBytes, kScratchKeptBytes, kScratchKeptBlocks});
    return *instance;
}

void *scratch_malloc(void *, size_t bytes) { return cache().allocate(bytes); }
void scratch_free(void *, void *ptr) { cache().release(ptr); }

}  // namespace

void install_scratch_memory() {
    cache();
    halide_set_custom_malloc(scratch_malloc);
    halide_set_custom_free(scratch_free);
}

size_t release_scratch() { return cache().release_kept(); }

}  // namespace fbngrad::runtime
