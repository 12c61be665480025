#include "common.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <strings.h>

namespace fbngrad::cli {

const char *dtype_name(fbngrad_dtype t) {
    switch (t) {
    case FBNGRAD_FLOAT32: return "float32";
    case FBNGRAD_FLOAT16: return "float16";
    case FBNGRAD_BFLOAT16: return "bfloat16";
    }
    return "?";
}

const char *layout_name(fbngrad_layout l) { return l == FBNGRAD_NHWC ? "NHWC" : l == FBNGRAD_NCHW ? "NCHW" : "?"; }
const char *device_name(fbngrad_device d) { return d == FBNGRAD_CPU ? "cpu" : d == FBNGRAD_CUDA ? "cuda" : "?"; }
const char *mode_name(int32_t is_training) { return is_training ? "training" : "inference"; }

std::optional<fbngrad_dtype> parse_dtype(const std::string &s) {
    if (s == "float32") return FBNGRAD_FLOAT32;
    if (s == "float16") return FBNGRAD_FLOAT16;
    if (s == "bfloat16") return FBNGRAD_BFLOAT16;
    return std::nullopt;
}

std::optional<fbngrad_layout> parse_data_format(const std::string &s) {
    if (s == "NHWC" || s == "NDHWC") return FBNGRAD_NHWC;
    if (s == "NCHW" || s == "NCDHW") return FBNGRAD_NCHW;
    return std::nullopt;
}

std::string data_format_error(const std::string &s) {
    return "Value for attr 'data_format' of \"" + s +
           "\" is not in the list of allowed values: \"NHWC\", \"NCHW\", \"NDHWC\", \"NCDHW\"";
}

std::optional<float> parse_float(const std::string &s) {
    if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
    char *end = nullptr;
    errno = 0;
    // Parsed as a double and then rounded once to float, as Python's float -> float32 attr does.
    double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return std::nullopt;
    return static_cast<float>(d);
}

std::optional<bool> parse_bool(const std::string &s) {
    if (strcasecmp(s.c_str(), "true") == 0) return true;
    if (strcasecmp(s.c_str(), "false") == 0) return false;
    return std::nullopt;
}

std::string shape_string(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ",";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

}  // namespace fbngrad::cli
