// tw-events-from-jsonl: turns one run's scalar log, written as JSON lines by
// tools/cpu_runs/make_cpu_runs.py, into a TensorBoard event file, using the project's test writer.
//
//   tw-events-from-jsonl [--tf2] [--pid N] [--hparams FILE.json] IN.jsonl OUT_DIR
//
// Each input line is a flat object {"tag": "...", "step": N, "wall_time": T, "value": V}, where
// V is a number or one of the strings "nan", "inf", "-inf" (JSON has no literal for them).
// The file gets a FileVersionEvent (torch source metadata, or none with --tf2) then one scalar
// event per line, in input order: SimpleScalarEvent (PyTorch/tensorboardX style) or, with --tf2,
// a TF2 tensor scalar with the plugin metadata on a tag's first value (Keras style). The name is
// events.out.tfevents.<first wall time>.cpu.<pid>.0 (".v2" with --tf2). --hparams adds the
// hparams plugin's experiment and session start events after the FileVersionEvent, as PyTorch's
// add_hparams writes them, from a flat JSON object (numbers, strings, booleans). Errors go to stderr
// with exit status 1.
//
// A line may carry a histogram instead of "value": "samples": [x, ...] is written as a legacy
// HistogramProto over TensorFlow's default bucket limits (what torch's add_histogram writes), and
// "buckets": [[left, right, count], ...] as a TF2 histogram tensor (tf.summary.histogram, with the
// plugin metadata on the tag's first value).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "support/event_writer.h"

namespace {

struct Point {
  std::string tag;
  int64_t step = 0;
  double wall_time = 0;
  double value = 0;
  std::vector<double> samples;                 // a legacy histogram's values
  std::vector<std::array<double, 3>> buckets;  // a TF2 histogram's (left, right, count)
  bool histogram = false;
};

// TensorFlow's default histogram bucket limits (torch.utils.tensorboard's default_bins): +-1e-12
// growing by 1.1 to 1e20, and 0 between.
std::vector<double> DefaultBucketLimits() {
  std::vector<double> pos;
  for (double v = 1e-12; v < 1e20; v *= 1.1) pos.push_back(v);
  std::vector<double> limits;
  for (auto it = pos.rbegin(); it != pos.rend(); ++it) limits.push_back(-*it);
  limits.push_back(0);
  limits.insert(limits.end(), pos.begin(), pos.end());
  limits.push_back(std::numeric_limits<double>::max());
  return limits;
}

// A value: a number, or "nan", "inf", "-inf" (JSON has no literal for them).
double ValueOf(const boost::json::value& v) {
  if (v.is_string()) {
    const boost::json::string& t = v.get_string();
    if (t == "nan" || t == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (t == "inf" || t == "Infinity") return std::numeric_limits<double>::infinity();
    if (t == "-inf" || t == "-Infinity") return -std::numeric_limits<double>::infinity();
    throw std::runtime_error("bad value \"" + std::string(t) + "\"");
  }
  return boost::json::value_to<double>(v);
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
      const boost::json::object obj = boost::json::parse(line).as_object();
      Point p;
      p.tag = std::string(obj.at("tag").as_string());
      p.step = boost::json::value_to<int64_t>(obj.at("step"));
      p.wall_time = boost::json::value_to<double>(obj.at("wall_time"));
      if (const boost::json::value* v = obj.if_contains("samples")) {
        p.histogram = true;
        for (const auto& x : v->as_array()) p.samples.push_back(ValueOf(x));
      } else if (const boost::json::value* b = obj.if_contains("buckets")) {
        p.histogram = true;
        for (const auto& row : b->as_array()) {
          const boost::json::array& r = row.as_array();
          p.buckets.push_back({ValueOf(r.at(0)), ValueOf(r.at(1)), ValueOf(r.at(2))});
        }
      } else {
        p.value = ValueOf(obj.at("value"));
      }
      points.push_back(p);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  return points;
}

// A flat JSON object of hyperparameters, in the file's key order.
std::vector<std::pair<std::string, tw::testing::HParamValue>> ReadHParams(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::pair<std::string, tw::testing::HParamValue>> out;
  const boost::json::value doc = boost::json::parse(text);
  for (const auto& kv : doc.as_object()) {
    const boost::json::value& v = kv.value();
    if (v.is_bool()) out.emplace_back(kv.key(), v.as_bool());
    else if (v.is_string()) out.emplace_back(kv.key(), std::string(v.as_string()));
    else if (v.is_number()) out.emplace_back(kv.key(), boost::json::value_to<double>(v));
    else throw std::runtime_error(path + ": hparam " + std::string(kv.key()) + " is not a number, string or bool");
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool tf2 = false;
  int pid = 4242;
  std::string hparams_path;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--tf2") {
      tf2 = true;
    } else if (a == "--hparams" && i + 1 < argc) {
      hparams_path = argv[++i];
    } else if (a == "--pid" && i + 1 < argc) {
      pid = std::atoi(argv[++i]);
    } else {
      args.push_back(a);
    }
  }
  if (args.size() != 2) {
    std::cerr << "usage: tw-events-from-jsonl [--tf2] [--pid N] [--hparams FILE.json] IN.jsonl OUT_DIR\n";
    return 1;
  }
  try {
    std::vector<Point> points = ReadPoints(args[0]);
    double t0 = points.empty() ? 1.7e9 : points.front().wall_time;
    std::string name = tw::testing::EventFileName(static_cast<int64_t>(t0), "cpu", pid, 0);
    if (tf2) name += ".v2";
    tw::testing::EventFileWriter writer(args[1] + "/" + name);
    writer.Add(tw::testing::FileVersionEvent(t0, tf2 ? "" : tw::testing::kTorchSourceWriter));
    if (!hparams_path.empty()) {
      writer.Add(tw::testing::HParamsExperimentEvent(t0));
      writer.Add(tw::testing::HParamsStartEvent(t0, ReadHParams(hparams_path), tf2));
    }
    std::set<std::string> seen;
    const std::vector<double> limits = DefaultBucketLimits();
    for (const Point& p : points) {
      if (p.histogram && p.buckets.empty()) {
        // As torch's make_histogram does, only the limits from just below the smallest sample to
        // just above the largest are written.
        const auto [lo, hi] = std::minmax_element(p.samples.begin(), p.samples.end());
        auto first = p.samples.empty() ? limits.begin() : std::upper_bound(limits.begin(), limits.end(), *lo);
        auto last = p.samples.empty() ? limits.end() : std::upper_bound(limits.begin(), limits.end(), *hi);
        if (first != limits.begin()) --first;
        if (last != limits.end()) ++last;
        writer.Add(tw::testing::HistogramEvent(p.tag, p.step, p.wall_time, p.samples, {first, last}));
      } else if (p.histogram) {
        bool first = seen.insert(p.tag).second;
        writer.Add(tw::testing::Tf2HistogramEvent(p.tag, p.step, p.wall_time, p.buckets, first));
      } else if (tf2) {
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
