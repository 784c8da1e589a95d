//! A lean, direct Redis connection for the two hot operations of
//! [`RedisNetworkList`](super::RedisNetworkList): the save transaction and
//! the `HGET` of a whole network.
//!
//! The `redis` crate's multiplexed connection copies every argument into
//! one packed command, grows a `BytesMut` while a big reply arrives and
//! hands each request to a driver task and back through channels; for a
//! 1 MB network that costs several times what Redis itself needs. This
//! connection does the least that RESP2 allows:
//!
//! - a [`Request`] keeps the headers and small arguments in one owned
//!   buffer and only *refers* to big arguments (the network JSON): the
//!   request goes out with vectored writes, the JSON is never copied;
//! - replies are read through one 64 KiB buffer; a bulk string is read
//!   into a `Vec` allocated once with its exact length: what is already
//!   buffered is copied, the rest is read from the socket straight into
//!   the `Vec`;
//! - the caller's own task writes the request and awaits the replies: no
//!   driver task, no channel.
//!
//! A [`Connection`] serves one exchange at a time. After an I/O error, a
//! malformed reply or a cancelled exchange its state is unknown: the caller
//! drops it (the pool in [`super::redis`] only takes back connections whose
//! last exchange completed). Errors are [`RedisError`]s, so the list's
//! connection-error handling applies unchanged: I/O failures (end of stream
//! included) are `IoError`s, error replies are `ResponseError`s and
//! malformed replies `ParseError`s.

use std::io::{self, IoSlice};

