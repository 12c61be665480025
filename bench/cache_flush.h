// Evicts the caches between timed calls (the /cold benchmarks).
#pragma once

namespace fbngrad_bench {

// Reads and writes a 64 MiB buffer (twice this CPU family's largest L3) with ordinary loads
// and stores, so that whatever a timed call touched is out of every cache level.
void flush_caches();

}  // namespace fbngrad_bench
