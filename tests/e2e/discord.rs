//! The real binary with a Discord channel, against the testkit's fake
//! Discord on loopback: what only a whole process shows. In both inbound
//! modes — askgate holding the fake's gateway (`gateway::…`), and the fake
//! sending signed interactions by `POST` to askgate's endpoint
//! (`interactions::…`) — a click answering the waiting agent through the
//! configured binary, a `kill -9` between the click and the edit, a
//! thread's recipient, and mentions in a free-text answer echoed into the
//! summary; then, in one mode, the endpoint's 401 to a forged signature
//! through the real server, a gateway drop, a greeting in a configured
//! thread, a refusal's reason on the resource, `check-config`, and a burst.
//!
//! What a person does in Discord (Other…'s and Answer…'s modals, typed
//! replies, strangers, a second click, Skip) is the conformance suite's,
//! run in both modes by `crates/askgate-discord/tests/discord/conformance.rs`;
//! expiry is the engine suite's. The gateway's resumes are `discord_gateway`'s.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::{Duration, Instant};

use askgate_testkit::discord::{
    BOT_ID, Disconnect, DiscordChannel, DiscordUser, Failure, FakeDiscord, InteractionRecord, Ping, Reply, SeenMessage,
    Signature,
};
use serde_json::{Value, json};
use support::chat::{
    Refused, answered, check_config_and_serve, deploy, eventually_within, in_modes, report_if_failing, two_questions,
};
use support::{Asked, Server};

const ALICE: u64 = 411_111_111_111_111_111;
const BOB: u64 = 422_222_222_222_222_222;
const GUILD: u64 = 433_333_333_333_333_333;
/// A guild text channel where Alice (only she) answers for the recipient "ops".
const OPS: u64 = 444_444_444_444_444_444;
/// A thread in `OPS` where Alice (only she) answers for the recipient
/// "thread": a channel of its own, with `OPS` as its parent.
const THREAD: u64 = 455_555_555_555_555_555;
/// Another thread in `OPS`, which no recipient names.
const OTHER_THREAD: u64 = 466_666_666_666_666_666;
/// What askgate is told its public address is (interactions mode needs one);
/// the fake is pointed at the real port.
const PUBLIC_URL: &str = "https://askgate.test";
/// How long a step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(20);

const CREATE_MESSAGE: &str = "POST /channels/{channel_id}/messages";
const EDIT_MESSAGE: &str = "PATCH /channels/{channel_id}/messages/{message_id}";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Gateway,
    Interactions,
}

fn alice() -> DiscordUser {
    DiscordUser::new(ALICE, "alice").with_global_name("Alice")
}

fn bob() -> DiscordUser {
    DiscordUser::new(BOB, "bob").with_global_name("Bob")
}

fn ops() -> DiscordChannel {
    DiscordChannel::guild(OPS, GUILD, "releases")
}

/// The thread of the recipient "thread" (what a person acts in).
fn thread() -> DiscordChannel {
    DiscordChannel::guild(THREAD, GUILD, "release-42")
}

/// The channel `dc` in `mode` with `token`, and three recipients: Alice by
/// DM, "ops" in a guild channel and "thread" in a thread of it (Alice
/// answers both).
fn discord_config(fake: &FakeDiscord, mode: Mode, token: &str) -> String {
    let mode = match mode {
        Mode::Gateway => "mode = \"gateway\"\n".to_owned(),
        Mode::Interactions => format!("mode = \"interactions\"\npublic_key = \"{}\"\n", fake.public_key()),
    };
    format!(
        "\n[channels.dc]\ntype = \"discord\"\ntoken = \"{token}\"\napi_url = \"{api}\"\n{mode}\n\
         [recipients.alice]\nchannel = \"dc\"\nuser_id = \"{ALICE}\"\ndisplay_name = \"Alice\"\n\n\
         [recipients.ops]\nchannel = \"dc\"\nchannel_id = \"{OPS}\"\nanswerers = [\"{ALICE}\"]\ndisplay_name = \"Ops\"\n\n\
         [recipients.thread]\nchannel = \"dc\"\nchannel_id = \"{OPS}\"\nthread_id = \"{THREAD}\"\n\
         answerers = [\"{ALICE}\"]\ndisplay_name = \"Release thread\"\n",
        api = fake.api_url(),
    )
}

