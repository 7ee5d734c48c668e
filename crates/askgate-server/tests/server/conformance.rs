//! The inbound conformance suite (`askgate_testkit::conformance::inbound`)
//! against askgate's own web page: the real server on a loopback port, the
//! real engine and store behind it, and a person answering through the
//! page's API as its script does. The page takes no events through an
//! `InboundSink` (its answers go to `Engine::submit`), so the scenarios about
//! the sink, typed replies and groups do not apply; another recipient's link
//! is the stranger.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, OnceLock};

use askgate_core::channel::{Channel, InboundSink, MessageRef};
use askgate_core::form::FormValue;
use askgate_core::{ButtonAction, ButtonToken};
use askgate_engine::{Engine, Recipient};
use askgate_server::{AppState, Metrics, ServerSettings, WebChannel, WebKey};
use askgate_store::QuestionRecord;
use askgate_testkit::conformance::inbound::{self, Features, PATIENCE, PERSON, PersonPlatform, Seen, Who, recipient};
use askgate_testkit::conformance::{Shown, edges};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

/// The other recipient, whose link a stranger holds.
const STRANGER: &str = "stranger";
const PERSON_KEY: &str = "conformance-person-key-0123456789abcdefgh";
const STRANGER_KEY: &str = "conformance-stranger-key-0123456789abcdef";

/// The page's wording (`assets/web-words.js`), whose words the person reads.
const WORDS: &str = include_str!("../../assets/web-words.js");

const SCENARIOS: [&str; 6] = [
    "a_tap_on_an_option_answers_the_waiting_agent",
    "answer_opens_a_form_whose_submission_answers",
    "other_opens_a_free_text_input_whose_words_answer",
    "a_stranger_is_refused_and_changes_nothing",
    "a_second_tap_is_told_the_question_was_already_answered",
    "skip_gives_the_agent_no_answer",
];

/// The page's English wording of `name` (`submitted: 'Answer submitted'`):
/// English comes first in the script.
fn page_says(name: &str) -> String {
    let start = format!("{name}: '");
    let at = WORDS
        .find(&start)
        .unwrap_or_else(|| panic!("the page has no words for {name}"))
        + start.len();
    let end = WORDS[at..].find('\'').unwrap();
    WORDS[at..at + end].to_owned()
}

struct WebPage {
    http: reqwest::Client,
    /// `http://127.0.0.1:PORT`, once the suite connected the engine.
    base: OnceLock<String>,
    /// Kept so that the server does not take itself for shutting down.
    stop: OnceLock<tokio::sync::watch::Sender<bool>>,
}

fn key(who: Who) -> &'static str {
    match who {
        Who::Recipient => PERSON_KEY,
        Who::Stranger => STRANGER_KEY,
    }
}

