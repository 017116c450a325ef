// The TFRecord reader's contract (see src/tfrecord/reader.h), tested the way LevelDB's
// db/log_test.cc tests its log reader: build files byte by byte, cut them at every length,
// corrupt every byte, and check that what comes back is exactly what should.
#include "tfrecord/reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/crc32c.h"
#include "support/test_env.h"
#include "tfrecord/writer.h"

namespace tw::tfrecord {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;
using tw::testing::AppendFile;
using tw::testing::CorpusDir;
using tw::testing::ReadFile;
using tw::testing::TempDir;
using tw::testing::WriteFile;

// ---------------------------------------------------------------------------------------
// What a read returned, in a form gtest can compare and print.

struct Rec {
  uint64_t offset = 0;
  std::string data;
  bool operator==(const Rec&) const = default;
};
void PrintTo(const Rec& r, std::ostream* os) {
  *os << "Rec{offset=" << r.offset << ", " << r.data.size() << " bytes}";
}

struct Prob {
  ProblemKind kind = ProblemKind::kBadDataCrc;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const Prob&) const = default;
};
void PrintTo(const Prob& p, std::ostream* os) {
  *os << ProblemKindName(p.kind) << "{offset=" << p.offset << ", length=" << p.length << "}";
}

struct ReadOut {
  std::vector<Rec> records;
  std::vector<Prob> problems;
  std::vector<std::string> details;  // parallel to problems
  uint64_t position = 0;
  ScanState state;
};

void ExpectSameState(const ScanState& a, const ScanState& b) {
  EXPECT_EQ(a.resyncing, b.resyncing);
  EXPECT_EQ(a.resync_from, b.resync_from);
  EXPECT_EQ(a.rejected, b.rejected);
}

// Appends the output of a resumed read to that of the earlier one.
void Concat(ReadOut* into, const ReadOut& more) {
  into->records.insert(into->records.end(), more.records.begin(), more.records.end());
  into->problems.insert(into->problems.end(), more.problems.begin(), more.problems.end());
  into->details.insert(into->details.end(), more.details.begin(), more.details.end());
  into->position = more.position;
  into->state = more.state;
}

// Runs a Scanner over `window` (the file's bytes from `base`) until it needs more.
ReadOut Scan(std::string_view window, uint64_t base, ScanState state) {
  ReadOut out;
  Scanner s(window, base, state);
  // Every step consumes at least one byte or ends the loop; a runaway scanner fails here.
  for (size_t guard = 0; guard <= 2 * window.size() + 4; ++guard) {
    switch (s.Next()) {
      case Scanner::Step::kRecord:
        EXPECT_GE(s.record_offset(), base);
        EXPECT_LE(s.record_offset() + kHeaderSize + s.record().size() + kFooterSize,
                  base + window.size());
        out.records.push_back({s.record_offset(), std::string(s.record())});
        break;
      case Scanner::Step::kProblem:
        out.problems.push_back({s.problem().kind, s.problem().offset, s.problem().length});
        out.details.push_back(s.problem().detail);
        EXPECT_FALSE(s.problem().detail.empty());
        break;
      case Scanner::Step::kNeedMore:
        out.position = s.position();
        out.state = s.state();
        EXPECT_GE(out.position, base);
        EXPECT_LE(out.position, base + window.size());
        // "at least needed() bytes from position() are required": so they are not all here.
        if (!out.state.rejected) {
          EXPECT_GT(out.position + s.needed(), base + window.size());
        }
        return out;
    }
  }
  ADD_FAILURE() << "Scanner never asked for more over a window of " << window.size();
  return out;
}

// Runs a FileReader over `path` from `offset` until kEnd.
ReadOut ReadWith(const std::string& path, uint64_t offset, ScanState state,
                 size_t chunk = size_t{1} << 20, uint64_t* bytes_read = nullptr) {
  ReadOut out;
  FileReader r(path, offset, state, chunk);
  Status st = r.Open();
  EXPECT_TRUE(st.ok()) << st.ToString();
  // Each step consumes at least one byte, or is a problem that the next step moves past.
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  const uint64_t max_steps = 2 * (ec ? 0 : std::max(size, offset) - offset) + 4;
  for (uint64_t guard = 0;; ++guard) {
    if (guard > max_steps) {
      ADD_FAILURE() << "FileReader never ended on " << path;
      break;
    }
    const FileReader::Step step = r.Next();
    if (step == FileReader::Step::kEnd) break;
    if (step == FileReader::Step::kYield) continue;
    if (step == FileReader::Step::kRecord) {
      out.records.push_back({r.record_offset(), std::string(r.record())});
    } else {
      out.problems.push_back({r.problem().kind, r.problem().offset, r.problem().length});
      out.details.push_back(r.problem().detail);
      EXPECT_FALSE(r.problem().detail.empty());
    }
  }
  EXPECT_TRUE(r.status().ok()) << r.status().ToString();
  out.position = r.position();
  out.state = r.state();
  if (bytes_read) *bytes_read = r.bytes_read();
  return out;
}

// ---------------------------------------------------------------------------------------
// Building files.

