// The panel's entry point. For now it shows whether the API and its database answer.
"use strict";

async function probe(path) {
  try {
    const response = await fetch(path, { cache: "no-store" });
    return response.ok ? "ok" : `unavailable (${response.status})`;
  } catch (err) {
    return "unreachable";
  }
}

async function showStatus() {
  document.getElementById("status-api").textContent = await probe("/healthz");
  document.getElementById("status-db").textContent = await probe("/readyz");
}

showStatus();
setInterval(showStatus, 10000);
