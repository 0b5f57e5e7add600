//! Property tests of the codec: any message of the kinds that carry free
//! text and numbers (any Unicode, any integer, any float bit pattern)
//! encodes and decodes to the same message; any truncation of its bytes is
//! an error, never a panic or a different message.

use memd_proto::*;
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        "\\PC{0,200}",
        Just(String::new()),
        Just("\u{0}\u{FEFF}\u{202E}é\u{301}🚀".to_string()),
    ]
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(text())
}

fn float() -> impl Strategy<Value = f64> {
    // Every bit pattern: NaNs, infinities, subnormals, negative zero.
    any::<u64>().prop_map(f64::from_bits)
}

fn add() -> impl Strategy<Value = Request> {
    (
        text(),
        opt_text(),
        proptest::collection::vec(text(), 0..5),
        proptest::option::of(any::<i64>()),
        any::<bool>(),
        proptest::option::of(float()),
        proptest::option::of(any::<i64>()),
        opt_text(),
    )
        .prop_map(
            |(content, category, tags, tier, pinned, confidence, supersedes, metadata)| {
                Request::Add(AddRequest {
                    content,
                    category,
                    tags,
                    tier,
                    pinned,
                    confidence,
                    supersedes,
                    metadata,
                    ..Default::default()
                })
            },
        )
}

fn filter() -> impl Strategy<Value = Filter> {
    (
        proptest::collection::vec(text(), 0..3),
        any::<bool>(),
        opt_text(),
        proptest::collection::vec(text(), 0..3),
        proptest::collection::vec((text(), text()), 0..3),
        opt_text(),
    )
        .prop_map(
            |(namespaces, all_namespaces, category, tags, meta, since)| Filter {
                namespaces,
                all_namespaces,
                category,
                tags,
                meta,
                since,
                ..Default::default()
            },
        )
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        add(),
        (any::<i64>(), any::<bool>()).prop_map(|(id, include_inactive)| {
            Request::Get(GetRequest {
                id,
                include_inactive,
            })
        }),
        (filter(), any::<u32>(), any::<u32>()).prop_map(|(filter, limit, offset)| Request::List(
            ListRequest {
                filter,
                limit,
                offset
            }
        )),
        (any::<i64>(), opt_text(), proptest::option::of(any::<i64>())).prop_map(
            |(id, content, expect_rev)| {
                Request::Update(UpdateRequest {
                    id,
                    content,
                    expect_rev,
                    ..Default::default()
                })
            }
        ),
        (any::<i64>(), proptest::option::of(any::<i64>()))
            .prop_map(|(id, expect_rev)| Request::Forget(ForgetRequest { id, expect_rev })),
        (
            any::<u32>(),
            text(),
            text(),
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<u64>())
        )
            .prop_map(|(protocol, agent_id, namespace, budget, seen_generation)| {
                Request::Hello(Hello {
                    protocol,
                    client_version: "1".into(),
                    agent_id,
                    namespace,
                    policy: Some(DriftPolicy::Strict),
                    budget,
                    seen_generation,
                    session: None,
                    hold_block: false,
                    previous_namespaces: Vec::new(),
                })
            }),
    ]
}

fn memory() -> impl Strategy<Value = Memory> {
    (
        any::<i64>(),
        text(),
        opt_text(),
        float(),
        proptest::collection::vec(text(), 0..4),
        proptest::option::of(any::<i64>()),
        float(),
        any::<i64>(),
    )
        .prop_map(
            |(id, content, subject, confidence, tags, superseded_by, access_score, rev)| Memory {
                id,
                uid: "u".into(),
                namespace: "n".into(),
                scope: "project".into(),
                scope_owner: None,
                content,
                subject,
                category: "fact".into(),
                tier: 2,
                importance: "medium".into(),
                confidence,
                pinned: false,
                status: "promoted".into(),
                metadata: "{}".into(),
                tags,
                superseded_by,
                superseded_at: None,
                dedupe_key: None,
                observation_count: 1,
                confirmed_count: 0,
                last_confirmed_at: None,
                use_count: 0,
                last_used_at: None,
                access_score,
                source: "agent".into(),
                created_by: None,
                expires_at: None,
                created_at: "t".into(),
                updated_at: "t".into(),
                changed_generation: rev.wrapping_add(1),
                thread: Some(format!("t{}", rev.rem_euclid(7))),
                thread_pos: superseded_by,
                occurred_at: None,
                turn: None,
                rev,
                provenance: (rev % 2 == 0).then(|| {
                    Provenance::of(vec![Origin {
                        source: "agent".into(),
                        via: Some("mcp".into()),
                        at: "t".into(),
                        ..Origin::default()
                    }])
                }),
            },
        )
}

