#include "objstore/credentials.h"

#include <boost/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "objstore/http.h"

namespace tw::objstore {

namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// "2026-11-27T10:00:00Z" as Unix seconds; 0 when not of that form.
std::time_t ParseIsoUtc(const std::string& s) {
  struct tm tm {};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) return 0;
  return timegm(&tm);
}

}  // namespace

Getenv ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Result<std::optional<Credentials>> FromEnvironment(const Getenv& env) {
  const auto id = env("AWS_ACCESS_KEY_ID");
  const auto secret = env("AWS_SECRET_ACCESS_KEY");
  if ((!id || id->empty()) && (!secret || secret->empty())) return std::optional<Credentials>();
  if (!id || id->empty() || !secret || secret->empty())
    return InvalidArgument(std::string("the environment sets ") +
                           (id && !id->empty() ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY") +
                           " without " +
                           (id && !id->empty() ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID"));
  Credentials c{*id, *secret, env("AWS_SESSION_TOKEN").value_or("")};
  return std::optional<Credentials>(std::move(c));
}

Result<std::optional<Credentials>> FromProfile(const std::string& file, const std::string& profile,
                                               bool required) {
  std::ifstream in(file);
  if (!in) {
    if (required) return NotFound(file + ": cannot read the credentials file (profile " + profile + ")");
    return std::optional<Credentials>();
  }
  Credentials c;
  bool in_profile = false, found = false;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        return InvalidArgument(file + ":" + std::to_string(lineno) + ": a section header without ']'");
      std::string name = Trim(line.substr(1, line.size() - 2));
      if (name.rfind("profile ", 0) == 0) name = Trim(name.substr(8));  // the config file's form
      in_profile = name == profile;
      found = found || in_profile;
      continue;
    }
    if (!in_profile) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos)
      return InvalidArgument(file + ":" + std::to_string(lineno) + ": expected KEY = VALUE in profile " +
                             profile);
    const std::string key = Trim(line.substr(0, eq)), value = Trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") c.access_key_id = value;
    else if (key == "aws_secret_access_key") c.secret_access_key = value;
    else if (key == "aws_session_token") c.session_token = value;
  }
  if (!found) {
    if (required) return NotFound(file + ": no profile [" + profile + "]");
    return std::optional<Credentials>();
  }
  if (c.access_key_id.empty() || c.secret_access_key.empty())
    return InvalidArgument(file + ": profile [" + profile + "] lacks " +
                           (c.access_key_id.empty() ? "aws_access_key_id" : "aws_secret_access_key"));
  return std::optional<Credentials>(std::move(c));
}

Result<Expiring> FromInstanceMetadata(const std::string& endpoint, double timeout_seconds) {
  HttpRequest put;
  put.method = "PUT";
  put.url = endpoint + "/latest/api/token";
  put.headers = {"X-aws-ec2-metadata-token-ttl-seconds: 21600"};
  put.timeout_seconds = timeout_seconds;
  put.max_body = 4096;
  Result<HttpResponse> token = Exchange(put);
  if (!token.ok()) return IoError("instance metadata: " + token.status().message());
  if (token->status != 200 || token->body.empty())
    return IoError("instance metadata: the token request answered HTTP " +
                   std::to_string(token->status));
  const std::string header = "X-aws-ec2-metadata-token: " + Trim(token->body);
  HttpRequest get;
  get.url = endpoint + "/latest/meta-data/iam/security-credentials/";
  get.headers = {header};
  get.timeout_seconds = timeout_seconds;
  get.max_body = 4096;
  Result<HttpResponse> roles = Exchange(get);
  if (!roles.ok()) return IoError("instance metadata: " + roles.status().message());
  if (roles->status != 200)
    return IoError("instance metadata: the role list answered HTTP " + std::to_string(roles->status) +
                   " (no IAM role attached to this instance?)");
  std::string role = Trim(roles->body.substr(0, roles->body.find('\n')));
  if (role.empty() || role.find('/') != std::string::npos || role.find("..") != std::string::npos)
    return IoError("instance metadata: no usable role name in the role list");
  get.url += role;
  get.max_body = 16384;
  Result<HttpResponse> doc = Exchange(get);
  if (!doc.ok()) return IoError("instance metadata: " + doc.status().message());
  if (doc->status != 200)
    return IoError("instance metadata: role " + role + " answered HTTP " + std::to_string(doc->status));
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(doc->body, ec);
  const boost::json::object* o = ec ? nullptr : v.if_object();
  auto str = [&](const char* key) -> std::string {
    if (!o) return "";
    const boost::json::value* f = o->if_contains(key);
    return f && f->is_string() ? std::string(f->as_string()) : "";
  };
  Expiring e;
  e.credentials = {str("AccessKeyId"), str("SecretAccessKey"), str("Token")};
  e.expires = ParseIsoUtc(str("Expiration"));
  if (e.credentials.access_key_id.empty() || e.credentials.secret_access_key.empty())
    return IoError("instance metadata: role " + role +
                   "'s credentials are not a JSON object with AccessKeyId and SecretAccessKey");
  return e;
}

Result<Credentials> CredentialChain::Get(std::string* source) {
  const std::time_t now = std::time(nullptr);
  if (cached_ && (cached_->expires == 0 || cached_->expires - now > 300)) {
    if (source) *source = source_;
    return cached_->credentials;
  }
  cached_.reset();
  Result<std::optional<Credentials>> env = FromEnvironment(env_);
  if (!env.ok()) return env.status();
  if (*env) {
    cached_ = Expiring{**env, 0};
    source_ = "environment";
  }
  if (!cached_) {
    const auto env_profile = env_("AWS_PROFILE");
    const bool named = !settings_.profile.empty() || (env_profile && !env_profile->empty());
    const std::string profile = !settings_.profile.empty() ? settings_.profile
                                : named                    ? *env_profile
                                                           : "default";
    std::string file = settings_.credentials_file;
    if (file.empty()) file = env_("AWS_SHARED_CREDENTIALS_FILE").value_or("");
    if (file.empty()) {
      const auto home = env_("HOME");
      if (home && !home->empty()) file = *home + "/.aws/credentials";
    }
    if (!file.empty()) {
      Result<std::optional<Credentials>> p = FromProfile(file, profile, named);
      if (!p.ok()) return p.status();
      if (*p) {
        cached_ = Expiring{**p, 0};
        source_ = "profile " + profile + " of " + file;
      }
    } else if (named) {
      return NotFound("profile " + profile + " named, but no credentials file (HOME is unset)");
    }
  }
  if (!cached_ && !settings_.imds_endpoint.empty()) {
    Result<Expiring> imds = FromInstanceMetadata(settings_.imds_endpoint, settings_.imds_timeout_seconds);
    if (!imds.ok())
      return NotFound("no credentials: none in the environment (AWS_ACCESS_KEY_ID), no profile, and " +
                      imds.status().message());
    cached_ = std::move(*imds);
    source_ = "instance metadata";
  }
  if (!cached_)
    return NotFound("no credentials: none in the environment (AWS_ACCESS_KEY_ID) and no profile");
  if (source) *source = source_;
  return cached_->credentials;
}

}  // namespace tw::objstore
