// The daemon's configuration: the TOML file (app::LoadConfigFile), flags on top
// (app::BuildConfig), the checks only this machine can make (app::Validate), and the binary's
// exit status 78 with the message on stderr.
#include <fnmatch.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "app/config.h"
#include "app/daemon.h"
#include "notify/secrets.h"
#include "support/test_env.h"

namespace tw {
namespace {

using testing::ShellQuote;

using testing::RunCommand;
using testing::TempDir;
using testing::WriteFile;
namespace fs = std::filesystem;

// The checkout's docs/trainwatch.example.toml: beside this file's directory, or beside the
// corpus (TW_CORPUS_DIR is <source>/../shared/corpus).
std::string ExampleConfigPath() {
  const fs::path from_file = fs::path(__FILE__).parent_path().parent_path() / "docs" /
                             "trainwatch.example.toml";
  std::error_code ec;
  if (from_file.is_absolute() && fs::exists(from_file, ec)) return from_file.native();
  std::string corpus = TW_CORPUS_DIR;
  const std::string suffix = "/../shared/corpus";
  if (corpus.ends_with(suffix)) corpus.resize(corpus.size() - suffix.size());
  return (fs::path(corpus) / "docs" / "trainwatch.example.toml").native();
}

class Config : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "logs");
    path_ = dir_ / "trainwatch.toml";
  }
  // Writes the config file and loads it.
  Result<app::Config> Load(const std::string& text) {
    WriteFile(path_, text);
    return app::LoadConfigFile(path_);
  }
  // The load error's message (fails the test if it loaded).
  std::string LoadError(const std::string& text) {
    Result<app::Config> c = Load(text);
    EXPECT_FALSE(c.ok()) << "loaded:\n" << text;
    return c.ok() ? std::string() : c.status().message();
  }
  // Runs `trainwatch daemon ARGS`; its exit status, with stdout+stderr in *out.
  int Daemon(const std::string& args, std::string* out) {
    return RunCommand(std::string(TW_CLI_BINARY) + " daemon " + args + " </dev/null", out);
  }

  TempDir dir_;
  std::string path_;
};

TEST_F(Config, AGoodFileLoadsAndResolvesRelativePaths) {
  Result<app::Config> c = Load(R"([store]
path = "state/tw.db"

[watch]
roots = ["logs", "/abs/other"]
rescan_interval_seconds = 2.5
inotify = false

[ingest]
batch_points = 500
max_bytes_per_turn = 1048576

[log]
verbose = true
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->origin, path_);
  EXPECT_EQ(c->db_path, dir_ / "state/tw.db");
  EXPECT_EQ(c->roots, (std::vector<std::string>{dir_ / "logs", "/abs/other"}));
  EXPECT_EQ(c->rescan_interval_ms, 2500);
  EXPECT_FALSE(c->inotify);
  EXPECT_EQ(c->batch_points, 500);
  EXPECT_EQ(c->max_bytes_per_turn, 1048576);
  EXPECT_TRUE(c->verbose);
}

// [roles] takes every role a run's series can hold: those the default patterns name, those only
// inference assigns (a GAN's players: gan_loss), and ignore; an unknown one is an error.
TEST_F(Config, WebListensOnLoopbackOrWithATokenOnly) {
  Result<app::Config> c = Load("[web]\nlisten = \"127.0.0.1:8421\"\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->web_listen, "127.0.0.1:8421");
  EXPECT_TRUE(c->web_token.empty());
  std::string e = LoadError("[web]\nlisten = \"0.0.0.0:8421\"\n");
  EXPECT_NE(e.find(path_ + ":2:"), std::string::npos) << e;
  EXPECT_NE(e.find("token"), std::string::npos) << e;
  e = LoadError("[web]\nlisten = \"8421\"\n");
  EXPECT_NE(e.find(path_ + ":2:"), std::string::npos) << e;
  EXPECT_NE(e.find("ADDRESS:PORT"), std::string::npos) << e;
  e = LoadError("[web]\nlisten = \"127.0.0.1:8421\"\nport = 1\n");
  EXPECT_NE(e.find("port"), std::string::npos) << e;
  // A token in the file: only in a file its owner alone can read; or from the environment.
  WriteFile(path_, "[web]\nlisten = \"0.0.0.0:8421\"\ntoken = \"s3cret-token\"\n");
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  c = app::LoadConfigFile(path_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("readable by group or others"), std::string::npos) << c.status().message();
  EXPECT_EQ(c.status().message().find("s3cret-token"), std::string::npos);
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write);
  c = app::LoadConfigFile(path_);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->web_token, "s3cret-token");
  ::setenv("TW_TEST_WEB_TOKEN", "from-env", 1);
  c = Load("[web]\nlisten = \"0.0.0.0:8421\"\ntoken_env = \"TW_TEST_WEB_TOKEN\"\n");
  ::unsetenv("TW_TEST_WEB_TOKEN");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->web_token, "from-env");
}

// [web] base_url: every channel without a link of its own links each finding to its run's page.
TEST_F(Config, WebBaseUrlLinksEveryChannelWithoutItsOwnLink) {
  Result<app::Config> c = Load(
      "[web]\nbase_url = \"https://tw.example.org/\"\n"
      "[[notify.channel]]\nname = \"a\"\ntype = \"webhook\"\nurl = \"http://127.0.0.1:9/a\"\n"
      "[[notify.channel]]\nname = \"b\"\ntype = \"webhook\"\nurl = \"http://127.0.0.1:9/b\"\n"
      "link = \"http://tb:6006/#{run}\"\n");
  ASSERT_FALSE(c.ok());  // channel URLs in a file its group can read: chmod 600, as users must
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write);
  c = app::LoadConfigFile(path_);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->web_base_url, "https://tw.example.org");
  const auto channels = app::EffectiveChannels(*c);
  ASSERT_EQ(channels.size(), 2u);
  EXPECT_EQ(channels[0].link_template, "https://tw.example.org/findings/{finding_id}");
  EXPECT_EQ(channels[1].link_template, "http://tb:6006/#{run}");
  app::Config none = *c;
  none.channels.clear();  // the console channel gets it too
  EXPECT_EQ(app::EffectiveChannels(none).at(0).link_template, "https://tw.example.org/findings/{finding_id}");
  for (const std::string bad : {"tw.example.org", "https://x/?a=1", "ftp://x", "https://x/{run}"}) {
    const std::string e = LoadError("[web]\nbase_url = \"" + bad + "\"\n");
    EXPECT_NE(e.find(path_ + ":2:"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("base_url"), std::string::npos) << e;
  }
}

