//! The one codec of the memd wire: preamble, frame header, bincode payload.
//!
//! A connection starts with an 8-byte preamble in each direction: the 4 bytes
//! `MEMD` and the sender's [`PROTOCOL_VERSION`] as a big-endian `u32`, so a
//! version mismatch is detected before any message is decoded. The client
//! speaks first (since version 11): the daemon reads a connection's first
//! bytes before it writes anything, because the same socket also serves
//! HTTP, whose first bytes are a request line. After that,
//! every message is a frame: a big-endian `u32` length, then that many bytes
//! of a bincode-encoded [`Frame`]. [`MAX_FRAME_LEN`] is enforced on every
//! frame, in both directions.
//!
//! This module is sans-IO: the daemon and the client read bytes from their
//! socket into one [`FrameBuffer`], which hands back the preamble and each
//! complete frame body, and call [`decode`] on it. Keeping bincode and the
//! framing behind these few items keeps a future format change to this file.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Frame, Request};

/// Version of the wire protocol. Bumped on any incompatible change of the
/// frame layout or of a message's fields.
pub const PROTOCOL_VERSION: u32 = 15;

/// The first four bytes of every connection, in both directions.
pub const MAGIC: [u8; 4] = *b"MEMD";

/// Length of the preamble: [`MAGIC`] plus a big-endian `u32` version.
pub const PREAMBLE_LEN: usize = 8;

/// Length of a frame header (a big-endian `u32` body length).
pub const HEADER_LEN: usize = 4;

/// Largest frame body accepted or produced, in bytes (8 MiB).
pub const MAX_FRAME_LEN: usize = 8 * 1024 * 1024;

/// The one bincode configuration of the protocol: variable-length integers,
/// little endian, and a decode limit equal to the frame cap, so a hostile
/// length field inside a frame cannot make the decoder allocate more than a
/// frame's worth of memory.
fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_FRAME_LEN>()
}

/// Everything that can go wrong turning bytes into messages and back.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The first bytes of the connection were not `MEMD`.
    #[error("not a memd peer: the connection did not start with the MEMD preamble")]
    BadMagic,
    /// The peer speaks another protocol version.
    #[error("protocol version mismatch: this side speaks {ours}, the peer speaks {theirs}")]
    VersionMismatch {
        /// Our [`PROTOCOL_VERSION`].
        ours: u32,
        /// The version in the peer's preamble.
        theirs: u32,
    },
    /// A frame header announced more than [`MAX_FRAME_LEN`] bytes.
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes")]
    TooLarge {
        /// The announced or encoded length.
        len: usize,
        /// [`MAX_FRAME_LEN`].
        max: usize,
    },
    /// A frame with an empty body.
    #[error("empty frame")]
    Empty,
    /// The body did not decode as a message of the expected kind: garbage,
    /// a truncated value, invalid UTF-8 in a string, or an unknown variant.
    #[error("malformed frame: {0}")]
    Malformed(String),
    /// A request of a kind this side does not know (a newer peer): its tag,
    /// read after the frame id, is past the last [`Request`] kind.
    #[error("unknown request kind (tag {index}; this side knows {known})")]
    UnknownKind {
        /// The tag found.
        index: u32,
        /// How many kinds this side knows.
        known: usize,
    },
    /// The body decoded but left bytes unread.
    #[error("malformed frame: {0} trailing bytes after the message")]
    Trailing(usize),
    /// A message could not be encoded.
    #[error("cannot encode message: {0}")]
    Encode(String),
}

/// The preamble this side sends first.
pub fn preamble() -> [u8; PREAMBLE_LEN] {
    let mut out = [0u8; PREAMBLE_LEN];
    out[..4].copy_from_slice(&MAGIC);
    out[4..].copy_from_slice(&PROTOCOL_VERSION.to_be_bytes());
    out
}

