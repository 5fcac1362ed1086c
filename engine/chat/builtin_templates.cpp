// engine/chat/builtin_templates.cpp — Jinja sources of the named chat formats users can pick when a
// model ships no template (or a broken one). Written for Strata in the canonical formats; data only.
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "engine/chat/chat_template.h"

namespace strata::chat {
namespace {

// <|im_start|>role\ncontent<|im_end|>\n  (Qwen, Hermes, many fine-tunes)
constexpr std::string_view kChatml = R"J({%- for message in messages -%}
{{- '<|im_start|>' + message['role'] + '\n' + message['content'] | default('', true) + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- endif -%}
)J";

// <s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] answer </s><s>[INST] user [/INST]
constexpr std::string_view kLlama2 = R"J({%- if messages and messages[0]['role'] == 'system' -%}
{%- set system = messages[0]['content'] | trim -%}
{%- set turns = messages[1:] -%}
{%- else -%}
{%- set system = '' -%}
{%- set turns = messages -%}
{%- endif -%}
{%- for message in turns -%}
{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
{{- raise_exception('llama2 chat format: roles must alternate user/assistant after an optional system message') -}}
{%- endif -%}
{%- if message['role'] == 'user' -%}
{%- set content = message['content'] | trim -%}
{%- if loop.first and system -%}
{%- set content = '<<SYS>>\n' + system + '\n<</SYS>>\n\n' + content -%}
{%- endif -%}
{{- bos_token + '[INST] ' + content + ' [/INST]' -}}
{%- else -%}
{{- ' ' + message['content'] | default('', true) | trim + ' ' + eos_token -}}
{%- endif -%}
{%- endfor -%}
)J";

// <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
constexpr std::string_view kLlama3 = R"J({{- bos_token -}}
{%- for message in messages -%}
{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | default('', true) | trim + '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
{%- endif -%}
)J";

// <s>[INST] system\n\nuser [/INST]answer</s>[INST] user [/INST]  (Mistral 7B Instruct)
constexpr std::string_view kMistral = R"J({%- if messages and messages[0]['role'] == 'system' -%}
{%- set system = messages[0]['content'] -%}
{%- set turns = messages[1:] -%}
{%- else -%}
{%- set system = '' -%}
{%- set turns = messages -%}
{%- endif -%}
{{- bos_token -}}
{%- for message in turns -%}
{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
{{- raise_exception('mistral chat format: roles must alternate user/assistant after an optional system message') -}}
{%- endif -%}
{%- if message['role'] == 'user' -%}
{%- if loop.first and system -%}
{{- '[INST] ' + system + '\n\n' + message['content'] + ' [/INST]' -}}
{%- else -%}
{{- '[INST] ' + message['content'] + ' [/INST]' -}}
{%- endif -%}
{%- else -%}
{{- message['content'] | default('', true) + eos_token -}}
{%- endif -%}
{%- endfor -%}
)J";

// <bos><start_of_turn>user\ncontent<end_of_turn>\n<start_of_turn>model\n  (system folded into the first turn)
constexpr std::string_view kGemma = R"J({{- bos_token -}}
{%- if messages and messages[0]['role'] == 'system' -%}
{%- set system = messages[0]['content'] | trim + '\n\n' -%}
{%- set turns = messages[1:] -%}
{%- else -%}
{%- set system = '' -%}
{%- set turns = messages -%}
{%- endif -%}
{%- for message in turns -%}
{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
{{- raise_exception('gemma chat format: roles must alternate user/assistant after an optional system message') -}}
{%- endif -%}
{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
{{- '<start_of_turn>' + role + '\n' + (system if loop.first else '') + message['content'] | default('', true) | trim + '<end_of_turn>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<start_of_turn>model\n' -}}
{%- endif -%}
)J";

// <|system|>\ncontent<|end|>\n<|user|>\ncontent<|end|>\n<|assistant|>\n
constexpr std::string_view kPhi3 = R"J({%- for message in messages -%}
{%- if message['role'] in ['system', 'user', 'assistant'] -%}
{{- '<|' + message['role'] + '|>\n' + message['content'] | default('', true) + '<|end|>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|assistant|>\n' -}}
{%- else -%}
{{- eos_token -}}
{%- endif -%}
)J";

// <bos>system<｜User｜>user<｜Assistant｜>answer<｜end▁of▁sentence｜>...<｜Assistant｜><think>\n
// Earlier answers lose their reasoning: only the text after </think> is kept, as DeepSeek trains.
constexpr std::string_view kDeepseekR1 = R"J({{- bos_token -}}
{%- for message in messages if message['role'] == 'system' -%}
{{- message['content'] -}}
{%- endfor -%}
{%- for message in messages -%}
{%- if message['role'] == 'user' -%}
{{- '<｜User｜>' + message['content'] -}}
{%- elif message['role'] == 'assistant' -%}
{%- set content = message['content'] | default('', true) -%}
{%- if '</think>' in content -%}
{%- set content = content.split('</think>')[-1] -%}
{%- endif -%}
{{- '<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<｜Assistant｜><think>\n' -}}
{%- endif -%}
)J";

// No chat format: the contents as one text, for base models.
constexpr std::string_view kCompletion = R"J({%- for message in messages -%}
{{- message['content'] | default('', true) -}}
{%- if not loop.last -%}
{{- '\n\n' -}}
{%- endif -%}
{%- endfor -%}
)J";

constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kTemplates = {{
    {"chatml", kChatml},
    {"llama2", kLlama2},
    {"llama3", kLlama3},
    {"mistral", kMistral},
    {"gemma", kGemma},
    {"phi3", kPhi3},
    {"deepseek-r1", kDeepseekR1},
    {"completion", kCompletion},
}};

}  // namespace

Expected<std::string> builtin_template_source(std::string_view name) {
  for (const auto& [n, source] : kTemplates)
    if (n == name) return std::string(source);
  std::string known;
  for (const auto& [n, source] : kTemplates) known += (known.empty() ? "" : ", ") + std::string(n);
  return make_error(Code::NotFound, "no built-in chat template named '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> builtin_template_names() {
  std::vector<std::string> names;
  for (const auto& [n, source] : kTemplates) names.emplace_back(n);
  return names;
}

}  // namespace strata::chat