TEST_F(Config, RolesTakesEveryRoleARunCanHold) {
  Result<app::Config> c = Load("[roles]\ngan_loss = [\"D_loss\", \"G_loss\"]\nval_metric = [\"eval/bleu\"]\n"
                               "ignore = [\"debug/*\"]\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->rules.roles.size(), 4u);
  EXPECT_EQ(c->rules.roles[0].role, "gan_loss");
  EXPECT_NE(LoadError("[roles]\ngan_los = [\"D_loss\"]\n").find("gan_los"), std::string::npos);
}

TEST_F(Config, AnEmptyFileIsAllDefaults) {
  Result<app::Config> c = Load("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  app::Config defaults;
  EXPECT_TRUE(c->roots.empty());
  EXPECT_EQ(c->rescan_interval_ms, defaults.rescan_interval_ms);
  EXPECT_EQ(c->inotify, defaults.inotify);
  EXPECT_EQ(c->batch_points, defaults.batch_points);
  EXPECT_EQ(c->max_bytes_per_turn, defaults.max_bytes_per_turn);
  EXPECT_FALSE(c->db_path.empty());
}

TEST_F(Config, UnknownKeyNamesFileLineAndKey) {
  const std::string msg = LoadError("[watch]\nroots = [\"logs\"]\nrescan_intervall = 5\n");
  EXPECT_NE(msg.find(path_ + ":3: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key 'rescan_intervall' in [watch]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rescan_interval_seconds"), std::string::npos) << msg;  // the known keys

  const std::string top = LoadError("\n\n[wacth]\nroots = []\n");
  EXPECT_NE(top.find(path_ + ":3: "), std::string::npos) << top;
  EXPECT_NE(top.find("unknown key 'wacth'"), std::string::npos) << top;

  const std::string ingest = LoadError("[ingest]\nbatch = 5\n");
  EXPECT_NE(ingest.find(path_ + ":2: unknown key 'batch' in [ingest]"), std::string::npos)
      << ingest;
}

TEST_F(Config, WrongTypesNameFileLineAndTheExpectedType) {
  struct Case {
    std::string text;
    int line;
    std::string expected;
  };
  const Case cases[] = {
      {"[watch]\nroots = \"x\"\n", 2, "[watch] roots must be an array of strings, got a string"},
      {"[watch]\nroots = [\"a\", 3]\n", 2, "[watch] roots must hold strings, got an integer"},
      {"[watch]\n\ninotify = \"yes\"\n", 3, "[watch] inotify must be true or false, got a string"},
      {"[ingest]\nbatch_points = 1.5\n", 2,
       "[ingest] batch_points must be a positive integer, got a number"},
      {"[ingest]\nmax_bytes_per_turn = \"64M\"\n", 2,
       "[ingest] max_bytes_per_turn must be a positive integer, got a string"},
      {"[watch]\nrescan_interval_seconds = \"30s\"\n", 2,
       "[watch] rescan_interval_seconds must be a number of seconds, got a string"},
      {"[store]\npath = 7\n", 2, "[store] path must be a string (a file path), got an integer"},
      {"[log]\nverbose = \"no\"\n", 2, "[log] verbose must be true or false, got a string"},
      {"watch = 3\n", 1, "'watch' must be a table"},
  };
  for (const auto& c : cases) {
    const std::string msg = LoadError(c.text);
    EXPECT_NE(msg.find(path_ + ":" + std::to_string(c.line) + ": "), std::string::npos)
        << c.text << " -> " << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.text << " -> " << msg;
  }
}

// `inotify = 0` must not silently mean false (nor `verbose = 2` true): TOML has booleans.
TEST_F(Config, AnIntegerIsNotABoolean) {
  std::string msg = LoadError("[watch]\ninotify = 0\n");
  EXPECT_NE(msg.find(path_ + ":2: [watch] inotify must be true or false, got an integer"),
            std::string::npos)
      << msg;
  msg = LoadError("[log]\nverbose = 1\n");
  EXPECT_NE(msg.find(path_ + ":2: [log] verbose must be true or false, got an integer"),
            std::string::npos)
      << msg;
}

TEST_F(Config, OutOfRangeValuesNameFileAndLine) {
  std::string msg = LoadError("[watch]\nrescan_interval_seconds = 0.01\n");
  EXPECT_NE(msg.find(path_ + ":2: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("between 0.05 and 86400"), std::string::npos) << msg;
  msg = LoadError("[ingest]\nbatch_points = 0\n");
  EXPECT_NE(msg.find(path_ + ":2: [ingest] batch_points must be at least 1"), std::string::npos)
      << msg;
  msg = LoadError("[ingest]\nmax_bytes_per_turn = 100\n");
  EXPECT_NE(msg.find(path_ + ":2: [ingest] max_bytes_per_turn must be at least 4096"),
            std::string::npos)
      << msg;
}

TEST_F(Config, SyntaxErrorNamesFileAndLine) {
  const std::string msg = LoadError("[watch]\nroots = [\"logs\"\ninotify = true\n");
  EXPECT_NE(msg.find(path_ + ":"), std::string::npos) << msg;
  // The error is at line 2 or 3 depending on where the parser notices the missing ']'.
  EXPECT_TRUE(msg.find(path_ + ":2: ") != std::string::npos ||
              msg.find(path_ + ":3: ") != std::string::npos)
      << msg;
  const std::string dup = LoadError("[watch]\ninotify = true\ninotify = false\n");
  EXPECT_NE(dup.find(path_ + ":3: "), std::string::npos) << dup;
}

TEST_F(Config, UnreadableFileIsNamed) {
  Result<app::Config> c = app::LoadConfigFile(dir_ / "absent.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(dir_ / "absent.toml"), std::string::npos)
      << c.status().message();
}

TEST_F(Config, ValidateNamesAMissingRootAndCanonicalizesRoots) {
  Result<app::Config> c = Load("[store]\npath = \"tw.db\"\n[watch]\nroots = [\"logs/../logs\", "
                               "\"missing\"]\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Status st = app::Validate(&*c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("root '" + (dir_ / "missing") + "' is not a directory"),
            std::string::npos)
      << st.message();

  c = Load("[store]\npath = \"tw.db\"\n[watch]\nroots = [\"logs/../logs/\"]\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  st = app::Validate(&*c);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(c->roots, std::vector<std::string>{fs::canonical(dir_ / "logs").native()});
}

TEST_F(Config, ValidateRefusesAStoreWhoseDirectoryCannotBeWritten) {
  // Root ignores permissions, so make the store's directory a regular file.
  WriteFile(dir_ / "plainfile", "not a directory");
  Result<app::Config> c =
      Load("[store]\npath = \"plainfile/tw.db\"\n[watch]\nroots = [\"logs\"]\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Status st = app::Validate(&*c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(dir_ / "plainfile"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(path_), std::string::npos) << st.message();  // the origin
}

TEST_F(Config, ValidateRefusesNoRoots) {
  Result<app::Config> c = Load("[store]\npath = \"tw.db\"\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Status st = app::Validate(&*c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no roots to watch"), std::string::npos) << st.message();
}

TEST_F(Config, CommandLineChannelsAreNamedApartAndCheckedLikeConfiguredOnes) {
  app::DaemonArgs args;
  args.logdirs = {dir_ / "logs"};
  args.slack_webhooks = {"http://127.0.0.1:9/services/A", "https://hooks.slack.com/services/B"};
  args.webhooks = {"http://127.0.0.1:9/hook"};
  Result<app::Config> c = app::BuildConfig(args);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->channels.size(), 3u);
  EXPECT_EQ(c->channels[0].name, "cli-slack");
  EXPECT_EQ(c->channels[1].name, "cli-slack-2");  // names key the outbox: never twice
  EXPECT_EQ(c->channels[2].name, "cli-webhook");
  EXPECT_TRUE(c->channels[2].send_resolved);
  args.webhooks = {"ftp://127.0.0.1/hook/SECRET"};
  Result<app::Config> bad = app::BuildConfig(args);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--webhook: URL scheme"), std::string::npos) << bad.status().message();
  EXPECT_EQ(bad.status().message().find("SECRET"), std::string::npos);
}

TEST_F(Config, BuildConfigPutsFlagsOnTopOfTheFile) {
  fs::create_directories(dir_ / "more");
  WriteFile(path_, "[store]\npath = \"from-file.db\"\n[watch]\nroots = [\"logs\"]\n"
                   "rescan_interval_seconds = 10\n");
  app::DaemonArgs args;
  args.config_path = path_;
  args.logdirs = {dir_ / "more", dir_ / "logs"};  // "logs" is also in the file: once only
  args.db_path = dir_ / "flag.db";
  args.rescan_seconds = 0.5;
  args.no_inotify = true;
  Result<app::Config> c = app::BuildConfig(args);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->roots, (std::vector<std::string>{fs::canonical(dir_ / "logs").native(),
                                                fs::canonical(dir_ / "more").native()}));
  EXPECT_EQ(c->db_path, dir_ / "flag.db");
  EXPECT_EQ(c->rescan_interval_ms, 500);
  EXPECT_FALSE(c->inotify);

  args.rescan_seconds = 0.001;
  Result<app::Config> bad = app::BuildConfig(args);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--rescan-interval"), std::string::npos)
      << bad.status().message();
}

TEST_F(Config, BuildConfigWithoutAFileNeedsALogdir) {
  app::DaemonArgs args;
  args.db_path = dir_ / "t.db";
  Result<app::Config> c = app::BuildConfig(args);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no roots to watch"), std::string::npos)
      << c.status().message();
  args.logdirs = {dir_ / "logs"};
  c = app::BuildConfig(args);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->origin, "command line");
}

TEST_F(Config, TheBinaryExitsSeventyEightWithTheMessageOnStderr) {
  WriteFile(dir_ / "plainfile", "x");
  struct Case {
    std::string config;  // "" for no --config
    std::string flags;
    std::string message;
  };
  const std::string db = " --db " + ShellQuote(dir_ / "t.db");
  const Case cases[] = {
      {"[watch]\nroots = [\"logs\"]\nrescan_intervall = 5\n", db,
       path_ + ":3: unknown key 'rescan_intervall' in [watch]"},
      {"[watch]\nroots = \"x\"\n", db, path_ + ":2: [watch] roots must be an array of strings"},
      {"[watch]\nroots = [\"logs\"]\ninotify = \"yes\"\n", db,
       path_ + ":3: [watch] inotify must be true or false"},
      {"[watch]\nroots = [\"logs\"]\n[ingest]\nbatch_points = 1.5\n", db,
       path_ + ":4: [ingest] batch_points must be a positive integer"},
      {"[watch]\nroots = [\"logs\"\n", db, path_ + ":"},
      {"[watch]\nroots = [\"nowhere\"]\n", db, "root '" + (dir_ / "nowhere") + "' is not a directory"},
      {"[store]\npath = \"plainfile/t.db\"\n[watch]\nroots = [\"logs\"]\n", "",
       "the store's directory '" + (dir_ / "plainfile") + "'"},
      {"", db, "no roots to watch"},
      {"", db + " --logdir " + ShellQuote(dir_ / "logs") + " --rescan-interval 0.001", "--rescan-interval"},
  };
  for (const auto& c : cases) {
    std::string args = c.flags;
    if (!c.config.empty()) {
      WriteFile(path_, c.config);
      args = "--config " + ShellQuote(path_) + args;
    }
    std::string out;
    EXPECT_EQ(Daemon(args, &out), app::kExitConfig) << c.config << args << "\n" << out;
    EXPECT_NE(out.find("<3>configuration error: "), std::string::npos) << out;
    EXPECT_NE(out.find(c.message), std::string::npos) << "want: " << c.message << "\ngot: " << out;
  }
}

TEST_F(Config, TheBinaryRefusesAStoreThatIsNotOurs) {
  WriteFile(dir_ / "notes.txt", "just some text, long enough to not be a database......");
  std::string out;
  EXPECT_EQ(Daemon("--logdir " + ShellQuote(dir_ / "logs") + " --db " + ShellQuote(dir_ / "notes.txt"), &out),
            app::kExitConfig)
      << out;
  EXPECT_NE(out.find("not a trainwatch database"), std::string::npos) << out;
}

TEST_F(Config, NotifyChannelsLoadWithSecretsFromTheEnvironment) {
  ::setenv("TW_TEST_HOOK", "http://127.0.0.1:9/services/T/B/SECRET", 1);
  Result<app::Config> c = Load(
      "[notify]\nmax_age_hours = 2\n"
      "[[notify.channel]]\nname = \"a\"\ntype = \"slack\"\nurl_env = \"TW_TEST_HOOK\"\n"
      "min_severity = \"critical\"\nruns = [\"prod/*\"]\nlink = \"http://tb/{run}\"\n"
      "[[notify.channel]]\nname = \"b\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_HOOK\"\n");
  ::unsetenv("TW_TEST_HOOK");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->channels.size(), 2u);
  EXPECT_EQ(c->notify_max_age_seconds, 7200);
  EXPECT_EQ(c->channels[0].url, "http://127.0.0.1:9/services/T/B/SECRET");
  EXPECT_EQ(c->channels[0].min_severity, diagnose::Severity::kCritical);
  EXPECT_FALSE(c->channels[0].send_resolved);  // Slack's default
  EXPECT_TRUE(c->channels[1].send_resolved);   // a webhook's
  EXPECT_EQ(c->channels[0].runs, std::vector<std::string>{"prod/*"});
  EXPECT_EQ(app::EffectiveChannels(app::Config{}).at(0).type, "console");
}

TEST_F(Config, NotifyMistakesAreNamedWithoutTheSecret) {
  const std::string chan = "[[notify.channel]]\nname = \"a\"\ntype = \"slack\"\n";
  EXPECT_NE(LoadError(chan + "url_env = \"TW_SURELY_UNSET\"\n").find("TW_SURELY_UNSET (url_env) is not set"),
            std::string::npos);
  EXPECT_NE(LoadError(chan + "urll = \"x\"\n").find("unknown key 'urll'"), std::string::npos);
  EXPECT_NE(LoadError(chan + "url = \"ftp://h/x/SECRET\"\n").find("scheme"), std::string::npos);
  EXPECT_EQ(LoadError(chan + "url = \"ftp://h/x/SECRET\"\n").find("SECRET"), std::string::npos);
  EXPECT_NE(LoadError(chan + "url = \"http://h/x\"\nmin_severity = \"loud\"\n").find("min_severity"),
            std::string::npos);
  EXPECT_NE(LoadError("[[notify.channel]]\nname = \"a\"\ntype = \"pager\"\nurl = \"http://h/\"\n").find("type must be"),
            std::string::npos);
  EXPECT_NE(LoadError(chan + "url = \"http://h/x\"\n" + chan + "url = \"http://h/y\"\n").find("two channels"),
            std::string::npos);
}

TEST_F(Config, ASecretInAFileOthersCanReadIsRefused) {
  const std::string text = "[[notify.channel]]\nname = \"a\"\ntype = \"slack\"\nurl = \"http://h/services/SECRET\"\n";
  WriteFile(path_, text);
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                             fs::perms::others_read);
  Result<app::Config> c = app::LoadConfigFile(path_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("readable by group or others (mode 0644)"), std::string::npos)
      << c.status().message();
  EXPECT_EQ(c.status().message().find("SECRET"), std::string::npos);
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_TRUE(app::LoadConfigFile(path_).ok());
}

TEST_F(Config, EmailChannelsLoadWithPortDefaultsAndSecretsFromTheEnvironment) {
  ::setenv("TW_TEST_SMTP_PW", "smtp-SECRET", 1);
  ::setenv("TW_TEST_SG_KEY", "SG.key-SECRET", 1);
  Result<app::Config> c = Load(
      "[[notify.channel]]\nname = \"mail\"\ntype = \"email\"\nsmtp_host = \"smtp.example.com\"\n"
      "username = \"tw\"\npassword_env = \"TW_TEST_SMTP_PW\"\nfrom = \"Trainwatch <tw@example.com>\"\n"
      "to = [\"a@example.com\", \"b@example.com\"]\nca_file = \"ca.pem\"\n"
      "[[notify.channel]]\nname = \"smtps\"\ntype = \"email\"\nsmtp_host = \"h\"\ntls = \"tls\"\n"
      "from = \"tw@example.com\"\nto = [\"a@example.com\"]\nsend_resolved = true\ntimeout_seconds = 5\n"
      "[[notify.channel]]\nname = \"relay\"\ntype = \"email\"\nsmtp_host = \"127.0.0.1\"\ntls = \"none\"\n"
      "smtp_port = 2525\nfrom = \"tw@example.com\"\nto = [\"a@example.com\"]\n"
      "[[notify.channel]]\nname = \"sg\"\ntype = \"sendgrid\"\napi_key_env = \"TW_TEST_SG_KEY\"\n"
      "from = \"tw@example.com\"\nto = [\"a@example.com\"]\n");
  ::unsetenv("TW_TEST_SMTP_PW");
  ::unsetenv("TW_TEST_SG_KEY");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->channels.size(), 4u);
  const notify::ChannelConfig& mail = c->channels[0];
  EXPECT_EQ(mail.smtp_host, "smtp.example.com");
  EXPECT_EQ(mail.smtp_port, 587);
  EXPECT_EQ(mail.tls, "starttls");
  EXPECT_EQ(mail.username, "tw");
  EXPECT_EQ(mail.password, "smtp-SECRET");
  EXPECT_EQ(mail.from, "Trainwatch <tw@example.com>");
  EXPECT_EQ(mail.to, (std::vector<std::string>{"a@example.com", "b@example.com"}));
  EXPECT_EQ(mail.http.ca_file, (fs::path(path_).parent_path() / "ca.pem").native());
  EXPECT_FALSE(mail.send_resolved);  // email's default
  EXPECT_EQ(mail.min_interval_seconds, 10);
  EXPECT_EQ(mail.http.timeout_seconds, 30);
  EXPECT_EQ(c->channels[1].smtp_port, 465);
  EXPECT_TRUE(c->channels[1].send_resolved);
  EXPECT_EQ(c->channels[1].http.timeout_seconds, 5);
  EXPECT_EQ(c->channels[2].smtp_port, 2525);
  EXPECT_EQ(c->channels[2].tls, "none");
  EXPECT_EQ(c->channels[3].secret, "SG.key-SECRET");
  EXPECT_EQ(c->channels[3].url, "https://api.sendgrid.com/v3/mail/send");
  for (const auto& ch : c->channels) EXPECT_TRUE(notify::MakeChannel(ch).ok()) << ch.name;
}

