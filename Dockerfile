# askgate's container image: `docker build -t askgate .` (BuildKit, the default
# builder of Docker 23+, or podman/buildah), then
#   docker run -d -p 8080:8080 -v askgate-data:/data --stop-timeout 15 askgate
# The image's configuration is deploy/askgate.container.toml (SQLite in /data,
# the web page, a generated agent token); mount another over
# /etc/askgate/askgate.toml for PostgreSQL or chat channels (deploy/compose.yaml).
#
# No `# syntax=` line: BuildKit's built-in frontend knows cache mounts, and a
# syntax line would make every build fetch a frontend image first.

# The toolchain the workspace declares (Cargo.toml: rust-version = "1.95").
ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
# The crates.io index and sources, and the target directory, live in BuildKit
# cache mounts: a rebuild after a source change compiles askgate's own crates
# only. The target directory is a cache, so the binary is copied out of it in
# the same step. --locked: the image builds what Cargo.lock says, or fails.
# cargo tells a workspace crate changed by its files' times, and COPY keeps
# the context's: a file edited before the cached target's last build would
# read as built already. Touching the workspace's sources rebuilds its own
# crates every time (the dependencies stay cached).
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    find crates tests config deploy -type f -exec touch {} + \
    && cargo build --release --locked -p askgate \
    && install -D -m 0755 target/release/askgate /out/askgate

FROM debian:bookworm-slim AS runtime
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="askgate" \
      org.opencontainers.image.description="Structured questions from AI agents to people, in the chat apps they already use" \
      org.opencontainers.image.source="https://example.invalid/askgate" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
# A fixed uid/gid, so that a volume's owner reads the same on every host.
RUN groupadd --gid 10001 askgate \
    && useradd --uid 10001 --gid 10001 --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin askgate \
    && mkdir -p /data /etc/askgate \
    && chown 10001:10001 /data \
    && chmod 0700 /data
# The root certificates for the chat platforms and PostgreSQL over TLS, taken
# from the build stage rather than installed with apt (no package index here).
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/askgate /usr/local/bin/askgate
COPY deploy/askgate.container.toml /etc/askgate/askgate.toml
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
# The container configuration's `listen` port.
EXPOSE 8080
# `askgate health` GETs /readyz (ASKGATE_URL, default http://127.0.0.1:8080)
# and exits 0 on 200: unready means the store does not take writes.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["askgate", "health"]
# askgate stops on SIGTERM within [server] shutdown_deadline_seconds (10 s):
# give `docker stop` more than that (--stop-timeout 15, compose's stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["askgate"]
CMD ["serve", "--config", "/etc/askgate/askgate.toml"]
