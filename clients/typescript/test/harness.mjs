// The real askgate binary for the tests: a configuration with a fixed agent
// token and one recipient on askgate's own web page (a fixed page key), run
// with `askgate serve` on a free loopback port, killed and restarted on the
// same data directory and port, and the person's side: answering or skipping
// on the page's own JSON API, as the page's script does.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const AGENT_TOKEN = "ts-client-agent-one-0123456789abcdefghijklmn";
export const WEB_KEY = "ts-client-web-key-me-0123456789abcdefghijklmnop";
export const RECIPIENT = "me";

const STARTUP_TIMEOUT_MS = 30_000;

/** The binary under test: $ASKGATE_BIN, or the test fails saying so. */
export function askgateBin() {
  const bin = process.env.ASKGATE_BIN;
  if (!bin) {
    throw new Error(
      "ASKGATE_BIN is not set: point it at an askgate binary (e.g. ASKGATE_BIN=../../target/debug/askgate npm test); " +
        "`cargo test --test e2e clients::` sets it to the binary it built",
    );
  }
  return bin;
}

/** A free loopback port (the kernel's pick, released for askgate to take). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Polls `probe` until it returns something truthy; fails naming `what` after `ms`. */
export async function until(what, probe, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A running `askgate serve` with its own data directory and port. */
export class Askgate {
  /** Writes the configuration and starts askgate; resolves once it is ready. */
  static async start() {
    const dir = mkdtempSync(join(tmpdir(), "askgate-ts-"));
    const port = await freePort();
    const config = join(dir, "askgate.toml");
    writeFileSync(
      config,
      `[server]
listen = "127.0.0.1:${port}"
data_dir = ${JSON.stringify(dir)}
ask_keepalive_seconds = 1

[agents.one]
token = "${AGENT_TOKEN}"
recipients = ["*"]

[channels.web]
type = "web"

[recipients.${RECIPIENT}]
channel = "web"
display_name = "Me"
locale = "en"
web_key = "${WEB_KEY}"
`,
    );
    const askgate = new Askgate(dir, config, port);
    await askgate.run();
    return askgate;
  }

  constructor(dir, config, port) {
    this.dir = dir;
    this.config = config;
    this.port = port;
    this.baseUrl = `http://127.0.0.1:${port}`;
    this.log = "";
    this.child = undefined;
  }

  /** Starts the process and waits for `/readyz`. */
  async run() {
    const child = spawn(askgateBin(), ["serve", "--config", this.config], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn" },
    });
    this.child = child;
    const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    child.exited = exited;
    child.stdout.on("data", (chunk) => (this.log += chunk));
    child.stderr.on("data", (chunk) => (this.log += chunk));
    let gone;
    exited.then((status) => (gone = status));
    await until(
      "askgate is ready",
      async () => {
        if (gone) throw new Error(`askgate exited (${JSON.stringify(gone)}) before it was ready:\n${this.log}`);
        try {
          return (await fetch(`${this.baseUrl}/readyz`)).status === 200;
        } catch {
          return false;
        }
      },
      STARTUP_TIMEOUT_MS,
    );
  }

  /** Kills askgate hard (`SIGKILL`), as a crash or an OOM kill would. */
  async kill() {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGKILL");
    await child.exited;
  }

  /** Kills askgate and starts it again on the same data directory and port. */
  async restart() {
    await this.kill();
    await this.run();
  }

  /** Stops askgate and removes its data directory. */
  async stop() {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A request on the person's page: `path` under `/web/{key}/api/`. */
  async page(method, path, body) {
    const response = await fetch(`${this.baseUrl}/web/${WEB_KEY}/api/${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`page ${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text);
  }

  /** The ids of the questions pending on the page. */
  async pendingIds() {
    const state = await this.page("GET", "state");
    return (state.pending ?? []).map((question) => question.id);
  }

  /** Waits until question `id` shows on the page, pending. */
  async shown(id) {
    await until(`question ${id} shows on the page`, async () => (await this.pendingIds()).includes(id));
  }

  /** Waits until some question shows on the page, and returns its id. */
  async firstShown() {
    return until("a question shows on the page", async () => (await this.pendingIds())[0]);
  }

  /**
   * Answers question `id` on the page as the page's script submits it:
   * each question's id to `{options: [indexes]}` or `{text}`.
   */
  answer(id, answers) {
    return this.page("POST", `questions/${id}/answer`, { answers });
  }

  /** Skips question `id` on the page. */
  skip(id) {
    return this.page("POST", `questions/${id}/skip`, {});
  }
}

/** The spec's deploy question. */
export const DEPLOY = {
  id: "deploy_target",
  header: "Deploy",
  question: "Where should this build go?",
  options: [{ label: "Staging (Recommended)" }, { label: "Production" }],
};
