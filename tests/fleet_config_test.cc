// [fleet] and --postgres: what a config may say, and the errors (file:line, never the secret).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "app/config.h"
#include "app/daemon.h"
#include "fleet/fleet.h"
#include "support/test_env.h"

namespace tw {
namespace {

using testing::TempDir;
using testing::WriteFile;

class FleetConfig : public ::testing::Test {
 protected:
  Result<app::Config> Load(const std::string& text, mode_t mode = 0600) {
    WriteFile(path_, text);
    ::chmod(path_.c_str(), mode);
    return app::LoadConfigFile(path_);
  }
  std::string LoadError(const std::string& text, mode_t mode = 0600) {
    Result<app::Config> c = Load(text, mode);
    EXPECT_FALSE(c.ok()) << "loaded:\n" << text;
    return c.ok() ? std::string() : c.status().message();
  }
  TempDir dir_;
  std::string path_ = dir_ / "trainwatch.toml";
};

TEST_F(FleetConfig, ReadsTheSection) {
  WriteFile(dir_ / "pw", "hunter2\n");
  ::chmod((dir_ / "pw").c_str(), 0600);
  Result<app::Config> c = Load(
      "[fleet]\npostgres = \"postgresql://tw@db.example:5432/fleet?sslmode=verify-full\"\n"
      "password_file = \"pw\"\nhost = \"gpu-7\"\ninterval_seconds = 2.5\nbatch_rows = 1000\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->fleet.conninfo, "postgresql://tw@db.example:5432/fleet?sslmode=verify-full");
  EXPECT_EQ(c->fleet.password, "hunter2");
  EXPECT_EQ(c->fleet.host, "gpu-7");
  EXPECT_EQ(c->fleet.interval_ms, 2500);
  EXPECT_EQ(c->fleet.batch_rows, 1000);
  // Shared roots are roots as well.
  c = Load("[watch]\nroots = [\"/srv/a\"]\n[fleet]\npostgres = \"host=db\"\nshared_roots = [\"/nfs/b\"]\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->fleet.shared_roots, std::vector<std::string>{"/nfs/b"});
  EXPECT_EQ(c->roots, (std::vector<std::string>{"/srv/a", "/nfs/b"}));
  EXPECT_EQ(c->fleet.lease_seconds, 30);
  // No [fleet]: no shipping.
  c = Load("[watch]\n");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->fleet.conninfo.empty());
}

TEST_F(FleetConfig, PasswordFromTheEnvironment) {
  ::setenv("TW_TEST_PG_PASSWORD", "from-env", 1);
  Result<app::Config> c = Load("[fleet]\npostgres = \"host=db dbname=fleet\"\npassword_env = \"TW_TEST_PG_PASSWORD\"\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->fleet.password, "from-env");
  ::unsetenv("TW_TEST_PG_PASSWORD");
  EXPECT_NE(LoadError("[fleet]\npostgres = \"host=db\"\npassword_env = \"TW_TEST_PG_PASSWORD\"\n")
                .find("TW_TEST_PG_PASSWORD (password_env) is not set"),
            std::string::npos);
}

TEST_F(FleetConfig, ErrorsNameFileAndLineAndNeverTheSecret) {
  std::string e = LoadError("[fleet]\npostgres = \"host=db\"\n\nbatch_rows = 0\n");
  EXPECT_NE(e.find(path_ + ":4: [fleet] batch_rows must be between 1 and 10000000"), std::string::npos) << e;
  e = LoadError("[fleet]\npostgres = \"host=db\"\ninterval_second = 1\n");
  EXPECT_NE(e.find(path_ + ":3: unknown key 'interval_second' in [fleet]"), std::string::npos) << e;
  // A connection string libpq cannot parse: said, not quoted (it may hold a password).
  e = LoadError("[fleet]\n\npostgres = \"postgresql://u:topsecret@[::1/db\"\n");
  EXPECT_NE(e.find(path_ + ":3: [fleet] postgres: the PostgreSQL connection string does not parse"),
            std::string::npos) << e;
  EXPECT_EQ(e.find("topsecret"), std::string::npos) << e;
  // A password in a file others can read.
  e = LoadError("[fleet]\npostgres = \"host=db\"\npassword = \"topsecret\"\n", 0644);
  EXPECT_NE(e.find("holds the [fleet] password but is readable by group or others"), std::string::npos) << e;
  e = LoadError("[fleet]\npostgres = \"postgresql://u:topsecret@db/fleet\"\n", 0644);
  EXPECT_NE(e.find("holds the [fleet] password"), std::string::npos) << e;
  EXPECT_EQ(e.find("topsecret"), std::string::npos) << e;
  WriteFile(dir_ / "open-pw", "topsecret\n");
  ::chmod((dir_ / "open-pw").c_str(), 0644);
  e = LoadError("[fleet]\npostgres = \"host=db\"\npassword_file = \"open-pw\"\n");
  EXPECT_NE(e.find(path_ + ":3: [fleet] password_file " + (dir_ / "open-pw") + " is readable by group or others"),
            std::string::npos) << e;
  e = LoadError("[fleet]\nshared_roots = [\"/nfs\"]\n");
  EXPECT_NE(e.find(path_ + ":2: [fleet] shared_roots need postgres"), std::string::npos) << e;
  e = LoadError("[fleet]\npostgres = \"host=db\"\nlease_seconds = 0.5\n");
  EXPECT_NE(e.find(path_ + ":3: [fleet] lease_seconds must be between 1 and 3600"), std::string::npos) << e;
  e = LoadError("[fleet]\npassword = \"topsecret\"\n");
  EXPECT_NE(e.find("[fleet] has a password but no postgres connection string"), std::string::npos) << e;
  EXPECT_EQ(e.find("topsecret"), std::string::npos) << e;
}

// docs/trainwatch.example.toml's [fleet], uncommented (less its password file), parses, and
// documents the defaults.
TEST_F(FleetConfig, TheExamplesSectionParsesWithTheDefaults) {
  const std::string example = testing::ReadFile(std::string(TW_DOCS_DIR) + "/trainwatch.example.toml");
  const size_t at = example.find("#[fleet]\n");
  ASSERT_NE(at, std::string::npos);
  std::string section;
  for (size_t i = at; i < example.size();) {
    size_t nl = example.find('\n', i);
    if (nl == std::string::npos) nl = example.size();
    const std::string line = example.substr(i, nl - i);
    i = nl + 1;
    if (!line.starts_with("#")) break;
    if (!line.starts_with("#password_file")) section += line.substr(1) + "\n";
  }
  Result<app::Config> c = Load(section);
  ASSERT_TRUE(c.ok()) << c.status().ToString() << "\n" << section;
  EXPECT_EQ(c->fleet.host, "gpu-7");
  const fleet::FleetOptions defaults;
  EXPECT_EQ(c->fleet.interval_ms, defaults.interval_ms);
  EXPECT_EQ(c->fleet.batch_rows, defaults.batch_rows);
}

TEST_F(FleetConfig, PostgresFlagOverridesTheConfigAndHostDefaultsToThisMachine) {
  const std::string logs = dir_ / "logs";
  std::filesystem::create_directories(logs);
  WriteFile(path_, "[fleet]\npostgres = \"host=from-config\"\n");
  ::chmod(path_.c_str(), 0600);
  app::DaemonArgs a;
  a.config_path = path_;
  a.logdirs = {logs};
  a.db_path = dir_ / "s.db";
  a.postgres = "postgresql://tw@from-flag/fleet";
  Result<app::Config> c = app::BuildConfig(a);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->fleet.conninfo, "postgresql://tw@from-flag/fleet");
  EXPECT_EQ(c->fleet.host, fleet::LocalHostName());
  a.postgres = "postgresql://u:topsecret@[::1/db";
  c = app::BuildConfig(a);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("--postgres: the PostgreSQL connection string does not parse"),
            std::string::npos);
  EXPECT_EQ(c.status().message().find("topsecret"), std::string::npos);
}

}  // namespace
}  // namespace tw
