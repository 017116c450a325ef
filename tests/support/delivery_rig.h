// A channel end to end, as the daemon drives it: notifications queued in the outbox of a fresh
// store (Enqueue, as the diagnosis thread does) and delivered by a Deliverer over channels built
// from their configs (MakeChannel). For the tests of each type of channel against a loopback
// receiver: what arrives there is what the daemon would send.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "notify/channel.h"
#include "notify/deliverer.h"
#include "support/test_env.h"

namespace tw::store {
class Store;
}

namespace tw::testing {

class DeliveryRig {
 public:
  DeliveryRig();
  ~DeliveryRig();

  // Queues each notification in turn (as transition i + 1 at 1000 * (i + 1) s) and runs the
  // deliverer past its group wait (31 s later), so a grouped channel sends it alone too. Returns
  // every attempt made, in order; a failure to queue or deliver fails the test.
  std::vector<notify::Attempt> DeliverOneByOne(const std::vector<notify::ChannelConfig>& channels,
                                               const std::vector<notify::Notification>& notifications);
  // The outbox's state counts, "sent=2 pending=0 dead=0".
  std::string OutboxStates() const;

 private:
  TempDir dir_;
  std::string db_path_;
  std::unique_ptr<store::Store> store_;
};

}  // namespace tw::testing