TEST_F(Config, EmailMistakesNameFileLineAndNeverThePassword) {
  const std::string mail = "[[notify.channel]]\nname = \"m\"\ntype = \"email\"\n";
  const std::string ok = "smtp_host = \"smtp.example.com\"\nfrom = \"tw@example.com\"\nto = [\"a@example.com\"]\n";
  auto expect = [&](const std::string& text, const std::string& part) {
    const std::string e = LoadError(text);
    EXPECT_NE(e.find(path_ + ":"), std::string::npos) << e;
    EXPECT_NE(e.find(part), std::string::npos) << e;
    EXPECT_EQ(e.find("hunter2"), std::string::npos) << e;
  };
  expect(mail + "from = \"tw@example.com\"\nto = [\"a@example.com\"]\n", ":1: channel 'm': needs smtp_host");
  expect(mail + "smtp_host = \"h\"\nfrom = \"tw@example.com\"\n", "needs to (at least one recipient)");
  expect(mail + "smtp_host = \"h\"\nto = [\"a@example.com\"]\n", "needs from");
  expect(mail + ok + "to_ = [\"x@example.com\"]\n", ":7: unknown key 'to_'");
  expect(mail + ok + "tls = \"ssl\"\n", ":7: channel 'm': tls must be starttls, tls or none");
  expect(mail + ok + "smtp_port = 70000\n", ":7: channel 'm': smtp_port must be in 1..65535");
  expect(mail + ok + "smtp_port = \"587\"\n", "smtp_port must be an integer");
  expect(mail + "smtp_host = \"h\"\nfrom = \"tw@example.com\"\nto = \"a@example.com\"\n", "must be an array of strings");
  expect(mail + ok + "url = \"http://h/x\"\n", ":7: channel 'm': 'url' does not apply to an email channel");
  expect(mail + "smtp_host = \"h\"\nfrom = \"not an address\"\nto = [\"a@example.com\"]\n", "from: email address");
  expect(mail + ok + "username = \"tw\"\npassword = \"hunter2\"\npassword_env = \"X\"\n", "give only one of password");
  expect(mail + ok + "tls = \"none\"\nusername = \"tw\"\npassword = \"hunter2\"\n", "plain text");
  expect(mail + ok + "password = \"hunter2\"\n", "a password needs a username");
  expect(mail + ok + "username = \"tw\"\npassword_env = \"TW_SURELY_UNSET\"\n", "TW_SURELY_UNSET (password_env) is not set");
  expect("[[notify.channel]]\nname = \"s\"\ntype = \"slack\"\nurl = \"http://h/x\"\nsmtp_host = \"h\"\n",
         ":5: channel 's': 'smtp_host' does not apply to a slack channel");
  expect("[[notify.channel]]\nname = \"g\"\ntype = \"sendgrid\"\nfrom = \"tw@example.com\"\nto = [\"a@example.com\"]\n",
         "needs api_key, api_key_env or api_key_credential");
  expect("[[notify.channel]]\nname = \"g\"\ntype = \"sendgrid\"\napi_key = \"k\"\nsecret = \"x\"\n",
         "'secret' does not apply to a sendgrid channel");
}

