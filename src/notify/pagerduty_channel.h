// PagerDuty through the Events API v2: POST https://events.pagerduty.com/v2/enqueue (`url`
// overrides it: the EU endpoint, a proxy, tests). A finding firing, escalated or still firing
// triggers an alert; its resolution resolves it. Both carry the same dedup_key, the finding's
// key (PagerDutyDedupKey), so the alert PagerDuty opened is the one that is resolved. The
// routing key (the integration key of an Events API v2 integration) travels in the body and is
// the channel's secret. A PagerDuty channel never groups: each finding is its own alert.
#pragma once

#include <memory>
#include <string>

#include "notify/channel.h"

namespace tw::notify {

inline constexpr const char* kPagerDutyUrl = "https://events.pagerduty.com/v2/enqueue";

// "trainwatch/<rule>/<run>[/<series>]": what makes a finding one finding (its rule, its run and
// its series: the store's unique key), the same in every message about it and after restarts.
// At most 255 bytes: a longer one keeps its first 238 and adds "#" and 16 hex digits of a hash
// of the whole.
std::string PagerDutyDedupKey(const Notification& n);

// The event for a notification: a resolution is {routing_key, event_action: "resolve",
// dedup_key}; anything else is a trigger with the payload: summary (at most 1,024 characters),
// source (the run), severity (critical, warning or info), timestamp (ISO 8601), component (the
// series), class (the rule), custom_details (message, cause, fix, steps, evidence, sparkline),
// and the `link` in links. `test` makes an info trigger marked as a test.
std::string PagerDutyEvent(const Notification& n, const std::string& routing_key, const std::string& link,
                           bool test = false);
std::string PagerDutyResolve(const Notification& n, const std::string& routing_key);

// 2xx (202 Accepted) sent; 429 retries after Retry-After, or 30 s when not said (PagerDuty
// suggests retries 30 s apart); 5xx and 408 retry; 400 (an invalid event, a wrong routing key)
// and any other 4xx are permanent.
SendResult JudgePagerDuty(const Result<HttpResponse>& r, double now);

// Needs `secret` (the routing key) and a parseable `url`. A test message (`notify test`)
// triggers an info alert and resolves it at once: the channel is checked, nobody stays paged.
Result<std::unique_ptr<Channel>> MakePagerDutyChannel(const ChannelConfig& c);

}  // namespace tw::notify
