// One uPlot chart of a run's series: fetched at the plot's pixel width (the server's M4 keeps
// every extreme), refetched at full detail for a zoomed range, with findings shaded from their
// onset, marks drawn as vertical lines, non-finite points as red ticks and points a restart
// superseded drawn faded. The run page and the compare page both use it.
import {api, num} from "./util.js";

export const COLORS = ["#3b6fb6", "#d9822b", "#2e7d32", "#8e44ad", "#00838f", "#6d4c41", "#c2185b", "#546e7a"];
export const MARK_STYLE = {
  nonfinite: {color: "#c62828", dash: [4, 3], width: 2},
  restart: {color: "#7b1fa2", dash: [6, 3], width: 2},
  epoch: {color: "rgba(0,0,0,0.18)", dash: [], width: 1},
  lr_change: {color: "#1565c0", dash: [3, 3], width: 1.5},
  best_val: {color: "#2e7d32", dash: [], width: 2},
  forecast: {color: "#616161", dash: [2, 4], width: 1.5},
};

// An axis label that keeps small values (an LR of 3e-5) apart: uPlot's default rounds them to 0.
function tick(v) {
  if (v === null || v === undefined) return "";
  if (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e6)) return v.toExponential(1);
  return String(Number(v.toPrecision(4)));
}

// One series' points as [xs, live ys, superseded ys], its non-finite steps apart.
function table(points, xOf) {
  const xs = [], live = [], old = [], nonfinite = [];
  for (const p of points) {
    const x = xOf(p);
    if (x === null || x === undefined) continue;
    const v = num(p.value);
    const finite = Number.isFinite(v);
    if (!finite) nonfinite.push(x);
    if (xs.length && xs[xs.length - 1] === x) {  // one x, two points: the later wins
      if (p.superseded) old[old.length - 1] = finite ? v : null;
      else live[live.length - 1] = finite ? v : null;
      continue;
    }
    xs.push(x);
    live.push(p.superseded ? undefined : finite ? v : null);
    old.push(p.superseded ? (finite ? v : null) : undefined);
  }
  return {data: [xs, live, old], nonfinite, hasOld: old.some(v => v !== undefined)};
}

// spec: {title, role, series: [{id, label}], marks: [{kind, step, x?, label, series_id}],
//        shades: [{from, to, focus, resolved}] (in x units), xOf(point) -> x, toSteps([x0, x1]),
//        xLabel, sync, onZoom(range | null), height, log}
export class Chart {
  constructor(container, spec) {
    this.spec = spec;
    this.root = container;
    this.full = null;        // the x range of everything, once loaded
    this.nonfinite = [];
    this.plot = null;
    this.loading = 0;
  }

  width() {
    return Math.max(240, Math.floor(this.root.clientWidth || 800));
  }

  async load(range) {
    const w = this.width();
    // The server's ranges are in steps; an x axis in another unit (the trainer's step) maps back.
    const steps = range && this.spec.toSteps ? this.spec.toSteps(range) : range;
    const q = steps ? `&from=${Math.floor(steps[0])}&to=${Math.ceil(steps[1])}` : "";
    const ticket = ++this.loading;
    const answers = await Promise.all(this.spec.series.map(s =>
        api(`/api/series/${s.id}?width=${w}&superseded=1${q}`)));
    if (ticket !== this.loading) return;  // a newer zoom asked since
    const tables = answers.map(a => table(a.points, this.spec.xOf || (p => p.step)));
    if (this.spec.log)
      for (const t of tables) for (const ys of t.data.slice(1)) ys.forEach((v, i) => { if (v !== undefined && v !== null && v <= 0) ys[i] = null; });
    this.nonfinite = tables.flatMap(t => t.nonfinite);
    this.total = answers.reduce((n, a) => n + a.total, 0);
    // A series gets a faded twin for the points a restart superseded only if it has some.
    if (!this.withOld) this.withOld = tables.map(t => t.hasOld);
    const joined = uPlot.join(tables.map((t, i) => this.withOld[i] ? t.data : t.data.slice(0, 2)));
    if (!this.plot) this.create(joined);
    else this.plot.setData(joined, !range);  // no range: the scales fit the data again
    if (range) this.plot.setScale("x", {min: range[0], max: range[1]});
    if (!range) {
      const xs = joined[0];
      this.full = xs.length ? [xs[0], xs[xs.length - 1]] : null;
    }
  }

