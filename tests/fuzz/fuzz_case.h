// Turns a fuzzer input (any bytes) into one call of the C API: eight tensor
// views as a C caller could fill them (any rank, shape, dtype, layout and
// device, enum fields holding any int32), the attributes, the process-wide
// settings, and the data. The format, read front to back (a byte past the end
// reads as 0, so every input decodes):
//
//   settings  1 byte: bits 0-1 ISA to force (none, sse41, avx2, avx512); bit 2
//             replace that name by 4 bytes of garbage; bits 3-5 thread count
//             (0: the default); bit 6 attrs NULL; bit 7 status NULL
//   entry     1 byte: bit 0 the split-phase pair (reduce, then apply) instead
//             of the fused op; bits 1-2 its count: as reduced, +1, -1, raw int64
//   x         dtype, layout, device: an "enum" each; rank: 1 byte; 8 dims
//   attrs     is_training: 1 byte; reserve_space_2_is: an enum; epsilon: 1 byte
//   damage    1 byte per tensor (y_backprop, x, scale, reserve_space_1,
//             reserve_space_2, x_backprop, scale_backprop, offset_backprop):
//             the field it breaks, see apply_damage
//   data      the rest: 1 byte per element value (see value_of), for
//             y_backprop, x, scale, reserve_space_1, reserve_space_2 in turn
//
// An "enum" byte b < 0xF0 is a valid value (b mod the count); b >= 0xF0 is
// followed by 4 raw bytes, any int32. y_backprop and x_backprop start as
// copies of x; the [C] vectors as float32 [C], C read from x's channel dim.
// tests/fuzz/make_seeds.py writes the seed corpus in this format.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fbngrad/fbngrad.h"

