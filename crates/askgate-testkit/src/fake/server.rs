//! Serving a fake's router on `127.0.0.1:0`, with connections it can drop.
//!
//! axum's own `serve` cannot drop a connection: aborting its task leaves the
//! connections it spawned open, and a client in a long poll would wait on a
//! fake that is gone. So the listener wraps every accepted stream in one the
//! fake can kill, and keeps a list of them.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::extract::connect_info::Connected;
use axum::http::Extensions;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::lock;

/// A router served on a fresh port of `127.0.0.1`, owned by one fake.
/// Dropping it stops the server and drops every open connection.
#[derive(Debug)]
pub struct Loopback {
    addr: SocketAddr,
    task: JoinHandle<()>,
    conns: Arc<Mutex<Vec<Weak<Conn>>>>,
}

impl Loopback {
    /// Binds `127.0.0.1:0` and serves `app` there. A handler finds the
    /// connection of its request with [`Connection::of`].
    pub async fn serve(app: Router) -> io::Result<Self> {
        Self::serve_on(TcpListener::bind(("127.0.0.1", 0)).await?, app)
    }

    /// Serves `app` on `listener`: a fake that comes up on a port chosen
    /// before it (a platform that was down when askgate started).
    pub fn serve_on(listener: TcpListener, app: Router) -> io::Result<Self> {
        let addr = listener.local_addr()?;
        let conns: Arc<Mutex<Vec<Weak<Conn>>>> = Arc::default();
        let listener = TrackingListener {
            inner: listener,
            conns: Arc::clone(&conns),
        };
        let app = app.into_make_service_with_connect_info::<Connection>();
        let task = tokio::spawn(async move {
            // The server only ends when its task is aborted.
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, task, conns })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and drops every open connection, as dropping it does:
    /// for a fake that must stop its server before it winds down the rest.
    pub fn stop(&self) {
        self.task.abort();
        for conn in lock(&self.conns).drain(..) {
            if let Some(conn) = conn.upgrade() {
                conn.kill();
            }
        }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The connection a request came on (axum's `ConnectInfo` on a
/// [`Loopback`]), which the fake can drop.
#[derive(Debug, Clone)]
pub struct Connection(Arc<Conn>);

impl Connection {
    /// The connection of a request that a [`Loopback`] serves, from the
    /// request's extensions.
    pub fn of(extensions: &Extensions) -> Option<Self> {
        extensions
            .get::<ConnectInfo<Self>>()
            .map(|ConnectInfo(connection)| connection.clone())
    }

    /// Drops the connection: the client gets no answer, only the connection
    /// reset, and whatever the handler still answers is not sent.
    pub fn disconnect(&self) {
        self.0.kill();
    }
}

impl Connected<IncomingStream<'_, TrackingListener>> for Connection {
    fn connect_info(stream: IncomingStream<'_, TrackingListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// One accepted connection, and the task to wake when it is killed.
#[derive(Debug, Default)]
struct Conn {
    killed: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Conn {
    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        // hyper may be parked on a read that would never end; the woken read
        // sees end-of-file and hyper closes the connection.
        if let Some(waker) = lock(&self.waker).take() {
            waker.wake();
        }
    }

    fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    fn watch(&self, cx: &Context<'_>) {
        let mut waker = lock(&self.waker);
        if !waker.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
            *waker = Some(cx.waker().clone());
        }
    }
}

/// A TCP stream that reads end-of-file and fails writes once killed.
struct KillableStream {
    io: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for KillableStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.conn.is_killed() {
            return Poll::Ready(Ok(()));
        }
        this.conn.watch(cx);
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.conn.is_killed() {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.conn.is_killed() {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// A TCP listener that hands out killable streams and remembers them.
struct TrackingListener {
    inner: TcpListener,
    conns: Arc<Mutex<Vec<Weak<Conn>>>>,
}

impl Listener for TrackingListener {
    type Io = KillableStream;
    type Addr = Connection;

    async fn accept(&mut self) -> (KillableStream, Connection) {
        loop {
            match self.inner.accept().await {
                Ok((io, _)) => {
                    let _ = io.set_nodelay(true);
                    let conn = Arc::new(Conn::default());
                    {
                        let mut conns = lock(&self.conns);
                        conns.retain(|conn| conn.strong_count() > 0);
                        conns.push(Arc::downgrade(&conn));
                    }
                    let stream = KillableStream {
                        io,
                        conn: Arc::clone(&conn),
                    };
                    return (stream, Connection(conn));
                }
                // Out of file descriptors, most likely: wait for some to close
                // rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Connection> {
        self.inner.local_addr().map(|_| Connection(Arc::default()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::Router;
    use axum::extract::Request;
    use axum::routing::get;
    use tokio::sync::Notify;

    use super::{Connection, Loopback};

    const WAIT: Duration = Duration::from_secs(5);

    async fn get_text(url: &str) -> Result<String, reqwest::Error> {
        reqwest::Client::builder()
            .no_proxy()
            .build()?
            .get(url)
            .send()
            .await?
            .text()
            .await
    }

    #[tokio::test]
    async fn a_router_is_served_on_a_fresh_loopback_port() {
        let app = Router::new().route("/hello", get(|| async { "hi" }));
        let first = Loopback::serve(app.clone()).await.unwrap();
        let second = Loopback::serve(app).await.unwrap();

        assert!(first.addr().ip().is_loopback());
        assert_ne!(first.addr().port(), 0);
        assert_ne!(first.addr(), second.addr(), "each fake has a port of its own");
        for server in [&first, &second] {
            let text = get_text(&format!("http://{}/hello", server.addr())).await.unwrap();
            assert_eq!(text, "hi");
        }
    }

    #[tokio::test]
    async fn the_server_stops_when_dropped_and_drops_open_connections() {
        let entered = Arc::new(Notify::new());
        let app = Router::new().route("/hello", get(|| async { "hi" })).route(
            "/forever",
            get({
                let entered = Arc::clone(&entered);
                move || async move {
                    entered.notify_one();
                    std::future::pending::<&str>().await
                }
            }),
        );
        let server = Loopback::serve(app).await.unwrap();
        let base = format!("http://{}", server.addr());
        assert_eq!(get_text(&format!("{base}/hello")).await.unwrap(), "hi");

        let forever = format!("{base}/forever");
        let waiting = tokio::spawn(async move { get_text(&forever).await });
        tokio::time::timeout(WAIT, entered.notified()).await.unwrap();
        drop(server);

        // Aborting axum's task alone would leave this request waiting forever.
        let answer = tokio::time::timeout(WAIT, waiting).await.unwrap().unwrap();
        assert!(answer.is_err(), "the open connection is dropped: {answer:?}");
        assert!(
            get_text(&format!("{base}/hello")).await.is_err(),
            "nothing listens any more"
        );
    }

    #[tokio::test]
    async fn a_handler_can_drop_the_connection_of_its_request() {
        let app = Router::new().route("/hello", get(|| async { "hi" })).route(
            "/drop",
            get(|request: Request| async move {
                Connection::of(request.extensions())
                    .expect("a Loopback request knows its connection")
                    .disconnect();
                "never sent"
            }),
        );
        let server = Loopback::serve(app).await.unwrap();
        let base = format!("http://{}", server.addr());

        let dropped = get_text(&format!("{base}/drop")).await;
        assert!(dropped.is_err(), "no answer on a dropped connection: {dropped:?}");
        assert_eq!(
            get_text(&format!("{base}/hello")).await.unwrap(),
            "hi",
            "only that connection is gone"
        );
    }
}
