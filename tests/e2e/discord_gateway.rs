//! The real binary holding the fake Discord's gateway: what askgate does
//! when the application may not use the Message Content intent, and how it
//! comes back after the gateway drops (op 6 Resume, op 9 Invalid Session),
//! applying each dispatch once however often it arrives.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use askgate_testkit::discord::{
    Disconnect, DiscordChannel, DiscordUser, FakeDiscord, GatewayFrame, InteractionRecord, Reply, SeenMessage,
};
use serde_json::{Value, json};
use support::chat::{answered, check_config_and_serve, deploy, report_if_failing, two_questions};
use support::{ASKGATE, Server};

const ALICE: u64 = 411_111_111_111_111_111;
/// How long a step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(20);
/// The privileged intent askgate asks for to read typed replies.
const MESSAGE_CONTENT_INTENT: u64 = 1 << 15;

const CREATE_MESSAGE: &str = "POST /channels/{channel_id}/messages";
const EDIT_MESSAGE: &str = "PATCH /channels/{channel_id}/messages/{message_id}";
const CALLBACK: &str = "POST /interactions/{interaction_id}/{interaction_token}/callback";

/// What check-config and start-up say of a channel without the intent.
const WITHOUT_INTENT: &str = "discord channel \"dc\": bot @askgate, gateway, without typed replies: the Message \
                              Content intent is not enabled for this application, so text prompts carry Answer… and \
                              Skip; to take typed replies, enable Message Content Intent in the Developer Portal \
                              (your application → Bot → Privileged Gateway Intents)";

fn alice() -> DiscordUser {
    DiscordUser::new(ALICE, "alice").with_global_name("Alice")
}

/// The channel `dc` in gateway mode with `extra` keys, and Alice by DM.
fn discord_config(fake: &FakeDiscord, extra: &str) -> String {
    format!(
        "\n[channels.dc]\ntype = \"discord\"\ntoken = \"{token}\"\napi_url = \"{api}\"\nmode = \"gateway\"\n{extra}\n\
         [recipients.alice]\nchannel = \"dc\"\nuser_id = \"{ALICE}\"\ndisplay_name = \"Alice\"\n",
        token = fake.token(),
        api = fake.api_url(),
    )
}

/// The fake Discord and askgate holding its gateway.
struct Discord {
    fake: FakeDiscord,
    server: Server,
    /// Alice's DM channel.
    dm: DiscordChannel,
}

impl Drop for Discord {
    fn drop(&mut self) {
        let fake = &self.fake;
        report_if_failing(&mut self.server, || {
            vec![
                ("the fake's calls", format!("{:#?}", fake.calls())),
                ("the gateway's frames in", format!("{:#?}", fake.gateway_frames())),
                ("the gateway's frames out", format!("{:#?}", fake.gateway_sent())),
            ]
        });
    }
}

impl Discord {
    /// Starts askgate against `fake`, set up by the test, with `extra` channel keys.
    fn start(fake: FakeDiscord, extra: &str) -> Self {
        fake.add_user(&alice());
        let dm = fake.dm_channel(&alice());
        let server = Server::start_with("", &discord_config(&fake, extra));
        Self { fake, server, dm }
    }

