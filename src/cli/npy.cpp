#include "npy.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.cpp copies little-endian .npy data as is: it needs a little-endian host"
#endif

namespace fbngrad::cli {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr uint32_t kMaxHeaderLen = 1u << 20;  // numpy itself refuses headers over 10000 bytes
constexpr int64_t kMaxDim = int64_t(1) << 62;

struct FileCloser {
    void operator()(std::FILE *f) const {
        if (f) std::fclose(f);
    }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

[[noreturn]] void fail(const std::string &path, const std::string &why) {
    throw NpyError(fmt::format("{}: {}", path, why));
}

// A parser for the header: a Python dict literal with the keys 'descr' (a
// string), 'fortran_order' (True/False) and 'shape' (a tuple of ints), e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
    HeaderParser(const std::string &path, const std::string &text) : path_(path), s_(text) {}

    void parse(std::string &descr, bool &fortran, std::vector<int64_t> &shape) {
        bool have_descr = false, have_fortran = false, have_shape = false;
        ws();
        expect('{');
        for (;;) {
            ws();
            if (peek() == '}') break;
            std::string key = quoted();
            ws();
            expect(':');
            ws();
            if (key == "descr") {
                if (peek() != '\'' && peek() != '"')
                    fail(path_, "unsupported dtype: structured arrays are not supported");
                descr = quoted();
                have_descr = true;
            } else if (key == "fortran_order") {
                if (word("True")) fortran = true;
                else if (word("False")) fortran = false;
                else bad("'fortran_order' must be True or False");
                have_fortran = true;
            } else if (key == "shape") {
                shape = tuple();
                have_shape = true;
            } else {
                bad(fmt::format("unexpected key '{}'", key));
            }
            ws();
            if (peek() == ',') {
                ++i_;
                continue;
            }
            ws();
            if (peek() != '}') bad("expected ',' or '}'");
        }
        ++i_;
        ws();
        if (i_ != s_.size()) bad("unexpected text after the dictionary");
        if (!have_descr || !have_fortran || !have_shape)
            bad("the keys 'descr', 'fortran_order' and 'shape' are required");
    }

private:
    [[noreturn]] void bad(const std::string &why) { fail(path_, "malformed .npy header: " + why); }
    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
    void expect(char c) {
        if (peek() != c) bad(fmt::format("expected '{}'", c));
        ++i_;
    }
    bool word(const char *w) {
        size_t n = std::strlen(w);
        if (s_.compare(i_, n, w) != 0) return false;
        i_ += n;
        return true;
    }
    std::string quoted() {
        char q = peek();
        if (q != '\'' && q != '"') bad("expected a quoted string");
        size_t end = s_.find(q, i_ + 1);
        if (end == std::string::npos) bad("unterminated string");
        std::string v = s_.substr(i_ + 1, end - i_ - 1);
        i_ = end + 1;
        return v;
    }
    std::vector<int64_t> tuple() {
        std::vector<int64_t> dims;
        expect('(');
        for (;;) {
            ws();
            if (peek() == ')') break;
            if (peek() < '0' || peek() > '9') bad("the shape must be a tuple of non-negative integers");
            int64_t v = 0;
            while (peek() >= '0' && peek() <= '9') {
                const int digit = peek() - '0';
                if (v > (kMaxDim - digit) / 10) bad("a dimension is too large");  // before v*10 could overflow
                v = v * 10 + digit;
                ++i_;
            }
            if (peek() == 'L') ++i_;  // Python 2 long literals
            dims.push_back(v);
            if (dims.size() > 64) bad("too many dimensions");
            ws();
            if (peek() == ',') ++i_;
            else if (peek() != ')') bad("expected ',' or ')' in the shape");
        }
        ++i_;
        return dims;
    }

    const std::string &path_;
    const std::string &s_;
    size_t i_ = 0;
};

bool read_exact(std::FILE *f, void *buf, size_t n) { return std::fread(buf, 1, n, f) == n; }

}  // namespace

int64_t NpyArray::elements() const {
    int64_t e = 1;
    for (int64_t d : shape) e *= d;
    return e;
}

