// All-or-nothing output: files are written under temporary names in the
// output directory and renamed to their final names only once every one of
// them was written. If anything fails (or commit() is never reached), the
// temporaries are removed and so are the directories this object created.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace fbngrad::cli {

class OutputDir {
public:
    explicit OutputDir(std::string dir) : dir_(std::move(dir)) {}
    ~OutputDir();
    OutputDir(const OutputDir &) = delete;
    OutputDir &operator=(const OutputDir &) = delete;

    // Creates the directory (and missing parents) if needed; throws
    // std::runtime_error naming the path when it cannot, or when the path
    // exists and is not a directory.
    void create();

    // Writes one file: `write` gets the temporary path to write to.
    void add(const std::string &name, const std::function<void(const std::string &tmp_path)> &write);

    // Renames every temporary to its final name. On a failure the files
    // already renamed are removed again and std::runtime_error is thrown.
    void commit();

private:
    void rollback() noexcept;

    std::string dir_;
    std::vector<std::string> created_dirs_;  // outermost first
    struct Entry {
        std::string tmp, final_path;
    };
    std::vector<Entry> files_;
    bool committed_ = false;
};

}  // namespace fbngrad::cli
