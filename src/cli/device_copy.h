// `fbngrad run --device cuda`: the library takes CUDA tensors as device
// pointers, so the command copies its host arrays to device memory and the
// outputs back, through the CUDA driver API (runtime/cuda_driver.h, dlopen'd).
// Device 0's primary context is made current on the calling thread: the one
// the library then uses (fbngrad.h, "CUDA").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fbngrad::cli {

class DeviceCopies {
public:
    DeviceCopies() = default;
    DeviceCopies(const DeviceCopies &) = delete;
    ~DeviceCopies();  // frees every allocation

    // Makes the context current; false with *error set on failure.
    bool open(std::string *error);
    // Device memory of `bytes` (at least 4, so that empty tensors get a valid
    // pointer) holding a copy of `host` (nullptr: uninitialized); nullptr on failure.
    void *copy_to_device(const void *host, size_t bytes, std::string *error);
    // Waits for the device, then copies `bytes` from `device` into `host`.
    bool copy_to_host(void *host, const void *device, size_t bytes, std::string *error);

private:
    std::vector<unsigned long long> allocations_;
};

}  // namespace fbngrad::cli
