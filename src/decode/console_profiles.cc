#include "decode/console_profiles.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/regex.hpp>
#include <toml++/toml.h>

#include "base/toml_guard.h"

namespace tw::decode {

namespace {

constexpr std::string_view kNumber =
    R"((?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)))";
// Longer segments are not read: a metrics line is short, and a regex's time grows with its
// input (a runaway progress bar can be megabytes without a newline).
constexpr size_t kMaxSegment = 16 << 10;
constexpr size_t kMaxProfileBytes = 256 << 10;

std::string Expand(std::string_view pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size();) {
    if (pattern.substr(i).starts_with("{number}")) {
      out += kNumber;
      i += 8;
    } else {
      out += pattern[i++];
    }
  }
  return out;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<double> ParseConsoleNumber(std::string_view s) {
  if (s.starts_with('+')) s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  // Out of range ("1e999") is what Python prints as inf; from_chars leaves v alone then.
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size())
    return s.starts_with('-') ? -HUGE_VAL : HUGE_VAL;
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string StripAnsi(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\x1b') {
      out += text[i];
      continue;
    }
    // ESC [ parameters... final byte (0x40-0x7e): colours, bold, cursor moves.
    if (i + 1 < text.size() && text[i + 1] == '[') {
      size_t j = i + 2;
      while (j < text.size() && (static_cast<unsigned char>(text[j]) < 0x40 ||
                                 static_cast<unsigned char>(text[j]) > 0x7e))
        ++j;
      i = j;
    } else {
      ++i;  // ESC and the one byte after it
    }
  }
  return out;
}

std::vector<std::string_view> Segments(std::string_view line) {
  std::vector<std::string_view> out;
  size_t from = 0;
  for (;;) {
    const size_t cr = line.find_first_of("\r\b", from);
    const std::string_view seg = line.substr(from, cr == std::string_view::npos ? cr : cr - from);
    if (!seg.empty()) out.push_back(seg);
    if (cr == std::string_view::npos) break;
    from = cr + 1;
  }
  return out;
}

struct ProfileSet::Pattern {
  boost::regex match;
  std::optional<boost::regex> step, progress, pairs;
  std::vector<std::string> step_keys, skip;
  int64_t first_epoch = 1;  // with (epoch, i, n): the first epoch's number
  int64_t step_shift = 0;   // added to the step read
  bool redisplay = false;   // the pattern's values stay shown until they change
};

struct ProfileSet::Profile {
  std::string name;
  std::vector<Pattern> patterns;
};

ProfileSet::ProfileSet() = default;
ProfileSet::~ProfileSet() = default;
ProfileSet::ProfileSet(ProfileSet&&) noexcept = default;
ProfileSet& ProfileSet::operator=(ProfileSet&&) noexcept = default;

std::vector<std::string> ProfileSet::names() const {
  std::vector<std::string> out;
  for (const auto& p : profiles_) out.push_back(p.name);
  return out;
}

