//! The real binary with a Slack channel, against the testkit's fake Slack
//! on loopback: what only a whole process shows. In both inbound modes —
//! askgate holding the fake's Socket Mode connection (`socket::…`), and the
//! fake sending signed events and interactions by `POST` to askgate's
//! routes (`http::…`) — a click answering the waiting agent through the
//! configured binary, a reply in a question's thread, an event Slack
//! retries, and a `kill -9` between the click and the update; then, in one
//! mode, a prompt answered in its thread with the posts paced, the routes'
//! 401 to a forged or stale signature through the real server, a socket
//! drop, a refusal's reason on the resource, and `check-config`.
//!
//! What a person does in Slack (Other…'s and Answer…'s modals, typed
//! replies, strangers, a second click, Skip) and what is posted (agent text
//! literal, a 429 waited out) are the conformance suite's, run in both
//! modes by `crates/askgate-slack/tests/slack/conformance.rs`; expiry is
//! the engine suite's.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::{Duration, Instant};

use askgate_testkit::slack::{
    DeliveryStatus, Failure, FakeSlack, Person, SeenMessage, SignatureMode, SlackChannel, interaction_body,
};
use serde_json::{Value, json};
use support::chat::{Refused, answered, check_config_and_serve, deploy, in_modes, report_if_failing, two_questions};
use support::{Asked, Server};

const ALICE: &str = "U0ALICE001";
/// What askgate is told its public address is (HTTP mode needs one); the
/// fake is pointed at the real port.
const PUBLIC_URL: &str = "https://askgate.test";
/// How long a step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Socket,
    Http,
}

/// The channel `sl` in `mode` with `bot_token`, and two recipients: Alice
/// by DM, "ops" in a channel (Alice answers).
fn slack_config(fake: &FakeSlack, mode: Mode, bot_token: &str, ops: &str) -> String {
    let mode = match mode {
        Mode::Socket => format!("mode = \"socket\"\napp_token = \"{}\"\n", fake.app_token()),
        Mode::Http => format!("mode = \"http\"\nsigning_secret = \"{}\"\n", fake.signing_secret()),
    };
    format!(
        "\n[channels.sl]\ntype = \"slack\"\nbot_token = \"{bot_token}\"\napi_url = \"{api}\"\n{mode}\n\
         [recipients.alice]\nchannel = \"sl\"\nuser_id = \"{ALICE}\"\ndisplay_name = \"Alice\"\n\n\
         [recipients.ops]\nchannel = \"sl\"\nchannel_id = \"{ops}\"\nanswerers = [\"{ALICE}\"]\ndisplay_name = \"Ops\"\n",
        api = fake.api_url(),
    )
}

fn server_keys(mode: Mode) -> String {
    match mode {
        Mode::Socket => String::new(),
        Mode::Http => format!("public_url = \"{PUBLIC_URL}\""),
    }
}

