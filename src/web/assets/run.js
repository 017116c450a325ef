// A run's page: its role curves on linked x axes, findings shaded from their onset beside the
// chart with what was seen, the cause and the fix, the marks (first non-finite point, restarts,
// epochs, LR changes, best validation step, forecast), hparams and config, its files.
import {el, api, fmtStep, ago, when, badge, severityBadge, setReady, setUpdated, showError} from "./util.js";
import {Chart} from "./chart.js";

// Charts in the order a person reads a run; roles as diagnosis names them (docs/diagnosis.md).
const GROUPS = [
  {role: "train_loss", title: "Loss", roles: ["train_loss", "val_loss"]},
  {role: "val_acc", title: "Accuracy and metrics", roles: ["val_acc", "val_metric", "train_acc", "reward"]},
  {role: "lr", title: "Learning rate", roles: ["lr"]},
  {role: "grad_norm", title: "Gradient norm", roles: ["grad_norm", "clip_threshold"]},
  {role: "grad_norm_layer", title: "Per-layer gradient norms", roles: ["grad_norm_layer"], max: 8},
  {role: "step_time", title: "Step time", roles: ["step_time", "steps_per_sec"]},
  {role: "memory", title: "Memory", roles: ["memory"]},
  {role: "weight_norm", title: "Weight norm and update ratio", roles: ["weight_norm", "update_ratio", "clip_fraction"]},
];
const MARK_NAMES = {
  nonfinite: "first non-finite", restart: "restart", epoch: "epoch", lr_change: "LR change",
  best_val: "best validation", forecast: "forecast",
};

function findingItem(f, focus) {
  const seen = f.message;
  return el("li", {id: `finding-${f.id}`, class: `finding ${f.state}${focus ? " focus" : ""}`,
                   dataset: {rule: f.rule, state: f.state}},
    el("div", {class: "head"}, severityBadge(f.severity), " ", el("strong", {}, f.rule), " ",
       el("span", {class: `state ${f.state}`}, f.state), " ",
       el("span", {class: "muted small"}, f.series ? `on ${f.series}` : "whole run",
          f.onset_step !== null ? ` · from step ${fmtStep(f.onset_step)}` : "")),
    el("p", {class: "seen"}, el("b", {}, "Seen: "), seen),
    f.cause ? el("p", {class: "cause"}, el("b", {}, "Cause: "), f.cause) : null,
    f.fix ? el("p", {class: "fix"}, el("b", {}, "Fix: "), f.fix) : null);
}

function kvTable(obj) {
  const keys = Object.keys(obj || {});
  if (!keys.length) return el("p", {class: "muted"}, "none");
  return el("table", {class: "kv"}, el("tbody", {}, keys.map(k => {
    const v = obj[k];
    return el("tr", {}, el("th", {}, k), el("td", {}, typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)));
  })));
}

function filesTable(files) {
  if (!files.length) return el("p", {class: "muted"}, "none");
  return el("table", {class: "list files"},
    el("thead", {}, el("tr", {}, ["File", "State", "Read", "Records", "Errors", "Last read"].map(h => el("th", {}, h)))),
    el("tbody", {}, files.flatMap(f => [
      el("tr", {}, el("td", {class: "path"}, f.path, f.generation ? ` (generation ${f.generation})` : ""),
         el("td", {}, f.resyncing ? "resyncing" : f.status),
         el("td", {class: "num"}, `${fmtStep(f.committed_offset)} / ${fmtStep(f.size)} B`),
         el("td", {class: "num"}, fmtStep(f.records)), el("td", {class: "num"}, fmtStep(f.errors)),
         el("td", {}, ago(f.last_read))),
      ...f.recent_errors.map(e => el("tr", {class: "ingest-error"},
         el("td", {colspan: 6}, `offset ${e.offset}: ${e.kind}: ${e.detail} (${when(e.time)})`))),
    ])));
}

// step <-> the trainer's step, from the step-metric series' points (nondecreasing in step).
async function trainerAxis(series) {
  const {points} = await api(`/api/series/${series.id}?width=4000`);
  const pts = points.filter(p => typeof p.value === "number").map(p => [p.step, p.value]);
  if (pts.length < 2) return null;
  const interp = (v, a, b) => {  // a's coordinate to b's, piecewise linear, clamped
    let lo = 0, hi = pts.length - 1;
    if (v <= pts[0][a]) return pts[0][b];
    if (v >= pts[hi][a]) return pts[hi][b];
    while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (pts[mid][a] <= v) lo = mid; else hi = mid; }
    const [p, q] = [pts[lo], pts[hi]];
    return q[a] === p[a] ? p[b] : p[b] + (v - p[a]) * (q[b] - p[b]) / (q[a] - p[a]);
  };
  return {x: s => interp(s, 0, 1), step: x => interp(x, 1, 0)};
}

