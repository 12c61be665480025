// Whether this process can run the CUDA variants, decided once: the driver
// library loads (libcuda.so.1, through cuda_driver.h), cuInit(0) succeeds and
// cuDeviceGetCount finds at least one device. The dispatcher reports the CUDA
// rows of the variant table as supported exactly then, and the API answers
// kNoCudaDevice for CUDA tensors otherwise (instead of reaching the Halide
// runtime, which would fail deep inside the kernel call).
#pragma once

#include <string>

namespace fbngrad::runtime {

constexpr const char *kNoCudaDevice = "no CUDA device available";

bool cuda_available();

// "" when available; otherwise why not, e.g. "cannot load the CUDA driver:
// libcuda.so.1: cannot open shared object file: No such file or directory".
const std::string &cuda_unavailable_reason();

}  // namespace fbngrad::runtime
