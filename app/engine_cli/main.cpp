// app/engine_cli/main.cpp — `strata-engine`: the headless engine command.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <string>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/ranks.h"
#include "engine/core/version.h"

int main(int argc, char** argv) {
  CLI::App app{"strata-engine: run, inspect and benchmark GGUF language models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("strata-engine ") + strata::version());
  std::map<std::string, strata::cli::Command> commands;
  commands["run"] = strata::cli::add_run_command(app);
  commands["chat"] = strata::cli::add_chat_command(app);
  commands["tokenize"] = strata::cli::add_tokenize_command(app);
  commands["info"] = strata::cli::add_info_command(app);
  commands["bench"] = strata::cli::add_bench_command(app);
  commands["make-model"] = strata::cli::add_make_model_command(app);
  commands["plan"] = strata::cli::add_plan_command(app);
  commands["devices"] = strata::cli::add_devices_command(app);
  commands["serve"] = strata::cli::add_serve_command(app);
  commands["perplexity"] = strata::cli::add_perplexity_command(app);
  commands["architectures"] = strata::cli::add_architectures_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  // Under mpirun with several processes: rank 0 runs the command, the others serve it their devices.
  if (strata::Status s = strata::cli::start_ranks(); !s.ok()) return strata::cli::report(s.error());
  int code = 2;
  for (CLI::App* sub : app.get_subcommands()) {
    auto it = commands.find(sub->get_name());
    if (it == commands.end()) continue;
    strata::cli::RankContext* ranks = strata::cli::rank_context();
    code = ranks && ranks->link->rank() != 0 ? strata::cli::run_worker(*sub) : it->second();
    break;
  }
  strata::cli::finish_ranks();
  return code;
}