std::string RandomBytes(std::mt19937& rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

struct Built {
  std::string bytes;
  std::vector<Rec> records;  // what a full read must return
};

Built Build(const std::vector<std::string>& payloads) {
  Built b;
  for (const auto& p : payloads) {
    b.records.push_back({b.bytes.size(), p});
    AppendRecord(&b.bytes, p);
  }
  return b;
}

Built RandomFile(std::mt19937& rng, int n, size_t min_len, size_t max_len) {
  std::uniform_int_distribution<size_t> len(min_len, max_len);
  std::vector<std::string> payloads;
  for (int i = 0; i < n; ++i) payloads.push_back(RandomBytes(rng, len(rng)));
  return Build(payloads);
}

// A record header for `len` with a correctly computed masked CRC.
std::string Header(uint64_t len) {
  char b[kHeaderSize];
  std::memcpy(b, &len, 8);  // little-endian hosts, as the reader
  const uint32_t crc = crc32c::Mask(crc32c::Value(b, 8));
  std::memcpy(b + 8, &crc, 4);
  return std::string(b, kHeaderSize);
}

uint64_t Framed(const Rec& r) { return kHeaderSize + r.data.size() + kFooterSize; }

// Records of `all` that end at or before `n`.
std::vector<Rec> WhollyIn(const std::vector<Rec>& all, uint64_t n) {
  std::vector<Rec> out;
  for (const auto& r : all) {
    if (r.offset + Framed(r) <= n) out.push_back(r);
  }
  return out;
}

// Where a read of the first `n` bytes of a clean file must stop.
uint64_t ExpectedPosition(const std::vector<Rec>& all, uint64_t n) {
  for (const auto& r : all) {
    if (r.offset + Framed(r) > n) return r.offset;
  }
  return all.empty() ? 0 : all.back().offset + Framed(all.back());
}

// ---------------------------------------------------------------------------------------
// Framing and names.

TEST(TfRecordFraming, WriterProducesTheDocumentedLayout) {
  const std::string data = "hello";
  const std::string framed = FrameRecord(data);
  ASSERT_EQ(framed.size(), kHeaderSize + data.size() + kFooterSize);
  EXPECT_EQ(framed.substr(0, kHeaderSize), Header(data.size()));
  const std::string len_bytes("\x05\0\0\0\0\0\0\0", 8);
  EXPECT_EQ(framed.substr(0, 8), len_bytes);
  uint32_t length_crc, data_crc;
  std::memcpy(&length_crc, framed.data() + 8, 4);
  std::memcpy(&data_crc, framed.data() + kHeaderSize + data.size(), 4);
  EXPECT_EQ(crc32c::Unmask(length_crc), crc32c::Value(len_bytes));
  EXPECT_EQ(crc32c::Unmask(data_crc), crc32c::Value(data));
  EXPECT_EQ(framed.substr(kHeaderSize, data.size()), data);

  std::string two;
  AppendRecord(&two, "a");
  AppendRecord(&two, "");
  EXPECT_EQ(two, FrameRecord("a") + FrameRecord(""));
}

TEST(TfRecordProblemKind, EveryKindHasADistinctName) {
  const ProblemKind kinds[] = {ProblemKind::kBadLengthCrc, ProblemKind::kImplausibleLength,
                               ProblemKind::kBadDataCrc, ProblemKind::kResynced,
                               ProblemKind::kNotTfRecord};
  std::vector<std::string> names;
  for (ProblemKind k : kinds) names.push_back(ProblemKindName(k));
  EXPECT_THAT(names, ElementsAre("bad_length_crc", "implausible_length", "bad_data_crc",
                                 "resynced", "not_tfrecord"));
}

// ---------------------------------------------------------------------------------------
// 1. Round trip.

TEST(TfRecordReader, RoundTripVariedSizesEveryChunkSize) {
  std::mt19937 rng(1);
  std::vector<std::string> payloads = {"", "x", RandomBytes(rng, 100),
                                       RandomBytes(rng, 100 * 1024), ""};
  for (int i = 0; i < 30; ++i) payloads.push_back(RandomBytes(rng, rng() % 300));
  payloads.push_back(RandomBytes(rng, (size_t{3} << 20) / 2));  // > the default 1 MiB chunk
  payloads.push_back(RandomBytes(rng, 7));
  payloads.push_back(std::string(5000, '\0'));
  payloads.push_back(RandomBytes(rng, 100 * 1024));
  const Built b = Build(payloads);

  TempDir dir;
  const std::string path = dir / "events.out.tfevents.1";
  WriteFile(path, b.bytes);

  for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}, size_t{4096}, size_t{1} << 20}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    uint64_t bytes_read = 0;
    const ReadOut out = ReadWith(path, 0, {}, chunk, &bytes_read);
    ASSERT_EQ(out.records.size(), b.records.size());
    for (size_t i = 0; i < b.records.size(); ++i) {
      ASSERT_EQ(out.records[i].offset, b.records[i].offset) << "record " << i;
      ASSERT_TRUE(out.records[i].data == b.records[i].data) << "record " << i;
    }
    EXPECT_THAT(out.problems, ElementsAre());
    EXPECT_EQ(out.position, b.bytes.size());
    EXPECT_FALSE(out.state.resyncing);
    EXPECT_FALSE(out.state.rejected);
    // Each byte is read once: refills keep what is unconsumed instead of reading it again.
    EXPECT_EQ(bytes_read, b.bytes.size());
  }

  // The Scanner alone, over the whole file in memory.
  const ReadOut scanned = Scan(b.bytes, 0, {});
  EXPECT_TRUE(scanned.records == b.records);
  EXPECT_THAT(scanned.problems, ElementsAre());
  EXPECT_EQ(scanned.position, b.bytes.size());
}

TEST(TfRecordReader, ReadFromACommittedOffsetStartsThere) {
  std::mt19937 rng(2);
  const Built b = RandomFile(rng, 10, 0, 200);
  TempDir dir;
  const std::string path = dir / "f";
  WriteFile(path, b.bytes);
  for (size_t i = 0; i <= b.records.size(); ++i) {
    const uint64_t from = i < b.records.size() ? b.records[i].offset : b.bytes.size();
    const ReadOut out = ReadWith(path, from, {}, 16);
    EXPECT_THAT(out.records, ElementsAreArray(b.records.begin() + static_cast<long>(i),
                                              b.records.end()));
    EXPECT_THAT(out.problems, ElementsAre());
    EXPECT_EQ(out.position, b.bytes.size());
  }
  // An offset beyond the end (a file truncated under us) ends quietly, where it was.
  const ReadOut past = ReadWith(path, b.bytes.size() + 100, {}, 16);
  EXPECT_THAT(past.records, ElementsAre());
  EXPECT_THAT(past.problems, ElementsAre());
  EXPECT_EQ(past.position, b.bytes.size() + 100);
}

// ---------------------------------------------------------------------------------------
// 2. Every byte prefix, then resume.

