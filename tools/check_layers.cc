// check_layers SRC TABLE [STAMP]: the include half of the layering check (cmake/layers.cmake).
// TABLE has one line per folder of SRC, "folder:allowed,folders" (its own among them). Every
// #include "x/..." in a file under SRC/folder must name an allowed folder, and every folder
// must be in the table (a new one has to be given its place). Prints each offence as
// "src/file:line: ..." and exits 1; on success touches STAMP, if given, and exits 0.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: check_layers SRC TABLE [STAMP]\n";
    return 2;
  }
  const fs::path src = argv[1];
  std::map<std::string, std::set<std::string>> allowed;
  std::ifstream table(argv[2]);
  if (!table) {
    std::cerr << argv[2] << ": cannot read the layer table\n";
    return 2;
  }
  for (std::string line; std::getline(table, line);) {
    const size_t colon = line.find(':');
    if (line.empty() || colon == std::string::npos) continue;
    std::set<std::string>& to = allowed[line.substr(0, colon)];
    std::stringstream rest(line.substr(colon + 1));
    for (std::string folder; std::getline(rest, folder, ',');) to.insert(folder);
  }
  const std::regex include(R"(^\s*#\s*include\s*"([^/"]+)/)");
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && (it->path().extension() == ".h" || it->path().extension() == ".cc"))
      files.push_back(it->path());
  if (ec) {
    std::cerr << src.native() << ": cannot list: " << ec.message() << "\n";
    return 2;
  }
  std::sort(files.begin(), files.end());
  int offences = 0;
  for (const fs::path& file : files) {
    const fs::path rel = file.lexically_relative(src);
    const std::string folder = rel.begin()->native();
    const std::string name = "src/" + rel.native();
    auto stage = allowed.find(folder);
    if (stage == allowed.end()) {
      std::cerr << name << ": folder '" << folder << "' is in no stage of cmake/layers.cmake\n";
      ++offences;
      continue;
    }
    std::ifstream in(file);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      std::smatch m;
      if (!std::regex_search(line, m, include) || stage->second.count(m[1].str())) continue;
      std::string may;
      for (const std::string& a : stage->second) may += (may.empty() ? "" : ", ") + a;
      std::cerr << name << ":" << n << ": '" << folder << "' includes '" << m[1].str()
                << "/', a stage above it or beside it (it may use: " << may << ")\n";
      ++offences;
    }
  }
  if (offences) {
    std::cerr << offences << " back-edge(s) in src/: see cmake/layers.cmake for the stages\n";
    return 1;
  }
  if (argc > 3) std::ofstream(argv[3]).put('\n');
  return 0;
}
