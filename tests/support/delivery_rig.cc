#include "support/delivery_rig.h"

#include <gtest/gtest.h>

#include "notify/outbox.h"
#include "store/store.h"
#include "support/store_dump.h"

namespace tw::testing {

DeliveryRig::DeliveryRig() : db_path_(dir_ / "tw.db") {
  Result<std::unique_ptr<store::Store>> s = store::Store::Open(db_path_);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) store_ = std::move(*s);
}

DeliveryRig::~DeliveryRig() = default;

std::vector<notify::Attempt> DeliveryRig::DeliverOneByOne(const std::vector<notify::ChannelConfig>& channels,
                                                          const std::vector<notify::Notification>& notifications) {
  std::vector<std::unique_ptr<notify::Channel>> made;
  for (const notify::ChannelConfig& c : channels) {
    Result<std::unique_ptr<notify::Channel>> ch = notify::MakeChannel(c);
    EXPECT_TRUE(ch.ok()) << ch.status().message();
    if (!ch.ok()) return {};
    made.push_back(std::move(*ch));
  }
  notify::DeliveryOptions o;
  o.seed = 1;
  Result<std::unique_ptr<notify::Deliverer>> d = notify::Deliverer::Open(db_path_, std::move(made), o);
  EXPECT_TRUE(d.ok()) << d.status().message();
  if (!d.ok()) return {};
  std::vector<notify::Attempt> all;
  for (size_t i = 0; i < notifications.size(); ++i) {
    const double now = 1000.0 * static_cast<double>(i + 1);
    if (!store_) return all;
    Result<int> q = notify::Enqueue(store_->db(), channels, notifications[i], static_cast<int64_t>(i + 1), now);
    EXPECT_TRUE(q.ok()) << q.status().message();
    Result<std::vector<notify::Attempt>> a = (*d)->RunOnce(now + 31);
    EXPECT_TRUE(a.ok()) << a.status().message();
    if (a.ok()) all.insert(all.end(), a->begin(), a->end());
  }
  return all;
}

std::string DeliveryRig::OutboxStates() const {
  std::string out;
  for (const char* state : {"sent", "pending", "dead"})
    out += std::string(out.empty() ? "" : " ") + state + "=" +
           std::to_string(QueryInt(db_path_, std::string("SELECT count(*) FROM outbox WHERE state = '") + state + "'"));
  return out;
}

}  // namespace tw::testing