Status ProfileSet::Parse(std::string_view text, const std::string& file, ProfileSet* into) {
  if (text.size() > kMaxProfileBytes)
    return InvalidArgument(file + ": larger than " + std::to_string(kMaxProfileBytes >> 10) +
                           " KiB; not a profile");
  TW_RETURN_IF_ERROR(CheckTomlText(text, file));
  toml::table t;
  try {
    t = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(file + ":" + std::to_string(e.source().begin.line) + ": " +
                           std::string(e.description()));
  }
  Profile p;
  const std::optional<std::string> name = t["name"].value<std::string>();
  if (!name || name->empty()) return InvalidArgument(file + ": no name = \"...\"");
  p.name = *name;
  const toml::array* lines = t["line"].as_array();
  if (!lines || lines->empty())
    return InvalidArgument(file + ": no [[line]] pattern");
  for (size_t i = 0; i < lines->size(); ++i) {
    const toml::table* l = (*lines)[i].as_table();
    const std::string where = file + ": [[line]] " + std::to_string(i + 1);
    if (!l) return InvalidArgument(where + ": not a table");
    Pattern pat;
    auto regex = [&](const char* key, std::optional<boost::regex>* out) -> Status {
      const toml::node* n = l->get(key);
      if (!n) return Status::Ok();
      const std::optional<std::string> s = n->value<std::string>();
      if (!s) return InvalidArgument(where + ": " + key + " is not a string");
      try {
        *out = boost::regex(Expand(*s), boost::regex::perl);
      } catch (const boost::regex_error& e) {
        return InvalidArgument(where + ": " + key + " is not a regex: " + e.what());
      }
      return Status::Ok();
    };
    std::optional<boost::regex> match;
    TW_RETURN_IF_ERROR(regex("match", &match));
    if (!match) return InvalidArgument(where + ": no match = '...'");
    pat.match = std::move(*match);
    TW_RETURN_IF_ERROR(regex("step", &pat.step));
    TW_RETURN_IF_ERROR(regex("progress", &pat.progress));
    TW_RETURN_IF_ERROR(regex("pairs", &pat.pairs));
    if (pat.step && pat.step->mark_count() != 1 && pat.step->mark_count() != 3)
      return InvalidArgument(where + ": step needs one group (the step) or three (epoch, i, n)");
    if (pat.progress && pat.progress->mark_count() < 2)
      return InvalidArgument(where + ": progress needs two groups (count, total)");
    if (pat.pairs && pat.pairs->mark_count() < 2)
      return InvalidArgument(where + ": pairs needs two groups (key, value)");
    for (const char* key : {"step_keys", "skip"}) {
      const toml::node* n = l->get(key);
      if (!n) continue;
      const toml::array* a = n->as_array();
      if (!a) return InvalidArgument(where + ": " + key + " is not an array of strings");
      for (const auto& e : *a) {
        const std::optional<std::string> s = e.value<std::string>();
        if (!s) return InvalidArgument(where + ": " + key + " is not an array of strings");
        (std::string_view(key) == "skip" ? pat.skip : pat.step_keys).push_back(*s);
      }
    }
    for (const char* key : {"first_epoch", "step_shift"}) {
      const toml::node* n = l->get(key);
      if (!n) continue;
      const std::optional<int64_t> v = n->value<int64_t>();
      if (!n->is_integer() || !v || *v < -1000000 || *v > 1000000)
        return InvalidArgument(where + ": " + key + " is not a small integer");
      (std::string_view(key) == "first_epoch" ? pat.first_epoch : pat.step_shift) = *v;
    }
    if (const toml::node* n = l->get("redisplay")) {
      if (!n->is_boolean()) return InvalidArgument(where + ": redisplay is not true or false");
      pat.redisplay = n->value<bool>().value_or(false);
    }
    if (!pat.step && !pat.progress && !pat.pairs)
      return InvalidArgument(where + ": takes nothing (no step, progress or pairs)");
    p.patterns.push_back(std::move(pat));
  }
  // A later profile of the same name (a built-in after the user's) does not replace it.
  for (const auto& have : into->profiles_)
    if (have.name == p.name) return Status::Ok();
  into->profiles_.push_back(std::move(p));
  return Status::Ok();
}

std::shared_ptr<const ProfileSet> ProfileSet::BuiltIn() {
  static const std::shared_ptr<const ProfileSet> built_in = Load("", nullptr);
  return built_in;
}