TEST(TfRecordScanner, EveryPrefixThenResumeEqualsOneFullRead) {
  std::mt19937 rng(3);
  const Built b = RandomFile(rng, 20, 0, 120);
  const ReadOut full = Scan(b.bytes, 0, {});
  ASSERT_TRUE(full.records == b.records);
  ASSERT_THAT(full.problems, ElementsAre());

  for (size_t n = 0; n <= b.bytes.size(); ++n) {
    SCOPED_TRACE("prefix " + std::to_string(n));
    ReadOut out = Scan(std::string_view(b.bytes).substr(0, n), 0, {});
    ASSERT_TRUE(out.records == WhollyIn(b.records, n));
    ASSERT_THAT(out.problems, ElementsAre());
    ASSERT_EQ(out.position, ExpectedPosition(b.records, n));
    ASSERT_FALSE(out.state.resyncing);
    const uint64_t pos = out.position;
    Concat(&out, Scan(std::string_view(b.bytes).substr(pos), pos, out.state));
    ASSERT_TRUE(out.records == full.records);
    ASSERT_THAT(out.problems, ElementsAre());
    ASSERT_EQ(out.position, b.bytes.size());
  }
}

TEST(TfRecordReader, EveryPrefixThenAppendAndResumeEqualsOneFullRead) {
  std::mt19937 rng(4);
  std::vector<std::string> payloads;
  for (int i = 0; i < 20; ++i) payloads.push_back(RandomBytes(rng, rng() % 120));
  payloads[0].clear();
  payloads[7] = RandomBytes(rng, 300);  // larger than every chunk used below
  const Built b = Build(payloads);

  TempDir dir;
  const std::string path = dir / "f";
  for (size_t n = 0; n <= b.bytes.size(); ++n) {
    SCOPED_TRACE("prefix " + std::to_string(n));
    const size_t chunk = 1 + n % 97;
    WriteFile(path, b.bytes.substr(0, n));
    ReadOut out = ReadWith(path, 0, {}, chunk);
    ASSERT_TRUE(out.records == WhollyIn(b.records, n));
    ASSERT_THAT(out.problems, ElementsAre());
    ASSERT_EQ(out.position, ExpectedPosition(b.records, n));
    AppendFile(path, b.bytes.substr(n));
    Concat(&out, ReadWith(path, out.position, out.state, chunk));
    ASSERT_TRUE(out.records == b.records);
    ASSERT_THAT(out.problems, ElementsAre());
    ASSERT_EQ(out.position, b.bytes.size());
  }
}

// ---------------------------------------------------------------------------------------
// 3. Resume chains: a file that grows by a few bytes at a time.

// Appends `bytes` to a file in random pieces, reading after each from where the last read
// stopped with the state it left; returns everything read.
ReadOut ReadWhileGrowing(const std::string& path, const std::string& bytes, uint32_t seed,
                         size_t max_piece, int* resumes_while_resyncing = nullptr) {
  std::mt19937 rng(seed);
  WriteFile(path, "");
  ReadOut all;
  size_t written = 0;
  while (written < bytes.size()) {
    const size_t piece = std::min<size_t>(1 + rng() % max_piece, bytes.size() - written);
    AppendFile(path, bytes.substr(written, piece));
    written += piece;
    if (resumes_while_resyncing && all.state.resyncing) ++*resumes_while_resyncing;
    const ReadOut more = ReadWith(path, all.position, all.state, 1 + rng() % 64);
    EXPECT_LE(more.position, written);
    Concat(&all, more);
  }
  return all;
}

// The same with the Scanner: each window is the file from the last position to its end.
ReadOut ScanWhileGrowing(const std::string& bytes, uint32_t seed, size_t max_piece) {
  std::mt19937 rng(seed);
  ReadOut all;
  size_t written = 0;
  while (written < bytes.size()) {
    written += std::min<size_t>(1 + rng() % max_piece, bytes.size() - written);
    const uint64_t pos = all.position;
    Concat(&all, Scan(std::string_view(bytes).substr(pos, written - pos), pos, all.state));
  }
  return all;
}

