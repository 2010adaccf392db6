// The panel's only way to the server: the public API, as JSON, with the session cookie and
// its CSRF token. Errors come back as ApiError carrying the contract's code and details.
"use strict";

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || (status === 0 ? "network" : "http_error");
    this.details = error.details || {};
    this.retryAfter = retryAfter;
  }
  // The request field the server named, if any (400 invalid_request).
  get field() {
    return this.details.field || null;
  }
}

let csrfToken = null;
let onUnauthenticated = () => {};

export function setCsrfToken(token) {
  csrfToken = token || null;
}

// Called when a request finds the session gone, so the panel can ask to sign in again.
export function whenUnauthenticated(callback) {
  onUnauthenticated = callback;
}

// A fresh Idempotency-Key: one per user action, so a retried click never books twice.
export function newIdempotencyKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function request(method, path, body, options = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrfToken) headers["X-CSRF-Token"] = csrfToken;
  if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
      signal: options.signal,
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, { error: { message: "The server cannot be reached." } });
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let json = null;
  if (text && (response.headers.get("Content-Type") || "").includes("json")) {
    try {
      json = JSON.parse(text);
    } catch (err) {
      json = null;
    }
  }
  if (!response.ok) {
    const error = new ApiError(response.status, json, response.headers.get("Retry-After"));
    if (response.status === 401 && !options.quietUnauthenticated) onUnauthenticated(error);
    throw error;
  }
  return json === null ? text : json;
}

export const get = (path, options) => request("GET", path, undefined, options);
export const post = (path, body = {}, options) => request("POST", path, body, options);
export const put = (path, body, options) => request("PUT", path, body, options);
export const patch = (path, body, options) => request("PATCH", path, body, options);
export const del = (path, options) => request("DELETE", path, undefined, options);

// Every page of a list, following next_cursor (the panel's lists are small: an org's
// keys, tokens, members; a fleet's nodes).
export async function all(path, limit = 500) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = await get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...(page.items || []));
    cursor = page.next_cursor || null;
  } while (cursor);
  return items;
}