fn server_keys(mode: Mode) -> String {
    match mode {
        Mode::Gateway => String::new(),
        Mode::Interactions => format!("public_url = \"{PUBLIC_URL}\""),
    }
}

/// The fake Discord and askgate running against it in one mode.
struct Discord {
    fake: FakeDiscord,
    server: Server,
    mode: Mode,
    /// Alice's DM channel (its id is not hers).
    dm: DiscordChannel,
}

impl Drop for Discord {
    fn drop(&mut self) {
        let fake = &self.fake;
        report_if_failing(&mut self.server, || {
            vec![
                ("the fake's calls", format!("{:#?}", fake.calls())),
                ("the fake's interactions", format!("{:#?}", fake.interactions())),
            ]
        });
    }
}

impl Discord {
    async fn start(mode: Mode) -> Self {
        let fake = FakeDiscord::start().await;
        fake.add_user(&alice());
        fake.add_user(&bob());
        fake.add_channel(&ops());
        assert_eq!(fake.add_thread(&ops(), THREAD, "release-42"), thread());
        let dm = fake.dm_channel(&alice());
        assert_ne!(dm.id, ALICE, "a DM has an id of its own");
        let server = Server::start_with(&server_keys(mode), &discord_config(&fake, mode, fake.token()));
        let discord = Self { fake, server, mode, dm };
        discord.route_interactions();
        discord
    }

    /// In interactions mode, points the fake's deliveries at askgate's current port.
    fn route_interactions(&self) {
        if self.mode == Mode::Interactions {
            self.fake.deliver_interactions_to(&self.server.url("/discord/dc"));
        }
    }

    /// `POST /v1/ask`, answered in the background.
    async fn ask(&self, body: &Value) -> Asked {
        self.server.ask_waiting(body).await
    }

