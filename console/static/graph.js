// The broker graph: brokers on a circle in name order (the same picture
// on every refresh and every router), each advertised link an arrow with
// its cost, the next hops of this router's routes underlaid in blue.

import { svg } from "./dom.js";

// MAX_DRAWN brokers: beyond it a circle is unreadable; the links table
// and `fedrouter topology` still list everything.
export const MAX_DRAWN = 60;

const W = 760, H = 520, NODE_R = 20;

// model reduces a snapshot to what the drawing needs:
// brokers [{name, attached, state, detail}], links [{from, to, cost,
// state, router}], nextHops (a Set of "from|to"), and whether the links
// come from the link-state database (flooding) or this router alone.
export function model(snap) {
  const own = new Map(snap.brokers.map((b) => [b.broker, b.state]));
  const names = new Set(own.keys());
  const seen = new Map(); // broker -> [router: state] from advertisements
  const links = [];
  const topo = snap.topology;
  if (topo) {
    for (const b of topo.brokers || []) {
      names.add(b.name);
      seen.set(b.name, b.routers || []);
    }
    for (const l of topo.links || []) {
      names.add(l.from); names.add(l.to);
      links.push({ from: l.from, to: l.to, cost: l.cost, state: l.state, router: l.router });
    }
  } else {
    const self = snap.router.router_id;
    for (const l of snap.links) {
      if (l.ingress || !l.dest || (l.via && l.via.length)) continue;
      names.add(l.src); names.add(l.dest);
      links.push({ from: l.src, to: l.dest, cost: null, state: l.state === "Operational" ? "up" : "down", router: self });
    }
  }
  const brokers = [...names].sort().map((name) => brokerOf(name, own, seen.get(name) || []));
  return { brokers, links, nextHops: nextHops(snap), flooding: Boolean(topo) };
}

function brokerOf(name, own, attachments) {
  const others = attachments.map((a) => a.router + ": " + a.state).join(", ");
  if (own.has(name)) {
    return { name, attached: true, state: own.get(name), detail: "this router: " + own.get(name) + (others ? "; advertised " + others : "") };
  }
  const up = attachments.some((a) => a.state === "Operational");
  const state = up ? "Operational" : (attachments[0] ? attachments[0].state : "unknown");
  return { name, attached: false, state, detail: others ? "advertised " + others : "no router reports it" };
}

// nextHops: for every route of this router, the link its messages take
// first: source → the table's next hop towards the destination (the
// destination itself when flooding is off).
function nextHops(snap) {
  const table = new Map();
  for (const b of (snap.topology && snap.topology.routes) || []) {
    for (const r of b.routes || []) table.set(b.broker + "|" + r.dest, r.next_hop);
  }
  const hops = new Set();
  for (const r of snap.routes) {
    const src = r.spec && r.spec.src, dest = r.spec && r.spec.dest;
    if (!src || !dest) continue;
    const hop = snap.topology ? table.get(src + "|" + dest) : dest;
    if (hop) hops.add(src + "|" + hop);
  }
  return hops;
}

// draw replaces the SVG's content with m; it returns a note for the
// operator ("" when everything is drawn).
export function draw(root, m) {
  root.replaceChildren();
  if (m.brokers.length === 0) return "No broker known yet.";
  if (m.brokers.length > MAX_DRAWN) {
    return m.brokers.length + " brokers: too many to draw readably; the links table below lists them.";
  }
  root.append(markers());
  const pos = layout(m.brokers);
  root.setAttribute("viewBox", fit(pos));
  const edges = svg("g", { class: "edges" });
  const labels = svg("g", { class: "costs" });
  const parallel = new Map();
  for (const l of m.links) {
    const key = l.from + "|" + l.to;
    const k = parallel.get(key) || 0;
    parallel.set(key, k + 1);
    const a = pos.get(l.from), b = pos.get(l.to);
    if (!a || !b) continue;
    const g = geometry(a, b, k);
    const hop = m.nextHops.has(key);
    if (hop) edges.append(svg("path", { class: "hop-halo", d: g.d }));
    edges.append(svg("path", {
      class: "link link-" + l.state + (hop ? " nexthop" : ""), d: g.d,
      "marker-end": "url(#arrow-" + (l.state === "up" || l.state === "broker-down" ? l.state : "down") + ")",
      "data-link": key, "data-state": l.state, "data-cost": l.cost, "data-router": l.router, "data-nexthop": hop,
    }, svg("title", { text: l.from + " → " + l.to + ": " + l.state + (l.cost !== null ? ", cost " + l.cost : "") + " (advertised by " + l.router + ")" + (hop ? "; next hop of this router's routes" : "") })));
    if (l.cost !== null) labels.append(costLabel(g.mid, l.cost, l.state));
  }
  const nodes = svg("g", { class: "nodes" });
  for (const b of m.brokers) nodes.append(node(b, pos.get(b.name)));
  root.append(edges, labels, nodes);
  return m.flooding ? "" : "Link-state flooding is off on this router (no topology.secret): the graph shows its own links only, without costs.";
}

