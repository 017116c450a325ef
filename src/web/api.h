// The JSON API under /api/ (docs/web.md): runs, one run, a series' points downsampled, the
// findings, the outbox. Every answer is a boost::json value, so whatever a log file named a tag
// or wrote in a message reaches the client encoded, never spliced into text.
// Called on a worker thread with that request's own read-only connection.
#pragma once

#include <boost/json/value.hpp>
#include <string>

#include "base/status.h"
#include "diagnose/roles.h"
#include "store/db.h"
#include "web/series_read.h"
#include "web/target.h"

namespace tw::web {

struct Answer {
  unsigned status = 200;
  boost::json::value body;
};

struct ApiContext {
  double now = 0;                   // unix seconds
  double live_window_seconds = 600;
  double refresh_seconds = 10;      // how often the runs page asks again (the daemon's rescan)
  std::string db_path;              // shown with the command that adds a silence
  // Role patterns as the daemon's diagnosis uses them (EffectiveRolePatterns of its config);
  // never null (WebServer::Start fills in the built-in ones).
  const std::vector<diagnose::RolePattern>* role_patterns = nullptr;
};

// Answers a GET of `t` (whose path starts with /api/) from `db`. A failed statement answers
// 500; the caller tells a time limit from it (the statement was interrupted) and answers 503.
Answer AnswerApi(const Target& t, store::Db& db, const ApiContext& ctx);

// Shared by the endpoints (api_*.cc).
Answer ErrorAnswer(unsigned status, const std::string& message);
Answer BadParameter(const std::string& name, const std::string& why);
Answer StoreError(const Status& st);
// A REAL from the store as JSON: a number when finite, else "NaN", "Infinity" or "-Infinity"
// (JSON has no such numbers; see docs/web.md).
boost::json::value Number(double v);
// A point's value by its value_class (0 finite, 1 NaN, 2 +Inf, 3 -Inf).
boost::json::value ClassedValue(int value_class, double v);
// Parses an integer parameter; nullopt (and `*bad` set) when present but not an integer in
// [lo, hi].
std::optional<int64_t> IntParam(const Target& t, const std::string& name, int64_t lo, int64_t hi,
                                std::optional<int64_t> fallback, std::optional<Answer>* bad);

Answer AnswerSeries(const Target& t, store::Db& db, int64_t series_id);


// GET /api/silences (api_silences.cc): every silence, newest first.
Answer AnswerSilences(store::Db& db, const ApiContext& ctx);
// POST /api/silences, the view's one write: `body` is {"run": GLOB, "rule": ID, "minutes": N,
// "comment": TEXT} (rule and comment optional); `db` is a read-write connection.
Answer AddSilenceFromJson(const std::string& body, store::Db& db, double now);

// A run's page (api_run_view.cc): its series' roles as diagnosis infers them, the marks on its
// curves (first non-finite point, restarts, epoch boundaries, LR changes, best validation step,
// the verdict's forecast) and its files with their read state and latest errors.
Result<std::vector<diagnose::RoleAssignment>> RunRoles(store::Db& db, int64_t run_id,
                                                       const std::vector<diagnose::RolePattern>& patterns);
boost::json::array RolesJson(const std::vector<diagnose::RoleAssignment>& roles);
Result<boost::json::array> RunMarkers(store::Db& db, int64_t run_id,
                                      const std::vector<diagnose::RoleAssignment>& roles,
                                      const boost::json::array& findings);
Result<boost::json::array> RunFiles(store::Db& db, int64_t run_id);
// A series' live values M4-downsampled to `width` buckets, non-finite ones as api Number()s.
Result<boost::json::array> Sparkline(store::Db& db, int64_t series_id, int64_t width);

}  // namespace tw::web
