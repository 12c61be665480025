// Small helpers shared by the CLI's commands: names of the C API's enums,
// the exit codes, and the parsing of attribute values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"

namespace fbngrad::cli {

// Exit codes of every command.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;  // an op error, bad input data, a failed check
constexpr int kExitUsage = 2;  // unknown command or flag, a missing or malformed argument

const char *dtype_name(fbngrad_dtype t);    // "float32", "float16", "bfloat16"
const char *layout_name(fbngrad_layout l);  // "NHWC", "NCHW"
const char *device_name(fbngrad_device d);  // "cpu", "cuda"
const char *mode_name(int32_t is_training); // "training", "inference"

std::optional<fbngrad_dtype> parse_dtype(const std::string &s);

// data_format as TensorFlow accepts it: NHWC/NDHWC are channels-last, NCHW/NCDHW channels-first.
std::optional<fbngrad_layout> parse_data_format(const std::string &s);
// TensorFlow's message for any other value.
std::string data_format_error(const std::string &s);

// A float as TensorFlow's float attributes take it: the whole string must be
// a number; "nan", "inf" and "-inf" are allowed; values beyond float's range
// become +-inf and tiny ones 0 or a subnormal, as a float32 conversion would.
std::optional<float> parse_float(const std::string &s);

// "true" or "false" (any case).
std::optional<bool> parse_bool(const std::string &s);

// "[2,2,2,3]", the way TensorShape::DebugString prints shapes.
std::string shape_string(const std::vector<int64_t> &shape);

// The elements a vector of bytes or floats needs, never fewer than one, so
// that even an empty tensor gets a valid (non-null) data pointer.
inline size_t at_least_one(int64_t n) { return n > 0 ? size_t(n) : 1; }

}  // namespace fbngrad::cli