    /// The message of question `id` (the one whose components name it), as
    /// soon as it is shown: a click at once must count (the engine waits for
    /// the delivery to be stored).
    async fn prompt_of(&self, channel: u64, id: &str) -> SeenMessage {
        self.fake
            .wait_for_message(channel, PATIENCE, |message| {
                message
                    .components()
                    .iter()
                    .any(|component| component.custom_id.as_deref().is_some_and(|custom| custom.contains(id)))
            })
            .await
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// Alice answers the two-question prompt through Answer…'s modal:
    /// "3" (Canary) and "team channel, 2", and is told it was submitted.
    async fn answer_two_by_modal(&self, channel: &DiscordChannel, prompt: &SeenMessage) {
        let answer = prompt
            .components()
            .into_iter()
            .find(|component| component.label.as_deref() == Some("Answer…"))
            .and_then(|component| component.custom_id.clone())
            .unwrap_or_else(|| panic!("the prompt carries Answer…: {prompt:?}"));
        let click = self.fake.click(&alice(), channel, prompt.id, &answer).await;
        let Reply::Modal(modal) = self.reply(&click, 1).await else {
            panic!("Answer… opens a modal: {:?}", self.fake.interaction(click.id));
        };
        let fields: Vec<&str> = modal.fields.iter().map(|field| field.custom_id.as_str()).collect();
        assert_eq!(fields, ["deploy", "notify"], "{modal:?}");
        let submit = self
            .fake
            .submit_modal(
                &alice(),
                channel,
                &modal.custom_id,
                &[("deploy", "3"), ("notify", "team channel, 2")],
            )
            .await;
        assert_ephemeral(&self.notice(&submit).await, "Answer submitted");
    }

    /// The message as the channel shows it once its content contains `summary`.
    async fn edited_into(&self, channel: u64, message: u64, summary: &str) -> SeenMessage {
        self.fake
            .wait_for_message(channel, PATIENCE, |seen| {
                seen.id == message && shown(&seen.content).contains(summary)
            })
            .await
            .unwrap_or_else(|error| {
                panic!(
                    "message {message} edited into {summary:?}: {error}; it is {:?}",
                    self.fake.message_by_id(message)
                )
            })
    }

    /// The `n`th answer the person saw to their interaction (from 1).
    async fn reply(&self, interaction: &InteractionRecord, n: usize) -> Reply {
        let replies = self
            .fake
            .wait_for_replies(interaction.id, n, PATIENCE)
            .await
            .unwrap_or_else(|error| panic!("{error}; the interaction: {:?}", self.fake.interaction(interaction.id)));
        replies[n - 1].clone()
    }

    /// The message the person saw in answer to their interaction: the first
    /// answer, or the follow-up after a deferral (askgate defers when storing
    /// takes more than 2.5 s, as on a busy machine).
    async fn notice(&self, interaction: &InteractionRecord) -> Reply {
        match self.reply(interaction, 1).await {
            Reply::DeferredUpdate | Reply::Deferred { .. } => self.reply(interaction, 2).await,
            first => first,
        }
    }

    async fn status(&self, id: &str) -> Value {
        self.server.question(id).await["status"].clone()
    }

    /// The bot's reply to the person's message `message_id`.
    async fn reply_to(&self, channel: u64, message_id: u64) -> SeenMessage {
        self.fake
            .wait_for_message(channel, PATIENCE, |seen| seen.reply_to == Some(message_id))
            .await
            .unwrap_or_else(|error| panic!("a reply to {message_id}: {error}"))
    }

    /// The bot token is not in askgate's log.
    fn assert_no_secret_logged(&mut self) {
        let log = self.server.stderr();
        assert!(log.contains("askgate is serving"), "the log is read: {log}");
        let token = self.fake.token();
        let secret = token.rsplit('.').next().unwrap();
        assert!(!log.contains(secret), "the bot token is in the log:\n{log}");
    }
}

/// What a person sees of a message's markdown: a backslash before
/// punctuation is an escape, not shown.
fn shown(content: &str) -> String {
    let mut out = String::with_capacity(content.len());
    let mut chars = content.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek().is_some_and(char::is_ascii_punctuation) {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// An ephemeral message with exactly this text, or a failure naming what came.
fn assert_ephemeral(reply: &Reply, text: &str) {
    match reply {
        Reply::Message { content, ephemeral, .. } | Reply::FollowUp { content, ephemeral, .. } => {
            assert_eq!(content, text, "{reply:?}");
            assert!(*ephemeral, "only the person sees it: {reply:?}");
        }
        other => panic!("expected an ephemeral {text:?}, got {other:?}"),
    }
}

fn message_id(event: &Value) -> u64 {
    event["id"].as_str().unwrap().parse().unwrap()
}

// ---------------------------------------------------------------------------
// Scenarios, each run in both modes.

/// Ask over HTTP → the components (exact JSON) in Alice's DM, whose id is
/// not hers → a click → the waiting agent gets the exact result, Alice sees
/// "Answer submitted" alone, the message is edited and its buttons go.
async fn a_click_answers_the_waiting_agent_and_edits_the_message(mode: Mode) {
    let mut dc = Discord::start(mode).await;
    let mut asked = dc.ask(&deploy("alice")).await;
    let prompt = dc.prompt_of(dc.dm.id, &asked.id).await;
    assert_eq!(dc.fake.dm_channel_id(ALICE), Some(dc.dm.id));
    let opened = dc.fake.calls_to("POST /users/@me/channels");
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(opened[0].body, json!({"recipient_id": ALICE.to_string()}));

    let sent = dc.fake.calls_to(CREATE_MESSAGE);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].path, format!("/channels/{}/messages", dc.dm.id));
    let body = &sent[0].body;
    let nonce = body["nonce"].as_str().unwrap();
    assert!(!nonce.is_empty() && nonce.chars().count() <= 25, "{body}");
    let content = "Question for you \\(reply within 15 min\\)\n\nDeploy — Where should this build go?\n\
                   • Staging \\(Recommended\\) — safe, resets nightly\n• Production";
    let button = |label: &str, action: &str, style: u8| json!({"type": 2, "style": style, "label": label, "custom_id": asked.token(action)});
    assert_eq!(
        *body,
        json!({
            "content": content,
            "components": [
                {"type": 1, "components": [button("Staging (Recommended)", "0", 1), button("Production", "1", 2)]},
                {"type": 1, "components": [button("Other…", "o", 2), button("Skip", "s", 2)]},
            ],
            "allowed_mentions": {"parse": []},
            "nonce": nonce,
            "enforce_nonce": true,
        })
    );
    assert!(prompt.pings.is_empty(), "nobody is pinged: {prompt:?}");

    let click = dc.fake.click(&alice(), &dc.dm, prompt.id, &asked.token("1")).await;
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    assert_ephemeral(&dc.notice(&click).await, "Answer submitted");
    let edited = dc
        .edited_into(dc.dm.id, prompt.id, "Answered by Alice: Production")
        .await;
    assert!(edited.rows.is_empty(), "the buttons are gone: {edited:?}");
    assert!(
        edited.content.contains("Where should this build go?"),
        "the question stays: {edited:?}"
    );
    let edits = dc.fake.calls_to(EDIT_MESSAGE);
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!(edits[0].body["components"], json!([]), "{edits:?}");
    assert_eq!(edits[0].path, format!("/channels/{}/messages/{}", dc.dm.id, prompt.id));
    dc.assert_no_secret_logged();
}

/// askgate is killed (`SIGKILL`) after it stored the answer and before the
/// edit reached Discord: after a restart the message is edited, and the
/// click was taken once.
async fn a_kill_between_the_click_and_the_edit_loses_nothing_and_answers_once(mode: Mode) {
    let mut dc = Discord::start(mode).await;
    let created = dc.server.create(&deploy("alice")).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let prompt = dc.prompt_of(dc.dm.id, &id).await;
    // The edit after the answer never reaches Discord, and askgate dies right then.
    // (Three times: askgate tries again after half a second, and the kill
    // must come before an edit gets through; after the restart the rest
    // fail too, and the edit is tried until it does.)
    for _ in 0..3 {
        dc.fake.fail_next(EDIT_MESSAGE, Failure::Disconnect);
    }
    let click = dc.fake.click(&alice(), &dc.dm, prompt.id, &format!("ag1:{id}:1")).await;
    dc.server.question_with_status(&id, "answered", PATIENCE).await;
    assert_ephemeral(&dc.notice(&click).await, "Answer submitted");
    dc.fake.wait_for_call(EDIT_MESSAGE, 1, PATIENCE).await.unwrap();
    dc.assert_no_secret_logged();
    dc.server.kill();
    assert!(
        !dc.fake.message_by_id(prompt.id).unwrap().edited,
        "the failed edit took no effect"
    );

    dc.server.restart();
    dc.route_interactions();
    let edited = dc
        .edited_into(dc.dm.id, prompt.id, "Answered by Alice: Production")
        .await;
    assert!(edited.rows.is_empty(), "the buttons are gone: {edited:?}");
    assert_eq!(dc.server.question(&id).await["result"], answered("Production"));
    // Discord never delivers an interaction again: one click, one answer.
    let submitted = dc
        .fake
        .interactions()
        .iter()
        .flat_map(|interaction| interaction.replies.clone())
        .filter(|reply| matches!(reply, Reply::Message { content, .. } if content == "Answer submitted"))
        .count();
    assert_eq!(submitted, 1);
    dc.assert_no_secret_logged();
}

/// A recipient in a thread (`channel_id` + `thread_id`): the question is
/// posted into the thread (a channel of its own, `OPS` its parent), a
/// stranger's click there is refused where only they see it and changes
/// nothing, and Alice's click from the thread answers the waiting agent and
/// edits the message there.
async fn a_thread_recipient_is_asked_in_its_thread_and_answered_from_it(mode: Mode) {
    let dc = Discord::start(mode).await;
    let mut asked = dc.ask(&deploy("thread")).await;
    let prompt = dc.prompt_of(THREAD, &asked.id).await;
    let sent = dc.fake.calls_to(CREATE_MESSAGE);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].path, format!("/channels/{THREAD}/messages"));
    assert_eq!(sent[0].body["allowed_mentions"], json!({"parse": []}));
    assert!(dc.fake.messages(OPS).is_empty(), "nothing in the parent channel");

    let stranger = dc.fake.click(&bob(), &thread(), prompt.id, &asked.token("1")).await;
    // As Discord tells of a click in a thread: the thread's id, its parent in `channel`.
    assert_eq!(stranger.payload["channel_id"], json!(THREAD.to_string()));
    assert_eq!(stranger.payload["channel"]["type"], json!(11));
    assert_eq!(stranger.payload["channel"]["parent_id"], json!(OPS.to_string()));
    assert_ephemeral(&dc.notice(&stranger).await, "This question is for Release thread");
    assert_eq!(dc.status(&asked.id).await, json!("pending"));
    assert!(dc.fake.calls_to(EDIT_MESSAGE).is_empty());
    assert!(!dc.fake.message_by_id(prompt.id).unwrap().edited);

    let click = dc.fake.click(&alice(), &thread(), prompt.id, &asked.token("1")).await;
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    assert_ephemeral(&dc.notice(&click).await, "Answer submitted");
    let edited = dc.edited_into(THREAD, prompt.id, "Answered by Alice: Production").await;
    assert!(edited.rows.is_empty(), "the buttons are gone: {edited:?}");
    let edits = dc.fake.calls_to(EDIT_MESSAGE);
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!(edits[0].path, format!("/channels/{THREAD}/messages/{}", prompt.id));
}