TEST(TfRecordReader, ResumeChainOverRandomAppendsEqualsOneFullRead) {
  std::mt19937 rng(5);
  std::vector<std::string> payloads;
  for (int i = 0; i < 60; ++i) payloads.push_back(RandomBytes(rng, rng() % 200));
  payloads[10] = RandomBytes(rng, 20 * 1024);
  const Built b = Build(payloads);

  TempDir dir;
  const std::string path = dir / "f";
  for (uint32_t seed : {11u, 12u, 13u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const ReadOut chained = ReadWhileGrowing(path, b.bytes, seed, 50);
    EXPECT_TRUE(chained.records == b.records);
    EXPECT_THAT(chained.problems, ElementsAre());
    EXPECT_EQ(chained.position, b.bytes.size());

    const ReadOut scanned = ScanWhileGrowing(b.bytes, seed, 50);
    EXPECT_TRUE(scanned.records == b.records);
    EXPECT_THAT(scanned.problems, ElementsAre());
    EXPECT_EQ(scanned.position, b.bytes.size());
  }
}

// ---------------------------------------------------------------------------------------
// 4. Every single-byte corruption.

// What a full read of `bytes` (the file of `records` with byte `at` damaged) must return.
struct Expected {
  std::vector<Rec> records;
  std::vector<Prob> problems;
};
Expected ExpectAfterDamage(const std::vector<Rec>& records, uint64_t at) {
  Expected e;
  for (size_t k = 0; k < records.size(); ++k) {
    const Rec& r = records[k];
    if (at < r.offset || at >= r.offset + Framed(r)) {
      e.records.push_back(r);
      continue;
    }
    if (at - r.offset >= kHeaderSize) {  // data or data CRC
      e.problems.push_back({ProblemKind::kBadDataCrc, r.offset, Framed(r)});
    } else {  // length or its CRC: resync at the next record, if there is one
      e.problems.push_back({ProblemKind::kBadLengthCrc, r.offset, 0});
      if (k + 1 < records.size()) {
        e.problems.push_back(
            {ProblemKind::kResynced, r.offset, records[k + 1].offset - r.offset});
      }
    }
  }
  return e;
}

// The properties any damaged read must have, whatever was damaged.
void ExpectSafeOutput(const ReadOut& out, const std::vector<Rec>& original, uint64_t at) {
  EXPECT_FALSE(out.problems.empty());
  // Every record returned is an original one, byte for byte, at its offset, at most once.
  for (size_t i = 0; i < out.records.size(); ++i) {
    EXPECT_NE(std::find(original.begin(), original.end(), out.records[i]), original.end())
        << "a record that was never written came back at " << out.records[i].offset;
    if (i > 0) {
      EXPECT_GT(out.records[i].offset, out.records[i - 1].offset);
    }
  }
  // Every record that does not hold the damaged byte comes back.
  for (const Rec& r : original) {
    if (at >= r.offset && at < r.offset + Framed(r)) continue;
    EXPECT_NE(std::find(out.records.begin(), out.records.end(), r), out.records.end())
        << "undamaged record at " << r.offset << " was lost";
  }
}

TEST(TfRecordReader, EverySingleByteCorruption) {
  std::mt19937 rng(6);
  const Built b = RandomFile(rng, 5, 10, 40);
  TempDir dir;
  const std::string path = dir / "f";
  size_t cases = 0;
  for (int variant = 0; variant < 2; ++variant) {
    for (size_t at = 0; at < b.bytes.size(); ++at) {
      std::string bad = b.bytes;
      bad[at] = variant == 0 ? static_cast<char>(bad[at] ^ 0xff)
                             : static_cast<char>(static_cast<unsigned char>(bad[at]) + 1);
      SCOPED_TRACE((variant == 0 ? "xor 0xff at " : "+1 at ") + std::to_string(at));
      const Expected want = ExpectAfterDamage(b.records, at);

      const ReadOut scanned = Scan(bad, 0, {});
      ExpectSafeOutput(scanned, b.records, at);
      EXPECT_TRUE(scanned.records == want.records);
      EXPECT_THAT(scanned.problems, ElementsAreArray(want.problems));
      EXPECT_FALSE(scanned.state.rejected);

      WriteFile(path, bad);
      for (size_t chunk : {size_t{5}, size_t{1} << 20}) {
        const ReadOut read = ReadWith(path, 0, {}, chunk);
        ExpectSafeOutput(read, b.records, at);
        EXPECT_TRUE(read.records == want.records) << "chunk " << chunk;
        EXPECT_THAT(read.problems, ElementsAreArray(want.problems)) << "chunk " << chunk;
        EXPECT_EQ(read.position, scanned.position) << "chunk " << chunk;
        ExpectSameState(read.state, scanned.state);
      }

      // Cut anywhere and resumed, the damaged file reads exactly as in one go: the problems
      // included, each reported once.
      for (size_t n = 0; n <= bad.size(); ++n) {
        ReadOut out = Scan(std::string_view(bad).substr(0, n), 0, {});
        const uint64_t pos = out.position;
        Concat(&out, Scan(std::string_view(bad).substr(pos), pos, out.state));
        ASSERT_TRUE(out.records == scanned.records) << "prefix " << n;
        ASSERT_THAT(out.problems, ElementsAreArray(scanned.problems)) << "prefix " << n;
        ASSERT_EQ(out.position, scanned.position) << "prefix " << n;
      }
      ++cases;
      if (::testing::Test::HasFailure()) return;  // one broken case says enough
    }
  }
  EXPECT_EQ(cases, 2 * b.bytes.size());
}

TEST(TfRecordReader, DamagedLastHeaderLeavesTheScanWaitingForMore) {
  std::mt19937 rng(7);
  const Built b = RandomFile(rng, 3, 10, 40);
  std::string bad = b.bytes;
  const uint64_t last = b.records.back().offset;
  bad[last + 9] ^= 0x01;  // the last record's length CRC
  const ReadOut out = Scan(bad, 0, {});
  EXPECT_THAT(out.problems, ElementsAre(Prob{ProblemKind::kBadLengthCrc, last, 0}));
  EXPECT_TRUE(out.records ==
              std::vector<Rec>(b.records.begin(), b.records.end() - 1));
  EXPECT_TRUE(out.state.resyncing);
  EXPECT_EQ(out.state.resync_from, last);
  // The scan stops where fewer than a header's bytes remain to be looked at.
  EXPECT_EQ(out.position, bad.size() - (kHeaderSize - 1));

  // The writer goes on; the next read finds the new record and says how much was skipped.
  const std::string more = FrameRecord("after the damage");
  const std::string grown = bad + more;
  const ReadOut next =
      Scan(std::string_view(grown).substr(out.position), out.position, out.state);
  EXPECT_THAT(next.problems,
              ElementsAre(Prob{ProblemKind::kResynced, last, bad.size() - last}));
  EXPECT_THAT(next.records, ElementsAre(Rec{bad.size(), "after the damage"}));
  EXPECT_FALSE(next.state.resyncing);
  EXPECT_EQ(next.position, grown.size());
}

// ---------------------------------------------------------------------------------------
// 5. A resync scan that is interrupted by the end of the data, and resumed.

TEST(TfRecordReader, ResyncSurvivesWindowBoundariesAndRestarts) {
  std::mt19937 rng(8);
  std::vector<std::string> payloads;
  for (int i = 0; i < 8; ++i) payloads.push_back(RandomBytes(rng, 20 + rng() % 40));
  payloads[2] = RandomBytes(rng, 700);  // a long stretch to scan over
  const Built b = Build(payloads);
  std::string bad = b.bytes;
  const uint64_t damaged = b.records[2].offset;
  bad[damaged + 3] ^= 0x40;  // inside its length
  const std::vector<Prob> want_problems = {
      {ProblemKind::kBadLengthCrc, damaged, 0},
      {ProblemKind::kResynced, damaged, b.records[3].offset - damaged}};
  std::vector<Rec> want_records = b.records;
  want_records.erase(want_records.begin() + 2);

  TempDir dir;
  const std::string path = dir / "f";
  WriteFile(path, bad);
  // Small chunks: the scan runs off the end of the window many times within one read.
  for (size_t chunk : {size_t{1}, size_t{13}, size_t{64}}) {
    const ReadOut out = ReadWith(path, 0, {}, chunk);
    EXPECT_TRUE(out.records == want_records) << "chunk " << chunk;
    EXPECT_THAT(out.problems, ElementsAreArray(want_problems)) << "chunk " << chunk;
    EXPECT_EQ(out.position, bad.size());
  }

  // Every prefix, then resume from the saved position and state.
  int interrupted = 0;
  for (size_t n = 0; n <= bad.size(); ++n) {
    SCOPED_TRACE("prefix " + std::to_string(n));
    WriteFile(path, bad.substr(0, n));
    ReadOut out = ReadWith(path, 0, {}, 1 + n % 31);
    if (out.state.resyncing) {
      ++interrupted;
      ASSERT_EQ(out.state.resync_from, damaged);
      ASSERT_THAT(out.problems, ElementsAre(want_problems[0]));
      ASSERT_GT(out.position, damaged);
      ASSERT_LE(out.position, n);
    }
    AppendFile(path, bad.substr(n));
    Concat(&out, ReadWith(path, out.position, out.state, 1 + n % 29));
    ASSERT_TRUE(out.records == want_records);
    ASSERT_THAT(out.problems, ElementsAreArray(want_problems));  // once, not once per read
    ASSERT_EQ(out.position, bad.size());
  }
  // The prefixes that end between the damaged header and the next good one.
  // (from the damaged header's 12th byte to the byte before the next header's 12th).
  EXPECT_EQ(interrupted, static_cast<int>(b.records[3].offset - damaged));

  // A chain of small appends: many consecutive reads start and end inside the scan.
  for (uint32_t seed : {21u, 22u}) {
    int resumes_while_resyncing = 0;
    const ReadOut chained = ReadWhileGrowing(path, bad, seed, 20, &resumes_while_resyncing);
    EXPECT_GT(resumes_while_resyncing, 10);
    EXPECT_TRUE(chained.records == want_records);
    EXPECT_THAT(chained.problems, ElementsAreArray(want_problems));
    EXPECT_EQ(chained.position, bad.size());

    const ReadOut scanned = ScanWhileGrowing(bad, seed, 20);
    EXPECT_TRUE(scanned.records == want_records);
    EXPECT_THAT(scanned.problems, ElementsAreArray(want_problems));
  }
}

TEST(TfRecordReader, GarbageBetweenRecordsIsSkippedOnce) {
  // Bytes that are no record at all (a crashed writer's partial write, then a restart).
  std::mt19937 rng(9);
  const std::string a = FrameRecord("first"), c = FrameRecord("third");
  std::string garbage = FrameRecord(RandomBytes(rng, 50)).substr(0, 30);  // cut short
  garbage[0] ^= 0x5a;
  garbage += RandomBytes(rng, 100);
  const std::string bytes = a + garbage + c;
  const ReadOut full = Scan(bytes, 0, {});
  EXPECT_THAT(full.records,
              ElementsAre(Rec{0, "first"}, Rec{a.size() + garbage.size(), "third"}));
  EXPECT_THAT(full.problems,
              ElementsAre(Prob{ProblemKind::kBadLengthCrc, a.size(), 0},
                          Prob{ProblemKind::kResynced, a.size(), garbage.size()}));
  EXPECT_THAT(full.details[1], HasSubstr(std::to_string(garbage.size())));
  const ReadOut chained = ScanWhileGrowing(bytes, 31, 7);
  EXPECT_TRUE(chained.records == full.records);
  EXPECT_THAT(chained.problems, ElementsAreArray(full.problems));
}

// ---------------------------------------------------------------------------------------
// 6. A length that is implausible although its CRC is right.

TEST(TfRecordReader, ImplausibleLengthWithValidCrcResyncs) {
  for (uint64_t len : {kMaxRecordLength + 1, uint64_t{1} << 40, ~uint64_t{0}}) {
    SCOPED_TRACE("length " + std::to_string(len));
    const std::string a = FrameRecord("before");
    const std::string bogus = Header(len) + "some bytes that follow it";
    const std::string c = FrameRecord("after");
    const std::string bytes = a + bogus + c + FrameRecord("");
    const std::vector<Rec> want_records = {{0, "before"},
                                           {a.size() + bogus.size(), "after"},
                                           {a.size() + bogus.size() + c.size(), ""}};
    const std::vector<Prob> want_problems = {
        {ProblemKind::kImplausibleLength, a.size(), 0},
        {ProblemKind::kResynced, a.size(), bogus.size()}};

    const ReadOut out = Scan(bytes, 0, {});
    EXPECT_TRUE(out.records == want_records);
    EXPECT_THAT(out.problems, ElementsAreArray(want_problems));
    EXPECT_THAT(out.details[0], HasSubstr(std::to_string(len)));
    EXPECT_EQ(out.position, bytes.size());

    TempDir dir;
    WriteFile(dir / "f", bytes);
    for (size_t chunk : {size_t{3}, size_t{1} << 20}) {
      const ReadOut read = ReadWith(dir / "f", 0, {}, chunk);
      EXPECT_TRUE(read.records == want_records);
      EXPECT_THAT(read.problems, ElementsAreArray(want_problems));
      EXPECT_EQ(read.position, bytes.size());
    }
    for (size_t n = 0; n <= bytes.size(); ++n) {
      ReadOut cut = Scan(std::string_view(bytes).substr(0, n), 0, {});
      const uint64_t pos = cut.position;
      Concat(&cut, Scan(std::string_view(bytes).substr(pos), pos, cut.state));
      ASSERT_TRUE(cut.records == want_records) << "prefix " << n;
      ASSERT_THAT(cut.problems, ElementsAreArray(want_problems)) << "prefix " << n;
    }
  }
}

TEST(TfRecordReader, ResyncDoesNotStopAtAnImplausibleHeader) {
  // The scan after a bad header looks for a header that is wholly valid: a CRC-correct
  // header with an implausible length is skipped over like any other damage.
  const std::string a = FrameRecord("before");
  std::string damaged = FrameRecord("damaged");
  damaged[2] ^= 0x10;
  const std::string bogus = Header(kMaxRecordLength + 1);
  const std::string bytes = a + damaged + bogus + "junk" + FrameRecord("after");
  const uint64_t skipped = damaged.size() + bogus.size() + 4;
  const ReadOut out = Scan(bytes, 0, {});
  EXPECT_THAT(out.records, ElementsAre(Rec{0, "before"}, Rec{a.size() + skipped, "after"}));
  EXPECT_THAT(out.problems, ElementsAre(Prob{ProblemKind::kBadLengthCrc, a.size(), 0},
                                        Prob{ProblemKind::kResynced, a.size(), skipped}));
  EXPECT_EQ(out.position, bytes.size());
}

TEST(TfRecordReader, LargestPlausibleLengthIsAPartialRecordNotAProblem) {
  // kMaxRecordLength itself is allowed: with few bytes behind it, it is a record not yet
  // written, so the read stops at its header and reports nothing.
  const std::string a = FrameRecord("before");
  const std::string bytes = a + Header(kMaxRecordLength) + "partial data";
  const ReadOut out = Scan(bytes, 0, {});
  EXPECT_THAT(out.records, ElementsAre(Rec{0, "before"}));
  EXPECT_THAT(out.problems, ElementsAre());
  EXPECT_EQ(out.position, a.size());
  Scanner s(std::string_view(bytes).substr(a.size()), a.size(), {});
  ASSERT_EQ(s.Next(), Scanner::Step::kNeedMore);
  EXPECT_EQ(s.needed(), kHeaderSize + kMaxRecordLength + kFooterSize);
  EXPECT_EQ(s.position(), a.size());

  // FileReader stops there too, whatever its chunk, without sizing a buffer for 2 GiB.
  TempDir dir;
  WriteFile(dir / "f", bytes + std::string(300, 'x'));  // more than a chunk behind the header
  for (size_t chunk : {size_t{7}, size_t{64}, size_t{1} << 20}) {
    const ReadOut read = ReadWith(dir / "f", 0, {}, chunk);
    EXPECT_THAT(read.records, ElementsAre(Rec{0, "before"})) << "chunk " << chunk;
    EXPECT_THAT(read.problems, ElementsAre()) << "chunk " << chunk;
    EXPECT_EQ(read.position, a.size()) << "chunk " << chunk;
  }
}

// ---------------------------------------------------------------------------------------
// 7. Text where a TFRecord file should be: a Git LFS pointer, say.

const char kLfsPointer[] =
    "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 3140\n";

void ExpectRejectedOnce(const ReadOut& out) {
  EXPECT_THAT(out.records, ElementsAre());
  EXPECT_THAT(out.problems, ElementsAre(Prob{ProblemKind::kNotTfRecord, 0, 0}));
  EXPECT_TRUE(out.state.rejected);
  EXPECT_FALSE(out.state.resyncing);
}

TEST(TfRecordReader, GitLfsPointerIsReportedOnceAndNeverReadAgain) {
  TempDir dir;
  const std::string path = dir / "events.out.tfevents.1638461437.host.1.0";
  WriteFile(path, kLfsPointer);
  for (size_t chunk : {size_t{64}, size_t{1} << 20}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const ReadOut out = ReadWith(path, 0, {}, chunk);
    ExpectRejectedOnce(out);
    ASSERT_EQ(out.details.size(), 1u);
    EXPECT_THAT(out.details[0], HasSubstr("Git LFS"));
    // Named, never quoted: the file's bytes stay out of the store.
    EXPECT_THAT(out.details[0], Not(HasSubstr("version https")));
    EXPECT_THAT(out.details[0], Not(HasSubstr("sha256")));
    EXPECT_LE(out.position, sizeof kLfsPointer - 1);

    // Read again (the file grew, say), with the state the first read left: nothing.
    AppendFile(path, FrameRecord("a record after the text"));
    const ReadOut again = ReadWith(path, out.position, out.state, chunk);
    EXPECT_THAT(again.records, ElementsAre());
    EXPECT_THAT(again.problems, ElementsAre());
    EXPECT_TRUE(again.state.rejected);
    const ReadOut from_zero = ReadWith(path, 0, out.state, chunk);
    EXPECT_THAT(from_zero.records, ElementsAre());
    EXPECT_THAT(from_zero.problems, ElementsAre());
    WriteFile(path, kLfsPointer);
  }

  const ReadOut scanned = Scan(kLfsPointer, 0, {});
  ExpectRejectedOnce(scanned);
  EXPECT_THAT(scanned.details[0], HasSubstr("Git LFS"));
  const ReadOut rescanned = Scan(kLfsPointer, 0, scanned.state);
  EXPECT_THAT(rescanned.records, ElementsAre());
  EXPECT_THAT(rescanned.problems, ElementsAre());
}

TEST(TfRecordReader, OtherTextIsNotTfRecordButNotCalledLfs) {
  const std::string html = "<!DOCTYPE html>\n<html><body>Not Found</body></html>\n";
  const ReadOut out = Scan(html, 0, {});
  ExpectRejectedOnce(out);
  EXPECT_THAT(out.details[0], HasSubstr("text"));
  EXPECT_THAT(out.details[0], Not(HasSubstr("Git LFS")));
  EXPECT_THAT(out.details[0], Not(HasSubstr("DOCTYPE")));
  EXPECT_THAT(out.details[0], Not(HasSubstr("Not Found")));
}

TEST(TfRecordScanner, TextOnlyCountsAtTheStartOfTheFile) {
  // Damage at a later offset that happens to look like text is a bad header, not a text file.
  const std::string a = FrameRecord("first");
  const std::string bytes = a + "plain text, no record here at all" + FrameRecord("last");
  const ReadOut out = Scan(bytes, 0, {});
  ASSERT_FALSE(out.problems.empty());
  EXPECT_EQ(out.problems[0], (Prob{ProblemKind::kBadLengthCrc, a.size(), 0}));
  EXPECT_FALSE(out.state.rejected);
  ASSERT_EQ(out.records.size(), 2u);
  EXPECT_EQ(out.records.back().data, "last");
  // Also when a resumed read's window starts right at that text (a base other than 0).
  for (size_t n = 0; n <= bytes.size(); ++n) {
    ReadOut cut = Scan(std::string_view(bytes).substr(0, n), 0, {});
    const uint64_t pos = cut.position;
    Concat(&cut, Scan(std::string_view(bytes).substr(pos), pos, cut.state));
    ASSERT_TRUE(cut.records == out.records) << "prefix " << n;
    ASSERT_THAT(cut.problems, ElementsAreArray(out.problems)) << "prefix " << n;
    ASSERT_FALSE(cut.state.rejected) << "prefix " << n;
  }
}

TEST(TfRecordScanner, EveryPrefixOfAnLfsPointerThenResume) {
  // Fewer than a header's bytes cannot be judged; from 12 on the verdict is the same.
  const std::string text = kLfsPointer;
  for (size_t n = 0; n <= text.size(); ++n) {
    SCOPED_TRACE("prefix " + std::to_string(n));
    ReadOut out = Scan(std::string_view(text).substr(0, n), 0, {});
    if (n < kHeaderSize) {
      EXPECT_THAT(out.problems, ElementsAre());
      EXPECT_EQ(out.position, 0u);
      EXPECT_FALSE(out.state.rejected);
    } else {
      EXPECT_THAT(out.problems, ElementsAre(Prob{ProblemKind::kNotTfRecord, 0, 0}));
      EXPECT_TRUE(out.state.rejected);
    }
    const uint64_t pos = out.position;
    Concat(&out, Scan(std::string_view(text).substr(pos), pos, out.state));
    ExpectRejectedOnce(out);
  }
}

// Regression: the pointer used to be called "text", not a Git LFS pointer, when the first
// window held fewer than 23 bytes (a FileReader chunk below 23). FileReader now reads at
// least kSniffBytes at offset 0.
TEST(TfRecordReader, GitLfsPointerIsNamedWhateverTheChunkSize) {
  TempDir dir;
  WriteFile(dir / "f", kLfsPointer);
  for (size_t chunk : {size_t{1}, size_t{12}, size_t{22}}) {
    const ReadOut out = ReadWith(dir / "f", 0, {}, chunk);
    ExpectRejectedOnce(out);
    ASSERT_EQ(out.details.size(), 1u);
    EXPECT_THAT(out.details[0], HasSubstr("Git LFS")) << "chunk " << chunk;
  }
}

#if !defined(__SANITIZE_ADDRESS__)
// Reads `path` in a process whose address space is capped at what it maps now plus 256 MiB;
// the exit code says how it went (0: the 10 records, then a stop at `at`).
[[noreturn]] void ReadUnderMemoryCap(const std::string& path, uint64_t at) {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  const rlim_t cap =
      pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) + (uint64_t{256} << 20);
  const rlimit lim{cap, cap};
  if (::setrlimit(RLIMIT_AS, &lim) != 0) std::_Exit(3);
  FileReader r(path, 0, {}, 64);
  if (!r.Open().ok()) std::_Exit(4);
  int records = 0;
  while (r.Next() == FileReader::Step::kRecord) ++records;
  std::_Exit(records == 10 && r.position() == at && r.status().ok() ? 0 : 5);
}
#endif

