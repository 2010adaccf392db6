// What the browser tests run against: a fresh database, the real gpurentd from the build
// folder, a platform admin made with `gpurentd admin create`, a small fleet seeded through
// the admin API, and one simulated `gpurent-agent` per node (enrolled with the node's
// single-use token, as `make run` does), so rentals really provision and reach `active`.
// Everything it starts it stops again, also when a step fails (stop()).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

export const H100 = "H100-SXM5-80GB";
export const L4 = "L4-24GB";
// One node of it, which the drain scenario takes out of service; no other scenario books it.
export const RTX4090 = "RTX4090-24GB";

export const PASSWORD = "a good passphrase for tests";

// Polls `check` (async, truthy when done) until it holds or `ms` pass; its last value.
export async function waitFor(check, ms = 20000, every = 200, what = "condition") {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await check();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

// A signed-in API caller: the session cookie and its CSRF token.
export class Api {
  constructor(base) {
    this.base = base;
  }

  async call(method, urlPath, body, session, extraHeaders = {}) {
    const headers = { Accept: "application/json", ...extraHeaders };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (session) {
      headers.Cookie = session.cookie;
      if (method !== "GET") headers["X-CSRF-Token"] = session.csrf;
    }
    const r = await fetch(this.base + urlPath, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    return { status: r.status, json, text, headers: r.headers };
  }

  // The call must answer `status`; its JSON.
  async expect(status, method, urlPath, body, session, extraHeaders) {
    const r = await this.call(method, urlPath, body, session, extraHeaders);
    if (r.status !== status) {
      throw new Error(`${method} ${urlPath}: expected ${status}, got ${r.status}: ${r.text}`);
    }
    return r.json;
  }

  async login(email, password = PASSWORD) {
    const r = await this.call("POST", "/v1/auth/login", { email, password });
    if (r.status !== 200) throw new Error(`login ${email}: ${r.status} ${r.text}`);
    const cookie = (r.headers.get("set-cookie") || "").split(";")[0];
    return { cookie, csrf: r.json.csrf_token, userId: r.json.user.id, orgId: r.json.current_org_id, email };
  }

  // A customer with an org of their own, signed in; with `fundsMinor` roubles (minor units)
  // put on the balance by the admin, as a manual top-up.
  async customer(stack, { fundsMinor = 0, org = "Test customer" } = {}) {
    const email = `c${randomBytes(5).toString("hex")}@example.com`;
    await this.expect(201, "POST", "/v1/auth/signup", { email, password: PASSWORD, org_name: org });
    const session = await this.login(email);
    if (fundsMinor > 0) await stack.credit(session.orgId, fundsMinor);
    return session;
  }
}

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", ...options });
  if (r.error) throw r.error;
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  }
  return r.stdout;
}

