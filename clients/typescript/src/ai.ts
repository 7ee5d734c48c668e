/**
 * askgate's ask_user tool for the Vercel AI SDK (`ai`, version 5 or later),
 * with its input schema in `zod`: both are optional peer dependencies of
 * this package, needed only by this entry point (`askgate/ai`).
 *
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { Client } from "askgate";
 * import { askUserTool } from "askgate/ai";
 *
 * const askgate = new Client({ baseUrl: "http://127.0.0.1:8080", token: process.env.ASKGATE_TOKEN! });
 * await generateText({
 *   model,
 *   tools: { ask_user: askUserTool(askgate, { to: "alice" }) },
 *   stopWhen: stepCountIs(10),
 *   prompt: "Deploy the build; ask me where if you are unsure.",
 * });
 * ```
 *
 * @module
 */
import { tool } from "ai";
import { z } from "zod";

import { FIELD_DESCRIPTIONS, TOOL_DESCRIPTION } from "./guidance.js";
import { type Client, type ToolResult, toToolResult } from "./index.js";

/** A question id: snake_case, as askgate requires. */
const ID = /^[a-z][a-z0-9_]*$/;

/** The ask_user tool's input, described in the words of askgate's MCP tool. */
export const askUserInput = z.object({
  questions: z
    .array(
      z.object({
        id: z.string().regex(ID).max(64).describe(FIELD_DESCRIPTIONS["questions[].id"]),
        header: z.string().min(1).describe(FIELD_DESCRIPTIONS["questions[].header"]),
        question: z.string().min(1).max(300).describe(FIELD_DESCRIPTIONS["questions[].question"]),
        options: z
          .array(
            z.object({
              label: z.string().min(1).max(64).describe(FIELD_DESCRIPTIONS["questions[].options[].label"]),
              description: z
                .string()
                .max(150)
                .optional()
                .describe(FIELD_DESCRIPTIONS["questions[].options[].description"]),
            }),
          )
          .min(2)
          .max(4)
          .describe(FIELD_DESCRIPTIONS["questions[].options"]),
        multiSelect: z.boolean().optional().describe(FIELD_DESCRIPTIONS["questions[].multiSelect"]),
      }),
    )
    .min(1)
    .max(3)
    .describe(FIELD_DESCRIPTIONS.questions),
});

/** What the model sends the ask_user tool. */
export type AskUserInput = z.infer<typeof askUserInput>;

/** Who the tool asks, and how. */
export interface AskUserToolOptions {
  /** The recipient's name in askgate's configuration. */
  to?: string;
  /** How long the person has to answer, in seconds (askgate's default: 900). */
  timeoutSeconds?: number;
  /** The agent session; askgate holds one pending question per session. */
  sessionId?: string;
  /** The agent run; aborting it cancels its questions. */
  runId?: string;
  /** Replaces the tool description (askgate's model guidance) — rarely wise. */
  description?: string;
}

/**
 * The ask_user tool on `client`: the model's questions go to the person
 * `options.to`, and the tool call returns when they end, with the result
 * askgate's MCP tool gives (`{"status":"answered","answers":{"answers":{…}}}`
 * or `{"status":"no_answer"}` or `{"status":"delivery_failed"}`). The AI
 * SDK's tool call id is askgate's idempotency key, and its abort signal
 * cancels the question.
 */
export function askUserTool(client: Client, options: AskUserToolOptions = {}) {
  return tool({
    description: options.description ?? TOOL_DESCRIPTION,
    inputSchema: askUserInput,
    execute: async (input: AskUserInput, { toolCallId, abortSignal }): Promise<ToolResult> => {
      const result = await client.askUser(input.questions, {
        to: options.to,
        timeoutSeconds: options.timeoutSeconds,
        sessionId: options.sessionId,
        runId: options.runId,
        toolCallId,
        signal: abortSignal,
      });
      return toToolResult(result);
    },
  });
}

export { TOOL_DESCRIPTION, FIELD_DESCRIPTIONS };
