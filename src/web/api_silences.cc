// Silences in the web view: the list, and the form's one write (docs/web.md).
#include <boost/json.hpp>

#include "notify/outbox.h"
#include "web/api.h"

namespace tw::web {
namespace json = boost::json;

Answer AnswerSilences(store::Db& db, const ApiContext& ctx) {
  Result<store::Stmt> s = db.Prepare(
      "SELECT silence_id, run_glob, rule, created, expires, comment FROM silences "
      "ORDER BY silence_id DESC LIMIT 500");
  if (!s.ok()) return StoreError(s.status());
  json::array out;
  const Status st = s->EachRow([&] {
    out.push_back(json::object{{"id", s->Int(0)}, {"run_glob", s->Text(1)}, {"rule", s->Text(2)},
                               {"created", Number(s->Real(3))}, {"expires", Number(s->Real(4))},
                               {"comment", s->Text(5)}, {"active", s->Real(4) > ctx.now}});
  });
  if (!st.ok()) return StoreError(st);
  // The store's path goes into the command the page shows for scripts and shells.
  return {200, json::object{{"db", ctx.db_path}, {"silences", std::move(out)}}};
}

Answer AddSilenceFromJson(const std::string& body, store::Db& db, double now) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return ErrorAnswer(400, "the body must be a JSON object");
  const json::object& o = v.as_object();
  for (const auto& [key, value] : o)
    if (key != "run" && key != "rule" && key != "minutes" && key != "comment")
      return BadParameter(std::string(key), "is not a field of a silence (run, rule, minutes, comment)");
  notify::NewSilence s;
  auto text = [&](const char* name, std::string* out) -> std::optional<Answer> {
    const json::value* f = o.if_contains(name);
    if (!f || f->is_null()) return std::nullopt;
    if (!f->is_string()) return BadParameter(name, "must be a string");
    *out = std::string(f->as_string());
    return std::nullopt;
  };
  for (auto bad : {text("run", &s.run_glob), text("rule", &s.rule), text("comment", &s.comment)})
    if (bad) return *bad;
  const json::value* minutes = o.if_contains("minutes");
  if (!minutes || !minutes->is_number()) return BadParameter("minutes", "a number of minutes is needed");
  s.seconds = minutes->to_number<double>() * 60;
  Result<int64_t> id = notify::AddSilence(db, s, now);
  if (!id.ok()) {
    if (id.status().code() == Code::kInvalidArgument) {
      const std::string& m = id.status().message();
      const std::string field = m.substr(0, m.find(':'));
      return BadParameter(field == "duration" ? "minutes" : field, m.substr(std::min(m.size(), field.size() + 2)));
    }
    return StoreError(id.status());
  }
  return {201, json::object{{"id", *id}, {"expires", Number(now + s.seconds)}}};
}

}  // namespace tw::web
