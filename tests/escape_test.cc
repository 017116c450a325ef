// Names are bytes: a run directory, an event file or a tag may hold a newline, an escape
// sequence, invalid UTF-8, a surrogate encoded in UTF-8 (CESU-8) or an overlong form. Here
// they must not forge a journald line ("\n<3>..."), must not make `runs`, `query`, `status`
// or `diagnose` print JSON a strict parser refuses, and a config file must not reach toml++'s
// undefined behaviour. The JSON checks parse with Python's json module in a child process,
// after a strict UTF-8 decode of the raw bytes.
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "app/config.h"
#include "base/toml_guard.h"
#include "base/json.h"
#include "base/log.h"
#include "base/utf8.h"
#include "diagnose/rule.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string Cli() { return TW_CLI_BINARY; }

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

// Names a hostile writer (or a user's shell) can give a directory, a file or a tag.
const std::vector<std::string>& HostileNames() {
  static const std::vector<std::string> names = {
      "nl\n<3>forged",                           // a journald priority after a newline
      "cr\r<2>forged\x1b[2J\x1b]0;title\x07",    // carriage return, terminal escapes, BEL
      "ctl\x01\x02\x7f\x08\x0c",                 // C0 controls and DEL
      "bad\xff\xfe\x80",                          // bytes that are never UTF-8
      "cesu\xed\xa0\x80\xed\xb0\x80",             // U+10000 as two encoded surrogates
      "lone\xed\xa0\x80",                         // one encoded surrogate
      "overlong\xc0\xaf\xe0\x80\xaf\xf0\x80\x80\xaf",  // '/' in 2, 3 and 4 bytes
      "big\xf4\x90\x80\x80\xf8\x88\x80\x80\x80",  // past U+10FFFF, 5-byte form
      "cut\xe2\x82",                               // a sequence cut short
      "sep\xe2\x80\xa8\xe2\x80\xa9\xc2\x85",      // U+2028, U+2029, NEL
      "q\"uote\\back\ttab",
      "fine-\xc3\xa9-\xe6\x97\xa5-\xf0\x9f\x98\x80",  // valid UTF-8 stays as it is
  };
  return names;
}

// Random byte strings biased toward UTF-8's edges.
std::vector<std::string> RandomStrings(size_t n) {
  std::mt19937 rng(14);
  const unsigned char edges[] = {0x00, 0x0a, 0x0d, 0x1b, 0x22, 0x5c, 0x7f, 0x80, 0x8f, 0x90,
                                 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe2, 0xed,
                                 0xef, 0xf0, 0xf4, 0xf5, 0xff, 'a', '<', '3', '>'};
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string s(rng() % 12, '\0');
    for (auto& c : s)
      c = static_cast<char>(rng() % 2 ? edges[rng() % sizeof edges] : static_cast<unsigned char>(rng()));
    out.push_back(std::move(s));
  }
  return out;
}

// Python checks each file: strict UTF-8 (invalid bytes, encoded surrogates and overlongs raise),
// then strict JSON (raw control characters, NaN and Infinity raise; no lone surrogate escape).
// Mode "lines": each non-empty line one JSON text; "whole": the file one JSON text; "pairs":
// each line "HEX<TAB>JSON", the JSON string equal to the hex bytes decoded with U+FFFD.
constexpr const char* kValidator = R"(import json, sys
def constant(x): raise ValueError('not JSON: ' + x)
def check(text):
    v = json.loads(text, parse_constant=constant)
    json.dumps(v, ensure_ascii=False).encode('utf-8')  # a lone surrogate escape raises here
    return v
mode = sys.argv[1]
for path in sys.argv[2:]:
    text = open(path, 'rb').read().decode('utf-8')
    if mode == 'whole':
        check(text)
        continue
    for n, line in enumerate(text.split('\n')):
        if not line: continue
        if mode == 'lines':
            check(line)
        else:
            h, j = line.split('\t', 1)
            want = bytes.fromhex(h).decode('utf-8', 'replace')
            if check(j) != want: raise ValueError('line %d: %r != %r' % (n + 1, check(j), want))
print('ok')
)";

