// Compare: 2 to 8 runs' curves of one role overlaid, aligned by step, or by time since each
// run's first point (?x=wall).
import {el, api, setReady} from "./util.js";
import {Chart, COLORS} from "./chart.js";

const ROLES = ["train_loss", "val_loss", "val_acc", "val_metric", "train_acc", "lr", "grad_norm", "step_time", "memory"];
const MAX_RUNS = 8;

export async function renderCompare(main, params) {
  const {runs} = await api("/api/runs");
  const chosen = (params.get("runs") || "").split(",").map(Number).filter(n => n > 0).slice(0, MAX_RUNS);
  const role = ROLES.includes(params.get("role")) ? params.get("role") : "train_loss";
  const byWall = params.get("x") === "wall";

  const picks = el("fieldset", {class: "picks"}, el("legend", {}, `Runs (2 to ${MAX_RUNS})`),
      runs.map(r => el("label", {}, el("input", {type: "checkbox", name: "runs", value: r.id, checked: chosen.includes(r.id)}), ` ${r.name}`)));
  const roleSelect = el("select", {name: "role"}, ROLES.map(r => el("option", {value: r, selected: r === role}, r)));
  const xSelect = el("select", {name: "x"}, el("option", {value: "step"}, "step"),
      el("option", {value: "wall", selected: byWall}, "time since start (s)"));
  const go = () => {
    const ids = [...picks.querySelectorAll("input:checked")].map(i => i.value).slice(0, MAX_RUNS);
    const q = new URLSearchParams({runs: ids.join(","), role: roleSelect.value});
    if (xSelect.value === "wall") q.set("x", "wall");
    location.search = q.toString();
  };
  const box = el("div", {class: "chart", dataset: {role}});
  const note = el("p", {class: "muted", id: "compare-note"});
  main.replaceChildren(el("h1", {}, "Compare"),
      el("form", {class: "filters", onsubmit: e => { e.preventDefault(); go(); }},
         el("label", {}, "Role ", roleSelect), el("label", {}, "x ", xSelect), el("button", {type: "submit"}, "Compare")),
      picks, note, box);

  if (chosen.length < 2) {
    note.textContent = "Pick two or more runs.";
    setReady();
    return;
  }
  // Each run's series of the role (its first, for a role with several).
  const details = await Promise.all(chosen.map(id => api(`/api/runs/${id}`)));
  const series = [], missing = [];
  for (const d of details) {
    const r = d.roles.find(x => x.role === role);
    if (r) series.push({id: r.series_id, label: `${d.run.name}: ${r.label}`});
    else missing.push(d.run.name);
  }
  note.textContent = missing.length ? `No ${role} series in: ${missing.join(", ")}` : "";
  if (!series.length) { setReady(); return; }
  const chart = new Chart(box, {role, series, sync: "compare", height: 360, onZoom: range => chart.load(range)});
  if (byWall) {
    // By time: each run's x is seconds since its own first point, so the runs' x values
    // differ and a zoom cannot refetch by step; drawn once at the plot's width.
    const answers = await Promise.all(series.map(s => api(`/api/series/${s.id}?width=${chart.width()}&superseded=1`)));
    const tables = answers.map(a => {
      const t0 = a.points.length ? a.points[0].wall : 0;
      const pts = a.points.filter(p => !p.superseded).map(p => [p.wall - t0, p.value]);
      pts.sort((x, y) => x[0] - y[0]);
      return [pts.map(p => p[0]), pts.map(p => typeof p[1] === "number" ? p[1] : null)];
    });
    chart.plot = new uPlot({width: chart.width(), height: 360, scales: {x: {time: false}},
        series: [{label: "seconds"}, ...series.map((s, i) => ({label: s.label, stroke: COLORS[i % COLORS.length], spanGaps: true, width: 1.5}))],
        axes: [{label: "seconds since start"}, {size: 64}]}, uPlot.join(tables), box);
  } else {
    await chart.load(null);
  }
  window.tw = {charts: [{role, get plot() { return chart.plot; }, chart}]};
  setReady();
}