namespace fbngrad::fuzz {

class ByteReader {
public:
    ByteReader(const uint8_t *data, size_t size) : p_(data), n_(size) {}
    uint8_t u8() {
        if (!n_) return 0;
        --n_;
        return *p_++;
    }
    template <class T>
    T raw() {
        uint8_t b[sizeof(T)];
        for (uint8_t &x : b) x = u8();
        T v;
        std::memcpy(&v, b, sizeof v);
        return v;
    }
    bool empty() const { return n_ == 0; }

private:
    const uint8_t *p_;
    size_t n_;
};

// Enum fields are written and read as their int32 bits: a C caller may store
// any int there, and C++ code must not load an out-of-range enum value.
template <class E>
void set_raw(E &field, int32_t v) {
    static_assert(sizeof(E) == sizeof(int32_t), "C enums are int-sized");
    std::memcpy(&field, &v, sizeof v);
}
template <class E>
int32_t get_raw(const E &field) {
    int32_t v;
    std::memcpy(&v, &field, sizeof v);
    return v;
}

inline int32_t read_enum(ByteReader &r, int valid_count) {
    uint8_t b = r.u8();
    return b < 0xF0 ? b % valid_count : r.raw<int32_t>();
}

// Mostly 4-D or 5-D; sometimes 0 to 9 (9: more than a view holds); sometimes any int32.
inline int32_t read_rank(ByteReader &r) {
    uint8_t b = r.u8();
    if (b < 0x80) return 4;
    if (b < 0xC0) return 5;
    if (b < 0xF0) return b % 10;
    return r.raw<int32_t>();
}

// Mostly small (0-39), sometimes a boundary of 32- or 64-bit arithmetic, sometimes any int64.
inline int64_t read_dim(ByteReader &r) {
    static const int64_t kSpecial[16] = {-1,
                                         -(int64_t(1) << 31),
                                         std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::max(),
                                         (int64_t(1) << 31) - 1,
                                         int64_t(1) << 31,
                                         int64_t(1) << 32,
                                         (int64_t(1) << 32) + 1,
                                         46341,  // its square is just over 2^31
                                         65536,
                                         int64_t(1) << 62,
                                         3037000500,  // its square is just over 2^63
                                         int64_t(1) << 40,
                                         257,
                                         1024,
                                         4096};
    uint8_t b = r.u8();
    if (b < 0xC0) return b % 8;
    if (b < 0xE0) return 8 + (b - 0xC0);
    if (b < 0xF0) return kSpecial[b - 0xE0];
    return r.raw<int64_t>();
}

inline int32_t read_is_training(ByteReader &r) {
    uint8_t b = r.u8();
    return b < 0x80 ? 1 : b < 0xF0 ? 0 : r.raw<int32_t>();
}

inline float read_epsilon(ByteReader &r) {
    static const float kTable[16] = {1e-4f, 1e-3f, 0.0f, 1.0f, 1e-5f, 0.5f, -1e-4f, 2.0f,
                                     std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 1e-20f,
                                     1e30f, -0.0f, 1e-45f, 10.0f};
    uint8_t b = r.u8();
    return b < 0xF0 ? kTable[b % 16] : r.raw<float>();
}

// Element values: mostly in [-4, 4] (so that float32 sums of up to 4096 of
// them cannot overflow, which a double reference would not mirror), and the
// special values: NaN, infinities, -0, subnormal, float16's largest.
inline float value_of(uint8_t b) {
    switch (b) {
    case 0xF8: return std::numeric_limits<float>::quiet_NaN();
    case 0xF9: return INFINITY;
    case 0xFA: return -INFINITY;
    case 0xFB: return -0.0f;
    case 0xFC: return 1e-40f;
    case 0xFD: return 65504.0f;
    case 0xFE: return -65504.0f;
    case 0xFF: return 6e-8f;  // float16's smallest subnormal
    default: return float(int(b) - 124) / 31.0f;
    }
}

enum TensorIndex { kDy, kX, kScale, kMean, kRs2, kXb, kSb, kOb, kNumTensors };
inline const char *tensor_name(int i) {
    static const char *names[] = {"y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2",
                                  "x_backprop", "scale_backprop", "offset_backprop"};
    return names[i];
}

struct Settings {
    int isa_choice = 0;    // 0: automatic, 1 sse41, 2 avx2, 3 avx512
    bool bad_isa = false;  // force an unknown name instead
    char bad_isa_name[5] = {0};
    int threads = 0;
    bool attrs_null = false, status_null = false;
    bool split_phase = false;
    int count_mode = 0;  // 0 as reduced, 1 +1, 2 -1, 3 raw
    int64_t raw_count = 0;
};

struct Case {
    Settings settings;
    fbngrad_tensor t[kNumTensors];
    bool tensor_null[kNumTensors] = {false};
    bool data_null[kNumTensors] = {false};
    fbngrad_attrs attrs;
};

// What one damage byte does to a tensor view: < 0xC0 nothing (most inputs
// build a valid call); otherwise NULL view, NULL data, or one field replaced.
inline void apply_damage(ByteReader &r, Case &c, int i, const fbngrad_tensor &x) {
    fbngrad_tensor &t = c.t[i];
    uint8_t b = r.u8();
    if (b < 0xC0) return;
    switch ((b - 0xC0) / 8) {
    case 0: c.tensor_null[i] = true; break;
    case 1: c.data_null[i] = true; break;
    case 2: set_raw(t.dtype, read_enum(r, 3)); break;
    case 3: set_raw(t.layout, read_enum(r, 2)); break;
    case 4: set_raw(t.device, read_enum(r, 2)); break;
    case 5: t.rank = read_rank(r); break;
    case 6: t.shape[r.u8() % FBNGRAD_MAX_RANK] = read_dim(r); break;
    default: {  // a vector gets x's shape, a 4-D/5-D tensor a [C] shape
        const fbngrad_tensor src = t.rank == 1 ? x : c.t[kScale];
        t.rank = src.rank;
        std::memcpy(t.shape, src.shape, sizeof t.shape);
        break;
    }
    }
}

inline Case decode(ByteReader &r) {
    Case c;
    std::memset(c.t, 0, sizeof c.t);
    Settings &s = c.settings;
    const uint8_t g = r.u8();
    s.isa_choice = g & 3;
    s.bad_isa = (g & 4) != 0;
    s.threads = (g >> 3) & 7;
    s.attrs_null = (g & 0x40) != 0;
    s.status_null = (g & 0x80) != 0;
    if (s.bad_isa)
        for (int k = 0; k < 4; ++k) s.bad_isa_name[k] = char(r.u8());
    const uint8_t e = r.u8();
    s.split_phase = (e & 1) != 0;
    s.count_mode = (e >> 1) & 3;
    if (s.split_phase && s.count_mode == 3) s.raw_count = r.raw<int64_t>();

    fbngrad_tensor x;
    std::memset(&x, 0, sizeof x);
    set_raw(x.dtype, read_enum(r, 3));
    set_raw(x.layout, read_enum(r, 2));
    set_raw(x.device, read_enum(r, 2));
    x.rank = read_rank(r);
    for (int64_t &d : x.shape) d = read_dim(r);

    fbngrad_attrs_init(&c.attrs);
    c.attrs.is_training = read_is_training(r);
    set_raw(c.attrs.reserve_space_2_is, read_enum(r, 2));
    c.attrs.epsilon = read_epsilon(r);

    // The channel count as the op reads it (when x's rank and layout allow).
    int64_t C = x.shape[0];
    const int32_t layout = get_raw(x.layout);
    if (x.rank >= 2 && x.rank <= FBNGRAD_MAX_RANK && (layout == FBNGRAD_NHWC || layout == FBNGRAD_NCHW))
        C = x.shape[layout == FBNGRAD_NHWC ? x.rank - 1 : 1];
    fbngrad_tensor vec;
    std::memset(&vec, 0, sizeof vec);
    set_raw(vec.dtype, FBNGRAD_FLOAT32);
    set_raw(vec.layout, get_raw(x.layout));
    set_raw(vec.device, get_raw(x.device));
    vec.rank = 1;
    vec.shape[0] = C;
    for (int i = 0; i < kNumTensors; ++i) c.t[i] = (i == kDy || i == kX || i == kXb) ? x : vec;
    for (int i = 0; i < kNumTensors; ++i) apply_damage(r, c, i, x);
    return c;
}

}  // namespace fbngrad::fuzz
