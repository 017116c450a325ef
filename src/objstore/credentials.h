// Where the object-store client's credentials come from, in the order the AWS tools look:
//   1. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN);
//   2. a profile of the shared credentials file: [profile] in AWS_SHARED_CREDENTIALS_FILE (or
//      ~/.aws/credentials), the profile named by the config or AWS_PROFILE, else "default";
//   3. the instance metadata service, version 2 (a token PUT, then the role's credentials),
//      kept until five minutes before they expire.
// Secrets never appear in a message or a log line: errors name the source and the key id at most.
// The writer thread only (CredentialChain is not locked).
#pragma once

#include <ctime>
#include <functional>
#include <optional>
#include <string>

#include "base/status.h"
#include "objstore/sigv4.h"

namespace tw::objstore {

struct CredentialSettings {
  std::string profile;           // "" : AWS_PROFILE, else "default"
  std::string credentials_file;  // "" : AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials
  std::string imds_endpoint = "http://169.254.169.254";  // "" : never asked
  double imds_timeout_seconds = 2;
  bool operator==(const CredentialSettings&) const = default;
};

// The environment as the chain reads it (tests pass their own).
using Getenv = std::function<std::optional<std::string>(const std::string&)>;
Getenv ProcessEnvironment();

// 1. None when AWS_ACCESS_KEY_ID is unset; an error when only half of the pair is set.
Result<std::optional<Credentials>> FromEnvironment(const Getenv& env);
// 2. None when the file does not exist or has no such profile (`required`: the profile was
// named explicitly, and its absence is an error naming the file).
Result<std::optional<Credentials>> FromProfile(const std::string& file, const std::string& profile,
                                               bool required);
// 3. The role's credentials and when they expire (Unix seconds; 0 when not said).
struct Expiring {
  Credentials credentials;
  std::time_t expires = 0;
};
Result<Expiring> FromInstanceMetadata(const std::string& endpoint, double timeout_seconds);

class CredentialChain {
 public:
  CredentialChain(CredentialSettings settings, Getenv env)
      : settings_(std::move(settings)), env_(std::move(env)) {}
  // The credentials to sign with now, and where they came from ("environment", "profile
  // NAME of FILE", "instance metadata"); looked up again when the last ones failed
  // (Forget) or expire within five minutes.
  Result<Credentials> Get(std::string* source = nullptr);
  // The server refused the credentials: look them up again next time.
  void Forget() { cached_.reset(); }

 private:
  CredentialSettings settings_;
  Getenv env_;
  std::optional<Expiring> cached_;
  std::string source_;
};

}  // namespace tw::objstore