TEST_F(Config, EmailTakesAProxyAndAProxyPasswordIsASecretLikeAnyOther) {
  ::setenv("TW_TEST_PROXY", "socks5h://px:hunter2@proxy.corp:1080", 1);
  const std::string mail = "type = \"email\"\nsmtp_host = \"smtp.example.com\"\nfrom = \"tw@example.com\"\n"
                           "to = [\"a@example.com\"]\n";
  Result<app::Config> c = Load("[[notify.channel]]\nname = \"via\"\n" + mail + "proxy_env = \"TW_TEST_PROXY\"\n" +
                               "[[notify.channel]]\nname = \"direct\"\n" + mail);
  ::unsetenv("TW_TEST_PROXY");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->channels[0].http.proxy, std::optional<std::string>("socks5h://px:hunter2@proxy.corp:1080"));
  EXPECT_EQ(c->channels[1].http.proxy, std::nullopt);  // email: no proxy unless named (not HTTPS_PROXY)
  for (const auto& ch : c->channels) EXPECT_TRUE(notify::MakeChannel(ch).ok()) << ch.name;
  EXPECT_EQ(notify::ScrubSecrets("proxy said hunter2 to px", notify::ChannelSecrets(c->channels[0])),
            "proxy said … to px");

  // A password written in the file makes the file a secret; a proxy without one does not.
  ::setenv("TW_TEST_PROXIED_HOOK", "https://hooks.example/x", 1);
  const std::string hook = "[[notify.channel]]\nname = \"h\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_PROXIED_HOOK\"\n";
  WriteFile(path_, hook + "proxy = \"http://px:hunter2@proxy.corp:3128\"\n");
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  Result<app::Config> open = app::LoadConfigFile(path_);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("readable by group or others"), std::string::npos) << open.status().message();
  EXPECT_EQ(open.status().message().find("hunter2"), std::string::npos);
  WriteFile(path_, hook + "proxy = \"http://proxy.corp:3128\"\n");
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_TRUE(app::LoadConfigFile(path_).ok());
  ::unsetenv("TW_TEST_PROXIED_HOOK");

  const std::string e = LoadError("[[notify.channel]]\nname = \"m\"\n" + mail + "proxy = \"ftp://px:hunter2@p:1\"\n");
  EXPECT_NE(e.find(path_ + ":7: channel 'm': proxy scheme must be http, socks4, socks4a, socks5 or socks5h"),
            std::string::npos) << e;
  EXPECT_EQ(e.find("hunter2"), std::string::npos) << e;
  EXPECT_NE(LoadError("[[notify.channel]]\nname = \"m\"\n" + mail + "proxy = \"p\"\nproxy_env = \"X\"\n")
                .find("give only one of proxy, proxy_env, proxy_credential"),
            std::string::npos);
}