// The same report formats tests/support/sanitizer_report.cpp looks for.
export function sanitizerReport(log) {
  const lines = log.split("\n");
  const at = lines.findIndex((l) => /^==\d+==ERROR: .*Sanitizer/.test(l) ||
    /^SUMMARY: .*Sanitizer/.test(l) || /^[^ {]+:\d+:\d+: runtime error: /.test(l));
  return at < 0 ? "" : lines.slice(at, at + 60).join("\n");
}

// A child process whose output goes to a log file. Started through `setpriv --pdeathsig`,
// so it ends with the runner even when the runner itself is killed (a CTest timeout).
class Child {
  constructor(name, program, args, { env = process.env, logFile, stdin = null } = {}) {
    this.name = name;
    this.logFile = logFile;
    const fd = fs.openSync(logFile, "a");
    const pdeath = fs.existsSync("/usr/bin/setpriv") ? ["/usr/bin/setpriv", ["--pdeathsig", "KILL", "--", program, ...args]] : [program, args];
    this.proc = spawn(pdeath[0], pdeath[1], { env, stdio: [stdin === null ? "ignore" : "pipe", fd, fd] });
    fs.closeSync(fd);
    if (stdin !== null) this.proc.stdin.end(stdin);
    this.exited = new Promise((resolve) => this.proc.on("exit", (code, signal) => resolve({ code, signal })));
    this.exit = null;
    this.exited.then((e) => (this.exit = e));
  }

  log() {
    try {
      return fs.readFileSync(this.logFile, "utf8");
    } catch {
      return "";
    }
  }

  // SIGTERM, SIGKILL after `ms`; how it ended.
  async stop(ms = 20000) {
    if (!this.exit) {
      this.proc.kill("SIGTERM");
      const timer = setTimeout(() => this.proc.kill("SIGKILL"), ms);
      await this.exited;
      clearTimeout(timer);
    }
    return this.exit;
  }
}

export class Stack {
  // build: the CMake build folder (build/test); source: the repository root.
  constructor({ build, source, artifacts }) {
    this.build = path.resolve(build);
    this.source = path.resolve(source);
    this.artifacts = artifacts;
    this.gpurentd = path.join(this.build, "cmd", "gpurentd");
    this.agent = path.join(this.build, "cmd", "gpurent-agent");
    this.clusterTool = path.join(this.build, "tests", "gpurent_test_cluster");
    this.children = [];
    this.problems = [];  // what went wrong while stopping: a test failure after all
  }

  // Starts it all; the admin's session is this.admin, the API this.api.
  async start() {
    for (const p of [this.gpurentd, this.agent]) {
      if (!fs.existsSync(p)) throw new Error(`${p} is not built`);
    }
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpurent-web-"));
    fs.chmodSync(this.dir, 0o755);
    const timings = [];
    const step = async (name, work) => {
      const t0 = Date.now();
      await work();
      timings.push(`${name} ${Date.now() - t0} ms`);
    };
    await step("database", () => this.database());
    await step("admin", () => this.createAdmin());
    await step("gpurentd", () => this.serve());
    this.api = new Api(this.url);
    this.admin = await this.api.login(this.adminEmail, this.adminPassword);
    await step("fleet", () => this.seedFleet());
    return timings;
  }

  // A database of its own, cloned from the migrated template, in the run's cluster: under
  // CTest the pg_cluster fixture's (GPURENT_TEST_STATE), run by hand a throwaway one.
  async database() {
    let stateFile = process.env.GPURENT_TEST_STATE;
    if (!stateFile || !fs.existsSync(stateFile)) {
      if (!fs.existsSync(this.clusterTool)) throw new Error(`${this.clusterTool} is not built`);
      stateFile = path.join(this.dir, "cluster.json");
      run(this.clusterTool, ["start", stateFile]);
      this.ownCluster = stateFile;
    }
    const state = JSON.parse(fs.readFileSync(stateFile, "utf8"));
    const url = (db) => `postgresql://gpurent@/${db}?host=${state.socket_dir}&port=5432`;
    this.adminDbUrl = url("postgres");
    this.dbName = `web_${randomBytes(6).toString("hex")}`;
    this.psql(`CREATE DATABASE "${this.dbName}" TEMPLATE gpurent_template STRATEGY FILE_COPY`);
    this.dbUrl = url(this.dbName);
  }

  psql(sql, url = this.adminDbUrl) {
    return run("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", url, "-c", sql]);
  }

  serverEnv() {
    const env = {};
    for (const [k, v] of Object.entries(process.env)) {
      // The server's configuration comes from these tests alone.
      if (!k.startsWith("GPURENT_") && k !== "DATABASE_URL") env[k] = v;
    }
    env.DATABASE_URL = this.dbUrl;
    return env;
  }

  createAdmin() {
    this.adminEmail = "admin@web-tests.local";
    this.adminPassword = PASSWORD;
    run(this.gpurentd, ["admin", "create", "--email", this.adminEmail, "--password-stdin", "--log_format=json"],
      { env: this.serverEnv(), input: `${this.adminPassword}\n` });
  }

  async serve() {
    const portFile = path.join(this.dir, "port");
    this.server = new Child("gpurentd", this.gpurentd, [
      "serve", "--listen=127.0.0.1:0", `--port_file=${portFile}`,
      "--agent_listen=127.0.0.1:0", `--agent_pki_dir=${this.dir}/pki`, `--ssh_ca_dir=${this.dir}/ssh-ca`,
      `--web_root=${this.source}/web/public`, "--log_format=json", "--log_level=info",
      "--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
      // Rentals move within a second or two of being due; agents report every second.
      "--lifecycle_interval=1s", "--agent_task_poll=1s",
      // A telemetry sample a second, so a rental's charts fill within a scenario.
      "--agent_telemetry_interval=1s",
    ], { env: this.serverEnv(), logFile: path.join(this.dir, "server.log") });
    this.children.push(this.server);
    const ports = await waitFor(() => {
      if (this.server.exit) throw new Error(`gpurentd exited during start-up:\n${this.server.log()}`);
      try {
        const lines = fs.readFileSync(portFile, "utf8").trim().split("\n").map(Number);
        return lines.length === 2 && lines[0] > 0 && lines[1] > 0 ? lines : null;
      } catch {
        return null;
      }
    }, 60000, 50, "gpurentd to listen");
    this.port = ports[0];
    this.agentPort = ports[1];
    this.url = `http://127.0.0.1:${this.port}`;
  }

  async credit(orgId, amountMinor) {
    await this.api.expect(201, "POST", `/v1/admin/orgs/${orgId}/credit`,
      { amount: { amount_minor: amountMinor, currency: "RUB" }, reason: "browser tests" }, this.admin);
  }

  // A site, an image, prices in roubles, and nodes with simulated agents: two HGX 8×H100,
  // one 4×L4 and one 8×RTX 4090 (PCIe).
  async seedFleet() {
    const a = this.admin;
    const site = await this.api.expect(201, "POST", "/v1/admin/sites",
      { name: "Test DC", region: "test", timezone: "Europe/Moscow" }, a);
    this.siteId = site.id;
    const image = await this.api.expect(201, "POST", "/v1/admin/images",
      { name: "ubuntu22.04-cuda12.4", os: "Ubuntu 22.04", driver_version: "550.54.15", cuda_version: "12.4" }, a);
    this.imageId = image.id;
    const prices = [];
    const price = (model, perGpu, counts) => counts.forEach((n) => prices.push(
      { gpu_model: model, gpu_count: n, price_per_day: { amount_minor: perGpu * 100 * n, currency: "RUB" } }));
    price(H100, 6500, [1, 2, 4, 8]);
    price(L4, 1000, [1, 2, 4]);
    price(RTX4090, 1300, [8]);
    await this.api.expect(200, "PUT", "/v1/admin/prices", prices, a);

    const specs = [
      { hostname: "hgx-h100-a", model: H100, gpus: 8, topology: "nvswitch", agentModel: "NVIDIA H100 80GB HBM3" },
      { hostname: "hgx-h100-b", model: H100, gpus: 8, topology: "nvswitch", agentModel: "NVIDIA H100 80GB HBM3" },
      { hostname: "pcie-l4-a", model: L4, gpus: 4, topology: "pcie", agentModel: "NVIDIA L4" },
      { hostname: "pcie-4090-a", model: RTX4090, gpus: 8, topology: "pcie", agentModel: "NVIDIA GeForce RTX 4090" },
    ];
    this.nodes = {};
    for (const s of specs) {
      const body = { site_id: this.siteId, hostname: s.hostname, gpu_model: s.model, gpu_count: s.gpus,
        interconnect: s.topology };
      const created = await this.api.expect(201, "POST", "/v1/admin/nodes", body, a);
      this.nodes[s.hostname] = { ...s, id: created.node.id, token: created.enrollment_token };
    }
    const agentUrl = `https://127.0.0.1:${this.agentPort}`;
    await Promise.all(Object.values(this.nodes).map(async (n) => {
      const dir = path.join(this.dir, "agents", n.hostname);
      fs.mkdirSync(dir, { recursive: true });
      const enroll = new Child(`enroll ${n.hostname}`, this.agent, ["enroll", "--url", agentUrl, "--token", n.token,
        "--ca-file", `${this.dir}/pki/ca.crt`, "--state-dir", `${dir}/state`, "--log-format", "text"],
      { logFile: `${dir}/enroll.log` });
      const { code } = await enroll.exited;
      if (code !== 0) throw new Error(`gpurent-agent enroll for ${n.hostname} exited ${code}:\n${enroll.log()}`);
      n.agent = new Child(`agent ${n.hostname}`, this.agent, ["run", "--url", agentUrl, "--state-dir", `${dir}/state`,
        "--backend", "simulated", "--gpus", String(n.gpus), "--model", n.agentModel, "--topology", n.topology,
        "--heartbeat", "1s", "--provision-delay", "200ms", "--access-root", `${dir}/access`,
        "--ssh-host-keys", `${dir}/host-keys`, "--log-format", "text"],
      { logFile: `${dir}/agent.log` });
      this.children.push(n.agent);
    }));
    await waitFor(async () => {
      for (const n of Object.values(this.nodes)) {
        const v = await this.api.expect(200, "GET", `/v1/admin/nodes/${n.id}`, undefined, a);
        if (v.state !== "available" || v.health !== "ok") return false;
      }
      return true;
    }, 30000, 250, "every node to come into service with its agent");
  }

  // The rental as its owner sees it, once in `state`.
  async waitRental(session, id, state, ms = 30000) {
    return waitFor(async () => {
      const r = await this.api.expect(200, "GET", `/v1/rentals/${id}`, undefined, session);
      return r.state === state ? r : null;
    }, ms, 250, `rental ${id} to be ${state}`);
  }

  // Stops what it started, newest first; records what went wrong (a sanitizer report, a
  // server that would not stop cleanly) in this.problems, and keeps the logs among the
  // artifacts when there was a problem.
  async stop({ keepLogs = false } = {}) {
    for (const child of [...this.children].reverse()) {
      const { code, signal } = await child.stop();
      const log = child.log();
      const report = sanitizerReport(log);
      if (report) this.problems.push(`${child.name} wrote a sanitizer report:\n${report}`);
      if (child === this.server && (code !== 0 || signal)) {
        this.problems.push(`gpurentd ended with ${signal || `code ${code}`} after SIGTERM; its log ends:\n${log.slice(-3000)}`);
      }
    }
    if (this.artifacts && this.dir && (keepLogs || this.problems.length)) {
      const logs = path.join(this.artifacts, "logs");
      fs.mkdirSync(logs, { recursive: true });
      for (const child of this.children) {
        fs.copyFileSync(child.logFile, path.join(logs, `${child.name.replace(/\W+/g, "-")}.log`));
      }
    }
    if (this.dbName) {
      try {
        this.psql(`DROP DATABASE IF EXISTS "${this.dbName}" WITH (FORCE)`);
      } catch (err) {
        this.problems.push(`dropping the database: ${err.message}`);
      }
    }
    if (this.ownCluster) {
      try {
        run(this.clusterTool, ["stop", this.ownCluster]);
      } catch (err) {
        this.problems.push(`stopping the cluster: ${err.message}`);
      }
    }
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
  }

  // Last resort at exit (a signal, an uncaught error): every child killed at once.
  killAll() {
    for (const child of this.children) if (!child.exit) child.proc.kill("SIGKILL");
  }
}
