// The AI SDK example of docs/clients/typescript.md, type-checked by `npm test`
// (test/tsconfig.json) so that it cannot drift from the client.
// The model is declared rather than built: no provider package needed.
import type { LanguageModel } from "ai";
import { generateText, stepCountIs } from "ai";
import { Client } from "askgate";
import { askUserTool } from "askgate/ai";

declare const model: LanguageModel;

const askgate = new Client({ baseUrl: "http://127.0.0.1:8080", token: process.env.ASKGATE_TOKEN! });

const { text } = await generateText({
  model,
  tools: { ask_user: askUserTool(askgate, { to: "alice", timeoutSeconds: 600 }) },
  stopWhen: stepCountIs(10),
  prompt: "Ship build 4711. Ask me where to deploy it if that is not obvious.",
});

console.log(text);