/// The text of a message's blocks, section by section (what a person reads).
fn shown(message: &SeenMessage) -> String {
    message
        .blocks
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"]["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fake Slack and askgate running against it in one mode.
struct Slack {
    fake: FakeSlack,
    server: Server,
    mode: Mode,
    alice: Person,
    /// Alice's DM with the bot (`D…`; its id is not hers).
    dm: String,
    /// The channel of the recipient "ops", where Alice is.
    ops: SlackChannel,
}

impl Drop for Slack {
    fn drop(&mut self) {
        let fake = &self.fake;
        report_if_failing(&mut self.server, || {
            vec![
                ("the fake's calls", format!("{:#?}", fake.calls())),
                ("the fake's deliveries", format!("{:#?}", fake.deliveries())),
            ]
        });
    }
}

impl Slack {
    async fn start(mode: Mode) -> Self {
        let fake = FakeSlack::start().await;
        let alice = fake.user(ALICE, "Alice");
        let ops = fake.channel("releases", &[&alice]);
        let dm = fake.dm(&alice);
        assert!(dm.starts_with('D'), "a DM has an id of its own: {dm}");
        let server = Server::start_with(
            &server_keys(mode),
            &slack_config(&fake, mode, fake.bot_token(), &ops.id),
        );
        let slack = Self {
            fake,
            server,
            mode,
            alice,
            dm,
            ops,
        };
        slack.route();
        slack
    }

    /// In HTTP mode, points the fake's deliveries at askgate's current port.
    fn route(&self) {
        if self.mode == Mode::Http {
            self.fake.deliver_over_http(
                &self.server.url("/slack/sl/events"),
                &self.server.url("/slack/sl/interactivity"),
            );
        }
    }

    /// `POST /v1/ask`, answered in the background.
    async fn ask(&self, body: &Value) -> Asked {
        self.server.ask_waiting(body).await
    }

    /// The message of question `id` (the one whose buttons name it), as
    /// soon as it is shown.
    async fn prompt_of(&self, channel: &str, id: &str) -> SeenMessage {
        self.fake
            .wait_for_message(channel, PATIENCE, |message| {
                message
                    .buttons()
                    .iter()
                    .any(|button| button["action_id"].as_str().is_some_and(|action| action.contains(id)))
            })
            .await
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// The message once it was updated and shows `summary`.
    async fn updated_into(&self, channel: &str, ts: &str, summary: &str) -> SeenMessage {
        self.fake
            .wait_for_edit(channel, ts, PATIENCE, |seen| shown(seen).contains(summary))
            .await
            .unwrap_or_else(|error| {
                panic!(
                    "message {ts} updated into {summary:?}: {error}; it is {:?}",
                    self.fake.message_at(channel, ts)
                )
            })
    }

    /// The ephemeral message with this text that only `person` sees.
    async fn ephemeral(&self, person: &Person, text: &str) -> SeenMessage {
        let seen = self
            .fake
            .wait_for_ephemeral(&person.id, PATIENCE, |seen| seen.text == text)
            .await
            .unwrap_or_else(|error| {
                panic!(
                    "{text:?} for {}: {error}; they see {:?}",
                    person.id,
                    self.fake.ephemerals_for(&person.id)
                )
            });
        assert_eq!(seen.ephemeral_for.as_deref(), Some(person.id.as_str()), "{seen:?}");
        seen
    }

    /// How many ephemeral messages with this text `person` has seen.
    fn ephemerals(&self, person: &Person, text: &str) -> usize {
        self.fake
            .ephemerals_for(&person.id)
            .iter()
            .filter(|seen| seen.text == text)
            .count()
    }

    async fn status(&self, id: &str) -> Value {
        self.server.question(id).await["status"].clone()
    }

    /// No token and no signing secret is in askgate's log.
    fn assert_no_secret_logged(&mut self) {
        let log = self.server.stderr();
        assert!(log.contains("askgate is serving"), "the log is read: {log}");
        for secret in [self.fake.bot_token(), self.fake.app_token(), self.fake.signing_secret()] {
            assert!(!log.contains(secret), "a secret is in the log:\n{log}");
        }
    }
}

async fn settled(fake: &FakeSlack, delivery: usize) -> DeliveryStatus {
    fake.wait_for_ack(delivery, PATIENCE)
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .status
}

// ---------------------------------------------------------------------------
// Scenarios, each run in both modes.

/// Ask over HTTP → the blocks (exact JSON) in Alice's DM, whose id is not
/// hers → a click → the waiting agent gets the exact result, Alice sees
/// "Answer submitted" alone, the message is updated and its buttons go.
async fn a_click_answers_the_waiting_agent_and_updates_the_message(mode: Mode) {
    let mut sl = Slack::start(mode).await;
    let mut asked = sl.ask(&deploy("alice")).await;
    let prompt = sl.prompt_of(&sl.dm, &asked.id).await;
    let opened = sl.fake.calls_to("conversations.open");
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(opened[0].body, json!({"users": ALICE}), "{opened:?}");

    let sent = sl.fake.calls_to("chat.postMessage");
    assert_eq!(sent.len(), 1, "{sent:?}");
    let button = |label: &str, action: &str| {
        json!({"type": "button", "text": {"type": "plain_text", "text": label},
               "action_id": asked.token(action), "value": asked.token(action)})
    };
    let mut primary = button("Staging (Recommended)", "0");
    primary["style"] = json!("primary");
    assert_eq!(
        sent[0].body,
        json!({
            "channel": sl.dm,
            "text": "Question for you (reply within 15 min)\n\nDeploy — Where should this build go?\n\
                     • Staging (Recommended) — safe, resets nightly\n• Production",
            "blocks": [
                {"type": "section", "block_id": "askgate:question", "text": {"type": "mrkdwn",
                 "text": "Question for you (reply within 15 min)\n\n*Deploy*\nWhere should this build go?",
                 "verbatim": true}},
                {"type": "context", "block_id": "askgate:descriptions", "elements": [
                    {"type": "mrkdwn", "text": "*Staging (Recommended)* — safe, resets nightly", "verbatim": true}]},
                {"type": "actions", "block_id": "askgate:actions", "elements": [
                    primary, button("Production", "1"), button("Other…", "o"), button("Skip", "s")]},
            ],
            "unfurl_links": false,
            "unfurl_media": false,
        }),
        "{:#}",
        sent[0].body
    );
    assert!(prompt.pings.is_empty(), "nobody is pinged: {prompt:?}");
    assert!(prompt.links.iter().all(|link| !link.unfurls), "{prompt:?}");

    sl.fake.click(&sl.alice, &sl.dm, &prompt.ts, &asked.token("0"));
    assert_eq!(asked.result(PATIENCE).await, answered("Staging (Recommended)"));
    sl.ephemeral(&sl.alice, "Answer submitted").await;
    let updated = sl
        .updated_into(&sl.dm, &prompt.ts, "*Answered by Alice: Staging (Recommended)*")
        .await;
    assert!(updated.buttons().is_empty(), "the buttons are gone: {updated:?}");
    assert!(
        shown(&updated).contains("Where should this build go?"),
        "the question stays: {updated:?}"
    );
    let update_calls = sl.fake.calls_to("chat.update");
    assert_eq!(update_calls.len(), 1, "{update_calls:?}");
    let section = |id: &str, text: &str| json!({"type": "section", "block_id": id, "text": {"type": "mrkdwn", "text": text, "verbatim": true}});
    assert_eq!(
        update_calls[0].body,
        json!({
            "channel": sl.dm,
            "ts": prompt.ts,
            "text": "Answered by Alice: Staging (Recommended)",
            "blocks": [
                section("askgate:text0", "Question for you (reply within 15 min)\n\nDeploy — Where should this build go?\n\
                                          • Staging (Recommended) — safe, resets nightly\n• Production"),
                section("askgate:summary", "*Answered by Alice: Staging (Recommended)*"),
            ],
        }),
        "{:#}",
        update_calls[0].body
    );
    sl.assert_no_secret_logged();
}

/// In a channel, the answerer's reply in the question's thread answers; the
/// message is updated in place.
async fn in_a_channel_a_reply_in_the_thread_answers(mode: Mode) {
    let sl = Slack::start(mode).await;
    let mut asked = sl.ask(&deploy("ops")).await;
    let prompt = sl.prompt_of(&sl.ops.id, &asked.id).await;
    // At once: a reply that comes before askgate stored where the prompt
    // went waits for it.
    sl.fake.message(&sl.alice, &sl.ops.id, "2", Some(&prompt.ts));
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    let updated = sl
        .updated_into(&sl.ops.id, &prompt.ts, "Answered by Alice: Production")
        .await;
    assert!(updated.buttons().is_empty(), "{updated:?}");
}

/// A typed answer in the DM answers; the same event delivered again (a
/// retry on Slack's side) is acknowledged and changes nothing.
async fn a_retried_event_answers_once(mode: Mode) {
    let sl = Slack::start(mode).await;
    let mut asked = sl.ask(&deploy("alice")).await;
    let prompt = sl.prompt_of(&sl.dm, &asked.id).await;
    let ts = sl.fake.message(&sl.alice, &sl.dm, "production", None);
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    let first = sl
        .fake
        .deliveries()
        .into_iter()
        .find(|delivery| delivery.payload["event"]["ts"] == ts.as_str())
        .unwrap_or_else(|| panic!("the event of message {ts}: {:?}", sl.fake.deliveries()));
    assert!(
        matches!(
            settled(&sl.fake, first.id).await,
            DeliveryStatus::Acked { late: false, .. }
        ),
        "{:?}",
        sl.fake.delivery(first.id)
    );
    sl.updated_into(&sl.dm, &prompt.ts, "Answered by Alice: Production")
        .await;
    // Whatever askgate posts in answer is in (posts to a conversation are
    // paced a second apart), and a retry is signed at another second, as
    // Slack's are (askgate refuses a signature it has seen as a replay).
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let resolved_at = sl.server.question(&asked.id).await["resolvedAt"].clone();
    let messages = sl.fake.messages(&sl.dm).len();
    let ephemerals = sl.fake.ephemerals_for(&sl.alice.id).len();

    let retry = sl.fake.redeliver(first.event_id.as_deref().unwrap());
    assert!(
        matches!(
            settled(&sl.fake, retry).await,
            DeliveryStatus::Acked { late: false, .. }
        ),
        "{:?}",
        sl.fake.delivery(retry)
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sl.server.question(&asked.id).await["resolvedAt"], resolved_at);
    assert_eq!(sl.fake.calls_to("chat.update").len(), 1, "updated once");
    assert_eq!(
        sl.fake.messages(&sl.dm).len(),
        messages,
        "{:?}",
        sl.fake.messages(&sl.dm)
    );
    assert_eq!(sl.fake.ephemerals_for(&sl.alice.id).len(), ephemerals);
}

/// askgate is killed (`SIGKILL`) after it stored the answer and before the
/// update reached Slack: after a restart the message is updated, and the
/// click was taken once.
async fn a_kill_between_the_click_and_the_update_loses_nothing_and_answers_once(mode: Mode) {
    let mut sl = Slack::start(mode).await;
    let created = sl.server.create(&deploy("alice")).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let prompt = sl.prompt_of(&sl.dm, &id).await;
    // The update after the answer never reaches Slack, and askgate dies right then.
    // (Three times: askgate tries again after half a second, and the kill
    // must come before an update gets through; after the restart the rest
    // fail too, and the update is tried until it does.)
    for _ in 0..3 {
        sl.fake.fail_next("chat.update", Failure::Drop);
    }
    sl.fake.click(&sl.alice, &sl.dm, &prompt.ts, &format!("ag1:{id}:1"));
    sl.server.question_with_status(&id, "answered", PATIENCE).await;
    sl.ephemeral(&sl.alice, "Answer submitted").await;
    sl.fake.wait_for_call("chat.update", PATIENCE, |_| true).await.unwrap();
    sl.assert_no_secret_logged();
    sl.server.kill();
    assert!(
        !sl.fake.message_at(&sl.dm, &prompt.ts).unwrap().edited,
        "the failed update took no effect"
    );

    sl.server.restart();
    sl.route();
    let updated = sl
        .updated_into(&sl.dm, &prompt.ts, "Answered by Alice: Production")
        .await;
    assert!(updated.buttons().is_empty(), "the buttons are gone: {updated:?}");
    assert_eq!(sl.server.question(&id).await["result"], answered("Production"));
    // Slack never delivers a click again: one click, one answer.
    assert_eq!(sl.ephemerals(&sl.alice, "Answer submitted"), 1);
    sl.assert_no_secret_logged();
}

in_modes!(
    [
    a_click_answers_the_waiting_agent_and_updates_the_message,
    in_a_channel_a_reply_in_the_thread_answers,
    a_retried_event_answers_once,
    a_kill_between_the_click_and_the_update_loses_nothing_and_answers_once,
    ]
    socket => Socket, http => Http
);

// ---------------------------------------------------------------------------
// One mode only.

/// A prompt of two questions is text with Answer… and Skip. It is answered
/// by two typed replies in its thread, the first confirmed with what is
/// still missing, the process's posts to the DM paced a second apart.
/// (Typed replies and Answer…'s modal are the inbound conformance suite's,
/// in both modes; the pacing of the running process is this test's.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_two_question_prompt_is_answered_in_its_thread_and_the_posts_paced() {
    let sl = Slack::start(Mode::Socket).await;
    let mut asked = sl.ask(&two_questions("alice")).await;
    let prompt = sl.prompt_of(&sl.dm, &asked.id).await;
    assert!(prompt.text.starts_with("Questions for you"), "{prompt:?}");
    assert!(shown(&prompt).contains("Where should this build go?"), "{prompt:?}");
    assert!(shown(&prompt).contains("On-call"), "{prompt:?}");
    let labels: Vec<String> = prompt
        .buttons()
        .iter()
        .map(|button| button["text"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(labels, ["Answer…", "Skip"], "{prompt:?}");
    sl.fake.message(&sl.alice, &sl.dm, "1: canary", Some(&prompt.ts));
    let confirmed = sl
        .fake
        .wait_for_message(&sl.dm, PATIENCE, |seen| {
            seen.bot_id.is_some() && seen.thread_ts.as_deref() == Some(prompt.ts.as_str())
        })
        .await
        .unwrap_or_else(|error| panic!("a reply in the thread: {error}"));
    assert_eq!(confirmed.text, "Got Deploy. Still needed: Notify", "{confirmed:?}");
    let posts = sl.fake.calls_to("chat.postMessage");
    let paced = posts[1].at - posts[0].at;
    assert!(
        paced >= Duration::from_millis(950),
        "posts to a DM are paced: {paced:?}"
    );
    assert!(confirmed.pings.is_empty(), "{confirmed:?}");
    assert_eq!(sl.status(&asked.id).await, json!("pending"));
    sl.fake
        .message(&sl.alice, &sl.dm, "2: team channel, 2", Some(&prompt.ts));
    assert_eq!(
        asked.result(PATIENCE).await,
        json!({"status": "answered", "answers": {"answers": {
            "deploy": ["Canary"], "notify": ["Team channel", "On-call"]}}})
    );
    let updated = sl.updated_into(&sl.dm, &prompt.ts, "Deploy: Canary").await;
    assert!(shown(&updated).contains("Notify: Team channel, On-call"), "{updated:?}");
    assert!(updated.buttons().is_empty(), "{updated:?}");
}

/// A request to the HTTP routes with a forged or missing signature, or a
/// timestamp six minutes old, gets 401 and changes nothing; the genuine
/// click then answers. The `url_verification` challenge is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_forged_or_stale_signature_gets_401_and_changes_nothing() {
    let fake = FakeSlack::start().await;
    let alice = fake.user(ALICE, "Alice");
    let ops = fake.channel("releases", &[&alice]);
    let dm = fake.dm(&alice);
    let server = Server::start_with(
        &server_keys(Mode::Http),
        &slack_config(&fake, Mode::Http, fake.bot_token(), &ops.id),
    );
    let events = server.url("/slack/sl/events");
    let interactivity = server.url("/slack/sl/interactivity");
    let created = server.create(&deploy("alice")).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let prompt = fake
        .wait_for_message(&dm, PATIENCE, |message| !message.buttons().is_empty())
        .await
        .unwrap();
    // Not routed yet: the click and the message wait in the fake while
    // forgeries of them are tried.
    let click = fake.click(&alice, &dm, &prompt.ts, &format!("ag1:{id}:1"));
    // The same answer typed in the question's thread: whichever of the two
    // askgate takes first, the answer is Production.
    let typed = fake.message(&alice, &dm, "production", Some(&prompt.ts));
    let event = fake
        .deliveries()
        .into_iter()
        .find(|delivery| delivery.payload["event"]["ts"] == typed.as_str())
        .unwrap();
    let forgeries = [
        SignatureMode::Forged,
        SignatureMode::Missing,
        SignatureMode::Stale(Duration::from_secs(6 * 60)),
    ];
    for mode in forgeries {
        let answer = fake
            .post_signed(
                &interactivity,
                &interaction_body(&click.payload),
                "application/x-www-form-urlencoded",
                mode,
            )
            .await;
        assert_eq!(answer.status, Some(401), "{mode:?}: {answer:?}");
        let answer = fake
            .post_signed(&events, event.payload.to_string().as_bytes(), "application/json", mode)
            .await;
        assert_eq!(answer.status, Some(401), "{mode:?}: {answer:?}");
    }
    // A valid signature of another body does not carry over.
    let mut tampered = click.payload.clone();
    tampered["actions"][0]["value"] = json!(format!("ag1:{id}:0"));
    let mut request = server
        .http()
        .post(&interactivity)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(interaction_body(&tampered));
    for (name, value) in fake.signature_headers(&interaction_body(&click.payload), SignatureMode::Valid) {
        request = request.header(name, value);
    }
    assert_eq!(request.send().await.unwrap().status().as_u16(), 401);
    assert_eq!(server.question(&id).await["status"], json!("pending"));
    assert!(fake.calls_to("chat.update").is_empty());
    assert!(fake.calls_to("chat.postEphemeral").is_empty());
    assert!(!fake.message_at(&dm, &prompt.ts).unwrap().edited);

    // Slack's handshake is answered, and the genuine click counts.
    let verification = fake.verify_url(&events).await;
    assert!(verification.passed(), "{verification:?}");
    fake.deliver_over_http(&events, &interactivity);
    let resource = server.question_with_status(&id, "answered", PATIENCE).await;
    assert_eq!(resource["result"], answered("Production"));
    assert_eq!(resource["resolution"]["by"]["id"], json!(ALICE), "{resource}");
    assert!(matches!(
        settled(&fake, click.delivery).await,
        DeliveryStatus::Acked { .. }
    ));
    assert!(matches!(settled(&fake, event.id).await, DeliveryStatus::Acked { .. }));
    fake.wait_for_call("chat.update", PATIENCE, |_| true).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.question(&id).await["result"], answered("Production"));
    assert_eq!(fake.calls_to("chat.update").len(), 1, "updated once");
}

/// The Socket Mode connection drops while a question waits: askgate
/// connects again, and a click then still answers. So after Slack's
/// `disconnect` (a refresh).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_socket_drop_mid_question_still_delivers_the_answer() {
    let mut sl = Slack::start(Mode::Socket).await;
    let mut asked = sl.ask(&deploy("alice")).await;
    let prompt = sl.prompt_of(&sl.dm, &asked.id).await;
    sl.fake.wait_for_connections(1, PATIENCE).await.unwrap();
    assert!(sl.fake.drop_socket() >= 1, "{:?}", sl.fake.connections());
    sl.fake.wait_for_connections(2, PATIENCE).await.unwrap();
    sl.fake.click(&sl.alice, &sl.dm, &prompt.ts, &asked.token("1"));
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    sl.ephemeral(&sl.alice, "Answer submitted").await;
    sl.updated_into(&sl.dm, &prompt.ts, "Answered by Alice: Production")
        .await;

    // Slack asks for a refresh: askgate connects again, and a click counts.
    let mut asked = sl.ask(&deploy("alice")).await;
    let prompt = sl.prompt_of(&sl.dm, &asked.id).await;
    let before = sl.fake.connections().len();
    assert!(sl.fake.send_disconnect("refresh_requested") >= 1);
    sl.fake.wait_for_connections(before + 1, PATIENCE).await.unwrap();
    sl.fake.click(&sl.alice, &sl.dm, &prompt.ts, &asked.token("0"));
    assert_eq!(asked.result(PATIENCE).await, answered("Staging (Recommended)"));
    sl.assert_no_secret_logged();
}

