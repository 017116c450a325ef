// Channels one template away from a webhook: Discord incoming webhooks (an embed per finding,
// within Discord's limits) and ntfy (a push notification per message: JSON publishing to the
// server's root, so titles may hold any UTF-8). Mattermost takes the slack type as it is.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "notify/channel.h"

namespace tw::notify {

// Discord: {"content", "embeds": [{title, description, color, fields, url}], "allowed_mentions"}
// cut to Discord's limits (content 2,000, title 256, description 4,096, 25 fields of 1,024,
// 10 embeds, 6,000 characters in all). No @mentions are ever parsed from finding text.
std::string DiscordMessage(const Notification& n, const std::string& link);
std::string DiscordGroupMessage(const Group& g, std::string_view link_template);
// 2xx (204 without ?wait=true) sent; 429 and 5xx retry after Retry-After; other 4xx permanent.
SendResult JudgeDiscord(const Result<HttpResponse>& r, double now);

// ntfy: {"topic", "title", "message", "priority" (critical 5, warning 4, info 3), "tags",
// "click"} to the server's root; the channel's url is https://ntfy.sh/<topic> as users write it.
std::string NtfyMessage(const Notification& n, const std::string& topic, const std::string& link);
std::string NtfyGroupMessage(const Group& g, const std::string& topic);

Result<std::unique_ptr<Channel>> MakeDiscordChannel(const ChannelConfig& c);
// `secret`, if set, is sent as an access token (Authorization: Bearer).
Result<std::unique_ptr<Channel>> MakeNtfyChannel(const ChannelConfig& c);
// The topic (https://ntfy.sh/<topic>): whoever knows it reads the channel, so it is a secret.
std::vector<std::string> NtfySecrets(const ChannelConfig& c);

}  // namespace tw::notify
