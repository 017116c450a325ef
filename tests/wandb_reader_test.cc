// The `.wandb` framing reader's contract (see src/wandb/log_reader.h), tested as LevelDB's
// db/log_test.cc tests its log reader and as tfrecord_reader_test.cc tests the TFRecord one:
// files built byte by byte by a writer that follows LevelDB's log_writer.cc, cut at every
// length, corrupted at every byte, with both block origins.
#include "wandb/log_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "support/test_env.h"
#include "wandb/testing/log_writer.h"

namespace tw::wandb {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tw::testing::AppendFile;
using tw::testing::TempDir;
using tw::testing::WandbChunk;
using tw::testing::WandbFileHeader;
using tw::testing::WandbLogWriter;
using tw::testing::WandbWriterOptions;
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
  ProblemKind kind = ProblemKind::kBadChecksum;
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
  BlockOrigin origin = BlockOrigin::kUnknown;
  int version = -1;
};

void Concat(ReadOut* into, const ReadOut& more) {
  into->records.insert(into->records.end(), more.records.begin(), more.records.end());
  into->problems.insert(into->problems.end(), more.problems.begin(), more.problems.end());
  into->details.insert(into->details.end(), more.details.begin(), more.details.end());
  into->position = more.position;
  into->state = more.state;
}

// Runs a Scanner over `window` (the file's bytes from `base`) until it needs more.
ReadOut Scan(std::string_view window, uint64_t base, ScanState state, BlockOrigin origin) {
  ReadOut out;
  Scanner s(window, base, state, origin);
  // Every step consumes a chunk or ends the loop; a runaway scanner fails here.
  for (size_t guard = 0; guard <= window.size() + 4; ++guard) {
    switch (s.Next()) {
      case Scanner::Step::kRecord:
        EXPECT_GE(s.record_offset(), base);
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
        // Never past what it was given: a caller commits position() as a file offset.
        EXPECT_LE(out.position, base + window.size());
        EXPECT_GE(s.needed(), 1u);
        return out;
    }
  }
  ADD_FAILURE() << "Scanner never asked for more over a window of " << window.size();
  return out;
}

// The Scanner over a whole file in memory, with the origin a FileReader would find.
ReadOut ScanFile(std::string_view file, ScanState state = {}) {
  const BlockOrigin origin = file.size() > kBlockSize
                                 ? DetectBlockOrigin(file.substr(kBlockSize), file.size())
                                 : BlockOrigin::kUnknown;
  return Scan(file.substr(std::min<size_t>(kFileHeaderSize, file.size())), kFileHeaderSize,
              state, origin);
}

