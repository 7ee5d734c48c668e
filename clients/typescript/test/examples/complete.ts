// The example of docs/clients/typescript.md, type-checked by `npm test`
// (test/tsconfig.json) so that it cannot drift from the client.
import { AskgateError, Client } from "askgate";

const askgate = new Client({
  baseUrl: "http://127.0.0.1:8080",
  token: process.env.ASKGATE_TOKEN!,
});

try {
  const result = await askgate.askUser(
    [
      {
        id: "deploy_target",
        header: "Deploy",
        question: "Where should this build go?",
        options: [
          { label: "Staging (Recommended)", description: "Safe to break" },
          { label: "Production" },
        ],
      },
    ],
    { to: "alice", timeoutSeconds: 600, sessionId: "build-4711" },
  );

  switch (result.status) {
    case "answered":
      // Each question's id to the option labels picked, or the person's own words.
      console.log("deploying to", result.answers.deploy_target?.[0]);
      break;
    case "no_answer":
      // "expired", "skipped" or "cancelled": go on with your best judgment.
      console.log("no answer:", result.reason);
      break;
    case "delivery_failed":
      console.log("nobody could be asked:", result.reason);
      break;
  }
} catch (error) {
  if (error instanceof AskgateError) {
    // askgate refused the request: e.g. 422 invalid_id at questions[0].id.
    console.error(error.status, error.code, error.path, error.message);
    for (const problem of error.errors) console.error(" -", problem.path, problem.message);
  } else {
    throw error;
  }
}

export {};