/// A prompt of two questions in a thread: answered there by two typed
/// replies to it (gateway), or through Answer…'s modal opened from the
/// thread (endpoint).
async fn a_two_question_prompt_in_a_thread_is_answered_there(mode: Mode) {
    let dc = Discord::start(mode).await;
    let mut asked = dc.ask(&two_questions("thread")).await;
    let prompt = dc
        .fake
        .wait_for_message(THREAD, PATIENCE, |message| {
            message.content.contains("Where should this build go?")
        })
        .await
        .unwrap();
    match mode {
        Mode::Gateway => {
            let first = dc.fake.message(&alice(), &thread(), "1: canary", Some(prompt.id));
            assert_eq!(first["channel_id"], json!(THREAD.to_string()), "{first}");
            let confirmed = dc.reply_to(THREAD, message_id(&first)).await;
            assert_eq!(confirmed.content, "Got Deploy. Still needed: Notify", "{confirmed:?}");
            assert!(confirmed.pings.is_empty(), "{confirmed:?}");
            assert_eq!(dc.status(&asked.id).await, json!("pending"));
            dc.fake
                .message(&alice(), &thread(), "2: team channel, 2", Some(prompt.id));
        }
        Mode::Interactions => {
            dc.answer_two_by_modal(&thread(), &prompt).await;
        }
    }
    assert_eq!(
        asked.result(PATIENCE).await,
        json!({"status": "answered", "answers": {"answers": {
            "deploy": ["Canary"], "notify": ["Team channel", "On-call"]}}})
    );
    let edited = dc.edited_into(THREAD, prompt.id, "Deploy: Canary").await;
    assert!(edited.rows.is_empty(), "{edited:?}");
    assert!(dc.fake.messages(OPS).is_empty(), "nothing in the parent channel");
}