// Runs a FileReader over `path` from `offset` until kEnd.
ReadOut ReadWith(const std::string& path, uint64_t offset, ScanState state = {},
                 size_t chunk = size_t{1} << 20, bool check_size = true) {
  ReadOut out;
  FileReader r(path, offset, state, chunk);
  Status st = r.Open();
  EXPECT_TRUE(st.ok()) << st.ToString();
  // Each step returns a record or a problem of at least a chunk header: the file's size
  // bounds them (a runaway reader fails here; the tests' files are all under 7 MiB).
  const uint64_t max_steps = uint64_t{1} << 20;
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
  out.origin = r.options().origin;
  out.version = r.options().version;
  if (check_size && !r.rejected()) {
    // Never past the file's end: a caller commits it as the offset to read on from.
    EXPECT_LE(out.position, std::max<uint64_t>(fs::file_size(path), offset)) << path;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Building files.

std::string RandomBytes(std::mt19937& rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

std::vector<Rec> Expected(const WandbLogWriter& w) {
  std::vector<Rec> out;
  for (size_t i = 0; i < w.records().size(); ++i) out.push_back({w.RecordOffset(i), w.records()[i].data});
  return out;
}

// Adds records of random sizes, then one sized so that exactly `left` bytes of the current
// block remain after it (`left` < 7: trailer padding; 7: room for an empty FIRST only).
void FillBlockLeaving(WandbLogWriter& w, std::mt19937& rng, uint64_t left, size_t max_small = 500) {
  while (w.LeftInBlock() > left + 2 * kChunkHeaderSize + max_small + 100)
    w.Add(RandomBytes(rng, rng() % max_small));
  ASSERT_GE(w.LeftInBlock(), left + kChunkHeaderSize);
  w.Add(RandomBytes(rng, w.LeftInBlock() - kChunkHeaderSize - left));
  ASSERT_EQ(w.LeftInBlock(), left == 0 ? kBlockSize : left);
}

uint32_t ZlibCrc(std::string_view s) {
  return static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(s.data()), s.size()));
}

uint64_t Origin(int o) { return static_cast<uint64_t>(o); }
BlockOrigin OriginEnum(uint64_t o) { return o == 0 ? BlockOrigin::kZero : BlockOrigin::kSeven; }

// ---------------------------------------------------------------------------------------
// The writer itself, against LevelDB's layout computed by hand: the reader tests below are
// only as good as it is.

TEST(WandbLogWriter, LaysOutChunksAsLevelDbDoes) {
  WandbLogWriter w;
  EXPECT_EQ(w.bytes(), std::string(":W&B\xE1\xBE\x00", 7));
  w.Add("abc");
  ASSERT_EQ(w.bytes().size(), 7u + 7 + 3);
  // CRC-32 (zlib, unmasked) over the type byte then the payload, little-endian.
  const uint32_t crc = ZlibCrc(std::string("\x01") + "abc");
  uint32_t got;
  std::memcpy(&got, w.bytes().data() + 7, 4);
  EXPECT_EQ(got, crc);
  EXPECT_EQ(w.bytes().substr(11, 3), std::string("\x03\x00\x01", 3));
  EXPECT_EQ(w.bytes().substr(14), "abc");

  // A record that exactly fills the block: FULL, and the next record starts the next block.
  w.Add(std::string(kBlockSize - 17 - 7, 'x'));
  EXPECT_EQ(w.bytes().size(), kBlockSize);
  w.Add("y");
  EXPECT_EQ(w.chunks().back().offset, kBlockSize);
  EXPECT_EQ(w.chunks().back().type, kFull);

  // 3 bytes left: zero trailer, then the next chunk at the block start.
  w.Add(std::string(w.LeftInBlock() - 7 - 3, 'z'));
  ASSERT_EQ(w.LeftInBlock(), 3u);
  w.Add("after trailer");
  EXPECT_EQ(w.bytes().substr(2 * kBlockSize - 3, 3), std::string(3, '\0'));
  EXPECT_EQ(w.chunks().back().offset, 2 * kBlockSize);

  // Exactly 7 left: an empty FIRST, then the rest as LAST in the next block.
  w.Add(std::string(w.LeftInBlock() - 7 - 7, 'q'));
  ASSERT_EQ(w.LeftInBlock(), 7u);
  const size_t r = w.Add("spans");
  ASSERT_EQ(w.records()[r].chunk_count, 2u);
  const auto& first = w.chunks()[w.records()[r].first_chunk];
  const auto& last = w.chunks()[w.records()[r].first_chunk + 1];
  EXPECT_EQ(first.type, kFirst);
  EXPECT_EQ(first.length, 0u);
  EXPECT_EQ(first.offset, 3 * kBlockSize - 7);
  EXPECT_EQ(last.type, kLast);
  EXPECT_EQ(last.offset, 3 * kBlockSize);
  EXPECT_EQ(w.bytes().substr(3 * kBlockSize - 7, 7), WandbChunk(kFirst, ""));

  // Origin 7: the first block holds 32768 bytes after the header.
  WandbLogWriter g({.origin = 7, .version = 1});
  EXPECT_EQ(g.bytes(), std::string(":W&B\xE1\xBE\x01", 7));
  EXPECT_EQ(g.LeftInBlock(), kBlockSize);
  g.Add(std::string(kBlockSize - 7, 'g'));
  EXPECT_EQ(g.bytes().size(), kBlockSize + 7);
  g.Add(std::string(kBlockSize, 'h'));  // FIRST of 32761, LAST of 39
  EXPECT_EQ(g.chunks()[1].offset, kBlockSize + 7);
  EXPECT_EQ(g.chunks()[1].type, kFirst);
  EXPECT_EQ(g.chunks()[1].length, kBlockSize - 7);
  EXPECT_EQ(g.chunks()[2].offset, 2 * kBlockSize + 7);
  EXPECT_EQ(g.chunks()[2].type, kLast);
  EXPECT_EQ(g.chunks()[2].length, 7u);
}

TEST(WandbProblemKind, EveryKindHasADistinctName) {
  std::vector<std::string> names;
  for (ProblemKind k : {ProblemKind::kBadChecksum, ProblemKind::kBadChunk,
                        ProblemKind::kBrokenFragments, ProblemKind::kNotWandb})
    names.push_back(ProblemKindName(k));
  EXPECT_THAT(names, ElementsAre("bad_checksum", "bad_chunk", "broken_fragments", "not_wandb"));
}

// ---------------------------------------------------------------------------------------
// 1. Round trips.

TEST(WandbReader, RoundTripRandomSizesBothOriginsBothVersions) {
  for (int origin : {0, 7}) {
    for (uint8_t version : {uint8_t{0}, uint8_t{1}}) {
      SCOPED_TRACE("origin " + std::to_string(origin) + " version " + std::to_string(version));
      std::mt19937 rng(100 + origin + version);
      WandbLogWriter w({.origin = Origin(origin), .version = version});
      w.Add("");
      w.Add("x");
      for (int i = 0; i < 60; ++i) {
        const int pick = static_cast<int>(rng() % 10);
        const size_t n = pick < 6 ? rng() % 400 : pick < 9 ? rng() % 5000 : rng() % (100 * 1024 + 1);
        w.Add(RandomBytes(rng, n));
      }
      w.Add(RandomBytes(rng, 100 * 1024));
      w.Add("");
      ASSERT_GT(w.bytes().size(), 4 * kBlockSize);
      const auto want = Expected(w);

      TempDir dir;
      const std::string path = dir / "run-x.wandb";
      WriteFile(path, w.bytes());
      for (size_t chunk : {size_t{7}, size_t{333}, size_t{4096}, size_t{1} << 20}) {
        SCOPED_TRACE("chunk " + std::to_string(chunk));
        const ReadOut out = ReadWith(path, 0, {}, chunk);
        ASSERT_EQ(out.records.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(out.records[i], want[i]) << "record " << i;
        EXPECT_THAT(out.problems, ElementsAre());
        EXPECT_EQ(out.position, w.bytes().size());
        EXPECT_FALSE(out.state.resyncing);
        EXPECT_EQ(out.origin, OriginEnum(Origin(origin)));
        EXPECT_EQ(out.version, version);
      }
      const ReadOut scanned = ScanFile(w.bytes());
      EXPECT_TRUE(scanned.records == want);
      EXPECT_THAT(scanned.problems, ElementsAre());
      EXPECT_EQ(scanned.position, w.bytes().size());
    }
  }
}

// Block-boundary shapes, each read back whole and cut right at the boundary.
void ExpectReadsBack(const WandbLogWriter& w, const std::string& what) {
  SCOPED_TRACE(what);
  TempDir dir;
  const std::string path = dir / "run-b.wandb";
  WriteFile(path, w.bytes());
  const ReadOut out = ReadWith(path, 0);
  EXPECT_TRUE(out.records == Expected(w)) << out.records.size() << " of " << w.records().size();
  EXPECT_THAT(out.problems, ElementsAre());
  EXPECT_EQ(out.position, w.bytes().size());
  const ReadOut scanned = ScanFile(w.bytes());
  EXPECT_TRUE(scanned.records == Expected(w));
  EXPECT_THAT(scanned.problems, ElementsAre());
}

TEST(WandbReader, RecordsEndingExactlyAtABlockEnd) {
  for (int origin : {0, 7}) {
    std::mt19937 rng(7 + origin);
    WandbLogWriter w({.origin = Origin(origin)});
    // A FULL chunk that ends at the first block's end.
    FillBlockLeaving(w, rng, 0);
    const size_t full = w.records().size() - 1;
    ASSERT_EQ(w.records()[full].chunk_count, 1u);
    ASSERT_EQ(w.RecordEnd(full), kBlockSize + Origin(origin));
    // A FIRST, LAST record whose LAST ends at the second block's end, and a FIRST, MIDDLE,
    // LAST one whose LAST ends at the fourth's.
    w.Add(RandomBytes(rng, 100));
    const size_t two = w.Add(RandomBytes(rng, (w.LeftInBlock() - 7) + (kBlockSize - 7)));
    ASSERT_EQ(w.records()[two].chunk_count, 2u);
    EXPECT_EQ(w.RecordEnd(two), 3 * kBlockSize + Origin(origin));
    w.Add(RandomBytes(rng, 100));
    const size_t three = w.Add(RandomBytes(rng, (w.LeftInBlock() - 7) + 2 * (kBlockSize - 7)));
    ASSERT_EQ(w.records()[three].chunk_count, 3u);
    EXPECT_EQ(w.chunks()[w.records()[three].first_chunk + 1].type, kMiddle);
    EXPECT_EQ(w.RecordEnd(three), 6 * kBlockSize + Origin(origin));
    w.Add("next");
    ExpectReadsBack(w, "origin " + std::to_string(origin));

    // The file cut at the first block end: every record in it is there, none pending.
    TempDir dir;
    const std::string path = dir / "run-c.wandb";
    const uint64_t cut = w.RecordEnd(full);
    WriteFile(path, w.bytes().substr(0, cut));
    const ReadOut out = ReadWith(path, 0);
    EXPECT_EQ(out.records.size(), full + 1) << "origin " << origin;
    EXPECT_EQ(out.position, cut) << "origin " << origin;
    EXPECT_THAT(out.problems, ElementsAre());
  }
}

TEST(WandbReader, TrailerPaddingOfEveryWidth) {
  for (int origin : {0, 7}) {
    for (uint64_t pad = 1; pad <= 6; ++pad) {
      const std::string what = "origin " + std::to_string(origin) + " pad " + std::to_string(pad);
      SCOPED_TRACE(what);
      std::mt19937 rng(static_cast<unsigned>(20 + pad + origin));
      WandbLogWriter w({.origin = Origin(origin)});
      FillBlockLeaving(w, rng, pad);
      const size_t before = w.records().size() - 1;
      const uint64_t trailer = w.bytes().size();
      w.Add(RandomBytes(rng, 50));
      ASSERT_EQ(w.bytes().substr(trailer, pad), std::string(pad, '\0'));
      ASSERT_EQ(w.RecordOffset(before + 1), trailer + pad);
      FillBlockLeaving(w, rng, pad);  // and again at the second block's end
      w.Add(RandomBytes(rng, 3000));
      ExpectReadsBack(w, what);

      // Cut before, inside and after the padding: nothing is reported, the position never
      // passes the file's end, and the rest reads on from it.
      TempDir dir;
      const std::string path = dir / "run-p.wandb";
      for (uint64_t n = trailer; n <= trailer + pad; ++n) {
        SCOPED_TRACE("cut at " + std::to_string(n));
        WriteFile(path, w.bytes().substr(0, n));
        ReadOut out = ReadWith(path, 0);
        EXPECT_EQ(out.records.size(), before + 1);
        EXPECT_THAT(out.problems, ElementsAre());
        EXPECT_LE(out.position, n);
        EXPECT_GE(out.position, trailer);
        AppendFile(path, w.bytes().substr(n));
        Concat(&out, ReadWith(path, out.position, out.state));
        EXPECT_TRUE(out.records == Expected(w));
        EXPECT_THAT(out.problems, ElementsAre());
      }
    }
  }
}

TEST(WandbReader, ZeroLengthFirstChunk) {
  for (int origin : {0, 7}) {
    SCOPED_TRACE("origin " + std::to_string(origin));
    std::mt19937 rng(30 + origin);
    WandbLogWriter w({.origin = Origin(origin)});
    // At the first block boundary (for origin 7 the empty FIRST sits at 32768, where an
    // origin-0 file has its second block's first chunk), then at the second.
    for (int b = 0; b < 2; ++b) {
      FillBlockLeaving(w, rng, 7);
      const size_t r = w.Add(RandomBytes(rng, 2000));
      ASSERT_EQ(w.records()[r].chunk_count, 2u);
      const auto& first = w.chunks()[w.records()[r].first_chunk];
      EXPECT_EQ(first.type, kFirst);
      EXPECT_EQ(first.length, 0u);
      EXPECT_EQ(first.offset, (b + 1) * kBlockSize + Origin(origin) - 7);
      w.Add(RandomBytes(rng, 300));
    }
    ExpectReadsBack(w, "zero-length FIRST");
    TempDir dir;
    const std::string path = dir / "run-z.wandb";
    WriteFile(path, w.bytes());
    EXPECT_EQ(ReadWith(path, 0).origin, OriginEnum(Origin(origin)));
  }
}

TEST(WandbReader, RecordSpanningFourBlocks) {
  for (int origin : {0, 7}) {
    SCOPED_TRACE("origin " + std::to_string(origin));
    std::mt19937 rng(40 + origin);
    WandbLogWriter w({.origin = Origin(origin)});
    w.Add(RandomBytes(rng, 1000));
    const size_t big = w.Add(RandomBytes(rng, 3 * kBlockSize + 500));
    w.Add(RandomBytes(rng, 10));
    const auto& rec = w.records()[big];
    ASSERT_EQ(rec.chunk_count, 4u);
    std::vector<uint8_t> types;
    for (size_t i = 0; i < rec.chunk_count; ++i) types.push_back(w.chunks()[rec.first_chunk + i].type);
    EXPECT_THAT(types, ElementsAre(kFirst, kMiddle, kMiddle, kLast));
    ExpectReadsBack(w, "spanning");
    // From a committed offset inside the file: the big record's first chunk.
    TempDir dir;
    const std::string path = dir / "run-s.wandb";
    WriteFile(path, w.bytes());
    const ReadOut out = ReadWith(path, w.RecordOffset(big), {}, 100);
    const auto all = Expected(w);
    EXPECT_TRUE(out.records == std::vector<Rec>(all.begin() + static_cast<long>(big), all.end()));
    EXPECT_THAT(out.problems, ElementsAre());
  }
}

// ---------------------------------------------------------------------------------------
// 2. Every byte prefix, then resume.

// A file of about three blocks: small and medium records, a record spanning a boundary,
// trailer padding at one boundary and an empty FIRST at the other.
WandbLogWriter ThreeBlockFile(uint64_t origin, unsigned seed) {
  std::mt19937 rng(seed);
  WandbLogWriter w({.origin = origin});
  w.Add("");
  // Block 0 ends in an empty FIRST (for origin 7: at 32768); block 1 in 3 bytes of padding.
  FillBlockLeaving(w, rng, 7, 1500);
  w.Add(RandomBytes(rng, 900));
  w.Add(RandomBytes(rng, 40));
  FillBlockLeaving(w, rng, 3, 1500);
  w.Add(RandomBytes(rng, 200));
  w.Add(RandomBytes(rng, 1200));
  w.Add("");
  w.Add(RandomBytes(rng, 77));
  return w;
}

void EveryPrefixThenResume(uint64_t origin) {
  const WandbLogWriter w = ThreeBlockFile(origin, static_cast<unsigned>(50 + origin));
  const std::string& bytes = w.bytes();
  const auto want = Expected(w);
  ASSERT_GT(bytes.size(), 2 * kBlockSize + origin + 7);
  // The end of each record's last chunk.
  std::vector<uint64_t> ends;
  for (size_t i = 0; i < want.size(); ++i) ends.push_back(w.RecordEnd(i));

  // The file as it grows, a byte at a time; and the whole of it, which "the rest arrives"
  // reads on: a FileReader holds nothing but the offset and the ScanState between reads.
  TempDir dir;
  const std::string path = dir / "run-prefix.wandb", whole = dir / "run-whole.wandb";
  WriteFile(whole, bytes);
  WriteFile(path, "");
  const ReadOut full = ReadWith(whole, 0);
  ASSERT_TRUE(full.records == want);
  ASSERT_THAT(full.problems, ElementsAre());

  std::map<std::tuple<uint64_t, bool, uint64_t>, ReadOut> rest;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  for (uint64_t n = 0; n <= bytes.size(); ++n) {
    if (n > 0) {
      ASSERT_EQ(::write(fd, bytes.data() + n - 1, 1), 1);
    }
    ReadOut out = ReadWith(path, 0, {}, size_t{1} << 20, false);
    // What came back is the records wholly within the cut, in order, minus at most the
    // ones near the first boundary held back until the block origin can be known.
    const size_t k = out.records.size();
    ASSERT_LE(k, want.size()) << "prefix " << n;
    ASSERT_TRUE(std::equal(out.records.begin(), out.records.end(), want.begin())) << "prefix " << n;
    ASSERT_THAT(out.problems, ElementsAre()) << "prefix " << n;
    ASSERT_FALSE(out.state.resyncing) << "prefix " << n;
    ASSERT_LE(out.position, n) << "prefix " << n;
    if (k > 0) {
      ASSERT_GE(out.position, ends[k - 1]) << "prefix " << n;
    }
    if (k < want.size()) {
      ASSERT_LE(out.position, std::max<uint64_t>(want[k].offset, n < 7 ? 0 : 7)) << "prefix " << n;
      if (out.origin != BlockOrigin::kUnknown || ends[k] <= kBlockSize) {
        ASSERT_GT(ends[k], n) << "prefix " << n << ": record " << k << " is all there";
      }
    }
    if (n == bytes.size()) {
      ASSERT_EQ(k, want.size());
    }
    // The rest arrives: reading on from where the first read stopped completes it. (A read
    // depends on nothing but the file, the offset and the state: the reads of the whole file
    // from each (offset, state) are done once.)
    const auto key = std::make_tuple(out.position, out.state.resyncing, out.state.resync_from);
    auto memo = rest.find(key);
    if (memo == rest.end())
      memo = rest.emplace(key, ReadWith(whole, out.position, out.state, size_t{1} << 20, false)).first;
    Concat(&out, memo->second);
    ASSERT_TRUE(out.records == want) << "prefix " << n << ": " << out.records.size() << " records";
    ASSERT_THAT(out.problems, ElementsAre()) << "prefix " << n;
    ASSERT_EQ(out.position, bytes.size()) << "prefix " << n;
  }
  ::close(fd);
}

TEST(WandbReader, EveryPrefixThenResumeOrigin0) { EveryPrefixThenResume(0); }
TEST(WandbReader, EveryPrefixThenResumeOrigin7) { EveryPrefixThenResume(7); }

// ---------------------------------------------------------------------------------------
// 3. Single-byte corruptions, densely.

// Two whole blocks and the start of a third (so that the second boundary can settle the
// origin when the first is the damaged one), with a record spanning each boundary.
WandbLogWriter TwoBlockFile(uint64_t origin, unsigned seed) {
  std::mt19937 rng(seed);
  WandbLogWriter w({.origin = origin});
  while (w.LeftInBlock() > 2500) w.Add(RandomBytes(rng, rng() % 1200));
  w.Add(RandomBytes(rng, w.LeftInBlock() + 300));  // FIRST in block 0, LAST in block 1
  FillBlockLeaving(w, rng, 4, 1200);               // padding at the end of block 1
  w.Add(RandomBytes(rng, 150));
  w.Add(RandomBytes(rng, 60));
  return w;
}

void CorruptEachPickedByte(uint64_t origin) {
  const WandbLogWriter w = TwoBlockFile(origin, static_cast<unsigned>(60 + origin));
  const std::string& clean = w.bytes();
  const auto want = Expected(w);
  std::map<uint64_t, std::string> by_offset;
  for (const auto& r : want) by_offset[r.offset] = r.data;
  auto block_of = [&](uint64_t pos) { return pos < origin ? 0 : (pos - origin) / kBlockSize; };
  const uint64_t last_block = block_of(clean.size() - 1);
  // Which record and chunk each byte belongs to (none: padding).
  std::vector<int> chunk_at(clean.size(), -1), record_of_chunk(w.chunks().size(), -1);
  for (size_t r = 0; r < w.records().size(); ++r)
    for (size_t c = 0; c < w.records()[r].chunk_count; ++c)
      record_of_chunk[w.records()[r].first_chunk + c] = static_cast<int>(r);
  for (size_t c = 0; c < w.chunks().size(); ++c)
    for (uint64_t p = w.chunks()[c].offset; p < w.chunks()[c].end(); ++p) chunk_at[p] = static_cast<int>(c);

  TempDir dir;
  const std::string path = dir / "run-corrupt.wandb";
  WriteFile(path, clean);
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  // Which bytes to damage: every byte of every chunk header, of the padding and of the 64
  // bytes on each side of a block boundary (where the origin is decided); the first and
  // last 8 bytes of every payload; and every 11th byte besides. (Any byte of a payload
  // damages it alike, a CRC mismatch; every byte of the file takes ~4 s per origin here.)
  std::vector<bool> pick(clean.size(), false);
  for (uint64_t p = 0; p < clean.size(); p += 11) pick[p] = true;
  for (const auto& ch : w.chunks()) {
    for (uint64_t p = ch.offset; p < ch.offset + kChunkHeaderSize + std::min<uint64_t>(ch.length, 8); ++p) pick[p] = true;
    for (uint64_t p = ch.end() - std::min<uint64_t>(ch.length, 8); p < ch.end(); ++p) pick[p] = true;
  }
  for (uint64_t b = origin + kBlockSize; b < clean.size(); b += kBlockSize)
    for (uint64_t p = b - 64; p < std::min<uint64_t>(b + 64, clean.size()); ++p) pick[p] = true;
  for (uint64_t p = 0; p < clean.size(); ++p) pick[p] = pick[p] || chunk_at[p] < 0;
  int padding_bytes = 0, tried = 0;
  for (uint64_t i = kFileHeaderSize; i < clean.size(); ++i) {
    if (!pick[i]) continue;
    ++tried;
    // Single bits and whole bytes.
    const char mask = static_cast<char>(i % 3 == 0 ? 0x01 : i % 3 == 1 ? 0x80 : 0xFF);
    const char bad = static_cast<char>(clean[i] ^ mask);
    ASSERT_EQ(::pwrite(fd, &bad, 1, static_cast<off_t>(i)), 1);
    const ReadOut out = ReadWith(path, 0, {}, size_t{1} << 20, false);
    ASSERT_EQ(::pwrite(fd, clean.data() + i, 1, static_cast<off_t>(i)), 1);
    ASSERT_LE(out.position, clean.size()) << "byte " << i;

    // Nothing returned that was not written.
    for (const auto& r : out.records) {
      auto it = by_offset.find(r.offset);
      ASSERT_TRUE(it != by_offset.end() && it->second == r.data) << "byte " << i << ": " << r.offset;
    }
    const int c = chunk_at[i];
    if (c < 0) {
      // Trailer padding is not read: nothing lost, nothing to report.
      ++padding_bytes;
      ASSERT_TRUE(out.records == want) << "byte " << i;
      ASSERT_THAT(out.problems, ElementsAre()) << "byte " << i;
      continue;
    }
    const auto& chunk = w.chunks()[static_cast<size_t>(c)];
    const uint64_t damaged_block = block_of(i);
    // Every record none of whose chunks is in the damaged block, and every record that ends
    // before the damaged chunk, is still there.
    std::vector<Rec> must;
    for (size_t r = 0; r < w.records().size(); ++r) {
      bool touches = false;
      for (size_t k = 0; k < w.records()[r].chunk_count; ++k)
        touches |= block_of(w.chunks()[w.records()[r].first_chunk + k].offset) == damaged_block;
      if (!touches || w.RecordEnd(r) <= chunk.offset) must.push_back(want[r]);
    }
    for (const auto& m : must)
      ASSERT_TRUE(std::find(out.records.begin(), out.records.end(), m) != out.records.end())
          << "byte " << i << " (chunk at " << chunk.offset << "): lost the record at " << m.offset;
    // The damaged chunk's record is not returned.
    const Rec& hit = want[static_cast<size_t>(record_of_chunk[static_cast<size_t>(c)])];
    ASSERT_TRUE(std::find(out.records.begin(), out.records.end(), hit) == out.records.end()) << "byte " << i;
    if (out.problems.empty()) {
      // Only a header in the file's last, unfinished block may make the reader wait (for
      // the rest of the block) rather than report; it then stops at or before that chunk.
      ASSERT_EQ(damaged_block, last_block) << "byte " << i << ": nothing reported";
      ASSERT_LT(i, chunk.offset + kChunkHeaderSize) << "byte " << i << ": nothing reported";
      ASSERT_LE(out.position, chunk.offset) << "byte " << i;
      continue;
    }
    // The first problem is at the damaged chunk, or at the start of the record it belongs to.
    const uint64_t rec_start = hit.offset;
    ASSERT_GE(out.problems[0].offset, rec_start) << "byte " << i;
    ASSERT_LE(out.problems[0].offset, chunk.offset) << "byte " << i;
    // Reading went on to the end, unless garbage in the unfinished last block made it wait.
    if (damaged_block != last_block) {
      ASSERT_EQ(out.position, clean.size()) << "byte " << i;
    }
  }
  ::close(fd);
  EXPECT_GT(padding_bytes, 0);  // the file has padding, and corrupting it was tried
  EXPECT_GT(tried, static_cast<int>(clean.size()) / 8);
}

TEST(WandbReader, SingleByteCorruptionsOrigin0) { CorruptEachPickedByte(0); }
TEST(WandbReader, SingleByteCorruptionsOrigin7) { CorruptEachPickedByte(7); }

// A damaged chunk's fragments that come after a read's end are skipped by the next read: the
// resync state carries over.
TEST(WandbScanner, ResyncStatePersistsAcrossReads) {
  std::mt19937 rng(70);
  WandbLogWriter w;
  w.Add(RandomBytes(rng, 100));
  const size_t big = w.Add(RandomBytes(rng, 2 * kBlockSize));  // FIRST, MIDDLE, LAST
  w.Add(RandomBytes(rng, 100));
  std::string bytes = w.bytes();
  const auto& first = w.chunks()[w.records()[big].first_chunk];
  bytes[first.offset + 20] ^= 0x10;  // the FIRST's payload
  const uint64_t cut = w.chunks()[w.records()[big].first_chunk + 2].offset + 10;  // inside LAST

  const ReadOut a = ScanFile(std::string_view(bytes).substr(0, cut));
  ASSERT_THAT(a.problems, ElementsAre(Prob{ProblemKind::kBadChecksum, first.offset,
                                           first.end() - first.offset}));
  EXPECT_THAT(a.details[0], HasSubstr("fails its CRC-32"));
  ASSERT_TRUE(a.state.resyncing);
  EXPECT_EQ(a.state.resync_from, first.offset);
  ASSERT_EQ(a.records.size(), 1u);

  const BlockOrigin o = BlockOrigin::kZero;
  const ReadOut b = Scan(std::string_view(bytes).substr(a.position), a.position, a.state, o);
  EXPECT_THAT(b.problems, ElementsAre());  // the LAST is skipped silently
  ASSERT_EQ(b.records.size(), 1u);
  EXPECT_EQ(b.records[0], Expected(w)[2]);
  EXPECT_FALSE(b.state.resyncing);
  // Without the state, the orphan fragment is reported: the state is what makes the two
  // reads equal one.
  const ReadOut c = Scan(std::string_view(bytes).substr(a.position), a.position, {}, o);
  EXPECT_EQ(c.problems.size(), 1u);
  if (!c.problems.empty()) {
    EXPECT_EQ(c.problems[0].kind, ProblemKind::kBrokenFragments);
  }
}

// A record whose chunks add up to more than the reader takes is dropped as one problem and
// reading goes on after it, without gathering it whole (a chain of MIDDLE chunks as long as the
// file would otherwise be held in memory twice). One at the cap is read.
TEST(WandbFileReader, ARecordOverTheCapIsDroppedAndReadingGoesOn) {
  TempDir dir;
  constexpr size_t kCap = 100 << 10;
  tw::testing::WandbLogWriter w;
  w.Add("before");
  w.Add(std::string(kCap, 'a'));      // at the cap: read
  w.Add(std::string(3 * kCap, 'b'));  // over it: dropped
  w.Add("after");
  const std::string path = dir / "run.wandb";
  WriteFile(path, w.bytes());
  FileReader r(path, 0, {}, 16 << 10, LogOptions{.max_record = kCap});
  ASSERT_TRUE(r.Open().ok());
  std::vector<std::string> records;
  std::vector<ProblemKind> problems;
  for (int guard = 0; guard < 10000; ++guard) {
    const FileReader::Step step = r.Next();
    if (step == FileReader::Step::kEnd) break;
    if (step == FileReader::Step::kRecord) records.push_back(std::string(r.record()).substr(0, 8));
    if (step == FileReader::Step::kProblem) {
      problems.push_back(r.problem().kind);
      EXPECT_GE(r.problem().offset, w.RecordOffset(2));
      EXPECT_LT(r.problem().offset, w.RecordEnd(2));
      EXPECT_NE(r.problem().detail.find("larger than 102400 bytes"), std::string::npos) << r.problem().detail;
    }
  }
  EXPECT_EQ(records, (std::vector<std::string>{"before", std::string(8, 'a'), "after"}));
  EXPECT_EQ(problems, std::vector<ProblemKind>{ProblemKind::kRecordTooLarge});
  EXPECT_EQ(r.position(), w.bytes().size());
  EXPECT_TRUE(r.status().ok());
}

TEST(WandbScanner, FragmentsWithoutTheirRecordAreReported) {
  // A LAST with no FIRST, then a FIRST cut off by a FULL: both reported, the FULLs kept.
  std::string file = WandbFileHeader();
  file += WandbChunk(kLast, "orphan");
  const uint64_t full1 = file.size();
  file += WandbChunk(kFull, "one");
  const uint64_t first = file.size();
  file += WandbChunk(kFirst, "begun");
  const uint64_t full2 = file.size();
  file += WandbChunk(kFull, "two");
  const ReadOut out = ScanFile(file);
  EXPECT_THAT(out.records, ElementsAre(Rec{full1, "one"}, Rec{full2, "two"}));
  ASSERT_EQ(out.problems.size(), 2u);
  EXPECT_EQ(out.problems[0], (Prob{ProblemKind::kBrokenFragments, 7, full1 - 7}));
  EXPECT_EQ(out.problems[1], (Prob{ProblemKind::kBrokenFragments, first, full2 - first}));
  EXPECT_EQ(out.position, file.size());
}

TEST(WandbScanner, AChunkPastItsBlockOrOfUnknownTypeDropsTheRestOfTheBlock) {
  for (const bool bad_type : {false, true}) {
    SCOPED_TRACE(bad_type ? "unknown type" : "length past the block");
    std::mt19937 rng(80);
    WandbLogWriter w;
    w.Add(RandomBytes(rng, 100));
    const size_t hit = w.Add(RandomBytes(rng, 100));
    w.Add(RandomBytes(rng, 100));
    FillBlockLeaving(w, rng, 0);
    const size_t after = w.Add(RandomBytes(rng, 100));
    std::string bytes = w.bytes();
    const uint64_t at = w.RecordOffset(hit);
    if (bad_type) bytes[at + 6] = 9;
    else bytes[at + 5] = static_cast<char>(0xF0);  // length 0xF0xx: past the block's end
    const ReadOut out = ScanFile(bytes);
    ASSERT_EQ(out.problems.size(), 1u);
    EXPECT_EQ(out.problems[0], (Prob{ProblemKind::kBadChunk, at, kBlockSize - at}));
    EXPECT_THAT(out.details[0], HasSubstr(bad_type ? "unknown type 9" : "past its block's end"));
    ASSERT_EQ(out.records.size(), 2u);
    EXPECT_EQ(out.records[0], Expected(w)[0]);
    EXPECT_EQ(out.records[1], Expected(w)[after]);
  }
}

// A damaged header in the file's last, unfinished block: the read waits at it, never past the
// file's end, and the damage is reported once the block is whole.
TEST(WandbReader, DamageInTheUnfinishedLastBlockIsReportedWhenTheBlockIsWhole) {
  std::mt19937 rng(90);
  WandbLogWriter w;
  w.Add(RandomBytes(rng, 100));
  const size_t hit = w.Add(RandomBytes(rng, 100));
  w.Add(RandomBytes(rng, 100));
  const uint64_t grown_to = w.bytes().size();
  FillBlockLeaving(w, rng, 0);
  w.Add(RandomBytes(rng, 100));
  std::string bytes = w.bytes();
  const uint64_t at = w.RecordOffset(hit);
  bytes[at + 6] = 9;

  TempDir dir;
  const std::string path = dir / "run-tail.wandb";
  WriteFile(path, bytes.substr(0, grown_to));
  ReadOut out = ReadWith(path, 0);
  EXPECT_THAT(out.records, ElementsAre(Expected(w)[0]));
  EXPECT_LE(out.position, grown_to);
  EXPECT_GE(out.position, w.RecordEnd(0));
  const size_t problems = out.problems.size();
  for (uint64_t n = grown_to + 1000; n < bytes.size(); n += 1000) {
    WriteFile(path, bytes.substr(0, n));
    Concat(&out, ReadWith(path, out.position, out.state));
    EXPECT_LE(out.position, n);
  }
  WriteFile(path, bytes);
  Concat(&out, ReadWith(path, out.position, out.state));
  // Reported once in all, with the whole rest of the block.
  ASSERT_EQ(out.problems.size(), problems + (problems == 0 ? 1 : 0));
  EXPECT_EQ(out.problems.back().kind, ProblemKind::kBadChunk);
  EXPECT_EQ(out.problems.back().offset, at);
  EXPECT_EQ(out.records.back(), Expected(w).back());
  EXPECT_EQ(out.position, bytes.size());
}

// ---------------------------------------------------------------------------------------
// 4. The file header.

TEST(WandbHeader, ForeignFilesAreRejectedOnceWithAReason) {
  TempDir dir;
  struct Case {
    std::string name, bytes, says;
  };
  std::string v2 = WandbFileHeader(2) + WandbChunk(kFull, "x");
  const Case cases[] = {
      {"magic", std::string("PK\x03\x04 not a log at all", 22), "not a W&B transaction log"},
      {"tfevents", std::string("\x18\0\0\0\0\0\0\0\xa3\x7f\x4b\x22", 12), "not a W&B transaction log"},
      {"lfs", "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n", "Git LFS pointer"},
      {"version2", v2, "version 2 is newer than this reader knows"},
      {"short-bad", "xy", "not a W&B transaction log"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir / (c.name + ".wandb");
    WriteFile(path, c.bytes);
    FileReader r(path, 0, {});
    ASSERT_TRUE(r.Open().ok());
    ASSERT_EQ(r.Next(), FileReader::Step::kProblem);
    EXPECT_EQ(r.problem().kind, ProblemKind::kNotWandb);
    EXPECT_EQ(r.problem().offset, 0u);
    EXPECT_THAT(r.problem().detail, HasSubstr(c.says));
    EXPECT_TRUE(r.rejected());
    EXPECT_EQ(r.Next(), FileReader::Step::kEnd);
    EXPECT_EQ(r.position(), 0u);
  }
  int version = -1;
  EXPECT_TRUE(CheckFileHeader(WandbFileHeader(1), &version).ok());
  EXPECT_EQ(version, 1);
  EXPECT_TRUE(CheckFileHeader(":W&", nullptr).ok());  // only what is there is checked
  EXPECT_FALSE(CheckFileHeader(WandbFileHeader(255), nullptr).ok());
}

TEST(WandbHeader, EmptyAndShortFilesWaitQuietly) {
  TempDir dir;
  const std::string full = WandbFileHeader(1) + WandbChunk(kFull, "hello");
  for (size_t n : {size_t{0}, size_t{3}, size_t{6}, size_t{7}, size_t{10}}) {
    SCOPED_TRACE(n);
    const std::string path = dir / ("short" + std::to_string(n) + ".wandb");
    WriteFile(path, full.substr(0, n));
    ReadOut out = ReadWith(path, 0);
    EXPECT_THAT(out.records, ElementsAre());
    EXPECT_THAT(out.problems, ElementsAre());
    EXPECT_EQ(out.position, n < 7 ? 0u : 7u);
    // And the whole file from there.
    WriteFile(path, full);
    Concat(&out, ReadWith(path, out.position, out.state));
    EXPECT_THAT(out.records, ElementsAre(Rec{7, "hello"}));
    EXPECT_THAT(out.problems, ElementsAre());
  }
}

// ---------------------------------------------------------------------------------------
// 5. The block origin.

TEST(WandbOrigin, DetectedAtTheFirstBoundary) {
  for (int origin : {0, 7}) {
    SCOPED_TRACE("origin " + std::to_string(origin));
    std::mt19937 rng(110 + origin);
    WandbLogWriter w({.origin = Origin(origin)});
    while (w.bytes().size() < kBlockSize + 3000) w.Add(RandomBytes(rng, rng() % 2000));
    const std::string& b = w.bytes();
    EXPECT_EQ(DetectBlockOrigin(std::string_view(b).substr(kBlockSize), b.size()), OriginEnum(Origin(origin)));
    // Not enough of the boundary yet: unknown.
    EXPECT_EQ(DetectBlockOrigin(std::string_view(b).substr(kBlockSize, 3), kBlockSize + 3), BlockOrigin::kUnknown);
  }
  // The empty FIRST an origin-7 file has at 32768 when its first block has exactly 7 bytes
  // left is a whole chunk that checks out at origin 0's boundary: no block starts with one.
  std::mt19937 rng(120);
  WandbLogWriter w({.origin = 7});
  FillBlockLeaving(w, rng, 7);
  w.Add(RandomBytes(rng, 5000));
  ASSERT_EQ(w.chunks()[w.chunks().size() - 2].offset, kBlockSize);
  EXPECT_EQ(DetectBlockOrigin(std::string_view(w.bytes()).substr(kBlockSize), w.bytes().size()),
            BlockOrigin::kSeven);
}

TEST(WandbOrigin, AFileShorterThanTheFirstBoundaryReadsWhole) {
  // Up to a few bytes before 32768 (origin 0's boundary) or 32775 (origin 7's), whichever
  // origin wrote it: every record is returned without knowing the origin.
  for (int origin : {0, 7}) {
    for (uint64_t left : {uint64_t{0}, uint64_t{2}, uint64_t{6}, uint64_t{7}, uint64_t{12}, uint64_t{40}}) {
      SCOPED_TRACE("origin " + std::to_string(origin) + ", " + std::to_string(left) + " bytes left");
      std::mt19937 rng(static_cast<unsigned>(130 + left));
      WandbLogWriter w({.origin = Origin(origin)});
      FillBlockLeaving(w, rng, left);
      TempDir dir;
      const std::string path = dir / "run-short.wandb";
      WriteFile(path, w.bytes());
      const ReadOut out = ReadWith(path, 0);
      EXPECT_TRUE(out.records == Expected(w)) << out.records.size() << " of " << w.records().size();
      EXPECT_THAT(out.problems, ElementsAre());
      EXPECT_EQ(out.position, w.bytes().size());
    }
  }
}

TEST(WandbOrigin, ADamagedFirstBoundaryIsSettledByTheNextOne) {
  for (int origin : {0, 7}) {
    SCOPED_TRACE("origin " + std::to_string(origin));
    std::mt19937 rng(140 + origin);
    WandbLogWriter w({.origin = Origin(origin)});
    while (w.bytes().size() < 2 * kBlockSize + 5000) w.Add(RandomBytes(rng, rng() % 3000));
    std::string bytes = w.bytes();
    // The chunk at the first boundary: its payload damaged.
    const uint64_t at = kBlockSize + Origin(origin);
    size_t c = 0;
    while (w.chunks()[c].offset != at) ++c;
    bytes[at + 7 + w.chunks()[c].length / 2] ^= 1;
    TempDir dir;
    const std::string path = dir / "run-d.wandb";
    WriteFile(path, bytes);
    const ReadOut out = ReadWith(path, 0);
    EXPECT_EQ(out.origin, OriginEnum(Origin(origin)));
    ASSERT_FALSE(out.problems.empty());
    EXPECT_EQ(out.problems[0].offset, at);
    EXPECT_EQ(out.problems[0].kind, ProblemKind::kBadChecksum);
    // Everything in the third block is read.
    EXPECT_EQ(out.records.back(), Expected(w).back());
    EXPECT_EQ(out.position, bytes.size());
  }
}

}  // namespace
}  // namespace tw::wandb
