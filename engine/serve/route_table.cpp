// engine/serve/route_table.cpp — the one list of routes (see route_table.h).
#include "engine/serve/route_table.h"

#include <algorithm>
#include <array>

namespace strata::serve {

namespace {
constexpr std::array<const char*, 4> kMethodOrder = {"GET", "HEAD", "POST", "PUT"};

void insert_method(std::vector<std::string>& methods, const std::string& method) {
  if (std::find(methods.begin(), methods.end(), method) != methods.end()) return;
  methods.push_back(method);
  auto rank = [](const std::string& m) {
    return std::find(kMethodOrder.begin(), kMethodOrder.end(), m) - kMethodOrder.begin();
  };
  std::sort(methods.begin(), methods.end(), [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
}
}  // namespace

void RouteTable::add(const std::string& method, const std::string& pattern, const std::string& label) {
  const std::string name = label.empty() ? pattern : label;
  auto it = std::find_if(routes_.begin(), routes_.end(), [&](const Route& r) { return r.pattern == pattern; });
  if (it == routes_.end()) {
    routes_.push_back(Route{pattern, std::regex(pattern), name, {}});
    it = std::prev(routes_.end());
  }
  insert_method(it->methods, method);
  if (method == "GET") insert_method(it->methods, "HEAD");
}

std::string RouteTable::label_of(const std::string& path) const {
  for (const Route& r : routes_)
    if (std::regex_match(path, r.matcher)) return r.label;
  return "other";
}

std::string RouteTable::methods_of(const std::string& label) const {
  for (const Route& r : routes_) {
    if (r.label != label) continue;
    std::string out;
    for (const std::string& m : r.methods) out += (out.empty() ? "" : ", ") + m;
    return out;
  }
  return "";
}

std::vector<std::string> RouteTable::labels() const {
  std::vector<std::string> out;
  for (const Route& r : routes_) out.push_back(r.label);
  return out;
}

}  // namespace strata::serve
