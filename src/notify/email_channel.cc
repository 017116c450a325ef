#include "notify/email_channel.h"

#include <algorithm>

#include "base/json.h"
#include "notify/email.h"
#include "notify/url.h"
#include "notify/render.h"

namespace tw::notify {

namespace {

bool HasControlOrSpace(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; });
}

Result<SmtpSecurity> ParseTls(const std::string& tls) {
  if (tls == "starttls") return SmtpSecurity::kStartTls;
  if (tls == "tls") return SmtpSecurity::kTls;
  if (tls == "none") return SmtpSecurity::kNone;
  return InvalidArgument("tls must be starttls, tls or none");
}

struct Addressing {
  Mailbox from;
  std::vector<Mailbox> to;
  std::vector<std::string> to_addresses;  // the envelope's
};

Result<Addressing> ParseAddressing(const ChannelConfig& c) {
  const std::string where = "channel '" + c.name + "': ";
  Addressing a;
  if (c.from.empty()) return InvalidArgument(where + "needs from (the sender's address)");
  Result<Mailbox> from = ParseMailbox(c.from);
  if (!from.ok()) return InvalidArgument(where + "from: " + from.status().message());
  a.from = *from;
  if (c.to.empty()) return InvalidArgument(where + "needs to (at least one recipient)");
  for (const auto& t : c.to) {
    Result<Mailbox> m = ParseMailbox(t);
    if (!m.ok()) return InvalidArgument(where + "to: " + m.status().message());
    a.to.push_back(*m);
    a.to_addresses.push_back(m->address);
  }
  return a;
}

Result<SmtpServer> ServerFor(const ChannelConfig& c) {
  const std::string where = "channel '" + c.name + "': ";
  Result<SmtpSecurity> security = ParseTls(c.tls);
  if (!security.ok()) return InvalidArgument(where + security.status().message());
  if (c.smtp_host.empty()) return InvalidArgument(where + "needs smtp_host");
  if (HasControlOrSpace(c.smtp_host)) return InvalidArgument(where + "smtp_host has a space or control character");
  if (!IsHostName(c.smtp_host)) return InvalidArgument(where + "smtp_host is not a host name or IP address");
  if (c.smtp_port < 0 || c.smtp_port > 65535) return InvalidArgument(where + "smtp_port must be in 1..65535");
  SmtpServer s;
  s.host = c.smtp_host;
  s.port = c.smtp_port ? static_cast<uint16_t>(c.smtp_port) : DefaultSmtpPort(c.tls);
  s.security = *security;
  s.username = c.username;
  s.password = c.password;
  s.timeout_seconds = c.http.timeout_seconds;
  s.ca_file = c.http.ca_file;
  // The environment's HTTPS_PROXY and kin are for web traffic: mail goes through a proxy only
  // where the channel names one.
  s.proxy = c.http.proxy.value_or("");
  if (!s.proxy.empty())
    if (Result<Proxy> p = ParseProxy(s.proxy); !p.ok()) return InvalidArgument(where + p.status().message());
  if (s.username.empty() != s.password.empty())
    return InvalidArgument(where + (s.username.empty() ? "a password needs a username"
                                                       : "username needs password, password_env or password_credential"));
  if (!s.username.empty() && s.security == SmtpSecurity::kNone && !IsLoopbackHost(s.host))
    return InvalidArgument(where + "would send its password in plain text to " + s.host +
                           ": use tls = \"starttls\" or \"tls\" (tls = \"none\" with a username is for "
                           "a relay on this machine only)");
  return s;
}

class EmailChannel : public Channel {
 public:
  EmailChannel(ChannelConfig c, SmtpServer server, Addressing a)
      : Channel(std::move(c)), server_(std::move(server)), a_(std::move(a)) {}

  SendResult DoSend(const Notification& n, const std::string& message_id, double now) override {
    return Mail(RenderEmail(n, ExpandLinkTemplate(config().link_template, n)), message_id, now);
  }
  SendResult DoSendGroup(const Group& g, const std::string& message_id, double now) override {
    return Mail(RenderGroupEmail(g, config().link_template), message_id, now);
  }

 private:
  SendResult Mail(const EmailContent& content, const std::string& message_id, double now) {
    return JudgeSmtp(SmtpSend(server_, a_.from.address, a_.to_addresses,
                              BuildEmail(a_.from, a_.to, content, message_id, now)));
  }

  SmtpServer server_;
  Addressing a_;
};

Json Address(const Mailbox& m) {
  Json j;
  j.Str("email", m.address);
  if (!m.name.empty()) j.Str("name", m.name);
  return j;
}