/// `@everyone`, `@here`, a user and a role, and markdown: in the agent's
/// question they are shown as typed and ping no one; typed by Alice in
/// Other…'s modal they are her answer, echoed as typed in the summary the
/// message is edited into, which pings no one either.
async fn mentions_in_agent_text_and_in_a_free_text_answer_ping_no_one(mode: Mode) {
    const SOMEONE: u64 = 123_456_789_012_345_678;
    const ROLE: u64 = 223_456_789_012_345_678;
    let text = format!("@everyone @here <@{SOMEONE}> <@&{ROLE}> **bold**");
    // Unescaped and without allowed_mentions, Discord would notify all of them.
    assert_eq!(
        FakeDiscord::mentioned_by(&text, None),
        [Ping::Everyone, Ping::Here, Ping::User(SOMEONE), Ping::Role(ROLE)]
    );
    let dc = Discord::start(mode).await;
    let mut request = deploy("ops");
    request["questions"][0]["question"] = json!(format!("Where should this build go? {text}"));
    let mut asked = dc.ask(&request).await;
    let prompt = dc.prompt_of(OPS, &asked.id).await;
    let sent = dc.fake.calls_to(CREATE_MESSAGE);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].body["allowed_mentions"], json!({"parse": []}));
    assert!(prompt.pings.is_empty(), "nobody is notified: {prompt:?}");
    assert!(
        FakeDiscord::mentioned_by(&prompt.content, None).is_empty(),
        "escaped: {prompt:?}"
    );
    assert!(
        shown(&prompt.content).contains(&format!("Where should this build go? {text}")),
        "shown as typed: {prompt:?}"
    );

    let click = dc.fake.click(&alice(), &ops(), prompt.id, &asked.token("o")).await;
    let Reply::Modal(modal) = dc.reply(&click, 1).await else {
        panic!("Other… opens a modal: {:?}", dc.fake.interaction(click.id));
    };
    let field = modal.fields[0].custom_id.clone();
    let submit = dc
        .fake
        .submit_modal(&alice(), &ops(), &modal.custom_id, &[(&field, &text)])
        .await;
    assert_eq!(asked.result(PATIENCE).await, answered(&text));
    assert_ephemeral(&dc.notice(&submit).await, "Answer submitted");
    let edited = dc
        .edited_into(OPS, prompt.id, &format!("Answered by Alice: {text}"))
        .await;
    let edits = dc.fake.calls_to(EDIT_MESSAGE);
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!(edits[0].body["allowed_mentions"], json!({"parse": []}), "{edits:?}");
    let content = edits[0].body["content"].as_str().unwrap();
    assert!(
        FakeDiscord::mentioned_by(content, Some(&edits[0].body["allowed_mentions"])).is_empty(),
        "{content}"
    );
    assert!(
        FakeDiscord::mentioned_by(content, None).is_empty(),
        "escaped: {content}"
    );
    assert!(
        content.contains(r"\@everyone \@here \<\@") && content.contains(r"\*\*bold\*\*"),
        "the markdown is escaped: {content}"
    );
    // What Discord made of the edit: it mentions no one.
    assert_eq!(edited.json["mention_everyone"], json!(false), "{edited:?}");
    assert_eq!(edited.json["mentions"], json!([]), "{edited:?}");
    assert_eq!(edited.json["mention_roles"], json!([]), "{edited:?}");
}

