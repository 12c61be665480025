#include "tune_state.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "Halide.h"

namespace fbngrad_tune {

using nlohmann::json;

namespace {

json to_json(const CandidateResult &c) {
    return json{{"id", c.id},         {"schedule", c.schedule}, {"eligible", c.eligible}, {"status", c.status},
                {"reason", c.reason}, {"compile_s", c.compile_s}, {"ms", c.ms}};
}

CandidateResult from_json(const json &j) {
    CandidateResult c;
    c.id = j.at("id");
    c.schedule = j.at("schedule");
    c.eligible = j.at("eligible");
    c.status = j.at("status");
    c.reason = j.at("reason");
    c.compile_s = j.at("compile_s");
    c.ms = j.at("ms").get<std::map<std::string, double>>();
    return c;
}

}  // namespace

StateFile::StateFile(std::string path) : path_(std::move(path)) {
    std::ifstream in(path_);
    std::string line;
    int lineno = 0;
    std::streamoff good = 0;  // bytes up to the end of the last whole line
    bool torn = false;
    while (std::getline(in, line)) {
        ++lineno;
        const bool ends_in_newline = !in.eof();
        if (line.empty()) {
            good = in.tellg();
            continue;
        }
        json j;
        try {
            if (!ends_in_newline) throw std::runtime_error("torn");
            j = json::parse(line);
        } catch (const std::exception &) {
            // A run killed while writing leaves a torn last line; anything else is not ours.
            if (in.peek() == EOF) {
                torn = true;
                break;
            }
            throw std::runtime_error(path_ + ":" + std::to_string(lineno) + ": not a tuner state line");
        }
        good = in.eof() ? good : std::streamoff(in.tellg());
        const std::string ev = j.at("event"), cell = j.at("cell");
        if (ev == "check_started") {
            open_checks_[cell].push_back(j.at("candidate"));
        } else if (ev == "check_ended") {
            auto &v = open_checks_[cell];
            v.erase(std::remove(v.begin(), v.end(), j.at("candidate").get<std::string>()), v.end());
        } else if (ev == "cell_done") {
            CellResult r;
            r.cell = cell;
            for (const json &c : j.at("candidates")) r.candidates.push_back(from_json(c));
            for (const auto &[k, d] : j.at("decided").items()) r.decided[k] = d;
            cells_[cell] = r;
            open_checks_.erase(cell);
        }
    }
    in.close();
    // Cut the torn line off, so that the next line appended starts a line of its own.
    if (torn) std::filesystem::resize_file(path_, std::uintmax_t(good));
}

std::vector<std::string> StateFile::crashed(const std::string &cell) const {
    auto it = open_checks_.find(cell);
    return it == open_checks_.end() ? std::vector<std::string>{} : it->second;
}

void StateFile::append(const json &line) {
    std::ofstream out(path_, std::ios::app);
    out << line.dump() << "\n";
    out.flush();
    if (!out) throw std::runtime_error("cannot write the state file " + path_);
}

void StateFile::check_started(const std::string &cell, const std::string &candidate) {
    append({{"event", "check_started"}, {"cell", cell}, {"candidate", candidate}});
}
void StateFile::check_ended(const std::string &cell, const std::string &candidate) {
    append({{"event", "check_ended"}, {"cell", cell}, {"candidate", candidate}});
}
void StateFile::cell_done(const CellResult &r) {
    json cs = json::array();
    for (const CandidateResult &c : r.candidates) cs.push_back(to_json(c));
    append({{"event", "cell_done"}, {"cell", r.cell}, {"candidates", cs}, {"decided", r.decided}});
    cells_[r.cell] = r;
}

Machine describe_machine(const std::string &isa, const std::string &target) {
    Machine m;
    m.isa = isa;
    m.target = target;
    m.cores = int(std::thread::hardware_concurrency());
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line))
        if (line.rfind("model name", 0) == 0) {
            m.cpu = line.substr(line.find(':') + 2);
            break;
        }
    char buf[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    m.date = buf;
    m.halide = std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) + "." +
               std::to_string(HALIDE_VERSION_PATCH);
    return m;
}

