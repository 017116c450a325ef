// tw-events-from-jsonl: turns one run's scalar log, written as JSON lines by
// tools/cpu_runs/make_cpu_runs.py, into a TensorBoard event file, using the project's test writer.
//
//   tw-events-from-jsonl [--tf2] [--pid N] IN.jsonl OUT_DIR
//
// Each input line is a flat object {"tag": "...", "step": N, "wall_time": T, "value": V}, where
// V is a number or one of the strings "nan", "inf", "-inf" (JSON has no literal for them).
// The file gets a FileVersionEvent (torch source metadata, or none with --tf2) then one scalar
// event per line, in input order: SimpleScalarEvent (PyTorch/tensorboardX style) or, with --tf2,
// a TF2 tensor scalar with the plugin metadata on a tag's first value (Keras style). The name is
// events.out.tfevents.<first wall time>.cpu.<pid>.0 (".v2" with --tf2). Errors go to stderr
// with exit status 1.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/event_writer.h"

namespace {

struct Point {
  std::string tag;
  int64_t step = 0;
  double wall_time = 0;
  double value = 0;
};

// A minimal reader of one flat JSON object with string and number values.
class LineParser {
 public:
  explicit LineParser(const std::string& s) : s_(s) {}

  std::map<std::string, std::string> Parse(std::set<std::string>* quoted) {
    std::map<std::string, std::string> out;
    Skip();
    Expect('{');
    Skip();
    if (Peek() == '}') return out;
    for (;;) {
      Skip();
      std::string key = String();
      Skip();
      Expect(':');
      Skip();
      if (Peek() == '"') {
        out[key] = String();
        quoted->insert(key);
      } else {
        size_t b = i_;
        while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ' ') ++i_;
        out[key] = s_.substr(b, i_ - b);
      }
      Skip();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      Expect('}');
      return out;
    }
  }

 private:
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void Skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  void Expect(char c) {
    if (Peek() != c) throw std::runtime_error(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string String() {
    Expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
        ++i_;
        char e = s_[i_];
        out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
      } else {
        out.push_back(s_[i_]);
      }
      ++i_;
    }
    Expect('"');
    return out;
  }

  const std::string& s_;
  size_t i_ = 0;
};

double ParseValue(const std::string& v) {
  if (v == "nan" || v == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (v == "inf" || v == "Infinity") return std::numeric_limits<double>::infinity();
  if (v == "-inf" || v == "-Infinity") return -std::numeric_limits<double>::infinity();
  size_t used = 0;
  double d = std::stod(v, &used);
  if (used != v.size()) throw std::runtime_error("bad number '" + v + "'");
  return d;
}

std::vector<Point> ReadPoints(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<Point> points;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      std::set<std::string> quoted;
      auto obj = LineParser(line).Parse(&quoted);
      Point p;
      p.tag = obj.at("tag");
      p.step = std::stoll(obj.at("step"));
      p.wall_time = std::stod(obj.at("wall_time"));
      p.value = ParseValue(obj.at("value"));
      points.push_back(p);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  return points;
}

}  // namespace

int main(int argc, char** argv) {
  bool tf2 = false;
  int pid = 4242;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--tf2") {
      tf2 = true;
    } else if (a == "--pid" && i + 1 < argc) {
      pid = std::atoi(argv[++i]);
    } else {
      args.push_back(a);
    }
  }
  if (args.size() != 2) {
    std::cerr << "usage: tw-events-from-jsonl [--tf2] [--pid N] IN.jsonl OUT_DIR\n";
    return 1;
  }
  try {
    std::vector<Point> points = ReadPoints(args[0]);
    double t0 = points.empty() ? 1.7e9 : points.front().wall_time;
    std::string name = tw::testing::EventFileName(static_cast<int64_t>(t0), "cpu", pid, 0);
    if (tf2) name += ".v2";
    tw::testing::EventFileWriter writer(args[1] + "/" + name);
    writer.Add(tw::testing::FileVersionEvent(t0, tf2 ? "" : tw::testing::kTorchSourceWriter));
    std::set<std::string> seen;
    for (const Point& p : points) {
      if (tf2) {
        bool first = seen.insert(p.tag).second;
        writer.Add(tw::testing::Tf2ScalarEvent(p.tag, p.step, p.wall_time,
                                               static_cast<float>(p.value), first));
      } else {
        writer.Add(tw::testing::SimpleScalarEvent(p.tag, p.step, p.wall_time,
                                                  static_cast<float>(p.value)));
      }
    }
    writer.Flush();
    std::cout << writer.path() << " " << points.size() << " points\n";
  } catch (const std::exception& e) {
    std::cerr << "tw-events-from-jsonl: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
