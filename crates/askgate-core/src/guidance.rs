//! The model guidance of the `ask_user` contract (spec §2). It goes, word
//! for word, into every tool description askgate publishes (OpenAPI, MCP),
//! so it is written once, here.

/// The tool's name, as agents call it.
pub const TOOL_NAME: &str = "ask_user";

/// The tool description an agent's model reads.
pub const TOOL_DESCRIPTION: &str = "\
Ask the user one to three structured questions and wait for their answers. \
Use this only when you are truly blocked on a decision that belongs to the user: \
not for routine confirmations, and not for facts you can derive from the request, \
the code, or a sensible default. Prefer one question; never ask more than three. \
Give each question two to four options, put the recommended option first and end \
its label with \" (Recommended)\". Never add an \"Other\" option: the user can always \
answer in their own words. Never use ask_user to ask whether to continue or to \
confirm your own plan. If the result is {\"status\":\"no_answer\"} (the question \
expired, was skipped or cancelled), continue with your best judgment.";

/// What each field of the `ask_user` arguments means, in the words the
/// model reads in every published schema (OpenAPI, MCP): `(field, text)`,
/// the field as a path (`questions[].options[].label`).
pub const FIELD_DESCRIPTIONS: [(&str, &str); 9] = [
    (
        "questions",
        "One to three questions; prefer one. Ask only what you are truly blocked on.",
    ),
    (
        "questions[].id",
        "A unique snake_case key for this question's answer, e.g. deploy_target.",
    ),
    (
        "questions[].header",
        "A short label shown above the question (cut to 12 characters), e.g. \"Deploy\".",
    ),
    (
        "questions[].question",
        "The question itself, in one sentence. Put every choice the user can pick in options, not in this text.",
    ),
    (
        "questions[].options",
        "Two to four options. Put every selectable choice here; put the recommended option first and end its \
         label with \" (Recommended)\". Never add an \"Other\" option: the user can always answer in their own words.",
    ),
    (
        "questions[].options[].label",
        "What the user picks; short and distinct from the others.",
    ),
    (
        "questions[].options[].description",
        "Optional: what choosing this option means, in a few words.",
    ),
    (
        "questions[].multiSelect",
        "true only when several options may be chosen together; false (the default) for a single choice.",
    ),
    (
        "timeoutSeconds",
        "How long to wait for an answer, 30 to 3600 seconds (default 900); then the result is no_answer.",
    ),
];

/// The description of one field of [`FIELD_DESCRIPTIONS`]; empty for a
/// field it does not name.
pub fn field_description(field: &str) -> &'static str {
    FIELD_DESCRIPTIONS
        .iter()
        .find(|(name, _)| *name == field)
        .map_or("", |(_, text)| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guidance_states_every_rule_of_the_contract() {
        for rule in [
            "truly blocked",
            "routine confirmations",
            "Prefer one question",
            "never ask more than three",
            "recommended option first",
            "(Recommended)",
            "Never add an \"Other\" option",
            "whether to continue",
            "confirm your own plan",
            "no_answer",
            "best judgment",
        ] {
            assert!(TOOL_DESCRIPTION.contains(rule), "missing: {rule}");
        }
    }

    #[test]
    fn the_field_descriptions_state_the_rules_of_each_field() {
        for (field, rule) in [
            ("questions[].question", "one sentence"),
            ("questions[].question", "in options"),
            ("questions[].options", "every selectable choice"),
            ("questions[].options", "recommended option first"),
            ("questions[].options", " (Recommended)"),
            ("questions[].options", "Never add an \"Other\" option"),
            ("questions[].multiSelect", "only when several options may be chosen"),
        ] {
            assert!(field_description(field).contains(rule), "{field}: missing {rule}");
        }
        assert_eq!(field_description("nothing"), "");
    }
}
