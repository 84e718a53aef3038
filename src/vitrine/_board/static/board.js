// The board's only script: small conveniences over server-rendered pages. Every page works
// without it; it never inserts markup, only text (textContent), so nothing it shows can run.
"use strict";

function setupCompare() {
  const form = document.getElementById("compare-form");
  if (!form) return;
  const button = document.getElementById("compare-button");
  const picked = [];
  document.querySelectorAll("input.pick").forEach((box) => {
    box.addEventListener("change", () => {
      const at = picked.indexOf(box.value);
      if (box.checked && at < 0) picked.push(box.value);
      if (!box.checked && at >= 0) picked.splice(at, 1);
      while (picked.length > 2) {
        const dropped = picked.shift();
        document.querySelectorAll("input.pick").forEach((b) => {
          if (b.value === dropped) b.checked = false;
        });
      }
      // The first run picked is the baseline, the second the candidate.
      document.getElementById("compare-a").value = picked[0] || "";
      document.getElementById("compare-b").value = picked[1] || "";
      button.disabled = picked.length !== 2;
    });
  });
}

function setupFilters() {
  // Empty filters are left out of the URL, so a linked view names only what it filters on.
  const form = document.getElementById("filters");
  if (!form) return;
  form.addEventListener("submit", () => {
    form.querySelectorAll("select, input").forEach((field) => {
      if (!field.value || (field.name === "per" && field.value === "50")) field.disabled = true;
    });
  });
}

function setupPlanForm() {
  const select = document.getElementById("plan");
  if (!select) return;
  const reps = document.getElementById("repetitions");
  const scenario = document.getElementById("scenario");
  const paid = document.getElementById("paid-confirm");
  const confirm = document.getElementById("confirm-paid");
  const preview = document.getElementById("workload");
  const scenarioCount = document.querySelectorAll("#scenarios tbody tr").length;
  const update = () => {
    const row = document.querySelector(`#plans tr[data-plan="${CSS.escape(select.value)}"]`);
    if (!row) return;
    const d = row.dataset;
    const configurable = d.configurable === "yes";
    reps.disabled = !configurable;
    reps.min = d.min;
    reps.max = d.max;
    reps.placeholder = `default ${d.default}`;
    scenario.disabled = d.scenario !== "yes";
    paid.hidden = d.paid !== "yes";
    if (d.paid !== "yes") confirm.checked = false;
    const n = configurable && reps.value ? Number(reps.value) : Number(d.default);
    const scenarios = d.scenario === "yes" ? (scenario.value ? 1 : scenarioCount) : 0;
    preview.textContent =
      (d.scenario === "yes"
        ? `${scenarios} scenario(s) x ${n} repetition(s) per arm`
        : `the plan's fixed workload, ${n} repetition(s)`) +
      (configurable ? ` (this plan accepts ${d.min} to ${d.max})` : " (not configurable)") +
      (d.paid === "yes" ? "; paid: the confirmation below is required" : "; free, offline");
    planPreview(select.value, scenario.disabled ? "" : scenario.value, configurable ? reps.value : "");
  };
  // The plan's own preview (workload and power), computed by the server calling nothing;
  // the line above stays when it cannot be had (an exported copy has no server).
  let asked = 0;
  const planPreview = async (plan, chosen, repetitions) => {
    const ticket = ++asked;
    const query = new URLSearchParams({ plan, scenario: chosen, repetitions });
    try {
      const reply = await fetch(`/api/preview?${query}`, { cache: "no-store" });
      const body = await reply.json();
      if (ticket !== asked) return; // a later choice has been made since
      const lines = body.lines || [`refused: ${body.error}`];
      preview.textContent = lines.join("\n");
    } catch (_) {
      // keep the local line
    }
  };
  [select, reps, scenario].forEach((el) => el.addEventListener("change", update));
  reps.addEventListener("input", update);
  update();
}

function followJob() {
  const status = document.getElementById("job-status");
  if (!status || status.dataset.running !== "yes") return;
  const log = document.getElementById("job-log");
  const poll = async () => {
    try {
      const reply = await fetch(`/api/job/${status.dataset.job}`, { cache: "no-store" });
      const job = await reply.json();
      log.textContent = job.lines.join("\n");
      if (job.running) {
        status.textContent = `running… ${job.elapsed_s} s`;
        setTimeout(poll, 700);
      } else {
        status.textContent = `finished: exit ${job.exit_code}`;
        status.dataset.running = "no";
      }
    } catch (err) {
      status.textContent = "lost contact with the board; reload to see how the run ended";
    }
  };
  poll();
}

document.addEventListener("DOMContentLoaded", () => {
  setupFilters();
  setupCompare();
  setupPlanForm();
  followJob();
});