// "" when every file passes, else what Python said.
std::string StrictJsonErrors(const TempDir& dir, const std::string& mode,
                             const std::vector<std::string>& files) {
  WriteFile(dir / "validate.py", kValidator);
  std::string cmd = "python3 " + ShellQuote(dir / "validate.py") + " " + mode;
  for (const auto& f : files) cmd += " " + ShellQuote(f);
  std::string out;
  const int rc = RunCommand(cmd + " 2>&1", &out);
  return rc == 0 && out == "ok\n" ? "" : out;
}

// ---------------------------------------------------------------------------------------------
// UTF-8 and JSON strings

TEST(Utf8, ReplacesMaximalSubpartsLikeTheStandard) {
  const std::string r(utf8::kReplacement);
  EXPECT_EQ(utf8::MakeValid("a\xed\xa0\x80z"), "a" + r + r + r + "z") << "CESU surrogate";
  EXPECT_EQ(utf8::MakeValid("\xc0\xaf"), r + r) << "C0 is never a lead";
  EXPECT_EQ(utf8::MakeValid("\xe0\x80\xaf"), r + r + r) << "3-byte overlong";
  EXPECT_EQ(utf8::MakeValid("\xe2\x82z"), r + "z") << "a cut sequence is one replacement";
  EXPECT_EQ(utf8::MakeValid("\xf4\x90\x80\x80"), r + r + r + r) << "past U+10FFFF";
  EXPECT_EQ(utf8::MakeValid("\xf0\x9f\x98"), r);
  const std::string ok = "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf";
  EXPECT_TRUE(utf8::IsValid(ok));
  EXPECT_EQ(utf8::MakeValid(ok), ok);
}

TEST(Utf8, JsonQuoteIsStrictJsonAndMatchesPythonsReplacement) {
  TempDir dir;
  std::vector<std::string> inputs = HostileNames();
  for (auto& s : RandomStrings(4000)) inputs.push_back(std::move(s));
  for (int b = 0; b < 256; ++b) inputs.push_back(std::string(1, static_cast<char>(b)));
  std::string pairs;
  for (const auto& s : inputs) pairs += Hex(s) + "\t" + JsonQuote(s) + "\n";
  WriteFile(dir / "pairs.txt", pairs);
  EXPECT_EQ(StrictJsonErrors(dir, "pairs", {dir / "pairs.txt"}), "");
  // Raw JSON, as SQLite's json_object() writes it around a name, is repaired the same way.
  Json j;
  j.Raw("evidence", "{\"series\":\"a\xed\xa0\x80\xff\"}");
  WriteFile(dir / "raw.json", j.str());
  EXPECT_EQ(StrictJsonErrors(dir, "whole", {dir / "raw.json"}), "") << j.str();
}

// ---------------------------------------------------------------------------------------------
// Log lines

// The inverse of log::Escape, to show nothing is lost and nothing is ambiguous.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    const char k = s[++i];
    if (k == '\\') out += '\\';
    else if (k == 'n') out += '\n';
    else if (k == 'r') out += '\r';
    else if (k == 't') out += '\t';
    else if (k == 'x') {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else if (k == 'u') {
      const unsigned cp = std::stoul(s.substr(i + 1, 4), nullptr, 16);
      out += cp < 0x800 ? std::string{static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))}
                        : std::string{static_cast<char>(0xE0 | (cp >> 12)),
                                      static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                                      static_cast<char>(0x80 | (cp & 0x3F))};
      i += 4;
    }
  }
  return out;
}

TEST(LogEscape, OneLineOfValidUtf8ThatDecodesBackToTheMessage) {
  std::vector<std::string> inputs = HostileNames();
  for (auto& s : RandomStrings(4000)) inputs.push_back(std::move(s));
  for (const auto& s : inputs) {
    const std::string e = log::Escape(s);
    EXPECT_TRUE(utf8::IsValid(e)) << Hex(s);
    for (unsigned char c : e) ASSERT_TRUE(c >= 0x20 && c != 0x7f) << Hex(s) << " -> " << e;
    EXPECT_EQ(e.find("\xe2\x80\xa8"), std::string::npos) << Hex(s);
    EXPECT_EQ(e.find("\xc2\x85"), std::string::npos) << Hex(s);
    EXPECT_EQ(Unescape(e), s) << Hex(s) << " -> " << e;
  }
  EXPECT_EQ(log::Escape("run\n<3>forged"), "run\\n<3>forged");
  EXPECT_EQ(log::Escape("caf\xc3\xa9"), "caf\xc3\xa9") << "valid text is left alone";
}