class SendGridChannel : public Channel {
 public:
  SendGridChannel(ChannelConfig c, Url url, Addressing a)
      : Channel(std::move(c)), url_(std::move(url)), a_(std::move(a)) {}

  SendResult DoSend(const Notification& n, const std::string& message_id, double now) override {
    return Post(RenderEmail(n, ExpandLinkTemplate(config().link_template, n)), message_id, now);
  }
  SendResult DoSendGroup(const Group& g, const std::string& message_id, double now) override {
    return Post(RenderGroupEmail(g, config().link_template), message_id, now);
  }

 private:
  SendResult Post(const EmailContent& content, const std::string& message_id, double now) {
    Json to = Json::Array();
    for (const auto& m : a_.to) to.Push(Address(m));
    Json personalization;
    personalization.Nested("to", to);
    Json personalizations = Json::Array();
    personalizations.Push(personalization);
    Json text, html;
    text.Str("type", "text/plain").Str("value", content.text);
    html.Str("type", "text/html").Str("value", content.html);
    Json parts = Json::Array();
    parts.Push(text).Push(html);
    // SendGrid has no idempotency key; the key travels in custom_args (shown with its events).
    Json args;
    args.Str("trainwatch_key", message_id);
    Json body;
    body.Nested("personalizations", personalizations).Nested("from", Address(a_.from))
        .Str("subject", content.subject).Nested("content", parts).Nested("custom_args", args);
    const Headers headers = {{"Content-Type", "application/json"},
                             {"Authorization", "Bearer " + config().secret}};
    return JudgeSendGrid(HttpPost(url_, headers, body.str(), config().http), now);
  }

  Url url_;
  Addressing a_;
};

}  // namespace

uint16_t DefaultSmtpPort(const std::string& tls) {
  if (tls == "starttls") return 587;
  if (tls == "tls") return 465;
  if (tls == "none") return 25;
  return 0;
}

Status CheckEmailChannel(const ChannelConfig& c) {
  if (c.type == "email") {
    if (Result<SmtpServer> s = ServerFor(c); !s.ok()) return s.status();
  } else if (c.type == "sendgrid") {
    const std::string where = "channel '" + c.name + "': ";
    if (c.secret.empty()) return InvalidArgument(where + "needs api_key, api_key_env or api_key_credential");
    // It goes into a header: a newline would end it there (HttpPost would refuse every send).
    if (HasControlOrSpace(c.secret)) return InvalidArgument(where + "the API key has a space or control character");
    if (Result<Url> u = ParseUrl(c.url); !u.ok()) return InvalidArgument(where + u.status().message());
  } else {
    return InvalidArgument("channel '" + c.name + "': not an email channel");
  }
  Result<Addressing> a = ParseAddressing(c);
  return a.ok() ? Status::Ok() : a.status();
}

Result<std::unique_ptr<Channel>> MakeEmailChannel(const ChannelConfig& c) {
  TW_RETURN_IF_ERROR(CheckEmailChannel(c));
  return std::unique_ptr<Channel>(new EmailChannel(c, *ServerFor(c), *ParseAddressing(c)));
}

Result<std::unique_ptr<Channel>> MakeSendGridChannel(const ChannelConfig& c) {
  TW_RETURN_IF_ERROR(CheckEmailChannel(c));
  return std::unique_ptr<Channel>(new SendGridChannel(c, *ParseUrl(c.url), *ParseAddressing(c)));
}

std::string SmtpDestination(const ChannelConfig& c) {
  SmtpServer s;
  s.host = c.smtp_host;
  s.port = c.smtp_port ? static_cast<uint16_t>(c.smtp_port) : DefaultSmtpPort(c.tls);
  s.security = c.tls == "tls" ? SmtpSecurity::kTls : SmtpSecurity::kStartTls;
  return SmtpLabel(s);
}

SendResult JudgeSmtp(const Result<SmtpReply>& r) {
  if (!r.ok()) {
    const bool hopeless = r.status().code() == Code::kInvalidArgument;
    return {hopeless ? SendResult::Kind::kPermanent : SendResult::Kind::kRetry, 0, -1, r.status().message()};
  }
  SendResult s;
  s.http_status = r->code;  // the outbox's last_status: the SMTP code here
  s.detail = r->step + ": " + std::to_string(r->code) + " " + r->text;
  if (r->code >= 200 && r->code < 300) s.kind = SendResult::Kind::kSent;
  else if (r->code >= 500 && r->code < 600) s.kind = SendResult::Kind::kPermanent;
  else s.kind = SendResult::Kind::kRetry;  // 4xx: "try again later", by definition
  return s;
}

SendResult JudgeSendGrid(const Result<HttpResponse>& r, double now) { return JudgeHttp(r, now); }

}  // namespace tw::notify
