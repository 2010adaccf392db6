// Who is signed in. The session cookie is HttpOnly, so the panel cannot see it; it keeps a
// hint that it signed in (to skip a pointless 401 on a first visit) and asks GET /v1/me.
"use strict";

import { get, post, setCsrfToken } from "./api.js";

const HINT = "gpurent.signedIn";
let me = null;
let orgs = [];

export function current() {
  return me;
}

// The organisations the person belongs to ({id, name, role, current}); the panel offers a
// switch when there is more than one.
export function organisations() {
  return orgs;
}

// Acts for another of the person's organisations from now on (the session remembers it).
export async function switchOrg(orgId) {
  await post("/v1/session/org", { org_id: orgId });
  return load();
}

export function isAdmin() {
  return !!me && (me.scopes || []).includes("admin");
}

export function can(scope) {
  return !!me && (me.scopes || []).includes(scope);
}

// On start and after a login: the caller, the CSRF token of the session, the role.
export async function load() {
  if (!localStorage.getItem(HINT)) return null;
  try {
    me = await get("/v1/me", { quietUnauthenticated: true });
    setCsrfToken(me.csrf_token);
    // Without the list the panel still works, only without the switch.
    orgs = await get("/v1/me/orgs", { quietUnauthenticated: true }).then((r) => r.items, () => []);
  } catch (err) {
    forget();
    if (err.status !== 401) throw err;
  }
  return me;
}

export async function signIn(email, password) {
  const r = await post("/v1/auth/login", { email, password });
  setCsrfToken(r.csrf_token);
  localStorage.setItem(HINT, "1");
  return load();
}

export async function signOut() {
  try {
    await post("/v1/auth/logout");
  } finally {
    forget();
  }
}

export function forget() {
  me = null;
  orgs = [];
  setCsrfToken(null);
  localStorage.removeItem(HINT);
}