TEST_F(Config, APasswordInAFileOthersCanReadIsRefused) {
  WriteFile(path_, "[[notify.channel]]\nname = \"m\"\ntype = \"email\"\nsmtp_host = \"h\"\n"
                   "from = \"tw@example.com\"\nto = [\"a@example.com\"]\nusername = \"tw\"\npassword = \"hunter2\"\n");
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  Result<app::Config> c = app::LoadConfigFile(path_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("readable by group or others (mode 0640)"), std::string::npos)
      << c.status().message();
  EXPECT_EQ(c.status().message().find("hunter2"), std::string::npos);
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write);
  Result<app::Config> loaded = app::LoadConfigFile(path_);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->channels.at(0).password, "hunter2");
}

TEST_F(Config, TheDocumentedExampleParses) {
  const std::string example = ExampleConfigPath();
  ASSERT_TRUE(fs::exists(example)) << example;
  Result<app::Config> c = app::LoadConfigFile(example);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->roots, std::vector<std::string>{"/srv/experiments"});
  EXPECT_EQ(c->rescan_interval_ms, 30000);
  EXPECT_TRUE(c->inotify);
  EXPECT_EQ(c->batch_points, 20000);
  EXPECT_EQ(c->max_bytes_per_turn, 67108864);
  EXPECT_FALSE(c->verbose);
  // Its values are the built-in defaults: the example documents them.
  app::Config defaults;
  EXPECT_EQ(c->rescan_interval_ms, defaults.rescan_interval_ms);
  EXPECT_EQ(c->batch_points, defaults.batch_points);
  EXPECT_EQ(c->max_bytes_per_turn, defaults.max_bytes_per_turn);
  // /srv/experiments does not exist here: only Validate, which looks at this machine, objects.
  if (!fs::exists("/srv/experiments")) {
    Status st = app::Validate(&*c);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("/srv/experiments"), std::string::npos) << st.message();
  }
}

