// The peers this binary was built with (CMake defines FBNGRAD_BENCH_HAVE_* for the
// optional ones it found), in the order the tables show them.
#include "peer.h"

namespace fbngrad_bench {

std::vector<Peer> all_peers() {
    std::vector<Peer> out = fbngrad_peers();
#ifdef FBNGRAD_BENCH_HAVE_ONEDNN
    out.push_back(onednn_peer());
#endif
#ifdef FBNGRAD_BENCH_HAVE_ATEN
    out.push_back(aten_peer());
#endif
    out.push_back(naive_peer());
    return out;
}

std::vector<std::string> missing_peers() {
    std::vector<std::string> out;
#ifndef FBNGRAD_BENCH_HAVE_ONEDNN
    out.push_back("onednn (CMake found no oneDNN, or FBNGRAD_BENCH_ONEDNN=OFF: install Debian libdnnl-dev and reconfigure)");
#endif
#ifndef FBNGRAD_BENCH_HAVE_ATEN
    out.push_back("aten (CMake found no libtorch, or FBNGRAD_BENCH_ATEN=OFF: install Debian libtorch-dev and reconfigure)");
#endif
    return out;
}

}  // namespace fbngrad_bench
