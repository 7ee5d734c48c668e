/**
 * The TypeScript client of askgate's agent API (`/v1`): ask people
 * structured questions and wait for their answers.
 *
 * It needs nothing but the platform's `fetch` (Node.js 20 or later, Deno,
 * Bun, browsers). The Vercel AI SDK tool lives in the separate entry point
 * `askgate/ai`, so that this one stays free of dependencies.
 *
 * @module
 */
import type { components } from "./openapi.js";

export type { components, operations, paths } from "./openapi.js";
export { FIELD_DESCRIPTIONS, TOOL_DESCRIPTION, TOOL_NAME } from "./guidance.js";

/** One question of a prompt: an id, a header, the question and 2–4 options. */
export type AskQuestion = components["schemas"]["AskQuestion"];
/** One option of a question. */
export type AskOption = AskQuestion["options"][number];
/** The body of `POST /v1/questions`. */
export type CreateQuestionRequest = components["schemas"]["CreateQuestionRequest"];
/** The question resource (`GET /v1/questions/{id}`). */
export type Question = components["schemas"]["Question"];
/** A question's status in its resource. */
export type QuestionStatus = NonNullable<Question["status"]>;
/** The tool result an agent's model reads, as the MCP tool and `POST /v1/ask` return it. */
export type ToolResult = components["schemas"]["ToolResult"];
/** askgate's error body. */
export type ErrorBody = components["schemas"]["Error"];
/** One problem of a refused request. */
export type ErrorItem = NonNullable<ErrorBody["error"]["errors"]>[number];

/** Why a question ended without an answer. */
export type NoAnswerReason = "expired" | "skipped" | "cancelled";

/**
 * How a question ended: its answers (each question's id to the labels
 * picked, or the person's own words), or why there are none.
 */
export type AskResult =
  | {
      status: "answered";
      /** Each question's id to what the person chose: option labels, or their own words. */
      answers: Record<string, string[]>;
      questionId: string;
    }
  | { status: "no_answer"; reason: NoAnswerReason; questionId: string }
  | {
      status: "delivery_failed";
      /** Why no surface could show the question (the platforms' refusals). */
      reason: string;
      questionId: string;
    };

/** What a question is sent with, besides its questions. */
export interface AskOptions {
  /** The recipient's name in askgate's configuration. */
  to?: string;
  /** How long the person has to answer, in seconds (askgate's default: 900). */
  timeoutSeconds?: number;
  /** The agent session; askgate holds one pending question per session. */
  sessionId?: string;
  /** The agent run; aborting it (`POST /v1/runs/{id}/abort`) cancels its questions. */
  runId?: string;
  /** `main` (the default) or `subagent`. */
  sessionKind?: "main" | "subagent";
  /**
   * The agent runtime's id of this tool call. Without an
   * `idempotencyKey`, askgate uses it as one.
   */
  toolCallId?: string;
  /**
   * Makes the call safe to retry: the same key with the same request finds
   * the question the first call asked. Without one (and without a
   * `toolCallId`) the client makes one up, so that its own retries never
   * ask twice.
   */
  idempotencyKey?: string;
  /** When to remind the person: `"50%"`, `"2m before"`, `"10m"`. */
  remind?: string[];
  /** An escalation ladder: after each step's time without an answer, also ask `to`. */
  escalate?: { after: string | number; to: string }[];
  /**
   * `ask` only: askgate POSTs the result here when the question ends,
   * signed by Standard Webhooks, on a host the agent's configuration allows.
   */
  callbackUrl?: string;
  /** Stops the call; a blocking `askUser` then cancels its question. */
  signal?: AbortSignal;
}

/** What waiting for a question takes. */
export interface WaitOptions {
  /** Stops waiting (the question stays as it is). */
  signal?: AbortSignal;
}

/** How a {@link Client} reaches askgate. */
export interface ClientOptions {
  /** askgate's address, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** An agent token from askgate's configuration. */
  token: string;
  /**
   * How long one long-poll (`GET /v1/questions/{id}?wait=N`) is held, in
   * seconds (default 60): short enough for proxies between the agent and
   * askgate not to cut it.
   */
  pollSeconds?: number;
  /**
   * How long the client keeps retrying while askgate cannot be reached or
   * is restarting, in milliseconds (default 10 minutes); then the call
   * fails with code `connection_failed`.
   */
  reconnectForMs?: number;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
}

/**
 * An error askgate returned (its `code`, the JSON `path` of the offending
 * value, its `message`, and every problem when there were several), or
 * `connection_failed` when askgate could not be reached for longer than the
 * client retries.
 */
export class AskgateError extends Error {
  /** askgate's error code, e.g. `invalid_id`, `not_found`, `unauthorized`. */
  readonly code: string;
  /** The JSON path of the offending value (`questions[0].id`), when there is one. */
  readonly path: string | undefined;
  /** The HTTP status (0 when askgate could not be reached). */
  readonly status: number;
  /** Every problem, when askgate listed several (the first 50). */
  readonly errors: ErrorItem[];
  /** How many problems there were, when more than are listed. */
  readonly errorCount: number | undefined;
  /** Seconds to wait before retrying, when askgate said (`Retry-After`). */
  readonly retryAfter: number | undefined;