use ::redis::{ConnectionAddr, ConnectionInfo, ErrorKind, RedisError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::either::Either;

/// The size of a connection's read buffer.
const READ_BUFFER: usize = 64 * 1024;

/// Arguments at least this long are referenced by a [`Request`], shorter
/// ones are copied into its buffer.
const BORROW_MIN: usize = 1024;

/// The longest bulk string accepted (Redis's own `proto-max-bulk-len`).
const MAX_BULK: usize = 512 * 1024 * 1024;

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK`, `+QUEUED`...
    Status(String),
    /// An error reply (`-ERR ...`), kept as a value so that the replies
    /// after it are still read.
    Error(String),
    /// `:42`
    Int(i64),
    /// `$5\r\nhello`
    Bulk(Vec<u8>),
    /// `$-1` or `*-1`
    Nil,
    /// `*2\r\n...`
    Array(Vec<Reply>),
}

impl Reply {
    /// The message of the first error reply in this reply (nested arrays
    /// included).
    pub(crate) fn first_error(&self) -> Option<&str> {
        match self {
            Reply::Error(message) => Some(message),
            Reply::Array(items) => items.iter().find_map(Reply::first_error),
            _ => None,
        }
    }

    /// A short description for error messages (never the bytes of a bulk).
    pub(crate) fn describe(&self) -> String {
        match self {
            Reply::Status(s) => format!("status `{s}`"),
            Reply::Error(e) => format!("error `{e}`"),
            Reply::Int(i) => format!("integer {i}"),
            Reply::Bulk(b) => format!("bulk string of {} bytes", b.len()),
            Reply::Nil => "nil".to_string(),
            Reply::Array(items) => format!("array of {} items", items.len()),
        }
    }
}

/// An error reply from the server.
pub(crate) fn server_error(message: &str) -> RedisError {
    RedisError::from((
        ErrorKind::ResponseError,
        "An error was signalled by the server",
        message.to_string(),
    ))
}

/// A reply of a kind the operation did not expect.
pub(crate) fn unexpected(what: &str, reply: &Reply) -> RedisError {
    RedisError::from((
        ErrorKind::TypeError,
        "Unexpected reply from redis",
        format!("{what}: {}", reply.describe()),
    ))
}

fn protocol_error(detail: impl Into<String>) -> RedisError {
    RedisError::from((
        ErrorKind::ParseError,
        "Invalid RESP reply from redis",
        detail.into(),
    ))
}

fn end_of_stream() -> RedisError {
    RedisError::from(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "redis closed the connection",
    ))
}

/// A pipeline of commands, encoded as RESP arrays of bulk strings.
///
/// Headers and short arguments are copied into one buffer; arguments of
/// [`BORROW_MIN`] bytes or more passed to [`arg_ref`](Self::arg_ref) are
/// only referenced and go out with vectored writes.
///
/// Each command declares its argument count (name included) first:
///
/// ```text
/// req.command(4).arg("HSET").arg(key).arg(field).arg_ref(json);
/// ```
///
/// A command given more or fewer arguments than declared makes
/// [`Connection::send`] fail (a `ClientError`) instead of sending garbage.
#[derive(Debug, Default)]
pub(crate) struct Request<'a> {
    /// Everything except the referenced arguments.
    buf: Vec<u8>,
    /// Referenced arguments and where they go: `buf[..at]` precedes them.
    refs: Vec<(usize, &'a [u8])>,
    commands: usize,
    /// Arguments the current command still expects.
    missing: usize,
    /// An argument count was wrong.
    miscounted: bool,
}

impl<'a> Request<'a> {
    /// An empty request.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Starts a command of `argc` arguments, its name included.
    pub(crate) fn command(&mut self, argc: usize) -> &mut Self {
        self.miscounted |= self.missing != 0 || argc == 0;
        self.commands += 1;
        self.missing = argc;
        self.buf.push(b'*');
        self.push_line(itoa::Buffer::new().format(argc).as_bytes());
        self
    }

    /// Appends an argument, copied.
    pub(crate) fn arg(&mut self, bytes: impl AsRef<[u8]>) -> &mut Self {
        let bytes = bytes.as_ref();
        self.header(bytes.len());
        self.push_line(bytes);
        self
    }

    /// Appends an integer argument (in decimal).
    pub(crate) fn int(&mut self, n: i64) -> &mut Self {
        self.arg(itoa::Buffer::new().format(n))
    }

    /// Appends an argument that is referenced, not copied, when it is long.
    pub(crate) fn arg_ref(&mut self, bytes: &'a [u8]) -> &mut Self {
        if bytes.len() < BORROW_MIN {
            return self.arg(bytes);
        }
        self.header(bytes.len());
        self.refs.push((self.buf.len(), bytes));
        self.buf.extend_from_slice(b"\r\n");
        self
    }

    /// How many commands (so how many replies).
    pub(crate) fn commands(&self) -> usize {
        self.commands
    }

    fn header(&mut self, len: usize) {
        match self.missing.checked_sub(1) {
            Some(left) => self.missing = left,
            None => self.miscounted = true,
        }
        self.buf.push(b'$');
        self.push_line(itoa::Buffer::new().format(len).as_bytes());
    }

    /// Appends `bytes` and a CRLF.
    fn push_line(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        self.buf.extend_from_slice(b"\r\n");
    }

    fn well_formed(&self) -> bool {
        !self.miscounted && self.missing == 0
    }

    /// The request as slices, in order (empty ones left out).
    fn slices(&self) -> Vec<IoSlice<'_>> {
        let mut slices = Vec::with_capacity(2 * self.refs.len() + 1);
        let mut from = 0;
        for &(at, bytes) in &self.refs {
            if at > from {
                slices.push(IoSlice::new(&self.buf[from..at]));
            }
            slices.push(IoSlice::new(bytes));
            from = at;
        }
        if self.buf.len() > from {
            slices.push(IoSlice::new(&self.buf[from..]));
        }
        slices
    }

    /// The encoded bytes, copied into one buffer (for tests).
    #[cfg(test)]
    fn to_bytes(&self) -> Vec<u8> {
        self.slices()
            .iter()
            .flat_map(|s| s.iter().copied())
            .collect()
    }
}

