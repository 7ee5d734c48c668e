/**
 * The guidance an agent's model reads about the ask_user tool: the same
 * words as askgate's MCP tool and its OpenAPI document
 * (`askgate_core::guidance` in askgate's source). The tests check them
 * against the document the askgate binary serves.
 *
 * @module
 */

/** The tool's name, as askgate's MCP server calls it. */
export const TOOL_NAME = "ask_user";

/** The tool description an agent's model reads. */
export const TOOL_DESCRIPTION =
  "Ask the user one to three structured questions and wait for their answers. " +
  "Use this only when you are truly blocked on a decision that belongs to the user: not for routine confirmations, and not for facts you can derive from the request, the code, or a sensible default. " +
  "Prefer one question; never ask more than three. " +
  "Give each question two to four options, put the recommended option first and end its label with \" (Recommended)\". " +
  "Never add an \"Other\" option: the user can always answer in their own words. " +
  "Never use ask_user to ask whether to continue or to confirm your own plan. " +
  "If the result is {\"status\":\"no_answer\"} (the question expired, was skipped or cancelled), continue with your best judgment.";

/**
 * What each field of the ask_user arguments means, by its path
 * (`questions[].options[].label`).
 */
export const FIELD_DESCRIPTIONS = {
  "questions":
    "One to three questions; prefer one. Ask only what you are truly blocked on.",
  "questions[].id":
    "A unique snake_case key for this question's answer, e.g. deploy_target.",
  "questions[].header":
    "A short label shown above the question (cut to 12 characters), e.g. \"Deploy\".",
  "questions[].question":
    "The question itself, in one sentence. Put every choice the user can pick in options, not in this text.",
  "questions[].options":
    "Two to four options. Put every selectable choice here; put the recommended option first and end its label with \" (Recommended)\". Never add an \"Other\" option: the user can always answer in their own words.",
  "questions[].options[].label":
    "What the user picks; short and distinct from the others.",
  "questions[].options[].description":
    "Optional: what choosing this option means, in a few words.",
  "questions[].multiSelect":
    "true only when several options may be chosen together; false (the default) for a single choice.",
  "timeoutSeconds":
    "How long to wait for an answer, 30 to 3600 seconds (default 900); then the result is no_answer.",
} as const;