  /** An error with askgate's fields. */
  constructor(init: {
    code: string;
    message: string;
    status: number;
    path?: string | undefined;
    errors?: ErrorItem[] | undefined;
    errorCount?: number | undefined;
    retryAfter?: number | undefined;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "AskgateError";
    this.code = init.code;
    this.path = init.path;
    this.status = init.status;
    this.errors = init.errors ?? [];
    this.errorCount = init.errorCount;
    this.retryAfter = init.retryAfter;
  }
}

/** The first retry's delay; each next one doubles, up to {@link MAX_BACKOFF_MS}. */
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 5_000;

/** Statuses a restarting askgate or a proxy in front of it answers with, worth retrying. */
const RETRYABLE_STATUSES = new Set([502, 503, 504]);

/** A request that did not reach askgate, or whose reply was cut off. */
class Unreachable extends Error {}

/** The client of one askgate server and agent token. */
export class Client {
  readonly #baseUrl: string;
  readonly #token: string;
  readonly #pollSeconds: number;
  readonly #reconnectForMs: number;
  readonly #fetch: typeof fetch;

  /** A client of askgate at `baseUrl`, as the agent whose token is `token`. */
  constructor(options: ClientOptions) {
    if (!options.baseUrl) throw new TypeError("askgate: baseUrl is required");
    if (!options.token) throw new TypeError("askgate: token is required");
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#pollSeconds = options.pollSeconds ?? 60;
    this.#reconnectForMs = options.reconnectForMs ?? 10 * 60 * 1000;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /**
   * Asks and blocks until the question ends: answered, no answer (expired,
   * skipped, cancelled) or delivery failed. Dropped connections and askgate
   * restarts are retried with backoff, with the same idempotency key, so
   * the question is asked once however often the client reconnects.
   *
   * When `signal` aborts, the question is cancelled (as far as askgate can
   * be reached) and the call rejects with the signal's reason.
   */
  async askUser(questions: AskQuestion[], options: AskOptions = {}): Promise<AskResult> {
    const question = await this.ask(questions, options);
    const id = requireId(question);
    try {
      return await this.wait(id, { signal: options.signal });
    } catch (error) {
      if (options.signal?.aborted) {
        // The caller gave up: the person should not answer into the void.
        await this.cancel(id).catch(() => undefined);
      }
      throw error;
    }
  }

  /**
   * Asks without waiting (`POST /v1/questions`): the question resource,
   * pending. Pick the answer up with {@link wait} or {@link get}.
   */
  async ask(questions: AskQuestion[], options: AskOptions = {}): Promise<Question> {
    const body: Record<string, unknown> = { questions };
    for (const key of [
      "to",
      "timeoutSeconds",
      "sessionId",
      "runId",
      "sessionKind",
      "toolCallId",
      "remind",
      "escalate",
      "callbackUrl",
    ] as const) {
      if (options[key] !== undefined) body[key] = options[key];
    }
    const headers: Record<string, string> = {};
    // A key makes the POST safe to retry; askgate takes the tool call's id
    // as one when no header is sent.
    const key = options.idempotencyKey ?? (options.toolCallId ? undefined : globalThis.crypto.randomUUID());
    if (key !== undefined) headers["idempotency-key"] = key;
    return (await this.#request("POST", "/v1/questions", {
      body,
      headers,
      signal: options.signal,
      retry: true,
    })) as Question;
  }

