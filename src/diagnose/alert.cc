#include "diagnose/alert.h"

#include <cstdio>

namespace tw::diagnose {

namespace {

std::string Num(double v) {  // exact in a rule's text: a parameter's default is read back
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string Short(double v) {  // for people
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string Duration(double s) {
  if (s >= 86400 && static_cast<int64_t>(s) % 86400 == 0) return Short(s / 86400) + "d";
  if (s >= 3600 && static_cast<int64_t>(s) % 3600 == 0) return Short(s / 3600) + "h";
  if (s >= 60 && static_cast<int64_t>(s) % 60 == 0) return Short(s / 60) + "m";
  return Short(s) + "s";
}

// A SQL string literal: the user's globs and message go into the rule's text as data.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// One header line's text: a newline would end the line (and the header) early.
std::string OneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// The series the alert watches: series_id, tag, run_id, run. `per_run`: only :run_id's (a
// scope-run rule); else every run's. A role alert reads the role map (temp.run_roles), which
// names a Keras validation sibling's series under the train run.
std::string Watched(const Alert& a, bool per_run) {
  if (!a.role.empty())
    return "SELECT rr.series_id, COALESCE(NULLIF(rr.label, ''), rr.tag) AS tag, rr.run_id, r.name AS run "
           "FROM run_roles rr JOIN runs r ON r.run_id = rr.run_id WHERE rr.role = " + Quote(a.role) +
           (per_run ? " AND rr.run_id = :run_id" : "") + " AND tw_glob(" + Quote(a.run_glob) + ", r.name)";
  return "SELECT s.series_id, s.tag, s.run_id, r.name AS run FROM series s JOIN runs r ON r.run_id = s.run_id "
         "WHERE s.kind = 'scalar'" + std::string(per_run ? " AND s.run_id = :run_id" : "") +
         " AND tw_glob(" + Quote(a.tag) + ", s.tag) AND tw_glob(" + Quote(a.run_glob) + ", r.name)";
}

// The message's head: the user's words, then what was seen.
std::string Head(const Alert& a) {
  return Quote(a.message.empty() ? "" : a.message + ": ");
}

// above / below: the latest point is past the threshold (±Inf count on their side, NaN on
// neither); onset is where the stretch of such points began.
std::string ThresholdSql(const Alert& a) {
  const bool above = a.condition == Alert::Condition::kAbove;
  const std::string cmp = above ? ">" : "<";
  const std::string inf = above ? "2" : "3";
  auto holds = [&](const char* p) {
    return std::string("(") + p + ".value_class = " + inf + " OR (" + p + ".value_class = 0 AND " + p +
           ".value " + cmp + " :threshold))";
  };
  return "WITH w AS MATERIALIZED (" + Watched(a, true) + "),\n"
         "last AS MATERIALIZED (\n"
         "  SELECT w.*, (SELECT step FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "                ORDER BY step DESC, source_id DESC, offset DESC, vidx DESC LIMIT 1) AS last_step,\n"
         "    (SELECT " + holds("p") + " FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "       ORDER BY step DESC, source_id DESC, offset DESC, vidx DESC LIMIT 1) AS holds,\n"
         "    (SELECT CASE p.value_class WHEN 0 THEN printf('%.6g', p.value) WHEN 1 THEN 'NaN' WHEN 2 THEN 'inf'\n"
         "            ELSE '-inf' END FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "       ORDER BY step DESC, source_id DESC, offset DESC, vidx DESC LIMIT 1) AS shown,\n"
         "    (SELECT p.value FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "       ORDER BY step DESC, source_id DESC, offset DESC, vidx DESC LIMIT 1) AS value\n"
         "  FROM w),\n"
         "hit AS MATERIALIZED (\n"
         "  SELECT l.*, COALESCE((SELECT min(step) FROM scalars p WHERE p.series_id = l.series_id AND p.superseded = 0\n"
         "      AND p.step > COALESCE((SELECT max(step) FROM scalars q WHERE q.series_id = l.series_id\n"
         "                               AND q.superseded = 0 AND NOT " + holds("q") + "), -9223372036854775807)),\n"
         "    l.last_step) AS onset\n"
         "  FROM last l WHERE l.holds)\n"
         "SELECT series_id, onset AS onset_step, onset AS first_step, last_step,\n"
         "  " + Head(a) + " || tag || ' is ' || shown || ' at step ' || last_step || ', " +
         (above ? "above " : "below ") + "' || printf('%g', :threshold) ||\n"
         "    CASE WHEN onset < last_step THEN ' since step ' || onset ELSE '' END AS message,\n"
         "  json_object('value', value, 'shown', shown, 'threshold', :threshold, 'since_step', onset, 'last_step', last_step) AS evidence\n"
         "FROM hit";
}