  create(data) {
    const series = [{label: this.spec.xLabel || "step"}];
    this.spec.series.forEach((s, i) => {
      const color = s.color || COLORS[i % COLORS.length];
      // Points drawn where uPlot finds room for them (a sparse validation series), not on dense ones.
      series.push({label: s.label, stroke: color, fill: undefined, width: 1.5, spanGaps: true,
                   points: {size: 5}, value: (u, v) => v == null ? "–" : Number(v.toPrecision(5))});
      if (this.withOld[i])
        series.push({label: `${s.label} (superseded)`, stroke: color + "55", width: 1, spanGaps: true,
                     points: {show: false}, value: (u, v) => v == null ? "–" : Number(v.toPrecision(5))});
    });
    const self = this;
    const opts = {
      width: this.width(),
      height: this.spec.height || 220,
      series,
      scales: {x: {time: false}, y: {distr: this.spec.log ? 3 : 1}},
      axes: [{label: this.spec.xLabel || "step"}, {size: 64, values: (u, splits) => splits.map(tick)}],
      legend: {live: true},
      cursor: {sync: this.spec.sync ? {key: this.spec.sync, setSeries: false} : undefined,
               drag: {x: true, y: false}},
      hooks: {
        draw: [u => self.drawOverlay(u)],
        setSelect: [u => {
          if (u.select.width < 4) return;
          const lo = u.posToVal(u.select.left, "x"), hi = u.posToVal(u.select.left + u.select.width, "x");
          u.setSelect({left: 0, width: 0, top: 0, height: 0}, false);
          if (self.spec.onZoom) self.spec.onZoom([lo, hi]);
        }],
      },
    };
    opts.cursor.drag.setScale = false;  // zoom goes through onZoom: all charts refetch
    this.plot = new uPlot(opts, data, this.root);
    this.plot.over.addEventListener("dblclick", () => this.spec.onZoom && this.spec.onZoom(null));
  }

  drawOverlay(u) {
    const g = u.ctx;
    const {left, top, width, height} = u.bbox;
    const X = v => u.valToPos(v, "x", true);
    g.save();
    g.beginPath();
    g.rect(left, top, width, height);
    g.clip();
    for (const s of this.spec.shades || []) {
      const x0 = Math.max(left, X(s.from));
      const x1 = s.to === null || s.to === undefined ? left + width : Math.min(left + width, X(s.to));
      if (x1 < left || x0 > left + width) continue;
      g.fillStyle = s.focus ? "rgba(198,40,40,0.22)" : s.resolved ? "rgba(120,120,120,0.08)" : "rgba(217,130,43,0.13)";
      g.fillRect(x0, top, Math.max(x1 - x0, 3), height);
    }
    const dpr = devicePixelRatio || 1;
    for (const m of this.spec.marks || []) {
      const st = MARK_STYLE[m.kind] || MARK_STYLE.epoch;
      const x = X(m.x !== undefined ? m.x : m.step);
      if (!(x >= left && x <= left + width)) continue;
      g.strokeStyle = st.color;
      g.lineWidth = st.width * dpr;
      g.setLineDash(st.dash.map(d => d * dpr));
      g.beginPath();
      g.moveTo(x, top);
      g.lineTo(x, top + height);
      g.stroke();
      if (m.kind === "forecast" && m.value !== undefined) {
        const y = u.valToPos(m.value, "y", true);
        g.fillStyle = st.color;
        g.beginPath();
        g.arc(x, y, 4 * dpr, 0, 2 * Math.PI);
        g.fill();
      }
    }
    g.setLineDash([]);
    g.fillStyle = "#c62828";  // each non-finite point: a red triangle at the top edge
    for (const s of this.nonfinite) {
      const x = X(s);
      if (!(x >= left && x <= left + width)) continue;
      g.beginPath();
      g.moveTo(x - 5 * dpr, top);
      g.lineTo(x + 5 * dpr, top);
      g.lineTo(x, top + 9 * dpr);
      g.fill();
    }
    g.restore();
  }

  // uPlot fixes a scale's distribution at creation: a new plot, same range. A log scale drops
  // values <= 0 (uPlot cannot place them).
  async setLog(on, range) {
    this.spec.log = on;
    if (this.plot) this.plot.destroy();
    this.plot = null;
    await this.load(range);
  }

  resize() {
    if (this.plot) this.plot.setSize({width: this.width(), height: this.spec.height || 220});
  }
}
