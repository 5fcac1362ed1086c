// engine/serve/harmony.h — OpenAI's harmony output format (gpt-oss) split into what a chat client
// shows: the analysis channel becomes "reasoning_content", the final (and commentary) channels
// "content", and the format's markers disappear. Streaming: text arrives in pieces that may cut a
// marker in two, so a piece's tail that could start a marker is held until the next piece (or the
// end). No engine types; the caller owns one splitter per choice, on one thread.
//
// The format: "<|start|>{role}<|channel|>{channel}[ to=...][<|constrain|>{type}]<|message|>{text}"
// ending with <|end|> (another message follows), <|return|> or <|call|>. The generation prompt
// already holds "<|start|>assistant", so a reply begins at "<|channel|>".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::serve {

// A tool call: a message addressed "to=functions.NAME" (in its role or channel header), its text
// the arguments (JSON as the model wrote it).
struct HarmonyCall {
  std::string name;
  std::string arguments;
};

struct HarmonyParts {
  std::string reasoning;  // analysis channel text
  std::string content;    // final / commentary text, and text outside any message
  std::vector<HarmonyCall> calls;  // calls whose message ended in this piece (or at finish)
};

class HarmonySplitter {
 public:
  // The parts of `piece` that are complete (a marker cut at its end waits for the next call).
  HarmonyParts feed(std::string_view piece);
  // Whatever is held back, as text of the current message (the reply ended inside it).
  HarmonyParts finish();

 private:
  enum class State { Body, Role, Channel, Constrain };
  HarmonyParts take(bool final_piece);
  void emit(std::string_view text, HarmonyParts& out);
  void end_message(HarmonyParts& out);  // a call's message is complete

  std::string pending_;       // text not yet examined (at most a marker's length after take)
  State state_ = State::Body;
  std::string role_;          // the current message's role header ("assistant to=functions.f")
  std::string channel_;       // the current message's channel header ("analysis", "final to=...")
  bool in_message_ = false;   // inside a message's text (after <|message|>)
  bool in_call_ = false;      // ... of a message addressed to a function
  HarmonyCall call_;
};

// The whole text at once (a non-streamed reply).
HarmonyParts split_harmony(std::string_view text);

// Whether a chat template writes the harmony format (it uses its channel markers).
bool is_harmony_template(std::string_view template_source);

}  // namespace strata::serve