std::shared_ptr<const ProfileSet> ProfileSet::Load(const std::string& user_dir,
                                                   std::vector<std::string>* errors) {
  auto set = std::make_shared<ProfileSet>();
  auto note = [&](const Status& s) {
    if (!s.ok() && errors) errors->push_back(s.message());
  };
  if (!user_dir.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::vector<std::string> files;
    for (fs::directory_iterator it(user_dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".toml") files.push_back(it->path().native());
    if (ec && errors) errors->push_back(user_dir + ": cannot list: " + ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::string text;
      text.resize(kMaxProfileBytes + 1);
      in.read(text.data(), static_cast<std::streamsize>(text.size()));
      text.resize(static_cast<size_t>(in.gcount()));
      note(in.bad() ? IoError(f + ": cannot read") : Parse(text, f, set.get()));
    }
  }
  for (const auto& e : EmbeddedProfiles()) note(Parse(e.text, e.name, set.get()));
  return set;
}

bool ProfileSet::Read(std::string_view raw, ConsoleValues* out) const {
  if (raw.size() > kMaxSegment) return false;
  std::string plain;
  std::string_view segment = raw;
  if (raw.find('\x1b') != std::string_view::npos) {
    plain = StripAnsi(raw);
    segment = plain;
  }
  // Boost.Regex throws when a match grows too complex (a user's pattern that backtracks
  // without end): such a segment is one that pattern does not read.
  try {
    boost::match_results<std::string_view::const_iterator> m;
    for (const Profile& prof : profiles_) {
      for (size_t i = 0; i < prof.patterns.size(); ++i) {
        const Pattern& pat = prof.patterns[i];
        if (!boost::regex_search(segment.begin(), segment.end(), m, pat.match)) continue;
        ConsoleValues v;
        v.profile = prof.name;
        v.pattern = static_cast<int>(i);
        v.redisplay = pat.redisplay;
        if (pat.step && boost::regex_search(segment.begin(), segment.end(), m, *pat.step)) {
          if (pat.step->mark_count() == 1) {
            v.step = ParseInt(std::string_view(m[1].first, m[1].second));
          } else {
            const auto e = ParseInt(std::string_view(m[1].first, m[1].second));
            const auto it = ParseInt(std::string_view(m[2].first, m[2].second));
            const auto n = ParseInt(std::string_view(m[3].first, m[3].second));
            if (e && it && n && *e >= pat.first_epoch && *n >= 0 && *e < (int64_t{1} << 31) &&
                *n < (int64_t{1} << 31) && *it < (int64_t{1} << 31))
              v.step = (*e - pat.first_epoch) * *n + *it;
          }
          if (v.step) v.step = *v.step + pat.step_shift;
        }
        if (pat.progress && boost::regex_search(segment.begin(), segment.end(), m, *pat.progress)) {
          const auto count = ParseInt(std::string_view(m[1].first, m[1].second));
          const auto total = ParseInt(std::string_view(m[2].first, m[2].second));
          if (count && total) v.progress = {*count, *total};
        }
        if (pat.pairs) {
          boost::regex_iterator<std::string_view::const_iterator> it(segment.begin(), segment.end(),
                                                                     *pat.pairs), end;
          for (; it != end; ++it) {
            std::string key((*it)[1].first, (*it)[1].second);
            const std::optional<double> value =
                ParseConsoleNumber(std::string_view((*it)[2].first, (*it)[2].second));
            if (!value || key.empty()) continue;
            if (std::find(pat.skip.begin(), pat.skip.end(), key) != pat.skip.end()) continue;
            v.metrics.emplace_back(std::move(key), *value);
          }
          if (!pat.step_keys.empty()) {
            // The first step key present is the step, and no metric.
            bool found = false;
            for (const auto& k : pat.step_keys) {
              auto at = std::find_if(v.metrics.begin(), v.metrics.end(),
                                     [&](const auto& kv) { return kv.first == k; });
              if (at == v.metrics.end()) continue;
              if (!std::isfinite(at->second) || at->second < 0 || at->second > 9e15 ||
                  at->second != std::floor(at->second))
                break;  // not a step: the segment is not read
              v.step = static_cast<int64_t>(at->second);
              v.metrics.erase(at);
              found = true;
              break;
            }
            if (!found) continue;
          }
        }
        if (!v.step && !v.progress && v.metrics.empty()) continue;
        *out = std::move(v);
        return true;
      }
    }
  } catch (const std::exception&) {
    return false;
  }
  return false;
}

}  // namespace tw::decode
