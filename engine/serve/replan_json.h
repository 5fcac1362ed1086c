// engine/serve/replan_json.h — what a re-plan after a lost or full device did, as JSON: the common
// part of the status / trace-stream record (engine_host) and of a reply's "replan" note
// (openai_routes). Depends on nlohmann-json and exec/recovery.h only.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/exec/recovery.h"

namespace strata::serve {

// {"lost","full","excluded","cause","devices" (of the new placement),"moved_blocks","ms"}.
inline nlohmann::json replan_json(const exec::ReplanReport& r) {
  return {{"lost", r.lost},
          {"full", r.full},
          {"excluded", r.excluded},
          {"cause", r.cause},
          {"devices", r.placement.devices()},
          {"moved_blocks", r.moved_blocks},
          {"ms", r.ms}};
}

}  // namespace strata::serve
