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
// This machine's host name, as a writer puts it in an event file's name.
std::string ThisHost();
void WriteFile(const std::string& path, const std::string& bytes);
void AppendFile(const std::string& path, const std::string& bytes);

// ../shared/corpus beside the checkout, or "" when it is not there ($TW_CORPUS_DIR overrides).
std::string CorpusDir();
// ../shared/corpus-sick (real sick runs, PATHOLOGIES.md), the same way ($TW_CORPUS_SICK_DIR).
std::string CorpusSickDir();

// `s` in single quotes for a shell command line (a ' inside becomes '\'').
std::string ShellQuote(const std::string& s);

// Runs a shell command, returns its exit status; stdout+stderr go to *output if given.
int RunCommand(const std::string& command, std::string* output = nullptr);

}  // namespace tw::testing
