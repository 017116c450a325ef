// Notification benchmark: how fast the outbox drains, and how long a NaN takes from the event
// file to a webhook receiver through the real daemon. A plain program.
//
//   notify_bench [--messages N] [--runs K] [--gap S] [--only PARTS] [--trainwatch PATH]
//
// 1. drain: N (default 10,000) messages queued in a fresh store's outbox for one webhook
//    channel (its defaults: no grouping, no rate limit) whose receiver is a loopback HTTP
//    server answering 200; then Deliverer::RunOnce on the real clock until the outbox is empty.
//    Baseline, in the same run: N bare HttpPost calls of the same payload to the same server
//    (what a fire-and-forget notifier does), and N Sends of the same channel without the outbox.
//    Reported: messages/s of each, the drain's time in and outside the channel's sends, and
//    the ratio outbox / bare.
// 2. latency: the trainwatch daemon (this build's) started on an empty logdir with
//    --webhook to the loopback server; then K (default 20) times, S (default 2) s after the
//    last run's message arrived: a new run directory gets an event file with 30 healthy steps
//    and then NaN losses, flushed at once (open, append, close). Latency = the arrival of the
//    request about that run - the moment before the flush, both on the steady clock. p50, p90
//    and max; p99 too from 100 runs (--runs 100).
// 3. the same through a Slack channel on its defaults (--slack-webhook: grouped by run, a
//    30 s group_wait that a critical change does not wait for, one message a second).
// 4. the same Slack channel, its receiver answering each run's first request 429 with
//    Retry-After: 1 (then 200): latency to the accepted request, which is about 1 s plus
//    delivery. Also: the spacing between the 429 and the retry.
// Every part also counts the requests per run: one accepted each (exactly once), and no
// request about no run of ours. S must stay above the Slack channel's 1 s between messages, or
// parts 3 and 4 measure its rate limit too. --only takes a comma-separated subset of drain,
// webhook, slack, slack429 (default: all).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "notify/deliverer.h"
#include "notify/outbox.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "support/http_server.h"

namespace {

using namespace tw;
namespace fs = std::filesystem;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "notify_bench: %s\n", why.c_str());
  std::exit(1);
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A channel that times the sends of the one it wraps: the drain's time outside them is the
// outbox's own (reading, marking, scheduling).
class TimedChannel : public notify::Channel {
 public:
  explicit TimedChannel(std::unique_ptr<notify::Channel> inner)
      : Channel(inner->config()), inner_(std::move(inner)) {}
  double seconds = 0;

 protected:
  notify::SendResult DoSend(const notify::Notification& n, const std::string& id, double now) override {
    const auto t = std::chrono::steady_clock::now();
    notify::SendResult r = inner_->Send(n, id, now);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    return r;
  }
  notify::SendResult DoSendGroup(const notify::Group& g, const std::string& id, double now) override {
    const auto t = std::chrono::steady_clock::now();
    notify::SendResult r = inner_->SendGroup(g, id, now);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    return r;
  }

 private:
  std::unique_ptr<notify::Channel> inner_;
};

