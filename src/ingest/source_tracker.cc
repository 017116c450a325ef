#include "ingest/source_tracker.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/crc32c.h"
#include "base/file_io.h"
#include "ingest/csv_ingester.h"
#include "ingest/file_ingester.h"

namespace tw::ingest {

namespace {
constexpr size_t kTailBytes = 4096;
}  // namespace

std::string ReadFileHead(const std::string& path) {
  Result<InputFile> f = InputFile::Open(path);
  return f.ok() ? f->Head(kHeadBytes) : std::string();
}

bool SameFileHead(const std::string& known, const std::string& now) {
  const size_t n = std::min(known.size(), now.size());
  return known.compare(0, n, now, 0, n) == 0;
}

std::optional<int64_t> TailCrc(read::ByteSource* bytes, int64_t offset) {
  if (!bytes || offset <= 0) return std::nullopt;
  const auto n = static_cast<size_t>(std::min<int64_t>(offset, kTailBytes));
  std::string tail(n, '\0');
  Result<size_t> got = bytes->ReadAt(tail.data(), n, static_cast<uint64_t>(offset) - n);
  if (!got.ok() || *got != n) return std::nullopt;
  return crc32c::Value(tail.data(), n);
}

Result<SourceTracker::Decision> SourceTracker::Track(RunState& run, const std::string& path,
                                                     const SourceFacts& facts,
                                                     const std::string& head,
                                                     read::ByteSource* bytes,
                                                     sources::SourceKind kind) {
  Result<std::optional<store::SourceRow>> found = store_.FindSource(path);
  if (!found.ok()) return found.status();

  Decision d;
  store::SourceRow& source = d.source;
  const int64_t size = facts.size, dev = facts.dev, ino = facts.ino;
  bool moved = false;
  if (!*found && facts.local) {
    // A file we know under another path that no longer exists was moved or its run
    // directory renamed: follow it, keeping its points and offset, instead of reading it
    // again as a new file.
    Result<std::optional<store::SourceRow>> same = store_.FindSourceByInode(dev, ino);
    if (!same.ok()) return same.status();
    struct stat old_st;
    if (*same && SameFileHead((*same)->head, head)) {
      if (::stat((*same)->path.c_str(), &old_st) != 0 && errno == ENOENT) {
        found = std::move(same);
        moved = true;
      } else if (static_cast<int64_t>(old_st.st_dev) == dev &&
                 static_cast<int64_t>(old_st.st_ino) == ino &&
                 (*same)->status == "active") {
        // Another name for a file already read under its first (a symlink W&B's
        // sync_tensorboard puts in a run's files/, a hard link): read once, there.
        return d;
      }
    }
  }
  bool new_generation = false;
  std::string replaced_why = "file shrank or was replaced";
  if (*found) {
    source = **found;
    // A database is written in place all the time: its identity is its inode alone (its
    // offset is a rowid, its head and tail change with every write).
    const bool database = kind == sources::SourceKind::kMlflowDb;
    const bool same_file = source.dev == dev && source.ino == ino &&
                           (database || (size >= source.committed_offset &&
                                         SameFileHead(source.head, head)));
    if (same_file && source.status == "rejected") {
      // Reported once already. A file that grew keeping its head (a text file appended to)
      // is still the file that was rejected: reading it again would report it again at
      // every append. One rewritten since (git lfs pull, say) has a new head or inode. A
      // path refused unread (Refuse: no head) and now readable is read.
      const bool refused_unread = source.head.empty() && !head.empty();
      if (!moved && !refused_unread) return d;
      new_generation = true;
      if (refused_unread) replaced_why = "refused before and readable now";
    } else if (same_file && source.tail_crc &&
               TailCrc(bytes, source.committed_offset).value_or(*source.tail_crc) !=
                   *source.tail_crc) {
      // Rewritten in place, keeping its first bytes and at least its old length: the bytes
      // before the offset are not the ones read. Reading on would mix two versions.
      new_generation = true;
      replaced_why = "rewritten in place (the bytes before its committed offset changed)";
    } else if (same_file) {
      if (size == source.committed_offset && !source.resyncing &&
          source.status == "active" && !moved)
        return d;  // nothing new
    } else {
      new_generation = true;
    }
  }

  TW_RETURN_IF_ERROR(store_.Begin());
  auto fail = [&](Status s) -> Result<Decision> {
    store_.Rollback();
    return s;
  };
  if (moved) {
    Status s = store_.MoveSource(source.source_id, path, run.run_id());
    if (s.ok())
      s = store_.InsertRunEvent(run.run_id(), source.source_id, source.committed_offset,
                                "file_moved", std::nullopt, 0, "moved from " + source.path);
    if (!s.ok()) return fail(s);
    source.path = path;
    source.run_id = run.run_id();
  }
  if (!*found || new_generation) {
    store::SourceRow fresh;
    fresh.run_id = run.run_id();
    fresh.path = path;
    fresh.generation = *found ? source.generation + 1 : 0;
    fresh.dev = dev;
    fresh.ino = ino;
    fresh.head = head;
    if (new_generation) {
      // The file was replaced or truncated in place: its old points stay, marked superseded.
      source.status = "replaced";
      Status s = store_.UpdateSource(source);
      // A document rewritten whole, or a table rewritten in place, holds its old points
      // again: they stay, and only what is new in it is stored.
      const bool in_place = source.dev == dev && source.ino == ino;
      const bool keeps_old = kind == sources::SourceKind::kHfState ||
                             (kind == sources::SourceKind::kCsv && in_place);
      if (s.ok() && !keeps_old) s = store_.MarkSourceSuperseded(source.source_id);
      if (kind == sources::SourceKind::kCsv && in_place)
        fresh.resume_state = CsvIngester::NextGeneration(source.resume_state);
      // The old generation no longer counts: reload the run's live max steps and STARTs, or
      // the new file's first steps look like a writer going back to a checkpoint.
      if (s.ok()) s = run.Load();
      if (s.ok())
        s = store_.InsertRunEvent(run.run_id(), source.source_id, source.committed_offset,
                                  "file_replaced", std::nullopt, 0,
                                  replaced_why + "; read again from offset 0");
      if (!s.ok()) return fail(s);
    }
    Result<int64_t> id = store_.AddSource(fresh);
    if (!id.ok()) return fail(id.status());
    fresh.source_id = *id;
    source = fresh;
  }
  source.status = "active";
  d.read = true;
  return d;

}

Status SourceTracker::Refuse(RunState& run, const std::string& path, std::string_view kind,
                            const std::string& detail, Totals* totals) {
  // The identity of what is there (a FIFO, a symlink's target); stat(2) does not open it.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();  // gone already
  Result<std::optional<store::SourceRow>> found = store_.FindSource(path);
  if (!found.ok()) return found.status();
  if (*found && (*found)->status == "rejected" && (*found)->dev == static_cast<int64_t>(st.st_dev) &&
      (*found)->ino == static_cast<int64_t>(st.st_ino))
    return Status::Ok();  // reported once already
  TW_RETURN_IF_ERROR(store_.Begin());
  Status s;
  if (*found && ((*found)->status == "active" || (*found)->status == "rejected")) {
    // The file read until now is no longer at the path: its points stay, as a deleted file's.
    // (What was rejected there before is an older generation.)
    store::SourceRow old = **found;
    old.status = old.status == "active" ? "gone" : "replaced";
    s = store_.UpdateSource(old);
    if (s.ok() && old.status == "gone")
      s = store_.InsertRunEvent(old.run_id, old.source_id, old.committed_offset, "file_gone",
                                std::nullopt, 0, "something that is not read took its place");
  }
  // A rejected row, so that `status` counts it and the next sight of the same thing is
  // silent. Its head stays empty: not a byte of it was read.
  store::SourceRow row;
  row.run_id = run.run_id();
  row.path = path;
  row.generation = *found ? (*found)->generation + 1 : 0;
  row.dev = static_cast<int64_t>(st.st_dev);
  row.ino = static_cast<int64_t>(st.st_ino);
  Result<int64_t> id = s.ok() ? store_.AddSource(row) : Result<int64_t>(s);
  if (id.ok()) {
    row.source_id = *id;
    row.status = "rejected";
    row.size_seen = static_cast<int64_t>(st.st_size);
    row.error_count = 1;
    s = store_.UpdateSource(row);
    if (s.ok()) s = store_.InsertError(row.source_id, path, 0, 0, kind, detail);
  } else {
    s = id.status();
  }
  if (s.ok()) s = store_.Commit();
  if (!s.ok()) {
    store_.Rollback();
    return s;
  }
  totals->errors++;
  totals->files_rejected++;
  return Status::Ok();
}

Result<std::optional<int64_t>> SourceTracker::MarkGone(const std::string& path) {
  Result<std::optional<store::SourceRow>> found = store_.FindSource(path);
  if (!found.ok()) return found.status();
  if (!*found || (*found)->status != "active") return std::optional<int64_t>();
  store::SourceRow row = **found;
  row.status = "gone";
  TW_RETURN_IF_ERROR(store_.Begin());
  Status st = store_.UpdateSource(row);
  if (st.ok())
    st = store_.InsertRunEvent(row.run_id, row.source_id, row.committed_offset, "file_gone",
                               std::nullopt, 0, "the file was deleted or moved away");
  if (st.ok()) st = store_.Commit();
  if (!st.ok()) {
    store_.Rollback();
    return st;
  }
  return std::optional<int64_t>(row.run_id);
}

}  // namespace tw::ingest
