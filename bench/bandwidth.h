// The memory-bandwidth probe: STREAM-style kernels over arrays far larger than the last-level
// cache, split over threads (std::thread), with ordinary and with non-temporal stores.
//   bandwidth/copy     d[i] = s[i]          2 arrays moved per element (read + write)
//   bandwidth/copy_nt  the same, non-temporal stores (no read-for-ownership of d)
//   bandwidth/add      d[i] = a[i] + b[i]   3 arrays: the op's read-2-write-1 pattern
//   bandwidth/add_nt   the same, non-temporal stores
//   bandwidth/one_pass[_nt]    the op's one-pass pattern: per 1 MiB block of a and b, sum both,
//                              then d = a + b (the second read from the cache)
//   bandwidth/two_passes[_nt]  the op's two-pass pattern: sum all of a and b, then d = a + b
//   (these two count 3 arrays, as the op's GB/s does: what a schedule's pattern allows)
// GB/s counts the bytes the kernel reads and writes (STREAM's convention: an ordinary store's
// read-for-ownership is not counted). The widest vector unit the CPU has is picked at run
// time (AVX-512F, AVX, SSE2; a plain loop elsewhere) and named in the label.
#pragma once

#include <string>

namespace fbngrad_bench {

// Registers the eight probes. threads: the std::thread count; suffix: appended to the names
// (e.g. "/threads:1"); array_mib: the size of each array.
void register_bandwidth_benchmarks(int threads, const std::string &suffix, int array_mib);

}  // namespace fbngrad_bench
