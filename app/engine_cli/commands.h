// app/engine_cli/commands.h — each strata-engine subcommand registers itself on the CLI11 app
// and returns the function that runs it (the process exit code).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace strata::cli {

using Command = std::function<int()>;

Command add_run_command(CLI::App& app);
Command add_chat_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_info_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_make_model_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
Command add_devices_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_perplexity_command(CLI::App& app);
Command add_architectures_command(CLI::App& app);

}  // namespace strata::cli