std::vector<Winner> winners(const StateFile &s, double min_gain) {
    std::vector<Winner> out;
    for (const auto &[cell, r] : s.cells()) {
        for (const auto &[klass, d] : r.decided) {
            Winner w{cell, klass, d.at("winner"), json::object(), d.at("hand_ms"), d.at("tuned_ms")};
            for (const CandidateResult &c : r.candidates)
                if (c.id == w.id) w.schedule = c.schedule;
            // Noise must not replace the hand schedule: a winner keeps its
            // place only when it is clearly faster.
            if (w.id != "hand" && w.best_ms * (1.0 + min_gain) > w.hand_ms) {
                w.id = "hand";
                w.schedule = json::object();
                w.best_ms = w.hand_ms;
            }
            out.push_back(w);
        }
    }
    return out;
}

json read_table_to_merge(const std::string &path, const std::string &isa) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("--merge: cannot read " + path);
    json t = json::parse(in, nullptr, false);
    if (t.is_discarded() || !t.is_object() || t.value("format", "") != "fbngrad-schedule-table-1" ||
        !t.contains("entries") || !t["entries"].is_array())
        throw std::runtime_error("--merge: " + path + " is not a schedule table written by fbngrad_tune");
    for (const json &e : t["entries"])
        if (!e.is_object() || !e.contains("cell") || !e["cell"].is_string() || !e.contains("class") ||
            !e["class"].is_string())
            throw std::runtime_error("--merge: " + path + " has an entry without a cell and a class: " + e.dump());
    const std::string its = t.contains("machine") && t["machine"].is_object() ? t["machine"].value("isa", "") : "";
    if (its != isa) throw std::runtime_error("--merge: " + path + " is a table of " + its + ", not of " + isa);
    return t;
}

void write_table(const std::string &path, const Machine &m, const StateFile &s, double min_gain, double budget_s,
                 double elapsed_s, const json *earlier) {
    json t;
    t["format"] = "fbngrad-schedule-table-1";
    t["about"] = "Written by fbngrad_tune (bench/tune/); read by cmake/variants.cmake. Each entry: the schedule "
                 "that won a dtype/layout/mode cell on a shape class, with the median times (ms, geometric mean "
                 "over the class's shapes) of it and of the hand schedule. Entries whose winner is \"hand\" build "
                 "nothing extra.";
    t["machine"] = {{"cpu", m.cpu},     {"cores", m.cores},   {"date", m.date},
                    {"halide", m.halide}, {"isa", m.isa},       {"target", m.target}};
    t["run"] = {{"budget_s", budget_s}, {"elapsed_s", elapsed_s}, {"min_gain", min_gain},
                {"cells_tuned", s.cells().size()}};
    json entries = json::array();
    const std::vector<Winner> won = winners(s, min_gain);
    size_t kept = 0;
    if (earlier) {
        auto decided = [&](const json &e) {
            for (const Winner &w : won)
                if (e.value("cell", "") == w.cell && e.value("class", "") == w.klass) return true;
            return false;
        };
        for (const json &e : (*earlier)["entries"])
            if (!decided(e)) entries.push_back(e), ++kept;
        t["run"]["entries_kept_from_earlier"] = kept;
    }
    for (const Winner &w : won) {
        entries.push_back({{"cell", w.cell},
                           {"class", w.klass},
                           {"winner", w.id},
                           {"schedule", w.schedule},
                           {"hand_ms", w.hand_ms},
                           {"tuned_ms", w.best_ms},
                           {"speedup", w.hand_ms / w.best_ms}});
    }
    t["entries"] = entries;
    json rejected = json::array();
    if (earlier && earlier->contains("rejected") && (*earlier)["rejected"].is_array())
        for (const json &r : (*earlier)["rejected"])
            if (r.is_object() && !s.cells().count(r.value("cell", ""))) rejected.push_back(r);
    for (const auto &[cell, r] : s.cells())
        for (const CandidateResult &c : r.candidates)
            if (c.status != "ok") rejected.push_back({{"cell", cell}, {"candidate", c.id}, {"reason", c.reason}});
    t["rejected"] = rejected;

    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp);
        out << t.dump(2) << "\n";
        out.close();
        if (!out) throw std::runtime_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

}  // namespace fbngrad_tune
