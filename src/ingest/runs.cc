#include "ingest/runs.h"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "ingest/file_ingester.h"

namespace tw::ingest {

Result<int64_t> ResolveRun(store::Store& store, const std::string& root, const std::string& name,
                           const std::vector<std::string>& files) {
  Result<std::optional<int64_t>> found = store.FindRun(root, name);
  if (!found.ok()) return found.status();
  if (*found) return **found;
  for (const auto& f : files) {
    struct stat st;
    if (::stat(f.c_str(), &st) != 0) continue;
    Result<std::optional<store::SourceRow>> known = store.FindSourceByInode(
        static_cast<int64_t>(st.st_dev), static_cast<int64_t>(st.st_ino));
    if (!known.ok()) return known.status();
    if (!*known || !SameFileHead((*known)->head, ReadFileHead(f))) continue;
    const std::string old_dir = std::filesystem::path((*known)->path).parent_path().native();
    struct stat dir_st;
    if (::stat(old_dir.c_str(), &dir_st) == 0 || errno != ENOENT) continue;
    // The directory it lived in is gone and here is its file: the run was renamed.
    TW_RETURN_IF_ERROR(store.Begin());
    Status s = store.RenameRun((*known)->run_id, name);
    if (s.ok()) s = store.Commit();
    if (!s.ok()) {
      store.Rollback();
      return s;
    }
    return (*known)->run_id;
  }
  TW_RETURN_IF_ERROR(store.Begin());
  Result<int64_t> id = store.EnsureRun(root, name);
  if (!id.ok() || !store.Commit().ok()) {
    store.Rollback();
    return id.ok() ? Internal("commit failed creating run " + name) : id.status();
  }
  return id;
}

}  // namespace tw::ingest
