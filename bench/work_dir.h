// A benchmark's working directory. Without --keep: a fresh directory under $TMPDIR, removed when
// the program ends. With --keep DIR: DIR, created if missing and kept; only the entries the
// benchmark itself writes (`owned`) are removed first, so pointing --keep at a directory that
// holds other files never deletes them.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace tw::bench {

class WorkDir {
 public:
  WorkDir(const std::string& keep, const std::string& prefix,
          std::initializer_list<const char*> owned) {
    namespace fs = std::filesystem;
    if (keep.empty()) {
      std::string tmpl = (fs::temp_directory_path() / (prefix + "-XXXXXX")).native();
      if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
      path_ = tmpl;
      remove_ = true;
      return;
    }
    path_ = keep;
    fs::create_directories(path_);
    for (const char* entry : owned) fs::remove_all(fs::path(path_) / entry);
  }
  ~WorkDir() {
    std::error_code ec;
    if (remove_) std::filesystem::remove_all(path_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool remove_ = false;
};

}  // namespace tw::bench
