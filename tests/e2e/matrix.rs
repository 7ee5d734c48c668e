//! The real binary with a Matrix channel, against a real Synapse
//! homeserver (`askgate_testkit::synapse`): people on devices of their own
//! (matrix-sdk clients) answer a poll in an encrypted direct room, type a
//! reply to a three-question prompt, and are refused where the question is
//! not theirs, in an encrypted room of three. Nothing is faked.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;
// The person the Matrix adapter's own suites drive: one client, written once.
#[path = "../../crates/askgate-matrix/tests/matrix/person.rs"]
#[allow(dead_code, reason = "the adapter's suites use all of it, this test some")]
mod person;

use std::time::Duration;

use askgate_testkit::synapse::{Account, Synapse};
use matrix_sdk::ruma::{OwnedRoomId, RoomId};
use person::{POLL_END, POLL_START, Person, related, reply_to};
use serde_json::{Value, json};
use support::Server;
use support::chat::{answered, deploy};

/// How long a step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// The poll of question `id`, as `person` received it: its room and event.
async fn poll_of(person: &Person, id: &str) -> (String, Value) {
    let token = format!("ag1:{id}:");
    person
        .wait_anywhere(PATIENCE, |event| {
            event["type"] == json!(POLL_START)
                && event["content"][POLL_START]["answers"]
                    .as_array()
                    .is_some_and(|answers| {
                        answers
                            .iter()
                            .all(|a| a["id"].as_str().is_some_and(|t| t.starts_with(&token)))
                    })
        })
        .await
        .unwrap_or_else(|| panic!("{} got no poll for question {id}", person.id()))
}

/// Everyone of the story: the bot's account, Alice and Bob, the team's room.
struct Cast {
    bot: Account,
    alice: Person,
    bob: Person,
    team: OwnedRoomId,
}

#[tokio::test]
async fn people_answer_in_matrix_through_the_real_service() {
    let synapse = Synapse::shared();
    let bot = synapse.register(&Synapse::unique_localpart("askgate"), false).await;
    let alice = Person::new(synapse, "alice", "Alice").await;
    let bob = Person::new(synapse, "bob", "Bob").await;
    // The release team's room, encrypted as Element makes private rooms.
    let team = alice
        .create_room("Release team", &[bot.user_id.as_str(), bob.id()], true, false)
        .await;
    bob.joined(&team).await;
    let config = format!(
        "\n[channels.mx]\ntype = \"matrix\"\nhomeserver = \"{hs}\"\nuser_id = \"{bot_id}\"\naccess_token = \"{token}\"\n\n\
         [recipients.alice]\nchannel = \"mx\"\nuser_id = \"{alice}\"\ndisplay_name = \"Alice\"\n\n\
         [recipients.team]\nchannel = \"mx\"\nroom_id = \"{team}\"\nanswerers = [\"{alice}\"]\ndisplay_name = \"Release team\"\n",
        hs = synapse.url(),
        bot_id = bot.user_id,
        token = bot.access_token,
        alice = alice.id(),
    );
    let cast = Cast { bot, alice, bob, team };
    let mut server = Server::start_with("", &config);
    let dm = a_vote_in_an_encrypted_direct_room_answers(&server, &cast).await;
    a_typed_reply_answers_three_questions(&server, &cast, &dm).await;
    a_stranger_is_refused_in_the_team_s_encrypted_room(&server, &cast).await;
    // Killed and started again: the same device, its keys and rooms kept in
    // the data directory, asks in the same encrypted direct room.
    server.kill();
    server.restart();
    let again = a_vote_in_an_encrypted_direct_room_answers(&server, &cast).await;
    assert_eq!(again, dm, "the direct room is reused after a restart");
    let kept = std::fs::read_dir(server.data_dir().join("channels/mx"))
        .unwrap()
        .count();
    assert!(kept > 0, "the channel keeps its state in its own folder");
}

