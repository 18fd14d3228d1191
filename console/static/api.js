// The admin API as the console reads it: GETs with the token, one
// snapshot of every endpoint the page draws, and the token's keeping.
// Nothing here touches the DOM.

// Routes fetched per refresh: a router may hold 10,000; the page shows
// the first page of the list and says how many there are.
export const ROUTE_LIMIT = 500;

const TOKEN_KEY = "fedrouter.admin-token";

// API is the endpoints' base, relative to the page (/console/), so that a
// reverse proxy serving the router under a path of its own keeps working.
const API = "../api/v1/";

// APIError is an answer other than 2xx, with the API's own message.
export class APIError extends Error {
  constructor(status, message, retryAfter) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

// The token lives in this tab's session storage: gone when the tab
// closes, never in a URL, a cookie or the page's markup. A browser that
// keeps no storage keeps it in memory until the page is left.
let kept = "";
export const token = {
  get() {
    try { return sessionStorage.getItem(TOKEN_KEY) || kept; } catch { return kept; }
  },
  set(t) {
    try { sessionStorage.setItem(TOKEN_KEY, t); } catch { kept = t; }
  },
  clear() {
    kept = "";
    try { sessionStorage.removeItem(TOKEN_KEY); } catch { /* storage off: nothing kept there */ }
  },
};

// get fetches one endpoint as JSON. An error answer becomes an APIError
// carrying the API's {"error": ...} text.
async function get(path, tok) {
  let res;
  try {
    res = await fetch(path, {
      headers: { "Authorization": "Bearer " + tok, "Accept": "application/json" },
      cache: "no-store", credentials: "omit", redirect: "error",
    });
  } catch (e) {
    throw new APIError(0, "the router did not answer (" + e.message + ")");
  }
  if (!res.ok) {
    let msg = res.status + " " + res.statusText;
    try {
      const body = await res.json();
      if (body && typeof body.error === "string") msg = body.error;
    } catch { /* not JSON: keep the status line */ }
    throw new APIError(res.status, msg, res.headers.get("Retry-After"));
  }
  return res.json();
}

// checkToken asks the API something small with tok: it throws what the
// router says of it.
export function checkToken(tok) {
  return get(API + "router", tok);
}

// optional is get for views only some routers have (the topology without
// topology.secret, the cluster, the destinations): 404 gives null.
async function optional(path, tok) {
  try {
    return await get(path, tok);
  } catch (e) {
    if (e instanceof APIError && e.status === 404) return null;
    throw e;
  }
}

// snapshot reads every endpoint the page draws, together. It fails as a
// whole: a page half new and half old would show states that never were.
export async function snapshot(tok) {
  // One request first: a token the router no longer takes costs one
  // strike against this address, not seven (five within a minute block
  // it for a minute, the right token too).
  const router = await get(API + "router", tok);
  const [brokers, links, page, topology, cluster, destinations] = await Promise.all([
    get(API + "brokers", tok),
    get(API + "links", tok),
    get(API + "routes?limit=" + ROUTE_LIMIT, tok),
    optional(API + "topology", tok),
    optional(API + "cluster", tok),
    optional(API + "destinations", tok),
  ]);
  return {
    at: Date.now(), router, brokers, links, routes: page.routes || [], moreRoutes: Boolean(page.next),
    partial: page.partial || "", // why the list is not the whole cluster's
    topology, cluster, destinations,
  };
}

// describe turns a failure into one sentence for the operator.
export function describe(e) {
  if (!(e instanceof APIError)) return String(e && e.message || e);
  switch (e.status) {
    case 401:
      return "Wrong token: the router refused it. Check the token and try again.";
    case 403:
      return "The router refused this page's request: " + e.message;
    case 429:
      return "Too many wrong tokens from this address: try again in " + (e.retryAfter || "a few") + " s.";
    default:
      return e.message;
  }
}