impl WebPage {
    fn new() -> Self {
        Self {
            http: reqwest::Client::builder().timeout(PATIENCE).build().unwrap(),
            base: OnceLock::new(),
            stop: OnceLock::new(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base.get().expect("the suite connected the page"))
    }

    /// The question's ids of the questions as `who`'s page lists it among the
    /// pending ones, if it does.
    async fn on_page(&self, who: Who, question: &QuestionRecord) -> Option<Vec<String>> {
        let state: Value = self
            .http
            .get(self.url(&format!("/web/{}/api/state", key(who))))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let pending = state["pending"].as_array()?;
        let entry = pending.iter().find(|entry| entry["id"] == json!(question.id))?;
        let ids = entry["request"]["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].as_str().unwrap().to_owned())
            .collect();
        Some(ids)
    }

    /// Sends what the page sends for `action`, and returns what the page then
    /// shows the person (`post` in `assets/web.js`).
    async fn post(&self, who: Who, question: &QuestionRecord, action: &str, body: Value) -> Seen {
        let response = self
            .http
            .post(self.url(&format!("/web/{}/api/questions/{}/{action}", key(who), question.id)))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        let notice = |text: String, alert| Seen::Notice { text, alert };
        match status {
            200 if action == "skip" => notice(page_says("skippedNotice"), false),
            200 => notice(page_says("submitted"), false),
            409 => notice(page_says("ended"), false),
            // The page shows its broken-link screen.
            404 => notice(page_says("badLink"), true),
            422 => notice(
                format!(
                    "{} {}",
                    page_says("invalid"),
                    answer["error"]["message"].as_str().unwrap_or("")
                ),
                true,
            ),
            other => panic!("the page's API answered {other}: {answer}"),
        }
    }

    /// A single-select question's only question id.
    fn only_question(question: &QuestionRecord) -> String {
        question.request.questions[0].id.clone()
    }
}

/// What a person picks on the page for one field: typed option numbers (`1, 3`)
/// are the options they tick; anything else goes in the own-answer field.
fn picked(value: &FormValue) -> Value {
    let numbers: Option<Vec<usize>> = value
        .text
        .split(',')
        .map(|part| part.trim().parse::<usize>().ok().and_then(|n| n.checked_sub(1)))
        .collect();
    let mut options = value.checked.clone();
    let mut entry = Map::new();
    match numbers {
        Some(numbers) => options.extend(numbers),
        None => {
            entry.insert("text".into(), json!(value.text));
        }
    }
    entry.insert("options".into(), json!(options));
    Value::Object(entry)
}

#[async_trait]
impl PersonPlatform for WebPage {
    fn features(&self) -> Features {
        Features {
            groups: false,
            strangers: true,
            sink: false,
        }
    }

    fn channel(&self) -> Arc<dyn Channel> {
        Arc::new(WebChannel::new("web"))
    }

    fn recipients(&self) -> Vec<Recipient> {
        vec![
            recipient(PERSON, "Alice", "web", PERSON, &[]),
            recipient(STRANGER, "Mallory", "web", STRANGER, &[]),
        ]
    }

    async fn connect(&self, engine: Engine, _sink: Arc<dyn InboundSink>) {
        let settings = ServerSettings {
            web_keys: vec![
                WebKey {
                    key: PERSON_KEY.into(),
                    recipient: PERSON.into(),
                },
                WebKey {
                    key: STRANGER_KEY.into(),
                    recipient: STRANGER.into(),
                },
            ],
            ..ServerSettings::default()
        };
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let state = AppState::new(engine, Arc::new(Metrics::new()), settings, stopping);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        self.base
            .set(format!("http://{}", listener.local_addr().unwrap()))
            .unwrap();
        self.stop.set(stop).unwrap();
        // The server ends with the test's runtime.
        tokio::spawn(askgate_server::serve(listener, state, std::future::pending()));
    }

    async fn tap(&self, who: Who, question: &QuestionRecord, token: &str) -> Seen {
        // The page has no button payloads: the token says which control the person uses.
        let token = ButtonToken::decode(token).unwrap();
        assert_eq!(token.question, question.id);
        match token.action {
            ButtonAction::Choose(index) => {
                let body = json!({"answers": {Self::only_question(question): {"options": [index]}}});
                self.post(who, question, "answer", body).await
            }
            ButtonAction::Skip => self.post(who, question, "skip", json!({})).await,
            // The own-answer field is on the page, under every pending question.
            ButtonAction::Other => match self.on_page(who, question).await {
                Some(_) => Seen::FreeTextInput,
                None => Seen::Nothing,
            },
            // The page shows every question of a pending prompt as one form.
            ButtonAction::Answer => match self.on_page(who, question).await {
                Some(fields) => Seen::Form { fields },
                None => Seen::Nothing,
            },
        }
    }

    async fn answer_free_text(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
        let body = json!({"answers": {Self::only_question(question): {"text": text}}});
        self.post(who, question, "answer", body).await
    }

    async fn submit_form(&self, who: Who, question: &QuestionRecord, _token: &str, values: Vec<FormValue>) -> Seen {
        let answers: Map<String, Value> = values.iter().map(|value| (value.id.clone(), picked(value))).collect();
        self.post(who, question, "answer", json!({"answers": answers})).await
    }

    /// The page is read by the browser suite (`tests/browser`), not here.
    async fn shown(&self, _message: &MessageRef) -> Option<Shown> {
        None
    }

    /// askgate's own page: no platform, no published spec to break.
    fn violations(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Prompts at the contract's edges on the page: delivered, answered in the
/// person's own words at the maximum, and ended (`conformance::edges`).
#[tokio::test]
async fn edge_prompts_on_the_web_page() {
    let page = WebPage::new();
    assert_eq!(edges::run(&page).await, edges::requests().len());
}

#[tokio::test]
async fn inbound_web_page() {
    assert_eq!(inbound::run(&WebPage::new()).await, SCENARIOS);
}