// A daemon watching a root whose run directory and event file names hold "\n<3>forged" and
// terminal escapes: every line of its log has its own priority prefix and no other.
TEST(LogEscape, DaemonLogLinesCannotBeForgedByNames) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "tw.db";
  const std::string run = root + "/run\n<3>forged-run\x1b[2J\r<2>cr\xff";
  const std::string file = run + "/" + EventFileName(1700000000, "host\n<3>forged-file", 1, 0);
  {
    EventFileWriter w(file);
    w.Add(FileVersionEvent(1700000000));
    for (int s = 0; s < 40; ++s) w.Add(SimpleScalarEvent("train/loss\n<3>forged-tag", s, 1700000000 + s, 1.0f));
    w.Flush();
  }
  // A damaged record in the middle: the daemon warns, naming the file.
  std::string bytes = ReadFile(file);
  bytes[bytes.size() / 2] ^= 0x55;
  WriteFile(file, bytes);

  DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "30", "--verbose"},
                  dir / "daemon.log");
  ASSERT_TRUE(d.WaitForLog("problem(s) reading it", 15s)) << d.Log();
  d.Signal(SIGTERM);
  ASSERT_TRUE(d.Wait(10s).has_value()) << d.Log();
  const std::string log = d.Log();
  // The names were logged, escaped...
  EXPECT_NE(log.find("run\\n<3>forged-run\\x1b[2J\\r<2>cr\\xff"), std::string::npos) << log;
  EXPECT_NE(log.find("host\\n<3>forged-file"), std::string::npos) << log;
  // ...and no line is anything but one event with its own prefix.
  std::istringstream lines(log);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    EXPECT_TRUE(line.size() > 3 && line[0] == '<' && line[1] >= '3' && line[1] <= '7' && line[2] == '>')
        << "line " << n << ": " << line;
    EXPECT_FALSE(line.starts_with("<3>forged") || line.starts_with("<2>")) << line;
    EXPECT_EQ(line.find('\r'), std::string::npos) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
    EXPECT_TRUE(utf8::IsValid(line)) << line;
  }
  EXPECT_GT(n, 2);
}

// ---------------------------------------------------------------------------------------------
// JSON from the CLI

// A store whose runs, files and tags carry every hostile name; a user rule echoes the tag in
// its message and, through SQLite's json_object(), in its evidence.
class HostileStore : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "logs";
    db_ = dir_ / "tw.db";
    // The test writer serializes these tags through protobuf, which complains (and writes them
    // anyway) for every string that is no UTF-8: exactly what is meant here.
    google::protobuf::LogSilencer quiet;
    int i = 0;
    for (const auto& name : HostileNames()) {
      const std::string run = root_ + "/" + name;
      EventFileWriter w(run + "/" + EventFileName(1700000000, name, 1, i++));
      w.Add(FileVersionEvent(1700000000));
      for (int s = 0; s < 20; ++s) w.Add(SimpleScalarEvent("loss/" + name, s, 1700000000 + s, 1.0f / (s + 1)));
      w.Flush();
    }
    std::string out;
    ASSERT_EQ(RunCommand(Cli() + " ingest --quiet --db " + ShellQuote(db_) + " " + ShellQuote(root_) + " 2>&1", &out), 0) << out;
    fs::create_directories(dir_ / "rules");
    WriteFile(dir_ / "rules/echo.sql",
              "-- id: echo_tag\n-- title: Echo \xff\n-- severity: warning\n"
              "SELECT series_id, 'tag ' || tag AS message, json_object('series', tag, 'raw', tag) AS evidence\n"
              "FROM series WHERE run_id = :run_id\n");
    // Evidence that is no JSON at all: kept as a string, never spliced in.
    WriteFile(dir_ / "rules/broken.sql",
              "-- id: broken_evidence\n-- title: Broken\n"
              "SELECT series_id, 'broken' AS message, '{\"a\": oops ' || tag AS evidence\n"
              "FROM series WHERE run_id = :run_id\n");
  }
  // Runs the CLI with stdout to a file; the file's path.
  std::string Output(const std::string& args, const std::string& name) {
    const std::string path = dir_ / name;
    std::string err;
    EXPECT_EQ(RunCommand(Cli() + " " + args + " > " + ShellQuote(path) + " 2>&1", &err), 0) << args << "\n" << ReadFile(path);
    return path;
  }
  TempDir dir_;
  std::string root_, db_;
};