  /**
   * The question resource (`GET /v1/questions/{id}`); with `wait`, held
   * until the question ends or that many seconds pass.
   */
  async get(id: string, options: WaitOptions & { wait?: number } = {}): Promise<Question> {
    const query = options.wait === undefined ? "" : `?wait=${Math.max(0, Math.floor(options.wait))}`;
    return (await this.#request("GET", `/v1/questions/${encodeURIComponent(id)}${query}`, {
      signal: options.signal,
      retry: true,
    })) as Question;
  }

  /**
   * Waits until question `id` ends and returns how: long-polls, re-attaching
   * across dropped connections and askgate restarts.
   */
  async wait(id: string, options: WaitOptions = {}): Promise<AskResult> {
    for (;;) {
      const question = await this.get(id, { wait: this.#pollSeconds, signal: options.signal });
      const result = resultOf(question);
      if (result) return result;
    }
  }

  /** Cancels question `id` (idempotent): its waiting call gets `no_answer`. */
  async cancel(id: string, options: WaitOptions = {}): Promise<Question> {
    return (await this.#request("POST", `/v1/questions/${encodeURIComponent(id)}/cancel`, {
      signal: options.signal,
      retry: true,
    })) as Question;
  }

  /** This agent token: its name and the recipients it may ask. */
  async agent(options: WaitOptions = {}): Promise<AgentInfo> {
    return (await this.#request("GET", "/v1/agent", { signal: options.signal, retry: true })) as AgentInfo;
  }

  /** One request, retried while askgate cannot be reached (when `retry`). */
  async #request(
    method: string,
    path: string,
    init: {
      body?: unknown;
      headers?: Record<string, string>;
      signal?: AbortSignal | undefined;
      retry: boolean;
    },
  ): Promise<unknown> {
    const deadline = Date.now() + this.#reconnectForMs;
    let backoff = FIRST_BACKOFF_MS;
    for (;;) {
      try {
        return await this.#once(method, path, init);
      } catch (error) {
        const retryable =
          error instanceof Unreachable ||
          (error instanceof AskgateError && RETRYABLE_STATUSES.has(error.status));
        if (!init.retry || !retryable) throw error;
        if (Date.now() >= deadline) {
          throw new AskgateError({
            code: "connection_failed",
            status: 0,
            message: `could not reach askgate at ${this.#baseUrl} for ${Math.round(this.#reconnectForMs / 1000)}s: ${describe(error)}`,
            cause: error,
          });
        }
        const told = error instanceof AskgateError && error.retryAfter !== undefined ? error.retryAfter * 1000 : 0;
        await sleep(Math.max(told, backoff * (0.5 + Math.random() / 2)), init.signal);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  /** One attempt: the parsed JSON reply, or an {@link AskgateError}. */
  async #once(
    method: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal | undefined },
  ): Promise<unknown> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#token}`,
      accept: "application/json",
      ...init.headers,
    };
    let body: string | undefined;
    if (init.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(init.body);
    }
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(`${this.#baseUrl}${path}`, {
        method,
        headers,
        body,
        signal: init.signal ?? null,
      });
      // A long poll's reply can be cut off half-way when askgate goes away.
      text = await response.text();
    } catch (error) {
      if (init.signal?.aborted) throw init.signal.reason;
      throw new Unreachable(describe(error), { cause: error });
    }
    let parsed: unknown;
    try {
      parsed = text.trim() === "" ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (response.ok && parsed !== undefined) return parsed;
    throw errorOf(response, parsed, text);
  }
}

/** `GET /v1/agent`'s reply. */
export interface AgentInfo {
  /** The agent's name in askgate's configuration. */
  name: string;
  /** The recipients it may ask: what `to` may name. */
  recipients: { name: string; displayName: string }[];
  /** How long an MCP tool call waits. */
  mcp: { waitSeconds: number };
}

/**
 * How a question ended, from its resource; `undefined` while it is pending.
 */
export function resultOf(question: Question): AskResult | undefined {
  const questionId = requireId(question);
  switch (question.status) {
    case "answered": {
      const result = question.result;
      const answers = result && result.status === "answered" ? result.answers.answers : {};
      return { status: "answered", answers, questionId };
    }
    case "expired":
    case "skipped":
    case "cancelled":
      return { status: "no_answer", reason: question.status, questionId };
    case "delivery_failed": {
      const resolution = question.resolution as { reason?: unknown } | null | undefined;
      const reasons = (question.deliveries ?? [])
        .map((delivery) => delivery.reason)
        .filter((reason): reason is string => typeof reason === "string" && reason !== "");
      const reason =
        typeof resolution?.reason === "string" && resolution.reason !== ""
          ? resolution.reason
          : reasons.join("; ") || "no surface could show the question";
      return { status: "delivery_failed", reason, questionId };
    }
    default:
      return undefined;
  }
}

/**
 * The tool result an agent's model reads for `result`, exactly as askgate's
 * MCP tool and `POST /v1/ask` give it.
 */
export function toToolResult(result: AskResult): ToolResult {
  switch (result.status) {
    case "answered":
      return { status: "answered", answers: { answers: result.answers } };
    case "no_answer":
      return { status: "no_answer" };
    case "delivery_failed":
      return { status: "delivery_failed" };
  }
}

function requireId(question: Question): string {
  if (typeof question.id !== "string") {
    throw new AskgateError({
      code: "invalid_response",
      status: 0,
      message: "askgate answered with a question resource without an id",
    });
  }
  return question.id;
}

function errorOf(response: Response, parsed: unknown, text: string): AskgateError {
  const retryAfterHeader = response.headers.get("retry-after");
  const retryAfter = retryAfterHeader !== null && /^\d+$/.test(retryAfterHeader) ? Number(retryAfterHeader) : undefined;
  const error = (parsed as Partial<ErrorBody> | undefined)?.error;
  if (error && typeof error.code === "string") {
    return new AskgateError({
      code: error.code,
      message: error.message ?? error.code,
      status: response.status,
      path: error.path,
      errors: error.errors,
      errorCount: error.errorCount,
      retryAfter,
    });
  }
  return new AskgateError({
    code: response.ok ? "invalid_response" : `http_${response.status}`,
    message: `askgate answered ${response.status} ${response.statusText}: ${text.slice(0, 200)}`,
    status: response.status,
    retryAfter,
  });
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