NpyArray read_npy(const std::string &path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) fail(path, std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a .npy file");
    File f(std::fopen(path.c_str(), "rb"));
    if (!f) fail(path, std::strerror(errno));

    unsigned char pre[kMagicLen + 2];
    size_t got = std::fread(pre, 1, sizeof pre, f.get());
    if (got < kMagicLen || std::memcmp(pre, kMagic, kMagicLen) != 0)
        fail(path, "not a .npy file (the magic string \\x93NUMPY is missing)");
    if (got < sizeof pre) fail(path, "truncated .npy file (it ends inside the preamble)");
    const int major = pre[kMagicLen], minor = pre[kMagicLen + 1];
    if ((major < 1 || major > 3) || minor != 0)
        fail(path, fmt::format("unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 are read)", major, minor));

    uint32_t header_len = 0;
    unsigned char len_bytes[4] = {0, 0, 0, 0};
    const size_t len_size = major == 1 ? 2 : 4;
    if (!read_exact(f.get(), len_bytes, len_size)) fail(path, "truncated .npy file (it ends inside the preamble)");
    for (size_t i = 0; i < len_size; ++i) header_len |= uint32_t(len_bytes[i]) << (8 * i);
    if (header_len > kMaxHeaderLen) fail(path, fmt::format("the .npy header is implausibly long ({} bytes)", header_len));
    std::string header(header_len, '\0');
    if (!read_exact(f.get(), header.data(), header_len)) fail(path, "truncated .npy file (it ends inside the header)");

    NpyArray a;
    bool fortran = false;
    HeaderParser(path, header).parse(a.descr, fortran, a.shape);

    if (a.descr != "<f4" && a.descr != "<f2" && a.descr != "<u2") {
        std::string hint;
        if (a.descr == ">f4" || a.descr == ">f2" || a.descr == ">u2") hint = " (big-endian data is not supported)";
        fail(path, fmt::format("unsupported dtype '{}'{}; fbngrad reads float32 ('<f4'), float16 ('<f2') "
                               "and bfloat16 bits ('<u2')",
                               a.descr, hint));
    }
    if (fortran)
        fail(path, "Fortran-order (column-major) arrays are not supported; save a C-order array "
                   "(numpy.ascontiguousarray)");
    if (a.shape.size() > size_t(kNpyMaxRank))
        fail(path, fmt::format("rank {} is not supported (at most {} dimensions)", a.shape.size(), kNpyMaxRank));

    // Size of the data section, with overflow checks.
    uint64_t bytes = uint64_t(a.item_size());
    for (int64_t d : a.shape) {
        if (d != 0 && bytes > (uint64_t(1) << 62) / uint64_t(d)) fail(path, "the array is too large");
        bytes *= uint64_t(d);
    }
    if (S_ISREG(st.st_mode)) {
        const long data_start = std::ftell(f.get());  // a pipe has no position: regular files only
        if (data_start < 0) fail(path, std::strerror(errno));
        const uint64_t available = uint64_t(st.st_size) > uint64_t(data_start) ? uint64_t(st.st_size) - data_start : 0;
        if (available < bytes)
            fail(path, fmt::format("truncated .npy file: the shape needs {} bytes of data, the file has {}", bytes,
                                   available));
        if (available > bytes)
            fail(path, fmt::format("{} unexpected bytes after the array data", available - bytes));
    }
    // A regular file's size was checked above. From a pipe the data arrive
    // with no size known up front: read in chunks, growing the buffer only as
    // far as data came, so that a header claiming gigabytes costs no more
    // memory than the bytes really sent.
    constexpr uint64_t kChunk = uint64_t(64) << 20;
    for (uint64_t done = 0; done < bytes;) {
        const uint64_t n = std::min(kChunk, bytes - done);
        if (a.data.capacity() < done + n) a.data.reserve(size_t(std::max(done + n, 2 * uint64_t(a.data.capacity()))));
        a.data.resize(size_t(done + n));
        if (!read_exact(f.get(), a.data.data() + done, size_t(n))) {
            if (std::ferror(f.get())) fail(path, std::strerror(errno));
            fail(path, fmt::format("truncated .npy file: the shape needs {} bytes of data", bytes));
        }
        done += n;
    }
    if (std::fgetc(f.get()) != EOF) fail(path, "unexpected bytes after the array data");
    return a;
}

void write_npy(const std::string &path, const std::string &descr, const std::vector<int64_t> &shape,
               const void *data, bool exclusive) {
    std::string dims;
    for (int64_t d : shape) dims += fmt::format("{}, ", d);
    if (shape.size() == 1) dims.pop_back();  // "(5,)"
    else if (!shape.empty()) dims.resize(dims.size() - 2);
    std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
    // Pad with spaces so that the data starts at a multiple of 64, ending in '\n'.
    const size_t preamble = kMagicLen + 2 + 2;
    header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
    header.push_back('\n');
    if (header.size() > 65535) fail(path, "internal error: header too long");

    uint64_t bytes = descr == "<f4" ? 4 : 2;
    for (int64_t d : shape) bytes *= uint64_t(d);

    File f(std::fopen(path.c_str(), exclusive ? "wbx" : "wb"));
    if (!f) fail(path, fmt::format("cannot create: {}", std::strerror(errno)));
    unsigned char pre[preamble];
    std::memcpy(pre, kMagic, kMagicLen);
    pre[6] = 1;
    pre[7] = 0;
    pre[8] = uint8_t(header.size() & 0xff);
    pre[9] = uint8_t(header.size() >> 8);
    bool ok = std::fwrite(pre, 1, preamble, f.get()) == preamble &&
              std::fwrite(header.data(), 1, header.size(), f.get()) == header.size() &&
              (bytes == 0 || std::fwrite(data, 1, size_t(bytes), f.get()) == size_t(bytes));
    int err = errno;
    ok = (std::fflush(f.get()) == 0) && ok;
    if (!ok) err = errno;
    if (std::fclose(f.release()) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) fail(path, fmt::format("write failed: {}", std::strerror(err)));
}

}  // namespace fbngrad::cli