export async function renderRun(main, runId, params) {
  const data = await api(`/api/runs/${runId}`);
  const run = data.run;
  // ?finding=ID (a notification's link) or ?focus=RULE (the runs page's chips).
  const focusId = Number(params.get("finding")) || null;
  const focusRule = params.get("focus");
  const isFocus = f => focusId ? f.id === focusId : f.rule === focusRule;
  const verdictFinding = data.findings.find(f => f.rule === "run_verdict" && f.state === "firing");
  const verdict = verdictFinding && verdictFinding.evidence ? verdictFinding.evidence.verdict : "healthy";
  const findings = data.findings.filter(f => f.rule !== "run_verdict" && f.state !== "pending");

  // Series per chart: the roles' series, and for the loss chart the run-level findings.
  const groups = GROUPS.map(g => ({...g, series: data.roles.filter(r => g.roles.includes(r.role)).slice(0, g.max || 6)}))
                       .filter(g => g.series.length);
  const chartOf = seriesId => groups.find(g => g.series.some(s => s.series_id === seriesId));
  const marks = data.markers.map(m => ({...m}));

  const chartsBox = el("div", {class: "charts"});
  const markItems = marks => marks.length ? marks.map(m =>
      el("li", {dataset: {marker: m.kind, step: m.step}},
         el("span", {class: "swatch", dataset: {kind: m.kind}}), ` ${MARK_NAMES[m.kind] || m.kind} `,
         el("b", {}, `step ${fmtStep(m.step)}`), ` ${m.label}`)) : [el("li", {class: "muted"}, "none")];
  const findingItems = findings => findings.length ? findings.map(f => findingItem(f, isFocus(f)))
                                                   : [el("li", {class: "muted"}, "No findings.")];
  const markList = el("ul", {id: "markers", class: "marks"}, markItems(marks));
  const findingList = el("ul", {id: "findings", class: "findings"}, findingItems(findings));
  const seriesList = el("ul", {id: "series", class: "series small"}, data.series.map(s =>
      el("li", {dataset: {seriesId: s.id}}, s.tag, el("span", {class: "muted"}, ` ${s.kind}${s.last_step !== null ? " · to step " + fmtStep(s.last_step) : ""}`))));

  main.replaceChildren(
    el("div", {class: "run-head"},
       el("h1", {}, el("span", {id: "verdict"}, badge(verdict)), " ", run.display_name || run.name),
       el("p", {class: "muted"}, `${run.format} · ${run.root}`, run.display_name ? ` · ${run.name}` : "",
          run.exit_code !== null ? ` · exit code ${run.exit_code}` : "",
          ` · `, el("a", {href: `/compare?runs=${run.id}`}, "compare with…")),
       el("p", {class: "verdict-reason"}, verdictFinding ? verdictFinding.message : "")),
    el("div", {class: "run-body"},
       el("section", {class: "plots"}, groups.length ? chartsBox : el("p", {class: "muted"}, "No scalar series with a known role."),
          el("h2", {}, "Marks"), markList),
       el("aside", {}, el("h2", {}, "Findings"), findingList)),
    el("section", {class: "details"},
       el("details", {open: true}, el("summary", {}, "Hyperparameters"), kvTable(data.hparams)),
       Object.keys(data.config).length ? el("details", {}, el("summary", {}, "Config"), kvTable(data.config)) : null,
       el("details", {}, el("summary", {}, `Series (${data.series.length})`), seriesList),
       el("details", {open: data.files.some(f => f.errors > 0)}, el("summary", {}, "Files"), filesTable(data.files))));

  // The trainer's own step, where W&B logs one (HF Trainer: train/global_step): ?x=trainer puts
  // the x axes in it, mapped from each point's step through that series (piecewise linear).
  const lossRole = data.roles.find(r => r.role === "train_loss");
  const lossSeries = lossRole && data.series.find(s => s.id === lossRole.series_id);
  const metricSeries = lossSeries && lossSeries.step_metric &&
      data.series.find(s => s.tag === lossSeries.step_metric && s.kind === "scalar");
  const axis = metricSeries && params.get("x") === "trainer" ? await trainerAxis(metricSeries) : null;
  if (metricSeries) {
    const here = new URLSearchParams(params);
    here.set("x", axis ? "step" : "trainer");
    main.querySelector(".run-head p.muted").append(" · x: ",
        el("a", {href: `?${here}`, id: "x-axis"}, axis ? `${metricSeries.tag} (switch to step)` : `step (switch to ${metricSeries.tag})`));
  }
  const toX = step => axis ? axis.x(step) : step;

  const charts = [];
  let zoom = null;
  // Linked x axes: zoomed, every chart shows the range; not zoomed, every chart shows the
  // steps of all of them (validation starts late, a memory series ends early).
  const alignAll = () => {
    const fulls = charts.map(c => c.full).filter(Boolean);
    if (!fulls.length) return;
    const lo = Math.min(...fulls.map(f => f[0])), hi = Math.max(...fulls.map(f => f[1]));
    for (const c of charts) if (c.plot) c.plot.setScale("x", {min: lo, max: hi});
  };
  const onZoom = range => {
    zoom = range;
    Promise.all(charts.map(c => c.load(range))).then(() => { if (!range) alignAll(); })
        .catch(err => showError(main, err));
  };
  for (const g of groups) {
    const box = el("div", {class: "chart", dataset: {role: g.role, roles: g.roles.join(" ")}});
    // A loss that spans decades (or a spike over a slow decline) reads better on a log scale.
    const logBox = el("input", {type: "checkbox", class: "log-y"});
    chartsBox.append(el("div", {class: "chart-wrap"},
        el("h3", {}, g.title, " ", el("label", {class: "small muted"}, logBox, " log y")), box));
    // A mark or finding about a series goes on its chart (the first chart if none shows it);
    // restarts, epochs and LR changes concern every curve.
    const home = seriesId => (seriesId && chartOf(seriesId)) || groups[0];
    const inChart = m => ["restart", "epoch", "lr_change"].includes(m.kind) ||
        (m.kind === "forecast" ? g.role === "train_loss" : home(m.series_id) === g);
    g.marksOf = markers => markers.filter(inChart).map(m => ({...m, x: toX(m.step)}));
    g.shadesOf = findings => findings.filter(f => home(f.series_id) === g)
        .map(f => ({from: toX(f.onset_step ?? f.first_step ?? 0), to: f.state === "resolved" ? toX(f.last_step) : null,
                    focus: isFocus(f), resolved: f.state === "resolved"}));
    charts.push(new Chart(box, {
      role: g.role, title: g.title, sync: `run-${runId}`, onZoom,
      series: g.series.map(s => ({id: s.series_id, label: s.label})),
      marks: g.marksOf(marks), shades: g.shadesOf(findings),
      xOf: axis ? p => axis.x(p.step) : undefined, toSteps: axis ? r => r.map(axis.step) : undefined,
      xLabel: axis ? metricSeries.tag : "step",
    }));
    const chart = charts[charts.length - 1];
    logBox.addEventListener("change", () => chart.setLog(logBox.checked, zoom).catch(err => showError(main, err)));
  }
  window.tw = {charts: charts.map(c => ({role: c.spec.role, get plot() { return c.plot; }, chart: c})), run: data};
  await Promise.all(charts.map(c => c.load(null)));
  alignAll();
  // Live: a growing run's page follows it at the daemon's refresh interval, unless zoomed
  // (a person looking at a range keeps it) or hidden in a background tab. New series (a role
  // that appeared) redraw the page.
  const shape = d => d.roles.map(r => `${r.role}:${r.series_id}`).join(",");
  const timer = setInterval(async () => {
    if (zoom || document.hidden) return;
    try {
      const fresh = await api(`/api/runs/${runId}`);
      if (shape(fresh) !== shape(data)) {
        clearInterval(timer);
        return renderRun(main, runId, params);
      }
      const v = fresh.findings.find(f => f.rule === "run_verdict" && f.state === "firing");
      document.getElementById("verdict").replaceChildren(badge(v && v.evidence ? v.evidence.verdict : "healthy"));
      main.querySelector(".verdict-reason").textContent = v ? v.message : "";
      const now = fresh.findings.filter(f => f.rule !== "run_verdict" && f.state !== "pending");
      findingList.replaceChildren(...findingItems(now));
      markList.replaceChildren(...markItems(fresh.markers));
      groups.forEach((g, i) => { charts[i].spec.marks = g.marksOf(fresh.markers); charts[i].spec.shades = g.shadesOf(now); });
      await Promise.all(charts.map(c => c.load(null)));
      if (!zoom) alignAll();
    } catch (err) {
      setUpdated(`refresh failed: ${err.message}`);
    }
  }, (data.refresh_seconds || 10) * 1000);
  window.onresize = () => charts.forEach(c => c.resize());  // one listener, also after a redraw
  const focused = document.querySelector(".finding.focus");
  if (focused) focused.scrollIntoView({block: "center"});
  // A mark's line in the list zooms the charts around it (delegated: the list is redrawn live).
  markList.addEventListener("click", e => {
    const li = e.target.closest("li[data-step]");
    if (!li) return;
    const s = toX(Number(li.dataset.step));
    const span = charts[0] && charts[0].full ? (charts[0].full[1] - charts[0].full[0]) / 20 : 50;
    onZoom([s - span, s + span]);
  });
  setReady();
}