TEST_F(HostileStore, RunsQueryStatusAndDiagnoseAlwaysPrintStrictJson) {
  const std::string runs = Output("runs --format json --db " + ShellQuote(db_), "runs.json");
  const std::string query = Output(
      "query --format json --db " + ShellQuote(db_) +
          " \"SELECT r.name AS \\\"n\xff\\\", s.tag, s.tag || char(10, 0, 27) AS t2, "
          "json_object('tag', s.tag) AS j, cast(s.tag AS blob) AS b FROM series s JOIN runs r USING (run_id)\"",
      "query.json");
  const std::string sources =
      Output("query --format json --db " + ShellQuote(db_) + " 'SELECT path, run_id FROM sources'", "sources.json");
  const std::string diagnose = Output(
      "diagnose --format json --rules-dir " + ShellQuote(dir_ / "rules") + " --db " + ShellQuote(db_), "diagnose.json");
  EXPECT_EQ(StrictJsonErrors(dir_, "lines", {runs, query, sources}), "");
  EXPECT_EQ(StrictJsonErrors(dir_, "whole", {diagnose}), "");
  // Every name made it through (replaced where it was no UTF-8), one line per run or series.
  const size_t n = HostileNames().size();
  auto lines = [](const std::string& path) {
    const std::string text = ReadFile(path);
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  };
  EXPECT_EQ(lines(runs), n) << ReadFile(runs);
  EXPECT_EQ(lines(query), n) << ReadFile(query);
  EXPECT_NE(ReadFile(diagnose).find("\"tag loss/nl\\n<3>forged\""), std::string::npos) << ReadFile(diagnose);
  EXPECT_NE(ReadFile(diagnose).find("fine-\xc3\xa9-\xe6\x97\xa5"), std::string::npos);
  EXPECT_NE(ReadFile(diagnose).find("\"evidence\":{\"text\":\"{\\\"a\\\": oops loss/"), std::string::npos)
      << ReadFile(diagnose);
}

// Tables are for terminals: no name may send an escape sequence or break a row in two.
TEST_F(HostileStore, TablesShowControlCharactersEscaped) {
  const std::string runs = Output("runs --db " + ShellQuote(db_), "runs.txt");
  const std::string query = Output("query --db " + ShellQuote(db_) + " 'SELECT r.name, s.tag FROM series s JOIN runs r USING (run_id)'",
                                   "query.txt");
  const size_t n = HostileNames().size();
  for (const std::string& path : {runs, query}) {
    const std::string text = ReadFile(path);
    for (unsigned char c : text) ASSERT_TRUE(c >= 0x20 || c == '\n') << path << ":\n" << text;
    EXPECT_GE(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), n) << text;
  }
  EXPECT_NE(ReadFile(query).find("\\x1b[2J"), std::string::npos) << ReadFile(query);
}

// The ingest summary lists problems with the file's path: a hostile name is shown escaped.
TEST_F(HostileStore, TheIngestSummaryShowsPathsEscaped) {
  const std::string bad = dir_ / "bad";
  WriteFile(bad + "/events.out.tfevents.1.x\x1b[2J\n<3>forged", "this is text, not TFRecord\n");
  std::string out;
  RunCommand(Cli() + " ingest --db " + ShellQuote(dir_ / "bad.db") + " " + ShellQuote(bad) + " 2>&1", &out);
  for (unsigned char c : out) ASSERT_TRUE(c >= 0x20 || c == '\n' || c == '\r') << out;
  EXPECT_NE(out.find("events.out.tfevents.1.x\\x1b[2J\\n<3>forged @0: not_tfrecord"), std::string::npos) << out;
}

// ---------------------------------------------------------------------------------------------
// The config file and toml++ 3.3.0

class ConfigGuard : public ::testing::Test {
 protected:
  std::string LoadError(const std::string& text) {
    WriteFile(path_, text);
    Result<app::Config> c = app::LoadConfigFile(path_);
    EXPECT_FALSE(c.ok()) << text;
    return c.ok() ? std::string() : c.status().message();
  }
  TempDir dir_;
  const std::string path_ = dir_ / "trainwatch.toml";
};