TEST_F(Config, NotifyGroupingDefaultsPerType) {
  ::setenv("TW_TEST_HOOK", "http://127.0.0.1:9/hook", 1);
  Result<app::Config> c = Load(
      "[[notify.channel]]\nname = \"s\"\ntype = \"slack\"\nurl_env = \"TW_TEST_HOOK\"\n"
      "[[notify.channel]]\nname = \"w\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_HOOK\"\n"
      "[[notify.channel]]\nname = \"m\"\ntype = \"email\"\nsmtp_host = \"h\"\nfrom = \"a@example.com\"\n"
      "to = [\"b@example.com\"]\n"
      "[[notify.channel]]\nname = \"c\"\ntype = \"console\"\n"
      "[[notify.channel]]\nname = \"g\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_HOOK\"\n"
      "group_by = [\"rule\", \"run\"]\ngroup_wait_seconds = 0\ngroup_interval_seconds = 60.5\n"
      "repeat_interval_seconds = 3600\n"
      "[[notify.channel]]\nname = \"d\"\ntype = \"slack\"\nurl_env = \"TW_TEST_HOOK\"\ndigest_minutes = 15\n"
      "repeat_interval_seconds = 0\n");
  ::unsetenv("TW_TEST_HOOK");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->channels.size(), 6u);
  const auto& slack = c->channels[0];
  EXPECT_EQ(slack.group_by, std::vector<std::string>{"run"});
  EXPECT_EQ(slack.group_wait_seconds, 30);
  EXPECT_EQ(slack.group_interval_seconds, 300);
  EXPECT_EQ(slack.repeat_interval_seconds, 4 * 3600);
  EXPECT_EQ(slack.digest_minutes, 0);
  const auto& hook = c->channels[1];  // machine receivers: each event as it comes, no repeats
  EXPECT_TRUE(hook.group_by.empty());
  EXPECT_EQ(hook.repeat_interval_seconds, 0);
  const auto& mail = c->channels[2];  // people: like Slack
  EXPECT_EQ(mail.group_by, std::vector<std::string>{"run"});
  EXPECT_EQ(mail.group_wait_seconds, 30);
  EXPECT_EQ(mail.repeat_interval_seconds, 4 * 3600);
  const auto& console = c->channels[3];
  EXPECT_TRUE(console.group_by.empty());
  EXPECT_EQ(console.repeat_interval_seconds, 0);
  const auto& grouped = c->channels[4];
  EXPECT_EQ(grouped.group_by, (std::vector<std::string>{"rule", "run"}));
  EXPECT_EQ(grouped.group_wait_seconds, 0);
  EXPECT_EQ(grouped.group_interval_seconds, 60.5);
  EXPECT_EQ(grouped.repeat_interval_seconds, 3600);
  const auto& digest = c->channels[5];
  EXPECT_EQ(digest.digest_minutes, 15);
  EXPECT_EQ(digest.repeat_interval_seconds, 0);
  EXPECT_EQ(notify::ChannelConfig::Defaults("x", "sendgrid").group_by, std::vector<std::string>{"run"});
  EXPECT_EQ(app::EffectiveChannels(app::Config{}).at(0).group_by, std::vector<std::string>{});
}