// Regression: a header with a valid CRC and a large but plausible length used to make
// FileReader size (and zero) its buffer for the whole record before it knew whether the file
// held it, so a 1.3 KB file cost 1 GiB of memory on every read. Refill now stops at the end
// of the file.
TEST(TfRecordReaderDeathTest, PartialHugeRecordDoesNotSizeTheBufferForIt) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "address-space limits and ASan do not mix";
#else
  std::string bytes;
  for (int i = 0; i < 10; ++i) AppendRecord(&bytes, "some record data");
  const uint64_t at = bytes.size();
  bytes += Header(uint64_t{1} << 30) + std::string(1000, '\x33');  // more than a chunk
  TempDir dir;
  WriteFile(dir / "f", bytes);
  EXPECT_EXIT(ReadUnderMemoryCap(dir / "f", at), ::testing::ExitedWithCode(0), "");
#endif
}

std::vector<std::string> CorpusEventFiles(const std::string& under) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(under, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename().native().find("tfevents") !=
                                     std::string::npos) {
      out.push_back(it->path().native());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TfRecordCorpus, GitLfsPointersAreRejected) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "no corpus beside the checkout (../shared/corpus)";
  const std::vector<std::string> files = CorpusEventFiles(corpus + "/edge-git-lfs-pointer");
  ASSERT_EQ(files.size(), 2u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const ReadOut out = ReadWith(f, 0, {});
    ExpectRejectedOnce(out);
    ASSERT_EQ(out.details.size(), 1u);
    EXPECT_THAT(out.details[0], HasSubstr("Git LFS"));
    const ReadOut again = ReadWith(f, out.position, out.state);
    EXPECT_THAT(again.records, ElementsAre());
    EXPECT_THAT(again.problems, ElementsAre());
  }
}

