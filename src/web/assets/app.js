// The page router: one HTML shell for every page; the path says which page draws into <main>.
import {api, showError} from "./util.js";
import {renderRuns} from "./runs.js";
import {renderRun} from "./run.js";
import {renderFindings} from "./findings.js";
import {renderDeliveries} from "./deliveries.js";
import {renderCompare} from "./compare.js";

const main = document.getElementById("app");
const path = location.pathname;
const params = new URLSearchParams(location.search);
const runMatch = path.match(/^\/runs\/(\d+)$/);
const findingMatch = path.match(/^\/findings\/(\d+)$/);
const pages = [
  [path === "/", "runs", () => renderRuns(main, params)],
  [runMatch, "runs", () => renderRun(main, Number(runMatch && runMatch[1]), params)],
  [path === "/findings", "findings", () => renderFindings(main, params)],
  // A notification's link: the finding's run page, that finding focused.
  [findingMatch, "findings", async () => {
    const {finding} = await api(`/api/findings/${findingMatch[1]}`);
    location.replace(`/runs/${finding.run_id}?finding=${finding.id}`);
  }],
  [path === "/deliveries", "deliveries", () => renderDeliveries(main, params)],
  [path === "/compare", "compare", () => renderCompare(main, params)],
];
const page = pages.find(p => p[0]);
if (!page) {
  showError(main, `no such page: ${path}`);
} else {
  for (const a of document.querySelectorAll("nav a"))
    if (a.dataset.nav === page[1]) a.classList.add("here");
  page[2]().catch(err => showError(main, err));
}
