#include "notify/secrets.h"

#include <algorithm>
#include <string_view>

#include "notify/channel.h"
#include "notify/channel_types.h"
#include "notify/http_client.h"
#include "notify/render.h"

namespace tw::notify {

namespace {

constexpr size_t kMinPiece = 4;

// The part of a URL that RedactUrl hides: the path past its first segment, the query and the
// fragment ("" when there is none).
std::string HiddenPart(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return "";
  const size_t path = url.find_first_of("/?#", scheme + 3);
  if (path == std::string_view::npos) return "";
  std::string_view rest = url.substr(path);
  if (rest.front() == '/') {
    const size_t next = rest.find_first_of("/?#", 1);
    if (next == std::string_view::npos) return "";
    rest = rest.substr(next);
  }
  return std::string(rest.substr(rest.front() == '/' ? 1 : 0));
}

void Replace(std::string* text, const std::string& secret, const std::string& with) {
  if (secret.empty()) return;
  for (size_t at = 0; (at = text->find(secret, at)) != std::string::npos; at += with.size())
    text->replace(at, secret.size(), with);
}

std::string JsonEscapedSlashes(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '/' ? std::string("\\/") : std::string(1, c);
  return out;
}

}  // namespace

std::vector<std::string> ChannelSecrets(const ChannelConfig& c) {
  std::vector<std::string> out;
  const auto add = [&](const std::string& s, size_t min = 1) {
    if (s.size() >= min && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (const std::string& s : {c.secret, c.password}) {
    add(s);
    if (!s.empty()) add(Base64(s), kMinPiece);
  }
  if (!c.password.empty()) add(Base64(std::string(1, '\0') + c.username + '\0' + c.password));
  if (c.http.proxy && !c.http.proxy->empty()) {  // its URL may carry user:password@
    const Result<Proxy> p = ParseProxy(*c.http.proxy);
    if (!p.ok() || !p->password.empty()) add(*c.http.proxy);
    if (p.ok())
      for (const std::string& s : p->Secrets()) add(s);
  }
  const ChannelType* type = FindChannelType(c.type);
  if (!c.url.empty() && (!type || type->url_is_secret)) {  // an API's endpoint is public; its key is above
    add(c.url);
    const std::string hidden = HiddenPart(c.url);
    add(hidden, kMinPiece);
    for (size_t at = 0; at < hidden.size();) {
      const size_t end = std::min(hidden.find_first_of("/?&=#", at), hidden.size());
      add(hidden.substr(at, end - at), kMinPiece);
      at = end + 1;
    }
  }
  if (type && type->more_secrets)
    for (const std::string& s : type->more_secrets(c)) add(s);
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

std::string ScrubSecrets(std::string text, const std::vector<std::string>& secrets) {
  for (const std::string& s : secrets) {
    const bool url = s.starts_with("http://") || s.starts_with("https://");
    const std::string with = url ? RedactUrl(s) : "…";
    Replace(&text, s, with);
    if (s.find('/') != std::string::npos) Replace(&text, JsonEscapedSlashes(s), with);
  }
  return text;
}

}  // namespace tw::notify