// ---------------------------------------------------------------------------------------
// 8. A real file cut mid-record by a killed writer.

TEST(TfRecordCorpus, TruncatedTailIsAStateNotAnError) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "no corpus beside the checkout (../shared/corpus)";
  const std::string path =
      corpus +
      "/pytorch-lightning-tensorboardx/BioinfoMachineLearning__mintomics/lightning_logs/"
      "version_32/events.out.tfevents.1704692334.multicom.eecs.missouri.edu";
  ASSERT_TRUE(fs::exists(path)) << path;
  ASSERT_EQ(fs::file_size(path), 4078u);
  for (size_t chunk : {size_t{1}, size_t{100}, size_t{1} << 20}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const ReadOut out = ReadWith(path, 0, {}, chunk);
    EXPECT_EQ(out.records.size(), 71u);
    EXPECT_THAT(out.problems, ElementsAre());
    EXPECT_EQ(out.position, 4066u);
    EXPECT_FALSE(out.state.resyncing);
    ASSERT_FALSE(out.records.empty());
    EXPECT_EQ(out.records.back().offset + Framed(out.records.back()), 4066u);
    // Reading again from there changes nothing until the writer adds bytes.
    const ReadOut again = ReadWith(path, out.position, out.state, chunk);
    EXPECT_THAT(again.records, ElementsAre());
    EXPECT_THAT(again.problems, ElementsAre());
    EXPECT_EQ(again.position, 4066u);
  }
  // The dangling header says 27 bytes follow.
  const std::string bytes = ReadFile(path);
  Scanner s(std::string_view(bytes).substr(4066), 4066, {});
  ASSERT_EQ(s.Next(), Scanner::Step::kNeedMore);
  EXPECT_EQ(s.needed(), kHeaderSize + 27 + kFooterSize);
}