/// A poll in the encrypted direct room askgate opens: Alice's vote is the
/// answer, and the poll is ended with the summary. The room.
async fn a_vote_in_an_encrypted_direct_room_answers(server: &Server, cast: &Cast) -> String {
    let alice = &cast.alice;
    let mut asked = server.ask_waiting(&deploy("alice")).await;
    let (dm, poll) = poll_of(alice, &asked.id).await;
    let poll_id = poll["event_id"].as_str().unwrap().to_owned();
    let dm_room = alice
        .client
        .get_room(<&RoomId>::try_from(dm.as_str()).unwrap())
        .unwrap();
    assert!(
        dm_room.latest_encryption_state().await.unwrap().is_encrypted(),
        "a direct room askgate opens is encrypted"
    );
    let answers: Vec<&str> = poll["content"][POLL_START]["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|answer| answer["org.matrix.msc1767.text"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["Staging (Recommended)", "Production", "Other…", "Skip"]);
    alice.vote(&dm, &poll_id, &asked.token("1")).await;
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    let end = alice
        .wait_for(&dm, PATIENCE, |event| {
            event["type"] == json!(POLL_END) && related(event, "m.reference").as_deref() == Some(poll_id.as_str())
        })
        .await
        .expect("the poll is ended");
    let summary = end["content"]["body"].as_str().unwrap();
    assert!(summary.contains("Answered by Alice: Production"), "{summary}");
    assert_eq!(end["content"]["m.mentions"], json!({}), "a summary mentions no one");
    dm
}

/// Three questions are numbered text; one typed reply answers them all, and
/// the prompt is edited into its summary.
async fn a_typed_reply_answers_three_questions(server: &Server, cast: &Cast, dm: &str) {
    let alice = &cast.alice;
    let three = json!({
        "to": "alice",
        "questions": [
            {"id": "deploy", "header": "Deploy", "question": "Where should this build go?",
             "options": [{"label": "Staging"}, {"label": "Production"}]},
            {"id": "notify", "header": "Notify", "question": "Who should be told?",
             "options": [{"label": "Team"}, {"label": "Nobody"}]},
            {"id": "when", "header": "When", "question": "When?",
             "options": [{"label": "Now"}, {"label": "Tonight"}]},
        ],
    });
    let mut asked = server.ask_waiting(&three).await;
    let (room, prompt) = alice
        .wait_anywhere(PATIENCE, |event| {
            event["type"] == json!("m.room.message")
                && event["content"]["body"]
                    .as_str()
                    .is_some_and(|body| body.contains("Who should be told?"))
        })
        .await
        .expect("the three questions arrive as text");
    assert_eq!(room, dm, "in the same direct room");
    let prompt_id = prompt["event_id"].as_str().unwrap().to_owned();
    alice
        .send(
            dm,
            "m.room.message",
            json!({"msgtype": "m.text", "body": "1: 2\n2: 1\n3: Tonight",
                   "m.relates_to": {"m.in_reply_to": {"event_id": prompt_id}}}),
        )
        .await;
    assert_eq!(
        asked.result(PATIENCE).await,
        json!({"status": "answered", "answers": {"answers": {
            "deploy": ["Production"], "notify": ["Team"], "when": ["Tonight"]}}})
    );
    let edit = alice
        .wait_for(dm, PATIENCE, |event| {
            related(event, "m.replace").as_deref() == Some(prompt_id.as_str())
        })
        .await
        .expect("the prompt is edited into its summary");
    let edited = edit["content"]["m.new_content"]["body"].as_str().unwrap();
    assert!(
        edited.contains("Who should be told?") && edited.contains("Answered by Alice"),
        "{edited}"
    );
}

/// In the team's encrypted room, Bob may not answer: he is told so without
/// his vote echoed, and nothing changes; Alice then answers.
async fn a_stranger_is_refused_in_the_team_s_encrypted_room(server: &Server, cast: &Cast) {
    let (alice, bob) = (&cast.alice, &cast.bob);
    let mut asked = server.ask_waiting(&deploy("team")).await;
    let (room, poll) = poll_of(bob, &asked.id).await;
    assert_eq!(room, cast.team.as_str());
    let poll_id = poll["event_id"].as_str().unwrap().to_owned();
    let bobs = bob.vote(&room, &poll_id, &asked.token("1")).await;
    let refusal = bob
        .wait_after(&room, &bobs, PATIENCE, |event| {
            event["sender"] == json!(cast.bot.user_id) && reply_to(event).as_deref() == Some(poll_id.as_str())
        })
        .await
        .expect("Bob is told");
    assert_eq!(refusal["content"]["msgtype"], json!("m.notice"));
    let told = refusal["content"]["body"].as_str().unwrap();
    assert!(
        told.contains("Release team"),
        "the refusal names whom it is for: {told}"
    );
    assert!(
        !told.contains("Production"),
        "the refusal does not echo the vote: {told}"
    );
    let question = server.question(&asked.id).await;
    assert_eq!(question["status"], json!("pending"), "Bob changed nothing: {question}");
    alice.vote(&room, &poll_id, &asked.token("0")).await;
    assert_eq!(asked.result(PATIENCE).await, answered("Staging (Recommended)"));
}
