// One windowed reader for every record format. A format supplies only its Scanner, which cuts
// records out of a window of bytes held in memory and says when it needs more; FileReader
// feeds it from a file, from a committed offset to the file's current end. Scanners know
// nothing of files, so they are tested byte by byte and fuzzed.
//
// What every FileReader guarantees, whatever the format:
//   - a record is returned only when every byte of it is present and checks out;
//   - a record not all there yet ends the read ("truncated" is a state, not an error):
//     position() stays at its first byte, so reading again after the file grows yields exactly
//     what one full read would have;
//   - position() never passes the file's end (it is committed as the offset to read on from),
//     and with state() it is a valid resume point after every step;
//   - the buffer is never sized past the file's end, whatever a damaged length announces;
//   - one call never passes more than about a chunk of bytes without returning (kYield), so a
//     caller can commit, give other files their turn and stop: a 16 GiB file of garbage is a
//     long series of short turns, not one long one;
//   - a file of another format is reported once (a problem that RejectsFile) and not read on;
//   - the file is open only while it is read (no descriptor stays open per watched file);
//   - the bytes may come from elsewhere than a local file (Use: an object in an object store,
//     read::ByteSource), with every guarantee above unchanged.
//
// A Scanner (see ScannerDefaults for the hooks it may leave out):
//   Scanner(std::string_view window, uint64_t base, ScanState state, const Options& options);
//   ScanStep Next();
//   record(), record_offset(), problem(), position(), needed(), state(), options()
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/file_io.h"
#include "base/status.h"
#include "read/byte_source.h"
#include "read/problem.h"

namespace tw::read {

// The file as a format's Open hook sees it: its size and bytes at an offset.
class FileProbe {
 public:
  FileProbe(ByteSource& src, uint64_t size) : src_(src), size_(size) {}
  uint64_t size() const { return size_; }
  // Up to n bytes at `at` (fewer where the file ends).
  Result<std::string> Read(uint64_t at, size_t n) const { return ReadString(src_, at, n); }

 private:
  ByteSource& src_;
  uint64_t size_;
};

// What a format's Open hook decided before any record is scanned.
struct Opening {
  std::optional<Problem> reject;  // the file is of another format: reported, nothing read
  bool wait = false;              // too short to say yet (a header still being written)
};

// The hooks a Scanner may leave to these defaults (by deriving from ScannerDefaults).
struct ScannerDefaults {
  struct Options {};  // format settings that outlive a window (W&B's block origin)
  // The lowest offset a scan starts from (a file header before it is checked by Open).
  static constexpr uint64_t kFirstOffset = 0;
  // At least this much of the file's start is in the first window (to name a foreign file).
  static constexpr size_t kFirstWindow = 0;
  // Whether a window that must grow at least doubles (a format whose records are scanned
  // again from their start after each refill, like W&B's gathered chunks) or grows by a chunk
  // (the window stays within a chunk of what the scanner asked for: an over-long line is
  // given up at its limit, not at twice it).
  static constexpr bool kGeometricWindow = false;
  // Called once the file is open, before the first window: checks a header, learns Options.
  template <typename Opts>
  static Result<Opening> Open(const FileProbe&, Opts*) { return Opening{}; }
  // Whether the scan cannot go on until the file itself changes (a rejected file; a W&B log
  // whose block origin its next boundary will tell).
  bool stalled() const { return false; }
};

template <typename Scanner>
class FileReader {
 public:
  using Options = typename Scanner::Options;
  // kYield: about a chunk of bytes was passed (damage, padding, blank lines) with nothing to
  // return; position() and state() are a valid resume point. Call again to go on.
  enum class Step { kRecord, kProblem, kYield, kEnd };