// ---------------------------------------------------------------------------------------
// 9. Every event file of the corpus.

// The "| N records," that starts a manifest row's contents column, if there is one. (No
// std::regex: GCC 12 warns inside it at -O1, which the asan preset turns into an error.)
std::optional<size_t> RecordsInRow(const std::string& line) {
  const std::string_view word = " records";
  for (size_t at = line.find(word); at != std::string::npos; at = line.find(word, at + 1)) {
    size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
    if (begin == at || begin < 2 || line.compare(begin - 2, 2, "| ") != 0) continue;
    const size_t next = at + word.size();
    if (next < line.size() && (line[next] == ',' || line[next] == ';' || line[next] == '.')) {
      return std::stoul(line.substr(begin, at - begin));
    }
  }
  return std::nullopt;
}

// "N records" per event file, from the corpus manifest.
std::map<std::string, size_t> ManifestRecordCounts(const std::string& corpus) {
  std::map<std::string, size_t> out;
  std::ifstream in(corpus + "/MANIFEST.md");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("| `")) continue;
    const std::string path = line.substr(3, line.find('`', 3) - 3);
    if (path.find("tfevents") == std::string::npos) continue;
    if (const std::optional<size_t> n = RecordsInRow(line)) out[corpus + "/" + path] = *n;
  }
  return out;
}