in_modes!(
    [
    a_click_answers_the_waiting_agent_and_edits_the_message,
    a_kill_between_the_click_and_the_edit_loses_nothing_and_answers_once,
    a_thread_recipient_is_asked_in_its_thread_and_answered_from_it,
    a_two_question_prompt_in_a_thread_is_answered_there,
    mentions_in_agent_text_and_in_a_free_text_answer_ping_no_one,
    ]
    gateway => Gateway, interactions => Interactions
);

// ---------------------------------------------------------------------------
// One mode only.

/// A request to the interactions endpoint with a forged or missing
/// signature gets 401 and changes nothing; the genuine click then answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_forged_signature_gets_401_and_changes_nothing() {
    let fake = FakeDiscord::start().await;
    fake.add_user(&alice());
    let dm = fake.dm_channel(&alice());
    let server = Server::start_with(
        &server_keys(Mode::Interactions),
        &discord_config(&fake, Mode::Interactions, fake.token()),
    );
    let created = server.create(&deploy("alice")).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let prompt = fake
        .wait_for_message(dm.id, PATIENCE, |message| !message.rows.is_empty())
        .await
        .unwrap();
    // Not routed yet: the click waits in the fake (there is no gateway
    // session) while forgeries of it are tried.
    let click = fake.click(&alice(), &dm, prompt.id, &format!("ag1:{id}:1")).await;
    let endpoint = server.url("/discord/dc");
    for signature in [Signature::Forged, Signature::Missing] {
        let answer = fake.post_interaction(&endpoint, &click.payload, signature).await;
        assert_eq!(answer.status, Some(401), "{signature:?}: {answer:?}");
    }
    let mut tampered = click.payload.clone();
    tampered["data"]["custom_id"] = json!(format!("ag1:{id}:0"));
    // A valid signature of another body does not carry over.
    let headers = fake.signature_headers(click.payload.to_string().as_bytes(), Signature::Valid);
    let mut request = server
        .http()
        .post(&endpoint)
        .header("content-type", "application/json")
        .body(tampered.to_string());
    for (name, value) in headers {
        request = request.header(name, value);
    }
    assert_eq!(request.send().await.unwrap().status().as_u16(), 401);
    assert_eq!(server.question(&id).await["status"], json!("pending"));
    assert!(fake.calls_to(EDIT_MESSAGE).is_empty());
    assert!(!fake.message_by_id(prompt.id).unwrap().edited);

    // Discord's own PING is answered, and the genuine click counts.
    fake.deliver_interactions_to(&endpoint);
    let pong = fake.ping().await;
    assert_eq!(pong.replies, vec![Reply::Pong], "{pong:?}");
    let genuine = fake.click(&alice(), &dm, prompt.id, &format!("ag1:{id}:1")).await;
    assert_ephemeral(&genuine.replies[0], "Answer submitted");
    let resource = server.question_with_status(&id, "answered", PATIENCE).await;
    assert_eq!(resource["result"], answered("Production"));

    // The same interaction delivered again (a retry on Discord's side) is
    // acknowledged silently and changes nothing: answered once, edited once.
    let again = fake
        .post_interaction(&endpoint, &genuine.payload, Signature::Valid)
        .await;
    assert_eq!(again.status, Some(200), "{again:?}");
    assert_eq!(again.body, json!({"type": 6}), "{again:?}");
    let resolved_at = resource["resolvedAt"].clone();
    assert_eq!(server.question(&id).await["resolvedAt"], resolved_at);
    fake.wait_for_call(EDIT_MESSAGE, 1, PATIENCE).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fake.calls_to(EDIT_MESSAGE).len(), 1, "edited once");
}

