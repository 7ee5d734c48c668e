"""Schemathesis hooks for tests/e2e/schemathesis.rs (loaded through SCHEMATHESIS_HOOKS).

Two things the OpenAPI document cannot say by itself:

- Which recipients exist. `to` is any non-blank string to the schema, and an
  unknown name is a 422 `unknown_recipient`; left alone, nearly every
  generated question would be refused there and the rest of the API (201s,
  the resource, answers, cancel, the stateful links between them) would go
  untested. So a non-blank `to` is steered to a configured recipient. A `to`
  that breaks the schema (not a string, blank) is left as generated, and so
  is a missing one: the schema lets `to` be left out, and the harness's token
  may ask several recipients, so askgate refuses that with 422
  `missing_field` at `to`, a rule beyond the schema ("left out only when the
  token may ask exactly one") that the check below accepts there only.

- Which refusals of a schema-valid request are legitimate. JSON Schema cannot
  state "labels differ ignoring case", "question ids are unique", "a label has
  something typeable in it", "no Other option", "the recipient exists", "`to`
  is left out only by a token that may ask one recipient" or "this
  idempotency key was not used for another request"; askgate refuses
  those with 422. schemathesis.toml lets
  `positive_data_acceptance` take a 422 on the two question-creating
  operations, and `refused_only_for_rules_beyond_the_schema` below makes
  sure such a 422 names only those rules and nothing the schema could have
  said.
"""

import schemathesis

# The harness configuration's recipients (tests/e2e/support/mod.rs).
RECIPIENTS = ("me", "other")
QUESTION_ROUTES = ("/v1/ask", "/v1/questions")
# The validation codes JSON Schema cannot express (crates/askgate-core/src/validate.rs, error.rs).
BEYOND_THE_SCHEMA = {
    "unknown_recipient",
    "duplicate_label",
    "duplicate_id",
    "invalid_label",
    "other_option_not_allowed",
    # Not a property of the request alone: its Idempotency-Key (or
    # toolCallId) was used before for another request.
    "idempotency_key_reused",
    # A reminder point or escalation the loose patterns let through but
    # askgate cannot keep: `0%`, units out of order, an escalation to a
    # recipient not configured or after the question ends.
    "invalid_reminder",
    "invalid_escalation",
    # A callbackUrl on a host this agent's configuration does not allow.
    "invalid_callback_url",
}


@schemathesis.hook
def map_case(context, case):
    if case.operation.path not in QUESTION_ROUTES or not isinstance(case.body, dict):
        return case
    to = case.body.get("to")
    if isinstance(to, str) and to.strip():
        # Deterministic, so that a seed still reproduces the run.
        case.body["to"] = RECIPIENTS[len(to) % len(RECIPIENTS)]
    return case


@schemathesis.check
def refused_only_for_rules_beyond_the_schema(ctx, response, case):
    meta = case.meta
    if (
        meta is None
        or not meta.generation.mode.is_positive
        or case.operation.path not in QUESTION_ROUTES
        or response.status_code != 422
    ):
        return None
    error = response.json().get("error", {})
    problems = error.get("errors") or [error]
    codes = {
        problem.get("code")
        for problem in problems
        # `to` left out where the token may ask several recipients.
        if (problem.get("code"), problem.get("path")) != ("missing_field", "to")
    }
    unexpected = sorted(str(code) for code in codes - BEYOND_THE_SCHEMA)
    if unexpected:
        raise AssertionError(
            f"A schema-valid request was refused with {', '.join(unexpected)}: "
            "the OpenAPI document should have ruled it out"
        )
    return None