// layout puts the brokers on a circle, the first at the top, clockwise.
function layout(brokers) {
  const pos = new Map();
  const n = brokers.length, cx = W / 2, cy = H / 2;
  const r = n === 1 ? 0 : Math.min(W, H) / 2 - 70;
  brokers.forEach((b, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / n;
    pos.set(b.name, { x: cx + r * Math.cos(angle), y: cy + r * Math.sin(angle), angle });
  });
  return pos;
}

// fit is the viewBox around the brokers and their labels, so that a
// few brokers fill the picture rather than a corner of the circle.
function fit(pos) {
  const xs = [...pos.values()].map((p) => p.x), ys = [...pos.values()].map((p) => p.y);
  const x0 = Math.min(...xs) - 110, x1 = Math.max(...xs) + 110; // labels beside
  const y0 = Math.min(...ys) - 50, y1 = Math.max(...ys) + 50; // and above, below
  const w = Math.max(x1 - x0, 360), h = Math.max(y1 - y0, 200);
  const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  return [cx - w / 2, cy - h / 2, w, h].map((v) => v.toFixed(0)).join(" ");
}

// geometry of the k-th link from a to b: a curve bowing to its left, so
// that a → b and b → a are two arrows side by side, and parallel links
// (two routers advertising the same pair) bow further out.
function geometry(a, b, k) {
  const dx = b.x - a.x, dy = b.y - a.y;
  const len = Math.hypot(dx, dy) || 1;
  const ux = dx / len, uy = dy / len;
  const nx = uy, ny = -ux; // the normal to the left of a → b (SVG y grows down)
  const bow = 18 + 16 * k;
  const mid = { x: (a.x + b.x) / 2 + nx * bow, y: (a.y + b.y) / 2 + ny * bow };
  const c = { x: (a.x + b.x) / 2 + nx * 2 * bow, y: (a.y + b.y) / 2 + ny * 2 * bow };
  const start = toward(a, c, NODE_R + 2), end = toward(b, c, NODE_R + 6);
  const f = (p) => p.x.toFixed(1) + " " + p.y.toFixed(1);
  return { d: "M " + f(start) + " Q " + f(c) + " " + f(end), mid };
}

function toward(p, q, dist) {
  const dx = q.x - p.x, dy = q.y - p.y, len = Math.hypot(dx, dy) || 1;
  return { x: p.x + (dx / len) * dist, y: p.y + (dy / len) * dist };
}

function costLabel(at, cost, state) {
  const text = String(cost);
  const w = 8 + 7 * text.length;
  return svg("g", { class: "cost cost-" + state },
    svg("rect", { x: (at.x - w / 2).toFixed(1), y: (at.y - 9).toFixed(1), width: w, height: 18, rx: 4 }),
    svg("text", { x: at.x.toFixed(1), y: (at.y + 4).toFixed(1), "text-anchor": "middle", text }));
}

function node(b, p) {
  const cls = "node " + (b.attached ? "attached" : "remote") + " node-" + stateWord(b.state);
  // The name sits outside the circle, away from the centre, clear of
  // the links that run inside it.
  const lx = p.x + Math.cos(p.angle) * (NODE_R + 12);
  const ly = p.y + Math.sin(p.angle) * (NODE_R + 12) + 5;
  const anchor = Math.abs(Math.cos(p.angle)) < 0.3 ? "middle" : (Math.cos(p.angle) > 0 ? "start" : "end");
  const dy = Math.abs(Math.cos(p.angle)) < 0.3 ? (Math.sin(p.angle) < 0 ? -6 : 10) : 0;
  return svg("g", { class: cls, "data-broker": b.name, "data-state": b.state, "data-attached": b.attached },
    svg("title", { text: b.name + " — " + b.detail }),
    svg("circle", { cx: p.x.toFixed(1), cy: p.y.toFixed(1), r: NODE_R }),
    svg("text", { class: "label", x: lx.toFixed(1), y: (ly + dy).toFixed(1), "text-anchor": anchor, text: b.name }));
}

function stateWord(state) {
  if (state === "Operational") return "up";
  if (state === "Waiting" || state === "Connecting") return "waiting";
  return state === "unknown" ? "unknown" : "down";
}

function markers() {
  const defs = svg("defs");
  for (const kind of ["up", "down", "broker-down"]) {
    defs.append(svg("marker", {
      id: "arrow-" + kind, viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 11, markerHeight: 11,
      orient: "auto-start-reverse", markerUnits: "userSpaceOnUse",
    }, svg("path", { class: "arrow arrow-" + kind, d: "M 0 0 L 10 5 L 0 10 z" })));
  }
  return defs;
}
