// fbngrad: the command-line tool (shared/spec/CONTRACT.md, "The command line").
//   fbngrad demo   a built-in ResNet-50-sized problem, timed and checked
//   fbngrad run    the op on .npy files
//   fbngrad info   the compiled variants and the dispatch choices here
#include <cstdio>
#include <exception>
#include <map>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "fbngrad/fbngrad.h"

int main(int argc, char **argv) {
    using namespace fbngrad::cli;
    CLI::App app{"fbngrad: TensorFlow's FusedBatchNormGradV2 as Halide AOT kernels", "fbngrad"};
    app.set_version_flag("--version", std::string(fbngrad_version()));
    app.require_subcommand(1, 1);
    app.footer("Exit status: 0 success, 1 error (op error, bad input, failed check), 2 usage error.\n"
               "Run 'fbngrad COMMAND --help' for a command's options.");

    // Each command adds the subcommand of that name.
    const std::pair<const char *, Command (*)(CLI::App &)> table[] = {
        {"demo", add_demo_command}, {"run", add_run_command}, {"info", add_info_command}};
    std::map<CLI::App *, Command> commands;
    for (const auto &[name, add] : table) {
        Command c = add(app);
        commands[app.get_subcommand(name)] = std::move(c);
    }

    // CLI11 reports a missing subcommand before an unknown one: say what is wrong.
    if (argc == 1) {
        fmt::print(stderr, "{}", app.help());
        return kExitUsage;
    }
    for (int i = 1; i < argc; ++i) {
        if (argv[i][0] == '-') continue;  // the top level has flags only (--help, --version)
        bool known = false;
        for (const auto &entry : table) known = known || entry.first == std::string(argv[i]);
        if (!known) {
            fmt::print(stderr, "fbngrad: unknown command '{}' (the commands are demo, run and info)\n"
                               "Run with --help for more information.\n", argv[i]);
            return kExitUsage;
        }
        break;
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        // --help and --version exit 0; everything else is a usage error (2).
        int code = app.exit(e);
        return code == 0 ? kExitOk : kExitUsage;
    }

    // fmt::print throws when it cannot write (stdout on a full disk, a closed
    // pipe): that ends here, with plain stdio, as an error.
    int code = kExitUsage;
    try {
        for (auto &[sub, run] : commands)
            if (sub->parsed()) code = run();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "fbngrad: %s\n", e.what());
        return kExitError;
    } catch (...) {
        std::fprintf(stderr, "fbngrad: unexpected error\n");
        return kExitError;
    }
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "fbngrad: cannot write to stdout\n");
        return kExitError;
    }
    return code;
}