// new_best: the series' best finite value so far, where it was first reached; a best at the
// first point is no new best. Each new best is a new onset, and the rule fires once per onset.
std::string NewBestSql(const Alert& a) {
  const bool max = a.best > 0;
  const std::string order = max ? "DESC" : "ASC";
  const std::string better = max ? ">" : "<";
  const std::string agg = max ? "max" : "min";
  return "WITH w AS MATERIALIZED (" + Watched(a, true) + "),\n"
         "b AS MATERIALIZED (\n"
         "  SELECT w.*, (SELECT step FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "                AND p.value_class = 0 ORDER BY p.value " + order + ", p.step ASC LIMIT 1) AS best_step,\n"
         "    (SELECT min(step) FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "       AND p.value_class = 0) AS first_step,\n"
         "    (SELECT max(step) FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0) AS last_step\n"
         "  FROM w),\n"
         "nb AS MATERIALIZED (\n"
         "  SELECT b.*, (SELECT " + agg + "(value) FROM scalars p WHERE p.series_id = b.series_id AND p.superseded = 0\n"
         "                AND p.value_class = 0 AND p.step = b.best_step) AS best,\n"
         "    (SELECT " + agg + "(value) FROM scalars p WHERE p.series_id = b.series_id AND p.superseded = 0\n"
         "       AND p.value_class = 0 AND p.step < b.best_step) AS previous\n"
         "  FROM b WHERE b.best_step > b.first_step)\n"
         "SELECT series_id, best_step AS onset_step, first_step, last_step,\n"
         "  " + Head(a) + " || tag || ' reached a new best (" + (max ? "max" : "min") +
         ") of ' || printf('%.6g', best) || ' at step ' || best_step ||\n"
         "    ' (the best before: ' || printf('%.6g', previous) || ')' AS message,\n"
         "  json_object('best', best, 'best_step', best_step, 'previous_best', previous) AS evidence\n"
         "FROM nb WHERE previous IS NOT NULL AND best " + better + " previous";
}