TEST_F(Config, NotifyGroupingMistakesNameFileAndLine) {
  ::setenv("TW_TEST_HOOK", "http://127.0.0.1:9/hook", 1);
  const std::string slack = "[[notify.channel]]\nname = \"s\"\ntype = \"slack\"\nurl_env = \"TW_TEST_HOOK\"\n";
  const std::string hook = "[[notify.channel]]\nname = \"w\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_HOOK\"\n";
  const auto expect = [&](const std::string& text, const std::string& want) {
    const std::string msg = LoadError(text);
    EXPECT_NE(msg.find(path_ + want), std::string::npos) << "want: " << want << "\ngot: " << msg;
  };
  expect(slack + "group_by = [\"run\", \"series\"]\n",
         ":5: channel 's': group_by: 'series' is not a field to group by (run, rule; [] for no grouping)");
  expect(slack + "group_by = [\"run\", \"run\"]\n", ":5: channel 's': group_by names 'run' twice");
  expect(slack + "group_by = \"run\"\n", ":5: [notify.channel] group_by must be an array of strings, got a string");
  expect(slack + "group_wait_seconds = \"30\"\n",
         ":5: [notify.channel] group_wait_seconds must be a number of seconds, got a string");
  expect(slack + "group_wait_seconds = -1\n", ":5: channel 's': group_wait_seconds must be between 0 and 3600");
  expect(slack + "group_interval_seconds = 100000\n",
         ":5: channel 's': group_interval_seconds must be between 0 and 86400");
  expect(slack + "repeat_interval_seconds = 30\n",
         ":5: channel 's': repeat_interval_seconds must be 0 (never) or between 60 and 2592000 (30 days)");
  expect(slack + "repeat_interval_seconds = true\n",
         ":5: [notify.channel] repeat_interval_seconds must be a number of seconds, got a boolean");
  expect(slack + "digest_minutes = 2000\n", ":5: channel 's': digest_minutes must be between 0 (no digest) and 1440");
  expect(slack + "digest_minutes = 10\ngroup_by = [\"rule\"]\n",
         ":6: channel 's': group_by has no effect with digest_minutes");
  expect(hook + "group_wait_seconds = 10\n",
         ":5: channel 'w': group_wait_seconds has no effect without grouping (group_by is empty by default for a "
         "webhook channel; set group_by = [\"run\"] to group)");
  expect(slack + "group_by = []\ngroup_interval_seconds = 10\n",
         ":6: channel 's': group_interval_seconds has no effect without grouping (group_by is empty;");
  expect(slack + "group_wiat_seconds = 10\n", ":5: unknown key 'group_wiat_seconds' in [notify.channel]");
  expect("[notify]\nmax_age_hours = 1\n" + slack + "digest_minutes = 60\n",
         ":7: channel 's': messages would wait for their group longer than [notify] max_age_hours allows");
  ::unsetenv("TW_TEST_HOOK");
}

