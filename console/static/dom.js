// Building the page's elements and the words and numbers in them. Every
// value from the router goes in as text (textContent, attributes), never
// as markup: broker names, queue names and errors come from the network.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") node.textContent = String(v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children || []) {
    if (c === null || c === undefined) continue;
    node.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return node;
}

// el makes an HTML element: el("td", {class: "num", text: "3"}).
export function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// svg makes an SVG element.
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

// fillBody replaces a table's rows; empty says so in one row.
export function fillBody(table, rows, empty) {
  const body = table.tBodies[0];
  if (rows.length === 0) {
    const cols = table.tHead ? table.tHead.rows[0].cells.length : 1;
    body.replaceChildren(el("tr", { class: "empty" }, el("td", { colspan: cols, text: empty })));
    return;
  }
  body.replaceChildren(...rows);
}

// ago says how long before now t was: "4s ago", "3m ago", "2h ago".
export function ago(t, now) {
  if (zeroTime(t)) return "";
  const ms = now - Date.parse(t);
  if (!Number.isFinite(ms)) return "";
  return duration(Math.max(0, ms)) + " ago";
}

// duration in the largest unit that keeps one or two digits.
export function duration(ms) {
  const s = ms / 1000;
  if (s < 10) return s.toFixed(1) + "s";
  if (s < 120) return Math.round(s) + "s";
  if (s < 7200) return Math.round(s / 60) + "m";
  if (s < 172800) return Math.round(s / 3600) + "h";
  return Math.round(s / 86400) + "d";
}

// zeroTime: Go's zero time.Time, which the API sends for "never".
export function zeroTime(t) {
  return !t || t.startsWith("0001-01-01");
}

// count prints a number with thousands separators.
export function count(n) {
  return Number(n || 0).toLocaleString("en-US");
}

// stateClass groups a state for colour: ok, warn, bad, idle.
export function stateClass(state) {
  switch (state) {
    case "Operational": case "up": case "present": case "global": case "alive": case "live":
      return "ok";
    case "Connecting": case "Waiting": case "Stalled": case "creating": case "local": case "suspect": case "broker-down":
      return "warn";
    case "Failed": case "down": case "absent": case "failed": case "deleting":
      return "bad";
    default:
      return "idle";
  }
}

// badge is a state shown as a coloured label.
export function badge(state) {
  return el("span", { class: "badge " + stateClass(state), text: state || "unknown" });
}
