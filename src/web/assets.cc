#include "web/assets.h"

#include <cstring>
#include <map>

namespace tw::web {
namespace {

std::string_view ContentType(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  return "text/plain; charset=utf-8";
}

// FNV-1a: an ETag only has to change when the body does.
std::string Etag(std::string_view body) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : body) h = (h ^ c) * 1099511628211ull;
  char buf[24];
  std::snprintf(buf, sizeof buf, "\"%016llx\"", static_cast<unsigned long long>(h));
  return buf;
}

const std::map<std::string, StaticFile, std::less<>>& Files() {
  static const auto* files = [] {
    auto* m = new std::map<std::string, StaticFile, std::less<>>;
    for (const EmbeddedAsset& a : EmbeddedAssets()) {
      const std::string_view body(a.text, std::strlen(a.text));
      (*m)[a.name] = {body, ContentType(a.name), Etag(body), std::string_view(a.name) == "index.html"};
    }
    return m;
  }();
  return *files;
}

bool IsPage(const std::string& path) {
  if (path == "/" || path == "/findings" || path == "/deliveries" || path == "/compare") return true;
  for (std::string_view prefix : {"/runs/", "/findings/"}) {  // and an id
    if (!path.starts_with(prefix) || path.size() == prefix.size()) continue;
    return path.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
  }
  return false;
}

}  // namespace

const StaticFile* FindStatic(const std::string& path) {
  const auto& files = Files();
  std::string_view name;
  if (IsPage(path)) name = "index.html";
  else if (path.starts_with("/assets/")) name = std::string_view(path).substr(8);
  else return nullptr;
  auto it = files.find(name);
  return it == files.end() ? nullptr : &it->second;
}

}  // namespace tw::web
