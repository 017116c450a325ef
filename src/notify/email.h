// What an email about a finding says, and the RFC 5322 message that carries it: the same facts
// as the Slack message (severity and title, run and series, what was seen, the evidence, the
// recent curve, likely cause, what to do, a link) as plain text and as HTML. Its headers are
// 7-bit (RFC 2047 encoded words where the text is not ASCII); the MIME encoding of its two
// bodies, a multipart/alternative of quoted-printable UTF-8 parts, is curl's (smtp.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "notify/group.h"
#include "notify/notification.h"

namespace tw::notify {

// "alerts@example.com" or "Trainwatch <alerts@example.com>". ASCII addresses only (no
// SMTPUTF8): a local part and a domain, no spaces, quotes or control characters.
struct Mailbox {
  std::string name;     // may be empty or non-ASCII
  std::string address;  // local@domain
};
Result<Mailbox> ParseMailbox(std::string_view text);

struct EmailContent {
  std::string subject;  // "[trainwatch] CRITICAL Loss is NaN or infinite on exp/bert-1"
  std::string text;     // plain text, "\n" line ends
  std::string html;     // a complete HTML document; every finding text escaped
};
EmailContent RenderEmail(const Notification& n, const std::string& link);
// A group as one email: "[trainwatch] 3 findings on run exp/a (2 firing, 1 resolved)", then
// each finding in queue order (a digest: with the counts per rule and run). Links per finding
// from `link_template`.
EmailContent RenderGroupEmail(const Group& g, std::string_view link_template);

// The message before its MIME encoding: its headers (From, To, Subject, Date, Message-ID,
// Auto-Submitted; MIME-Version and Content-Type are the encoder's), each one entry, folded
// lines joined by CRLF and a space, all printable ASCII; and its two bodies with CRLF line ends.
struct EmailMessage {
  std::vector<std::string> headers;  // "From: trainwatch <alerts@example.com>", ...
  std::string text;
  std::string html;
  bool operator==(const EmailMessage&) const = default;
};

// `key` is the outbox's idempotency key: the Message-ID is made from it (and the sender's
// domain), so a message sent again after a crash has the same id and receivers can drop the
// copy. `now` (unix seconds) is the Date. The same arguments give the same message.
EmailMessage BuildEmail(const Mailbox& from, const std::vector<Mailbox>& to, const EmailContent& content,
                        std::string_view key, double now);

// The parts, exposed for tests.
std::string MessageIdFor(std::string_view key, std::string_view from_address);  // "<...@...>"
std::string EncodeHeaderText(std::string_view text);  // as is when printable ASCII, else RFC 2047
std::string HtmlEscape(std::string_view text);
std::string RfcDate(double unix_seconds);  // "Tue, 21 Nov 2023 10:00:00 +0000"

}  // namespace tw::notify