    /// The first message in Alice's DM that satisfies `found`.
    async fn message(&self, what: &str, found: impl Fn(&SeenMessage) -> bool) -> SeenMessage {
        self.fake
            .wait_for_message(self.dm.id, PATIENCE, found)
            .await
            .unwrap_or_else(|error| panic!("{what}: {error}"))
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

    /// The message as the DM shows it once its content contains `summary`.
    async fn edited_into(&self, message: u64, summary: &str) -> SeenMessage {
        self.message(&format!("message {message} edited into {summary:?}"), |seen| {
            seen.id == message && seen.content.replace('\\', "").contains(summary)
        })
        .await
    }

    /// The `s` of the dispatch of `kind` whose data has this `id`.
    fn seq_of(&self, kind: &str, id: u64) -> u64 {
        dispatches(&self.fake.gateway_sent())
            .find(|frame| frame.json["t"] == json!(kind) && frame.json["d"]["id"] == json!(id.to_string()))
            .and_then(|frame| frame.json["s"].as_u64())
            .unwrap_or_else(|| panic!("no {kind} {id} was dispatched"))
    }

    /// The last `s` the gateway sent on `connection`.
    fn last_seq_on(&self, connection: usize) -> u64 {
        dispatches(&self.fake.gateway_sent())
            .filter(|frame| frame.connection == connection)
            .filter_map(|frame| frame.json["s"].as_u64())
            .max()
            .unwrap()
    }

    /// The connection that carries the live session now.
    async fn live_connection(&self) -> usize {
        self.fake.wait_for_session(PATIENCE).await.unwrap();
        let open: Vec<usize> = self
            .fake
            .gateway_connections()
            .iter()
            .filter(|connection| !connection.closed)
            .map(|connection| connection.id)
            .collect();
        assert_eq!(open.len(), 1, "{open:?}");
        open[0]
    }

    /// Makes askgate heartbeat and waits until its heartbeat names `seq`:
    /// then it has taken every dispatch up to `seq`.
    async fn heartbeat_at(&self, seq: u64) {
        assert!(self.fake.request_heartbeat());
        let fake = self.fake.clone();
        support::chat::eventually_within(&format!("a heartbeat with seq {seq}"), PATIENCE, move || {
            fake.gateway_frames()
                .iter()
                .any(|frame| frame.op == Some(1) && frame.json["d"] == json!(seq))
                .then_some(())
        })
        .await;
    }
}

/// The dispatches (op 0) among `frames`.
fn dispatches(frames: &[GatewayFrame]) -> impl Iterator<Item = &GatewayFrame> {
    frames.iter().filter(|frame| frame.op == Some(0))
}

/// What the fake sent on the resumed `connection`: every dispatch from
/// `again[0]` on (the click and the typed reply, `again`, among them),
/// what came while askgate was away (after `last`), then RESUMED.
fn assert_replayed(sent: &[GatewayFrame], connection: usize, again: [u64; 2], last: u64) {
    let replayed: Vec<Value> = dispatches(sent)
        .filter(|frame| frame.connection == connection)
        .map(|frame| frame.json.clone())
        .collect();
    for (kind, seq) in [("INTERACTION_CREATE", again[0]), ("MESSAGE_CREATE", again[1])] {
        assert!(
            replayed
                .iter()
                .any(|frame| frame["t"] == json!(kind) && frame["s"] == json!(seq)),
            "{kind} {seq} replayed: {replayed:?}"
        );
    }
    let end = replayed
        .iter()
        .position(|frame| frame["t"] == json!("RESUMED"))
        .unwrap_or_else(|| panic!("RESUMED: {replayed:?}"));
    let seqs: Vec<u64> = replayed[..=end]
        .iter()
        .map(|frame| frame["s"].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = (again[0]..).take(seqs.len()).collect();
    assert_eq!(seqs, expected, "nothing skipped: {replayed:?}");
    assert!(
        *seqs.last().unwrap() > last + 1,
        "what was sent while away came too: {seqs:?}"
    );
}

fn message_id(event: &Value) -> u64 {
    event["id"].as_str().unwrap().parse().unwrap()
}

/// `askgate check-config` on the configuration askgate runs with: its exit
/// and what it printed.
async fn check_config(server: &Server) -> (bool, String) {
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new(ASKGATE)
            .arg("check-config")
            .arg(server.config_path())
            .current_dir(server.data_dir())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("check-config finishes")
    .expect("askgate runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), printed)
}

// ---------------------------------------------------------------------------
// The Message Content intent.

/// An application that may not use the Message Content intent (neither of
/// its flags; the fake's gateway closes with 4014 if asked for it): askgate
/// says so at check-config and start-up, connects without the intent, and a
/// text prompt carries Answer… and Skip, whose modal answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn without_the_message_content_intent_a_text_prompt_carries_answer_and_skip() {
    let fake = FakeDiscord::start().await;
    fake.allow_privileged_intents(0);
    let mut dc = Discord::start(fake, "");
    let (succeeded, printed) = check_config(&dc.server).await;
    assert!(succeeded, "{printed}");
    assert!(printed.contains(WITHOUT_INTENT), "{printed}");

    let mut asked = dc.server.ask_waiting(&two_questions("alice")).await;
    let prompt = dc
        .message("the prompt", |message| message.content.starts_with("Questions for you"))
        .await;
    let sent = dc.fake.calls_to(CREATE_MESSAGE);
    assert_eq!(sent.len(), 1, "{sent:?}");
    let body = &sent[0].body;
    let button = |label: &str, action: &str, style: u8| json!({"type": 2, "style": style, "label": label, "custom_id": asked.token(action)});
    assert_eq!(
        body["components"],
        json!([{"type": 1, "components": [button("Answer…", "a", 1), button("Skip", "s", 2)]}]),
        "{body}"
    );
    assert_eq!(body["allowed_mentions"], json!({"parse": []}), "{body}");
    // Where typed replies never arrive, the prompt points at its buttons.
    let content = "Questions for you \\(reply within 15 min\\)\n\n\
                   1\\. Deploy — Where should this build go?\n   1\\) Staging \\(Recommended\\)\n   2\\) Production\n   \
                   3\\) Canary\n2\\. Notify \\(choose any\\) — Who should be told?\n   1\\) Team channel\n   \
                   2\\) On-call\n   3\\) Nobody\n\nTap Answer… to answer, or Skip to skip.";
    assert_eq!(body["content"], json!(content), "{body}");

    // Connected without the intent: one Identify, never closed with 4014.
    dc.fake.wait_for_session(PATIENCE).await.unwrap();
    let identifies = dc.fake.identifies();
    assert_eq!(identifies.len(), 1, "{identifies:?}");
    let intents = identifies[0]["intents"].as_u64().unwrap();
    assert_eq!(intents & MESSAGE_CONTENT_INTENT, 0, "intents {intents:#b}");

    let click = dc.fake.click(&alice(), &dc.dm, prompt.id, &asked.token("a")).await;
    let Reply::Modal(modal) = dc.reply(&click, 1).await else {
        panic!("Answer… opens a modal: {:?}", dc.fake.interaction(click.id));
    };
    let fields: Vec<&str> = modal.fields.iter().map(|field| field.custom_id.as_str()).collect();
    assert_eq!(fields, ["deploy", "notify"], "{modal:?}");
    let submit = dc
        .fake
        .submit_modal(
            &alice(),
            &dc.dm,
            &modal.custom_id,
            &[("deploy", "3"), ("notify", "team channel, 2")],
        )
        .await;
    assert_eq!(
        asked.result(PATIENCE).await,
        json!({"status": "answered", "answers": {"answers": {
            "deploy": ["Canary"], "notify": ["Team channel", "On-call"]}}})
    );
    let notice = match dc.reply(&submit, 1).await {
        Reply::DeferredUpdate | Reply::Deferred { .. } => dc.reply(&submit, 2).await,
        first => first,
    };
    assert!(
        matches!(&notice, Reply::Message { content, ephemeral: true, .. } | Reply::FollowUp { content, ephemeral: true, .. } if content == "Answer submitted"),
        "{notice:?}"
    );
    let edited = dc.edited_into(prompt.id, "Deploy: Canary").await;
    assert!(edited.rows.is_empty(), "{edited:?}");

    let log = dc.server.stderr();
    assert!(
        log.lines().any(|line| line.contains("WARN")
            && line.contains("the Message Content intent is not enabled for this Discord application")
            && line.contains("Privileged Gateway Intents")
            && line.contains("channel=dc")),
        "the warning names the channel: {log}"
    );
}

/// `message_content = true` for an application that may not use the intent
/// fails check-config and leaves the channel `refused` in a running askgate
/// (which serves on), naming the key, never the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the command runs.
async fn message_content_true_without_the_intent_fails_check_config_and_leaves_the_channel_refused() {
    let fake = FakeDiscord::start().await;
    fake.allow_privileged_intents(0);
    let secret = fake.token().rsplit('.').next().unwrap().to_owned();
    for refused in check_config_and_serve("", &discord_config(&fake, "message_content = true")).await {
        refused.assert_refused();
        let (command, printed) = (refused.command, refused.printed);
        assert!(
            printed.contains("channels.dc.message_content")
                && printed.contains("the Message Content intent is not enabled")
                && printed.contains("Privileged Gateway Intents"),
            "{command} names the key and the fix: {printed}"
        );
        assert!(!printed.contains(&secret), "{command} shows the token: {printed}");
    }
    assert!(fake.gateway_connections().is_empty(), "no gateway connection was tried");
}

// ---------------------------------------------------------------------------
// Resuming.

/// The gateway closes with a code a session may resume after: askgate
/// resumes (op 6 with its session and the last `s` it took, no new
/// Identify); the fake replays from before that `s`, so a click and a typed
/// reply askgate had applied arrive again, and what was sent while it was
/// away arrives once. Every answer is applied once: one result, one edit a
/// message, one confirmation, one answer to the click.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_resume_applies_replayed_dispatches_once_and_delivers_what_was_missed() {
    let dc = Discord::start(FakeDiscord::start().await, "");
    let session = dc.fake.wait_for_session(PATIENCE).await.unwrap();
    let old = dc.live_connection().await;

    // A click, applied.
    let mut first = dc.server.ask_waiting(&deploy("alice")).await;
    let buttons = dc.message("the buttons", |message| !message.rows.is_empty()).await;
    let click = dc.fake.click(&alice(), &dc.dm, buttons.id, &first.token("1")).await;
    assert_eq!(first.result(PATIENCE).await, answered("Production"));
    dc.edited_into(buttons.id, "Answered by Alice: Production").await;
    let resolved_at = dc.server.question(&first.id).await["resolvedAt"].clone();

    // A typed reply, applied and confirmed.
    let mut second = dc.server.ask_waiting(&two_questions("alice")).await;
    let text = dc
        .message("the text prompt", |message| {
            message.content.starts_with("Questions for you")
        })
        .await;
    let typed = dc.fake.message(&alice(), &dc.dm, "1: canary", None);
    let confirmed = dc
        .message("the confirmation", |seen| seen.reply_to == Some(message_id(&typed)))
        .await;
    assert_eq!(confirmed.content, "Got Deploy. Still needed: Notify", "{confirmed:?}");

    // askgate has taken everything sent so far; the connection closes.
    let last = dc.last_seq_on(old);
    dc.heartbeat_at(last).await;
    let click_seq = dc.seq_of("INTERACTION_CREATE", click.id);
    let typed_seq = dc.seq_of("MESSAGE_CREATE", message_id(&typed));
    assert!(
        click_seq < typed_seq && typed_seq <= last,
        "{click_seq} {typed_seq} {last}"
    );
    dc.fake.replay_on_next_resume_from(click_seq);
    assert!(dc.fake.disconnect(Disconnect::Close(4000)));
    // Sent while askgate is away: it comes with the resume.
    dc.fake.message(&alice(), &dc.dm, "2: team channel, 2", None);

    assert_eq!(
        second.result(PATIENCE).await,
        json!({"status": "answered", "answers": {"answers": {
            "deploy": ["Canary"], "notify": ["Team channel", "On-call"]}}})
    );
    dc.edited_into(text.id, "Deploy: Canary").await;

    // Resumed, not identified afresh: one Identify, one Resume with the
    // session and the last `s` askgate took.
    let resumes = dc.fake.wait_for_frames(6, 1, PATIENCE).await.unwrap();
    assert_eq!(resumes.len(), 1, "{resumes:?}");
    assert_eq!(resumes[0].json["d"]["session_id"], json!(session), "{resumes:?}");
    assert_eq!(resumes[0].json["d"]["seq"], json!(last), "{resumes:?}");
    assert_ne!(resumes[0].connection, old);
    assert_eq!(dc.fake.identifies().len(), 1, "{:?}", dc.fake.identifies());
    assert_replayed(
        &dc.fake.gateway_sent(),
        resumes[0].connection,
        [click_seq, typed_seq],
        last,
    );
    // The replayed click and typed reply had their chance to be applied again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let edits = dc.fake.calls_to(EDIT_MESSAGE);
    let edited = |id: u64| {
        edits
            .iter()
            .filter(|call| call.path.ends_with(&format!("/{id}")))
            .count()
    };
    assert_eq!(
        (edited(buttons.id), edited(text.id)),
        (1, 1),
        "one edit a message: {edits:?}"
    );
    let confirmations = dc
        .fake
        .messages(dc.dm.id)
        .into_iter()
        .filter(|seen| seen.reply_to == Some(message_id(&typed)))
        .count();
    assert_eq!(confirmations, 1, "the typed reply is confirmed once");
    let record = dc.fake.interaction(click.id).unwrap();
    assert_eq!(record.replies.len(), 1, "the click is answered once: {record:?}");
    let question = dc.server.question(&first.id).await;
    assert_eq!(question["resolvedAt"], resolved_at, "{question}");
    assert_eq!(question["result"], answered("Production"), "{question}");
    let click_callbacks: Vec<_> = dc
        .fake
        .calls_to(CALLBACK)
        .into_iter()
        .filter(|call| call.path.starts_with(&format!("/interactions/{}/", click.id)))
        .collect();
    assert_eq!(click_callbacks.len(), 1, "{click_callbacks:?}");
}

/// Discord invalidates the session (op 9, not resumable): askgate
/// identifies afresh (no Resume of the dead session) and still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn an_invalid_session_makes_askgate_identify_afresh_and_it_still_works() {
    let dc = Discord::start(FakeDiscord::start().await, "");
    let dead = dc.fake.wait_for_session(PATIENCE).await.unwrap();
    let mut asked = dc.server.ask_waiting(&deploy("alice")).await;
    let buttons = dc.message("the buttons", |message| !message.rows.is_empty()).await;

