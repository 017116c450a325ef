// Shared helpers for tests: temporary directories, file bytes, the corpus location.
#pragma once

#include <cstdint>
#include <string>

namespace tw::testing {

// A fresh directory under $TMPDIR, removed (recursively) when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& bytes);
void AppendFile(const std::string& path, const std::string& bytes);

// ../shared/corpus beside the checkout, or "" when it is not there.
std::string CorpusDir();

// Runs a shell command, returns its exit status; stdout+stderr go to *output if given.
int RunCommand(const std::string& command, std::string* output = nullptr);

}  // namespace tw::testing
