// The console's life: the login form, the refresh loop, and what the
// page shows while the router answers, refuses or is away.

import { token, snapshot, describe, APIError, checkToken } from "./api.js";
import * as graph from "./graph.js";
import * as tables from "./tables.js";

// REFRESH_MS between the end of one refresh and the start of the next;
// a slow API (a large network's topology costs CPU to compute) stretches
// it to SLOW_FACTOR times what the last refresh took.
const REFRESH_MS = 1000;
const SLOW_FACTOR = 5;

const $ = (id) => document.getElementById(id);
let timer = null;
let inflight = false;
// session counts logins and logouts: a refresh that began in an earlier
// one draws nothing when its answers arrive.
let session = 0;
let rates = new tables.Rates();
let lastGood = 0;

function setStatus(state, text) {
  const s = $("status");
  s.dataset.state = state;
  s.textContent = text;
}

function showLogin(message) {
  session++;
  stop();
  clearData();
  $("console").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  const err = $("login-error");
  err.textContent = message || "";
  err.hidden = !message;
  setStatus("idle", "");
  $("token").focus();
}

// clearData removes everything a previous session drew, so that a
// refused token leaves no data on the page.
function clearData() {
  document.title = "fedrouter console";
  $("router-id").textContent = "";
  $("summary").replaceChildren();
  $("graph").replaceChildren();
  for (const id of ["graph-note", "routes-note", "cluster-note", "dest-note"]) $(id).textContent = "";
  for (const id of ["links", "brokers", "routes", "cluster"]) $(id).tBodies[0].replaceChildren();
  $("destinations").replaceChildren();
  $("cluster-panel").hidden = true;
  $("dest-panel").hidden = true;
  rates = new tables.Rates();
  lastGood = 0;
}

function stop() {
  if (timer !== null) clearTimeout(timer);
  timer = null;
}

async function login(ev) {
  ev.preventDefault();
  const input = $("token");
  const tok = input.value.trim();
  input.value = "";
  if (!tok) return;
  $("login-submit").disabled = true;
  try {
    await checkToken(tok);
  } catch (e) {
    showLogin(describe(e));
    return;
  } finally {
    $("login-submit").disabled = false;
  }
  token.set(tok);
  start();
}

function start() {
  session++;
  $("login").hidden = true;
  $("logout").hidden = false;
  setStatus("loading", "Loading…");
  refresh();
}

async function refresh() {
  timer = null;
  const tok = token.get();
  if (!tok) {
    showLogin("");
    return;
  }
  const mine = session;
  const began = performance.now();
  inflight = true;
  try {
    const snap = await snapshot(tok);
    if (mine !== session) return;
    render(snap);
    lastGood = Date.now();
    setStatus("live", "Live · refreshed " + new Date(lastGood).toLocaleTimeString());
  } catch (e) {
    if (mine !== session) return;
    if (e instanceof APIError && e.status === 401) {
      token.clear();
      showLogin("The router no longer accepts the token (was it changed?): enter it again.");
      return;
    }
    const since = lastGood ? " · last good refresh " + new Date(lastGood).toLocaleTimeString() + "; what is shown is from then" : "";
    setStatus("error", describe(e) + since);
  } finally {
    inflight = false;
  }
  // A hidden tab asks nothing: a console left open in the background
  // costs the router nothing. It refreshes as soon as it is shown.
  if (document.hidden) return;
  const took = performance.now() - began;
  timer = setTimeout(refresh, Math.max(REFRESH_MS, SLOW_FACTOR * took));
}

function resume() {
  if (!document.hidden && token.get() && $("login").hidden && timer === null && !inflight) refresh();
}

function render(snap) {
  $("router-id").textContent = snap.router.router_id;
  document.title = "fedrouter " + snap.router.router_id;
  const m = graph.model(snap);
  $("graph-note").textContent = graph.draw($("graph"), m);
  tables.summary($("summary"), snap, m);
  tables.links($("links"), m, snap);
  tables.brokers($("brokers"), snap);
  tables.routes($("routes"), $("routes-note"), snap, rates.update(snap));
  tables.cluster($("cluster-panel"), $("cluster"), $("cluster-note"), snap);
  tables.destinations($("dest-panel"), $("destinations"), $("dest-note"), snap);
  $("console").hidden = false;
}

function logout() {
  token.clear();
  showLogin("");
}

$("login-form").addEventListener("submit", login);
$("logout").addEventListener("click", logout);
document.addEventListener("visibilitychange", resume);
if (token.get()) start(); else showLogin("");
