//! Wire types and the frame codec of the memd protocol.
//!
//! # Layout
//! - [`codec`]: preamble, frame header, [`MAX_FRAME_LEN`], the one bincode
//!   configuration — the only place that knows the byte format.
//! - [`messages`]: [`Request`], [`Response`] and the payload of each kind.
//! - [`cite`]: code citations in a memory's metadata and their verdicts.
//! - [`json`]: the JSON shapes of memories, hits and errors shared by the
//!   CLI, the shell and the backup files.
//!
//! This crate knows serde and bincode only: no tokio, no SQLite.

pub mod cite;
pub mod codec;
pub mod json;
pub mod messages;

pub use codec::{
    CodecError, FrameBuffer, HEADER_LEN, MAGIC, MAX_FRAME_LEN, PREAMBLE_LEN, PROTOCOL_VERSION,
    check_version, decode, decode_request, encode, frame_len, parse_preamble, peek_id, preamble,
};
pub use messages::*;
