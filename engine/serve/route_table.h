// engine/serve/route_table.h — every route the server answers, each stated once. Registering a
// route (get_route / post_route / put_route in server_context.h) hands its handler to httplib and
// records it here; the 405 answer's Allow header, CORS preflights and the /metrics labels read
// this table, so no second list of routes exists to drift from the handlers.
//
// Threads: filled on the thread that builds the server, before it listens; read-only afterwards,
// from any request thread.
#pragma once

#include <regex>
#include <string>
#include <vector>

namespace strata::serve {

class RouteTable {
 public:
  // method: "GET", "POST" or "PUT" (a GET route also answers HEAD, as httplib does).
  // pattern: httplib's pattern, a regular expression matched against the whole path.
  // label: the route's name in /metrics and errors; "" = the pattern itself (use a readable
  // label such as "/v1/models/{id}" for a pattern with groups).
  void add(const std::string& method, const std::string& pattern, const std::string& label = "");

  // The label of the route `path` belongs to, whatever the method; "other" when none.
  std::string label_of(const std::string& path) const;
  // The methods the route labelled `label` answers, as an Allow header lists them
  // ("GET, HEAD, PUT"); "" for an unknown label.
  std::string methods_of(const std::string& label) const;
  // Every label, in registration order.
  std::vector<std::string> labels() const;

 private:
  struct Route {
    std::string pattern;
    std::regex matcher;
    std::string label;
    std::vector<std::string> methods;  // in the order GET, HEAD, POST, PUT
  };
  std::vector<Route> routes_;
};

}  // namespace strata::serve
