#include "notify/channel_types.h"

#include <algorithm>
#include <set>

#include "notify/chat_channels.h"
#include "notify/core_channels.h"
#include "notify/email_channel.h"
#include "notify/pagerduty_channel.h"
#include "notify/teams_channel.h"
#include "notify/telegram_channel.h"

namespace tw::notify {

namespace {

using Kind = ChannelKey::Kind;

// The keys several types share.
const ChannelKey kWebhookUrl{.name = "url", .kind = Kind::kSecret, .field = &ChannelConfig::url, .required = true};
const ChannelKey kSigningSecret{.name = "secret", .kind = Kind::kSecret, .field = &ChannelConfig::secret};
const ChannelKey kProxy{.name = "proxy", .kind = Kind::kOwnSecret};  // may hold user:password@
const ChannelKey kFrom{.name = "from"}, kTo{.name = "to"};

std::vector<ChannelType> MakeTypes() {
  // Rate limits are each receiver's documented pace; "for people" channels group by run (wait
  // 30 s, then at most every 5 min) and repeat a finding still firing every 4 h; machine
  // receivers get every event as it comes.
  std::vector<ChannelType> t;
  t.push_back({.name = "slack",
               .keys = {kWebhookUrl, kSigningSecret, kProxy},
               .min_interval_seconds = 1.0,  // about one message a second per webhook
               .make = MakeSlackChannel});
  t.push_back({.name = "webhook",
               .keys = {kWebhookUrl, kSigningSecret, kProxy},
               .for_people = false,  // the version 1 payload, each event as it comes
               .send_resolved = true,
               .make = MakeWebhookChannel});
  t.push_back({.name = "discord",
               .keys = {kWebhookUrl, kProxy},
               .min_interval_seconds = 1.0,  // five messages per two seconds per webhook
               .make = MakeDiscordChannel});
  t.push_back({.name = "ntfy",
               .keys = {kWebhookUrl, kSigningSecret, kProxy},  // secret: an access token
               .make = MakeNtfyChannel,
               .more_secrets = NtfySecrets});
  t.push_back({.name = "telegram",
               .keys = {{.name = "bot_token", .kind = Kind::kSecret, .field = &ChannelConfig::secret, .required = true},
                        {.name = "chat_id",
                         .kind = Kind::kId,
                         .field = &ChannelConfig::chat_id,
                         .required = true,
                         .expected = "a string or an integer (a chat's number or a channel's @username)"},
                        {.name = "api_url", .kind = Kind::kText, .field = &ChannelConfig::url, .expected = "a string (a URL)"},
                        kProxy},
               .min_interval_seconds = 3.0,  // at most 20 messages a minute to one group
               .url = kTelegramApiUrl,
               .url_is_secret = false,  // the token goes in the path, from `secret`
               .make = MakeTelegramChannel,
               .destination = TelegramDestination});
  t.push_back({.name = "teams",
               .keys = {kWebhookUrl, kProxy},  // a Workflows URL: its sig= is the credential
               .min_interval_seconds = 1.0,
               .make = MakeTeamsChannel});
  t.push_back({.name = "pagerduty",
               .keys = {{.name = "routing_key", .kind = Kind::kSecret, .field = &ChannelConfig::secret, .required = true},
                        {.name = "url", .kind = Kind::kEndpoint, .field = &ChannelConfig::url},
                        kProxy},
               .for_people = false,  // PagerDuty pages and re-notifies by its own escalation
               .send_resolved = true,  // a resolution resolves the alert
               .min_interval_seconds = 0.5,  // about 120 events a minute per routing key
               .url = kPagerDutyUrl,
               .min_severity = diagnose::Severity::kCritical,  // a page wakes someone
               .no_grouping = "each finding is its own PagerDuty alert, by its dedup_key",
               .url_is_secret = false,
               .make = MakePagerDutyChannel});
  t.push_back({.name = "email",
               .keys = {{.name = "smtp_host"}, {.name = "smtp_port"}, {.name = "tls"}, {.name = "username"},
                        {.name = "password", .kind = Kind::kSecret, .field = &ChannelConfig::password},
                        kFrom, kTo, kProxy},
               .min_interval_seconds = 10.0,  // an inbox is not a chat
               .timeout_seconds = 30,  // servers may check a message at length before they answer its end
               .mail = true,
               .make = MakeEmailChannel,
               .destination = SmtpDestination});
  t.push_back({.name = "sendgrid",
               .keys = {{.name = "url", .kind = Kind::kEndpoint, .field = &ChannelConfig::url},
                        {.name = "api_key", .kind = Kind::kSecret, .field = &ChannelConfig::secret},
                        kFrom, kTo, kProxy},
               .min_interval_seconds = 10.0,
               .url = kSendGridUrl,
               .url_is_secret = false,
               .mail = true,
               .make = MakeSendGridChannel});
  // The console takes url and secret for no use: configs written when it did are not refused.
  t.push_back({.name = "console",
               .keys = {{.name = "url", .kind = Kind::kSecret, .field = &ChannelConfig::url}, kSigningSecret},
               .for_people = false,  // a log
               .send_resolved = true,
               .make = MakeConsoleChannel});
  return t;
}

}  // namespace

const std::vector<ChannelType>& ChannelTypes() {
  static const std::vector<ChannelType> kTypes = MakeTypes();
  return kTypes;
}

const ChannelType* FindChannelType(std::string_view name) {
  for (const ChannelType& t : ChannelTypes())
    if (t.name == name) return &t;
  return nullptr;
}

std::string ChannelTypeList() {
  const auto& types = ChannelTypes();
  std::string out;
  for (size_t i = 0; i < types.size(); ++i)
    out += (i == 0 ? "" : i + 1 == types.size() ? " or " : ", ") + std::string(types[i].name);
  return out;
}

std::vector<std::string> KeyForms(const ChannelKey& k) {
  const std::string name(k.name);
  if (k.kind == Kind::kSecret || k.kind == Kind::kEndpoint || k.kind == Kind::kOwnSecret) return {name, name + "_env", name + "_credential"};
  return {name};
}

bool ChannelType::Takes(std::string_view key) const {
  for (const ChannelKey& k : keys)
    for (const std::string& form : KeyForms(k))
      if (form == key) return true;
  return false;
}

std::vector<std::string> TypedChannelKeys() {
  std::set<std::string> all;
  for (const ChannelType& t : ChannelTypes())
    for (const ChannelKey& k : t.keys)
      for (std::string& form : KeyForms(k)) all.insert(std::move(form));
  return {all.begin(), all.end()};
}

const std::vector<std::string_view>& GroupingKeys() {
  static const std::vector<std::string_view> kKeys = {"group_by", "group_wait_seconds", "group_interval_seconds",
                                                      "digest_minutes"};
  return kKeys;
}

}  // namespace tw::notify
