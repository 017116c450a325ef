// Secrets out of everything people and files see. A channel's outcome (SendResult::detail: a
// receiver's reply, an HTTP, TLS or SMTP error) is logged, stored in outbox.last_error and
// shown by `trainwatch status` and `notify test`; Channel::Send (channel.h) scrubs it with
// ScrubSecrets against the channel's ChannelSecrets, the one place every channel's outcome
// goes through. A receiver that echoes its token, a proxy that echoes the URL, an SMTP server
// that echoes AUTH: none of it gets further. Pure functions, thread-compatible.
#pragma once

#include <string>
#include <vector>

namespace tw::notify {

struct ChannelConfig;

// What of a channel must never be shown: its signing secret, API key, access token, bot token,
// routing key and password (and their base64 forms, as AUTH sends them); its proxy's URL and
// credentials (and their Basic base64); its URL, where its type's URL is a secret
// (channel_types.h: a webhook's, not an API's endpoint), whole and the part of it that
// RedactUrl hides (the path past its first segment, the query) whole and piece by piece (each
// path segment and query value of 4 bytes or more: shorter ones would eat ordinary words and
// hold little secret); and what its type adds (an ntfy channel's topic: whoever knows it can
// read the channel). Longest first, so a whole URL goes before its parts.
std::vector<std::string> ChannelSecrets(const ChannelConfig& c);

// `text` with every occurrence of every secret (also JSON-escaped, "/" as "\/") replaced by
// "…". A whole URL becomes its redacted form, so the message still says where it went.
std::string ScrubSecrets(std::string text, const std::vector<std::string>& secrets);

}  // namespace tw::notify
