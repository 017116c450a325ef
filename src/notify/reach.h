// Whether this process may open a connection to where a channel sends: its proxy's host when it
// has one, else its receiver's (an http(s) URL's host, an email channel's SMTP server). A
// systemd unit's IPAddressDeny=/IPAddressAllow= (and firewalls that reject locally) refuse a
// connect() with EPERM at once: that is told apart from a host that cannot be resolved, a
// connection refused, and no answer within the timeout. For `trainwatch notify check`, which
// the unit runs as ExecStartPre so the journal says why notifications could never leave.
// Blocking; any thread.
#pragma once

#include <string>

#include "notify/channel.h"

namespace tw::notify {

struct Reachability {
  enum class Kind { kReachable, kBlocked, kUnresolved, kRefused, kTimedOut, kNoEndpoint };
  Kind kind = Kind::kNoEndpoint;
  std::string endpoint;  // "hooks.slack.com:443" or "proxy.corp:3128 (proxy)"; no URL path
  std::string detail;    // what failed, in words
};

Reachability CheckReach(const ChannelConfig& c, double timeout_seconds);

}  // namespace tw::notify
