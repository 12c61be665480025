#include "outdir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace fbngrad::cli {
namespace {

std::string parent_of(const std::string &p) {
    std::string s = p;
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    size_t slash = s.rfind('/');
    if (slash == std::string::npos) return "";
    if (slash == 0) return "/";
    return s.substr(0, slash);
}

}  // namespace

OutputDir::~OutputDir() {
    if (!committed_) rollback();
}

void OutputDir::create() {
    if (dir_.empty()) throw std::runtime_error("the output directory must not be empty");
    // Collect the missing directories, innermost first, then create them outermost first.
    std::vector<std::string> missing;
    for (std::string p = dir_; !p.empty(); p = parent_of(p)) {
        struct stat st;
        if (::stat(p.c_str(), &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                throw std::runtime_error(fmt::format("cannot create the output directory {}: {} is not a directory",
                                                     dir_, p));
            break;
        }
        if (errno != ENOENT && errno != ENOTDIR)  // ENOTDIR: a parent is a file, found further up
            throw std::runtime_error(
                fmt::format("cannot create the output directory {}: {}: {}", dir_, p, std::strerror(errno)));
        missing.push_back(p);
        if (p == "/") break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (::mkdir(it->c_str(), 0777) != 0 && errno != EEXIST)
            throw std::runtime_error(
                fmt::format("cannot create the output directory {}: {}: {}", dir_, *it, std::strerror(errno)));
        created_dirs_.push_back(*it);
    }
    // Fail now, not half-way, when the directory is not writable.
    if (::access(dir_.c_str(), W_OK | X_OK) != 0)
        throw std::runtime_error(fmt::format("the output directory {} is not writable: {}", dir_, std::strerror(errno)));
}

void OutputDir::add(const std::string &name, const std::function<void(const std::string &)> &write) {
    Entry e;
    e.final_path = dir_ + "/" + name;
    e.tmp = fmt::format("{}/.{}.tmp-{}", dir_, name, static_cast<long>(::getpid()));
    files_.push_back(e);  // recorded first, so that a half-written temporary is removed too
    write(e.tmp);
}

void OutputDir::commit() {
    for (size_t i = 0; i < files_.size(); ++i) {
        if (std::rename(files_[i].tmp.c_str(), files_[i].final_path.c_str()) != 0) {
            int err = errno;
            // Files 0..i-1 already have their final names: take them back out.
            for (size_t j = 0; j < i; ++j) std::remove(files_[j].final_path.c_str());
            std::string msg = fmt::format("cannot rename {} to {}: {}", files_[i].tmp, files_[i].final_path,
                                          std::strerror(err));
            files_.erase(files_.begin(), files_.begin() + long(i));
            throw std::runtime_error(msg);
        }
    }
    committed_ = true;
}

void OutputDir::rollback() noexcept {
    for (const Entry &e : files_) std::remove(e.tmp.c_str());
    for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) ::rmdir(it->c_str());
}

}  // namespace fbngrad::cli
