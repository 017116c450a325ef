#include "read/problem.h"

namespace tw::read {

const char* ProblemKindName(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::kBadLengthCrc: return "bad_length_crc";
    case ProblemKind::kImplausibleLength: return "implausible_length";
    case ProblemKind::kBadDataCrc: return "bad_data_crc";
    case ProblemKind::kResynced: return "resynced";
    case ProblemKind::kNotTfRecord: return "not_tfrecord";
    case ProblemKind::kBadChecksum: return "bad_checksum";
    case ProblemKind::kBadChunk: return "bad_chunk";
    case ProblemKind::kBrokenFragments: return "broken_fragments";
    case ProblemKind::kNotWandb: return "not_wandb";
    case ProblemKind::kRecordTooLarge: return "record_too_large";
    case ProblemKind::kLineTooLong: return "line_too_long";
  }
  return "unknown";
}

bool RejectsFile(ProblemKind kind) {
  return kind == ProblemKind::kNotTfRecord || kind == ProblemKind::kNotWandb;
}

}  // namespace tw::read