    assert!(dc.fake.invalidate_session(false));
    let identifies = dc.fake.wait_for_frames(2, 2, PATIENCE).await.unwrap();
    assert_eq!(identifies.len(), 2, "{identifies:?}");
    let fresh = dc.fake.wait_for_session(PATIENCE).await.unwrap();
    assert_ne!(fresh, dead, "a new session");
    let resumed_dead = dc
        .fake
        .gateway_frames()
        .into_iter()
        .filter(|frame| frame.op == Some(6))
        .collect::<Vec<_>>();
    assert!(
        resumed_dead.is_empty(),
        "the dead session is not resumed: {resumed_dead:?}"
    );

    let click = dc.fake.click(&alice(), &dc.dm, buttons.id, &asked.token("0")).await;
    assert_eq!(asked.result(PATIENCE).await, answered("Staging (Recommended)"));
    dc.edited_into(buttons.id, "Answered by Alice: Staging (Recommended)")
        .await;
    let reply = dc.reply(&click, 1).await;
    let notice = match reply {
        Reply::DeferredUpdate | Reply::Deferred { .. } => dc.reply(&click, 2).await,
        first => first,
    };
    assert!(
        matches!(&notice, Reply::Message { content, ephemeral: true, .. } | Reply::FollowUp { content, ephemeral: true, .. } if content == "Answer submitted"),
        "{notice:?}"
    );
    assert_eq!(dc.fake.calls_to(EDIT_MESSAGE).len(), 1);
}
