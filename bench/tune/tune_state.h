// The tuner's memory: a state file of JSON lines, appended as work finishes
// (so that --resume continues where a run stopped, was killed or crashed),
// and the schedule table built from it (generators/tuned/<isa>.json, which
// cmake/variants.cmake reads).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fbngrad_tune {

struct CandidateResult {
    std::string id;
    nlohmann::json schedule;          // {"knobs": {...}} | {"autoscheduler": name} | {} for the hand schedule
    bool eligible = true;
    std::string status = "ok";        // ok | rejected
    std::string reason;               // why it was rejected
    double compile_s = 0;
    std::map<std::string, double> ms;  // class -> geometric mean of the class's median times
};

struct CellResult {
    std::string cell;  // "f32/nhwc/train"
    std::vector<CandidateResult> candidates;
    // class -> {"winner": id, "hand_ms": t, "tuned_ms": t}: the screening's best,
    // confirmed against the hand schedule by interleaved timing (fbngrad_tune.cpp).
    std::map<std::string, nlohmann::json> decided;
};

class StateFile {
public:
    // Reads what an earlier run left in `path` (a missing file is an empty state).
    explicit StateFile(std::string path);
    const std::string &path() const { return path_; }

    bool done(const std::string &cell) const { return cells_.count(cell) != 0; }
    // Candidates of `cell` whose check started but never ended: they crashed a run.
    std::vector<std::string> crashed(const std::string &cell) const;
    const std::map<std::string, CellResult> &cells() const { return cells_; }

    void check_started(const std::string &cell, const std::string &candidate);
    void check_ended(const std::string &cell, const std::string &candidate);
    void cell_done(const CellResult &r);

private:
    void append(const nlohmann::json &line);
    std::string path_;
    std::map<std::string, CellResult> cells_;
    std::map<std::string, std::vector<std::string>> open_checks_;
};

struct Machine {
    std::string cpu, date, halide, target, isa;
    int cores = 0;
};
Machine describe_machine(const std::string &isa, const std::string &target);

// The winner of each (cell, class): the fastest eligible candidate that
// passed its checks, kept only when it beats the hand schedule by min_gain
// in the confirmation (CellResult::decided).
struct Winner {
    std::string cell, klass, id;
    nlohmann::json schedule;
    double hand_ms = 0, best_ms = 0;
};
std::vector<Winner> winners(const StateFile &s, double min_gain);

// The table at `path` for --merge: its JSON, checked to be a schedule table
// of `isa`; an error (std::runtime_error) otherwise.
nlohmann::json read_table_to_merge(const std::string &path, const std::string &isa);

// Writes the table (atomically: a temporary file renamed over `path`). With
// `earlier` (a table from read_table_to_merge), its entries of the cells and
// classes this run did not decide are kept, as they were, and its rejections
// of the cells this run did not tune.
void write_table(const std::string &path, const Machine &m, const StateFile &s, double min_gain, double budget_s,
                 double elapsed_s, const nlohmann::json *earlier = nullptr);

}  // namespace fbngrad_tune