TEST(TfRecordCorpus, EveryEventFileReadsCleanly) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "no corpus beside the checkout (../shared/corpus)";
  const std::vector<std::string> files = CorpusEventFiles(corpus);
  ASSERT_GE(files.size(), 10u);
  const std::map<std::string, size_t> manifest = ManifestRecordCounts(corpus);
  size_t checked_against_manifest = 0, total_records = 0;
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const uint64_t size = fs::file_size(f);
    const bool lfs = f.find("/edge-git-lfs-pointer/") != std::string::npos;
    const ReadOut out = ReadWith(f, 0, {});
    if (lfs) {
      ExpectRejectedOnce(out);
      continue;
    }
    EXPECT_THAT(out.problems, ElementsAre());
    EXPECT_FALSE(out.state.resyncing);
    EXPECT_FALSE(out.state.rejected);
    EXPECT_FALSE(out.records.empty());
    if (f.find("mintomics/lightning_logs/version_32/") == std::string::npos) {
      EXPECT_EQ(out.position, size);  // only the one known truncated file ends short
    }
    if (auto it = manifest.find(f); it != manifest.end()) {
      EXPECT_EQ(out.records.size(), it->second);
      ++checked_against_manifest;
    }
    total_records += out.records.size();
    // A small chunk gives the same records.
    const ReadOut chunked = ReadWith(f, 0, {}, 4093);
    EXPECT_EQ(chunked.records.size(), out.records.size());
    EXPECT_TRUE(chunked.records == out.records);
    EXPECT_EQ(chunked.position, out.position);
  }
  EXPECT_GE(checked_against_manifest, files.size() / 2);
  EXPECT_GT(total_records, 1000u);
}

// ---------------------------------------------------------------------------------------
// 10. Nothing, or too little to judge.

TEST(TfRecordReader, EmptyAndShortFilesYieldNothing) {
  TempDir dir;
  const std::string header_start = FrameRecord("0123456789").substr(0, 11);
  const std::string zeros(11, '\0');
  const std::string short_text = "version htt";  // 11 bytes of an LFS pointer
  for (const std::string& bytes : {std::string(), header_start, zeros, short_text}) {
    SCOPED_TRACE("file of " + std::to_string(bytes.size()) + " bytes");
    WriteFile(dir / "f", bytes);
    for (size_t chunk : {size_t{1}, size_t{1} << 20}) {
      const ReadOut out = ReadWith(dir / "f", 0, {}, chunk);
      EXPECT_THAT(out.records, ElementsAre());
      EXPECT_THAT(out.problems, ElementsAre());
      EXPECT_EQ(out.position, 0u);
      EXPECT_FALSE(out.state.resyncing);
      EXPECT_FALSE(out.state.rejected);
    }
    const ReadOut scanned = Scan(bytes, 0, {});
    EXPECT_THAT(scanned.records, ElementsAre());
    EXPECT_THAT(scanned.problems, ElementsAre());
    EXPECT_EQ(scanned.position, 0u);
  }
  Scanner s({}, 0, {});
  EXPECT_EQ(s.Next(), Scanner::Step::kNeedMore);
  EXPECT_EQ(s.needed(), kHeaderSize);
}

// ---------------------------------------------------------------------------------------
// 11. I/O.

TEST(TfRecordReader, MissingFileIsANotFoundErrorNamingThePath) {
  TempDir dir;
  const std::string path = dir / "no-such-dir/events.out.tfevents.1";
  FileReader r(path, 0, {});
  const Status st = r.Open();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kNotFound);  // tw::InputFile: gone is not an I/O failure
  EXPECT_THAT(st.message(), HasSubstr(path));
  EXPECT_EQ(r.Next(), FileReader::Step::kEnd);
  EXPECT_FALSE(r.status().ok());
  EXPECT_EQ(r.position(), 0u);
  EXPECT_EQ(r.bytes_read(), 0u);
}

TEST(TfRecordReader, NextWithoutOpenEndsAtOnce) {
  TempDir dir;
  WriteFile(dir / "f", FrameRecord("unread"));
  FileReader r(dir / "f", 0, {});
  EXPECT_EQ(r.Next(), FileReader::Step::kEnd);
  EXPECT_EQ(r.position(), 0u);
}

TEST(TfRecordReader, ADirectoryIsAnIoErrorNotACrash) {
  TempDir dir;
  FileReader r(dir.path(), 0, {});
  const Status st = r.Open();  // open(2) of a directory O_RDONLY succeeds; pread fails
  if (!st.ok()) {
    EXPECT_THAT(st.message(), HasSubstr(dir.path()));
    return;
  }
  EXPECT_EQ(r.Next(), FileReader::Step::kEnd);
  EXPECT_FALSE(r.status().ok());
  EXPECT_EQ(r.status().code(), Code::kIo);
  EXPECT_THAT(r.status().message(), HasSubstr(dir.path()));
}

}  // namespace
}  // namespace tw::tfrecord