// change_pct: the latest finite value against the one `window` before it (the last point at
// least that many steps, or seconds, earlier). The change is checked at every point of the
// tail that `for` spans (from the last point at least `for` seconds before the latest), so its
// onset, and how long it has held, are known without reading the whole series point by point.
std::string ChangeSql(const Alert& a, double for_seconds) {
  const std::string back = a.window_seconds ? "q.wall_time <= p.wall_time - :window AND q.step < p.step"
                                            : "q.step <= p.step - :window";
  const std::string dir = a.value > 0 ? ">=" : "<=";
  return "WITH w AS MATERIALIZED (" + Watched(a, true) + "),\n"
         "last AS MATERIALIZED (\n"
         "  SELECT w.*, (SELECT max(step) FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "                AND p.value_class = 0) AS last_step,\n"
         "    (SELECT min(step) FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "       AND p.value_class = 0) AS first_step\n"
         "  FROM w),\n"
         "tail AS MATERIALIZED (\n"
         "  SELECT l.*, COALESCE((SELECT max(step) FROM scalars p WHERE p.series_id = l.series_id AND p.superseded = 0\n"
         "      AND p.value_class = 0 AND p.wall_time <= (SELECT max(wall_time) FROM scalars x\n"
         "        WHERE x.series_id = l.series_id AND x.superseded = 0 AND x.step = l.last_step) - " + Num(for_seconds) + "),\n"
         "    l.first_step) AS from_step\n"
         "  FROM last l WHERE l.last_step IS NOT NULL),\n"
         "pts AS MATERIALIZED (\n"
         "  SELECT t.series_id, p.step, p.value,\n"
         "    (SELECT q.value FROM scalars q WHERE q.series_id = t.series_id AND q.superseded = 0 AND q.value_class = 0\n"
         "       AND " + back + " ORDER BY q.step DESC LIMIT 1) AS ref\n"
         "  FROM tail t JOIN scalars p ON p.series_id = t.series_id AND p.superseded = 0 AND p.value_class = 0\n"
         "    AND p.step >= t.from_step),\n"
         "judged AS MATERIALIZED (\n"
         "  SELECT *, CASE WHEN ref != 0 THEN 100.0 * (value - ref) / abs(ref) END AS pct FROM pts),\n"
         "agg AS MATERIALIZED (\n"
         "  SELECT series_id, max(step) AS last_step,\n"
         "    max(CASE WHEN pct IS NULL OR NOT (pct " + dir + " :change_pct) THEN step END) AS last_fail\n"
         "  FROM judged GROUP BY series_id),\n"
         "hit AS MATERIALIZED (\n"
         "  SELECT a.*, t.tag, (SELECT min(step) FROM judged j WHERE j.series_id = a.series_id\n"
         "                        AND j.step > COALESCE(a.last_fail, -9223372036854775807)) AS onset,\n"
         "    (SELECT pct FROM judged j WHERE j.series_id = a.series_id ORDER BY step DESC LIMIT 1) AS pct,\n"
         "    (SELECT value FROM judged j WHERE j.series_id = a.series_id ORDER BY step DESC LIMIT 1) AS value,\n"
         "    (SELECT ref FROM judged j WHERE j.series_id = a.series_id ORDER BY step DESC LIMIT 1) AS ref\n"
         "  FROM agg a JOIN tail t ON t.series_id = a.series_id\n"
         "  WHERE a.last_fail IS NULL OR a.last_fail < a.last_step)\n"
         "SELECT series_id, onset AS onset_step, onset AS first_step, last_step,\n"
         "  " + Head(a) + " || tag || ' ' || CASE WHEN pct >= 0 THEN 'rose' ELSE 'fell' END || ' by ' ||\n"
         "    printf('%.1f', abs(pct)) || '% over ' || printf('%g', :window) || '" + (a.window_seconds ? " s" : " steps") +
         " (' || printf('%.6g', ref) || ' -> ' || printf('%.6g', value) || ' at step ' || last_step || ')' AS message,\n"
         "  json_object('change_pct', pct, 'from', ref, 'to', value, 'since_step', onset, 'last_step', last_step,\n"
         "              'window', :window, 'window_unit', " + Quote(a.window_seconds ? "seconds" : "steps") + ") AS evidence\n"
         "FROM hit";
}

// absent_for: no new point for that long, by this machine's clock against the writer's wall
// time of the series' last point (a writer whose clock is off is misjudged, as stale_run is).
// Over every run (scope all): a silent run gets no new data that would have it examined. A run
// that logged a clean end is not waited for (the evidence stale_run takes for one), and one
// silent for `horizon` past the threshold is history.
std::string AbsentSql(const Alert& a) {
  return "WITH w AS MATERIALIZED (" + Watched(a, false) + "),\n"
         "last AS MATERIALIZED (\n"
         "  SELECT w.*, (SELECT step FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "                ORDER BY step DESC LIMIT 1) AS last_step,\n"
         "    (SELECT wall_time FROM scalars p WHERE p.series_id = w.series_id AND p.superseded = 0\n"
         "       ORDER BY step DESC LIMIT 1) AS last_wall\n"
         "  FROM w\n"
         "  WHERE NOT EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = w.run_id AND e.kind = 'stop')\n"
         "    AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.run_id = w.run_id AND x.exit_code = 0)\n"
         "    AND NOT EXISTS (SELECT 1 FROM series s WHERE s.run_id = w.run_id AND s.tag = 'train/train_runtime'))\n"
         "SELECT run_id, series_id, last_step AS onset_step, last_step AS first_step, last_step,\n"
         "  " + Head(a) + " || tag || ' has logged nothing for ' || printf('%.1f', (:now - last_wall) / 3600.0) ||\n"
         "    ' h (its last point: step ' || last_step || '; absent for ' || printf('%g', :absent_for / 3600.0) ||\n"
         "    ' h or more)' AS message,\n"
         "  json_object('last_wall_time', last_wall, 'silent_seconds', :now - last_wall, 'last_step', last_step,\n"
         "              'absent_for', :absent_for) AS evidence\n"
         "FROM last WHERE last_wall IS NOT NULL AND :now - last_wall >= :absent_for\n"
         "  AND :now - last_wall <= :absent_for + :horizon";
}

}  // namespace