/// Reads the peer's preamble and returns its protocol version.
///
/// # Errors
/// [`CodecError::BadMagic`] when the bytes do not start with `MEMD`. A
/// different version is *not* an error here: call [`check_version`], so the
/// caller can still answer with its own preamble before closing.
pub fn parse_preamble(bytes: &[u8; PREAMBLE_LEN]) -> Result<u32, CodecError> {
    if bytes[..4] != MAGIC {
        return Err(CodecError::BadMagic);
    }
    Ok(u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]))
}

/// Checks that the peer's version is ours.
///
/// # Errors
/// [`CodecError::VersionMismatch`] naming both versions.
pub fn check_version(theirs: u32) -> Result<(), CodecError> {
    if theirs == PROTOCOL_VERSION {
        Ok(())
    } else {
        Err(CodecError::VersionMismatch {
            ours: PROTOCOL_VERSION,
            theirs,
        })
    }
}

/// Validates a frame header and returns the body length it announces.
///
/// # Errors
/// [`CodecError::TooLarge`] over [`MAX_FRAME_LEN`], [`CodecError::Empty`]
/// for a zero length.
pub fn frame_len(header: [u8; HEADER_LEN]) -> Result<usize, CodecError> {
    let len = u32::from_be_bytes(header) as usize;
    if len == 0 {
        return Err(CodecError::Empty);
    }
    if len > MAX_FRAME_LEN {
        return Err(CodecError::TooLarge {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    Ok(len)
}

/// Encodes a frame, header included, ready to be written.
///
/// # Errors
/// [`CodecError::TooLarge`] when the body would exceed [`MAX_FRAME_LEN`] (the
/// peer would refuse it), [`CodecError::Encode`] when serde fails.
pub fn encode<B: Serialize>(frame: &Frame<B>) -> Result<Vec<u8>, CodecError> {
    let mut out = vec![0u8; HEADER_LEN];
    bincode::serde::encode_into_std_write(frame, &mut out, config())
        .map_err(|e| CodecError::Encode(e.to_string()))?;
    let len = out.len() - HEADER_LEN;
    if len > MAX_FRAME_LEN {
        return Err(CodecError::TooLarge {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    let len = u32::try_from(len).map_err(|_| CodecError::TooLarge {
        len,
        max: MAX_FRAME_LEN,
    })?;
    out[..HEADER_LEN].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

/// Decodes a frame body (the bytes after the header).
///
/// # Errors
/// [`CodecError::Malformed`] for anything that is not exactly one message of
/// the expected kind, [`CodecError::Trailing`] when bytes are left over.
pub fn decode<B: DeserializeOwned>(body: &[u8]) -> Result<Frame<B>, CodecError> {
    if body.is_empty() {
        return Err(CodecError::Empty);
    }
    if body.len() > MAX_FRAME_LEN {
        return Err(CodecError::TooLarge {
            len: body.len(),
            max: MAX_FRAME_LEN,
        });
    }
    let (frame, used): (Frame<B>, usize) = bincode::serde::decode_from_slice(body, config())
        .map_err(|e| CodecError::Malformed(e.to_string()))?;
    if used != body.len() {
        return Err(CodecError::Trailing(body.len() - used));
    }
    Ok(frame)
}

/// Decodes a request frame. A body whose kind this side does not know is
/// [`CodecError::UnknownKind`] (decided by its tag, not by the wording of
/// the decoder's message); any other failure is as [`decode`] says.
///
/// # Errors
/// As [`decode`], and [`CodecError::UnknownKind`].
pub fn decode_request(body: &[u8]) -> Result<Frame<Request>, CodecError> {
    decode::<Request>(body).map_err(|e| match (e, peek_tag(body)) {
        (CodecError::Malformed(_), Some(index)) if index as usize >= Request::KINDS.len() => {
            CodecError::UnknownKind {
                index,
                known: Request::KINDS.len(),
            }
        }
        (e, _) => e,
    })
}

/// The enum tag after the frame id (the message's kind).
fn peek_tag(body: &[u8]) -> Option<u32> {
    bincode::serde::decode_from_slice::<(u64, u32), _>(body, config())
        .ok()
        .map(|((_, tag), _)| tag)
}

/// Reads only the frame id from a body whose message did not decode, so an
/// error reply can still name the request it answers. `None` when not even
/// the id is readable.
pub fn peek_id(body: &[u8]) -> Option<u64> {
    bincode::serde::decode_from_slice::<u64, _>(body, config())
        .ok()
        .map(|(id, _)| id)
}

/// Bytes read from a socket and not yet handed back as a frame.
///
/// The one frame loop of the protocol, shared by the daemon and the client.
/// It does no I/O: the caller reads into [`FrameBuffer::unfilled`] (with
/// tokio's `read_buf`, which either reads or does nothing, so a read
/// cancelled in a `select!` loses no byte), then asks for the preamble or
/// the next frame body. A frame that is only partly here stays buffered
/// until the rest arrives. Each header is checked against [`MAX_FRAME_LEN`]
/// as soon as its 4 bytes are in, before the body is waited for.
#[derive(Debug, Default)]
pub struct FrameBuffer {
    buf: Vec<u8>,
}

impl FrameBuffer {
    /// Bytes reserved ahead of a read when the size of what comes next is
    /// not known yet.
    pub const READ_CHUNK: usize = 16 * 1024;

    /// An empty buffer.
    pub fn new() -> FrameBuffer {
        FrameBuffer::default()
    }

    /// Whether no byte is waiting (between frames).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes waiting, complete frames or not.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// The buffer to read into: bytes appended to it are taken as received.
    /// Capacity is reserved first, for the rest of a frame whose header is
    /// in (so a large frame is one allocation), or a [`Self::READ_CHUNK`].
    pub fn unfilled(&mut self) -> &mut Vec<u8> {
        let wanted = match self.announced() {
            Some(Ok(len)) => (HEADER_LEN + len).saturating_sub(self.buf.len()),
            _ => Self::READ_CHUNK,
        };
        let spare = self.buf.capacity() - self.buf.len();
        if spare < wanted.max(Self::READ_CHUNK / 4) {
            self.buf.reserve(wanted.max(Self::READ_CHUNK / 4));
        }
        &mut self.buf
    }

    /// Appends received bytes (for callers that read into their own slice).
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The peer's preamble once its 8 bytes are in; `None` before.
    pub fn take_preamble(&mut self) -> Option<[u8; PREAMBLE_LEN]> {
        if self.buf.len() < PREAMBLE_LEN {
            return None;
        }
        let mut out = [0u8; PREAMBLE_LEN];
        out.copy_from_slice(&self.buf[..PREAMBLE_LEN]);
        self.buf.drain(..PREAMBLE_LEN);
        Some(out)
    }

    /// The body of the next frame once it is whole; `None` while bytes are
    /// missing.
    ///
    /// # Errors
    /// [`CodecError::TooLarge`] or [`CodecError::Empty`] for a bad header,
    /// as soon as it is in: the connection cannot be resynchronised and
    /// should be closed.
    pub fn next_body(&mut self) -> Result<Option<Vec<u8>>, CodecError> {
        let Some(len) = self.announced().transpose()? else {
            return Ok(None);
        };
        let end = HEADER_LEN + len;
        if self.buf.len() < end {
            return Ok(None);
        }
        let rest = self.buf.split_off(end);
        let mut body = std::mem::replace(&mut self.buf, rest);
        body.drain(..HEADER_LEN);
        Ok(Some(body))
    }

    /// The next frame, decoded, once it is whole; `None` while bytes are
    /// missing. A frame that does not decode is consumed all the same, so
    /// the next call reads the frame after it.
    ///
    /// # Errors
    /// As [`Self::next_body`], and as [`decode`].
    pub fn next_frame<B: DeserializeOwned>(&mut self) -> Result<Option<Frame<B>>, CodecError> {
        match self.next_body()? {
            Some(body) => decode(&body).map(Some),
            None => Ok(None),
        }
    }

    /// The length the buffered header announces, checked; `None` before
    /// the header is whole.
    fn announced(&self) -> Option<Result<usize, CodecError>> {
        let header: [u8; HEADER_LEN] = self.buf.get(..HEADER_LEN)?.try_into().ok()?;
        Some(frame_len(header))
    }
}
