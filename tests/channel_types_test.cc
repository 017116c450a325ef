// The table of channel types (notify/channel_types.h): every type can be built, is listed where
// types are listed, and is documented; its keys belong to it and not to every type.
#include <gtest/gtest.h>

#include <set>

#include "notify/channel_types.h"
#include "support/test_env.h"

namespace tw {
namespace {

std::string Doc(const std::string& name) { return testing::ReadFile(std::string(TW_DOCS_DIR) + "/" + name); }

TEST(ChannelTypes, EveryTypeIsBuiltListedAndDocumented) {
  const std::string guide = Doc("notifications.md");
  const std::string example = Doc("trainwatch.example.toml");
  const std::string list = notify::ChannelTypeList();
  std::set<std::string_view> names;
  for (const notify::ChannelType& t : notify::ChannelTypes()) {
    const std::string name(t.name);
    SCOPED_TRACE(name);
    EXPECT_TRUE(names.insert(t.name).second);
    EXPECT_NE(t.make, nullptr);
    EXPECT_NE(list.find(name), std::string::npos) << list;
    EXPECT_NE(guide.find("`" + name + "`"), std::string::npos) << "docs/notifications.md never names `" << name << "`";
    EXPECT_NE(example.find(name), std::string::npos) << "docs/trainwatch.example.toml never names " << name;
    EXPECT_EQ(notify::FindChannelType(name), &t);
    EXPECT_EQ(notify::ChannelConfig::Defaults("c", name).type, name);
  }
  EXPECT_EQ(notify::FindChannelType("pager"), nullptr);
  const auto unknown = notify::MakeChannel(notify::ChannelConfig::Defaults("c", "pager"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "channel 'c': unknown type 'pager' (expected " + list + ")");
}

TEST(ChannelTypes, ATypedKeyBelongsToSomeTypesNotAll) {
  for (const std::string& key : notify::TypedChannelKeys()) {
    size_t takers = 0;
    for (const notify::ChannelType& t : notify::ChannelTypes()) takers += t.Takes(key);
    EXPECT_GT(takers, 0u) << key;
    EXPECT_LT(takers, notify::ChannelTypes().size()) << key;
  }
  const notify::ChannelType& telegram = *notify::FindChannelType("telegram");
  EXPECT_TRUE(telegram.Takes("bot_token_credential"));
  EXPECT_TRUE(telegram.Takes("chat_id"));
  EXPECT_FALSE(telegram.Takes("chat_id_env"));  // a chat id is no secret
  EXPECT_FALSE(telegram.Takes("url"));
  EXPECT_FALSE(notify::FindChannelType("pagerduty")->Groups());
  EXPECT_TRUE(notify::FindChannelType("teams")->Groups());
}

}  // namespace
}  // namespace tw
