// The daemon's configuration: one TOML file (docs/trainwatch.example.toml documents every
// key), or none at all with the embedded defaults and command-line flags. A config error names
// the file, line and what was expected, and the daemon refuses to start (or, on SIGHUP, keeps
// the configuration it has).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "decode/console_profiles.h"
#include "diagnose/engine.h"
#include "diagnose/lifecycle.h"
#include "fleet/options.h"
#include "notify/channel.h"
#include "objstore/s3_client.h"

namespace tw::app {

// A [[console]] entry: files matching `glob` are console logs (docs/sources.md), found at each
// rescan. Each is a run of its own, named by its path without the extension relative to `root`,
// and read only if its real path is under `root` (as an event file must be under its root).
struct ConsoleGlob {
  // An absolute glob(3)/fnmatch pattern (FNM_PATHNAME: `*` does not cross `/`). Validate
  // rewrites its leading directories to `root`'s canonical form (escaped where it holds `*?[\`).
  std::string glob;
  // The longest leading directory of `glob` without a wildcard: /scratch for
  // /scratch/*/slurm-*.out. Canonical after Validate.
  std::string root;
  int line = 0;  // where the config names it, for messages (0: not from a file)
  bool operator==(const ConsoleGlob&) const = default;
};

// `glob`'s root as ConsoleGlob::root says, unescaped, and what follows it (the pattern relative
// to the root, "" when `glob` ends at a directory).
std::pair<std::string, std::string> SplitGlobRoot(const std::string& glob);

struct Config {
  std::string origin = "(defaults)";    // where it came from, for messages
  std::vector<std::string> roots;       // absolute paths of the watched logdirs
  std::string db_path;                  // the store
  bool store_group_readable = false;    // a new store is created 0640 instead of 0600
  int64_t rescan_interval_ms = 30000;   // the periodic rescan, the source of truth
  // s3:// roots ([s3]): how the store is reached, and how often each root is listed.
  objstore::S3Settings s3;
  int64_t s3_poll_ms = 30000;
  bool inotify = true;                  // off for NFS/CIFS/sshfs, where no events arrive
  // Read event files whose real path is outside their root (a symlink out of it). Off: anyone
  // who can write a logdir could have the daemon read any file it can.
  bool follow_symlinks_outside_roots = false;
  int64_t batch_points = 20000;         // commit at least this often
  int64_t max_bytes_per_turn = 64 << 20;  // per file per turn, so a backfill cannot starve live runs
  // Console logs: [[console]] globs, and [ingest] profiles_dir (the user's profiles, read
  // before the built-ins), loaded by Validate into `profiles` (null: the built-ins only).
  std::vector<ConsoleGlob> console;
  std::string profiles_dir;
  std::shared_ptr<const decode::ProfileSet> profiles;
  bool verbose = false;
  // Diagnosis ([rules] and [roles]): how often rules run at most, and what they run with.
  bool rules_enabled = true;
  int64_t rules_interval_ms = 2000;   // a cycle at most this often while data arrives
  int64_t rules_all_interval_ms = 60000;  // scope-all rules (stale runs) at most this often
  // An [[alert]] that watches no series for this long is reported ([rules] alert_unmatched_hours).
  double alert_unmatched_seconds = 86400;
  diagnose::EngineOptions rules;
  // Run events ([lifecycle], diagnose/lifecycle.h); the daemon sets the writer probe.
  diagnose::LifecycleOptions lifecycle;
  // Notifications ([notify] and [[notify.channel]]): none configured means the console.
  std::vector<notify::ChannelConfig> channels;
  double notify_max_age_seconds = 24 * 3600;  // undelivered after this: dead
  // The web view ([web], docs/web.md): where it listens ("": not served) and its token.
  std::string web_listen;
  std::string web_token;  // a secret
  // Where people reach the view ("https://tw.example.org"; "": unknown): every channel without
  // a `link` of its own links each finding to BASE/findings/ID, its run's page.
  std::string web_base_url;
  // The fleet store ([fleet], docs/fleet.md): where this host ships its store ("": nowhere).
  fleet::FleetOptions fleet;

  bool operator==(const Config&) const = default;
};

// Channels given on the command line, beside the configured ones with the same guarantees:
// cli-slack, cli-slack-2, ..., cli-webhook, ... A URL in argv is visible to every local user
// (ps, /proc/PID/cmdline), so it may come from a file instead (--slack-webhook-file,
// --webhook-file: its first line; the file must be readable by its owner only, as a config
// file holding a secret; read again at every reload) or from the environment
// ($TRAINWATCH_SLACK_WEBHOOK, $TRAINWATCH_WEBHOOK). Errors name the flag (and file), never the URL.
struct CommandLineUrls {
  std::vector<std::string> slack, slack_files;      // --slack-webhook, --slack-webhook-file
  std::vector<std::string> webhook, webhook_files;  // --webhook, --webhook-file
};
Status AddCommandLineChannels(const CommandLineUrls& urls, Config* config);

// The channels notifications go to: the configured ones, or the console when there are none.
std::vector<notify::ChannelConfig> EffectiveChannels(const Config& config);

// Parses a TOML config file. Relative roots and db paths resolve against the file's directory.
Result<Config> LoadConfigFile(const std::string& path);
// The same for a file's text already read; `path` names it in messages and anchors its
// relative paths.
Result<Config> ParseConfig(std::string_view text, const std::string& path);

// The default store location with no config: $STATE_DIRECTORY (systemd's StateDirectory=)
// if set, else the current directory.
std::string DefaultDbPath();

// Checks what can only be checked on this machine: the rule ids and parameters [rules] names
// exist (built-in or in [rules] dir), every root and every console glob's root is a readable
// directory, every profile of [ingest] profiles_dir loads (a broken one is an error naming its
// file: it would silently read nothing), and the store's directory is writable. Resolves roots
// and console globs' roots to canonical absolute paths and loads the profiles. Before the store
// is opened.
Status Validate(Config* config);

}  // namespace tw::app