fn response() -> impl Strategy<Value = Response> {
    prop_oneof![
        (memory(), any::<u64>()).prop_map(|(memory, generation)| Response::Memory(Box::new(
            MemoryReply {
                memory,
                generation,
                proposal: None
            }
        ))),
        (
            proptest::collection::vec((memory(), float()), 0..3),
            any::<u64>()
        )
            .prop_map(|(hits, generation)| {
                Response::Memories(MemoryList {
                    memories: hits.into_iter().map(|(m, _)| m).collect(),
                    generation,
                })
            }),
        (text(), opt_text()).prop_map(|(message, reason)| Response::Error(ErrorBody {
            code: ErrorCode::Rejected,
            message,
            reason,
            current_rev: Some(-1),
            drift: None,
            operation_id: None,
        })),
    ]
}

/// Encodes, decodes and compares bytes (a NaN is not equal to itself, its
/// bits are); every shorter prefix of the body must fail to decode.
fn check<B>(id: u64, body: B) -> Result<(), TestCaseError>
where
    B: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let bytes = encode(&Frame { id, body }).unwrap();
    let len = frame_len(bytes[..HEADER_LEN].try_into().unwrap()).unwrap();
    prop_assert_eq!(len, bytes.len() - HEADER_LEN);
    let back: Frame<B> = decode(&bytes[HEADER_LEN..]).unwrap();
    prop_assert_eq!(back.id, id);
    let again = encode(&back).unwrap();
    prop_assert_eq!(&again, &bytes);
    for cut in HEADER_LEN..bytes.len() {
        prop_assert!(
            decode::<B>(&bytes[HEADER_LEN..cut]).is_err(),
            "prefix {cut} decoded"
        );
    }
    Ok(())
}

proptest! {
    // PROPTEST_CASES runs more.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
    ))]

    #[test]
    fn requests_round_trip(id in any::<u64>(), req in request()) {
        check(id, req)?;
    }

    #[test]
    fn responses_round_trip(id in any::<u64>(), resp in response()) {
        check(id, resp)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
    ))]

    /// However the bytes of a preamble and several frames are cut into
    /// reads, the buffer hands back the preamble and the same frames in
    /// order, and nothing before each is whole.
    #[test]
    fn frame_buffer_reassembles_any_split(
        reqs in proptest::collection::vec(request(), 1..5),
        cuts in proptest::collection::vec(1usize..64, 1..40),
    ) {
        let mut wire = preamble().to_vec();
        let mut ends = Vec::new();
        for (i, req) in reqs.iter().enumerate() {
            wire.extend(encode(&Frame { id: i as u64 + 1, body: req.clone() }).unwrap());
            ends.push(wire.len());
        }
        let mut buf = FrameBuffer::new();
        let mut got_preamble = None;
        let mut got: Vec<Frame<Request>> = Vec::new();
        let mut at = 0;
        let mut cuts = cuts.into_iter().cycle();
        while at < wire.len() {
            let n = cuts.next().unwrap().min(wire.len() - at);
            buf.unfilled().extend_from_slice(&wire[at..at + n]);
            at += n;
            if got_preamble.is_none() {
                got_preamble = buf.take_preamble();
                if got_preamble.is_none() {
                    prop_assert!(at < PREAMBLE_LEN);
                    continue;
                }
            }
            while let Some(frame) = buf.next_frame::<Request>().unwrap() {
                // A frame comes out only once all its bytes are in.
                prop_assert!(at >= ends[got.len()]);
                got.push(frame);
            }
            prop_assert!(got.len() == ends.len() || at < ends[got.len()]);
        }
        prop_assert_eq!(got_preamble, Some(preamble()));
        prop_assert!(buf.is_empty());
        prop_assert_eq!(got.len(), reqs.len());
        for (i, (frame, req)) in got.iter().zip(&reqs).enumerate() {
            prop_assert_eq!(frame.id, i as u64 + 1);
            prop_assert_eq!(
                encode(frame).unwrap(),
                encode(&Frame { id: frame.id, body: req.clone() }).unwrap()
            );
        }
    }
}

#[test]
fn frame_buffer_refuses_a_bad_header_before_its_body() {
    let mut buf = FrameBuffer::new();
    buf.extend(&u32::try_from(MAX_FRAME_LEN + 1).unwrap().to_be_bytes());
    assert!(matches!(
        buf.next_body(),
        Err(CodecError::TooLarge { len, .. }) if len == MAX_FRAME_LEN + 1
    ));
    let mut buf = FrameBuffer::new();
    buf.extend(&[0, 0, 0, 0]);
    assert!(matches!(buf.next_body(), Err(CodecError::Empty)));
    let mut buf = FrameBuffer::new();
    buf.extend(&[0, 0, 0]);
    assert!(matches!(buf.next_body(), Ok(None)));
}

#[test]
fn frame_buffer_consumes_a_frame_that_does_not_decode() {
    let mut buf = FrameBuffer::new();
    buf.extend(&[0, 0, 0, 2, 0xff, 0xff]);
    buf.extend(
        &encode(&Frame {
            id: 7,
            body: Request::Get(GetRequest {
                id: 1,
                include_inactive: false,
            }),
        })
        .unwrap(),
    );
    assert!(buf.next_frame::<Request>().is_err());
    let next = buf.next_frame::<Request>().unwrap().unwrap();
    assert_eq!(next.id, 7);
    assert!(buf.is_empty());
}