/// Writes every slice, handling partial writes.
async fn write_all_vectored<W: AsyncWrite + Unpin>(
    writer: &mut W,
    mut slices: &mut [IoSlice<'_>],
) -> io::Result<()> {
    let mut left: usize = slices.iter().map(|s| s.len()).sum();
    while left > 0 {
        let n = writer.write_vectored(slices).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        if n > left {
            return Err(io::Error::other(
                "the writer reported more bytes than given",
            ));
        }
        left -= n;
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

/// The transport of a [`Connection`] to a server: TCP (`redis://host:port`)
/// or a Unix socket (`redis+unix:///path`, or `unix:///path`).
pub(crate) type Stream = Either<TcpStream, LocalStream>;

#[cfg(unix)]
type LocalStream = tokio::net::UnixStream;
/// Without Unix sockets, never built (only TCP addresses connect).
#[cfg(not(unix))]
type LocalStream = TcpStream;

/// One RESP2 connection: requests out, replies in, one exchange at a time.
#[derive(Debug)]
pub(crate) struct Connection<S = Stream> {
    stream: S,
    buf: Box<[u8]>,
    /// Unread bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
}

impl Connection<Stream> {
    /// Connects as `info` says: TCP (no Nagle delay) or a Unix socket,
    /// then `AUTH` when a password is set and `SELECT` when the database
    /// is not 0. Always RESP2: `HELLO` is never sent.
    pub(crate) async fn connect(info: &ConnectionInfo) -> Result<Self, RedisError> {
        let stream = match &info.addr {
            ConnectionAddr::Tcp(host, port) => {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let stream = TcpStream::connect((host, *port)).await?;
                stream.set_nodelay(true)?;
                Either::Left(stream)
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => Either::Right(LocalStream::connect(path).await?),
            other => {
                return Err(RedisError::from((
                    ErrorKind::InvalidClientConfig,
                    "Unsupported address for the session store's direct connection \
                     (use redis:// or redis+unix://)",
                    other.to_string(),
                )))
            }
        };
        let mut conn = Connection::new(stream);
        conn.handshake(info).await?;
        Ok(conn)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Connection<S> {
    /// A connection over `stream` (no handshake).
    pub(crate) fn new(stream: S) -> Self {
        Self {
            stream,
            buf: vec![0; READ_BUFFER].into_boxed_slice(),
            pos: 0,
            end: 0,
        }
    }

    /// `AUTH` and `SELECT`, as `info` asks.
    async fn handshake(&mut self, info: &ConnectionInfo) -> Result<(), RedisError> {
        let redis = &info.redis;
        let mut req = Request::new();
        let auth = redis.password.is_some();
        if let Some(password) = &redis.password {
            match &redis.username {
                Some(user) => req.command(3).arg("AUTH").arg(user).arg(password),
                None => req.command(2).arg("AUTH").arg(password),
            };
        }
        if redis.db != 0 {
            req.command(2).arg("SELECT").int(redis.db);
        }
        if req.commands() == 0 {
            return Ok(());
        }
        let replies = self.exchange(&req).await?;
        for (i, reply) in replies.iter().enumerate() {
            match reply {
                Reply::Error(message) if auth && i == 0 => {
                    return Err(RedisError::from((
                        ErrorKind::AuthenticationFailed,
                        "Password authentication failed",
                        message.clone(),
                    )))
                }
                Reply::Error(message) => return Err(server_error(message)),
                _ => {}
            }
        }
        Ok(())
    }

    /// Sends the whole request (vectored writes; big arguments are not
    /// copied).
    pub(crate) async fn send(&mut self, req: &Request<'_>) -> Result<(), RedisError> {
        if !req.well_formed() {
            return Err(RedisError::from((
                ErrorKind::ClientError,
                "A request was built with a wrong argument count",
            )));
        }
        let mut slices = req.slices();
        write_all_vectored(&mut self.stream, &mut slices).await?;
        self.stream.flush().await?;
        Ok(())
    }

    /// Sends the request and reads one reply per command. Error replies
    /// are values ([`Reply::Error`]); a `RedisError` means the connection
    /// is out of sync and must be dropped.
    pub(crate) async fn exchange(&mut self, req: &Request<'_>) -> Result<Vec<Reply>, RedisError> {
        self.send(req).await?;
        let mut replies = Vec::with_capacity(req.commands());
        for _ in 0..req.commands() {
            replies.push(self.read_reply().await?);
        }
        Ok(replies)
    }

    /// Reads one complete reply.
    pub(crate) async fn read_reply(&mut self) -> Result<Reply, RedisError> {
        // Arrays being filled: their items so far and their length.
        let mut open: Vec<(Vec<Reply>, usize)> = Vec::new();
        loop {
            let mut reply = match self.read_head().await? {
                Head::Value(reply) => reply,
                Head::Array(0) => Reply::Array(Vec::new()),
                Head::Array(len) => {
                    open.push((Vec::with_capacity(len.min(1024)), len));
                    continue;
                }
            };
            // Close every array this reply completes.
            loop {
                let Some((items, len)) = open.last_mut() else {
                    return Ok(reply);
                };
                items.push(reply);
                if items.len() < *len {
                    break;
                }
                let Some((items, _)) = open.pop() else {
                    return Err(protocol_error("array bookkeeping"));
                };
                reply = Reply::Array(items);
            }
        }
    }

    /// One value, or the header of an array.
    async fn read_head(&mut self) -> Result<Head, RedisError> {
        let (start, end) = self.read_line().await?;
        let line = &self.buf[start..end];
        let (kind, rest) = match line.split_first() {
            Some((&kind, rest)) => (kind, rest),
            None => return Err(protocol_error("empty line")),
        };
        match kind {
            b'+' => Ok(Head::Value(Reply::Status(
                String::from_utf8_lossy(rest).into_owned(),
            ))),
            b'-' => Ok(Head::Value(Reply::Error(
                String::from_utf8_lossy(rest).into_owned(),
            ))),
            b':' => Ok(Head::Value(Reply::Int(parse_int(rest)?))),
            b'$' => match parse_int(rest)? {
                -1 => Ok(Head::Value(Reply::Nil)),
                len => match usize::try_from(len) {
                    Ok(len) if len <= MAX_BULK => {
                        Ok(Head::Value(Reply::Bulk(self.read_bulk(len).await?)))
                    }
                    _ => Err(protocol_error(format!("bulk string length {len}"))),
                },
            },
            b'*' => match parse_int(rest)? {
                -1 => Ok(Head::Value(Reply::Nil)),
                len => usize::try_from(len)
                    .map(Head::Array)
                    .map_err(|_| protocol_error(format!("array length {len}"))),
            },
            other => Err(protocol_error(format!(
                "unknown reply type byte 0x{other:02x}"
            ))),
        }
    }

    /// The next line: its bounds in `buf` (without the CRLF), consumed.
    async fn read_line(&mut self) -> Result<(usize, usize), RedisError> {
        let mut scanned = self.pos;
        loop {
            if let Some(i) = self.buf[scanned..self.end].iter().position(|&b| b == b'\n') {
                let newline = scanned + i;
                if newline == self.pos || self.buf[newline - 1] != b'\r' {
                    return Err(protocol_error("a line not ended by CRLF"));
                }
                let start = self.pos;
                self.pos = newline + 1;
                return Ok((start, newline - 1));
            }
            scanned = self.end - self.pos;
            self.compact();
            if self.end == self.buf.len() {
                return Err(protocol_error("a line longer than the read buffer"));
            }
            self.fill().await?;
        }
    }

    /// A bulk string's `len` bytes and its CRLF.
    async fn read_bulk(&mut self, len: usize) -> Result<Vec<u8>, RedisError> {
        let mut data = Vec::with_capacity(len);
        let buffered = (self.end - self.pos).min(len);
        data.extend_from_slice(&self.buf[self.pos..self.pos + buffered]);
        self.pos += buffered;
        if data.len() < len {
            // The rest goes from the socket straight into `data`: it has
            // exactly the room left, and `take` stops at the string's end.
            let mut rest = (&mut self.stream).take((len - data.len()) as u64);
            while data.len() < len {
                if rest.read_buf(&mut data).await? == 0 {
                    return Err(end_of_stream());
                }
            }
        }
        while self.end - self.pos < 2 {
            self.compact();
            self.fill().await?;
        }
        if &self.buf[self.pos..self.pos + 2] != b"\r\n" {
            return Err(protocol_error("a bulk string not ended by CRLF"));
        }
        self.pos += 2;
        Ok(data)
    }

    /// Moves the unread bytes to the front of the buffer.
    fn compact(&mut self) {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
    }

    /// Reads more bytes after `end` (there must be room).
    async fn fill(&mut self) -> Result<(), RedisError> {
        let n = self.stream.read(&mut self.buf[self.end..]).await?;
        if n == 0 {
            return Err(end_of_stream());
        }
        self.end += n;
        Ok(())
    }
}

enum Head {
    Value(Reply),
    Array(usize),
}

/// A RESP integer: an optional `-`, then decimal digits.
fn parse_int(text: &[u8]) -> Result<i64, RedisError> {
    std::str::from_utf8(text)
        .ok()
        // `i64::from_str` also takes a leading `+`, which RESP never sends.
        .filter(|t| !t.starts_with('+'))
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| protocol_error(format!("bad integer `{}`", String::from_utf8_lossy(text))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::ReadBuf;

    /// Serves `data` in chunks of the given sizes (cycling), then EOF;
    /// swallows writes.
    struct Chunked {
        data: Vec<u8>,
        at: usize,
        sizes: Vec<usize>,
        next: usize,
    }

    impl Chunked {
        fn new(data: impl Into<Vec<u8>>, sizes: &[usize]) -> Connection<Chunked> {
            Connection::new(Chunked {
                data: data.into(),
                at: 0,
                sizes: sizes.to_vec(),
                next: 0,
            })
        }
    }

    impl AsyncRead for Chunked {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            let size = this.sizes[this.next % this.sizes.len()];
            this.next += 1;
            let n = size.min(buf.remaining()).min(this.data.len() - this.at);
            buf.put_slice(&this.data[this.at..this.at + n]);
            this.at += n;
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Chunked {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            b: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(b.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Accepts at most `max` bytes per write call (across slices), and
    /// counts the calls.
    #[derive(Default)]
    struct Trickle {
        out: Vec<u8>,
        max: usize,
        calls: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            b: &[u8],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            this.calls += 1;
            let n = b.len().min(this.max);
            this.out.extend_from_slice(&b[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            this.calls += 1;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(this.max - n);
                this.out.extend_from_slice(&b[..take]);
                n += take;
                if n == this.max {
                    break;
                }
            }
            Poll::Ready(Ok(n))
        }
        fn is_write_vectored(&self) -> bool {
            true
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    async fn parse_all(data: &[u8], sizes: &[usize], count: usize) -> Vec<Reply> {
        let mut conn = Chunked::new(data, sizes);
        let mut out = Vec::new();
        for _ in 0..count {
            out.push(conn.read_reply().await.expect("reply"));
        }
        out
    }

    fn bulk(s: &str) -> Reply {
        Reply::Bulk(s.as_bytes().to_vec())
    }

    const EVERY_KIND: &[u8] = b"+OK\r\n-ERR wrong number of arguments\r\n:42\r\n:-7\r\n$5\r\nhello\r\n$0\r\n\r\n$-1\r\n*-1\r\n*0\r\n*3\r\n:1\r\n*2\r\n$1\r\na\r\n*1\r\n+QUEUED\r\n$-1\r\n$3\r\na\rb\r\n";

    fn every_kind() -> Vec<Reply> {
        vec![
            Reply::Status("OK".into()),
            Reply::Error("ERR wrong number of arguments".into()),
            Reply::Int(42),
            Reply::Int(-7),
            bulk("hello"),
            bulk(""),
            Reply::Nil,
            Reply::Nil,
            Reply::Array(vec![]),
            Reply::Array(vec![
                Reply::Int(1),
                Reply::Array(vec![
                    bulk("a"),
                    Reply::Array(vec![Reply::Status("QUEUED".into())]),
                ]),
                Reply::Nil,
            ]),
            bulk("a\rb"),
        ]
    }

    #[tokio::test]
    async fn parses_every_reply_kind() {
        let expected = every_kind();
        let got = parse_all(EVERY_KIND, &[usize::MAX], expected.len()).await;
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn parses_a_reply_delivered_one_byte_at_a_time() {
        let expected = every_kind();
        let got = parse_all(EVERY_KIND, &[1], expected.len()).await;
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn error_replies_are_found_in_nested_arrays() {
        let replies = parse_all(b"*2\r\n+OK\r\n*1\r\n-WRONGTYPE no\r\n", &[3, 5], 1).await;
        assert_eq!(replies[0].first_error(), Some("WRONGTYPE no"));
        assert_eq!(Reply::Int(1).first_error(), None);
        let e = server_error("ERR boom");
        assert_eq!(e.kind(), ErrorKind::ResponseError);
        assert!(e.to_string().contains("ERR boom"), "{e}");
    }

    #[tokio::test]
    async fn a_large_bulk_in_odd_chunks() {
        let payload: Vec<u8> = (0..3 * 1024 * 1024 + 17).map(|i| (i % 251) as u8).collect();
        let mut data = format!("${}\r\n", payload.len()).into_bytes();
        data.extend_from_slice(&payload);
        data.extend_from_slice(b"\r\n:5\r\n");
        for sizes in [
            &[7usize, 65_537, 3, 100_003][..],
            &[usize::MAX],
            &[65_536 * 3 + 1],
        ] {
            let got = parse_all(&data, sizes, 2).await;
            assert_eq!(got[1], Reply::Int(5));
            let Reply::Bulk(bytes) = &got[0] else {
                panic!("not a bulk: {}", got[0].describe());
            };
            assert_eq!(bytes.len(), payload.len());
            assert!(bytes == &payload, "payload differs");
            assert_eq!(bytes.capacity(), payload.len(), "allocated once, exactly");
        }
    }

    #[tokio::test]
    async fn a_bulk_inside_an_array_across_the_buffer_edge() {
        let big = vec![b'x'; READ_BUFFER - 3];
        let mut data = b"*2\r\n".to_vec();
        data.extend_from_slice(format!("${}\r\n", big.len()).as_bytes());
        data.extend_from_slice(&big);
        data.extend_from_slice(b"\r\n+OK\r\n");
        for sizes in [&[usize::MAX][..], &[READ_BUFFER - 1, 1], &[11, 4093]] {
            let got = parse_all(&data, sizes, 1).await;
            assert_eq!(
                got[0],
                Reply::Array(vec![Reply::Bulk(big.clone()), Reply::Status("OK".into())])
            );
        }
    }

    #[tokio::test]
    async fn malformed_replies_are_protocol_errors() {
        let cases: &[&[u8]] = &[
            b"?what\r\n",
            b":12a\r\n",
            b":\r\n",
            b":-\r\n",
            b":+5\r\n",
            b":99999999999999999999\r\n",
            b"$-2\r\n",
            b"$abc\r\n",
            b"*-5\r\n",
            b"$3\r\nabcd\r\n",
            b"+OK\n",
            b"\r\n",
            b"$999999999999\r\n",
        ];
        for case in cases {
            let mut conn = Chunked::new(*case, &[usize::MAX]);
            let e = conn.read_reply().await.expect_err("malformed");
            assert_eq!(
                e.kind(),
                ErrorKind::ParseError,
                "{}: {e}",
                String::from_utf8_lossy(case)
            );
        }
        // A line that never ends within the buffer.
        let mut long = b"+".to_vec();
        long.extend(std::iter::repeat_n(b'a', READ_BUFFER + 10));
        let e = Chunked::new(long, &[4096])
            .read_reply()
            .await
            .expect_err("long");
        assert_eq!(e.kind(), ErrorKind::ParseError, "{e}");
    }

    #[tokio::test]
    async fn truncated_replies_are_connection_errors() {
        let cases: &[&[u8]] = &[
            b"",
            b"+OK",
            b"+OK\r",
            b"$10\r\nhello",
            b"$5\r\nhello",
            b"$5\r\nhello\r",
            b"*3\r\n:1\r\n:2\r\n",
        ];
        for case in cases {
            for sizes in [&[usize::MAX][..], &[1]] {
                let mut conn = Chunked::new(*case, sizes);
                let e = conn.read_reply().await.expect_err("truncated");
                assert!(
                    e.is_io_error() && e.is_connection_dropped(),
                    "{}: {e}",
                    String::from_utf8_lossy(case)
                );
            }
        }
    }

    #[test]
    fn requests_encode_exactly() {
        let big = vec![b'j'; BORROW_MIN];
        let mut req = Request::new();
        req.command(2).arg("WATCH").arg("k");
        req.command(4)
            .arg("HSET")
            .arg("h")
            .arg_ref(b"f")
            .arg_ref(&big);
        req.command(3).arg(b"ZADD").int(-12).int(i64::MIN);
        req.command(1).arg("EXEC");
        assert_eq!(req.commands(), 4);
        assert!(req.well_formed());
        assert_eq!(req.refs.len(), 1, "only the long argument is referenced");
        let mut expected =
            b"*2\r\n$5\r\nWATCH\r\n$1\r\nk\r\n*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\nf\r\n$1024\r\n"
                .to_vec();
        expected.extend_from_slice(&big);
        expected.extend_from_slice(
            b"\r\n*3\r\n$4\r\nZADD\r\n$3\r\n-12\r\n$20\r\n-9223372036854775808\r\n*1\r\n$4\r\nEXEC\r\n",
        );
        assert_eq!(req.to_bytes(), expected);
    }

    #[tokio::test]
    async fn a_miscounted_request_is_refused() {
        let mut too_few = Request::new();
        too_few.command(3).arg("GET").arg("k");
        let mut too_many = Request::new();
        too_many.command(1).arg("GET").arg("k");
        let mut empty = Request::new();
        empty.command(0);
        for req in [too_few, too_many, empty] {
            let mut conn = Connection::new(Trickle {
                max: 100,
                ..Trickle::default()
            });
            let e = conn.send(&req).await.expect_err("miscounted");
            assert_eq!(e.kind(), ErrorKind::ClientError);
            assert!(conn.stream.out.is_empty(), "nothing sent");
        }
    }

    #[tokio::test]
    async fn partial_writes_send_everything_in_order() {
        let a = vec![b'a'; 5000];
        let b = vec![b'b'; 3000];
        let mut req = Request::new();
        req.command(3).arg("SET").arg("key").arg_ref(&a);
        req.command(3).arg("SET").arg("other").arg_ref(&b);
        req.command(1).arg("PING");
        let expected = req.to_bytes();
        assert_eq!(req.slices().len(), 5);
        for max in [1, 3, 7, 1000, 4999, 5000, 100_000] {
            let mut conn = Connection::new(Trickle {
                max,
                ..Trickle::default()
            });
            conn.send(&req).await.expect("send");
            assert_eq!(conn.stream.out, expected, "max {max}");
            assert!(
                conn.stream.calls >= expected.len().div_ceil(max),
                "max {max}"
            );
        }
    }

    #[tokio::test]
    async fn a_writer_that_accepts_nothing_fails() {
        let mut conn = Connection::new(Trickle::default());
        let mut req = Request::new();
        req.command(1).arg("PING");
        let e = conn.send(&req).await.expect_err("write zero");
        assert!(e.is_io_error(), "{e}");
    }

    #[tokio::test]
    async fn exchange_over_a_duplex_pipe() {
        let big = vec![b'z'; 200_000];
        let mut req = Request::new();
        req.command(3).arg("SET").arg("key").arg_ref(&big);
        req.command(1).arg("GET");
        let expected = req.to_bytes();
        let want = expected.len();
        let (client, mut server) = tokio::io::duplex(1024);
        let mut conn = Connection::new(client);
        let answer = big.clone();
        let peer = tokio::spawn(async move {
            // A small pipe: the client must write in many pieces.
            let mut got = vec![0u8; want];
            server.read_exact(&mut got).await.expect("read");
            let mut reply = b"+OK\r\n".to_vec();
            reply.extend_from_slice(format!("${}\r\n", answer.len()).as_bytes());
            reply.extend_from_slice(&answer);
            reply.extend_from_slice(b"\r\n");
            server.write_all(&reply).await.expect("write");
            got
        });
        let replies = conn.exchange(&req).await.expect("exchange");
        assert_eq!(
            replies,
            [Reply::Status("OK".into()), Reply::Bulk(big.clone())]
        );
        assert_eq!(peer.await.expect("peer"), expected);
    }

    #[test]
    fn integers_parse_strictly() {
        assert_eq!(parse_int(b"0").ok(), Some(0));
        assert_eq!(parse_int(b"-1").ok(), Some(-1));
        assert_eq!(parse_int(b"9223372036854775807").ok(), Some(i64::MAX));
        assert_eq!(parse_int(b"-9223372036854775808").ok(), Some(i64::MIN));
        for bad in [&b""[..], b"-", b"+1", b" 1", b"1 ", b"9223372036854775808"] {
            assert!(parse_int(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
