// The findings page: what is firing, then what resolved recently, each with its transitions.
import {el, api, fmtStep, when, ago, severityBadge, setReady} from "./util.js";

function transitions(f) {
  if (!f.transitions || !f.transitions.length) return null;
  return el("ol", {class: "transitions small"}, f.transitions.map(t =>
      el("li", {}, `${when(t.time)}: ${t.from || "new"} → ${t.to} (${t.severity})`)));
}

function item(f, now) {
  return el("tr", {dataset: {rule: f.rule, state: f.state, findingId: f.id}},
    el("td", {}, severityBadge(f.severity)),
    el("td", {}, el("span", {class: `state ${f.state}`}, f.state)),
    el("td", {}, el("a", {href: `/runs/${f.run_id}?focus=${encodeURIComponent(f.rule)}`}, f.run)),
    el("td", {}, el("strong", {}, f.rule), f.series ? el("div", {class: "muted small"}, f.series) : null),
    el("td", {class: "num"}, fmtStep(f.onset_step ?? f.first_step)),
    el("td", {}, f.message, transitions(f)),
    el("td", {}, f.state === "resolved" ? `resolved ${ago(f.resolved_at, now)}` : `since ${ago(f.fired_at ?? f.first_seen, now)}`));
}

export async function renderFindings(main) {
  const data = await api("/api/findings?state=all&transitions=1");
  const now = Date.now() / 1000;
  const shown = data.findings.filter(f => f.rule !== "run_verdict" && f.state !== "pending");
  const firing = shown.filter(f => f.state === "firing");
  const resolved = shown.filter(f => f.state === "resolved").slice(0, 200);
  const table = (rows, id) => rows.length
      ? el("table", {class: "list", id},
           el("thead", {}, el("tr", {}, ["Severity", "State", "Run", "Rule", "Onset", "Seen", "When"].map(h => el("th", {}, h)))),
           el("tbody", {}, rows.map(f => item(f, now))))
      : el("p", {class: "muted", id}, "none");
  main.replaceChildren(el("h1", {}, "Findings"),
      el("h2", {}, `Firing (${firing.length})`), table(firing, "firing"),
      el("h2", {}, `Recently resolved (${resolved.length})`), table(resolved, "resolved"));
  setReady();
}
