// app/engine_cli/cmd_architectures.cpp — `strata-engine architectures`: the architectures this
// build runs, from the arch table; --markdown prints docs/models.md's generated section.
#include <cstdio>
#include <memory>

#include "app/engine_cli/commands.h"
#include "engine/model/arch_doc.h"
#include "engine/model/arch_table.h"

namespace strata::cli {

Command add_architectures_command(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("architectures", "list the model architectures this build runs");
  cmd->add_flag("--markdown", *markdown, "the tables of docs/models.md (architectures, block tensors, keys)");
  return [markdown] {
    if (*markdown) {
      std::printf("%s", model::architectures_markdown().c_str());
      return 0;
    }
    for (const model::ArchInfo& a : model::arch_table()) std::printf("%-10s %s\n", a.name, a.covers);
    return 0;
  };
}

}  // namespace strata::cli
