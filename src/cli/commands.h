// The commands of the `fbngrad` tool. Each one adds its subcommand to the
// CLI11 app (binding its flags to a struct it owns) and returns the function
// that runs it once the arguments were parsed; that function returns the
// process's exit code (common.h).
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace fbngrad::cli {

using Command = std::function<int()>;

Command add_demo_command(CLI::App &app);
Command add_run_command(CLI::App &app);
Command add_info_command(CLI::App &app);

}  // namespace fbngrad::cli
