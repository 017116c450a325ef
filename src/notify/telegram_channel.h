// Telegram: a bot posts to a chat through the Bot API's sendMessage, POST
// {api_url}/bot<token>/sendMessage with {"chat_id", "text", "parse_mode": "MarkdownV2",
// "link_preview_options": {"is_disabled": true}}. The token is the channel's secret (it sits in
// the URL's path, so it is scrubbed from everything shown); api_url is public (a local Bot API
// server, tests). Text is at most 4,096 characters after entity parsing; we count the bytes of
// the marked-up text, which is stricter.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "notify/channel.h"

namespace tw::notify {

inline constexpr const char* kTelegramApiUrl = "https://api.telegram.org";

// MarkdownV2 ("Formatting options" of the Bot API): in text, each of _ * [ ] ( ) ~ ` > # + - = | { }
// . ! and the backslash itself gets a backslash before it; inside code and pre only ` and \; inside
// a link's (...) only ) and \.
std::string EscapeMarkdownV2(std::string_view text);
std::string EscapeMarkdownV2Code(std::string_view code);
std::string EscapeMarkdownV2Link(std::string_view url);

// The sendMessage bodies: a finding (headline, run and series, what was seen, the evidence,
// the sparkline, cause and fix, a link), and a group (its title and counts, a line per change).
// Every finding text escaped; the text cut to fit whole, never inside an escape or an entity.
std::string TelegramMessage(const Notification& n, const std::string& chat_id, const std::string& link);
std::string TelegramGroupMessage(const Group& g, const std::string& chat_id, std::string_view link_template);

// {"ok": true} is sent. 429 retries after its body's parameters.retry_after (Retry-After if not
// there); 408 and 5xx retry; any other answer (400 a chat or text refused, 401 a wrong token, 403
// a bot removed from the chat, 404) is permanent; a group that became a supergroup says its new
// chat_id in the detail.
SendResult JudgeTelegram(const Result<HttpResponse>& r, double now);

// Needs `secret` (the bot token), `chat_id` and a parseable `url` (the API's root).
Result<std::unique_ptr<Channel>> MakeTelegramChannel(const ChannelConfig& c);
// "https://api.telegram.org/ chat -1001234567890": the token never shows.
std::string TelegramDestination(const ChannelConfig& c);

}  // namespace tw::notify
