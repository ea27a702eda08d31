//! How journal payloads are stored: JSON, compressed with zstd against a
//! fixed dictionary of typical inputs (a journal entry is ~200 bytes of JSON;
//! with the dictionary it is ~50). The first byte says the format, so the
//! dictionary can change without making old journals unreadable.

use std::cell::RefCell;
use std::sync::LazyLock;

use serde::Serialize;
use serde::de::DeserializeOwned;
use zstd::dict::{DecoderDictionary, EncoderDictionary};

use crate::error::{Error, Result};

/// Plain JSON (an object starts with `{`).
const PLAIN: u8 = b'{';
/// zstd with [`DICTIONARY_V1`].
const ZSTD_V1: u8 = 1;

const LEVEL: i32 = 3;

/// Largest payload a journal entry may decompress to.
const MAX_DECODED: usize = 256 * 1024 * 1024;

/// Typical journal inputs: zstd matches against them (a raw-content
/// dictionary). Never edit this: add a `ZSTD_V2` instead.
const DICTIONARY_V1: &[u8] = br#"{"input":"tick","at":1795232112296}{"input":"end","reason":"the person ended the chat","at":1795232112296}{"input":"confirm","run_id":"r1","call_id":"call_1","fingerprint":"3258ec4b0982d5fc","decision":{"decision":"deny","reason":""},"at":1795232112296}{"input":"model_failed","run_id":"r1","call":1,"error":"model openai:gpt-4o-mini: HTTP 500: ","at":1795232112296}{"input":"tool_finished","run_id":"r1","call_id":"call_1","outcome":{"error":{"kind":"invalid_arguments","message":"the arguments do not match the schema","fields":[{"field":"a","problem":" is not of type \"number\""}]}},"duration_ms":0,"at":1795232112296}{"input":"start_run","run_id":"r1","agent":"calculator","messages":[{"role":"user","content":"what is the "}],"planner":"rules","context":{"user_id":""},"turn_id":"","labels":{"tenant":""},"at":1795232112296}{"input":"model_replied","run_id":"r1","call":1,"reply":{"tool_calls":[{"name":"transfer_to_","arguments":"{\"reason\":\"\"}"},{"name":"calculator","arguments":"{\"a\":17.0,\"b\":25.0,\"operation\":\"add\"}"}],"usage":{"input_tokens":91,"output_tokens":12},"finish_reason":"tool_calls"},"at":1795232112296}{"input":"tool_finished","run_id":"r1","call_id":"call_1","outcome":{"ok":{"formula":"17 + 25 = 42","result":42.0}},"duration_ms":0,"at":1795232112296}{"input":"model_replied","run_id":"r1","call":2,"reply":{"text":"The answer: 17 + 25 = 42.","usage":{"input_tokens":123,"output_tokens":12},"finish_reason":"stop"},"at":1795232112296}{"input":"start_run","run_id":"r1","agent":"calculator","messages":[{"role":"user","content":"what is 17 plus 25?"}],"planner":"model","at":1795232112296}"#;

/// [`DICTIONARY_V1`] digested once for compression: a compressor that
/// loads the raw dictionary digests it again on every call, which cost more
/// than compressing a journal entry.
static ENCODER_V1: LazyLock<EncoderDictionary<'static>> =
    LazyLock::new(|| EncoderDictionary::copy(DICTIONARY_V1, LEVEL));
/// [`DICTIONARY_V1`] digested once for decompression.
static DECODER_V1: LazyLock<DecoderDictionary<'static>> = LazyLock::new(|| DecoderDictionary::copy(DICTIONARY_V1));

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

fn storage(e: impl std::fmt::Display) -> Error {
    Error::Storage(e.to_string())
}

/// Serializes and compresses `value`.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    compress(&serde_json::to_vec(value).map_err(storage)?)
}

/// Serializes `value` as plain JSON, which [`decode`] reads as it is.
pub(crate) fn encode_plain<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(storage)
}

/// Compresses serialized JSON as [`encode`] does.
pub(crate) fn compress(json: &[u8]) -> Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let compressor = match slot.as_mut() {
            Some(c) => c,
            None => slot.insert(zstd::bulk::Compressor::with_prepared_dictionary(&ENCODER_V1).map_err(storage)?),
        };
        let compressed = compressor.compress(json).map_err(storage)?;
        let mut out = Vec::with_capacity(compressed.len() + 1);
        out.push(ZSTD_V1);
        out.extend_from_slice(&compressed);
        Ok(out)
    })
}

/// Decompresses and deserializes what [`encode`] wrote (or plain JSON).
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    match bytes.first() {
        Some(&PLAIN) => serde_json::from_slice(bytes).map_err(storage),
        Some(&ZSTD_V1) => DECOMPRESSOR.with(|cell| {
            let mut slot = cell.borrow_mut();
            let decompressor = match slot.as_mut() {
                Some(d) => d,
                None => slot.insert(zstd::bulk::Decompressor::with_prepared_dictionary(&DECODER_V1).map_err(storage)?),
            };
            let json = decompressor.decompress(&bytes[1..], MAX_DECODED).map_err(storage)?;
            serde_json::from_slice(&json).map_err(storage)
        }),
        Some(other) => Err(Error::Storage(format!("unknown journal payload format {other}"))),
        None => Err(Error::Storage("empty journal payload".into())),
    }
}

/// The JSON text of a payload the embedded engine stored (journal inputs,
/// events, snapshots), whatever its format; `None` for bytes it did not
/// write. For tools that look inside a database file: what it holds,
/// readable.
pub fn payload_text(bytes: &[u8]) -> Option<String> {
    let value: serde_json::Value = decode(bytes).ok()?;
    Some(value.to_string())
}

#[cfg(test)]
mod tests {
    use concierge_core::{Input, ModelReply, RunId, Timestamp};

    use super::*;

    #[test]
    fn round_trips_and_shrinks() {
        let input = Input::ModelReplied {
            run_id: RunId::new("r7"),
            call: 1,
            reply: ModelReply::tool_call("calculator", r#"{"a":3.0,"b":4.0,"operation":"multiply"}"#)
                .with_usage(91, 12),
            at: Timestamp(1_795_232_112_296),
        };
        let encoded = encode(&input).unwrap();
        let json = serde_json::to_vec(&input).unwrap();
        assert!(encoded.len() * 2 < json.len(), "{} vs {}", encoded.len(), json.len());
        assert_eq!(decode::<Input>(&encoded).unwrap(), input);
        assert_eq!(decode::<Input>(&json).unwrap(), input, "plain JSON stays readable");
        let mut raw = zstd::bulk::Compressor::with_dictionary(LEVEL, DICTIONARY_V1).unwrap();
        let mut earlier = vec![ZSTD_V1];
        earlier.extend(raw.compress(&json).unwrap());
        assert_eq!(
            decode::<Input>(&earlier).unwrap(),
            input,
            "entries compressed with the raw dictionary still read"
        );
        assert!(decode::<Input>(&[9, 1, 2]).is_err());
        assert!(decode::<Input>(&[]).is_err());
    }
}