/// The gateway connection drops while a question waits: serenity connects
/// again, and the click made meanwhile still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_gateway_drop_mid_question_still_delivers_the_answer() {
    let mut dc = Discord::start(Mode::Gateway).await;
    let mut asked = dc.ask(&deploy("alice")).await;
    let prompt = dc.prompt_of(dc.dm.id, &asked.id).await;
    dc.fake.wait_for_session(PATIENCE).await.unwrap();
    assert!(dc.fake.disconnect(Disconnect::Abrupt));
    let click = dc.fake.click(&alice(), &dc.dm, prompt.id, &asked.token("1")).await;
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    assert_ephemeral(&dc.notice(&click).await, "Answer submitted");
    dc.edited_into(dc.dm.id, prompt.id, "Answered by Alice: Production")
        .await;
    assert!(
        dc.fake.gateway_connections().len() >= 2,
        "{:?}",
        dc.fake.gateway_connections()
    );

    // A second drop, with a close code the client may resume after.
    let mut asked = dc.ask(&deploy("alice")).await;
    let prompt = dc.prompt_of(dc.dm.id, &asked.id).await;
    dc.fake.wait_for_session(PATIENCE).await.unwrap();
    assert!(dc.fake.disconnect(Disconnect::Close(4000)));
    dc.fake.click(&alice(), &dc.dm, prompt.id, &asked.token("0")).await;
    assert_eq!(asked.result(PATIENCE).await, answered("Staging (Recommended)"));
    dc.assert_no_secret_logged();
}

/// "@askgate start" where a recipient is configured (its thread, or its
/// channel) is no stranger's greeting: no recipient block. In a thread no
/// recipient names, it is: a thread is a channel of its own, which a
/// recipient of its parent channel never posts to, so whoever greets the bot
/// there wants to know how to address it, and is told the block that does
/// (the thread's id as `channel_id`, which is all a message there carries;
/// askgate posts to it as to any channel).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_greeting_in_a_configured_thread_is_not_told_to_configure_it() {
    let dc = Discord::start(Mode::Gateway).await;
    let other = dc.fake.add_thread(&ops(), OTHER_THREAD, "smalltalk");
    let greeting = format!("<@{BOT_ID}> start");
    let in_thread = dc.fake.message(&alice(), &thread(), &greeting, None);
    assert_eq!(in_thread["channel_id"], json!(THREAD.to_string()), "{in_thread}");
    dc.fake.message(&alice(), &ops(), &greeting, None);
    let elsewhere = dc.fake.message(&bob(), &other, &greeting, None);

    let block = dc.reply_to(OTHER_THREAD, message_id(&elsewhere)).await;
    let introduce = askgate_core::Locale::En.chrome().introduce();
    assert!(shown(&block.content).starts_with(introduce), "{block:?}");
    assert!(
        block
            .content
            .contains(&format!("channel_id = \"{OTHER_THREAD}\"\nanswerers = [\"{BOB}\"]")),
        "{block:?}"
    );
    // The greetings in the configured thread and channel were taken with
    // the other (each gateway event is handled at once, none waits for
    // another): a block for them would be out by now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for channel in [THREAD, OPS] {
        let said: Vec<SeenMessage> = dc
            .fake
            .messages(channel)
            .into_iter()
            .filter(|message| message.author_id == BOT_ID)
            .collect();
        assert!(said.is_empty(), "the bot said in {channel}: {said:?}");
    }
}

