//! The fake Discord, driven by the real client: serenity's `Http` against
//! the REST routes, serenity's `Client` against the gateway, serenity's
//! `Verifier` against the signed HTTP interactions, and serenity's model
//! types against the payload samples. Where serenity has no say (headers,
//! exact close codes), a plain reqwest or WebSocket client looks.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

use askgate_testkit::discord::{
    APPLICATION_ID, AckVia, BOT_ID, DISCORD_PAYLOADS, Delivery, Disconnect, DiscordChannel, DiscordUser, Failure,
    FakeDiscord, InteractionRecord, Modal, ModalField, Ping, Reply, Signature, TOKEN, discord_payload,
};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use serenity::all::{
    ActionRowComponent, ButtonKind, ButtonStyle, ChannelId, ChannelType, ClientBuilder, ComponentInteraction, Context,
    CreateActionRow, CreateAllowedMentions, CreateButton, CreateInputText, CreateInteractionResponse,
    CreateInteractionResponseFollowup, CreateInteractionResponseMessage, CreateMessage, CreateModal,
    EditInteractionResponse, EditMessage, EventHandler, GatewayIntents, GuildId, Http, HttpBuilder, InputTextStyle,
    Interaction, InteractionId, Message, MessageId, Ready, ResumedEvent, ShardManager,
};
use serenity::http::{ErrorResponse, HttpError, LightMethod, Request, Route};
use serenity::interactions_endpoint::Verifier;
use serenity::model::channel::Nonce;
use tokio::net::TcpListener;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message as WsMessage;

const WAIT: Duration = Duration::from_secs(10);
/// The `User-Agent` Discord requires, for requests sent without serenity.
const USER_AGENT: &str = "DiscordBot (https://example.invalid/askgate-testkit, 0.1.0)";
const GUILD: u64 = 700_000_000_000_000_001;
const GENERAL: u64 = 700_000_000_000_000_002;

fn alice() -> DiscordUser {
    DiscordUser::new(300_000_000_000_000_001, "alice").with_global_name("Alice")
}

fn general() -> DiscordChannel {
    DiscordChannel::guild(GENERAL, GUILD, "general")
}

/// serenity's `Http` on the fake, as askgate builds it.
fn http(fake: &FakeDiscord) -> Http {
    HttpBuilder::new(fake.token())
        .proxy(fake.api_url())
        .ratelimiter_disabled(true)
        .application_id(APPLICATION_ID.into())
        .build()
}

/// The Discord error inside a serenity error.
fn discord_error(error: serenity::Error) -> ErrorResponse {
    match error {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(response)) => response,
        other => panic!("not an error answer from Discord: {other:?}"),
    }
}

/// The status, JSON code and first error path (or else the message) of a refusal.
fn refusal<T: Debug>(result: serenity::Result<T>) -> (u16, isize, String) {
    let error = discord_error(result.unwrap_err());
    let detail = error
        .error
        .errors
        .first()
        .map_or_else(|| error.error.message.clone(), |e| e.path.clone());
    (error.status_code.as_u16(), error.error.code, detail)
}

fn id_of(object: &Value) -> u64 {
    object["id"].as_str().unwrap().parse().unwrap()
}

fn buttons(ids: &[&str]) -> CreateActionRow {
    let button = |id: &&str| {
        CreateButton::new(*id)
            .label(format!("label {id}"))
            .style(ButtonStyle::Primary)
    };
    CreateActionRow::Buttons(ids.iter().map(button).collect())
}

async fn post_question(fake: &FakeDiscord, channel: u64) -> Message {
    let builder = CreateMessage::new()
        .content("Deploy where?")
        .components(vec![buttons(&["ag:q1:0", "ag:q1:1"])]);
    ChannelId::new(channel)
        .send_message(&http(fake), builder)
        .await
        .unwrap()
}

async fn respond(http: &Http, to: &InteractionRecord, response: CreateInteractionResponse) -> serenity::Result<()> {
    let id = InteractionId::new(to.id);
    http.create_interaction_response(id, &to.token, &response, vec![]).await
}

fn ephemeral(content: &str) -> CreateInteractionResponse {
    CreateInteractionResponse::Message(CreateInteractionResponseMessage::new().content(content).ephemeral(true))
}

mod frames;
mod gateway;
mod interactions;
mod rest;
mod validation;
