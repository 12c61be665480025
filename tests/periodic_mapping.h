// A tensor-sized range of address space backed by one small block of memory,
// mapped again and again (a memfd, MAP_SHARED | MAP_FIXED at every multiple of
// the period): gigabytes of tensor, a few MiB of RAM. Element i of the range
// is element i mod (period / element size) of the block, for reads and writes.
// tests/test_large_tensors.cpp runs the kernels on exactly 2^31-1 elements this way.
// Linux only (memfd_create). Note: the kernel's RSS figure counts the block once
// per mapping (so `time -v` shows gigabytes); the memory used is one block.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace fbngrad::test {

class PeriodicMapping {
public:
    // bytes: the tensor's size; period: a multiple of the page size.
    PeriodicMapping(size_t bytes, size_t period) : period_(period) {
        const size_t page = size_t(sysconf(_SC_PAGESIZE));
        size_ = (bytes + page - 1) / page * page;
        fd_ = memfd_create("fbngrad_periodic", 0);
        if (fd_ < 0 || ftruncate(fd_, off_t(period)) != 0) {
            fail("memfd_create/ftruncate");
            return;
        }
        // Reserve the whole range first (no memory is committed), then map the block over it,
        // page tables filled at once (MAP_POPULATE: no page fault per 4 KiB later).
        void *base = mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) {
            fail("mmap (reserve)");
            return;
        }
        base_ = static_cast<uint8_t *>(base);
        for (size_t off = 0; off < size_; off += period) {
            const size_t len = size_ - off < period ? size_ - off : period;
            if (mmap(base_ + off, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd_, 0) == MAP_FAILED) {
                fail("mmap (block)");
                return;
            }
        }
    }
    ~PeriodicMapping() {
        if (base_) munmap(base_, size_);
        if (fd_ >= 0) close(fd_);
    }
    PeriodicMapping(const PeriodicMapping &) = delete;

    bool ok() const { return error_.empty(); }
    const std::string &error() const { return error_; }
    uint8_t *data() const { return base_; }    // the whole range
    uint8_t *block() const { return base_; }   // its first period: the memory itself
    size_t period() const { return period_; }

private:
    void fail(const char *what) { error_ = std::string(what) + ": " + std::strerror(errno); }

    size_t period_, size_ = 0;
    int fd_ = -1;
    uint8_t *base_ = nullptr;
    std::string error_;
};

}  // namespace fbngrad::test
