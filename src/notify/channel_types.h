// The types of channel, in one table: for each, its name, the [[notify.channel]] keys it takes,
// its defaults, whether its url is a secret, how it is built and where it sends, for people.
// The config (app/config.cc), ChannelConfig::Defaults, MakeChannel, Destination and
// ChannelSecrets all read this table, so a new type of channel is one entry in
// channel_types.cc plus its own file.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "notify/channel.h"

namespace tw::notify {

// A [[notify.channel]] key that only some types of channel take.
struct ChannelKey {
  enum class Kind {
    kText,      // a string, into `field`
    kId,        // a string or an integer, into `field` as text (a Telegram chat id)
    kSecret,    // a string from KEY, KEY_env or KEY_credential, into `field`; a secret
    kEndpoint,  // the same three forms, into `field`; public (an API's URL), so a file may hold it
    kOwn,       // read elsewhere: by the email loader (from, to, SMTP)
    kOwnSecret, // read elsewhere, from KEY, KEY_env or KEY_credential (proxy, with the common keys)
  };
  std::string_view name;
  Kind kind = Kind::kOwn;
  std::string ChannelConfig::*field = nullptr;
  bool required = false;  // refused when empty, naming the key (and its _env / _credential forms)
  std::string_view expected = "a string";  // what "must be ..." says of it
};

struct ChannelType {
  std::string_view name;
  std::vector<ChannelKey> keys;  // its own keys, beyond those every channel takes
  // Its defaults, over ChannelConfig's (routing, grouping, delivery).
  bool for_people = true;  // grouped by run and repeated (chat, mail); else each event alone, no repeats
  bool send_resolved = false;
  double min_interval_seconds = 0;
  double timeout_seconds = 10;
  std::string_view url = {};  // the public endpoint it posts to unless `url` says otherwise
  diagnose::Severity min_severity = diagnose::Severity::kWarning;
  // Non-empty: the type never groups, and why; its grouping keys are refused in the config.
  std::string_view no_grouping = {};
  bool url_is_secret = true;  // a webhook's URL is its credential; an API endpoint is not
  bool mail = false;          // takes from and to (the email loader reads them, and SMTP's keys)
  Result<std::unique_ptr<Channel>> (*make)(const ChannelConfig&) = nullptr;
  // Secrets beyond the channel's url, secret and password (an ntfy topic); may be null.
  std::vector<std::string> (*more_secrets)(const ChannelConfig&) = nullptr;
  // Where it sends, for people, when not its redacted url (email's SMTP server); may be null.
  std::string (*destination)(const ChannelConfig&) = nullptr;

  bool Takes(std::string_view key) const;  // one of its keys, or their _env / _credential forms
  bool Groups() const { return no_grouping.empty(); }
};

// Every type, in the order documentation lists them.
const std::vector<ChannelType>& ChannelTypes();
// nullptr for a name no type has.
const ChannelType* FindChannelType(std::string_view name);
// "slack, webhook, ... or console": for messages that list the types.
std::string ChannelTypeList();
// Every key some type takes and another does not, _env and _credential forms included.
std::vector<std::string> TypedChannelKeys();
// The forms a key of this kind is written in: {"url", "url_env", "url_credential"} or {"chat_id"}.
std::vector<std::string> KeyForms(const ChannelKey& k);
// The keys of grouping (group_by, group_wait_seconds, ...), which a type that never groups refuses.
const std::vector<std::string_view>& GroupingKeys();

}  // namespace tw::notify
