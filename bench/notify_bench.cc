// Notification benchmark: how fast the outbox drains, and how long a NaN takes from the event
// file to a webhook receiver through the real daemon. A plain program.
//
//   notify_bench [--messages N] [--runs K] [--trainwatch PATH]
//
// 1. drain: N (default 10,000) messages queued in a fresh store's outbox for one webhook
//    channel (its defaults: no grouping, no rate limit) whose receiver is a loopback HTTP
//    server answering 200; then Deliverer::RunOnce on the real clock until the outbox is empty.
//    Baseline, in the same run: N bare HttpPost calls of the same payload to the same server
//    (what a fire-and-forget notifier does). Reported: messages/s of each and their ratio.
// 2. latency: the trainwatch daemon (this build's) started on an empty logdir with
//    --webhook to the loopback server; then K (default 20) times, 2 s apart: a new run
//    directory gets an event file with 30 healthy steps and then NaN losses, flushed at once
//    (open, append, close). Latency = the webhook request's arrival - the moment before the
//    flush, both on the steady clock. p50, p90 and max (p99 needs more runs than 2 s each
//    allows; --runs 100 gives it).
// 3. the same through a Slack channel on its defaults (--slack-webhook: grouped by run, a
//    30 s group_wait that a critical change does not wait for).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
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
  channels.push_back(std::move(*ch));
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
  if (!server.WaitForRequests(static_cast<size_t>(2 * n), 10)) Die("requests missing");
  std::printf("drain of %d queued webhook messages (loopback receiver):\n", n);
  std::printf("  outbox + Deliverer   %7.3f s  %8.0f messages/s\n", outbox_s, n / outbox_s);
  std::printf("  bare HttpPost        %7.3f s  %8.0f messages/s (baseline)\n", bare_s, n / bare_s);
  std::printf("  ratio outbox / bare  %.2f\n\n", bare_s / outbox_s);
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

// `flag`: --webhook or --slack-webhook.
void Latency(const fs::path& work, int runs, const std::string& binary, const std::string& flag) {
  testing::HttpServer server;
  const std::string name = flag == "--webhook" ? "webhook" : "slack";
  const fs::path logdir = work / ("logs-" + name);
  fs::create_directories(logdir);
  const std::string db = (work / (name + ".db")).string();
  const std::string log = (work / (name + ".log")).string();
  const std::string url = flag == "--webhook" ? server.url() : server.url("/services/T0/B0/BENCH");
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!freopen(log.c_str(), "w", stderr)) _exit(126);
    execl(binary.c_str(), binary.c_str(), "daemon", "--logdir", logdir.c_str(), "--db", db.c_str(),
          flag.c_str(), url.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // started, backfill (nothing) done
  std::vector<double> latencies;
  for (int k = 0; k < runs; ++k) {
    char run_name[32];
    std::snprintf(run_name, sizeof run_name, "nanrun-%04d", k);  // no name a prefix of another
    const std::string run = run_name;
    testing::EventFileWriter w((logdir / run / testing::EventFileName(1700000000 + k, "bench", 1, 0)).string());
    const double wall = Now();
    w.Add(testing::FileVersionEvent(wall));
    for (int s = 0; s < 30; ++s) w.Add(testing::SimpleScalarEvent("loss", s, wall + s * 0.01, 2.0f - s * 0.01f));
    for (int s = 30; s < 33; ++s) w.Add(testing::SimpleScalarEvent("loss", s, wall + s * 0.01, NAN));
    const size_t before = server.requests().size();
    const double t0 = testing::SteadySeconds();
    w.Flush();
    if (!server.WaitForRequests(before + 1, 60)) Die("no " + name + " message for " + run + " within 60 s; see " + log);
    const auto reqs = server.requests();
    double arrival = -1;
    for (const auto& r : reqs)
      if (r.body.find(run) != std::string::npos) arrival = r.time;
    if (arrival < 0) Die("the " + name + " message was not about " + run);
    latencies.push_back(arrival - t0);
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  std::printf("latency, NaN flushed to an event file -> %s request at the receiver (%d runs):\n", name.c_str(), runs);
  std::printf("  p50 %.3f s   p90 %.3f s   max %.3f s", Quantile(latencies, 0.5), Quantile(latencies, 0.9),
              *std::max_element(latencies.begin(), latencies.end()));
  if (runs >= 100) std::printf("   p99 %.3f s", Quantile(latencies, 0.99));
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  int messages = 10000, runs = 20;
  std::string binary = TW_CLI_BINARY;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--messages" && i + 1 < argc) messages = std::stoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::stoi(argv[++i]);
    else if (a == "--trainwatch" && i + 1 < argc) binary = argv[++i];
    else Die("usage: notify_bench [--messages N] [--runs K] [--trainwatch PATH]");
  }
  const fs::path work = fs::temp_directory_path() / ("notify_bench." + std::to_string(getpid()));
  fs::create_directories(work);
  Drain(work, messages);
  Latency(work, runs, binary, "--webhook");
  Latency(work, runs, binary, "--slack-webhook");
  fs::remove_all(work);
  return 0;
}
