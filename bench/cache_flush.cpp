#include "cache_flush.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fbngrad_bench {

void flush_caches() {
    static std::vector<uint64_t> buffer(size_t(64) << 20 >> 3, 0);
    // A read-modify-write, not a store of a constant: the compiler cannot turn it into
    // memset, whose large-size path uses non-temporal stores that bypass the caches.
    volatile uint64_t *p = buffer.data();
    for (size_t i = 0; i < buffer.size(); i += 8) p[i] = p[i] + 1;  // one write per 64-byte line
}

}  // namespace fbngrad_bench