/// Slack refuses the post (`channel_not_found`): the waiting agent hears
/// `delivery_failed` at once, and the resource says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_refused_post_is_delivery_failed_at_once_with_the_reason() {
    let mut sl = Slack::start(Mode::Socket).await;
    sl.fake
        .fail_next("chat.postMessage", Failure::Error("channel_not_found"));
    let started = Instant::now();
    let mut asked = sl.ask(&deploy("ops")).await;
    assert_eq!(asked.result(PATIENCE).await, json!({"status": "delivery_failed"}));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not waited out: {:?}",
        started.elapsed()
    );
    let resource = sl.server.question(&asked.id).await;
    assert_eq!(resource["status"], json!("delivery_failed"));
    let reason = resource["resolution"]["reason"].as_str().unwrap();
    assert!(reason.contains("channel_not_found"), "{reason}");
    assert!(!reason.contains(sl.fake.bot_token()), "{reason}");
    assert_eq!(sl.fake.calls_to("chat.postMessage").len(), 1, "not retried");
    sl.assert_no_secret_logged();
}

/// A token Slack refuses fails `check-config`, and leaves the channel
/// `refused` in a running askgate, naming the key, the method that refused
/// it and Slack's error, never the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the command runs.
async fn a_wrong_token_fails_check_config_and_leaves_the_channel_refused_without_showing_it() {
    let fake = FakeSlack::start().await;
    let alice = fake.user(ALICE, "Alice");
    let ops = fake.channel("releases", &[&alice]);
    let wrong_bot = "xoxb-1234567890123-1234567890124-WrongTokenNeverShown00";
    let wrong_app = "xapp-1-A0AGAPP001-1234567890125-WrongTokenNeverShown00";
    let cases = [
        (Mode::Socket, "bot_token", "auth.test"),
        (Mode::Http, "bot_token", "auth.test"),
        (Mode::Socket, "app_token", "apps.connections.open"),
    ];
    for (mode, key, method) in cases {
        let channel = if key == "bot_token" {
            slack_config(&fake, mode, wrong_bot, &ops.id)
        } else {
            slack_config(&fake, mode, fake.bot_token(), &ops.id).replace(fake.app_token(), wrong_app)
        };
        for refused in check_config_and_serve(&server_keys(mode), &channel).await {
            refused.assert_refused();
            let Refused { command, printed, .. } = refused;
            assert!(
                printed.contains(&format!("channels.sl.{key}"))
                    && printed.contains(&format!("({method}): invalid_auth")),
                "{mode:?} {key} {command} names the key, the method and Slack's error: {printed}"
            );
            assert!(
                !printed.contains("WrongTokenNeverShown"),
                "{mode:?} {key} {command} shows the token: {printed}"
            );
        }
    }
}