// "é" where toml++ looks for whitespace reaches its __builtin_unreachable(); the guard refuses
// it first, naming line and column (found by fuzz/fuzz_config under -fsanitize=undefined).
TEST_F(ConfigGuard, NonAsciiWhereTomlppSkipsWhitespaceIsRefusedByLineAndColumn) {
  std::string e = LoadError("[watch]\nroots = \xc3\xa9\n");
  EXPECT_NE(e.find(path_ + ":2:9: non-ASCII character outside a string or comment"), std::string::npos) << e;
  e = LoadError("\xd0\x96 = 1\n");
  EXPECT_NE(e.find(path_ + ":1:1: "), std::string::npos) << e;
  e = LoadError("[log]\nverbose = true \xef\xbc\xa1\n");
  EXPECT_NE(e.find(path_ + ":2:16: "), std::string::npos) << e;
  // fuzz_config's find past the first guard: a quote glued to a bare value opens no string
  // (toml++ scans "1that'..." as one token up to a terminator).
  e = LoadError(std::string("# trconds.\ncne = 1that'\xef\xbb\xaf-\0@\0n{the ra te\n", 42));
  EXPECT_NE(e.find(path_ + ":2:13: non-ASCII character outside a string or comment"), std::string::npos) << e;
  // A 30-minute fuzz_config run's find: a bracket glued to a bare token ("+[") opens no array,
  // so the quote after it opens no string either; toml++ scans on into the "é".
  e = LoadError("s=+[\"\xca\x9a");
  EXPECT_NE(e.find(path_ + ":1:6: non-ASCII character outside a string or comment"), std::string::npos) << e;
  e = LoadError("a = -{\"\xc3\xa9\"}\n");
  EXPECT_NE(e.find(path_ + ":1:8: non-ASCII character outside a string or comment"), std::string::npos) << e;
  // The re-run's find: a dot in a value is a number's, not a dotted key's ("0.'" is one token).
  e = LoadError("t=0.'\xd1\x9a");
  EXPECT_NE(e.find(path_ + ":1:6: non-ASCII character outside a string or comment"), std::string::npos) << e;
  // The next re-run's: a value runs to a terminator, '=' and quotes included ("5='").
  e = LoadError("t=5='\xef\xbb\xaf");
  EXPECT_NE(e.find(path_ + ":1:6: non-ASCII character outside a string or comment"), std::string::npos) << e;
  e = LoadError("a = [\n  1,\n  2.\"\xc3\xa9\"]\n");
  EXPECT_NE(e.find(path_ + ":3:6: non-ASCII character outside a string or comment"), std::string::npos) << e;
  // Quoted parts of dotted keys may hold any character, in a table, a header or an inline table.
  const Status dotted = CheckTomlText(
      "a.\"b\xc3\xa9\".c = 1\n[x.\"y\xc3\xa9\"]\nz = { p.\"q\xc3\xa9\" = [1.5, 2], r.'s\xc3\xa9' = 0.5 }\n", "f");
  EXPECT_TRUE(dotted.ok()) << dotted.message();
  e = LoadError("[store]\npath = \"\"\"a\\\n   \xc3\xa9\"\"\"\n");
  EXPECT_NE(e.find(path_ + ":3:4: a non-ASCII character right after a line-ending backslash"), std::string::npos)
      << e;
  e = LoadError("[store]\npath = \"\"\"a\\\xc3\xa9\"\"\"\n");
  EXPECT_NE(e.find(path_ + ":2:13: a backslash followed by a non-ASCII character"), std::string::npos) << e;
}

