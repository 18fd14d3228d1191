// The page's tables: the summary line, the links, this router's broker
// connections, the routes (with a rate from the last two refreshes), the
// cluster members and the global destinations. Each row carries data-*
// attributes naming what it shows and its state, for scripts and tests.

import { ROUTE_LIMIT } from "./api.js";
import { el, fillBody, ago, count, zeroTime, badge, stateClass } from "./dom.js";

// MAX_LINK_ROWS bounds the links table on large networks.
const MAX_LINK_ROWS = 400;

export function summary(root, snap, graph) {
  const up = (xs, ok) => xs.filter(ok).length;
  const routeStates = new Map();
  for (const r of snap.routes) routeStates.set(r.state, (routeStates.get(r.state) || 0) + 1);
  const cards = [
    card("Brokers connected", up(snap.brokers, (b) => b.state === "Operational") + " / " + snap.brokers.length,
      snap.brokers.every((b) => b.state === "Operational") ? "ok" : "bad"),
    card("Links up", up(graph.links, (l) => l.state === "up") + " / " + graph.links.length,
      graph.links.every((l) => l.state === "up") ? "ok" : "bad"),
    card("Routes", count(snap.router.routes),
      routeStates.has("Failed") ? "bad" : ([...routeStates.keys()].every((s) => s === "Operational") ? "ok" : "warn"),
      [...routeStates].map(([s, n]) => n + " " + s).join(", ") || "none"),
  ];
  if (snap.topology) cards.push(card("Routers in the network", String((snap.topology.routers || []).length), "idle", "radius " + snap.topology.radius));
  root.replaceChildren(...cards);
}

function card(title, value, cls, sub) {
  return el("div", { class: "card " + cls },
    el("div", { class: "card-title", text: title }),
    el("div", { class: "card-value", text: value }),
    sub ? el("div", { class: "card-sub", text: sub }) : null);
}

export function links(table, graph, snap) {
  const age = new Map(((snap.topology && snap.topology.links) || []).map((l) => [l.from + "|" + l.to + "|" + l.router, l.age]));
  const rows = graph.links.slice(0, MAX_LINK_ROWS).map((l) => {
    const key = l.from + "|" + l.to;
    const a = age.get(key + "|" + l.router);
    return el("tr", { "data-link": key, "data-state": l.state, class: graph.nextHops.has(key) ? "nexthop-row" : null },
      el("td", { text: l.from }), el("td", { text: l.to }),
      el("td", { class: "num", text: l.cost === null ? "—" : l.cost }),
      el("td", {}, badge(l.state)),
      el("td", { text: l.router }),
      el("td", { text: a === undefined ? "" : a }));
  });
  if (graph.links.length > MAX_LINK_ROWS) {
    rows.push(el("tr", { class: "empty" }, el("td", { colspan: 6, text: "… and " + (graph.links.length - MAX_LINK_ROWS) + " more (fedrouter topology)" })));
  }
  fillBody(table, rows, "No links: this router holds none and hears of none.");
}

export function brokers(table, snap) {
  const now = snap.at;
  const rows = snap.brokers.map((b) => el("tr", { "data-broker": b.broker, "data-state": b.state },
    el("td", { class: "strong", text: b.broker }),
    el("td", {}, badge(b.state), b.retry_in ? el("span", { class: "sub", text: " retry in " + b.retry_in }) : null),
    el("td", { text: ago(b.since, now), title: b.since }),
    el("td", { class: "mono", text: b.url }),
    errorCell(b.last_error, b.last_error_at, now, b.state === "Operational"),
    el("td", { class: "num", text: b.attempt || "" })));
  fillBody(table, rows, "No broker configured.");
}

// errorCell shows the last error and its time; past (the thing is
// Operational again) shows it greyed, as history rather than alarm.
function errorCell(msg, at, now, past) {
  if (!msg) return el("td", { class: "muted", text: "—" });
  const clipped = msg.length > 160 ? msg.slice(0, 157) + "…" : msg;
  return el("td", { class: past ? "error-cell past" : "error-cell", title: msg, "data-past": past },
    past ? el("span", { class: "sub", text: "before it recovered: " }) : null,
    el("span", { text: clipped }),
    zeroTime(at) ? null : el("span", { class: "sub when", title: at, text: " " + ago(at, now) }));
}

// Rates remembers each route's forwarded count at the last refresh and
// gives messages per second since then.
export class Rates {
  constructor() { this.last = new Map(); }
  update(snap) {
    const rates = new Map(), next = new Map();
    for (const r of snap.routes) {
      const prev = this.last.get(r.id);
      next.set(r.id, { n: r.forwarded, at: snap.at });
      if (prev && snap.at > prev.at && r.forwarded >= prev.n) rates.set(r.id, ((r.forwarded - prev.n) * 1000) / (snap.at - prev.at));
    }
    this.last = next;
    return rates;
  }
}

