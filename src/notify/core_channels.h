// The first types of channel: Slack incoming webhooks (Block Kit), generic JSON webhooks
// (payload version 1, signed per Standard Webhooks) and the console (one line per message, on
// stdout). Built through MakeChannel (channel.h) from the table of types (channel_types.h).
#pragma once

#include <memory>

#include "notify/channel.h"

namespace tw::notify {

Result<std::unique_ptr<Channel>> MakeSlackChannel(const ChannelConfig& c);
Result<std::unique_ptr<Channel>> MakeWebhookChannel(const ChannelConfig& c);
Result<std::unique_ptr<Channel>> MakeConsoleChannel(const ChannelConfig& c);

}  // namespace tw::notify
