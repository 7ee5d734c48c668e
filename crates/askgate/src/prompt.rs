//! `askgate prompt`: the admin's tool for debugging prompts. Its outputs are
//! a contract that scripts depend on (README, "askgate prompt").

use std::io::{self, Read as _, Write as _};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use askgate_core::{
    Answers, AskRequest, Capabilities, Locale, Presentation, QuestionId, ReplyOutcome, ReplyReader, render,
    validate_json,
};
use serde_json::{Value, json};

use crate::channels::kinds;
use crate::cli::{ParseArgs, PromptCommand, PromptFile, RenderArgs, TEXT_CHANNEL};

/// The question id that previews put into button tokens.
const PREVIEW_QUESTION_ID: &str = "preview";

/// Runs one `askgate prompt` command.
pub(crate) fn run(command: PromptCommand) -> ExitCode {
    let outcome = match command {
        PromptCommand::Validate(args) => validate(&args),
        PromptCommand::Render(args) => render_prompt(&args),
        PromptCommand::Parse(args) => parse(&args),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            // The one place the binary reports an I/O or usage problem in prose.
            let _ = writeln!(io::stderr(), "askgate: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn validate(args: &PromptFile) -> Result<ExitCode> {
    match load(args)? {
        Ok(request) => {
            print_json(&serde_json::to_value(&request)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => refused(&errors),
    }
}

fn render_prompt(args: &RenderArgs) -> Result<ExitCode> {
    let request = match load(&args.prompt)? {
        Ok(request) => request,
        Err(errors) => return refused(&errors),
    };
    let locale: Locale = args.locale.parse()?;
    let question = QuestionId::parse(PREVIEW_QUESTION_ID)?;
    let text = args.channel == TEXT_CHANNEL;
    let capabilities = if text {
        text_capabilities()
    } else {
        // clap took only the kinds the registry knows.
        let kind = kinds()
            .into_iter()
            .find(|kind| kind.kind() == args.channel)
            .with_context(|| format!("no channel kind \"{}\"", args.channel))?;
        if let Some(sketch) = kind.sketch(&request, locale) {
            write!(io::stdout().lock(), "{sketch}")?;
            return Ok(ExitCode::SUCCESS);
        }
        kind.preview_capabilities()
    };
    let presentation = render(&request, &capabilities, &question, locale);
    match (text, &presentation) {
        (true, Presentation::Text(text)) => {
            let mut out = io::stdout().lock();
            for (index, part) in text.parts.iter().enumerate() {
                if index > 0 {
                    writeln!(out, "\n-----")?;
                }
                writeln!(out, "{part}")?;
            }
        }
        _ => print_json(&serde_json::to_value(&presentation)?)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn parse(args: &ParseArgs) -> Result<ExitCode> {
    let request = match load(&args.prompt)? {
        Ok(request) => request,
        Err(errors) => return refused(&errors),
    };
    print_json(&parse_replies(&request, &args.replies))?;
    Ok(ExitCode::SUCCESS)
}

/// The outcome of typing `replies` in order, as the engine would take them:
/// the first reply that resolves the prompt ends it, and later ones change nothing.
fn parse_replies(request: &AskRequest, replies: &[String]) -> Value {
    let reader = ReplyReader::new(request);
    let mut answers = Answers::new();
    let mut refusal = None;
    for reply in replies {
        match reader.read(&answers, reply) {
            ReplyOutcome::Answered(complete) => {
                return serde_json::to_value(askgate_core::ToolResult::from(&complete))
                    .unwrap_or_else(|_| json!({"status": "answered"}));
            }
            ReplyOutcome::Skipped => return json!({"status": "skipped"}),
            ReplyOutcome::Partial { answers: so_far, .. } => answers = so_far,
            ReplyOutcome::NotAnAnswer => refusal = Some("not_an_answer"),
        }
    }
    match refusal {
        Some(reason) if answers.is_empty() => json!({"status": "refused", "reason": reason}),
        _ => json!({
            "status": "incomplete",
            "answers": answers.values().answers,
            "missing": answers.missing(request),
        }),
    }
}

/// What `--channel text` shows: askgate's plain text, no buttons. Each
/// kind's own is its adapter's declaration ("platform capability tables
/// never live in core"): [`askgate_adapter::AdapterKind::preview_capabilities`].
fn text_capabilities() -> Capabilities {
    Capabilities::text(4096)
}

/// Reads and validates the prompt file; the outer error is I/O, the inner
/// one the request's problems.
fn load(args: &PromptFile) -> Result<Result<AskRequest, askgate_core::ValidationErrors>> {
    let text = if args.file.as_os_str() == "-" {
        let mut text = String::new();
        io::stdin()
            .read_to_string(&mut text)
            .context("reading the prompt from standard input")?;
        text
    } else {
        std::fs::read_to_string(&args.file).with_context(|| format!("reading {}", args.file.display()))?
    };
    // A `/v1` request body is read too: its envelope fields are askgate's,
    // not the prompt's, so they are set aside (and said so on stderr).
    if let Ok(serde_json::Value::Object(mut fields)) = serde_json::from_str::<serde_json::Value>(&text) {
        let envelope: Vec<&str> = askgate_server::api::ENVELOPE_FIELDS
            .into_iter()
            .filter(|name| fields.remove(*name).is_some())
            .collect();
        if !envelope.is_empty() {
            let _ = writeln!(
                io::stderr(),
                "askgate: set aside {}: /v1 envelope fields, not part of the ask_user prompt",
                envelope.join(", ")
            );
            return Ok(askgate_core::validate(&serde_json::Value::Object(fields)));
        }
    }
    Ok(validate_json(&text))
}

fn refused(errors: &askgate_core::ValidationErrors) -> Result<ExitCode> {
    print_json(&serde_json::to_value(errors)?)?;
    Ok(ExitCode::from(1))
}

fn print_json(value: &Value) -> Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> AskRequest {
        validate_json(
            r#"{"questions":[
                {"id":"deploy","header":"Deploy","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
                {"id":"notify","header":"Notify","question":"Who?","multiSelect":true,"options":[{"label":"Team"},{"label":"On-call"},{"label":"Nobody"}]}
            ]}"#,
        )
        .unwrap()
    }

    #[test]
    fn replies_after_the_prompt_resolves_change_nothing() {
        let replies = ["1: 2\n2: 1, 3".to_owned(), "1: 1".to_owned()];
        assert_eq!(
            parse_replies(&request(), &replies),
            json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"], "notify": ["Team", "Nobody"]}}})
        );
    }

    #[test]
    fn only_empty_replies_are_refused() {
        assert_eq!(
            parse_replies(&request(), &["  ".to_owned()]),
            json!({"status": "refused", "reason": "not_an_answer"})
        );
        assert_eq!(
            parse_replies(&request(), &["2: 2".to_owned(), " ".to_owned()]),
            json!({"status": "incomplete", "answers": {"notify": ["On-call"]}, "missing": ["deploy"]})
        );
    }

    #[test]
    fn every_channel_kind_has_room_for_a_whole_question() {
        let previews = kinds()
            .into_iter()
            .map(|kind| (kind.kind(), kind.preview_capabilities()));
        for (channel, capabilities) in std::iter::once((TEXT_CHANNEL, text_capabilities())).chain(previews) {
            // The largest question with buttons (four 64-character labels with
            // 150-character descriptions, a 300-character question) is about
            // 1,250 characters.
            assert!(capabilities.max_message_chars >= 1400, "{channel}");
            if let Some(buttons) = capabilities.buttons {
                // Four options, Other… and Skip; a 64-character label; the longest token.
                assert!(buttons.max_buttons >= 6 && buttons.max_label_chars >= 64 && buttons.max_token_bytes >= 38);
            }
        }
    }
}