// [[console]]: absolute globs of console logs, each read under the directory before its first
// wildcard (its root); the split honours escapes and normalizes the path as roots are.
TEST_F(Config, ConsoleGlobsLoadWithTheirRoots) {
  Result<app::Config> c = Load("[[console]]\nglob = \"/scratch/*/slurm-*.out\"\n\n[[console]]\n"
                               "glob = \"/home/a//runs/./train.log\"\n[ingest]\nprofiles_dir = \"profiles\"\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->console.size(), 2u);
  EXPECT_EQ(c->console[0].glob, "/scratch/*/slurm-*.out");
  EXPECT_EQ(c->console[0].root, "/scratch");
  EXPECT_EQ(c->console[0].line, 2);
  EXPECT_EQ(c->console[1].glob, "/home/a/runs/train.log");
  EXPECT_EQ(c->console[1].root, "/home/a/runs");
  EXPECT_EQ(c->console[1].line, 5);
  EXPECT_EQ(c->profiles_dir, dir_ / "profiles");  // relative to the file, as [rules] dir
  EXPECT_EQ(c->profiles, nullptr);                 // loaded by Validate

  using Split = std::pair<std::string, std::string>;
  EXPECT_EQ(app::SplitGlobRoot("/scratch/*/slurm-*.out"), Split("/scratch", "*/slurm-*.out"));
  EXPECT_EQ(app::SplitGlobRoot("/x.log"), Split("/", "x.log"));
  EXPECT_EQ(app::SplitGlobRoot("/*/x.log"), Split("/", "*/x.log"));
  EXPECT_EQ(app::SplitGlobRoot("/a/b?/c/*.log"), Split("/a", "b?/c/*.log"));
  EXPECT_EQ(app::SplitGlobRoot("/a/[bc]/d.log"), Split("/a", "[bc]/d.log"));
  EXPECT_EQ(app::SplitGlobRoot("/data/run\\[1\\]/*.log"), Split("/data/run[1]", "*.log"));
}

TEST_F(Config, ConsoleMistakesNameFileAndLine) {
  const auto expect = [&](const std::string& text, const std::string& want) {
    const std::string msg = LoadError(text);
    EXPECT_NE(msg.find(path_ + want), std::string::npos) << "want: " << want << "\ngot: " << msg;
  };
  expect("[watch]\nroots = []\n\n[[console]]\nglob = \"logs/*.out\"\n",
         ":5: [[console]] glob 'logs/*.out' must be an absolute path (it is matched against absolute paths)");
  expect("[[console]]\nglob = \"\"\n", ":2: [[console]] needs a glob: an absolute path pattern");
  expect("\n[[console]]\n", ":2: [[console]] needs a glob");
  expect("[[console]]\nglob = 5\n", ":2: [[console]] glob must be a string (an absolute path glob), got an integer");
  expect("[[console]]\nglob = \"/a/*.log\"\nprofiles = \"x\"\n", ":3: unknown key 'profiles' in [[console]]");
  expect("[console]\nglob = \"/a/*.log\"\n", ":1: 'console' must be an array of tables: [[console]]");
  expect("[[console]]\nglob = \"/scratch/*/\"\n", ":2: [[console]] glob '/scratch/*/' names a directory");
  expect("[ingest]\nprofiles_dir = 3\n",
         ":2: [ingest] profiles_dir must be a string (a directory of console profiles, *.toml), got an integer");
}

// Validate resolves a glob's root as it resolves roots (canonical: the path the ingester compares
// a file's real path with) and writes the glob under it, escaping what glob(3) would take for a
// wildcard; a root that is no directory is an error naming the file and line. Console globs
// alone are enough to run.
TEST_F(Config, ValidateResolvesConsoleRootsAndNeedsThemToExist) {
  fs::create_directories(dir_ / "real/a[1]");
  fs::create_directory_symlink(dir_ / "real", dir_ / "link");
  const std::string real = fs::canonical(dir_ / "real").native();
  Result<app::Config> c = Load("[store]\npath = \"tw.db\"\n[[console]]\nglob = \"" + (dir_ / "link") +
                               "/*/slurm-*.out\"\n[[console]]\nglob = \"" + (dir_ / "link") + "/a\\\\[1\\\\]/*.log\"\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->roots.empty());
  Status st = app::Validate(&*c);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(c->console.size(), 2u);
  EXPECT_EQ(c->console[0].root, real);
  EXPECT_EQ(c->console[0].glob, real + "/*/slurm-*.out");
  EXPECT_EQ(c->console[1].root, real + "/a[1]");
  EXPECT_EQ(c->console[1].glob, real + "/a\\[1]/*.log");
  EXPECT_EQ(::fnmatch(c->console[1].glob.c_str(), (real + "/a[1]/x.log").c_str(), FNM_PATHNAME), 0);
  EXPECT_NE(::fnmatch(c->console[1].glob.c_str(), (real + "/a1/x.log").c_str(), FNM_PATHNAME), 0);
  app::Config again = *c;  // idempotent
  ASSERT_TRUE(app::Validate(&again).ok());
  EXPECT_EQ(again.console, c->console);

  c = Load("[store]\npath = \"tw.db\"\n\n[[console]]\nglob = \"" + (dir_ / "nowhere") + "/*.out\"\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  st = app::Validate(&*c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(path_ + ":5: [[console]] glob '" + (dir_ / "nowhere") + "/*.out': its directory '" +
                              (dir_ / "nowhere") + "' is not a directory"),
            std::string::npos)
      << st.message();
}

// [ingest] profiles_dir: the user's profiles load at Validate (before the built-ins); one that
// does not load refuses the configuration, naming its file and line.
TEST_F(Config, ProfilesDirLoadsAndABrokenProfileIsAnError) {
  WriteFile(dir_ / "profiles/mine.toml",
            "name = \"mytrainer\"\n[[line]]\nmatch = '^STEP \\d+ '\nstep = '^STEP (\\d+)'\n"
            "pairs = '\\b(\\w+)=({number})'\n");
  Result<app::Config> c = Load("[store]\npath = \"tw.db\"\n[watch]\nroots = [\"logs\"]\n[ingest]\n"
                               "profiles_dir = \"profiles\"\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Status st = app::Validate(&*c);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_NE(c->profiles, nullptr);
  ASSERT_FALSE(c->profiles->names().empty());
  EXPECT_EQ(c->profiles->names().front(), "mytrainer");

  WriteFile(dir_ / "profiles/zbroken.toml", "name = \"broken\"\n[[line]]\nmatch = '(unclosed'\n");
  c = Load("[store]\npath = \"tw.db\"\n[watch]\nroots = [\"logs\"]\n[ingest]\nprofiles_dir = \"profiles\"\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  st = app::Validate(&*c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(path_ + ": [ingest] profiles_dir: " + (dir_ / "profiles/zbroken.toml") + ":"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("match is not a regex"), std::string::npos) << st.message();

  c = Load("[store]\npath = \"tw.db\"\n[watch]\nroots = [\"logs\"]\n[ingest]\nprofiles_dir = \"none\"\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  st = app::Validate(&*c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("[ingest] profiles_dir '" + (dir_ / "none") + "' is not a directory"), std::string::npos)
      << st.message();
}

TEST_F(Config, ObjectStoreRootsAndTheS3Section) {
  Result<app::Config> c = Load(R"([store]
path = "tw.db"
[watch]
roots = ["logs", "s3://ml-logs/team-a/", "s3://ml-logs"]
[s3]
endpoint = "http://127.0.0.1:9000"
region = "eu-west-1"
path_style = true
poll_interval_seconds = 5
profile = "training"
credentials_file = "/etc/trainwatch/aws-credentials"
instance_metadata = ""
timeout_seconds = 10
max_attempts = 3
read_ahead_bytes = 65536
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->roots, (std::vector<std::string>{dir_ / "logs", "s3://ml-logs/team-a/", "s3://ml-logs"}));
  EXPECT_EQ(c->s3.endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(c->s3.region, "eu-west-1");
  EXPECT_TRUE(c->s3.path_style);
  EXPECT_EQ(c->s3_poll_ms, 5000);
  EXPECT_EQ(c->s3.credentials.profile, "training");
  EXPECT_EQ(c->s3.credentials.credentials_file, "/etc/trainwatch/aws-credentials");
  EXPECT_EQ(c->s3.credentials.imds_endpoint, "");
  EXPECT_EQ(c->s3.timeout_seconds, 10);
  EXPECT_EQ(c->s3.max_attempts, 3);
  EXPECT_EQ(c->s3.read_ahead_bytes, 65536u);
  // Validate leaves an object-store root as it is (nothing local to check), in one form.
  ASSERT_TRUE(app::Validate(&*c).ok());
  EXPECT_EQ(c->roots, (std::vector<std::string>{fs::canonical(dir_ / "logs").native(), "s3://ml-logs/team-a",
                                                "s3://ml-logs"}));
  // The defaults.
  app::Config defaults;
  EXPECT_EQ(defaults.s3_poll_ms, 30000);
  EXPECT_EQ(defaults.s3.endpoint, "");
  EXPECT_EQ(defaults.s3.credentials.imds_endpoint, "http://169.254.169.254");
}

TEST_F(Config, ObjectStoreMistakesNameFileAndLine) {
  const std::string head = "[store]\npath = \"tw.db\"\n[watch]\nroots = [\"logs\"]\n[s3]\n";
  EXPECT_EQ(LoadError(head + "endpoint = \"s3.amazonaws.com\"\n"),
            path_ + ":6: [s3] endpoint must start with http:// or https://");
  EXPECT_EQ(LoadError(head + "poll_interval_seconds = 0\n"),
            path_ + ":6: [s3] poll_interval_seconds must be between 0.05 and 86400");
  EXPECT_EQ(LoadError(head + "max_attempts = 0\n"), path_ + ":6: [s3] max_attempts must be between 1 and 20");
  EXPECT_EQ(LoadError(head + "read_ahead_bytes = 10\n"),
            path_ + ":6: [s3] read_ahead_bytes must be between 4096 and 268435456");
  EXPECT_NE(LoadError(head + "bucket = \"x\"\n").find("unknown key 'bucket' in [s3]"), std::string::npos);
  EXPECT_NE(LoadError(head + "path_style = \"yes\"\n").find("[s3] path_style must be true or false"),
            std::string::npos);
  Result<app::Config> c = Load("[store]\npath = \"tw.db\"\n[watch]\nroots = [\"s3://My_Bucket/x\"]\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Status st = app::Validate(&*c);
  EXPECT_EQ(st.message(), path_ + ": root 's3://My_Bucket/x': a bucket name has only lower-case letters, digits, "
                                  "'-' and '.'");
  c = Load("[store]\npath = \"tw.db\"\n[watch]\nroots = [\"s3://bucket/a/../b\"]\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(app::Validate(&*c).message(), path_ + ": root 's3://bucket/a/../b': the prefix has a '..' segment");
}

}  // namespace
}  // namespace tw