std::string DescribeCondition(const Alert& a) {
  switch (a.condition) {
    case Alert::Condition::kAbove: return "above " + Short(a.value);
    case Alert::Condition::kBelow: return "below " + Short(a.value);
    case Alert::Condition::kNewBest: return std::string("new best (") + (a.best > 0 ? "max" : "min") + ")";
    case Alert::Condition::kChangePct:
      return "change of " + std::string(a.value > 0 ? "+" : "") + Short(a.value) + "% over " +
             (a.window_seconds ? Duration(a.window) : Short(a.window) + " steps");
    case Alert::Condition::kAbsentFor: return "absent for " + Duration(a.value);
  }
  return "";
}

std::string DescribeTarget(const Alert& a) {
  return (a.role.empty() ? "tag '" + a.tag + "'" : "role " + a.role) + " in runs '" + a.run_glob + "'";
}

Result<Rule> AlertRule(const Alert& a) {
  const std::string what = DescribeTarget(a) + ": " + DescribeCondition(a);
  const bool absent = a.condition == Alert::Condition::kAbsentFor;
  std::string text = "-- id: " + a.name + "\n" +
                     "-- title: " + OneLine(a.message.empty() ? "alert " + a.name + ": " + what : a.message) + "\n" +
                     "-- severity: " + SeverityName(a.severity) + "\n" +
                     (a.role.empty() || absent ? "" : "-- roles: " + a.role + "\n") +
                     (absent ? "-- scope: all\n" : "") +
                     "-- for: " + Num(a.for_seconds) + "\n";
  std::string sql;
  switch (a.condition) {
    case Alert::Condition::kAbove:
    case Alert::Condition::kBelow:
      text += "-- param threshold = " + Num(a.value) + ": the value it must be " +
              (a.condition == Alert::Condition::kAbove ? "above" : "below") + "\n";
      sql = ThresholdSql(a);
      break;
    case Alert::Condition::kNewBest:
      text += "-- fires: once_per_onset\n";
      sql = NewBestSql(a);
      break;
    case Alert::Condition::kChangePct:
      text += "-- param change_pct = " + Num(a.value) + ": the change, in percent (below 0: a fall)\n";
      text += "-- param window = " + Num(a.window) + ": compared with the value this many " +
              (a.window_seconds ? "seconds" : "steps") + " before\n";
      sql = ChangeSql(a, a.for_seconds);
      break;
    case Alert::Condition::kAbsentFor:
      text += "-- param absent_for = " + Num(a.value) + ": seconds without a new point\n";
      text += "-- param horizon = 259200: silent longer than absent_for plus this (3 days): history\n";
      sql = AbsentSql(a);
      break;
  }
  text += "-- cause: " + OneLine("the [[alert]] " + a.name + " at " + a.file + ":" + std::to_string(a.line) +
                                 ": " + what) + "\n";
  text += "-- fix: " + OneLine("yours to say (its message); change or remove the alert at " + a.file + ":" +
                               std::to_string(a.line)) + "\n";
  text += "--\n" + sql + "\n";
  Result<Rule> r = ParseRule(text, a.file + ":" + std::to_string(a.line));
  if (!r.ok()) return r.status();
  r->origin = a.file;
  r->sql_line = a.line;
  r->alert = true;
  return r;
}

std::vector<Rule> AlertRules(const std::vector<Alert>& alerts, std::vector<std::string>* errors) {
  std::vector<Rule> out;
  for (const Alert& a : alerts) {
    Result<Rule> r = AlertRule(a);
    if (r.ok()) out.push_back(std::move(*r));
    else errors->push_back(r.status().message());
  }
  return out;
}

std::string AlertMatchCountSql(const Alert& a) {
  return "SELECT count(*) FROM (" + Watched(a, false) + ")";
}

}  // namespace tw::diagnose