void Drain(const fs::path& work, int n) {
  testing::HttpServer server;
  const std::string db_path = (work / "drain.db").string();
  auto store = store::Store::Open(db_path);
  if (!store.ok()) Die(store.status().ToString());
  notify::ChannelConfig c = notify::ChannelConfig::Defaults("bench", "webhook");
  c.url = server.url();
  c.min_severity = diagnose::Severity::kInfo;
  const notify::Notification sample = notify::SampleNotification(Now());
  if (!(*store)->db().Exec("BEGIN").ok()) Die("begin");
  for (int i = 1; i <= n; ++i) {
    Result<int> q = notify::Enqueue((*store)->db(), {c}, sample, i, Now());
    if (!q.ok() || *q != 1) Die("enqueue");
  }
  if (!(*store)->db().Exec("COMMIT").ok()) Die("commit");

  std::vector<std::unique_ptr<notify::Channel>> channels;
  auto ch = notify::MakeChannel(c);
  if (!ch.ok()) Die(ch.status().ToString());
  auto timed = std::make_unique<TimedChannel>(std::move(*ch));
  TimedChannel* timer = timed.get();
  channels.push_back(std::move(timed));
  auto d = notify::Deliverer::Open(db_path, std::move(channels));
  if (!d.ok()) Die(d.status().ToString());
  const auto t0 = std::chrono::steady_clock::now();
  int64_t sent = 0;
  while (sent < n) {
    auto attempts = (*d)->RunOnce(Now());
    if (!attempts.ok()) Die(attempts.status().ToString());
    for (const auto& a : *attempts) sent += a.state == "sent";
    if (attempts->empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double outbox_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // The baseline: the same bodies, posted bare.
  const std::string body = notify::ToPayload(sample);
  auto url = notify::ParseUrl(server.url());
  if (!url.ok()) Die("url");
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    auto r = notify::HttpPost(*url, {{"Content-Type", "application/json"}}, body);
    if (!r.ok() || r->status != 200) Die("bare post");
  }
  const double bare_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  // Then the same channel's Send alone (rendering, headers, judging), without the outbox: what
  // the outbox itself costs is the difference.
  auto alone = notify::MakeChannel(c);
  if (!alone.ok()) Die(alone.status().ToString());
  const auto t2 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    const notify::SendResult r = (*alone)->Send(sample, "tw-bench-" + std::to_string(i), Now());
    if (r.kind != notify::SendResult::Kind::kSent) Die("channel send: " + r.detail);
  }
  const double alone_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count();
  if (!server.WaitForRequests(static_cast<size_t>(3 * n), 10)) Die("requests missing");
  std::printf("drain of %d queued webhook messages (loopback receiver):\n", n);
  std::printf("  outbox + Deliverer   %7.3f s  %8.0f messages/s (in the channel's sends %.3f s, outside %.3f s)\n",
              outbox_s, n / outbox_s, timer->seconds, outbox_s - timer->seconds);
  std::printf("  channel Send alone   %7.3f s  %8.0f messages/s (the same channel, no outbox)\n", alone_s, n / alone_s);
  std::printf("  bare HttpPost        %7.3f s  %8.0f messages/s (baseline)\n", bare_s, n / bare_s);
  std::printf("  ratio outbox / bare  %.2f\n\n", bare_s / outbox_s);
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

// `flag`: --webhook or --slack-webhook; `first_429`: each run's first request is answered 429
// with Retry-After: 1.
void Latency(const fs::path& work, int runs, double gap, const std::string& binary, const std::string& flag,
             bool first_429) {
  testing::HttpServer server;
  const std::string name = std::string(flag == "--webhook" ? "webhook" : "slack") + (first_429 ? "429" : "");
  const fs::path logdir = work / ("logs-" + name);
  fs::create_directories(logdir);
  const std::string db = (work / (name + ".db")).string();
  const std::string log = (work / (name + ".log")).string();
  const std::string url = flag == "--webhook" ? server.url() : server.url("/services/T0/B0/BENCH");
  // The run being measured, and whether its 429 was answered (the responder runs on the
  // server's thread).
  std::mutex mu;
  std::string current;
  bool refused = false;
  if (first_429)
    server.SetResponder([&](const testing::RecordedRequest& r) -> std::optional<testing::Reply> {
      std::lock_guard lock(mu);
      if (refused || current.empty() || r.body.find(current) == std::string::npos) return std::nullopt;
      refused = true;
      return testing::Reply{.status = 429, .body = "rate_limited", .headers = {{"Retry-After", "1"}}};
    });
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!freopen(log.c_str(), "w", stderr)) _exit(126);
    execl(binary.c_str(), binary.c_str(), "daemon", "--logdir", logdir.c_str(), "--db", db.c_str(),
          flag.c_str(), url.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // started, backfill (nothing) done
  std::vector<double> latencies, spacings;
  std::vector<std::string> names;
  for (int k = 0; k < runs; ++k) {
    char run_name[32];
    std::snprintf(run_name, sizeof run_name, "nanrun-%04d", k);  // no name a prefix of another
    const std::string run = run_name;
    names.push_back(run);
    {
      std::lock_guard lock(mu);
      current = run;
      refused = false;
    }
    testing::EventFileWriter w((logdir / run / testing::EventFileName(1700000000 + k, "bench", 1, 0)).string());
    const double wall = Now();
    w.Add(testing::FileVersionEvent(wall));
    for (int s = 0; s < 30; ++s) w.Add(testing::SimpleScalarEvent("loss", s, wall + s * 0.01, 2.0f - s * 0.01f));
    for (int s = 30; s < 33; ++s) w.Add(testing::SimpleScalarEvent("loss", s, wall + s * 0.01, NAN));
    size_t seen = server.requests().size();
    const double t0 = testing::SteadySeconds();
    w.Flush();
    // The request about this run that was accepted: with first_429, its second.
    double arrival = -1, refused_at = -1;
    while (arrival < 0) {
      const double left = t0 + 60 - testing::SteadySeconds();
      if (left <= 0 || !server.WaitForRequests(seen + 1, left))
        Die("no accepted " + name + " message for " + run + " within 60 s; see " + log);
      const auto reqs = server.requests();
      for (; seen < reqs.size(); ++seen) {
        if (reqs[seen].body.find(run) == std::string::npos) continue;
        if (first_429 && refused_at < 0) refused_at = reqs[seen].time;
        else if (arrival < 0) arrival = reqs[seen].time;
      }
    }
    latencies.push_back(arrival - t0);
    if (first_429) spacings.push_back(arrival - refused_at);
    std::this_thread::sleep_for(std::chrono::duration<double>(gap));
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  // Exactly once: each run's requests (one, or the 429 and one), and none about no run of ours.
  const auto reqs = server.requests();
  int extra = 0, stray = 0;
  for (const auto& r : reqs) {
    int about = 0;
    for (const auto& n : names) about += r.body.find(n) != std::string::npos;
    stray += about == 0;
  }
  for (const auto& n : names) {
    int got = 0;
    for (const auto& r : reqs) got += r.body.find(n) != std::string::npos;
    extra += std::max(0, got - (first_429 ? 2 : 1));
  }
  if (first_429)
    std::printf("latency, NaN flushed -> slack request accepted, each run's first answered 429 "
                "(Retry-After: 1) (%d runs):\n", runs);
  else
    std::printf("latency, NaN flushed to an event file -> %s request at the receiver (%d runs):\n", name.c_str(), runs);
  std::printf("  p50 %.3f s   p90 %.3f s   max %.3f s", Quantile(latencies, 0.5), Quantile(latencies, 0.9),
              *std::max_element(latencies.begin(), latencies.end()));
  if (runs >= 100) std::printf("   p99 %.3f s", Quantile(latencies, 0.99));
  std::printf("\n");
  if (first_429)
    std::printf("  429 -> retry: min %.3f s   p50 %.3f s   max %.3f s\n",
                *std::min_element(spacings.begin(), spacings.end()), Quantile(spacings, 0.5),
                *std::max_element(spacings.begin(), spacings.end()));
  std::printf("  requests %zu: %d beyond one accepted per run, %d about no run of ours\n", reqs.size(), extra, stray);
}

}  // namespace

int main(int argc, char** argv) {
  int messages = 10000, runs = 20;
  double gap = 2;
  std::string binary = TW_CLI_BINARY, only = "drain,webhook,slack,slack429";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--messages" && i + 1 < argc) messages = std::stoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::stoi(argv[++i]);
    else if (a == "--gap" && i + 1 < argc) gap = std::stod(argv[++i]);
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--trainwatch" && i + 1 < argc) binary = argv[++i];
    else Die("usage: notify_bench [--messages N] [--runs K] [--gap S] [--only PARTS] [--trainwatch PATH]");
  }
  std::set<std::string> parts;
  for (size_t at = 0; at <= only.size();) {
    const size_t comma = std::min(only.find(',', at), only.size());
    parts.insert(only.substr(at, comma - at));
    at = comma + 1;
  }
  for (const auto& p : parts)
    if (p != "drain" && p != "webhook" && p != "slack" && p != "slack429") Die("--only: unknown part '" + p + "'");
  if (runs < 1) Die("--runs: at least 1");
  const fs::path work = fs::temp_directory_path() / ("notify_bench." + std::to_string(getpid()));
  fs::create_directories(work);
  if (parts.count("drain")) Drain(work, messages);
  if (parts.count("webhook")) Latency(work, runs, gap, binary, "--webhook", false);
  if (parts.count("slack")) Latency(work, runs, gap, binary, "--slack-webhook", false);
  if (parts.count("slack429")) Latency(work, runs, gap, binary, "--slack-webhook", true);
  fs::remove_all(work);
  return 0;
}
