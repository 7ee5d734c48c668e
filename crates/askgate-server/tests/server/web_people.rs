//! Page links are people's, against the router with the real engine and
//! store: a group's named people each answer its questions on their own
//! link, the answer is recorded as theirs (`answeredBy`, the summary), a
//! person's link shows their questions and their groups' only, a link that
//! is no one's (forged, or revoked by a rotation) opens nothing, and paging
//! walks a person's questions across their groups, each once, oldest first.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::{Fixture, agent_one, fixture_in, send_to, web_recipient};

use askgate_core::Locale;
use askgate_core::channel::Destination;
use askgate_engine::{Recipient, RecipientSurface};
use askgate_server::{ServerSettings, WebKey};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};

const TOKEN: &str = "web-people-test-token-0123456789abcdefghijk";
const ALICE: &str = "web-people-alice-key-0123456789abcdefghijkl";
const BOB: &str = "web-people-bob-key-0123456789abcdefghijklmno";
const CAROL: &str = "web-people-carol-key-0123456789abcdefghijklm";

fn keys(alice: &str) -> Vec<WebKey> {
    [(alice, "alice"), (BOB, "bob"), (CAROL, "carol")]
        .into_iter()
        .map(|(key, recipient)| WebKey {
            key: key.into(),
            recipient: recipient.into(),
        })
        .collect()
}

/// Alice, Bob and Carol, each with their page; the group `ops` (on the
/// page channel here, answered by platform ids) names Alice and Bob.
async fn fixture() -> Fixture {
    let ops = Recipient::on(
        "ops",
        "Ops",
        RecipientSurface::new(
            "web",
            "web",
            Destination {
                conversation: "ops".into(),
                thread: None,
            },
            vec!["u-alice".into(), "u-bob".into()],
        ),
        Locale::En,
    )
    .answered_on_the_page_by(vec!["alice".into(), "bob".into()]);
    let recipients = vec![
        web_recipient("alice", "Alice"),
        web_recipient("bob", "Bob"),
        web_recipient("carol", "Carol"),
        ops,
    ];
    let settings = ServerSettings {
        agents: vec![agent_one(TOKEN)],
        web_keys: keys(ALICE),
        ..ServerSettings::default()
    };
    fixture_in(tempfile::tempdir().unwrap(), recipients, settings).await
}

fn question(to: &str, n: usize) -> Value {
    json!({
        "to": to,
        "questions": [{
            "id": "go",
            "header": format!("Go {n}"),
            "question": format!("Ship build {n}?"),
            "options": [{"label": "Ship"}, {"label": "Hold"}],
        }],
    })
}

/// What this suite does with the harness's fixture: a trait of its own, as
/// the server's suites share one binary, where another suite's inherent
/// method of the same name on `Fixture` would clash.
trait Suite {
    async fn ask(&self, to: &str, n: usize) -> String;
    async fn get(&self, path: &str) -> (StatusCode, Value);
    async fn state(&self, key: &str) -> Value;
    async fn answer(&self, key: &str, id: &str, option: usize) -> (StatusCode, Value);
    async fn result(&self, id: &str) -> Value;
}

