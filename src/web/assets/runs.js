// The runs page: every run, the ones needing attention first (the server's order: kill, watch,
// healthy; live before finished), with filters kept in the URL and a refresh at the daemon's
// rescan interval.
import {el, api, num, fmtStep, ago, badge, setReady, setUpdated, globMatch} from "./util.js";

function sparkline(points) {
  const c = el("canvas", {class: "spark", width: 120, height: 28, "aria-hidden": "true"});
  if (!points || points.length < 2) return c;
  const g = c.getContext("2d");
  const ys = points.map(p => num(p[1])).filter(Number.isFinite);
  const x0 = points[0][0], x1 = points[points.length - 1][0];
  const lo = Math.min(...ys), hi = Math.max(...ys);
  const X = s => 2 + (x1 > x0 ? (s - x0) / (x1 - x0) : 0) * (c.width - 4);
  const Y = v => c.height - 3 - (hi > lo ? (v - lo) / (hi - lo) : 0.5) * (c.height - 6);
  g.strokeStyle = "#3b6fb6";
  g.lineWidth = 1.25;
  g.beginPath();
  let pen = false;
  for (const [s, raw] of points) {
    const v = num(raw);
    if (!Number.isFinite(v)) {
      pen = false;
      g.fillStyle = "#c62828";  // a non-finite value: a red tick at the top
      g.fillRect(X(s) - 1, 0, 2, 6);
      continue;
    }
    pen ? g.lineTo(X(s), Y(v)) : g.moveTo(X(s), Y(v));
    pen = true;
  }
  g.stroke();
  return c;
}

function stateOf(run) {
  return run.live ? "live" : "finished";
}

function row(run, now) {
  const name = run.display_name ? `${run.display_name} (${run.name})` : run.name;
  return el("tr", {dataset: {runId: run.id, verdict: run.verdict}},
    el("td", {}, badge(run.verdict)),
    el("td", {class: "run-name"}, el("a", {href: `/runs/${run.id}`}, name),
       el("div", {class: "muted small"}, run.root)),
    el("td", {}, sparkline(run.sparkline)),
    el("td", {class: "num"}, fmtStep(run.last_step)),
    el("td", {}, el("span", {class: run.live ? "live" : "muted"}, run.live ? "● " : ""), ago(run.last_write, now)),
    el("td", {class: "rules"}, (run.rules || []).map(r =>
        el("a", {class: "chip", href: `/runs/${run.id}?focus=${encodeURIComponent(r)}`}, r))));
}

export async function renderRuns(main, params) {
  const filters = {
    root: params.get("root") || "",
    glob: params.get("glob") || "",
    rule: params.get("rule") || "",
    state: params.get("state") || "",
  };
  const selects = {
    root: el("select", {name: "root"}),
    rule: el("select", {name: "rule"}),
    state: el("select", {name: "state"},
      ["", "live", "finished", "kill", "watch", "healthy"].map(s =>
        el("option", {value: s, selected: s === filters.state}, s || "any state"))),
  };
  const glob = el("input", {name: "glob", type: "search", placeholder: "run glob, e.g. exp/*", value: filters.glob});
  const body = el("tbody");
  const count = el("span", {class: "muted"});
  main.replaceChildren(
    el("h1", {}, "Runs"),
    el("form", {class: "filters", onsubmit: e => e.preventDefault()},
       el("label", {}, "Root ", selects.root), el("label", {}, "Run ", glob),
       el("label", {}, "Rule ", selects.rule), el("label", {}, "State ", selects.state), count),
    el("table", {id: "runs", class: "list"},
       el("thead", {}, el("tr", {}, ["Verdict", "Run", "Training loss", "Last step", "Last write",
                                      "Findings firing"].map(h => el("th", {}, h)))),
       body));

  let runs = [];
  const apply = () => {
    for (const k of Object.keys(filters)) filters[k] = (k === "glob" ? glob : selects[k]).value;
    const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    history.replaceState(null, "", q.toString() ? `/?${q}` : "/");
    const now = Date.now() / 1000;
    const shown = runs.filter(r =>
        (!filters.root || r.root === filters.root) &&
        (!filters.glob || globMatch(filters.glob.includes("*") || filters.glob.includes("?") ? filters.glob : `*${filters.glob}*`, r.name)) &&
        (!filters.rule || (r.rules || []).includes(filters.rule)) &&
        (!filters.state || filters.state === stateOf(r) || filters.state === r.verdict));
    body.replaceChildren(...shown.map(r => row(r, now)));
    count.textContent = `${shown.length} of ${runs.length} runs`;
  };
  const fillSelect = (select, values, label, current) => {
    select.replaceChildren(el("option", {value: ""}, label),
        ...values.map(v => el("option", {value: v, selected: v === current}, v)));
  };
  for (const s of Object.values(selects)) s.addEventListener("change", apply);
  glob.addEventListener("input", apply);

  const load = async () => {
    const data = await api("/api/runs");
    runs = data.runs;
    fillSelect(selects.root, [...new Set(runs.map(r => r.root))].sort(), "any root", selects.root.value || filters.root);
    fillSelect(selects.rule, [...new Set(runs.flatMap(r => r.rules || []))].sort(), "any rule", selects.rule.value || filters.rule);
    apply();
    setUpdated(`updated ${new Date().toLocaleTimeString()}`);
    return data.refresh_seconds || 10;
  };
  const every = await load();
  setReady();
  // Polling, not a stream: a page left open in a tab costs one small request per interval.
  setInterval(() => load().catch(err => setUpdated(`refresh failed: ${err.message}`)), every * 1000);
}
