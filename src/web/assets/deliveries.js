// Deliveries: the outbox per channel (sent, pending with the group each waits for, dead with the
// last error) and the silences.
import {el, api, when, ago, setReady} from "./util.js";

export async function renderDeliveries(main) {
  const [outbox, silences] = await Promise.all([api("/api/outbox"), api("/api/silences")]);
  const now = Date.now() / 1000;
  const channels = outbox.channels.length
      ? el("table", {class: "list", id: "channels"},
           el("thead", {}, el("tr", {}, ["Channel", "Sent", "Pending", "Dead", "Oldest pending", "Last error"].map(h => el("th", {}, h)))),
           el("tbody", {}, outbox.channels.map(c => el("tr", {dataset: {channel: c.channel}},
               el("td", {}, c.channel), el("td", {class: "num"}, c.sent), el("td", {class: "num"}, c.pending),
               el("td", {class: `num${c.dead ? " bad" : ""}`}, c.dead),
               el("td", {}, c.oldest_pending ? ago(c.oldest_pending, now) : "–"),
               el("td", {class: "error-text"}, c.last_error || "")))))
      : el("p", {class: "muted", id: "channels"}, "Nothing queued yet.");
  const waiting = outbox.waiting.length
      ? el("table", {class: "list", id: "waiting"},
           el("thead", {}, el("tr", {}, ["Channel", "Group", "Messages", "Oldest", "Due"].map(h => el("th", {}, h)))),
           el("tbody", {}, outbox.waiting.map(w => el("tr", {},
               el("td", {}, w.channel), el("td", {}, typeof w.group === "string" ? w.group : JSON.stringify(w.group)),
               el("td", {class: "num"}, w.messages), el("td", {}, ago(w.oldest, now)), el("td", {}, when(w.due))))))
      : el("p", {class: "muted", id: "waiting"}, "No group is waiting.");
  const active = silences.silences.filter(s => s.expires > now);
  const silenceTable = active.length
      ? el("table", {class: "list", id: "silences"},
           el("thead", {}, el("tr", {}, ["Runs", "Rule", "Until", "Comment"].map(h => el("th", {}, h)))),
           el("tbody", {}, active.map(s => el("tr", {}, el("td", {}, s.run_glob), el("td", {}, s.rule || "every rule"),
               el("td", {}, when(s.expires)), el("td", {}, s.comment)))))
      : el("p", {class: "muted", id: "silences"}, "No silence is active.");
  // The view's one write (docs/web.md); the same silence as a command, for scripts.
  const run = el("input", {name: "run", placeholder: "run glob, e.g. exp/*", required: true});
  const rule = el("input", {name: "rule", placeholder: "rule (empty: every rule)"});
  const hours = el("input", {name: "hours", type: "number", min: "0.1", max: "8784", step: "0.1", value: "4", required: true});
  const comment = el("input", {name: "comment", placeholder: "why"});
  const out = el("pre", {id: "silence-command", class: "command"});
  const result = el("p", {id: "silence-result", role: "status"});
  const minutes = () => Math.max(1, Math.round((Number(hours.value) || 4) * 60));
  const quote = s => `'${s.replace(/'/g, "'\\''")}'`;
  const update = () => {
    const parts = ["trainwatch silence add --db", quote(silences.db || "STORE"), "--run", quote(run.value || "*")];
    if (rule.value) parts.push("--rule", quote(rule.value));
    parts.push("--for", `${minutes()}m`);
    if (comment.value) parts.push("--comment", quote(comment.value));
    out.textContent = parts.join(" ");
  };
  const submit = async e => {
    e.preventDefault();
    const r = await fetch("/api/silences", {method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({run: run.value, rule: rule.value, minutes: minutes(), comment: comment.value})});
    const body = await r.json().catch(() => ({}));
    if (r.ok) location.reload();
    else result.textContent = `Not added: ${body.error || r.statusText}`;
  };
  const form = el("form", {class: "silence-form", oninput: update, onsubmit: submit},
      el("label", {}, "Runs ", run), el("label", {}, "Rule ", rule), el("label", {}, "Hours ", hours),
      el("label", {}, "Comment ", comment), el("button", {type: "submit"}, "Add silence"));
  update();
  main.replaceChildren(el("h1", {}, "Deliveries"), el("h2", {}, "Channels"), channels,
      el("h2", {}, "Waiting groups"), waiting, el("h2", {}, "Silences"), silenceTable,
      el("h3", {}, "Add a silence"), form, result,
      el("p", {class: "muted small"}, "The daemon honours it at the next transition, with no restart. The same from a shell:"), out);
  setReady();
}