  FileReader(std::string path, uint64_t offset, ScanState state, size_t chunk = 1 << 20,
             Options options = {})
      : path_(std::move(path)),
        chunk_(chunk),
        start_offset_(offset),
        buf_base_(std::max(offset, Scanner::kFirstOffset)),
        options_(options),
        scanner_({}, buf_base_, state, options_) {}
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads `file` (already opened and checked by the caller) instead of opening the path
  // again: what was checked is what is read. Open() must still be called.
  void Adopt(InputFile file) {
    owned_ = std::make_unique<FdSource>(file.Release(), path_);
    src_ = owned_.get();
  }
  // Reads `source` (the caller's, outliving this reader): an object of an object store.
  void Use(ByteSource& source) {
    owned_.reset();
    src_ = &source;
  }
  // Opens the file (InputFile: never blocks, regular files only) and lets the format look
  // at it. An unreadable file is an error; a foreign one is reported by the first Next().
  Status Open() {
    if (!src_) {
      Result<InputFile> f = InputFile::Open(path_);
      if (!f.ok()) return status_ = f.status();
      Adopt(std::move(*f));
    }
    Result<uint64_t> size = src_->Size();
    if (!size.ok()) return status_ = size.status();
    Result<Opening> opening = Scanner::Open(FileProbe(*src_, *size), &options_);
    if (!opening.ok()) return status_ = opening.status();
    if (opening->reject) {
      rejected_ = true;
      pending_ = std::move(*opening->reject);
    }
    held_ = rejected_ || opening->wait;
    scanner_ = Scanner({}, buf_base_, scanner_.state(), options_);
    return status_;
  }
  // kEnd: every complete record up to the end of the file has been returned; position() is
  // where the next read must start. I/O errors end the read too: check status().
  Step Next() {
    if (pending_) {
      problem_ = std::move(*pending_);
      pending_.reset();
      return Step::kProblem;
    }
    if (!src_ || !status_.ok() || held_) return Step::kEnd;
    const uint64_t from = scanner_.position();
    for (;;) {
      switch (scanner_.Next()) {
        case ScanStep::kRecord: return Step::kRecord;
        case ScanStep::kProblem:
          if (RejectsFile(scanner_.problem().kind)) rejected_ = true;
          return Step::kProblem;
        case ScanStep::kNeedMore:
          if (scanner_.stalled()) return Step::kEnd;
          if (scanner_.position() - from >= chunk_) return Step::kYield;
          if (!Refill(scanner_.needed())) return Step::kEnd;
      }
    }
  }

  std::string_view record() const { return scanner_.record(); }
  uint64_t record_offset() const { return scanner_.record_offset(); }
  const Problem& problem() const { return problem_ ? *problem_ : scanner_.problem(); }
  uint64_t position() const { return held_ ? start_offset_ : scanner_.position(); }
  const ScanState& state() const { return scanner_.state(); }
  const Status& status() const { return status_; }
  uint64_t bytes_read() const { return bytes_read_; }
  bool rejected() const { return rejected_; }
  // The format's settings as learned so far (W&B: version and block origin).
  Options options() const { return scanner_.options(); }

 private:
  // Keeps the bytes from position() on and reads at least `needed` more from there, and a
  // chunk more (or, kGeometricWindow, as much again). False when the file has nothing more
  // to give.
  bool Refill(uint64_t needed) {
    options_ = scanner_.options();  // what the scanner learned (W&B: the block origin)
    const uint64_t keep_from = std::min<uint64_t>(scanner_.position() - buf_base_, buf_len_);
    const size_t keep = buf_len_ - keep_from;
    if (keep_from > 0 && keep > 0) std::memmove(buf_.data(), buf_.data() + keep_from, keep);
    buf_base_ += keep_from;
    buf_len_ = keep;
    Result<uint64_t> size = src_->Size();
    if (!size.ok()) {
      status_ = size.status();
      return false;
    }
    const uint64_t available = *size > buf_base_ ? *size - buf_base_ : 0;
    if (needed > available || available <= buf_len_) return false;
    if (buf_base_ == Scanner::kFirstOffset) needed = std::max<uint64_t>(needed, Scanner::kFirstWindow);
    const uint64_t grown = Scanner::kGeometricWindow ? std::max<uint64_t>(keep + chunk_, 2 * keep)
                                                     : keep + chunk_;
    const uint64_t want = std::min<uint64_t>(std::max<uint64_t>(needed, grown), available);
    if (buf_.size() < want) buf_.resize(want);
    Result<size_t> n = src_->ReadAt(buf_.data() + buf_len_, want - buf_len_, buf_base_ + buf_len_);
    if (!n.ok()) {
      status_ = n.status();
      return false;
    }
    buf_len_ += *n;
    bytes_read_ += *n;
    scanner_ = Scanner(std::string_view(buf_.data(), buf_len_), buf_base_, scanner_.state(), options_);
    return *n > 0;
  }

  std::string path_;
  std::unique_ptr<ByteSource> owned_;  // a local file this reader opened or adopted
  ByteSource* src_ = nullptr;          // what is read: owned_, or the caller's (Use)
  size_t chunk_;
  uint64_t start_offset_;
  std::string buf_;
  size_t buf_len_ = 0;
  uint64_t buf_base_;
  uint64_t bytes_read_ = 0;
  bool rejected_ = false;
  bool held_ = false;  // rejected or waiting at Open: nothing is scanned, position() stays
  std::optional<Problem> pending_;  // Open's rejection, reported by the first Next()
  std::optional<Problem> problem_;  // ... and kept for problem() after that
  Options options_;
  Scanner scanner_;
  Status status_;
};

}  // namespace tw::read