impl Suite for Fixture {
    async fn ask(&self, to: &str, n: usize) -> String {
        let request = Request::post("/v1/questions")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(question(to, n).to_string()))
            .unwrap();
        let (status, created) = send_to(&self.router, request).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created["id"].as_str().unwrap().to_owned()
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        send_to(&self.router, Request::get(path).body(Body::empty()).unwrap()).await
    }

    async fn state(&self, key: &str) -> Value {
        let (status, state) = self.get(&format!("/web/{key}/api/state")).await;
        assert_eq!(status, StatusCode::OK, "{state}");
        state
    }

    async fn answer(&self, key: &str, id: &str, option: usize) -> (StatusCode, Value) {
        let body = json!({"answers": {"go": {"options": [option]}}});
        let request = Request::post(format!("/web/{key}/api/questions/{id}/answer"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        send_to(&self.router, request).await
    }

    async fn result(&self, id: &str) -> Value {
        let request = Request::get(format!("/v1/questions/{id}"))
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        let (status, result) = send_to(&self.router, request).await;
        assert_eq!(status, StatusCode::OK, "{result}");
        result
    }
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn each_named_person_answers_a_groups_question_on_their_own_link_as_themselves() {
    let fixture = fixture().await;
    let for_ops = fixture.ask("ops", 1).await;
    let for_alice = fixture.ask("alice", 2).await;

    // Alice sees hers and the group's, marked as the group's; Bob the
    // group's alone; Carol, whom the group does not name, neither.
    let alice = fixture.state(ALICE).await;
    assert_eq!(ids(&alice["pending"]), [for_ops.clone(), for_alice.clone()]);
    assert_eq!(alice["pendingCount"], 2);
    assert_eq!(alice["recipient"]["name"], "alice");
    assert_eq!(
        alice["pending"][0]["recipient"],
        json!({"name": "ops", "displayName": "Ops"})
    );
    assert_eq!(alice["pending"][1]["recipient"]["name"], "alice");
    let bob = fixture.state(BOB).await;
    assert_eq!(ids(&bob["pending"]), std::slice::from_ref(&for_ops));
    let carol = fixture.state(CAROL).await;
    assert_eq!(ids(&carol["pending"]), Vec::<String>::new());
    assert_eq!(carol["pendingCount"], 0);

    // Neither Carol nor Bob can answer what is not theirs: the same 404 as
    // a question that does not exist.
    let (status, body) = fixture.answer(CAROL, &for_ops, 0).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = fixture.answer(BOB, &for_alice, 0).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // Alice answers the group's question: the result names her.
    let (status, body) = fixture.answer(ALICE, &for_ops, 0).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = fixture.result(&for_ops).await;
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["answeredBy"], json!({"id": "web:alice", "displayName": "Alice"}));

    // Bob's page shows it answered by Alice; his answer comes too late.
    let bob = fixture.state(BOB).await;
    assert_eq!(ids(&bob["pending"]), Vec::<String>::new());
    assert_eq!(ids(&bob["recent"]), std::slice::from_ref(&for_ops));
    let summary = bob["recent"][0]["summary"].to_string();
    assert!(summary.contains("Alice"), "{summary}");
    let (status, body) = fixture.answer(BOB, &for_ops, 1).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(fixture.result(&for_ops).await["answers"], result["answers"]);
}

#[tokio::test]
async fn a_forged_or_revoked_link_opens_nothing() {
    let fixture = fixture().await;
    let id = fixture.ask("ops", 1).await;
    // A group has no link; a forged key is no one's.
    for key in ["ops", "web-people-forged-key-0123456789abcdefghijk"] {
        let (status, body) = fixture.get(&format!("/web/{key}/api/state")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{key}: {body}");
        let (status, body) = fixture.answer(key, &id, 0).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{key}: {body}");
    }
    // Alice's link rotated: the old one opens nothing, the new one her page.
    let rotated = "web-people-alice-new-key-0123456789abcdefgh";
    fixture.state.set_credentials(vec![agent_one(TOKEN)], keys(rotated));
    let (status, body) = fixture.get(&format!("/web/{ALICE}/api/state")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = fixture.answer(ALICE, &id, 0).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(fixture.result(&id).await["status"], "pending");
    assert_eq!(ids(&fixture.state(rotated).await["pending"]), [id]);
}

#[tokio::test]
async fn paging_walks_a_persons_questions_across_their_groups_each_once_in_order() {
    let fixture = fixture().await;
    let mut asked = Vec::new();
    for n in 0..65 {
        let to = if n % 3 == 0 { "alice" } else { "ops" };
        asked.push(fixture.ask(to, n).await);
        // Carol's are never Alice's.
        if n % 10 == 0 {
            fixture.ask("carol", n).await;
        }
    }
    let state = fixture.state(ALICE).await;
    assert_eq!(state["pendingCount"], 65);
    assert_eq!(state["more"], true);
    let mut seen = ids(&state["pending"]);
    assert_eq!(seen.len(), 50);
    let last = seen.last().unwrap().clone();
    let (status, page) = fixture.get(&format!("/web/{ALICE}/api/pending?after={last}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["more"], false);
    seen.extend(ids(&page["pending"]));
    assert_eq!(seen, asked);
    // A question of someone else's is no place to page from.
    let carols = ids(&fixture.state(CAROL).await["pending"]);
    let (status, body) = fixture
        .get(&format!("/web/{ALICE}/api/pending?after={}", carols[0]))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}
