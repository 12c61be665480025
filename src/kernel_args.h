// How an API call becomes a kernel call: the status it fills, and the
// halide_buffer_t views of the caller's memory in the shapes the generated
// kernels take. Shared by the fused op (api.cpp) and the split phase
// (split_phase_api.cpp), so both hand the kernels the same buffers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "HalideRuntime.h"
#include "fbngrad/fbngrad.h"
#include "validate.h"

namespace fbngrad {

inline fbngrad_code set_status(fbngrad_status *status, fbngrad_code code, const std::string &msg) {
    if (status) {
        status->code = code;
        size_t n = std::min(msg.size(), size_t(FBNGRAD_MESSAGE_CAPACITY - 1));
        std::memcpy(status->message, msg.data(), n);
        status->message[n] = '\0';
    }
    return code;
}

inline halide_type_t halide_type(fbngrad_dtype d) {
    switch (d) {
    case FBNGRAD_FLOAT16: return halide_type_t(halide_type_float, 16);
    case FBNGRAD_BFLOAT16: return halide_type_t(halide_type_uint, 16);  // raw bits; see generators/dtype.h
    default: return halide_type_t(halide_type_float, 32);
    }
}

// The kernels' 3-D view (see generators/algorithm.h): NHWC as (c, s*n, 1), NCHW as (s, c, n).
// Every field is written once with its value: value-initialized first (Halide's
// dimension type has default member initializers), GCC zeroed these structs
// with `rep stos`, whose start-up cost, twice a view and eight views a call,
// was 0.2 us of each call on Zen 3 (perf, a 4-5 us call), on one thread
// before the first parallel loop.
struct Tensor3 {
    halide_dimension_t dim[3];
    halide_buffer_t buf;
    Tensor3(void *data, halide_type_t type, const CheckedProblem &p)
        : dim{dimension(p, 0), dimension(p, 1), dimension(p, 2)} {
        init(data, type, 3);
    }
    Tensor3(void *data, int32_t C)
        : dim{halide_dimension_t(0, C, 1), halide_dimension_t(0, 1, C), halide_dimension_t(0, 1, C)} {
        init(data, halide_type_t(halide_type_float, 32), 1);  // dim[1], dim[2]: unused
    }
    static halide_dimension_t dimension(const CheckedProblem &p, int d) {
        const int32_t C = int32_t(p.C), S = int32_t(p.S), N = int32_t(p.N);
        if (p.layout == FBNGRAD_NHWC)
            return d == 0 ? halide_dimension_t(0, C, 1) : d == 1 ? halide_dimension_t(0, S * N, C)
                                                                 : halide_dimension_t(0, 1, S * N * C);
        return d == 0   ? halide_dimension_t(0, S, 1)
               : d == 1 ? halide_dimension_t(0, C, S)
                        : halide_dimension_t(0, N, S * C);
    }
    void init(void *data, halide_type_t type, int dims) {
        buf.device = 0;
        buf.device_interface = nullptr;
        buf.host = static_cast<uint8_t *>(data);
        buf.flags = 0;
        buf.type = type;
        buf.dimensions = dims;
        buf.dim = dim;
        buf.padding = nullptr;
    }
    Tensor3(const Tensor3 &) = delete;
};

}  // namespace fbngrad
