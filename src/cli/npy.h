// A small reader/writer for NumPy's .npy format (versions 1.0, 2.0 and 3.0),
// limited to what the CLI needs: little-endian '<f4', '<f2' and '<u2'
// arrays in C order, rank 0 to 8.
//
// Why not xtensor's xnpy.hpp (libxtensor-dev 0.24): it does not check that
// the data section is complete (a truncated file loads garbage silently), it
// rejects version 3.0 files, its errors do not say which file or what was
// wrong, and it only exposes the dtype through its detail namespace. The
// format is simple enough to read carefully here.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fbngrad::cli {

// Every failure of the reader or writer; what() starts with the file's path.
struct NpyError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct NpyArray {
    std::string descr;                // "<f4", "<f2" or "<u2"
    std::vector<int64_t> shape;       // C order
    std::vector<unsigned char> data;  // the raw little-endian elements

    int64_t elements() const;
    int item_size() const { return descr == "<f4" ? 4 : 2; }
};

constexpr int kNpyMaxRank = 8;

// Reads `path`. Throws NpyError for a missing or unreadable file, a bad magic
// string or version, a malformed header, a dtype other than the three above,
// Fortran order, a rank above 8, and a data section that is shorter or longer
// than the shape says.
NpyArray read_npy(const std::string &path);

// Writes a version 1.0 file. `data` holds product(shape) elements of `descr`.
// Throws NpyError when the file cannot be created or written completely.
// `exclusive`: fail if the file already exists.
void write_npy(const std::string &path, const std::string &descr, const std::vector<int64_t> &shape,
               const void *data, bool exclusive);

}  // namespace fbngrad::cli
