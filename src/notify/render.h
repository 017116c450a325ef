// How a notification looks on each channel. Pure functions of the notification: tested
// against the limits of the receivers (Slack: 50 blocks, 150 characters in a header, 3,000 in
// a section, 2,000 in a field, 10 fields) and the Standard Webhooks signature scheme.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "notify/group.h"
#include "notify/notification.h"

namespace tw::notify {

// A link for the finding from a template: {run}, {series}, {rule}, {step}, {finding_id} are
// replaced by their values, URL-encoded ("http://tb:6006/#scalars&regexInput={run}"); [web]
// base_url makes "BASE/findings/{finding_id}" every channel's default. "" for "", and for a
// template with {finding_id} when the message is about no finding (a run event, a test).
std::string ExpandLinkTemplate(std::string_view tmpl, const Notification& n);

// The Slack incoming-webhook body: Block Kit blocks plus a plain `text` fallback.
std::string SlackMessage(const Notification& n, const std::string& link);

// A group of notifications as one Slack message: a header ("3 findings on run exp/a"), what
// changed ("2 firing · 1 resolved"; a digest adds counts per rule and run), then a compact
// section per finding in queue order (at most 39 and "…and K more" past 40), within the same
// limits. Links from `link_template`, per finding.
std::string SlackGroupMessage(const Group& g, std::string_view link_template);

// The evidence's scalar members as (name, value) pairs, after the onset step when known; arrays
// and objects are left to the webhook payload, which carries the evidence whole. Numbers with
// 4 significant digits. At most `max_items`. Slack shows them as fields, email as a list.
std::vector<std::pair<std::string, std::string>> EvidenceItems(const Notification& n, size_t max_items);

// ✅ resolved, else 🔴 critical, 🟠 warning, 🔵 info: how chat messages open.
std::string StatusEmoji(const Notification& n);

// The headings of a message's cause and fix: "Likely cause" and "What to do" for a finding;
// "How it ended" and "What to keep" for a run that ended.
std::string CauseLabel(const Notification& n);
std::string FixLabel(const Notification& n);

// One line for the console channel.
std::string ConsoleLine(const Notification& n);

// Standard Webhooks: "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)). A
// secret "whsec_<base64>" is decoded to its key bytes; any other secret is used as is.
std::string WebhookSignature(std::string_view secret, std::string_view id, int64_t timestamp,
                             std::string_view body);

// "critical" -> "CRITICAL" (ASCII only: severities, SMTP keywords).
std::string AsciiUpper(std::string s);
// Standard base64 with padding (RFC 4648), no line breaks.
std::string Base64(std::string_view bytes);

// Cuts `s` to at most `max_bytes` bytes on a UTF-8 character boundary, ending in "…" when cut.
std::string TruncateUtf8(std::string_view s, size_t max_bytes);

}  // namespace tw::notify
