// Shared by the pages: building DOM from data (text only, never markup: tag names, messages
// and paths come from log files), fetching the API, and formatting.

// el("a", {href: "/x", class: "c"}, "text", child) -> an element; strings become text nodes.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export class ApiError extends Error {}

export async function api(path) {
  const r = await fetch(path, {headers: {Accept: "application/json"}});
  let body = null;
  try { body = await r.json(); } catch (e) { /* not JSON: reported below */ }
  if (!r.ok) throw new ApiError(`${path}: ${r.status} ${body && body.error ? body.error : r.statusText}`);
  return body;
}

// The API writes non-finite values as the strings "NaN", "Infinity", "-Infinity".
export function num(v) {
  if (typeof v === "number") return v;
  if (v === "NaN") return NaN;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  return null;
}

export function fmt(v) {
  const x = num(v);
  if (x === null) return "–";
  if (!Number.isFinite(x)) return String(x);
  if (x !== 0 && (Math.abs(x) >= 1e5 || Math.abs(x) < 1e-3)) return x.toExponential(3);
  return String(Number(x.toPrecision(5)));
}

export function fmtStep(s) {
  return s === null || s === undefined ? "–" : Number(s).toLocaleString("en-US");
}

export function ago(unix, now = Date.now() / 1000) {
  if (unix === null || unix === undefined || typeof unix !== "number") return "–";
  const d = Math.max(0, now - unix);
  if (d < 90) return `${Math.round(d)} s ago`;
  if (d < 5400) return `${Math.round(d / 60)} min ago`;
  if (d < 129600) return `${Math.round(d / 3600)} h ago`;
  return `${Math.round(d / 86400)} d ago`;
}

export function when(unix) {
  if (typeof unix !== "number") return "–";
  return new Date(unix * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
}

export function badge(verdict) {
  return el("span", {class: `badge ${verdict}`, title: `verdict: ${verdict}`}, verdict);
}

export function severityBadge(sev) {
  return el("span", {class: `sev ${sev}`}, sev);
}

export function showError(main, err) {
  main.replaceChildren(el("p", {class: "error", role: "alert"}, String(err && err.message ? err.message : err)));
}

// Tests and the screenshot tool wait for this: everything fetched and drawn.
export function setReady() {
  document.body.dataset.ready = "1";
}

export function setUpdated(text) {
  const u = document.getElementById("updated");
  if (u) u.textContent = text;
}

// A glob as the daemon reads run globs: * any run of characters, ? one character.
export function globMatch(glob, text) {
  const re = "^" + glob.split("").map(c => c === "*" ? ".*" : c === "?" ? "." :
      c.replace(/[.+^${}()|[\]\\]/g, "\\$&")).join("") + "$";
  return new RegExp(re, "i").test(text);
}