// "[" then no key: toml++ only asserts a key follows (an assumption, with NDEBUG under clang).
// Found by the same fuzz target; a nested array on its own line is no table header.
TEST_F(ConfigGuard, TableHeaderWithoutAKeyIsRefused) {
  std::string e = LoadError("[log]\nverbose = true\n[\n");
  EXPECT_NE(e.find(path_ + ":3:2: a table header must start with a key"), std::string::npos) << e;
  e = LoadError("[[ !x]]\n");
  EXPECT_NE(e.find(path_ + ":1:4: a table header must start with a key"), std::string::npos) << e;
  e = LoadError("[\x01]\n");
  EXPECT_NE(e.find(path_ + ":1:2: "), std::string::npos) << e;
  WriteFile(path_, "[watch]\nroots = [\n  \"a\",\n]\n[rules.loss_spikes]\nz = 10\n");
  Result<app::Config> c = app::LoadConfigFile(path_);
  EXPECT_TRUE(c.ok()) << c.status().message();
  const Status nested = CheckTomlText("a = [\n  [\n    1\n  ],\n  [ \"x\" ],\n]\nb = { c = [\n1] }\n[[ t ]]\n", "f");
  EXPECT_TRUE(nested.ok()) << nested.message();
}

TEST_F(ConfigGuard, NonAsciiInStringsAndCommentsStillLoads) {
  fs::create_directories(dir_ / "caf\xc3\xa9");
  WriteFile(path_, "\xef\xbb\xbf# r\xc3\xa9sum\xc3\xa9 \xe2\x80\x94 runs\n[watch]\nroots = [\"caf\xc3\xa9\", 'caf\xc3\xa9', "
                   "\"\"\"caf\xc3\xa9\"\"\", '''caf\xc3\xa9''']  # \xc3\xa9\n"
                   "[store]\npath = \"\"\"x\"\"y\\\"\xc3\xa9\"\"\"\"\n");
  Result<app::Config> c = app::LoadConfigFile(path_);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->roots.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(c->roots[i], dir_ / "caf\xc3\xa9");
  EXPECT_EQ(fs::path(c->db_path).filename(), "x\"\"y\"\xc3\xa9\"");
}

TEST_F(ConfigGuard, FifoDirectoryAndHugeFileAreRefusedWithoutWaiting) {
  ASSERT_EQ(::mkfifo((dir_ / "fifo.toml").c_str(), 0600), 0);
  Result<app::Config> c = app::LoadConfigFile(dir_ / "fifo.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("fifo.toml: cannot read config: not a regular file"), std::string::npos)
      << c.status().message();
  c = app::LoadConfigFile(dir_.path());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("not a regular file"), std::string::npos) << c.status().message();
  WriteFile(path_, "# " + std::string(5 << 20, 'x') + "\n");
  c = app::LoadConfigFile(path_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("larger than 4 MiB"), std::string::npos) << c.status().message();
}

// The release binary refuses such a file with the message and the config-error exit status.
TEST_F(ConfigGuard, DaemonRefusesTheFileWithAClearMessage) {
  WriteFile(path_, "[watch]\nroots = [\"logs\"]\nrescan_interval_seconds = 5\xc2\xa0\n");
  std::string out;
  const int rc = RunCommand(Cli() + " daemon --config " + ShellQuote(path_) + " </dev/null 2>&1", &out);
  EXPECT_EQ(rc, 78) << out;
  EXPECT_NE(out.find(path_ + ":3:28: non-ASCII character outside a string or comment"), std::string::npos) << out;
}

// ---------------------------------------------------------------------------------------------
// Rule headers

// Found by fuzz/fuzz_rule_header: "for: nan" passed the "must be >= 0" check (NaN compares
// false), and a parameter could default to NaN or infinity.
TEST(RuleHeader, NonFiniteNumbersAreRefused) {
  for (const char* v : {"nan", "-nan", "inf", "infinity"}) {
    Result<diagnose::Rule> r = diagnose::ParseRule(std::string("-- id: x\n-- for: ") + v + "\nSELECT 1", "r.sql");
    ASSERT_FALSE(r.ok()) << v;
    EXPECT_NE(r.status().message().find("r.sql:2: for must be a number of seconds >= 0"), std::string::npos)
        << r.status().message();
    r = diagnose::ParseRule(std::string("-- id: x\n-- param z = ") + v + ": z\nSELECT 1", "r.sql");
    ASSERT_FALSE(r.ok()) << v;
    EXPECT_NE(r.status().message().find("r.sql:2: parameter z: '"), std::string::npos) << r.status().message();
  }
  EXPECT_TRUE(diagnose::ParseRule("-- id: x\n-- for: 30\n-- param z = 1e3: z\nSELECT 1", "r.sql").ok());
}

}  // namespace
}  // namespace tw
