// app/engine_cli/cmd_tokenize.cpp — `strata-engine tokenize`: token ids of a text on stdout.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace strata::cli {

namespace {
struct TokenizeOptions {
  std::string model;
  std::string text;
  bool no_bos = false;
  bool no_parse_special = false;
  bool pieces = false;
  bool json = false;
};

int tokenize(const TokenizeOptions& o) {
  // Only the vocabulary is needed: vocab-only GGUF files work too.
  auto path = resolve_model_path(o.model);
  if (!path.ok()) return report(path.error());
  auto file = gguf::GgufFile::open(*path);
  if (!file.ok()) return report(file.error());
  auto vocab = tokenizer::Vocab::from_gguf(*file);
  if (!vocab.ok()) return report(vocab.error());
  auto tok = tokenizer::Tokenizer::create(std::move(*vocab));
  if (!tok.ok()) return report(tok.error());
  const std::vector<int32_t> ids = tok->encode(o.text, !o.no_bos, !o.no_parse_special);
  if (o.json) {
    nlohmann::json j = nlohmann::json::array();
    for (int32_t id : ids) {
      j.push_back(o.pieces ? nlohmann::json{{"id", id}, {"piece", tok->token_to_piece(id)}} : nlohmann::json(id));
    }
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += o.pieces ? "\n" : " ";
    line += std::to_string(ids[i]);
    if (o.pieces) line += " '" + tok->token_to_piece(ids[i]) + "'";
  }
  std::printf("%s\n", line.c_str());
  return 0;
}
}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  cmd->add_option("-m,--model", o->model, "GGUF model or vocab-only file");
  cmd->add_option("-p,--prompt,text", o->text, "text to tokenize")->required();
  cmd->add_flag("--no-bos", o->no_bos, "do not add BOS/EOS even where the vocabulary asks for them");
  cmd->add_flag("--no-parse-special", o->no_parse_special, "treat <|special|> markers as plain text");
  cmd->add_flag("--pieces", o->pieces, "print each id with its text");
  cmd->add_flag("--json", o->json, "print a JSON array");
  return [o] { return tokenize(*o); };
}

}  // namespace strata::cli