export function routes(table, note, snap, rates) {
  const now = snap.at;
  const rows = snap.routes.map((r) => {
    const s = r.spec || {};
    const what = s.kind === "queue" ? "queue " + s.queue : (s.kind === "exchange" ? "key " + (s.key || "\"\"") : s.kind);
    const refused = (r.rejected || 0) + (r.dead_lettered || 0) + (r.no_outcome || 0);
    const rate = rates.get(r.id);
    return el("tr", { "data-route": r.id, "data-state": r.state, class: "state-" + stateClass(r.state) },
      el("td", {}, el("span", { class: "mono", text: r.id }), el("div", { class: "sub", text: s.kind + " · " + r.origin })),
      el("td", {}, el("span", { class: "strong", text: s.src + " → " + s.dest }),
        el("div", { class: "sub", text: (s.exchange || "(default exchange)") + " · " + what })),
      el("td", {}, badge(r.state), zeroTime(r.since) ? null : el("div", { class: "sub", title: r.since, text: "since " + ago(r.since, now) }),
        r.detail ? el("div", { class: "sub", text: r.detail }) : null,
        r.retry_in ? el("div", { class: "sub", text: "retry in " + r.retry_in }) : null),
      errorCell(r.last_error, r.last_error_at, now, r.state === "Operational"),
      el("td", { class: "num", text: count(r.forwarded) }),
      el("td", { class: "num", text: rate === undefined ? "—" : rate.toFixed(rate < 10 ? 1 : 0) + "/s" }),
      el("td", { class: "num", text: count(r.in_flight) }),
      el("td", { class: "num", title: "rejected " + (r.rejected || 0) + ", dead-lettered " + (r.dead_lettered || 0) + ", no outcome " + (r.no_outcome || 0), text: count(refused) }),
      el("td", { text: r.holder || "" }));
  });
  fillBody(table, rows, "No routes.");
  table.classList.toggle("no-holder", !snap.cluster); // the Holder column is a cluster's
  // A partial list must not read as the whole: say so first, as a warning.
  const parts = [];
  if (snap.partial) parts.push("Partial list: " + snap.partial + ".");
  if (snap.moreRoutes) {
    parts.push("The first " + ROUTE_LIMIT + " of " + count(snap.router.routes) + " routes (by destination, source, exchange): fedrouter route list shows them all.");
  }
  note.textContent = parts.join(" ");
  note.classList.toggle("warn", Boolean(snap.partial));
}

export function cluster(panel, table, note, snap) {
  const c = snap.cluster;
  panel.hidden = !c;
  if (!c) return;
  const held = new Map();
  for (const r of snap.routes) {
    if (!r.holder) continue;
    if (!held.has(r.holder)) held.set(r.holder, []);
    held.get(r.holder).push(r);
  }
  note.textContent = "Cluster " + c.name + (c.joined ? ", as " + c.self + " last read the store" + (zeroTime(c.read_at) ? "" : " (" + ago(c.read_at, snap.at) + ")") : ": " + c.self + " has not reached the store yet") +
    "; heartbeat " + c.heartbeat + ", lease " + c.lease + ".";
  const rows = (c.members || []).map((m) => {
    const mine = held.get(m.id) || [];
    const names = mine.slice(0, 8).map((r) => r.spec.src + " → " + r.spec.dest + " (" + r.id + ")");
    if (mine.length > 8) names.push("+" + (mine.length - 8) + " more");
    return el("tr", { "data-member": m.id, "data-state": m.state },
      el("td", { class: "strong", text: m.id + (m.id === c.self ? " (this router)" : "") }),
      el("td", {}, badge(m.state)),
      el("td", { text: m.beat_ago + " ago", title: m.last_beat }),
      el("td", { text: (m.brokers || []).join(", ") }),
      el("td", { class: "num", text: count(m.routes) }),
      el("td", { class: "sub", text: names.join(", ") }));
  });
  fillBody(table, rows, "No members read from the store yet.");
}

export function destinations(panel, root, note, snap) {
  const d = snap.destinations;
  panel.hidden = !d;
  if (!d) return;
  const unlisted = Object.entries(d.unlisted || {});
  note.textContent = unlisted.length ? "Not listed: " + unlisted.map(([b, why]) => b + " (" + why + ")").join("; ") : "";
  const cards = (d.destinations || []).map((x) => destination(x, snap.at));
  root.replaceChildren(...(cards.length ? cards : [el("p", { class: "muted", text: "No global destination yet." })]));
}

function destination(d, now) {
  const inst = el("table", { class: "grid inner" },
    el("thead", {}, el("tr", {}, el("th", { text: "Instance at" }), el("th", { text: "State" }), el("th", { class: "num", text: "Messages" }), el("th", { class: "num", text: "Consumers" }))),
    el("tbody", {}, ...(d.instances || []).map((i) => el("tr", { "data-instance": i.broker, "data-state": i.state },
      el("td", { text: i.broker }), el("td", {}, badge(i.state)),
      el("td", { class: "num", text: count(i.messages) }), el("td", { class: "num", text: count(i.consumers) })))));
  const flows = (d.flows || []).map((f) => el("li", { "data-flow": f.from + "|" + f.to, "data-state": f.state || "" },
    el("span", { class: "strong", text: f.from + " → " + f.to }), " ", badge(f.state || "starting"),
    el("span", { class: "sub", text: " moved " + count(f.moved) + ", parked " + count(f.parked) + ", since " + ago(f.since, now) })));
  return el("div", { class: "dest", "data-destination": d.name, "data-state": d.state },
    el("h3", {}, el("span", { class: "mono", text: d.name }), " ", badge(d.state),
      el("span", { class: "sub", text: " " + d.kind + " · first seen at " + (d.origin || "?") + (d.properties ? " · " + d.properties : "") })),
    inst,
    flows.length ? el("ul", { class: "flows" }, ...flows) : el("p", { class: "sub", text: "No flow: messages stay where they are." }),
    (d.problems || []).length ? el("ul", { class: "problems" }, ...d.problems.map((p) => el("li", { class: "error", text: p }))) : null);
}
