// What every record reader says about a file besides its records: one list of problems for
// all formats, and the state a scan carries from one read of a file to the next.
#pragma once

#include <cstdint>
#include <string>

namespace tw::read {

// One name space for every format's damage, so that the ingester records any of them alike
// (the name is what ingest_errors.kind stores and docs/errors.md lists).
enum class ProblemKind {
  // TFRecord (tfrecord/reader.h)
  kBadLengthCrc,       // header CRC mismatch; resync follows
  kImplausibleLength,  // header CRC fine but length > the 2 GiB limit; resync follows
  kBadDataCrc,         // record skipped
  kResynced,           // where the scan after a bad header found the next valid record
  kNotTfRecord,        // the file is not TFRecord at all; nothing more is read from it
  // W&B transaction log (wandb/log_reader.h)
  kBadChecksum,        // a chunk's CRC does not match; it (and its record) is dropped
  kBadChunk,           // a length past the block's end or an unknown type; ditto
  kBrokenFragments,    // a MIDDLE/LAST without a FIRST, or a FIRST cut off by a new record
  kNotWandb,           // the file is not a W&B transaction log; nothing more is read
  kRecordTooLarge,     // a record's chunks add up to more than the reader takes; dropped
  // Lines (read/lines.h)
  kLineTooLong,        // a line longer than the limit; skipped to its newline
};
const char* ProblemKindName(ProblemKind kind);
// Whether the problem says the whole file is of another format: it is not read again (at
// this generation of the file).
bool RejectsFile(ProblemKind kind);

struct Problem {
  ProblemKind kind = ProblemKind::kBadDataCrc;
  uint64_t offset = 0;  // file offset where the damaged bytes start
  uint64_t length = 0;  // bytes dropped (0 when not yet known)
  std::string detail;
};

// What must survive between two reads of one file besides the offset, for every format: whether
// the scan is skipping damage (looking for the next record it can trust) and since where. The
// ingester commits it with the offset, so a restart resumes the skip exactly.
struct ScanState {
  bool resyncing = false;
  uint64_t resync_from = 0;  // where the damage began
  bool rejected = false;     // the file is of another format; never read again
};

// What a scanner says after each step over its window of bytes.
enum class ScanStep {
  kRecord,    // record()/record_offset() are valid until the next call
  kProblem,   // problem() says what; call again to continue
  kNeedMore,  // everything before position() is consumed; at least needed() bytes from
              // position() on are required to say more
};

}  // namespace tw::read
