// engine/serve/harmony.cpp — the harmony splitter: markers found left to right, text routed by the
// state of the message it belongs to.
#include "engine/serve/harmony.h"

#include <array>

namespace strata::serve {
namespace {

constexpr std::array<std::string_view, 7> kMarkers = {"<|start|>",   "<|channel|>", "<|message|>", "<|constrain|>",
                                                      "<|end|>",     "<|return|>",  "<|call|>"};

// The function a message header addresses ("... to=functions.get_weather ..."), or "".
std::string function_of(std::string_view header) {
  const size_t to = header.find("to=functions.");
  if (to == std::string_view::npos) return "";
  const size_t begin = to + 13;
  size_t end = begin;
  while (end < header.size() && header[end] != ' ' && header[end] != '\t' && header[end] != '\n' && header[end] != '<')
    ++end;
  return std::string(header.substr(begin, end - begin));
}

// Whether `tail` (starting with "<|") is a proper prefix of a marker: it may become one.
bool could_be_marker(std::string_view tail) {
  for (std::string_view m : kMarkers)
    if (tail.size() < m.size() && m.substr(0, tail.size()) == tail) return true;
  return false;
}

}  // namespace

void HarmonySplitter::emit(std::string_view text, HarmonyParts& out) {
  if (text.empty()) return;
  switch (state_) {
    case State::Role:  // the role name after <|start|> (and a recipient): not shown
      role_.append(text);
      return;
    case State::Constrain:
      return;
    case State::Channel:
      channel_.append(text);
      return;
    case State::Body:
      // A message's text goes by its channel; text outside any message (a model that does not
      // write the format) is content.
      if (in_call_) {
        call_.arguments.append(text);
      } else if (in_message_ && channel_.rfind("analysis", 0) == 0) {
        out.reasoning.append(text);
      } else {
        out.content.append(text);
      }
      return;
  }
}

void HarmonySplitter::end_message(HarmonyParts& out) {
  if (in_call_) out.calls.push_back(std::move(call_));
  call_ = HarmonyCall{};
  in_call_ = false;
}

HarmonyParts HarmonySplitter::take(bool final_piece) {
  HarmonyParts out;
  size_t at = 0;
  while (at < pending_.size()) {
    const size_t open = pending_.find("<|", at);
    if (open == std::string::npos) {
      // A lone '<' at the very end may begin a marker.
      const bool keep_last = !final_piece && pending_.back() == '<';
      const size_t end = keep_last ? pending_.size() - 1 : pending_.size();
      emit(std::string_view(pending_).substr(at, end - at), out);
      at = end;
      break;
    }
    emit(std::string_view(pending_).substr(at, open - at), out);
    at = open;
    const std::string_view tail = std::string_view(pending_).substr(open);
    std::string_view marker;
    for (std::string_view m : kMarkers)
      if (tail.substr(0, m.size()) == m) marker = m;
    if (marker.empty()) {
      if (!final_piece && could_be_marker(tail)) break;  // wait for the rest
      emit(tail.substr(0, 2), out);                      // "<|" that starts no marker: text
      at += 2;
      continue;
    }
    at += marker.size();
    if (marker == "<|start|>") {
      end_message(out);
      state_ = State::Role, in_message_ = false, role_.clear(), channel_.clear();
    } else if (marker == "<|channel|>") {
      if (in_message_) end_message(out), role_.clear();  // a new message without <|start|>
      state_ = State::Channel, channel_.clear(), in_message_ = false;
    } else if (marker == "<|constrain|>") {
      state_ = State::Constrain;
    } else if (marker == "<|message|>") {
      state_ = State::Body, in_message_ = true;
      call_.name = function_of(role_ + " " + channel_);
      in_call_ = !call_.name.empty();
    } else {  // <|end|>, <|return|>, <|call|>: the message is over
      end_message(out);
      state_ = State::Body, in_message_ = false, role_.clear(), channel_.clear();
    }
  }
  pending_.erase(0, at);
  return out;
}

HarmonyParts HarmonySplitter::feed(std::string_view piece) {
  pending_.append(piece);
  return take(false);
}

HarmonyParts HarmonySplitter::finish() {
  HarmonyParts out = take(true);
  end_message(out);  // a call cut short (max_tokens) still says what it had
  return out;
}

HarmonyParts split_harmony(std::string_view text) {
  HarmonySplitter s;
  HarmonyParts a = s.feed(text);
  HarmonyParts b = s.finish();
  a.reasoning += b.reasoning;
  a.content += b.content;
  for (HarmonyCall& c : b.calls) a.calls.push_back(std::move(c));
  return a;
}

bool is_harmony_template(std::string_view source) {
  return source.find("<|channel|>") != std::string_view::npos && source.find("<|message|>") != std::string_view::npos;
}

}  // namespace strata::serve
