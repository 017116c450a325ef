// Microsoft Teams through a Workflows webhook (the "Post to a channel when a webhook request is
// received" template), which replaces the retired Office 365 connectors: POST {"type": "message",
// "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": null,
// "content": <an Adaptive Card>}]}. The card is version 1.4 (cards of 1.5 posted through
// Workflows are shown as "this card couldn't be displayed"). The webhook's URL, whose sig= query
// value is its credential, is the channel's secret.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "notify/channel.h"

namespace tw::notify {

// A finding: a coloured headline, its title, what was seen, a FactSet (run, series, steps and
// the evidence), the sparkline, cause and fix, and an Action.OpenUrl to the `link`. Texts are
// cut so that a message stays well inside the webhook's 28 KB.
std::string TeamsMessage(const Notification& n, const std::string& link);
// A group: its title and counts, then a block per change (25 at most, "…and K more").
std::string TeamsGroupMessage(const Group& g, std::string_view link_template);

// 2xx (Workflows answer 202 Accepted) sent; 429 retries after Retry-After; 408 and 5xx retry;
// any other 4xx (a deleted workflow, a card refused) is permanent.
SendResult JudgeTeams(const Result<HttpResponse>& r, double now);

Result<std::unique_ptr<Channel>> MakeTeamsChannel(const ChannelConfig& c);

}  // namespace tw::notify
