// The email channels: `email` sends through an SMTP server (smtp.h), `sendgrid` through
// SendGrid's v3 mail/send HTTP API. Both render the same message (email.h). Built by
// MakeChannel (channel.h); exposed here for the config's checks and for tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "notify/channel.h"
#include "notify/http_client.h"
#include "notify/smtp.h"

namespace tw::notify {

inline constexpr const char* kSendGridUrl = "https://api.sendgrid.com/v3/mail/send";

// The SMTP port for a `tls` setting: 587 for starttls, 465 for tls, 25 for none; 0 if unknown.
uint16_t DefaultSmtpPort(const std::string& tls);

// What an email or sendgrid channel needs, beyond what the config parser checks: a host (email),
// an API key (sendgrid), a sender and recipients that parse, credentials only where they would
// be encrypted (or stay on this machine), a proxy that parses. Messages start "channel 'NAME': " and hold no secret.
Status CheckEmailChannel(const ChannelConfig& c);

Result<std::unique_ptr<Channel>> MakeEmailChannel(const ChannelConfig& c);
Result<std::unique_ptr<Channel>> MakeSendGridChannel(const ChannelConfig& c);
// "smtp://host:port" (smtps:// for implicit TLS): an email channel's destination.
std::string SmtpDestination(const ChannelConfig& c);

// The server's verdict: 2xx sent, 4xx retry, 5xx permanent. Without a reply: retry, unless the
// error says trying again cannot help (kInvalidArgument: permanent).
SendResult JudgeSmtp(const Result<SmtpReply>& r);
// 2xx (202 Accepted) sent; 408, 429 and 5xx retry, after Retry-After when given; other 4xx
// (a bad key, a sender not verified, a malformed body) permanent.
SendResult JudgeSendGrid(const Result<HttpResponse>& r, double now);

}  // namespace tw::notify
