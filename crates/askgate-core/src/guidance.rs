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
}