/// Discord refuses the DM ("Cannot send messages to this user"): the waiting
/// agent hears `delivery_failed` at once, and the resource says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_refused_dm_is_delivery_failed_at_once_with_the_reason() {
    let mut dc = Discord::start(Mode::Gateway).await;
    dc.fake.refuse_dms(ALICE);
    let started = Instant::now();
    let mut asked = dc.ask(&deploy("alice")).await;
    assert_eq!(asked.result(PATIENCE).await, json!({"status": "delivery_failed"}));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not waited out: {:?}",
        started.elapsed()
    );
    let resource = dc.server.question(&asked.id).await;
    assert_eq!(resource["status"], json!("delivery_failed"));
    let reason = resource["resolution"]["reason"].as_str().unwrap();
    assert!(reason.contains("Cannot send messages to this user"), "{reason}");
    assert!(!reason.contains(dc.fake.token()), "{reason}");
    dc.assert_no_secret_logged();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the command runs.
async fn a_wrong_bot_token_fails_check_config_and_leaves_the_channel_refused_without_showing_it() {
    let fake = FakeDiscord::start().await;
    let wrong = "MTIzNDU2Nzg5MDEyMzQ1Njc4OQ.GhWk3a.wrong-token-never-shown-0000000";
    for mode in [Mode::Gateway, Mode::Interactions] {
        for refused in check_config_and_serve(&server_keys(mode), &discord_config(&fake, mode, wrong)).await {
            refused.assert_refused();
            let Refused { command, printed, .. } = refused;
            assert!(
                printed.contains("channels.dc.token") && printed.contains("GET /users/@me"),
                "{mode:?} {command} names the channel: {printed}"
            );
            assert!(
                !printed.contains("wrong-token-never-shown"),
                "{mode:?} {command} shows the token: {printed}"
            );
        }
    }
}

/// 100 questions to one channel at once, while Discord answers some sends
/// with 429: every one is delivered exactly once (none lost, none doubled),
/// and no send goes out before the 429's delay has passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_burst_of_100_questions_to_one_channel_is_all_delivered_within_the_limits() {
    const BURST: usize = 100;
    // Discord's bucket is 5 messages a channel per 5 s; the fake's window is
    // 1 s so that the test takes seconds, not minutes. askgate paces from the
    // headers, whatever their values.
    const BUCKET: usize = 5;
    const WINDOW: Duration = Duration::from_secs(1);
    let dc = Discord::start(Mode::Gateway).await;
    dc.fake.limit_channel_messages(BUCKET, WINDOW);
    dc.fake
        .fail_next(CREATE_MESSAGE, Failure::RateLimited { retry_after: 1.0 });
    dc.fake
        .fail_next(CREATE_MESSAGE, Failure::RateLimited { retry_after: 0.5 });
    let started = Instant::now();
    let mut ids = Vec::with_capacity(BURST);
    for _ in 0..BURST {
        let created = dc.server.create(&deploy("ops")).await;
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    // 20 windows of the bucket, and the injected 429s' 1.5 s.
    let shown = eventually_within("every prompt shown", Duration::from_secs(60), || {
        let shown: Vec<SeenMessage> = dc
            .fake
            .messages(OPS)
            .into_iter()
            .filter(|m| !m.rows.is_empty())
            .collect();
        (shown.len() >= BURST).then_some(shown)
    })
    .await;
    let mut delivered: Vec<String> = shown
        .iter()
        .map(|message| {
            let custom = message.rows[0][0].custom_id.clone().unwrap();
            custom.split(':').nth(1).unwrap().to_owned()
        })
        .collect();
    delivered.sort();
    ids.sort();
    assert_eq!(delivered, ids, "each question delivered exactly once");
    // Both 429s were waited out (1 s and 0.5 s, one after the other in the
    // channel's line) before the sends they held up went again.
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    // Paced by the bucket's headers: no send beyond the two injected 429s
    // was refused, and no window held more than the bucket allows.
    assert_eq!(dc.fake.calls_to(CREATE_MESSAGE).len(), BURST + 2);
    let times = dc.fake.message_times(OPS);
    assert_eq!(times.len(), BURST);
    for (index, at) in times.iter().enumerate() {
        let in_window = times[index..].iter().take_while(|later| **later - *at < WINDOW).count();
        assert!(
            in_window <= BUCKET,
            "{in_window} messages within {WINDOW:?} from message {index}"
        );
    }
    // 100 messages at 5 a window take at least 19 windows.
    assert!(started.elapsed() >= WINDOW * 19, "{:?}", started.elapsed());
    for id in &ids {
        assert_eq!(dc.status(id).await, json!("pending"), "{id}");
    }
}
